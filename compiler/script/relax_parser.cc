// The TVMScript builder's Relax: StructInfo, expressions, calls, constants, functions and bindings
// (parser_builder.h).
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/ir/structural.h"
#include "compiler/relax/op_registry.h"
#include "compiler/relax/struct_info.h"
#include "compiler/script/metadata.h"
#include "compiler/script/parser_builder.h"
#include "compiler/script/python_parser.h"
#include "compiler/script/script_common.h"

namespace kiln::script::parser {

relax::StructInfo Builder::SInfo(const PyExpr& e, bool signature) {
  using namespace relax;
  std::string name = e.kind == K::kCall ? CalleeName(e) : Dotted(&e);
  auto dim = [&](const PyExpr& d) -> PrimExpr {
    if (d.kind == K::kString) {
      if (!signature)
        return Fail<PrimExpr>(d.pos, "a quoted dimension is only allowed in a signature");
      absl::StatusOr<PyExprPtr> parsed = ParsePythonExpr(src_, d.text, {d.pos.line, d.pos.col + 1});
      if (!parsed.ok()) {
        if (ok()) error_ = parsed.status();  // already located inside the string
        return nullptr;
      }
      return Expr(**parsed, DataType::Int(64));
    }
    return Expr(d, DataType::Int(64));
  };
  auto dims = [&](const PyExpr& list, std::vector<PrimExpr>* out) {
    if (list.kind != K::kTuple && list.kind != K::kList)
      return (void)Fail(list.pos, "expected a tuple of dimensions");
    for (const PyExprPtr& d : list.args) {
      PrimExpr v = dim(*d);
      if (!v) return;
      out->push_back(v);
    }
  };
  const PyExpr* dtype_kw = e.kind == K::kCall ? Keyword(e, "dtype") : nullptr;
  const PyExpr* ndim_kw = e.kind == K::kCall ? Keyword(e, "ndim") : nullptr;
  int ndim = -1;
  if (ndim_kw != nullptr) {
    if (ndim_kw->kind != K::kInt || ndim_kw->int_value < -1 || ndim_kw->int_value > 1 << 16)
      return Fail<StructInfo>(ndim_kw->pos, "ndim is an integer >= -1");
    ndim = static_cast<int>(ndim_kw->int_value);
  }
  if (name == "R.Object") return ObjectSInfo();
  if (name == "R.Tensor") {
    if (e.kind != K::kCall) return TensorSInfoUnknown(DataType::Void(), -1);
    DataType dtype = DataType::Void();
    if (dtype_kw) dtype = ParseDType(*dtype_kw);
    relax::Expr shape;
    size_t next = 1;
    if (e.args.size() > 1 && (e.args[1]->kind == K::kTuple || e.args[1]->kind == K::kList)) {
      std::vector<PrimExpr> ds;
      dims(*e.args[1], &ds);
      if (!ok()) return nullptr;
      shape = MakeShape(ds);
      ndim = static_cast<int>(ds.size());
      next = 2;
    } else if (e.args.size() > 1 && e.args[1]->kind == K::kName) {
      ObjectRef v = Lookup(e.args[1]->text);
      if (!v.as<relax::VarNode>())
        return Fail<StructInfo>(e.args[1]->pos,
                                absl::StrCat("'", e.args[1]->text, "' is not a shape variable"));
      shape = v.as_ref<relax::VarNode>();
      next = 2;
    }
    if (e.args.size() > next) {
      if (e.args[next]->kind != K::kString)
        return Fail<StructInfo>(e.args[next]->pos, "expected the dtype");
      dtype = ParseDType(*e.args[next]);
      ++next;
    }
    if (e.args.size() > next)
      return Fail<StructInfo>(e.args[next]->pos, "too many arguments to R.Tensor");
    if (!ok()) return nullptr;
    return Make<TensorStructInfoNode>(shape, dtype, ndim);
  }
  if (name == "R.Shape") {
    if (e.kind != K::kCall) return ShapeSInfoUnknown(-1);
    if (e.args.size() > 1) {
      std::vector<PrimExpr> ds;
      dims(*e.args[1], &ds);
      return ok() ? ShapeSInfo(std::move(ds)) : nullptr;
    }
    return ShapeSInfoUnknown(ndim);
  }
  if (name == "R.Prim") {
    if (e.kind != K::kCall) return Fail<StructInfo>(e.pos, "R.Prim needs a dtype or a value");
    const PyExpr* value_kw = Keyword(e, "value");
    PrimExpr value = value_kw ? dim(*value_kw) : nullptr;
    if (!ok()) return nullptr;
    DataType dtype = e.args.size() > 1 ? ParseDType(*e.args[1])
                     : dtype_kw        ? ParseDType(*dtype_kw)
                     : value           ? value->dtype
                                       : DataType::Void();
    if (!ok()) return nullptr;
    if (dtype.is_void()) return Fail<StructInfo>(e.pos, "R.Prim needs a dtype or a value");
    return PrimSInfo(dtype, value);
  }
  if (name == "R.Tuple") {
    std::vector<StructInfo> fields;
    for (size_t i = 1; e.kind == K::kCall && i < e.args.size(); ++i) {
      StructInfo f = SInfo(*e.args[i], signature);
      if (!f) return nullptr;
      fields.push_back(f);
    }
    return TupleSInfo(std::move(fields));
  }
  if (name == "R.Callable") {
    if (e.kind != K::kCall || e.args.size() < 3)
      return Fail<StructInfo>(e.pos, "use: R.Callable([params], ret)");
    std::optional<std::vector<StructInfo>> params;
    if (e.args[1]->kind == K::kList || e.args[1]->kind == K::kTuple) {
      params.emplace();
      for (const PyExprPtr& p : e.args[1]->args) {
        StructInfo s = SInfo(*p, signature);
        if (!s) return nullptr;
        params->push_back(s);
      }
    } else if (e.args[1]->kind != K::kNone) {
      return Fail<StructInfo>(e.args[1]->pos, "the parameters are a list or None");
    }
    StructInfo ret = SInfo(*e.args[2], signature);
    if (!ret) return nullptr;
    const PyExpr* purity = Keyword(e, "purity");
    const PyExpr* derive = Keyword(e, "derive_func");
    bool pure = purity == nullptr || (purity->kind == K::kBool && purity->int_value != 0);
    std::string derive_func = derive != nullptr && derive->kind == K::kString ? derive->text : "";
    return Make<FuncStructInfoNode>(std::move(params), ret, pure, derive_func);
  }
  return Fail<StructInfo>(e.pos,
                          "expected a StructInfo annotation (R.Tensor, R.Shape, R.Prim, R.Tuple, "
                          "R.Object, R.Callable)");
}

relax::StructInfo Builder::SInfoArgs(const PyExpr& e) {
  if (e.kind == K::kList || e.kind == K::kTuple) {
    std::vector<relax::StructInfo> fields;
    for (const PyExprPtr& f : e.args) {
      relax::StructInfo s = SInfo(*f, false);
      if (!s) return nullptr;
      fields.push_back(s);
    }
    return relax::TupleSInfo(std::move(fields));
  }
  return SInfo(e, false);
}

relax::Expr Builder::RExpr(const PyExpr& e) {
  using namespace relax;
  if (!ok()) return nullptr;
  switch (e.kind) {
    case K::kName: {
      ObjectRef v = Lookup(e.text);
      if (auto var = v.as_ref<relax::VarNode>()) return var;
      return Fail<relax::Expr>(e.pos, v ? absl::StrCat("'", e.text, "' is not a Relax value")
                                        : absl::StrCat("undefined name '", e.text, "'"));
    }
    case K::kAttribute: {
      if (e.args[0]->kind == K::kName && e.args[0]->text == "cls") {
        auto it = globals_.find(e.text);
        if (it == globals_.end())
          return Fail<relax::Expr>(e.pos, absl::StrCat("no function '", e.text, "' in the module"));
        return it->second;
      }
      return Fail<relax::Expr>(e.pos, "expected a Relax expression");
    }
    case K::kTuple: {
      std::vector<relax::Expr> fields;
      for (const PyExprPtr& f : e.args) {
        relax::Expr v = RExpr(*f);
        if (!v) return nullptr;
        fields.push_back(v);
      }
      return MakeTuple(std::move(fields));
    }
    case K::kSubscript: {
      const PyExpr& base = *e.args[0];
      if (base.kind == K::kSubscript && base.args.size() == 2 && base.args[0]->kind == K::kName &&
          base.args[0]->text == "metadata") {
        return MetadataConstant(e);
      }
      if (e.args.size() != 2 || e.args[1]->kind != K::kInt)
        return Fail<relax::Expr>(e.pos, "a tuple index must be an integer literal");
      relax::Expr tuple = RExpr(*e.args[0]);
      if (!tuple) return nullptr;
      if (e.args[1]->int_value < 0 || e.args[1]->int_value > INT32_MAX)
        return Fail<relax::Expr>(e.args[1]->pos, "a tuple index must be non-negative");
      return Make<TupleGetItemNode>(tuple, static_cast<int>(e.args[1]->int_value));
    }
    case K::kCall:
      return RCall(e);
    default:
      return Fail<relax::Expr>(e.pos, "expected a Relax expression");
  }
}

// metadata["relax.expr.Constant"][i]
relax::Expr Builder::MetadataConstant(const PyExpr& e) {
  const PyExpr& key = *e.args[0]->args[1];
  if (key.kind != K::kString || key.text != "relax.expr.Constant")
    return Fail<relax::Expr>(key.pos, "only metadata[\"relax.expr.Constant\"] is supported");
  if (!has_metadata_)
    return Fail<relax::Expr>(e.pos, "metadata is used but the file has no metadata section");
  if (e.args.size() != 2 || e.args[1]->kind != K::kInt)
    return Fail<relax::Expr>(e.pos, "a metadata index must be an integer literal");
  int64_t i = e.args[1]->int_value;
  if (i < 0 || i >= static_cast<int64_t>(metadata_.size())) {
    return Fail<relax::Expr>(
        e.args[1]->pos, absl::StrCat("metadata has ", metadata_.size(), " constants; index ", i,
                                     " is out of range"));
  }
  return metadata_[i];
}

// An attribute given as an argument: R.prim_value(v) is v, R.shape([...]) and tuples are arrays.
ObjectRef Builder::ArgumentAttr(const PyExpr& e) {
  std::string fn = e.kind == K::kCall ? CalleeName(e) : "";
  if ((fn == "R.prim_value" || fn == "R.shape") && e.args.size() == 2)
    return ArgumentAttr(*e.args[1]);
  if (e.kind == K::kTuple || e.kind == K::kList) {
    std::vector<ObjectRef> items;
    for (const PyExprPtr& item : e.args) items.push_back(ArgumentAttr(*item));
    return Make<ArrayNode>(std::move(items));
  }
  return AttrValue(e);
}

relax::Expr Builder::RCall(const PyExpr& e) {
  using namespace relax;
  std::string name = CalleeName(e);
  auto string_arg = [&](size_t i) -> std::string {
    if (e.args.size() <= i || e.args[i]->kind != K::kString) {
      Fail(e.pos, absl::StrCat(name, ": argument ", i, " must be a string"));
      return "";
    }
    return e.args[i]->text;
  };
  if (name == "R.shape") {
    if (e.args.size() != 2 || (e.args[1]->kind != K::kList && e.args[1]->kind != K::kTuple))
      return Fail<relax::Expr>(e.pos, "use: R.shape([d0, d1, ...])");
    std::vector<PrimExpr> values;
    for (const PyExprPtr& d : e.args[1]->args) {
      PrimExpr v = Expr(*d, DataType::Int(64));
      if (!v) return nullptr;
      values.push_back(v);
    }
    return MakeShape(std::move(values));
  }
  if (name == "R.prim_value") {
    if (!Arity(e, 1, name)) return nullptr;
    if (e.args[1]->kind == K::kString)
      return Fail<relax::Expr>(e.args[1]->pos, "R.prim_value holds a number, not a string");
    PrimExpr v = Expr(*e.args[1], DataType::Int(64));
    if (!v) return nullptr;
    if (v->dtype.lanes() != 1 ||
        !(v->dtype.is_int() || v->dtype.is_uint() || v->dtype.is_float() || v->dtype.is_bool())) {
      return Fail<relax::Expr>(e.args[1]->pos,
                               absl::StrCat("R.prim_value holds a scalar number or TIR "
                                            "expression, not ",
                                            v->dtype.ToString()));
    }
    return relax::Expr(Make<PrimValueNode>(v));
  }
  if (name == "R.TupleGetItem") {  // TVM's long form of t[i]
    if (!Arity(e, 2, name)) return nullptr;
    if (e.args[2]->kind != K::kInt || e.args[2]->int_value < 0 || e.args[2]->int_value > INT32_MAX)
      return Fail<relax::Expr>(e.args[2]->pos,
                               "R.TupleGetItem: the index must be a non-negative "
                               "integer literal");
    relax::Expr tuple = RExpr(*e.args[1]);
    if (!tuple) return nullptr;
    return Make<TupleGetItemNode>(tuple, static_cast<int>(e.args[2]->int_value));
  }
  if (name == "R.str") {
    std::string s = string_arg(1);
    return ok() ? relax::Expr(Make<relax::StringImmNode>(s)) : nullptr;
  }
  if (name == "R.dtype") {
    if (!Arity(e, 1, name)) return nullptr;
    DataType dtype = ParseDType(*e.args[1]);
    return ok() ? relax::Expr(Make<DataTypeImmNode>(dtype)) : nullptr;
  }
  if (name == "R.ExternFunc") {
    std::string s = string_arg(1);
    return ok() ? relax::Expr(Make<ExternFuncNode>(s)) : nullptr;
  }
  if (name == "R.tuple") {
    std::vector<relax::Expr> fields;
    for (size_t i = 1; i < e.args.size(); ++i) {
      relax::Expr f = RExpr(*e.args[i]);
      if (!f) return nullptr;
      fields.push_back(f);
    }
    return MakeTuple(std::move(fields));
  }
  if (name == "R.const") return Const(e);
  if (name == "R.match_cast")
    return Fail<relax::Expr>(e.pos, "R.match_cast must be the whole right-hand side of a binding");
  std::vector<relax::Expr> args;
  std::vector<StructInfo> sinfo_args;
  Attrs attrs;
  relax::Expr callee;
  size_t first = 1;
  if (name == "R.call_tir" || name == "R.call_dps_packed") {
    const PyExpr* out = Keyword(e, "out_sinfo");
    if (e.args.size() != 3 || out == nullptr)
      return Fail<relax::Expr>(e.pos,
                               absl::StrCat("use: ", name, "(func, (args...), out_sinfo=...)"));
    relax::Expr func =
        name == "R.call_tir" ? RExpr(*e.args[1]) : relax::Expr(Make<ExternFuncNode>(string_arg(1)));
    relax::Expr inputs = func ? RExpr(*e.args[2]) : nullptr;
    StructInfo out_sinfo = inputs ? SInfoArgs(*out) : nullptr;
    if (!out_sinfo) return nullptr;
    args = {func, inputs};
    if (const PyExpr* tir_vars = Keyword(e, "tir_vars")) {
      relax::Expr v = RExpr(*tir_vars);
      if (!v) return nullptr;
      args.push_back(v);
    }
    for (const auto& [key, value] : e.keywords) {
      if (key != "out_sinfo" && key != "tir_vars")
        return Fail<relax::Expr>(value->pos, absl::StrCat("unknown argument '", key, "'"));
    }
    return MakeCall(GetOp(name == "R.call_tir" ? "relax.call_tir" : "relax.call_dps_packed"),
                    std::move(args), {out_sinfo});
  }
  if (name == "R.call_packed") {
    callee = Make<ExternFuncNode>(string_arg(1));
    first = 2;
  } else if (name == "R.call_pure_packed") {
    callee = GetOp("relax.call_pure_packed");
    args.push_back(Make<ExternFuncNode>(string_arg(1)));
    first = 2;
  } else if (absl::StartsWith(name, "R.")) {
    std::string op = absl::StrCat("relax.", name.substr(2));
    if (relax::LookupOp(op) == nullptr)
      return Fail<relax::Expr>(e.pos, absl::StrCat("unknown operator '", name, "'"));
    callee = GetOp(op);
  } else {
    callee = RExpr(*e.args[0]);
  }
  if (!ok() || !callee) return nullptr;
  // TVM 0.20 passes some attributes as trailing arguments (R.clip(x, R.prim_value(0),
  // R.prim_value(6))); Kiln keeps them as the attributes they name.
  const relax::OpNode* op = callee.as<relax::OpNode>();
  const relax::OpInfo* info = op != nullptr ? relax::LookupOp(op->name) : nullptr;
  const std::vector<const char*>* positional = nullptr;
  if (info != nullptr) {
    static const std::map<std::string, std::vector<const char*>> kPositionalAttrs = {
        {"relax.clip", {"min", "max"}},
        {"relax.strided_slice", {"axes", "begin", "end", "strides"}},
        {"relax.image.resize2d", {"size"}}};
    auto it = kPositionalAttrs.find(op->name);
    if (it != kPositionalAttrs.end()) positional = &it->second;
  }
  for (size_t i = first; i < e.args.size(); ++i) {
    size_t extra = i - first - (info != nullptr ? static_cast<size_t>(info->num_args) : 0);
    if (positional != nullptr && i - first >= static_cast<size_t>(info->num_args) &&
        extra < positional->size()) {
      attrs = WithAttr(std::move(attrs), (*positional)[extra], ArgumentAttr(*e.args[i]));
      continue;
    }
    relax::Expr a = RExpr(*e.args[i]);
    if (!a) return nullptr;
    args.push_back(a);
  }
  for (const auto& [key, value] : e.keywords) {
    if (key == "sinfo_args") {
      if (value->kind == K::kList || value->kind == K::kTuple) {  // TVM prints a tuple
        for (const PyExprPtr& s : value->args) {
          StructInfo si = SInfo(*s, false);
          if (!si) return nullptr;
          sinfo_args.push_back(si);
        }
      } else {
        StructInfo si = SInfo(*value, false);
        if (!si) return nullptr;
        sinfo_args.push_back(si);
      }
    } else {
      attrs = WithAttr(std::move(attrs), key, AttrValue(*value));
    }
  }
  if (!ok()) return nullptr;
  return MakeCall(callee, std::move(args), std::move(sinfo_args), std::move(attrs));
}

// R.const(data, "dtype"[, shape=(...)]): nested lists, a scalar, or a hex string of raw bytes.
relax::Expr Builder::Const(const PyExpr& e) {
  if (e.args.size() < 2) return Fail<relax::Expr>(e.pos, "use: R.const(value, \"dtype\")");
  DataType dtype = e.args.size() > 2 ? ParseDType(*e.args[2]) : DataType::Float(32);
  if (const PyExpr* d = Keyword(e, "dtype")) dtype = ParseDType(*d);
  if (!ok()) return nullptr;
  std::vector<int64_t> shape;
  const PyExpr* shape_kw = Keyword(e, "shape");
  const PyExpr& data = *e.args[1];
  std::string bytes;
  if (data.kind == K::kString) {  // raw hex
    if (shape_kw == nullptr) return Fail<relax::Expr>(e.pos, "raw constant bytes need shape=(...)");
    if (data.text.size() % 2 != 0) return Fail<relax::Expr>(data.pos, "odd number of hex digits");
    for (size_t i = 0; i < data.text.size(); i += 2) {
      auto hex = [&](char c) {
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      };
      int hi = hex(data.text[i]), lo = hex(data.text[i + 1]);
      if (hi < 0 || lo < 0) return Fail<relax::Expr>(data.pos, "not a hex string");
      bytes.push_back(static_cast<char>(hi * 16 + lo));
    }
  } else {
    if (!HasLiteralForm(dtype))
      return Fail<relax::Expr>(
          e.pos, absl::StrCat(dtype.ToString(), " constants are written as hex strings"));
    std::vector<int64_t> found;
    if (!Elements(data, dtype, 0, &found, &bytes)) return nullptr;
    shape = found;
  }
  if (shape_kw != nullptr) {
    if (shape_kw->kind != K::kTuple && shape_kw->kind != K::kList)
      return Fail<relax::Expr>(shape_kw->pos, "shape is a tuple of integers");
    shape.clear();
    for (const PyExprPtr& d : shape_kw->args) {
      if (d->kind != K::kInt || d->int_value < 0)
        return Fail<relax::Expr>(d->pos, "shape is a tuple of non-negative integers");
      shape.push_back(d->int_value);
    }
  }
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d > 0 && count > (int64_t{1} << 40) / d)
      return Fail<relax::Expr>(e.pos, "the constant is too large");
    count *= d;
  }
  if (static_cast<int64_t>(bytes.size()) != count * dtype.bytes())
    return Fail<relax::Expr>(e.pos, "the constant's data does not match its shape");
  return relax::MakeConstant(dtype, std::move(shape), std::move(bytes));
}

