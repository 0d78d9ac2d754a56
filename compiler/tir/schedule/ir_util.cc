#include "compiler/tir/schedule/ir_util.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "compiler/arith/analyzer.h"
#include "compiler/ir/structural.h"
#include "compiler/ir/tir_functor.h"

namespace kiln::tir::schedule_util {

using namespace ir;  // NOLINT: TIR rewriting

namespace {

// The statements directly inside `s` (a block's init excluded).
std::vector<Stmt> Children(const Stmt& s) {
  if (const auto* n = s.as<ForNode>()) return {n->body};
  if (const auto* n = s.as<SeqStmtNode>()) return n->seq;
  if (const auto* n = s.as<BlockRealizeNode>()) return {Stmt(n->block)};
  if (const auto* n = s.as<BlockNode>()) return {n->body};
  if (const auto* n = s.as<IfThenElseNode>()) {
    if (n->else_case) return {n->then_case, n->else_case};
    return {n->then_case};
  }
  if (const auto* n = s.as<LetStmtNode>()) return {n->body};
  if (const auto* n = s.as<AttrStmtNode>()) return {n->body};
  if (const auto* n = s.as<AllocateNode>()) return {n->body};
  if (const auto* n = s.as<AssertStmtNode>()) return {n->body};
  if (const auto* n = s.as<WhileNode>()) return {n->body};
  return {};
}

bool Find(const Stmt& s, const std::function<bool(const Stmt&)>& match, std::vector<Stmt>* path) {
  path->push_back(s);
  if (match(s)) return true;
  for (const Stmt& c : Children(s)) {
    if (c && Find(c, match, path)) return true;
  }
  path->pop_back();
  return false;
}

}  // namespace

std::vector<Stmt> PathTo(const Stmt& root, const std::function<bool(const Stmt&)>& match) {
  std::vector<Stmt> path;
  if (!Find(root, match, &path)) path.clear();
  return path;
}

std::vector<Stmt> PathToBlock(const Stmt& root, const std::string& name) {
  return PathTo(root, [&](const Stmt& s) {
    const auto* r = s.as<BlockRealizeNode>();
    return r != nullptr && r->block->name == name;
  });
}

std::vector<Stmt> PathToLoop(const Stmt& root, const VarNode* var) {
  return PathTo(root, [&](const Stmt& s) {
    const auto* f = s.as<ForNode>();
    return f != nullptr && f->loop_var.get() == var;
  });
}

ForNode* CopyFor(const ForNode& loop) {
  auto* copy = new ForNode();
  copy->loop_var = loop.loop_var;
  copy->min = loop.min;
  copy->extent = loop.extent;
  copy->for_kind = loop.for_kind;
  copy->thread_tag = loop.thread_tag;
  copy->body = loop.body;
  copy->annotations = loop.annotations;
  return copy;
}

Stmt WithLoopBody(const ForNode& loop, Stmt body) {
  ForNode* copy = CopyFor(loop);
  Stmt owner(copy);
  copy->body = std::move(body);
  return owner;
}

std::string RvName(BlockRV rv) { return absl::StrCat("b", rv.id); }
std::string RvName(LoopRV rv) { return absl::StrCat("l", rv.id); }
std::string RvName(ExprRV rv) { return absl::StrCat("v", rv.id); }

Stmt Rebuild(const Stmt& s, const std::map<const StmtNode*, Stmt>& replacements) {
  if (!s) return s;
  auto it = replacements.find(s.get());
  if (it != replacements.end()) return it->second;
  if (const auto* n = s.as<ForNode>()) {
    Stmt body = Rebuild(n->body, replacements);
    if (!body) return Stmt();
    if (body == n->body) return s;
    return WithLoopBody(*n, body);
  }
  if (const auto* n = s.as<SeqStmtNode>()) {
    std::vector<Stmt> seq;
    bool changed = false;
    for (const Stmt& c : n->seq) {
      Stmt r = Rebuild(c, replacements);
      changed |= r != c;
      if (!r) continue;
      if (const auto* inner = r.as<SeqStmtNode>()) {
        seq.insert(seq.end(), inner->seq.begin(), inner->seq.end());
        changed = true;
      } else {
        seq.push_back(r);
      }
    }
    if (!changed) return s;
    if (seq.empty()) return Stmt();
    return Seq(std::move(seq));
  }
  if (const auto* n = s.as<BlockRealizeNode>()) {
    Stmt block = Rebuild(n->block, replacements);
    if (!block) return Stmt();
    if (block.get() == n->block.get()) return s;
    return Make<BlockRealizeNode>(n->iter_values, n->predicate, block.as_ref<BlockNode>());
  }
  if (const auto* n = s.as<BlockNode>()) {
    Stmt body = Rebuild(n->body, replacements);
    Stmt init = n->init ? Rebuild(n->init, replacements) : Stmt();
    if (!body) return Stmt();
    if (body == n->body && init == n->init) return s;
    BlockNode* copy = CopyBlock(*n);
    Block owner(copy);
    copy->body = body;
    copy->init = init;
    return owner;
  }
  if (const auto* n = s.as<IfThenElseNode>()) {
    Stmt then_case = Rebuild(n->then_case, replacements);
    Stmt else_case = n->else_case ? Rebuild(n->else_case, replacements) : Stmt();
    if (then_case == n->then_case && else_case == n->else_case) return s;
    if (!then_case && !else_case) return Stmt();
    if (!then_case) return Make<IfThenElseNode>(Not(n->condition), else_case, Stmt());
    return Make<IfThenElseNode>(n->condition, then_case, else_case);
  }
  if (const auto* n = s.as<LetStmtNode>()) {
    Stmt body = Rebuild(n->body, replacements);
    if (body == n->body) return s;
    return body ? Stmt(Make<LetStmtNode>(n->var, n->value, body)) : Stmt();
  }
  if (const auto* n = s.as<AttrStmtNode>()) {
    Stmt body = Rebuild(n->body, replacements);
    if (body == n->body) return s;
    return body ? Stmt(Make<AttrStmtNode>(n->node, n->key, n->value, body)) : Stmt();
  }
  if (const auto* n = s.as<AllocateNode>()) {
    Stmt body = Rebuild(n->body, replacements);
    if (body == n->body) return s;
    return body ? Stmt(Make<AllocateNode>(n->buffer, body)) : Stmt();
  }
  if (const auto* n = s.as<AssertStmtNode>()) {
    Stmt body = Rebuild(n->body, replacements);
    if (body == n->body) return s;
    return body ? Stmt(Make<AssertStmtNode>(n->condition, n->message, body)) : Stmt();
  }
  if (const auto* n = s.as<WhileNode>()) {
    Stmt body = Rebuild(n->body, replacements);
    if (body == n->body) return s;
    return body ? Stmt(Make<WhileNode>(n->condition, body)) : Stmt();
  }
  return s;
}

int ScopeIndex(const std::vector<Stmt>& path) {
  for (int i = static_cast<int>(path.size()) - 2; i >= 0; --i) {
    if (path[i].as<BlockNode>()) return i;
  }
  return -1;
}

std::vector<const ForNode*> LoopsInScope(const std::vector<Stmt>& path) {
  std::vector<const ForNode*> loops;
  for (size_t i = static_cast<size_t>(ScopeIndex(path) + 1); i + 1 < path.size(); ++i) {
    if (const auto* f = path[i].as<ForNode>()) loops.push_back(f);
  }
  return loops;
}

std::vector<const BlockRealizeNode*> ChildRealizes(const Stmt& s) {
  std::vector<const BlockRealizeNode*> out;
  std::function<void(const Stmt&)> walk = [&](const Stmt& x) {
    if (!x) return;
    if (const auto* r = x.as<BlockRealizeNode>()) {
      out.push_back(r);
      return;
    }
    for (const Stmt& c : Children(x)) walk(c);
  };
  walk(s);
  return out;
}

std::vector<const BlockNode*> AllBlocks(const Stmt& root) {
  std::vector<const BlockNode*> out;
  std::function<void(const Stmt&)> walk = [&](const Stmt& x) {
    if (!x) return;
    if (const auto* b = x.as<BlockNode>()) out.push_back(b);
    for (const Stmt& c : Children(x)) walk(c);
  };
  walk(root);
  return out;
}

const StmtNode* TopLevelStmt(const Stmt& scope_body, const StmtNode* node) {
  const auto* seq = scope_body.as<SeqStmtNode>();
  if (seq == nullptr) return scope_body.get();
  for (const Stmt& s : seq->seq) {
    if (!PathTo(s, [&](const Stmt& x) { return x.get() == node; }).empty()) return s.get();
  }
  return nullptr;
}

namespace {

void CollectAccesses(const Stmt& s, std::set<const BufferNode*>* loads,
                     std::set<const BufferNode*>* stores) {
  struct Collector : StmtExprVisitor {
    std::set<const BufferNode*>* loads;
    std::set<const BufferNode*>* stores;
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* l = e.as<BufferLoadNode>(); l && loads) loads->insert(l->buffer.get());
      DefaultVisitExpr(e);
    }
    void VisitStmt(const Stmt& x) override {
      if (x.as<BlockRealizeNode>()) return;  // a nested block's accesses are its own
      if (const auto* st = x.as<BufferStoreNode>(); st && stores) stores->insert(st->buffer.get());
      DefaultVisitStmt(x);
    }
  } c;
  c.loads = loads;
  c.stores = stores;
  if (s) c.VisitStmt(s);
}

}  // namespace

