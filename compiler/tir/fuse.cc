#include "compiler/tir/fuse.h"

#include <set>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/structural.h"
#include "compiler/ir/tir_functor.h"

namespace kiln::tir {
namespace {

using namespace ir;  // NOLINT: a pass over TIR

// A copy of `b` with its own identity (and data variable): a kernel used twice in one chain
// must not share buffers between its two copies.
Buffer FreshBuffer(const Buffer& b, std::vector<PrimExpr> shape) {
  auto* node = new BufferNode();
  node->name = b->name;
  node->data = b->data ? MakeVar(b->data->name, b->data->dtype) : b->data;
  node->dtype = b->dtype;
  node->shape = std::move(shape);
  node->strides = b->strides;
  node->elem_offset = b->elem_offset;
  node->scope = b->scope;
  node->data_alignment = b->data_alignment;
  return Buffer(node);
}

// Rewrites one kernel's body into the fused function: size variables and parameter buffers
// become the fused ones, loop and block variables and the kernel's own buffers fresh copies
// (the same kernel may appear twice), and block names unique.
class MemberRewriter : public StmtExprMutator {
 public:
  explicit MemberRewriter(std::set<std::string>* block_names) : block_names_(*block_names) {}

  std::unordered_map<const VarNode*, PrimExpr> vars;
  std::unordered_map<const BufferNode*, Buffer> buffers;

  PrimExpr VisitExpr(const PrimExpr& e) override {
    if (const auto* v = e.as<VarNode>()) {
      auto it = vars.find(v);
      return it == vars.end() ? e : it->second;
    }
    return DefaultVisitExpr(e);
  }

  // A buffer of the kernel: the fused one it was mapped to, or a fresh copy.
  Buffer VisitBuffer(const Buffer& b) override {
    auto it = buffers.find(b.get());
    if (it != buffers.end()) return it->second;
    std::vector<PrimExpr> shape;
    VisitExprs(b->shape, &shape);
    Buffer out = FreshBuffer(b, std::move(shape));
    buffers.emplace(b.get(), out);
    return out;
  }

  Stmt Rewrite(const Stmt& body) {
    struct Definitions : StmtExprVisitor {
      std::vector<Var> vars;
      void VisitStmt(const Stmt& s) override {
        if (const auto* f = s.as<ForNode>()) vars.push_back(f->loop_var);
        if (const auto* b = s.as<BlockNode>()) {
          for (const IterVar& iv : b->iter_vars) vars.push_back(iv->var);
        }
        DefaultVisitStmt(s);
      }
    } defs;
    defs.VisitStmt(body);
    for (const Var& v : defs.vars) {
      Var fresh = MakeVar(v->name, v->dtype);
      fresh_[v.get()] = fresh;
      vars[v.get()] = fresh;
    }
    return VisitStmt(body);
  }

  // Gives the size variables in `b`'s shape that nothing has bound yet fresh copies: a size
  // variable belongs to its kernel, and a kernel may appear twice.
  void FreshSizeVars(const Buffer& b) {
    for (const PrimExpr& d : b->shape) {
      PostOrderVisit(d, [&](const PrimExpr& e) {
        const auto* v = e.as<VarNode>();
        if (v != nullptr && vars.count(v) == 0) vars[v] = MakeSizeVar(v->name, v->dtype);
      });
    }
  }

  Stmt VisitStmt(const Stmt& s) override {
    Stmt out = DefaultVisitStmt(s);
    if (const auto* f = out.as<ForNode>()) {
      auto it = fresh_.find(f->loop_var.get());
      if (it == fresh_.end()) return out;
      return MakeFor(it->second, f->min, f->extent, f->for_kind, f->body, f->annotations);
    }
    const auto* block = out.as<BlockNode>();
    if (block == nullptr) return out;
    BlockNode* copy = CopyBlock(*block);
    Block owner(copy);
    for (IterVar& iv : copy->iter_vars) {
      auto it = fresh_.find(iv->var.get());
      if (it != fresh_.end())
        iv = Make<IterVarNode>(it->second, iv->dom, iv->iter_kind, iv->thread_tag);
    }
    std::string name = block->name;
    for (int k = 1; block_names_.count(name); ++k) name = absl::StrCat(block->name, "_", k);
    block_names_.insert(name);
    copy->name = name;
    return owner;
  }

