// FlattenBuffers: allocated buffers of rank > 1 become 1-D, indexed row-major.
#include <unordered_map>

#include "compiler/arith/analyzer.h"
#include "compiler/ir/tir_functor.h"
#include "compiler/tir/transform/transform.h"

namespace kiln::tir {
namespace {

using namespace ir;  // NOLINT: passes build TIR nodes

// Rewrites every allocated buffer of rank > 1 as a 1-D buffer indexed row-major.
class BufferFlattener : public StmtExprMutator {
 public:
  Stmt VisitStmt(const Stmt& s) override {
    if (const auto* a = s.as<AllocateNode>();
        a && (a->buffer->shape.size() > 1 || !a->buffer->strides.empty())) {
      const Buffer& b = a->buffer;
      // Padded strides (storage_align) make the storage stride[0] * shape[0] elements.
      PrimExpr size = b->strides.empty() ? b->shape[0] : b->strides[0] * b->shape[0];
      for (size_t d = 1; b->strides.empty() && d < b->shape.size(); ++d) {
        size = size * b->shape[d];
      }
      Buffer flat = WithShape(b, {analyzer_.Simplify(size)});
      flat_[b.get()] = flat;
      Stmt body = VisitStmt(a->body);
      return Make<AllocateNode>(flat, body);
    }
    Stmt visited = StmtExprMutator::VisitStmt(s);
    if (const auto* st = visited.as<BufferStoreNode>()) {
      auto it = flat_.find(st->buffer.get());
      if (it != flat_.end())
        return Make<BufferStoreNode>(it->second, st->value, Flat(*st->buffer, st->indices));
    }
    return visited;
  }
  PrimExpr VisitExpr(const PrimExpr& e) override {
    PrimExpr visited = StmtExprMutator::VisitExpr(e);
    if (const auto* l = visited.as<BufferLoadNode>()) {
      auto it = flat_.find(l->buffer.get());
      if (it != flat_.end())
        return Make<BufferLoadNode>(l->dtype, it->second, Flat(*l->buffer, l->indices));
    }
    return visited;
  }

 private:
  std::vector<PrimExpr> Flat(const BufferNode& b, const std::vector<PrimExpr>& indices) {
    // A ramp in the last dimension (scalars elsewhere) stays a ramp over the flat index, so the
    // access stays a contiguous vector load or store.
    const auto* ramp = indices.back().as<RampNode>();
    bool keep_ramp =
        ramp != nullptr && std::all_of(indices.begin(), indices.end() - 1,
                                       [](const PrimExpr& i) { return i->dtype.lanes() == 1; });
    std::vector<PrimExpr> idx = indices;
    if (keep_ramp) idx.back() = ramp->base;
    PrimExpr flat = idx[0];
    if (!b.strides.empty()) {
      flat = idx[0] * b.strides[0];
      for (size_t d = 1; d < idx.size(); ++d) flat = flat + idx[d] * b.strides[d];
    }
    for (size_t d = 1; b.strides.empty() && d < idx.size(); ++d) {
      flat = flat * b.shape[d] + idx[d];
    }
    flat = analyzer_.Simplify(flat);
    if (keep_ramp) return {Make<RampNode>(flat, ramp->stride, ramp->lanes)};
    return {flat};
  }
  std::unordered_map<const Object*, Buffer> flat_;
  arith::Analyzer analyzer_;
};

}  // namespace

PrimFunc FlattenBuffers(const PrimFunc& f) {
  return WithBody(f, BufferFlattener().VisitStmt(f->body));
}

}  // namespace kiln::tir