std::set<const BufferNode*> LoadedBuffers(const BlockNode& block) {
  std::set<const BufferNode*> out;
  CollectAccesses(block.body, &out, nullptr);
  CollectAccesses(block.init, &out, nullptr);
  return out;
}

std::set<const BufferNode*> StoredBuffers(const BlockNode& block) {
  std::set<const BufferNode*> out;
  CollectAccesses(block.body, nullptr, &out);
  CollectAccesses(block.init, nullptr, &out);
  return out;
}

std::vector<BufferRegion> DeriveReadRegions(const BlockNode& block) {
  std::vector<Buffer> order;
  std::map<const BufferNode*, std::vector<std::vector<PrimExpr>>> accesses;
  auto collect = [&](const Stmt& s) {
    if (!s) return;
    PostOrderVisit(s, [&](const PrimExpr& e) {
      const auto* l = e.as<BufferLoadNode>();
      if (l == nullptr) return;
      auto& list = accesses[l->buffer.get()];
      if (list.empty()) order.push_back(l->buffer);
      list.push_back(l->indices);
    });
  };
  collect(block.init);
  collect(block.body);
  std::vector<BufferRegion> regions;
  arith::Analyzer analyzer;
  for (const Buffer& buffer : order) {
    const auto& list = accesses[buffer.get()];
    std::vector<Range> region;
    for (size_t d = 0; d < buffer->shape.size(); ++d) {
      const PrimExpr& first = list[0][d];
      DataType t = first->dtype;
      int64_t lo = 0, hi = 0;
      bool constant_offsets = true;
      for (const auto& indices : list) {
        const int64_t* delta = nullptr;
        PrimExpr diff = analyzer.Simplify(indices[d] - first);
        delta = AsConstInt(diff);
        if (delta == nullptr) {
          constant_offsets = false;
          break;
        }
        lo = std::min(lo, *delta);
        hi = std::max(hi, *delta);
      }
      if (!constant_offsets) {
        region.push_back(MakeRange(IntImm(buffer->shape[d]->dtype, 0), buffer->shape[d]));
      } else {
        region.push_back(
            MakeRange(lo == 0 ? first : Add(first, IntImm(t, lo)), IntImm(t, hi - lo + 1)));
      }
    }
    regions.push_back(Make<BufferRegionNode>(buffer, std::move(region)));
  }
  return regions;
}