 private:
  std::set<std::string>& block_names_;
  std::unordered_map<const VarNode*, Var> fresh_;
};

const Buffer* ParamBuffer(const PrimFuncNode& f, size_t i) {
  if (i >= f.params.size()) return nullptr;
  for (const auto& [var, buffer] : f.buffer_map) {
    if (var.get() == f.params[i].get()) return &buffer;
  }
  return nullptr;
}

bool SameDim(const PrimExpr& a, const PrimExpr& b) {
  const int64_t* x = AsConstInt(a);
  const int64_t* y = AsConstInt(b);
  if (x != nullptr || y != nullptr) return x != nullptr && y != nullptr && *x == *y;
  return ExprDeepEqual(a, b);
}

// Maps the kernel's buffer `kernel` onto the fused buffer `fused`: its unbound size variables
// take the fused dimensions, and every other dimension must agree.
absl::Status Unify(const Buffer& kernel, const Buffer& fused, MemberRewriter* rw) {
  if (kernel->dtype != fused->dtype || kernel->shape.size() != fused->shape.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("buffer '", kernel->name, "' does not match the value it is given"));
  }
  for (size_t d = 0; d < kernel->shape.size(); ++d) {
    const PrimExpr& k = kernel->shape[d];
    if (const auto* v = k.as<VarNode>(); v != nullptr && rw->vars.count(v) == 0) {
      rw->vars.emplace(v, fused->shape[d]);
    } else if (!SameDim(rw->VisitExpr(k), fused->shape[d])) {
      return absl::InvalidArgumentError(
          absl::StrCat("dimension ", d, " of buffer '", kernel->name, "' does not unify"));
    }
  }
  rw->buffers[kernel.get()] = fused;
  return absl::OkStatus();
}

void AppendStages(const Stmt& s, std::vector<Stmt>* out) {
  if (const auto* seq = s.as<SeqStmtNode>()) {
    for (const Stmt& c : seq->seq) AppendStages(c, out);
  } else {
    out->push_back(s);
  }
}

// The root block of a kernel written by ComputeBuilder or FusePrimFuncs, or null.
const BlockNode* RootBlock(const PrimFuncNode& f) {
  const auto* realize = f.body.as<BlockRealizeNode>();
  if (realize == nullptr || !realize->iter_values.empty()) return nullptr;
  const BlockNode* block = realize->block.get();
  return block->iter_vars.empty() && !block->init && block->match_buffers.empty() ? block : nullptr;
}

}  // namespace

