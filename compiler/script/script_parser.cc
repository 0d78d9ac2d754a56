#include "compiler/script/script_parser.h"

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
#include "compiler/script/python_parser.h"
#include "compiler/script/script_common.h"

namespace kiln::script {
namespace {

using namespace ir;  // NOLINT: the builder constructs every node type
namespace relax = ir::relax;
using K = PyExpr::Kind;

// "T.axis.spatial" for an Attribute chain over a Name; "" otherwise.
std::string Dotted(const PyExpr* e) {
  if (e == nullptr) return "";
  if (e->kind == K::kName) return e->text;
  if (e->kind == K::kAttribute && !e->args.empty()) {
    std::string base = Dotted(e->args[0].get());
    return base.empty() ? "" : absl::StrCat(base, ".", e->text);
  }
  return "";
}
std::string CalleeName(const PyExpr& e) {
  return e.kind == K::kCall && !e.args.empty() ? Dotted(e.args[0].get()) : "";
}
const PyExpr* Keyword(const PyExpr& call, const char* key) {
  for (const auto& [k, v] : call.keywords) {
    if (k == key) return v.get();
  }
  return nullptr;
}
bool IsBareLiteral(const PyExpr& e) { return e.kind == K::kInt || e.kind == K::kFloat; }

class Builder {
 public:
  explicit Builder(const Source& source) : src_(source) {}

  absl::StatusOr<IRModule> Module(const PyBody& file) {
    const PyStmt* cls = nullptr;
    for (const PyStmtPtr& s : file) {
      if (s->kind == PyStmt::Kind::kClass) {
        if (cls != nullptr) return src_.Error(s->pos, "only one module class is supported");
        cls = s.get();
        continue;
      }
      if (s->kind == PyStmt::Kind::kAssign && s->target && s->target->kind == K::kName &&
          s->target->text == "metadata") {
        const PyExpr& call = *s->value;
        if (CalleeName(call) != "tvm.ir.load_json" || call.args.size() != 2 ||
            call.args[1]->kind != K::kString) {
          return src_.Error(s->value->pos, "expected metadata = tvm.ir.load_json(\"\"\"...\"\"\")");
        }
        absl::StatusOr<std::vector<relax::Expr>> constants = ParseTvmMetadata(call.args[1]->text);
        if (!constants.ok()) return src_.Error(call.args[1]->pos, constants.status().message());
        metadata_ = *std::move(constants);
        has_metadata_ = true;
        continue;
      }
      return src_.Error(s->pos, "expected an @I.ir_module class");
    }
    if (cls == nullptr) return src_.Error({1, 1}, "no @I.ir_module class in the input");
    bool decorated = false;
    for (const PyExprPtr& d : cls->decorators) decorated |= Dotted(d.get()) == "I.ir_module";
    if (!decorated)
      return src_.Error(cls->pos, "the module class needs the @I.ir_module decorator");
    // Every function name first, so that cls.f resolves in any order.
    for (const PyStmtPtr& s : cls->body) {
      if (s->kind == PyStmt::Kind::kFunction) {
        if (globals_.count(s->name) > 0)
          return src_.Error(s->pos, absl::StrCat("function '", s->name, "' is defined twice"));
        globals_[s->name] = relax::MakeGlobalVar(s->name);
      }
    }
    IRModuleBuilder builder;
    for (const PyStmtPtr& s : cls->body) {
      if (s->kind == PyStmt::Kind::kPass) continue;
      if (s->kind == PyStmt::Kind::kExpr && CalleeName(*s->value) == "I.module_attrs") {
        if (s->value->args.size() != 2) return src_.Error(s->pos, "I.module_attrs takes one dict");
        Attrs attrs = AttrDict(*s->value->args[1]);
        for (auto& [k, v] : attrs) builder.SetAttr(k, v);
        if (!ok()) return error_;
        continue;
      }
      if (s->kind != PyStmt::Kind::kFunction) {
        return src_.Error(s->pos, "expected a function definition or I.module_attrs in the module");
      }
      ObjectRef func = Function(*s);
      if (!ok()) return error_;
      absl::Status added = builder.Add(globals_.at(s->name), func);
      if (!added.ok()) return src_.Error(s->pos, added.message());
    }
    return builder.Build();
  }

 private:
  // ---- Errors ----
  bool ok() const { return error_.ok(); }
  template <typename T = ObjectRef>
  T Fail(Pos pos, absl::string_view message) {
    if (ok()) error_ = src_.Error(pos, message);
    return T();
  }

  // ---- Scopes: names to Vars, Buffers, Relax vars ----
  void Push() { scopes_.emplace_back(); }
  void Pop() { scopes_.pop_back(); }
  void Define(const std::string& name, ObjectRef value) { scopes_.back()[name] = std::move(value); }
  ObjectRef Lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return found->second;
    }
    return nullptr;
  }

  // ---- Literals and attributes ----
  DataType ParseDType(const PyExpr& e) {
    if (e.kind != K::kString)
      return Fail<DataType>(e.pos, "expected a dtype string such as \"float32\"");
    absl::StatusOr<DataType> dtype = DataType::Parse(e.text);
    if (!dtype.ok()) return Fail<DataType>(e.pos, absl::StrCat("unknown dtype \"", e.text, "\""));
    return *dtype;
  }

  PrimExpr IntLiteral(const PyExpr& e, DataType dtype) {
    if (dtype.is_bool()) {
      if (e.int_value != 0 && e.int_value != 1)
        return Fail<PrimExpr>(e.pos, "a bool literal must be 0 or 1");
      return IntImm(dtype, e.int_value);
    }
    int bits = dtype.bits();
    if (bits < 64) {
      int64_t lo = dtype.is_int() ? -(int64_t{1} << (bits - 1)) : 0;
      int64_t hi = dtype.is_int() ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
      if (e.int_value < lo || e.int_value > hi) {
        return Fail<PrimExpr>(
            e.pos, absl::StrCat("literal ", e.int_value, " does not fit ", dtype.ToString()));
      }
    }
    return IntImm(dtype, e.int_value);
  }