bool Builder::Elements(const PyExpr& e, DataType dtype, size_t depth, std::vector<int64_t>* shape,
                       std::string* bytes) {
  if (depth > 32) return Fail(e.pos, "the constant is nested too deeply"), false;
  if (e.kind == K::kList || e.kind == K::kTuple) {
    int64_t n = static_cast<int64_t>(e.args.size());
    if (shape->size() == depth) {
      shape->push_back(n);
    } else if (shape->size() < depth || (*shape)[depth] != n) {
      return Fail(e.pos, "ragged constant: rows differ in length"), false;
    }
    for (const PyExprPtr& item : e.args) {
      if (!Elements(*item, dtype, depth + 1, shape, bytes)) return false;
    }
    return true;
  }
  if (shape->size() != depth && !(shape->size() > depth))
    return Fail(e.pos, "ragged constant"), false;
  if (depth < shape->size()) return Fail(e.pos, "ragged constant: expected a list here"), false;
  bool fits = false;
  if (e.kind == K::kInt) {
    fits = AppendIntElement(dtype, e.int_value, bytes);
  } else if (e.kind == K::kBool) {
    fits = AppendIntElement(dtype, e.int_value, bytes);
  } else if (e.kind == K::kFloat) {
    fits = AppendFloatElement(dtype, e.float_value, bytes);
  } else if (e.kind == K::kString && dtype.is_float()) {
    double v = e.text == "inf"    ? HUGE_VAL
               : e.text == "-inf" ? -HUGE_VAL
               : e.text == "nan"  ? NAN
                                  : 0;
    fits = v != 0 && AppendFloatElement(dtype, v, bytes);
  }
  if (!fits)
    return Fail(e.pos, absl::StrCat("this element is not a valid ", dtype.ToString())), false;
  return true;
}