absl::StatusOr<PrimFunc> FusePrimFuncs(const std::vector<FusionMember>& members, int num_inputs) {
  if (members.empty()) return absl::InvalidArgumentError("nothing to fuse");
  const size_t num_values = static_cast<size_t>(num_inputs) + members.size();
  std::vector<Buffer> values(num_values);
  std::vector<Buffer> allocs;
  std::vector<Stmt> stages;
  std::set<std::string> block_names = {"root"};
  for (size_t k = 0; k < members.size(); ++k) {
    const PrimFuncNode& kernel = *members[k].kernel;
    const std::vector<int>& inputs = members[k].inputs;
    if (kernel.params.size() != inputs.size() + 1) {
      return absl::InvalidArgumentError(absl::StrCat("member ", k, " takes ", kernel.params.size(),
                                                     " parameters, not ", inputs.size(),
                                                     " inputs and one output"));
    }
    MemberRewriter rw(&block_names);
    for (size_t j = 0; j < inputs.size(); ++j) {
      const Buffer* param = ParamBuffer(kernel, j);
      const int v = inputs[j];
      if (param == nullptr || v < 0 || static_cast<size_t>(v) >= num_values)
        return absl::InvalidArgumentError(absl::StrCat("member ", k, " input ", j, " is invalid"));
      if (!values[v]) {
        if (v >= num_inputs) {
          return absl::InvalidArgumentError(
              absl::StrCat("member ", k, " reads value ", v, " before it is computed"));
        }
        rw.FreshSizeVars(*param);
        values[v] = rw.VisitBuffer(*param);
      }
      if (absl::Status s = Unify(*param, values[v], &rw); !s.ok()) return s;
    }
    const Buffer* out = ParamBuffer(kernel, inputs.size());
    if (out == nullptr) return absl::InvalidArgumentError("a member without an output buffer");
    rw.FreshSizeVars(*out);
    Buffer fused_out = rw.VisitBuffer(*out);
    values[num_inputs + k] = fused_out;
    if (k + 1 < members.size()) allocs.push_back(fused_out);
    Stmt body = kernel.body;
    if (const BlockNode* root = RootBlock(kernel)) {
      for (const Buffer& b : root->alloc_buffers) allocs.push_back(rw.VisitBuffer(b));
      body = root->body;
    }
    AppendStages(rw.Rewrite(body), &stages);
  }

  auto* f = new PrimFuncNode();
  PrimFunc owner(f);
  std::unordered_set<const VarNode*> bound;  // size variables the parameters bind
  auto add_param = [&](const Buffer& b) {
    Var handle = MakeVar(b->name, DataType::Handle());
    f->params.push_back(handle);
    f->buffer_map.emplace_back(handle, b);
    for (const PrimExpr& d : b->shape) {
      if (const auto* v = d.as<VarNode>()) bound.insert(v);
    }
  };
  for (int v = 0; v < num_inputs; ++v) {
    if (!values[v]) return absl::InvalidArgumentError(absl::StrCat("input ", v, " is never read"));
    add_param(values[v]);
  }
  add_param(values.back());
  // A dimension using a size variable no parameter binds by itself. A parameter's (the `n` of an
  // `n * 4` dimension) would need a scalar parameter the members' calls do not pass, an
  // intermediate's a size nothing gives: such a group is not fused.
  auto unbound_dim = [&](const Buffer& b) -> const PrimExpr* {
    for (const PrimExpr& d : b->shape) {
      bool unbound = false;
      PostOrderVisit(d, [&](const PrimExpr& e) {
        if (const auto* v = e.as<VarNode>(); v != nullptr && bound.count(v) == 0) unbound = true;
      });
      if (unbound) return &d;
    }
    return nullptr;
  };
  for (const auto& [handle, b] : f->buffer_map) {
    if (const PrimExpr* d = unbound_dim(b)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter '", b->name, "' has a dimension no parameter binds: ", DebugPrint(*d)));
    }
  }
  for (const Buffer& b : allocs) {
    if (unbound_dim(b) != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("the size of intermediate '", b->name,
                                                     "' is not known from the parameters"));
    }
  }
  auto* root = new BlockNode();
  Block root_owner(root);
  root->name = "root";
  root->alloc_buffers = std::move(allocs);
  root->body = stages.size() == 1 ? stages[0] : Seq(std::move(stages));
  f->body = Make<BlockRealizeNode>(std::vector<PrimExpr>{}, Bool(true), root_owner);
  f->attrs = WithAttr({}, "tir.noalias", Bool(true));
  return owner;
}

