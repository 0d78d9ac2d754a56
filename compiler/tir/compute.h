// Builds TIR PrimFuncs from index formulas, the way operator legalization writes kernels: declare
// the parameter buffers, then add stages — each one block under a perfect loop nest, in the form
// the default schedule and the lowering passes expect:
//
//   ComputeBuilder b;
//   Buffer x = b.Input("x", f32, {n, 64});
//   Buffer y = b.Output("y", f32, {n, 64});
//   b.Compute("relu", y, [&](const Indices& i) { return Max(Load(x, i), zero); });
//   PrimFunc f = b.Build();
//
// Shape dimensions may be symbolic. The Relax variables in the shapes given to Input/Output are
// replaced by fresh TIR variables, so each PrimFunc owns its size variables (they are bound from
// the parameter buffers' shapes when the kernel is called).
#ifndef KILN_COMPILER_TIR_COMPUTE_H_
#define KILN_COMPILER_TIR_COMPUTE_H_

#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler/ir/tir_stmt.h"

namespace kiln::tir {

using Indices = std::vector<ir::PrimExpr>;
using IndexFn = std::function<ir::PrimExpr(const Indices&)>;
// Where a point of an iteration domain is stored.
using IndexMapFn = std::function<Indices(const Indices&)>;
// A reduction body: the spatial indices of the output point and the reduction indices.
using ReduceFn = std::function<ir::PrimExpr(const Indices& spatial, const Indices& reduce)>;

enum class Combiner { kSum, kProd, kMax, kMin };

// The value reductions with `combiner` start from for `dtype` (0, 1, lowest, highest).
ir::PrimExpr ReduceIdentity(Combiner combiner, ir::DataType dtype);
// buffer[indices], with the buffer's dtype.
ir::PrimExpr Load(const ir::Buffer& buffer, const Indices& indices);

class ComputeBuilder {
 public:
  // Parameters, in call order: inputs first, then outputs (destination-passing style).
  ir::Buffer Input(const std::string& name, ir::DataType dtype,
                   const std::vector<ir::PrimExpr>& shape);
  ir::Buffer Output(const std::string& name, ir::DataType dtype,
                    const std::vector<ir::PrimExpr>& shape);
  // An intermediate buffer allocated inside the function.
  ir::Buffer Temp(const std::string& name, ir::DataType dtype,
                  const std::vector<ir::PrimExpr>& shape);

  // out[i...] = value(i...) over all of out.
  void Compute(const std::string& name, const ir::Buffer& out, const IndexFn& value);
  // out[store_at(i...)] = value(i...) over i in `domain`: a layout change written in the order
  // of its source (a packed convolution's result unpacked, iterating the packed layout so that
  // the block reads it at its own iter vars).
  void ComputeOver(const std::string& name, const ir::Buffer& out,
                   const std::vector<ir::PrimExpr>& domain, const IndexMapFn& store_at,
                   const IndexFn& value);
  // out[i...] = combiner over r in [0, reduce_extents) of value(i..., r...).
  void Reduce(const std::string& name, const ir::Buffer& out,
              const std::vector<ir::PrimExpr>& reduce_extents, Combiner combiner,
              const ReduceFn& value);

  // The PrimFunc (attribute tir.noalias); the builder is spent afterwards. A size variable that
  // no parameter dimension is by itself (the `n` of an `n * 4` dimension) cannot be read off the
  // buffers: it becomes a scalar parameter after the buffers.
  ir::PrimFunc Build();
  // After Build: the caller's values of those scalar parameters, in order (call_tir's tir_vars).
  const std::vector<ir::PrimExpr>& size_args() const { return size_args_; }

 private:
  // Maps a shape expression given to Input/Output/Temp to the function's own variables. Private:
  // a formula built from the buffers' shapes already uses them, and rebinding an expression
  // holding loop or block variables would replace those too.
  ir::PrimExpr Rebind(const ir::PrimExpr& e);
  ir::Buffer Param(const std::string& name, ir::DataType dtype,
                   const std::vector<ir::PrimExpr>& shape);
  std::string BlockName(const std::string& name);
  // A block over `domain` x `reduce_extents` storing value(spatial, reduce) into
  // out[store_at(spatial)] (out[spatial] without store_at).
  void AddStage(const std::string& name, const ir::Buffer& out,
                const std::vector<ir::PrimExpr>& domain,
                const std::vector<ir::PrimExpr>& reduce_extents,
                const std::function<ir::PrimExpr(const Indices&, const Indices&)>& value,
                const IndexMapFn& store_at, bool accumulate, Combiner combiner);

  std::vector<ir::Var> params_;
  std::vector<std::pair<ir::Var, ir::Buffer>> buffer_map_;
  std::vector<ir::Buffer> temps_;
  std::vector<ir::Stmt> stages_;
  std::unordered_map<const ir::VarNode*, ir::Var> rebound_;  // Relax shape var -> own var
  std::vector<std::pair<ir::Var, ir::Var>> rebound_order_;   // the same, in order of first use
  std::vector<ir::PrimExpr> size_args_;
  std::unordered_set<const ir::VarNode*> own_vars_;
  std::unordered_map<std::string, int> block_names_;
};

}  // namespace kiln::tir

#endif  // KILN_COMPILER_TIR_COMPUTE_H_