// A Relax function. `global`: a module function (global_symbol rules apply).
ObjectRef Builder::RelaxFunction(const PyStmt& def, bool is_private, bool is_pure, bool global) {
  Push();
  size_t i = Declarations(def.body);
  std::vector<relax::Var> params;
  std::vector<ir::Var> created;
  auto_shape_vars_ = &created;  // quoted signature dims may introduce new shape variables
  for (const PyParam& p : def.params) {
    relax::StructInfo sinfo = p.annotation ? SInfo(*p.annotation, true) : nullptr;
    if (!ok()) break;
    params.push_back(relax::MakeVar(p.name, sinfo));
  }
  relax::StructInfo ret = ok() && def.returns ? SInfo(*def.returns, true) : nullptr;
  auto_shape_vars_ = nullptr;
  if (!ok()) return nullptr;
  for (const relax::Var& p : params) Define(p->name_hint, p);
  Attrs attrs;
  for (; i < def.body.size(); ++i) {
    const PyStmt& s = *def.body[i];
    std::string fn = s.value ? CalleeName(*s.value) : "";
    if (s.kind == PyStmt::Kind::kExpr && fn == "R.func_attr") {
      if (!Arity(*s.value, 1, fn)) return nullptr;
      attrs = AttrDict(*s.value->args[1]);
      continue;
    }
    if (s.kind == PyStmt::Kind::kAssign && s.target->kind == K::kName && s.target->text == "cls" &&
        s.value->kind == K::kName) {
      continue;  // cls = Module
    }
    break;
  }
  relax::Expr body = RBody(def.body, i, def.pos, nullptr);
  Pop();
  if (!ok() || !body) return nullptr;
  if (global) attrs = WithSymbol(std::move(attrs), def.name, is_private);
  return relax::MakeFunction(std::move(params), body, ret, is_pure, std::move(attrs));
}