  // `T.float32(0.5)`, `T.int64(3)`, `T.bool(True)`, `T.float32("inf")`; a non-literal is a cast.
  PrimExpr TypedLiteral(const PyExpr& call, DataType dtype) {
    if (call.args.size() != 2 || !call.keywords.empty()) {
      return Fail<PrimExpr>(call.pos, absl::StrCat("T.", dtype.ToString(), " takes one value"));
    }
    const PyExpr& v = *call.args[1];
    if (v.kind == K::kBool)
      return dtype.is_bool() ? IntImm(dtype, v.int_value)
                             : Fail<PrimExpr>(v.pos, "True/False need T.bool");
    if (v.kind == K::kInt) {
      if (dtype.is_float()) return FloatImm(dtype, static_cast<double>(v.int_value));
      return IntLiteral(v, dtype);
    }
    if (v.kind == K::kFloat) {
      if (!dtype.is_float())
        return Fail<PrimExpr>(v.pos, absl::StrCat("a float literal for ", dtype.ToString()));
      return FloatImm(dtype, v.float_value);
    }
    if (v.kind == K::kString && dtype.is_float()) {
      double value = v.text == "inf"    ? HUGE_VAL
                     : v.text == "-inf" ? -HUGE_VAL
                     : v.text == "nan"  ? NAN
                                        : 0;
      if (value == 0) return Fail<PrimExpr>(v.pos, "expected \"inf\", \"-inf\" or \"nan\"");
      return FloatImm(dtype, value);
    }
    PrimExpr value = Expr(v, DataType());
    return value ? Cast(dtype, value) : nullptr;
  }