namespace {

// A stage `for v...: out[v...] = value(v...)` over all of an intermediate `out`.
struct InjectiveStage {
  Buffer out;
  std::vector<Var> iter_vars;
  PrimExpr value;
};

bool AsInjectiveStage(const Stmt& stage, const std::unordered_set<const BufferNode*>& allocs,
                      InjectiveStage* result) {
  std::vector<const ForNode*> loops;
  Stmt inner = stage;
  while (const auto* f = inner.as<ForNode>()) {
    const int64_t* min = AsConstInt(f->min);
    if (f->for_kind != ForKind::kSerial || !f->annotations.empty() || min == nullptr || *min != 0)
      return false;
    loops.push_back(f);
    inner = f->body;
  }
  const auto* realize = inner.as<BlockRealizeNode>();
  const auto* pred = realize != nullptr ? realize->predicate.as<IntImmNode>() : nullptr;
  if (pred == nullptr || pred->value != 1) return false;
  const BlockNode& block = *realize->block;
  const auto* store = block.body.as<BufferStoreNode>();
  if (store == nullptr || block.init || !block.alloc_buffers.empty() ||
      !block.match_buffers.empty() || allocs.count(store->buffer.get()) == 0 ||
      block.iter_vars.size() != loops.size() || store->indices.size() != loops.size() ||
      store->buffer->shape.size() != loops.size()) {
    return false;
  }
  for (size_t k = 0; k < loops.size(); ++k) {
    const IterVar& iv = block.iter_vars[k];
    if (iv->iter_kind != IterKind::kSpatial ||
        realize->iter_values[k].get() != loops[k]->loop_var.get() ||
        store->indices[k].get() != iv->var.get() ||
        !SameDim(loops[k]->extent, store->buffer->shape[k]) ||
        !SameDim(iv->dom->extent, loops[k]->extent)) {
      return false;
    }
    result->iter_vars.push_back(iv->var);
  }
  bool reads_itself = false;
  PostOrderVisit(store->value, [&](const PrimExpr& e) {
    if (const auto* l = e.as<BufferLoadNode>();
        l != nullptr && l->buffer.get() == store->buffer.get())
      reads_itself = true;
  });
  if (reads_itself) return false;
  result->out = store->buffer;
  result->value = store->value;
  return true;
}

bool Writes(const Stmt& s, const BufferNode* buffer) {
  bool writes = false;
  struct Finder : StmtExprVisitor {
    const BufferNode* buffer;
    bool* writes;
    void VisitStmt(const Stmt& s) override {
      if (const auto* st = s.as<BufferStoreNode>(); st != nullptr && st->buffer.get() == buffer)
        *writes = true;
      DefaultVisitStmt(s);
    }
  } finder;
  finder.buffer = buffer;
  finder.writes = &writes;
  finder.VisitStmt(s);
  return writes;
}

// Replaces loads of the stage's output by its value at the loaded point; blocks that read it
// read what the value reads instead.
class Inliner : public StmtExprMutator {
 public:
  explicit Inliner(const InjectiveStage& stage) : stage_(stage) {}

  PrimExpr VisitExpr(const PrimExpr& e) override {
    const auto* load = e.as<BufferLoadNode>();
    if (load == nullptr || load->buffer.get() != stage_.out.get()) return DefaultVisitExpr(e);
    std::vector<PrimExpr> indices;
    VisitExprs(load->indices, &indices);
    std::unordered_map<const VarNode*, PrimExpr> at;
    for (size_t k = 0; k < indices.size(); ++k) {
      const Var& iv = stage_.iter_vars[k];
      at[iv.get()] = indices[k]->dtype == iv->dtype ? indices[k] : Cast(iv->dtype, indices[k]);
    }
    PrimExpr value = Substitute(stage_.value, [&](const Var& v) -> PrimExpr {
      auto it = at.find(v.get());
      return it == at.end() ? v : it->second;
    });
    PostOrderVisit(value, [&](const PrimExpr& x) {
      if (const auto* l = x.as<BufferLoadNode>()) new_loads_.push_back(l);
    });
    return value;
  }

  Stmt VisitStmt(const Stmt& s) override {
    const auto* block = s.as<BlockNode>();
    if (block == nullptr) return DefaultVisitStmt(s);
    std::vector<const BufferLoadNode*> outer;
    outer.swap(new_loads_);
    Stmt out = DefaultVisitStmt(s);
    if (out.get() != s.get()) {
      BlockNode* node = CopyBlock(*out.as<BlockNode>());
      Block b(node);
      std::vector<BufferRegion> reads;
      std::unordered_set<const BufferNode*> seen;
      for (const BufferRegion& r : node->reads) {
        if (r->buffer.get() == stage_.out.get()) continue;
        reads.push_back(r);
        seen.insert(r->buffer.get());
      }
      for (const BufferLoadNode* l : new_loads_) {
        if (!seen.insert(l->buffer.get()).second) continue;
        std::vector<Range> region;
        for (const PrimExpr& i : l->indices) region.push_back(MakeRange(i, IntImm(i->dtype, 1)));
        reads.push_back(Make<BufferRegionNode>(l->buffer, std::move(region)));
      }
      node->reads = std::move(reads);
      out = b;
    }
    new_loads_.swap(outer);
    new_loads_.insert(new_loads_.end(), outer.begin(), outer.end());
    return out;
  }