relax::Expr Builder::RBody(const PyBody& body, size_t begin, Pos where, BranchResult* result) {
  using namespace relax;
  std::vector<BindingBlock> blocks;
  std::vector<Binding> open;
  auto flush = [&]() {
    if (!open.empty()) blocks.push_back(MakeBlock(std::move(open)));
    open.clear();
  };
  Push();
  relax::Expr value;
  for (size_t i = begin; i < body.size() && ok(); ++i) {
    const PyStmt& s = *body[i];
    bool last = i + 1 == body.size();
    if (result == nullptr && s.kind == PyStmt::Kind::kReturn) {
      if (!last) {
        Fail(s.pos, "code after return");
        break;
      }
      if (!s.value) {
        Fail(s.pos, "a Relax function returns a value");
        break;
      }
      value = RExpr(*s.value);
      break;
    }
    if (result != nullptr && last) {
      if (s.kind != PyStmt::Kind::kAssign || s.target->kind != K::kName) {
        Fail(s.pos, "an If branch must end by assigning its result");
        break;
      }
      result->name = s.target->text;
      result->pos = s.pos;
      if (s.annotation) result->sinfo = SInfo(*s.annotation, false);
      value = RExpr(*s.value);
      break;
    }
    if (s.kind == PyStmt::Kind::kWith && CalleeName(*s.value) == "R.dataflow") {
      flush();
      BindingBlock block = Dataflow(s);
      if (!block) break;
      blocks.push_back(block);
      continue;
    }
    Binding b = RStatement(s);
    if (!b) break;
    open.push_back(b);
  }
  Pop();
  if (!ok()) return nullptr;
  if (!value)
    return Fail<relax::Expr>(where, result ? "an empty If branch" : "the function has no return");
  flush();
  return MakeSeq(std::move(blocks), value);
}

