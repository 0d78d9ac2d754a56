// The TVMScript builder's TIR: expressions, buffers, statements and PrimFuncs (parser_builder.h).
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

Stmt Builder::Seq(std::vector<Stmt> stmts) {
  if (stmts.size() == 1) return stmts[0];
  return Make<SeqStmtNode>(std::move(stmts));
}

Stmt Builder::Stmts(const PyBody& body, size_t begin) {
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

DataType Builder::AnnotationDType(const PyExpr& e) {
  std::string name = Dotted(&e);
  absl::StatusOr<DataType> dtype =
      DataType::Parse(absl::StartsWith(name, "T.") ? name.substr(2) : "?");
  if (!dtype.ok()) return Fail<DataType>(e.pos, "expected a TIR type such as T.int32");
  return *dtype;
}

Stmt Builder::Statement(const PyStmt& s) {
  switch (s.kind) {
    case PyStmt::Kind::kAssign: {
      if (s.target->kind == K::kSubscript) {
        Buffer buffer = BufferRef(*s.target->args[0]);
        if (!buffer || !IndexCount(buffer, s.target->args.size() - 1, *s.target)) return nullptr;
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

Stmt Builder::For(const PyStmt& s) {
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
      return Fail<Stmt>(iter.pos, absl::StrCat("T.grid has ", iter.args.size() - 1, " extents for ",
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

Stmt Builder::With(const PyStmt& s) {
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

Stmt Builder::Block(const PyStmt& s) {
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
        if (size_t bad = kinds.find_first_not_of("SR"); bad != std::string::npos) {
          Fail(call.args[1]->pos, absl::StrCat("T.axis.remap: kind '", kinds.substr(bad, 1),
                                               "' is neither S (spatial) nor R (reduce)"));
          break;
        }
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
          b->iter_vars.push_back(Make<IterVarNode>(
              var, ext->second, kinds[k] == 'S' ? IterKind::kSpatial : IterKind::kReduce));
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
      BufferRegion source = match && h.value->args.size() > 1 ? Region(*h.value->args[1]) : nullptr;
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
      if (!Arity(*h.value, 0, "T.init")) break;
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

ObjectRef Builder::PrimFunction(const PyStmt& def, bool is_private) {
  auto* f = new PrimFuncNode();
  PrimFunc owner(f);
  Push();
  loop_extents_.clear();
  // The header, in TVM's order: T.func_attr, size variable declarations, T.match_buffer of
  // handle parameters, then the implicit root block's T.alloc_buffer. The declarations are
  // defined before the signature, whose buffer shapes may use them.
  auto is_header = [&](const PyStmt& s) {
    if (IsDeclaration(s)) return true;
    std::string fn = s.value ? CalleeName(*s.value) : "";
    if (s.kind == PyStmt::Kind::kExpr) return fn == "T.func_attr";
    return s.kind == PyStmt::Kind::kAssign && !s.annotation && s.target->kind == K::kName &&
           (fn == "T.match_buffer" || fn == "T.alloc_buffer");
  };
  size_t header = 0;
  for (; header < def.body.size() && is_header(*def.body[header]); ++header) {
    if (IsDeclaration(*def.body[header])) Declare(*def.body[header]);
  }
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
  std::vector<Buffer> root_allocs;
  for (size_t i = 0; i < header && ok(); ++i) {
    const PyStmt& s = *def.body[i];
    if (IsDeclaration(s)) continue;
    std::string fn = CalleeName(*s.value);
    const PyExpr& call = *s.value;
    if (fn == "T.func_attr") {
      if (!Arity(call, 1, fn)) return nullptr;
      f->attrs = AttrDict(*call.args[1]);
    } else if (fn == "T.alloc_buffer") {
      // TVM leaves the root block implicit (`# with T.block("root"):`) and prints its buffers
      // here.
      Buffer buffer = MakeBufferFrom(s.target->text, call, 1);
      if (!buffer) return nullptr;
      root_allocs.push_back(buffer);
      Define(s.target->text, buffer);
    } else {
      // `A = T.match_buffer(a, (n,), "float32")` for a T.handle parameter.
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
    }
  }
  if (ok() && header >= def.body.size()) return Fail(def.pos, "a PrimFunc needs a body");
  f->body = ok() ? Stmts(def.body, header) : nullptr;
  Pop();
  if (!ok()) return nullptr;
  if (!root_allocs.empty()) {
    auto* root = new BlockNode();
    ir::Block root_owner(root);
    root->name = "root";
    root->alloc_buffers = std::move(root_allocs);
    root->body = f->body;
    f->body = Make<BlockRealizeNode>(std::vector<PrimExpr>{}, Bool(true), root_owner);
  }
  f->attrs = WithSymbol(f->attrs, def.name, is_private);
  return owner;
}
}  // namespace kiln::script::parser
