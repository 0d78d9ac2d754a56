#include "compiler/tune/features.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "compiler/ir/tir_functor.h"
#include "compiler/tune/task.h"

namespace kiln::tune {
namespace {

using namespace ir;  // NOLINT: a walk over TIR

float Log2(double x) { return static_cast<float>(std::log2(1.0 + std::max(0.0, x))); }

struct LoopInfo {
  const VarNode* var;
  int64_t extent;
  ForKind kind;
};

class Extractor : public StmtExprVisitor {
 public:
  std::vector<std::vector<float>> stores;  // per store
  std::vector<double> flops;               // per store, for ranking

  void VisitStmt(const Stmt& s) override {
    if (const auto* f = s.as<ForNode>()) {
      const int64_t* c = AsConstInt(f->extent);
      loops_.push_back({f->loop_var.get(), c ? *c : kRepresentativeExtent, f->for_kind});
      DefaultVisitStmt(s);
      loops_.pop_back();
      return;
    }
    if (const auto* r = s.as<BlockRealizeNode>()) {
      for (size_t k = 0; k < r->iter_values.size() && k < r->block->iter_vars.size(); ++k) {
        bound_[r->block->iter_vars[k]->var.get()] = r->iter_values[k];
      }
      DefaultVisitStmt(s);
      return;
    }
    if (const auto* st = s.as<BufferStoreNode>()) Store(*st);
    DefaultVisitStmt(s);
  }

 private:
  // The value of an index expression with every loop variable 0 except `one` (= 1); iter vars
  // through their bindings. Unknown leaves count 0.
  int64_t Eval(const PrimExpr& e, const VarNode* one, int depth = 0) const {
    if (depth > 64) return 0;
    if (const auto* i = e.as<IntImmNode>()) return i->value;
    if (const auto* v = e.as<VarNode>()) {
      auto it = bound_.find(v);
      if (it != bound_.end()) return Eval(it->second, one, depth + 1);
      return v == one ? 1 : 0;
    }
    if (const auto* c = e.as<CastNode>()) return Eval(c->value, one, depth + 1);
    if (const auto* b = e.as<BinaryNode>()) {
      int64_t x = Eval(b->a, one, depth + 1), y = Eval(b->b, one, depth + 1);
      switch (e->kind()) {
        case NodeKind::kAdd:
          return x + y;
        case NodeKind::kSub:
          return x - y;
        case NodeKind::kMul:
          return x * y;
        case NodeKind::kFloorDiv:
        case NodeKind::kDiv:
          return y == 0 ? 0 : x / y;
        case NodeKind::kFloorMod:
        case NodeKind::kMod:
          return y == 0 ? 0 : x % y;
        case NodeKind::kMin:
          return std::min(x, y);
        case NodeKind::kMax:
          return std::max(x, y);
        default:
          return 0;
      }
    }
    return 0;
  }

  // The flat element offset's change when loop `one` steps by 1.
  int64_t Stride(const Buffer& buffer, const std::vector<PrimExpr>& indices,
                 const VarNode* one) const {
    int64_t flat0 = 0, flat1 = 0;
    for (size_t d = 0; d < indices.size(); ++d) {
      int64_t dim_stride = 1;
      for (size_t e = d + 1; e < buffer->shape.size(); ++e) {
        const int64_t* c = AsConstInt(buffer->shape[e]);
        dim_stride *= c ? *c : kRepresentativeExtent;
      }
      flat0 += Eval(indices[d], nullptr) * dim_stride;
      flat1 += Eval(indices[d], one) * dim_stride;
    }
    return flat1 - flat0;
  }

