// ConvertBlocksToLoops: block realizes become their bodies over the loops, iter vars
// substituted, predicates as ifs, alloc_buffers as Allocate, match_buffer views as source accesses.
#include <algorithm>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "compiler/ir/structural.h"
#include "compiler/ir/tir_functor.h"
#include "compiler/tir/transform/transform.h"

namespace kiln::tir {
namespace {

using namespace ir;  // NOLINT: passes build TIR nodes

// Accesses to match_buffer views, rewritten as accesses to the source buffer: view[i, j] over
// A[r0, c0:c0+n] is A[r0, c0 + j] (unit-extent region dimensions are the ones a lower-rank view
// drops).
class MatchBufferRewriter : public StmtExprMutator {
 public:
  struct View {
    Buffer source;
    std::vector<PrimExpr> mins;
    std::vector<int> mapped;  // region dimension of each view dimension
  };
  std::unordered_map<const BufferNode*, View> views;

  PrimExpr VisitExpr(const PrimExpr& e) override {
    PrimExpr visited = StmtExprMutator::VisitExpr(e);
    const auto* load = visited.as<BufferLoadNode>();
    if (load == nullptr) return visited;
    auto it = views.find(load->buffer.get());
    if (it == views.end()) return visited;
    return Make<BufferLoadNode>(load->dtype, it->second.source, Map(it->second, load->indices));
  }
  Stmt VisitStmt(const Stmt& s) override {
    Stmt visited = StmtExprMutator::VisitStmt(s);
    const auto* store = visited.as<BufferStoreNode>();
    if (store == nullptr) return visited;
    auto it = views.find(store->buffer.get());
    if (it == views.end()) return visited;
    return Make<BufferStoreNode>(it->second.source, store->value, Map(it->second, store->indices));
  }

 private:
  // `e` in the wider of its integer type and `other`'s (views and sources may index in int32
  // and int64).
  static PrimExpr Widened(const PrimExpr& e, const PrimExpr& other) {
    return e->dtype.bits() < other->dtype.bits() ? Cast(other->dtype.element_of(), e) : e;
  }
  static PrimExpr Plus(const PrimExpr& a, const PrimExpr& b) {
    return Widened(a, b) + Widened(b, a);
  }
  static std::vector<PrimExpr> Map(const View& v, const std::vector<PrimExpr>& indices) {
    std::vector<PrimExpr> out = v.mins;
    for (size_t j = 0; j < indices.size() && j < v.mapped.size(); ++j) {
      const PrimExpr& min = v.mins[v.mapped[j]];
      // A vector index stays a ramp, so the access stays a contiguous vector load or store.
      if (const auto* r = indices[j].as<RampNode>()) {
        out[v.mapped[j]] = Make<RampNode>(Plus(min, r->base), Widened(r->stride, min), r->lanes);
      } else {
        out[v.mapped[j]] = Plus(min, indices[j]);
      }
    }
    return out;
  }
};

class BlockFlattener : public StmtExprMutator {
 public:
  absl::Status status;

  Stmt VisitStmt(const Stmt& s) override {
    const auto* realize = s.as<BlockRealizeNode>();
    if (realize == nullptr) return StmtExprMutator::VisitStmt(s);
    const BlockNode* block = realize->block.get();
    if (block->init) {
      Fail(absl::StrCat("block '", block->name, "' still has an init; run LowerInitBlock first"));
      return s;
    }
    MatchBufferRewriter views;
    for (const MatchBufferRegion& m : block->match_buffers) {
      const Buffer& view = m->buffer;
      const BufferRegion& source = m->source;
      MatchBufferRewriter::View v;
      v.source = source->buffer;
      std::vector<int> non_unit;
      for (size_t d = 0; d < source->region.size(); ++d) {
        v.mins.push_back(source->region[d]->min);
        const auto* extent = source->region[d]->extent.as<IntImmNode>();
        if (extent == nullptr || extent->value != 1) non_unit.push_back(static_cast<int>(d));
      }
      if (view->shape.size() == source->region.size()) {
        for (size_t d = 0; d < view->shape.size(); ++d) v.mapped.push_back(static_cast<int>(d));
      } else if (view->shape.size() == non_unit.size()) {
        v.mapped = non_unit;
      } else {
        Fail(absl::StrCat("block '", block->name, "': match_buffer '", view->name, "' of rank ",
                          view->shape.size(), " does not fit its region"));
        return s;
      }
      for (size_t j = 0; j < v.mapped.size(); ++j) {
        const auto* want = view->shape[j].as<IntImmNode>();
        const auto* have = source->region[v.mapped[j]]->extent.as<IntImmNode>();
        if (want != nullptr && have != nullptr && want->value != have->value) {
          Fail(absl::StrCat("block '", block->name, "': match_buffer '", view->name, "' dimension ",
                            j, " is ", want->value, " but its region spans ", have->value));
          return s;
        }
      }
      views.views[view.get()] = v;
    }
    if (realize->iter_values.size() != block->iter_vars.size()) {
      Fail(absl::StrCat("block '", block->name, "' binds ", realize->iter_values.size(),
                        " values to ", block->iter_vars.size(), " iter vars"));
      return s;
    }
    std::unordered_map<const VarNode*, PrimExpr> values;
    for (size_t i = 0; i < block->iter_vars.size(); ++i) {
      values[block->iter_vars[i]->var.get()] = VisitExpr(realize->iter_values[i]);
    }
    Stmt body = VisitStmt(block->body);
    if (!views.views.empty()) body = views.VisitStmt(body);
    body = Substitute(body, [&](const Var& v) -> PrimExpr {
      auto it = values.find(v.get());
      return it != values.end() ? it->second : PrimExpr();
    });
    const auto* pred = realize->predicate.as<IntImmNode>();
    if (!(pred != nullptr && pred->value == 1)) {
      PrimExpr cond = Substitute(VisitExpr(realize->predicate), [&](const Var& v) -> PrimExpr {
        auto it = values.find(v.get());
        return it != values.end() ? it->second : PrimExpr();
      });
      body = Make<IfThenElseNode>(cond, body, nullptr);
    }
    for (auto it = block->alloc_buffers.rbegin(); it != block->alloc_buffers.rend(); ++it) {
      body = Make<AllocateNode>(*it, body);
    }
    return body;
  }

 private:
  void Fail(std::string message) {
    if (status.ok()) status = absl::InvalidArgumentError(std::move(message));
  }
};

}  // namespace

absl::StatusOr<PrimFunc> ConvertBlocksToLoops(const PrimFunc& f) {
  BlockFlattener flattener;
  Stmt body = flattener.VisitStmt(f->body);
  if (!flattener.status.ok()) return flattener.status;
  return WithBody(f, body);
}

}  // namespace kiln::tir
