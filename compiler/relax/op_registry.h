// The Relax operator registry: what the compiler knows about each built-in `Op` by name — how to
// infer the StructInfo of a call, whether it is pure (may appear in a dataflow block), and how it
// fuses, and how it legalizes into a TIR kernel. Operator families register themselves in
// op_registry.cc's table (the families live in ops/).
#ifndef KILN_COMPILER_RELAX_OP_REGISTRY_H_
#define KILN_COMPILER_RELAX_OP_REGISTRY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler/arith/analyzer.h"
#include "compiler/ir/module.h"

namespace kiln::tir {
class ComputeBuilder;
}

namespace kiln::ir::relax {

// How an operator composes in operator fusion (the TVM pattern kinds, in increasing generality).
enum class OpPattern {
  kElemWise = 0,         // out[i] = f(in[i])
  kBroadcast = 1,        // elementwise after broadcasting inputs
  kInjective = 2,        // each output element depends on one input element (reshape, flatten)
  kCommReduce = 3,       // commutative reduction
  kOutEWiseFusable = 4,  // complex op whose output can absorb elementwise ops (matmul, conv)
  kTuple = 7,            // tuple construction
  kOpaque = 8,           // never fused
};

// What inference sees besides the call: the module being built (to resolve GlobalVars; may be
// null) and an analyzer for symbolic shape arithmetic.
struct OpInferContext {
  const IRModuleNode* module = nullptr;
  arith::Analyzer* analyzer = nullptr;
};

// Infers the StructInfo of `call`, whose arguments are normalized (leaves with StructInfo).
// Errors name the operator and the offending argument.
using InferStructInfoFn = absl::StatusOr<StructInfo> (*)(const CallNode& call,
                                                         const OpInferContext& ctx);

// Writes the TIR kernel computing `call` into `b`: `inputs` holds one buffer per tensor argument
// (tuple arguments flattened, in order), `outputs` one per tensor of the call's result. Shapes
// are those of the arguments' StructInfo, symbolic dimensions included.
using LegalizeFn = absl::Status (*)(const CallNode& call, const std::vector<Buffer>& inputs,
                                    const std::vector<Buffer>& outputs, tir::ComputeBuilder& b);

struct OpInfo {
  std::string name;  // "relax.call_tir"
  int num_args;      // -1: variadic
  InferStructInfoFn infer;
  bool pure;
  OpPattern pattern;
  std::string summary;            // one line for docs and `kiln ops`
  LegalizeFn legalize = nullptr;  // null: the op is not lowered to a kernel (call_tir, ...)
};

// The registered operator called `name`, or null.
const OpInfo* LookupOp(absl::string_view name);
// Every registered operator, sorted by name.
std::vector<const OpInfo*> ListOps();

// Infers `call`'s StructInfo through the registry entry of its Op, after checking the argument
// count. Fails for an unknown operator.
absl::StatusOr<StructInfo> InferOpCall(const CallNode& call, const OpInferContext& ctx);

namespace ops {
// Whether conv2d `call` legalizes to a matmul over the flattened image (a 1x1 convolution that
// vectorizes along H * W): PackConstantWeights then leaves its weight as it is.
bool Conv2dIsFlatPointwise(const CallNode& call);

// The packed int8 weights of the int8 operators (ops/quantized_ops.cc): int32 words of four
// int8 values along the reduction (value k in byte k % 4), `block` output columns innermost.
// The block for `columns` output channels or columns: 16, else 8, else 4 (0: none divides).
int64_t Int8WeightBlock(int64_t columns);
// qnn.conv2d_int8, [O / block, words, KH, KW, block]: the word holding weight (o, i, h, w).
int64_t Int8ConvWeightWord(int64_t o, int64_t i, int64_t h, int64_t w, int64_t words, int64_t kh,
                           int64_t kw, int64_t block);
// qnn.dense_int8, [N / block, words, block]: the word holding weight (k, n).
int64_t Int8DenseWeightWord(int64_t k, int64_t n, int64_t words, int64_t block);
}  // namespace ops

// The registration entry points of the operator families (op_registry.cc calls them once).
void RegisterBuiltinOps(std::vector<OpInfo>* ops);  // call_tir, packed calls, shape helpers
void RegisterTensorOps(std::vector<OpInfo>* ops);   // matmul, reshape, flatten, permute_dims

}  // namespace kiln::ir::relax

#endif  // KILN_COMPILER_RELAX_OP_REGISTRY_H_