  ObjectRef AttrValue(const PyExpr& e) {
    switch (e.kind) {
      case K::kString:
        return Make<StringImmNode>(e.text);
      case K::kList:
      case K::kTuple: {
        std::vector<ObjectRef> items;
        for (const PyExprPtr& item : e.args) items.push_back(AttrValue(*item));
        return Make<ArrayNode>(std::move(items));
      }
      case K::kNone:
        return nullptr;
      default:
        return Expr(e, DataType());
    }
  }
  Attrs AttrDict(const PyExpr& e) {
    Attrs attrs;
    if (e.kind != K::kDict) return Fail<Attrs>(e.pos, "expected a dict of attributes");
    for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
      if (e.args[i]->kind != K::kString)
        return Fail<Attrs>(e.args[i]->pos, "attribute keys are strings");
      attrs = WithAttr(std::move(attrs), e.args[i]->text, AttrValue(*e.args[i + 1]));
    }
    return attrs;
  }

  // ---- TIR expressions ----
  // `hint`: the dtype a bare literal here takes (void: the defaults).
  PrimExpr Expr(const PyExpr& e, DataType hint) {
    if (!ok()) return nullptr;
    switch (e.kind) {
      case K::kInt:
        return IntLiteral(e, IntHint(hint));
      case K::kFloat:
        return FloatImm(FloatHint(hint), e.float_value);
      case K::kBool:
        return Bool(e.int_value != 0);
      case K::kString:
        return Make<StringImmNode>(e.text);
      case K::kName:
        return NameExpr(e);
      case K::kBinOp:
      case K::kCompare:
      case K::kBoolOp:
        return BinaryExpr(e, hint);
      case K::kUnaryOp: {
        PrimExpr a = Expr(*e.args[0], hint);
        if (!a) return nullptr;
        if (e.text == "not") return Not(a);
        if (e.text == "+") return a;
        return Binary(NodeKind::kSub,
                      a->dtype.is_float() ? FloatImm(a->dtype, 0) : IntImm(a->dtype, 0), a);
      }
      case K::kSubscript:
        return LoadExpr(e);
      case K::kCall:
        return CallExpr(e, hint);
      default:
        return Fail<PrimExpr>(e.pos, "expected a TIR expression");
    }
  }

  PrimExpr NameExpr(const PyExpr& e) {
    ObjectRef v = Lookup(e.text);
    if (!v) {
      if (auto_shape_vars_ != nullptr) {  // a new symbolic dimension in a signature
        ir::Var var = MakeSizeVar(e.text);
        auto_shape_vars_->push_back(var);
        Define(e.text, var);
        return var;
      }
      return Fail<PrimExpr>(e.pos, absl::StrCat("undefined name '", e.text, "'"));
    }
    if (auto var = v.as_ref<ir::VarNode>()) return var;
    return Fail<PrimExpr>(e.pos, absl::StrCat("'", e.text, "' is not a TIR variable here"));
  }

  PrimExpr BinaryExpr(const PyExpr& e, DataType hint) {
    const PyExpr& pa = *e.args[0];
    const PyExpr& pb = *e.args[1];
    PrimExpr a, b;
    // A bare literal takes its sibling's dtype; two bare literals take the context's.
    if (IsBareLiteral(pa) && !IsBareLiteral(pb)) {
      b = Expr(pb, hint);
      a = b ? Expr(pa, b->dtype) : nullptr;
    } else if (IsBareLiteral(pb) && !IsBareLiteral(pa)) {
      a = Expr(pa, hint);
      b = a ? Expr(pb, a->dtype) : nullptr;
    } else {
      a = Expr(pa, hint);
      b = Expr(pb, hint);
    }
    if (!a || !b) return nullptr;
    static const std::map<std::string, NodeKind> kOps = {
        {"+", NodeKind::kAdd},   {"-", NodeKind::kSub},       {"*", NodeKind::kMul},
        {"/", NodeKind::kDiv},   {"//", NodeKind::kFloorDiv}, {"%", NodeKind::kFloorMod},
        {"==", NodeKind::kEQ},   {"!=", NodeKind::kNE},       {"<", NodeKind::kLT},
        {"<=", NodeKind::kLE},   {">", NodeKind::kGT},        {">=", NodeKind::kGE},
        {"and", NodeKind::kAnd}, {"or", NodeKind::kOr}};
    auto it = kOps.find(e.text);
    if (it == kOps.end())
      return Fail<PrimExpr>(e.pos, absl::StrCat("operator '", e.text, "' is not supported in TIR"));
    if (a->dtype != b->dtype) {
      return Fail<PrimExpr>(e.pos,
                            absl::StrCat("operands of '", e.text, "' have different dtypes (",
                                         a->dtype.ToString(), " and ", b->dtype.ToString(), ")"));
    }
    return Binary(it->second, a, b);
  }

  PrimExpr LoadExpr(const PyExpr& e) {
    Buffer buffer = BufferRef(*e.args[0]);
    if (!buffer) return nullptr;
    std::vector<PrimExpr> indices;
    int lanes = 1;
    for (size_t i = 1; i < e.args.size(); ++i) {
      if (e.args[i] == nullptr || e.args[i]->kind == K::kSlice)
        return Fail<PrimExpr>(e.args[i] ? e.args[i]->pos : e.pos,
                              "a slice cannot be loaded; index each dimension");
      PrimExpr index = Expr(*e.args[i], DataType());
      if (!index) return nullptr;
      lanes = std::max(lanes, index->dtype.lanes());
      indices.push_back(index);
    }
    return Make<BufferLoadNode>(buffer->dtype.with_lanes(lanes), buffer, std::move(indices));
  }

  Buffer BufferRef(const PyExpr& e) {
    if (e.kind != K::kName) return Fail<Buffer>(e.pos, "expected a buffer name");
    ObjectRef v = Lookup(e.text);
    if (auto b = v.as_ref<BufferNode>()) return b;
    return Fail<Buffer>(
        e.pos, absl::StrCat(v ? "'" : "undefined buffer '", e.text, v ? "' is not a buffer" : "'"));
  }

  std::vector<PrimExpr> Args(const PyExpr& call, size_t first = 1) {
    std::vector<PrimExpr> out;
    for (size_t i = first; i < call.args.size() && ok(); ++i)
      out.push_back(Expr(*call.args[i], DataType()));
    return out;
  }
  bool Arity(const PyExpr& call, size_t n, const std::string& name) {
    if (call.args.size() != n + 1) {
      Fail(call.pos, absl::StrCat(name, " takes ", n, " argument", n == 1 ? "" : "s"));
      return false;
    }
    return true;
  }

  PrimExpr CallExpr(const PyExpr& e, DataType hint) {
    std::string name = CalleeName(e);
    if (!absl::StartsWith(name, "T."))
      return Fail<PrimExpr>(e.pos, absl::StrCat("unknown function '", name.empty() ? "?" : name,
                                                "' in a TIR expression"));
    std::string fn = name.substr(2);
    absl::StatusOr<DataType> as_dtype = DataType::Parse(fn);
    if (as_dtype.ok() && !fn.empty() && fn != "handle" && fn != "void")
      return TypedLiteral(e, *as_dtype);
    if (fn == "Cast") {
      if (!Arity(e, 2, name)) return nullptr;
      DataType dtype = ParseDType(*e.args[1]);
      PrimExpr v = Expr(*e.args[2], DataType());
      return v ? Cast(dtype, v) : nullptr;
    }
    if (fn == "Select" || fn == "if_then_else") {
      if (!Arity(e, 3, name)) return nullptr;
      std::vector<PrimExpr> a = Args(e);
      if (!ok()) return nullptr;
      if (fn == "Select") return Make<SelectNode>(a[0], a[1], a[2]);
      return Call(a[1]->dtype, "if_then_else", a);
    }
    static const std::map<std::string, NodeKind> kBinaryFns = {
        {"min", NodeKind::kMin},           {"max", NodeKind::kMax},
        {"Div", NodeKind::kDiv},           {"truncdiv", NodeKind::kDiv},
        {"truncmod", NodeKind::kMod},      {"Mod", NodeKind::kMod},
        {"floordiv", NodeKind::kFloorDiv}, {"floormod", NodeKind::kFloorMod}};
    auto bin = kBinaryFns.find(fn);
    if (bin != kBinaryFns.end()) {
      if (!Arity(e, 2, name)) return nullptr;
      PrimExpr a, b;
      if (IsBareLiteral(*e.args[1]) && !IsBareLiteral(*e.args[2])) {
        b = Expr(*e.args[2], hint);
        a = b ? Expr(*e.args[1], b->dtype) : nullptr;
      } else {
        a = Expr(*e.args[1], hint);
        b = a ? Expr(*e.args[2], IsBareLiteral(*e.args[2]) ? a->dtype : hint) : nullptr;
      }
      if (!a || !b) return nullptr;
      if (a->dtype != b->dtype)
        return Fail<PrimExpr>(e.pos, absl::StrCat(name, ": operands have different dtypes"));
      return Binary(bin->second, a, b);
    }
    if (fn == "Ramp" || fn == "Broadcast") {
      size_t n = fn == "Ramp" ? 3 : 2;
      if (!Arity(e, n, name)) return nullptr;
      const PyExpr& lanes = *e.args[n];
      if (lanes.kind != K::kInt || lanes.int_value < 1 || lanes.int_value > 65535)
        return Fail<PrimExpr>(lanes.pos, "lanes must be an integer literal in [1, 65535]");
      PrimExpr base = Expr(*e.args[1], DataType());
      if (fn == "Broadcast")
        return base ? Make<BroadcastNode>(base, static_cast<int>(lanes.int_value)) : nullptr;
      PrimExpr stride = base ? Expr(*e.args[2], base->dtype) : nullptr;
      return stride ? Make<RampNode>(base, stride, static_cast<int>(lanes.int_value)) : nullptr;
    }
    if (fn == "Let") {
      const PyExpr* where = Keyword(e, "where");
      if (e.args.size() != 2 || where == nullptr || where->kind != K::kDict ||
          where->args.size() != 2 || where->args[0]->kind != K::kName) {
        return Fail<PrimExpr>(e.pos, "T.Let takes (body, where={var: value})");
      }
      PrimExpr value = Expr(*where->args[1], DataType());
      if (!value) return nullptr;
      ir::Var var = MakeVar(where->args[0]->text, value->dtype);
      Push();
      Define(var->name, var);
      PrimExpr body = Expr(*e.args[1], hint);
      Pop();
      return body ? PrimExpr(Make<LetNode>(var, value, body)) : nullptr;
    }
    if (fn == "call_extern" || fn == "call_intrin") {
      if (e.args.size() < 3)
        return Fail<PrimExpr>(e.pos, absl::StrCat(name, " takes a dtype, a name and arguments"));
      DataType dtype = ParseDType(*e.args[1]);
      if (e.args[2]->kind != K::kString)
        return Fail<PrimExpr>(e.args[2]->pos, "expected the function name as a string");
      std::vector<PrimExpr> args = Args(e, 3);
      return ok() ? Call(dtype, e.args[2]->text, std::move(args)) : nullptr;
    }
    if (IsMathIntrinsic(fn)) {
      std::vector<PrimExpr> args = Args(e);
      if (!ok()) return nullptr;
      if (args.empty()) return Fail<PrimExpr>(e.pos, absl::StrCat(name, " needs an argument"));
      DataType dtype = args[0]->dtype;
      return Call(dtype, fn, std::move(args));
    }
    return Fail<PrimExpr>(e.pos, absl::StrCat("unknown TIR function '", name, "'"));
  }

  // `stop - start`, written back as the extent it was printed from: `start:start + e` gives e.
  PrimExpr Extent(const PrimExpr& start, const PrimExpr& stop) {
    if (const auto* s = start.as<IntImmNode>(); s != nullptr && s->value == 0) return stop;
    const auto* a = start.as<IntImmNode>();
    const auto* b = stop.as<IntImmNode>();
    if (a != nullptr && b != nullptr && a->dtype == b->dtype)
      return IntImm(a->dtype, b->value - a->value);
    if (const auto* add = stop.as<BinaryNode>();
        add != nullptr && add->kind() == NodeKind::kAdd && ExprDeepEqual(add->a, start)) {
      return add->b;
    }
    return Binary(NodeKind::kSub, stop, start);
  }

  // A loop bound or axis domain: a scalar integer expression (bool is uint1 and not an index).
  PrimExpr IndexExpr(const PyExpr& e, DataType want) {
    PrimExpr value = Expr(e, want);
    if (value &&
        !(value->dtype.is_integral() && value->dtype.is_scalar() && !value->dtype.is_bool()))
      return Fail<PrimExpr>(e.pos,
                            absl::StrCat("a loop bound or axis domain must be an integer, got ",
                                         value->dtype.ToString()));
    return value;
  }

  // (start, stop) from `a:b` or `T.serial(a, b)`: a bare literal start takes the stop's dtype.
  bool StartStop(const PyExpr& a, const PyExpr& b, PrimExpr* start, PrimExpr* stop) {
    if (IsBareLiteral(a) && !IsBareLiteral(b)) {
      *stop = IndexExpr(b, DataType());
      *start = *stop ? IndexExpr(a, (*stop)->dtype) : nullptr;
    } else {
      *start = IndexExpr(a, DataType());
      *stop = *start ? IndexExpr(b, IsBareLiteral(b) ? (*start)->dtype : DataType()) : nullptr;
    }
    return ok() && *start && *stop;
  }

  Range RangeFromTo(const PyExpr& a, const PyExpr& b) {
    PrimExpr start, stop;
    if (!StartStop(a, b, &start, &stop)) return nullptr;
    if (start->dtype != stop->dtype)
      return Fail<Range>(a.pos, "range bounds have different dtypes");
    return MakeRange(start, Extent(start, stop));
  }

  BufferRegion Region(const PyExpr& e) {
    if (e.kind != K::kSubscript)
      return Fail<BufferRegion>(e.pos, "expected a buffer region such as A[i, 0:16]");
    Buffer buffer = BufferRef(*e.args[0]);
    if (!buffer) return nullptr;
    std::vector<Range> region;
    for (size_t i = 1; i < e.args.size(); ++i) {
      const PyExpr* d = e.args[i].get();
      if (d == nullptr) return Fail<BufferRegion>(e.pos, "an empty index");
      if (d->kind == K::kSlice) {
        if (!d->args[0] || !d->args[1])
          return Fail<BufferRegion>(d->pos, "a region slice needs both bounds");
        Range r = RangeFromTo(*d->args[0], *d->args[1]);
        if (!r) return nullptr;
        region.push_back(r);
      } else {
        PrimExpr index = Expr(*d, DataType());
        if (!index) return nullptr;
        region.push_back(MakeRange(index, IntImm(index->dtype, 1)));
      }
    }
    return Make<BufferRegionNode>(buffer, std::move(region));
  }

  // ---- Buffers ----
  std::vector<PrimExpr> ShapeTuple(const PyExpr& e) {
    std::vector<PrimExpr> out;
    if (e.kind != K::kTuple && e.kind != K::kList) {
      PrimExpr single = Expr(e, DataType());
      if (single) out.push_back(single);
      return out;
    }
    for (const PyExprPtr& d : e.args) {
      PrimExpr v = Expr(*d, DataType());
      if (!v) return {};
      out.push_back(v);
    }
    return out;
  }

  // (shape, dtype="float32", strides=, elem_offset=, scope=, align=) starting at args[first].
  Buffer MakeBufferFrom(const std::string& name, const PyExpr& call, size_t first) {
    if (call.args.size() <= first) return Fail<Buffer>(call.pos, "a buffer needs a shape");
    auto* b = new BufferNode();
    Buffer owner(b);
    b->name = name;
    b->data = MakeVar(name + "_data", DataType::Handle());
    b->shape = ShapeTuple(*call.args[first]);
    b->dtype = DataType::Float(32);
    b->elem_offset = IntImm(DataType::Int(64), 0);
    if (call.args.size() > first + 1) b->dtype = ParseDType(*call.args[first + 1]);
    if (call.args.size() > first + 2)
      return Fail<Buffer>(call.args[first + 2]->pos, "too many positional buffer arguments");
    for (const auto& [key, value] : call.keywords) {
      if (key == "dtype") {
        b->dtype = ParseDType(*value);
      } else if (key == "strides") {
        b->strides = ShapeTuple(*value);
      } else if (key == "elem_offset") {
        b->elem_offset = value->kind == K::kNone ? nullptr : Expr(*value, DataType());
      } else if (key == "scope") {
        if (value->kind != K::kString) return Fail<Buffer>(value->pos, "scope is a string");
        b->scope = value->text;
      } else if (key == "align") {
        if (value->kind != K::kInt || value->int_value < 1 || value->int_value > (1 << 20))
          return Fail<Buffer>(value->pos, "align is a positive integer");
        b->data_alignment = value->int_value;
      } else if (key != "offset_factor" && key != "buffer_type" && key != "axis_separators") {
        return Fail<Buffer>(value->pos, absl::StrCat("unknown buffer argument '", key, "'"));
      }
    }
    return ok() ? owner : nullptr;
  }

  // ---- TIR statements ----
  Stmt Seq(std::vector<Stmt> stmts) {
    if (stmts.size() == 1) return stmts[0];
    return Make<SeqStmtNode>(std::move(stmts));
  }

  Stmt Stmts(const PyBody& body, size_t begin = 0) {
    std::vector<Stmt> out;
    for (size_t i = begin; i < body.size() && ok(); ++i) {
      const PyStmt& s = *body[i];
      // Flat forms whose body is the rest of the list.
      if (s.kind == PyStmt::Kind::kAssign && s.annotation && s.target->kind == K::kName) {
        DataType dtype = AnnotationDType(*s.annotation);
        PrimExpr value = Expr(*s.value, dtype);
        if (!ok()) return nullptr;
        ir::Var var = MakeVar(s.target->text, dtype);
        Push();
        Define(var->name, var);
        Stmt rest = Stmts(body, i + 1);
        Pop();
        if (!rest) return nullptr;
        out.push_back(Make<LetStmtNode>(var, value, rest));
        return Seq(std::move(out));
      }
      if (s.kind == PyStmt::Kind::kAssert) {
        PrimExpr cond = Expr(*s.value, DataType());
        std::string message = s.message && s.message->kind == K::kString ? s.message->text : "";
        Stmt rest = Stmts(body, i + 1);
        if (!cond || !rest) return nullptr;
        out.push_back(Make<AssertStmtNode>(cond, message, rest));
        return Seq(std::move(out));
      }
      if (s.kind == PyStmt::Kind::kPass) continue;
      Stmt stmt = Statement(s);
      if (!stmt) return nullptr;
      out.push_back(stmt);
    }
    if (!ok()) return nullptr;
    if (out.empty())
      return Fail<Stmt>(body.empty() ? Pos{} : body[0]->pos, "a block with no statements");
    return Seq(std::move(out));
  }

  DataType AnnotationDType(const PyExpr& e) {
    std::string name = Dotted(&e);
    absl::StatusOr<DataType> dtype =
        DataType::Parse(absl::StartsWith(name, "T.") ? name.substr(2) : "?");
    if (!dtype.ok()) return Fail<DataType>(e.pos, "expected a TIR type such as T.int32");
    return *dtype;
  }

  Stmt Statement(const PyStmt& s) {
    switch (s.kind) {
      case PyStmt::Kind::kAssign: {
        if (s.target->kind == K::kSubscript) {
          Buffer buffer = BufferRef(*s.target->args[0]);
          if (!buffer) return nullptr;
          std::vector<PrimExpr> indices;
          for (size_t i = 1; i < s.target->args.size(); ++i) {
            if (!s.target->args[i] || s.target->args[i]->kind == K::kSlice)
              return Fail<Stmt>(s.pos, "a slice cannot be stored to");
            PrimExpr index = Expr(*s.target->args[i], DataType());
            if (!index) return nullptr;
            indices.push_back(index);
          }
          PrimExpr value = Expr(*s.value, DataType());
          return value ? Stmt(Make<BufferStoreNode>(buffer, value, std::move(indices))) : nullptr;
        }
        return Fail<Stmt>(s.pos,
                          "expected a buffer store (A[i] = ...) or a typed let (x: T.int32 = ...)");
      }
      case PyStmt::Kind::kExpr: {
        std::string name = CalleeName(*s.value);
        if (name == "T.evaluate") {
          if (!Arity(*s.value, 1, name)) return nullptr;
          PrimExpr v = Expr(*s.value->args[1], DataType());
          return v ? Stmt(Make<EvaluateNode>(v)) : nullptr;
        }
        return Fail<Stmt>(s.pos, "expected a statement; wrap expressions in T.evaluate(...)");
      }
      case PyStmt::Kind::kFor:
        return For(s);
      case PyStmt::Kind::kWhile: {
        PrimExpr cond = Expr(*s.value, DataType());
        Stmt body = cond ? Stmts(s.body) : nullptr;
        return body ? Stmt(Make<WhileNode>(cond, body)) : nullptr;
      }
      case PyStmt::Kind::kIf: {
        PrimExpr cond = Expr(*s.value, DataType());
        Stmt then_case = cond ? Stmts(s.body) : nullptr;
        Stmt else_case = then_case && !s.orelse.empty() ? Stmts(s.orelse) : nullptr;
        if (!ok()) return nullptr;
        return Make<IfThenElseNode>(cond, then_case, else_case);
      }
      case PyStmt::Kind::kWith:
        return With(s);
      default:
        return Fail<Stmt>(s.pos, "this statement is not allowed in a PrimFunc");
    }
  }

  Stmt For(const PyStmt& s) {
    const PyExpr& iter = *s.value;
    std::string fn = CalleeName(iter);
    std::vector<const PyExpr*> targets;
    if (s.target->kind == K::kTuple) {
      for (const PyExprPtr& t : s.target->args) targets.push_back(t.get());
    } else {
      targets.push_back(s.target.get());
    }
    for (const PyExpr* t : targets) {
      if (t->kind != K::kName) return Fail<Stmt>(t->pos, "loop variables must be names");
    }
    std::vector<Range> ranges;
    ForKind kind = ForKind::kSerial;
    std::string thread;
    Attrs annotations;
    if (fn == "T.grid") {
      if (iter.args.size() - 1 != targets.size())
        return Fail<Stmt>(iter.pos,
                          absl::StrCat("T.grid has ", iter.args.size() - 1, " extents for ",
                                       targets.size(), " loop variables"));
      for (size_t i = 1; i < iter.args.size(); ++i) {
        PrimExpr extent = IndexExpr(*iter.args[i], DataType());
        if (!extent) return nullptr;
        ranges.push_back(MakeRange(IntImm(extent->dtype, 0), extent));
      }
    } else {
      static const std::map<std::string, ForKind> kKinds = {
          {"range", ForKind::kSerial},        {"T.serial", ForKind::kSerial},
          {"T.parallel", ForKind::kParallel}, {"T.vectorized", ForKind::kVectorized},
          {"T.unroll", ForKind::kUnrolled},   {"T.thread_binding", ForKind::kThreadBinding}};
      auto it = kKinds.find(fn);
      if (it == kKinds.end())
        return Fail<Stmt>(iter.pos,
                          "expected range, T.grid, T.serial, T.parallel, T.vectorized, T.unroll or "
                          "T.thread_binding");
      kind = it->second;
      if (targets.size() != 1) return Fail<Stmt>(s.target->pos, "one loop variable expected");
      if (iter.args.size() == 2) {
        PrimExpr extent = IndexExpr(*iter.args[1], DataType());
        if (!extent) return nullptr;
        ranges.push_back(MakeRange(IntImm(extent->dtype, 0), extent));
      } else if (iter.args.size() == 3) {
        Range r = RangeFromTo(*iter.args[1], *iter.args[2]);
        if (!r) return nullptr;
        ranges.push_back(r);
      } else {
        return Fail<Stmt>(iter.pos, absl::StrCat(fn, " takes (extent) or (start, stop)"));
      }
      for (const auto& [key, value] : iter.keywords) {
        if (key == "thread" && value->kind == K::kString) {
          thread = value->text;
        } else if (key == "annotations") {
          annotations = AttrDict(*value);
        } else {
          return Fail<Stmt>(value->pos, absl::StrCat("unknown loop argument '", key, "'"));
        }
      }
      if (kind == ForKind::kThreadBinding && thread.empty())
        return Fail<Stmt>(iter.pos, "T.thread_binding needs thread=\"...\"");
    }
    Push();
    std::vector<ir::Var> vars;
    for (size_t i = 0; i < targets.size(); ++i) {
      vars.push_back(MakeVar(targets[i]->text, ranges[i]->extent->dtype));
      Define(targets[i]->text, vars.back());
      loop_extents_[vars.back().get()] = ranges[i];
    }
    Stmt body = Stmts(s.body);
    Pop();
    if (!body) return nullptr;
    for (size_t i = vars.size(); i-- > 0;) {
      body = MakeFor(vars[i], ranges[i]->min, ranges[i]->extent, kind, body, annotations);
      if (kind == ForKind::kThreadBinding) {
        auto* f = const_cast<ForNode*>(body.as<ForNode>());  // just built, not yet shared
        f->thread_tag = thread;
      }
    }
    return body;
  }

  Stmt With(const PyStmt& s) {
    const PyExpr& item = *s.value;
    std::string fn = CalleeName(item);
    const PyExpr* as = s.target.get();
    if (fn == "T.block") return Block(s);
    if (fn == "T.attr") {
      if (!Arity(item, 3, fn)) return nullptr;
      ObjectRef node;
      const PyExpr& n = *item.args[1];
      if (n.kind == K::kName) {
        node = Lookup(n.text);
        if (!node) return Fail<Stmt>(n.pos, absl::StrCat("undefined name '", n.text, "'"));
      } else if (n.kind != K::kNone) {
        node = Expr(n, DataType());
      }
      if (item.args[2]->kind != K::kString)
        return Fail<Stmt>(item.args[2]->pos, "the attribute key is a string");
      PrimExpr value = Expr(*item.args[3], DataType());
      Stmt body = value ? Stmts(s.body) : nullptr;
      return body ? Stmt(Make<AttrStmtNode>(node, item.args[2]->text, value, body)) : nullptr;
    }
    if (fn == "T.LetStmt") {
      if (!Arity(item, 1, fn) || as == nullptr || as->kind != K::kName)
        return Fail<Stmt>(item.pos, "use: with T.LetStmt(value) as name:");
      PrimExpr value = Expr(*item.args[1], DataType());
      if (!value) return nullptr;
      ir::Var var = MakeVar(as->text, value->dtype);
      Push();
      Define(var->name, var);
      Stmt body = Stmts(s.body);
      Pop();
      return body ? Stmt(Make<LetStmtNode>(var, value, body)) : nullptr;
    }
    if (fn == "T.Assert") {
      if (!Arity(item, 2, fn) || item.args[2]->kind != K::kString)
        return Fail<Stmt>(item.pos, "use: with T.Assert(condition, \"message\"):");
      PrimExpr cond = Expr(*item.args[1], DataType());
      Stmt body = cond ? Stmts(s.body) : nullptr;
      return body ? Stmt(Make<AssertStmtNode>(cond, item.args[2]->text, body)) : nullptr;
    }
    if (fn == "T.decl_buffer") {
      if (as == nullptr || as->kind != K::kName)
        return Fail<Stmt>(item.pos, "use: with T.decl_buffer(shape, dtype) as name:");
      Buffer buffer = MakeBufferFrom(as->text, item, 1);
      if (!buffer) return nullptr;
      Push();
      Define(as->text, buffer);
      Stmt body = Stmts(s.body);
      Pop();
      return body ? Stmt(Make<AllocateNode>(buffer, body)) : nullptr;
    }
    if (fn == "T.seq") {
      std::vector<Stmt> stmts;
      for (const PyStmtPtr& child : s.body) {
        Stmt one = Statement(*child);
        if (!one) return nullptr;
        stmts.push_back(one);
      }
      return Make<SeqStmtNode>(std::move(stmts));
    }
    return Fail<Stmt>(item.pos, absl::StrCat("unknown TIR context '", fn.empty() ? "?" : fn, "'"));
  }

  Stmt Block(const PyStmt& s) {
    const PyExpr& item = *s.value;
    if (item.args.size() != 2 || item.args[1]->kind != K::kString)
      return Fail<Stmt>(item.pos, "use: with T.block(\"name\"):");
    auto* b = new BlockNode();
    ir::Block owner(b);
    b->name = item.args[1]->text;
    std::vector<PrimExpr> values;
    PrimExpr predicate = Bool(true);
    Push();
    size_t i = 0;
    auto axis = [&](const std::string& kind_name, const PyExpr& dom_expr, const PyExpr& value_expr,
                    const std::string& var_name, Pos pos) {
      static const std::map<std::string, IterKind> kKinds = {
          {"spatial", IterKind::kSpatial}, {"reduce", IterKind::kReduce},
          {"opaque", IterKind::kOpaque},   {"S", IterKind::kSpatial},
          {"R", IterKind::kReduce},        {"O", IterKind::kOpaque}};
      auto kind = kKinds.find(kind_name);
      if (kind == kKinds.end())
        return (void)Fail(pos, absl::StrCat("unknown axis kind '", kind_name, "'"));
      Range dom;
      if (dom_expr.kind == K::kTuple && dom_expr.args.size() == 2) {
        dom = RangeFromTo(*dom_expr.args[0], *dom_expr.args[1]);
      } else {
        PrimExpr extent = IndexExpr(dom_expr, DataType());
        if (extent) dom = MakeRange(IntImm(extent->dtype, 0), extent);
      }
      PrimExpr value = dom ? Expr(value_expr, DataType()) : nullptr;
      if (!value) return;
      ir::Var var = MakeVar(var_name, dom->extent->dtype);
      b->iter_vars.push_back(Make<IterVarNode>(var, dom, kind->second));
      values.push_back(value);
      Define(var_name, var);
    };
    for (; i < s.body.size() && ok(); ++i) {
      const PyStmt& h = *s.body[i];
      std::string fn = h.value ? CalleeName(*h.value) : "";
      if (h.kind == PyStmt::Kind::kAssign && !h.annotation && absl::StartsWith(fn, "T.axis.")) {
        const PyExpr& call = *h.value;
        std::string kind = fn.substr(7);
        if (kind == "remap") {
          if (call.args.size() != 3 || call.args[1]->kind != K::kString ||
              call.args[2]->kind != K::kList) {
            Fail(call.pos, "use: T.axis.remap(\"SR\", [i, k])");
            break;
          }
          const std::string& kinds = call.args[1]->text;
          const PyExpr& loops = *call.args[2];
          size_t n = h.target->kind == K::kTuple ? h.target->args.size() : 1;
          if (kinds.size() != loops.args.size() || kinds.size() != n) {
            Fail(call.pos, "T.axis.remap: the kinds, loop variables and targets differ in number");
            break;
          }
          for (size_t k = 0; k < n && ok(); ++k) {
            const PyExpr& target = n == 1 ? *h.target : *h.target->args[k];
            const PyExpr& loop = *loops.args[k];
            if (target.kind != K::kName || loop.kind != K::kName) {
              Fail(target.pos, "T.axis.remap binds names to loop variables");
              break;
            }
            PrimExpr lv = NameExpr(loop);
            if (!lv) break;
            auto ext = loop_extents_.find(lv.get());
            if (ext == loop_extents_.end()) {
              Fail(loop.pos, absl::StrCat("'", loop.text, "' is not an enclosing loop variable"));
              break;
            }
            ir::Var var = MakeVar(target.text, ext->second->extent->dtype);
            b->iter_vars.push_back(Make<IterVarNode>(var, ext->second,
                                                     kinds[k] == 'S'   ? IterKind::kSpatial
                                                     : kinds[k] == 'R' ? IterKind::kReduce
                                                                       : IterKind::kOpaque));
            values.push_back(lv);
            Define(target.text, var);
          }
          continue;
        }
        if (h.target->kind != K::kName || call.args.size() != 3) {
          Fail(h.pos, absl::StrCat("use: v = ", fn, "(dom, value)"));
          break;
        }
        axis(kind, *call.args[1], *call.args[2], h.target->text, call.pos);
        continue;
      }
      if (h.kind == PyStmt::Kind::kExpr && fn == "T.where") {
        if (!Arity(*h.value, 1, fn)) break;
        predicate = Expr(*h.value->args[1], DataType());
        continue;
      }
      if (h.kind == PyStmt::Kind::kExpr && (fn == "T.reads" || fn == "T.writes")) {
        std::vector<BufferRegion>& regions = fn == "T.reads" ? b->reads : b->writes;
        std::vector<const PyExpr*> items;
        for (size_t k = 1; k < h.value->args.size(); ++k) {
          const PyExpr* a = h.value->args[k].get();
          if (a->kind == K::kList || a->kind == K::kTuple) {
            for (const PyExprPtr& x : a->args) items.push_back(x.get());
          } else {
            items.push_back(a);
          }
        }
        for (const PyExpr* x : items) {
          BufferRegion r = Region(*x);
          if (!r) break;
          regions.push_back(r);
        }
        continue;
      }
      if (h.kind == PyStmt::Kind::kExpr && fn == "T.block_attr") {
        if (!Arity(*h.value, 1, fn)) break;
        b->annotations = AttrDict(*h.value->args[1]);
        continue;
      }
      if (h.kind == PyStmt::Kind::kAssign && !h.annotation && h.target->kind == K::kName &&
          (fn == "T.alloc_buffer" || fn == "T.match_buffer")) {
        bool match = fn == "T.match_buffer";
        BufferRegion source =
            match && h.value->args.size() > 1 ? Region(*h.value->args[1]) : nullptr;
        if (!ok()) break;
        Buffer buffer = MakeBufferFrom(h.target->text, *h.value, match ? 2 : 1);
        if (!buffer) break;
        if (match) {
          b->match_buffers.push_back(Make<MatchBufferRegionNode>(buffer, source));
        } else {
          b->alloc_buffers.push_back(buffer);
        }
        Define(h.target->text, buffer);
        continue;
      }
      if (h.kind == PyStmt::Kind::kWith && CalleeName(*h.value) == "T.init") {
        b->init = Stmts(h.body);
        continue;
      }
      break;  // the body starts here
    }
    if (ok() && i >= s.body.size()) Fail(s.pos, "a block needs a body");
    if (ok()) b->body = Stmts(s.body, i);
    Pop();
    if (!ok() || !predicate) return nullptr;
    return Make<BlockRealizeNode>(std::move(values), predicate, owner);
  }

  // `n = T.int64()` / `T.int64(is_size_var=True)` at the top of a function.
  bool IsDeclaration(const PyStmt& s) {
    if (s.kind != PyStmt::Kind::kAssign || s.annotation || !s.target || s.target->kind != K::kName)
      return false;
    std::string fn = CalleeName(*s.value);
    if (!absl::StartsWith(fn, "T.") || s.value->args.size() != 1) return false;
    absl::StatusOr<DataType> dtype = DataType::Parse(fn.substr(2));
    return dtype.ok() && !dtype->is_void();
  }
  size_t Declarations(const PyBody& body) {
    size_t i = 0;
    for (; i < body.size() && IsDeclaration(*body[i]); ++i) {
      const PyStmt& s = *body[i];
      DataType dtype = *DataType::Parse(CalleeName(*s.value).substr(2));
      const PyExpr* size = Keyword(*s.value, "is_size_var");
      bool is_size = size != nullptr && size->kind == K::kBool && size->int_value != 0;
      Define(s.target->text,
             is_size ? MakeSizeVar(s.target->text, dtype) : MakeVar(s.target->text, dtype));
    }
    return i;
  }

  // Decorator flags: @T.prim_func / @R.function(private=True, pure=False).
  bool Decorated(const PyStmt& def, const char* name, bool* is_private, bool* is_pure) {
    for (const PyExprPtr& d : def.decorators) {
      std::string dn = d->kind == K::kCall ? CalleeName(*d) : Dotted(d.get());
      if (dn != name) continue;
      if (d->kind == K::kCall) {
        for (const auto& [key, value] : d->keywords) {
          bool flag = value->kind == K::kBool && value->int_value != 0;
          if (key == "private") {
            *is_private = flag;
          } else if (key == "pure") {
            *is_pure = flag;
          } else {
            Fail(value->pos, absl::StrCat("unknown decorator argument '", key, "'"));
          }
        }
      }
      return true;
    }
    return false;
  }

  ObjectRef Function(const PyStmt& def) {
    bool is_private = false, is_pure = true;
    if (Decorated(def, "T.prim_func", &is_private, &is_pure)) return PrimFunction(def, is_private);
    if (Decorated(def, "R.function", &is_private, &is_pure))
      return RelaxFunction(def, is_private, is_pure, /*global=*/true);
    return Fail(def.pos, "a module function needs @T.prim_func or @R.function");
  }

  Attrs WithSymbol(Attrs attrs, const std::string& name, bool is_private) {
    if (is_private || GetAttr(attrs, "global_symbol")) return attrs;
    return WithAttr(std::move(attrs), "global_symbol", Make<StringImmNode>(name));
  }

  ObjectRef PrimFunction(const PyStmt& def, bool is_private) {
    auto* f = new PrimFuncNode();
    PrimFunc owner(f);
    Push();
    loop_extents_.clear();
    size_t i = Declarations(def.body);
    for (const PyParam& p : def.params) {
      if (!p.annotation) return Fail(p.pos, absl::StrCat("parameter '", p.name, "' needs a type"));
      if (CalleeName(*p.annotation) == "T.Buffer") {
        Buffer buffer = MakeBufferFrom(p.name, *p.annotation, 1);
        if (!buffer) return nullptr;
        ir::Var param = MakeVar(p.name, DataType::Handle());
        f->params.push_back(param);
        f->buffer_map.emplace_back(param, buffer);
        Define(p.name, buffer);
      } else {
        DataType dtype = AnnotationDType(*p.annotation);
        if (!ok()) return nullptr;
        ir::Var param = MakeVar(p.name, dtype);
        f->params.push_back(param);
        Define(p.name, param);
      }
    }
    for (; i < def.body.size() && ok(); ++i) {
      const PyStmt& s = *def.body[i];
      std::string fn = s.value ? CalleeName(*s.value) : "";
      if (s.kind == PyStmt::Kind::kExpr && fn == "T.func_attr") {
        if (!Arity(*s.value, 1, fn)) return nullptr;
        f->attrs = AttrDict(*s.value->args[1]);
        continue;
      }
      if (s.kind == PyStmt::Kind::kAssign && !s.annotation && s.target->kind == K::kName &&
          fn == "T.match_buffer") {
        // TVM's style: `A = T.match_buffer(a, (n,), "float32")` for a T.handle parameter.
        const PyExpr& call = *s.value;
        if (call.args.size() < 3 || call.args[1]->kind != K::kName)
          return Fail(call.pos, "use: A = T.match_buffer(param, shape, dtype)");
        ObjectRef param = Lookup(call.args[1]->text);
        auto var = param.as_ref<ir::VarNode>();
        if (!var || !var->dtype.is_handle())
          return Fail(call.args[1]->pos, "T.match_buffer needs a T.handle parameter");
        Buffer buffer = MakeBufferFrom(s.target->text, call, 2);
        if (!buffer) return nullptr;
        f->buffer_map.emplace_back(var, buffer);
        Define(s.target->text, buffer);
        continue;
      }
      break;
    }
    if (ok() && i >= def.body.size()) return Fail(def.pos, "a PrimFunc needs a body");
    f->body = ok() ? Stmts(def.body, i) : nullptr;
    Pop();
    if (!ok()) return nullptr;
    f->attrs = WithSymbol(f->attrs, def.name, is_private);
    return owner;
  }

  // ---- Relax ----
  relax::StructInfo SInfo(const PyExpr& e, bool signature) {
    using namespace relax;
    std::string name = e.kind == K::kCall ? CalleeName(e) : Dotted(&e);
    auto dim = [&](const PyExpr& d) -> PrimExpr {
      if (d.kind == K::kString) {
        if (!signature)
          return Fail<PrimExpr>(d.pos, "a quoted dimension is only allowed in a signature");
        absl::StatusOr<PyExprPtr> parsed =
            ParsePythonExpr(src_, d.text, {d.pos.line, d.pos.col + 1});
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

  relax::StructInfo SInfoArgs(const PyExpr& e) {
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

  relax::Expr RExpr(const PyExpr& e) {
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
            return Fail<relax::Expr>(e.pos,
                                     absl::StrCat("no function '", e.text, "' in the module"));
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
  relax::Expr MetadataConstant(const PyExpr& e) {
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

  relax::Expr RCall(const PyExpr& e) {
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
      PrimExpr v = Expr(*e.args[1], DataType::Int(64));
      return v ? relax::Expr(Make<PrimValueNode>(v)) : nullptr;
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
      return Fail<relax::Expr>(e.pos,
                               "R.match_cast must be the whole right-hand side of a binding");
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
      relax::Expr func = name == "R.call_tir" ? RExpr(*e.args[1])
                                              : relax::Expr(Make<ExternFuncNode>(string_arg(1)));
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
    for (size_t i = first; i < e.args.size(); ++i) {
      relax::Expr a = RExpr(*e.args[i]);
      if (!a) return nullptr;
      args.push_back(a);
    }
    for (const auto& [key, value] : e.keywords) {
      if (key == "sinfo_args") {
        if (value->kind == K::kList) {
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
  relax::Expr Const(const PyExpr& e) {
    if (e.args.size() < 2) return Fail<relax::Expr>(e.pos, "use: R.const(value, \"dtype\")");
    DataType dtype = e.args.size() > 2 ? ParseDType(*e.args[2]) : DataType::Float(32);
    if (const PyExpr* d = Keyword(e, "dtype")) dtype = ParseDType(*d);
    if (!ok()) return nullptr;
    std::vector<int64_t> shape;
    const PyExpr* shape_kw = Keyword(e, "shape");
    const PyExpr& data = *e.args[1];
    std::string bytes;
    if (data.kind == K::kString) {  // raw hex
      if (shape_kw == nullptr)
        return Fail<relax::Expr>(e.pos, "raw constant bytes need shape=(...)");
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

  bool Elements(const PyExpr& e, DataType dtype, size_t depth, std::vector<int64_t>* shape,
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
  ObjectRef RelaxFunction(const PyStmt& def, bool is_private, bool is_pure, bool global) {
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
      if (s.kind == PyStmt::Kind::kAssign && s.target->kind == K::kName &&
          s.target->text == "cls" && s.value->kind == K::kName) {
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

  // Statements [begin, end) as a SeqExpr. The last is `return x` (result_name null) or an
  // assignment to `*result_name` (If branches; its annotation is stored in *result_sinfo).
  struct BranchResult {
    std::string name;
    relax::StructInfo sinfo;
    Pos pos;
  };
  relax::Expr RBody(const PyBody& body, size_t begin, Pos where, BranchResult* result) {
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

  relax::BindingBlock Dataflow(const PyStmt& s) {
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

  relax::Var NewVar(const std::string& name, relax::StructInfo sinfo) {
    return in_dataflow_ ? relax::MakeDataflowVar(name, sinfo) : relax::MakeVar(name, sinfo);
  }

  relax::Binding RStatement(const PyStmt& s) {
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

  const Source& src_;
  absl::Status error_;
  std::map<std::string, relax::GlobalVar> globals_;
  std::vector<std::unordered_map<std::string, ObjectRef>> scopes_;
  std::unordered_map<const Object*, Range> loop_extents_;
  std::vector<ir::Var>* auto_shape_vars_ = nullptr;
  bool in_dataflow_ = false;
  std::vector<relax::Expr> metadata_;  // metadata["relax.expr.Constant"]
  bool has_metadata_ = false;
};

}  // namespace

absl::StatusOr<IRModule> ParseScript(absl::string_view text, const std::string& filename) {
  Source source(filename, std::string(text));
  absl::StatusOr<PyBody> file = ParsePython(source);
  if (!file.ok()) return file.status();
  return Builder(source).Module(*file);
}

}  // namespace kiln::script