std::optional<AffineForm> Affine(const PrimExpr& e, const std::set<const VarNode*>& vars) {
  bool uses = false;
  PostOrderVisit(e, [&](const PrimExpr& x) {
    if (const auto* v = x.as<VarNode>(); v && vars.count(v)) uses = true;
  });
  if (!uses) return AffineForm{{}, e};
  if (const auto* v = e.as<VarNode>()) return AffineForm{{{v, 1}}, PrimExpr()};
  const auto* b = e.as<BinaryNode>();
  if (b == nullptr) return std::nullopt;
  if (e->kind() == NodeKind::kAdd || e->kind() == NodeKind::kSub) {
    std::optional<AffineForm> x = Affine(b->a, vars), y = Affine(b->b, vars);
    if (!x || !y) return std::nullopt;
    int64_t sign = e->kind() == NodeKind::kAdd ? 1 : -1;
    for (const auto& [v, c] : y->coeffs) x->coeffs[v] += sign * c;
    if (y->rest) {
      x->rest = !x->rest ? (sign > 0 ? y->rest : IntImm(y->rest->dtype, 0) - y->rest)
                         : (sign > 0 ? x->rest + y->rest : x->rest - y->rest);
    }
    return x;
  }
  if (e->kind() == NodeKind::kMul) {
    const int64_t* ca = AsConstInt(b->a);
    const int64_t* cb = AsConstInt(b->b);
    const int64_t* c = cb ? cb : ca;
    if (c == nullptr) return std::nullopt;
    std::optional<AffineForm> x = Affine(cb ? b->a : b->b, vars);
    if (!x) return std::nullopt;
    for (auto& entry : x->coeffs) entry.second *= *c;
    if (x->rest) x->rest = Mul(x->rest, *c);
    return x;
  }
  return std::nullopt;
}