relax::BindingBlock Builder::Dataflow(const PyStmt& s) {
  using namespace relax;
  // R.output(a, b) names the bindings that leave the block as ordinary Vars.
  std::map<std::string, size_t> last_assignment;
  std::set<std::string> outputs;
  for (size_t i = 0; i < s.body.size(); ++i) {
    const PyStmt& st = *s.body[i];
    if (st.kind == PyStmt::Kind::kAssign && st.target->kind == K::kName)
      last_assignment[st.target->text] = i;
    if (st.kind == PyStmt::Kind::kIf && !st.body.empty() && st.body.back()->target &&
        st.body.back()->target->kind == K::kName)
      last_assignment[st.body.back()->target->text] = i;
    if (st.kind == PyStmt::Kind::kExpr && CalleeName(*st.value) == "R.output") {
      if (i + 1 != s.body.size())
        return Fail<BindingBlock>(st.pos, "R.output must end the dataflow block");
      for (size_t k = 1; k < st.value->args.size(); ++k) {
        const PyExpr& o = *st.value->args[k];
        if (o.kind != K::kName || last_assignment.count(o.text) == 0)
          return Fail<BindingBlock>(o.pos, "R.output lists variables bound in this block");
        outputs.insert(o.text);
      }
    }
  }
  std::vector<Binding> bindings;
  bool saved = in_dataflow_;
  std::set<size_t> output_positions;
  for (const std::string& o : outputs) output_positions.insert(last_assignment[o]);
  for (size_t i = 0; i < s.body.size() && ok(); ++i) {
    const PyStmt& st = *s.body[i];
    if (st.kind == PyStmt::Kind::kExpr && CalleeName(*st.value) == "R.output") break;
    in_dataflow_ = output_positions.count(i) == 0;
    Binding b = RStatement(st);
    if (!b) break;
    bindings.push_back(b);
  }
  in_dataflow_ = saved;
  if (!ok()) return nullptr;
  return MakeDataflowBlock(std::move(bindings));
}

