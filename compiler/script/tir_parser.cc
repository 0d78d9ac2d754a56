// The TVMScript builder's TIR statements and PrimFuncs (parser_builder.h); its expressions,
// buffers and ranges are tir_parser_expr.cc's.
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