bool IsConst(const PrimExpr& e, int64_t value) {
  const int64_t* c = e ? AsConstInt(e) : nullptr;
  return c != nullptr && *c == value;
}

PrimExpr Add(const PrimExpr& a, const PrimExpr& b) {
  if (!a || IsConst(a, 0)) return b;
  if (!b || IsConst(b, 0)) return a;
  return a + b;
}

PrimExpr Mul(const PrimExpr& a, int64_t b) {
  if (b == 1) return a;
  return a * IntImm(a->dtype, b);
}

PrimExpr And(const PrimExpr& a, const PrimExpr& b) {
  if (!a || IsConst(a, 1)) return b;
  if (!b || IsConst(b, 1)) return a;
  return Binary(NodeKind::kAnd, a, b);
}

Place Locate(const PrimFunc& f, const std::string& name) {
  Place p;
  p.path = PathToBlock(f->body, name);
  p.realize = p.path.back().as<BlockRealizeNode>();
  p.block = p.realize->block.get();
  int scope = ScopeIndex(p.path);
  p.scope = scope >= 0 ? p.path[scope].as<BlockNode>() : nullptr;
  p.scope_body = p.scope ? p.scope->body : f->body;
  p.top = TopLevelStmt(p.scope_body, p.realize);
  return p;
}

// A function whose body is a root block, so that new buffers have a block to live in.
PrimFunc WithRootBlock(const PrimFunc& f) {
  if (const auto* r = f->body.as<BlockRealizeNode>(); r && r->block->iter_vars.empty()) return f;
  auto* root = new BlockNode();
  Block owner(root);
  root->name = "root";
  root->body = f->body;
  return WithBody(f, Make<BlockRealizeNode>(std::vector<PrimExpr>{}, Bool(true), owner));
}

std::set<std::string> BlockNames(const Stmt& root) {
  std::set<std::string> names;
  for (const BlockNode* b : AllBlocks(root)) names.insert(b->name);
  return names;
}

// Replaces the scope block (or the function body) after its body changed and, optionally, with
// one more allocation.
PrimFunc WithScopeBody(const PrimFunc& f, const Place& place, Stmt body, Buffer allocate) {
  if (place.scope == nullptr) return WithBody(f, body);
  BlockNode* copy = CopyBlock(*place.scope);
  Block owner(copy);
  copy->body = body;
  if (allocate) copy->alloc_buffers.push_back(allocate);
  return WithBody(f, Rebuild(f->body, {{place.scope, owner}}));
}

Stmt ReplaceBuffers(const Stmt& s, const std::map<const BufferNode*, Buffer>& map) {
  struct Replacer : StmtExprMutator {
    const std::map<const BufferNode*, Buffer>* map;
    PrimExpr VisitExpr(const PrimExpr& e) override {
      PrimExpr visited = DefaultVisitExpr(e);
      const auto* l = visited.as<BufferLoadNode>();
      auto it = l ? map->find(l->buffer.get()) : map->end();
      if (it == map->end()) return visited;
      return Make<BufferLoadNode>(l->dtype, it->second, l->indices);
    }
    Stmt VisitStmt(const Stmt& x) override {
      Stmt visited = DefaultVisitStmt(x);
      const auto* st = visited.as<BufferStoreNode>();
      auto it = st ? map->find(st->buffer.get()) : map->end();
      if (it == map->end()) return visited;
      return Make<BufferStoreNode>(it->second, st->value, st->indices);
    }
  } replacer;
  replacer.map = &map;
  return replacer.VisitStmt(s);
}