relax::Var Builder::NewVar(const std::string& name, relax::StructInfo sinfo) {
  return in_dataflow_ ? relax::MakeDataflowVar(name, sinfo) : relax::MakeVar(name, sinfo);
}

relax::Binding Builder::RStatement(const PyStmt& s) {
  using namespace relax;
  if (s.kind == PyStmt::Kind::kFunction) {
    bool is_private = false, is_pure = true;
    if (!Decorated(s, "R.function", &is_private, &is_pure))
      return Fail<Binding>(s.pos, "a local function needs @R.function");
    // With a return annotation the function's type is known from its signature: the variable
    // carries it (as the normalizer would give it), and the body may call it recursively.
    relax::Var var = NewVar(s.name, nullptr);
    Define(s.name, var);
    ObjectRef f = RelaxFunction(s, false, is_pure, /*global=*/false);
    if (!f) return nullptr;
    const auto* fn = f.as<FunctionNode>();
    bool typed = fn->ret_struct_info != nullptr;
    for (const relax::Var& p : fn->params) typed = typed && p->struct_info();
    if (typed) var->SetStructInfoOnce(FunctionStructInfo(*fn, nullptr));
    return MakeBinding(var, f.as_ref<FunctionNode>());
  }
  if (s.kind == PyStmt::Kind::kIf) {
    relax::Expr cond = RExpr(*s.value);
    if (!cond) return nullptr;
    if (s.orelse.empty()) return Fail<Binding>(s.pos, "a Relax If needs an else branch");
    BranchResult t, f;
    relax::Expr then_seq = RBody(s.body, 0, s.pos, &t);
    relax::Expr else_seq = then_seq ? RBody(s.orelse, 0, s.pos, &f) : nullptr;
    if (!else_seq) return nullptr;
    if (t.name != f.name)
      return Fail<Binding>(f.pos, absl::StrCat("both branches must assign the same variable ('",
                                               t.name, "' and '", f.name, "')"));
    relax::Var var = NewVar(t.name, t.sinfo);
    Define(t.name, var);
    return MakeBinding(var, Make<IfNode>(cond, then_seq, else_seq));
  }
  if (s.kind == PyStmt::Kind::kExpr && s.value->kind == K::kCall) {
    // A call made for its effect (TVM prints it bare): bound to an unused `_`.
    relax::Expr value = RExpr(*s.value);
    return value ? MakeBinding(NewVar("_", nullptr), value) : nullptr;
  }
  if (s.kind != PyStmt::Kind::kAssign || s.target->kind != K::kName) {
    return Fail<Binding>(s.pos, "expected a binding `name = value` in a Relax function");
  }
  const std::string& name = s.target->text;
  relax::StructInfo sinfo = s.annotation ? SInfo(*s.annotation, false) : nullptr;
  if (!ok()) return nullptr;
  if (CalleeName(*s.value) == "R.match_cast") {
    const PyExpr& call = *s.value;
    if (call.args.size() != 3)
      return Fail<Binding>(call.pos, "use: R.match_cast(value, StructInfo)");
    relax::Expr value = RExpr(*call.args[1]);
    if (!value) return nullptr;
    // New shape variables may appear as lone dimensions of the target.
    std::vector<ir::Var> created;
    auto_shape_vars_ = &created;
    relax::StructInfo target = SInfo(*call.args[2], false);
    auto_shape_vars_ = nullptr;
    if (!target) return nullptr;
    relax::Var var = name == "_" ? relax::Var() : NewVar(name, sinfo);
    if (var) Define(name, var);
    return MakeMatchCast(var, value, target);
  }
  relax::Expr value = RExpr(*s.value);
  if (!value) return nullptr;
  relax::Var var = NewVar(name, sinfo);
  Define(name, var);
  return MakeBinding(var, value);
}
}  // namespace kiln::script::parser
