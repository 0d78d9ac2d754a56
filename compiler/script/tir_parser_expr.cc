// The TVMScript builder's TIR expressions, buffer references, regions and ranges
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

// `hint`: the dtype a bare literal here takes (void: the defaults).
PrimExpr Builder::Expr(const PyExpr& e, DataType hint) {
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

PrimExpr Builder::NameExpr(const PyExpr& e) {
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

PrimExpr Builder::BinaryExpr(const PyExpr& e, DataType hint) {
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

PrimExpr Builder::LoadExpr(const PyExpr& e) {
  Buffer buffer = BufferRef(*e.args[0]);
  if (!buffer || !IndexCount(buffer, e.args.size() - 1, e)) return nullptr;
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

Buffer Builder::BufferRef(const PyExpr& e) {
  if (e.kind != K::kName) return Fail<Buffer>(e.pos, "expected a buffer name");
  ObjectRef v = Lookup(e.text);
  if (auto b = v.as_ref<BufferNode>()) return b;
  return Fail<Buffer>(
      e.pos, absl::StrCat(v ? "'" : "undefined buffer '", e.text, v ? "' is not a buffer" : "'"));
}

// `A[i, j]` names one index per dimension of A (`B[()]` for a zero-dimensional B).
bool Builder::IndexCount(const Buffer& buffer, size_t count, const PyExpr& at) {
  if (count == buffer->shape.size()) return true;
  return Fail<bool>(at.pos, absl::StrCat(buffer->name, " has ", buffer->shape.size(),
                                         " dimensions, indexed with ", count));
}

std::vector<PrimExpr> Builder::Args(const PyExpr& call, size_t first) {
  std::vector<PrimExpr> out;
  for (size_t i = first; i < call.args.size() && ok(); ++i)
    out.push_back(Expr(*call.args[i], DataType()));
  return out;
}

bool Builder::Arity(const PyExpr& call, size_t n, const std::string& name) {
  if (call.args.size() != n + 1) {
    Fail(call.pos, absl::StrCat(name, " takes ", n, " argument", n == 1 ? "" : "s"));
    return false;
  }
  return true;
}

PrimExpr Builder::CallExpr(const PyExpr& e, DataType hint) {
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
      {"min", NodeKind::kMin},           {"max", NodeKind::kMax},          {"Div", NodeKind::kDiv},
      {"truncdiv", NodeKind::kDiv},      {"truncmod", NodeKind::kMod},     {"Mod", NodeKind::kMod},
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
  if (int arity = MathIntrinsicArity(fn); arity > 0) {
    if (!Arity(e, arity, name)) return nullptr;
    std::vector<PrimExpr> args = Args(e);
    if (!ok()) return nullptr;
    DataType dtype = args[0]->dtype;
    return Call(dtype, fn, std::move(args));
  }
  return Fail<PrimExpr>(e.pos, absl::StrCat("unknown TIR function '", name, "'"));
}

// `stop - start`, written back as the extent it was printed from: `start:start + e` gives e.
PrimExpr Builder::Extent(const PrimExpr& start, const PrimExpr& stop) {
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
PrimExpr Builder::IndexExpr(const PyExpr& e, DataType want) {
  PrimExpr value = Expr(e, want);
  if (value && !(value->dtype.is_integral() && value->dtype.is_scalar() && !value->dtype.is_bool()))
    return Fail<PrimExpr>(e.pos,
                          absl::StrCat("a loop bound or axis domain must be an integer, got ",
                                       value->dtype.ToString()));
  return value;
}

// (start, stop) from `a:b` or `T.serial(a, b)`: a bare literal start takes the stop's dtype.
bool Builder::StartStop(const PyExpr& a, const PyExpr& b, PrimExpr* start, PrimExpr* stop) {
  if (IsBareLiteral(a) && !IsBareLiteral(b)) {
    *stop = IndexExpr(b, DataType());
    *start = *stop ? IndexExpr(a, (*stop)->dtype) : nullptr;
  } else {
    *start = IndexExpr(a, DataType());
    *stop = *start ? IndexExpr(b, IsBareLiteral(b) ? (*start)->dtype : DataType()) : nullptr;
  }
  return ok() && *start && *stop;
}

Range Builder::RangeFromTo(const PyExpr& a, const PyExpr& b) {
  PrimExpr start, stop;
  if (!StartStop(a, b, &start, &stop)) return nullptr;
  if (start->dtype != stop->dtype) return Fail<Range>(a.pos, "range bounds have different dtypes");
  return MakeRange(start, Extent(start, stop));
}

BufferRegion Builder::Region(const PyExpr& e) {
  if (e.kind != K::kSubscript)
    return Fail<BufferRegion>(e.pos, "expected a buffer region such as A[i, 0:16]");
  Buffer buffer = BufferRef(*e.args[0]);
  if (!buffer || !IndexCount(buffer, e.args.size() - 1, e)) return nullptr;
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

std::vector<PrimExpr> Builder::ShapeTuple(const PyExpr& e) {
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
Buffer Builder::MakeBufferFrom(const std::string& name, const PyExpr& call, size_t first) {
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

}  // namespace kiln::script::parser