  void Store(const BufferStoreNode& st) {
    struct Access {
      const Buffer* buffer;
      const std::vector<PrimExpr>* indices;
    };
    std::vector<Access> accesses = {{&st.buffer, &st.indices}};
    double ops = 0;
    PostOrderVisit(st.value, [&](const PrimExpr& e) {
      if (const auto* l = e.as<BufferLoadNode>()) accesses.push_back({&l->buffer, &l->indices});
      if (e.as<BinaryNode>() || e.as<CallNode>() || e.as<SelectNode>()) ops += 1;
    });
    double iterations = 1, parallel = 1, vector = 1, unrolled = 1;
    for (const LoopInfo& l : loops_) {
      iterations *= static_cast<double>(l.extent);
      if (l.kind == ForKind::kParallel) parallel *= static_cast<double>(l.extent);
      if (l.kind == ForKind::kVectorized) vector *= static_cast<double>(l.extent);
      if (l.kind == ForKind::kUnrolled) unrolled *= static_cast<double>(l.extent);
    }
    std::vector<float> f;
    f.push_back(Log2(iterations));
    f.push_back(Log2(iterations * ops));
    f.push_back(static_cast<float>(ops));
    f.push_back(Log2(parallel));
    f.push_back(Log2(vector));
    f.push_back(!loops_.empty() && loops_.back().kind == ForKind::kVectorized ? 1.f : 0.f);
    f.push_back(Log2(unrolled));
    f.push_back(static_cast<float>(loops_.size()));
    f.push_back(loops_.empty() ? 0.f : Log2(static_cast<double>(loops_.back().extent)));
    // Strides along the innermost loop: reused, contiguous, strided.
    float reused = 0, contiguous = 0, strided = 0;
    const VarNode* inner = loops_.empty() ? nullptr : loops_.back().var;
    for (const Access& a : accesses) {
      int64_t s = inner ? std::abs(Stride(*a.buffer, *a.indices, inner)) : 0;
      (s == 0 ? reused : s == 1 ? contiguous : strided) += 1;
    }
    const float n = static_cast<float>(accesses.size());
    f.push_back(reused / n);
    f.push_back(contiguous / n);
    f.push_back(strided / n);
    f.push_back(n);
    // Bytes touched under the innermost 1..6 loops, and iterations per byte there.
    for (size_t level = 1; level <= 6; ++level) {
      double bytes = 0, inner_iterations = 1;
      const size_t from = loops_.size() > level ? loops_.size() - level : 0;
      for (size_t k = from; k < loops_.size(); ++k)
        inner_iterations *= static_cast<double>(loops_[k].extent);
      for (const Access& a : accesses) {
        double span = 1;
        for (size_t k = from; k < loops_.size(); ++k) {
          span += static_cast<double>(std::abs(Stride(*a.buffer, *a.indices, loops_[k].var))) *
                  static_cast<double>(loops_[k].extent - 1);
        }
        bytes += span * (*a.buffer)->dtype.bytes();
      }
      f.push_back(Log2(bytes));
      if (level <= 3) f.push_back(Log2(inner_iterations / std::max(1.0, bytes)));
    }
    stores.push_back(std::move(f));
    flops.push_back(iterations * std::max(1.0, ops));
  }

  std::vector<LoopInfo> loops_;
  std::unordered_map<const VarNode*, PrimExpr> bound_;
};

}  // namespace

std::vector<float> ExtractFeatures(const PrimFunc& scheduled) {
  Extractor x;
  x.VisitStmt(scheduled->body);
  std::vector<size_t> order(x.stores.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return x.flops[a] > x.flops[b]; });
  std::vector<float> out(kFeatures, 0.f);
  for (size_t k = 0; k < 2 && k < order.size(); ++k) {
    const std::vector<float>& f = x.stores[order[k]];
    std::copy(f.begin(), f.begin() + std::min<size_t>(f.size(), kStoreFeatures),
              out.begin() + static_cast<std::ptrdiff_t>(k * kStoreFeatures));
  }
  double total = 0;
  for (double v : x.flops) total += v;
  out[2 * kStoreFeatures] = static_cast<float>(x.stores.size());
  out[2 * kStoreFeatures + 1] = Log2(total);
  return out;
}

}  // namespace kiln::tune