 private:
  const InjectiveStage& stage_;
  std::vector<const BufferLoadNode*> new_loads_;  // loads the inlined values brought in
};

// True when a reduction block in `s` (one with an init) reads `buffer`.
bool ReducedFrom(const Stmt& s, const BufferNode* buffer) {
  bool found = false;
  struct Finder : StmtExprVisitor {
    const BufferNode* buffer;
    bool* found;
    void VisitStmt(const Stmt& s) override {
      if (const auto* block = s.as<BlockNode>(); block != nullptr && block->init) {
        PostOrderVisit(block->body, [&](const PrimExpr& e) {
          if (const auto* l = e.as<BufferLoadNode>(); l != nullptr && l->buffer.get() == buffer)
            *found = true;
        });
      }
      DefaultVisitStmt(s);
    }
  } finder;
  finder.buffer = buffer;
  finder.found = &found;
  finder.VisitStmt(s);
  return found;
}

bool HasSelect(const PrimExpr& e) {
  bool found = false;
  PostOrderVisit(e, [&](const PrimExpr& x) { found = found || x.as<SelectNode>() != nullptr; });
  return found;
}

}  // namespace

PrimFunc InlineInjective(const PrimFunc& f) {
  const BlockNode* root = RootBlock(*f);
  if (root == nullptr) return f;
  std::vector<Stmt> stages;
  AppendStages(root->body, &stages);
  std::unordered_set<const BufferNode*> allocs;
  for (const Buffer& b : root->alloc_buffers) allocs.insert(b.get());
  std::unordered_set<const BufferNode*> inlined;
  for (size_t s = 0; s + 1 < stages.size(); ++s) {
    InjectiveStage stage;
    if (!AsInjectiveStage(stages[s], allocs, &stage)) continue;
    bool other_writer = false;
    for (size_t t = 0; t < stages.size(); ++t) {
      if (t != s && stages[t] && Writes(stages[t], stage.out.get())) other_writer = true;
    }
    // A guarded copy (a convolution's zero padding) stays a stage of its own when a reduction
    // reads it: inlined, every multiply-add would test the bounds and clamp its index, which
    // no longer vectorizes into contiguous loads.
    bool guarded_into_reduction = false;
    for (size_t t = s + 1; t < stages.size() && HasSelect(stage.value); ++t) {
      if (stages[t] && ReducedFrom(stages[t], stage.out.get())) guarded_into_reduction = true;
    }
    if (other_writer || guarded_into_reduction) continue;
    for (size_t t = s + 1; t < stages.size(); ++t) stages[t] = Inliner(stage).VisitStmt(stages[t]);
    stages[s] = nullptr;
    inlined.insert(stage.out.get());
  }
  if (inlined.empty()) return f;
  std::vector<Stmt> kept;
  for (const Stmt& s : stages) {
    if (s) kept.push_back(s);
  }
  BlockNode* node = CopyBlock(*root);
  Block new_root(node);
  node->alloc_buffers.clear();
  for (const Buffer& b : root->alloc_buffers) {
    if (!inlined.count(b.get())) node->alloc_buffers.push_back(b);
  }
  node->body = kept.size() == 1 ? kept[0] : Seq(std::move(kept));
  Stmt body = node->alloc_buffers.empty()
                  ? node->body
                  : Stmt(Make<BlockRealizeNode>(std::vector<PrimExpr>{}, Bool(true), new_root));
  return WithBody(f, body);
}

}  // namespace kiln::tir