BufferRegion PointRegion(const Buffer& buffer, const std::vector<PrimExpr>& indices) {
  std::vector<Range> region;
  for (const PrimExpr& i : indices) region.push_back(MakeRange(i, IntImm(i->dtype, 1)));
  return Make<BufferRegionNode>(buffer, std::move(region));
}

Stmt GridBlock(const std::string& name, const std::vector<PrimExpr>& shape,
               std::set<std::string>* names,
               const std::function<void(const std::vector<PrimExpr>&, BlockNode*)>& fill) {
  auto* block = new BlockNode();
  Block owner(block);
  block->name = name;
  std::vector<PrimExpr> iters, values;
  std::vector<Var> loops;
  for (size_t d = 0; d < shape.size(); ++d) {
    DataType t = shape[d]->dtype;
    Var v = MakeVar(absl::StrCat("v", d), t);
    block->iter_vars.push_back(
        Make<IterVarNode>(v, MakeRange(IntImm(t, 0), shape[d]), IterKind::kSpatial));
    iters.push_back(v);
    loops.push_back(MakeVar(FreshName(absl::StrCat("ax", d), names), t));
    values.push_back(loops.back());
  }
  fill(iters, block);
  Stmt nest = Make<BlockRealizeNode>(values, Bool(true), owner);
  for (size_t d = loops.size(); d-- > 0;) {
    nest = MakeFor(loops[d], IntImm(loops[d]->dtype, 0), shape[d], ForKind::kSerial, nest);
  }
  return nest;
}

bool IsParam(const PrimFunc& f, const BufferNode* buffer) {
  for (const auto& [param, b] : f->buffer_map) {
    if (b.get() == buffer) return true;
  }
  return false;
}

BufferNode* CopyBuffer(const Buffer& b) {
  auto* node = new BufferNode();
  node->name = b->name;
  node->data = b->data;
  node->dtype = b->dtype;
  node->shape = b->shape;
  node->strides = b->strides;
  node->elem_offset = b->elem_offset;
  node->scope = b->scope;
  node->data_alignment = b->data_alignment;
  return node;
}

std::string FreshName(const std::string& base, std::set<std::string>* used) {
  std::string name = base;
  for (int k = 1; used->count(name); ++k) name = absl::StrCat(base, "_", k);
  used->insert(name);
  return name;
}

std::set<std::string> UsedNames(const PrimFunc& f) {
  std::set<std::string> names;
  for (const Var& p : f->params) names.insert(p->name);
  for (const auto& [param, buffer] : f->buffer_map) names.insert(buffer->name);
  struct Names : StmtExprVisitor {
    std::set<std::string>* names;
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* v = e.as<VarNode>()) names->insert(v->name);
      DefaultVisitExpr(e);
    }
    void VisitStmt(const Stmt& s) override {
      if (const auto* f = s.as<ForNode>()) names->insert(f->loop_var->name);
      if (const auto* b = s.as<BlockNode>()) {
        names->insert(b->name);
        for (const IterVar& iv : b->iter_vars) names->insert(iv->var->name);
        for (const Buffer& buf : b->alloc_buffers) names->insert(buf->name);
      }
      DefaultVisitStmt(s);
    }
  } visitor;
  visitor.names = &names;
  visitor.VisitStmt(f->body);
  return names;
}

std::optional<std::map<const VarNode*, size_t>> DimsOfIterVars(const std::vector<PrimExpr>& indices,
                                                               const BlockNode& block) {
  std::map<const VarNode*, size_t> dims;
  for (size_t d = 0; d < indices.size(); ++d) {
    const auto* v = indices[d].as<VarNode>();
    bool is_iter = std::any_of(block.iter_vars.begin(), block.iter_vars.end(),
                               [&](const IterVar& iv) { return iv->var.get() == v; });
    if (v == nullptr || !is_iter || !dims.emplace(v, d).second) return std::nullopt;
  }
  return dims;
}

}  // namespace kiln::tir::schedule_util
