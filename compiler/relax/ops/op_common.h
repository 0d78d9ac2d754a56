// What the operator families share: argument and attribute access with errors that name the
// operator, dimension helpers, and the index arithmetic of their TIR kernels (broadcasting).
// Internal to compiler/relax/ops.
#ifndef KILN_COMPILER_RELAX_OPS_OP_COMMON_H_
#define KILN_COMPILER_RELAX_OPS_OP_COMMON_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/relax/op_registry.h"
#include "compiler/tir/compute.h"

namespace kiln::ir::relax::ops {

const std::string& OpName(const CallNode& call);
absl::Status OpError(const CallNode& call, absl::string_view what);

// Argument `index` as a tensor, or an error naming the operator and the argument.
absl::StatusOr<const TensorStructInfoNode*> TensorArg(const CallNode& call, size_t index);
// The dimensions of `t` if known: a ShapeExpr's, or a shape Var's known values.
const std::vector<PrimExpr>* DimsOf(const TensorStructInfoNode& t);
// The dimensions of tensor argument `index`, or an error when they are unknown.
absl::StatusOr<std::vector<PrimExpr>> KnownDims(const CallNode& call, size_t index);
// The values of shape argument `index` when known (each may be a shape variable); else null.
const std::vector<PrimExpr>* ShapeArg(const CallNode& call, size_t index);
PrimExpr Product(const std::vector<PrimExpr>& dims, arith::Analyzer* ana);
PrimExpr Int64(int64_t value);

// Attributes by key. Missing keys give the default; a value of the wrong kind is an error.
absl::StatusOr<int64_t> IntAttr(const CallNode& call, const char* key, int64_t fallback);
absl::StatusOr<double> FloatAttr(const CallNode& call, const char* key, double fallback);
absl::StatusOr<bool> BoolAttr(const CallNode& call, const char* key, bool fallback);
absl::StatusOr<std::string> StringAttr(const CallNode& call, const char* key,
                                       const std::string& fallback);
// A layout attribute, "NCHW" or "NHWC" (anything else is an error naming it): whether it is
// NHWC; `fallback` when absent.
absl::StatusOr<bool> NhwcAttr(const CallNode& call, const char* key, bool fallback);
// A list of integers; a single integer is a list of one. nullopt when absent or None.
absl::StatusOr<std::optional<std::vector<int64_t>>> IntListAttr(const CallNode& call,
                                                                const char* key);
// `axis` in [-ndim, ndim) made non-negative, or an error naming the operator.
absl::StatusOr<int> NormalizeAxis(const CallNode& call, int64_t axis, int ndim);
// `list` normalized against rank `ndim`, sorted; an error for a repeated axis.
absl::StatusOr<std::vector<int>> NormalizeAxes(const CallNode& call,
                                               const std::vector<int64_t>& list, int ndim);
// The axes of a reduction: all when absent, each normalized, sorted, without repeats.
absl::StatusOr<std::vector<int>> ReduceAxes(const CallNode& call, const char* key, int ndim);

// NumPy broadcasting of several shapes (aligned from the right); an error for constant
// dimensions that cannot broadcast, nullopt when a symbolic pair cannot be decided.
absl::StatusOr<std::optional<std::vector<PrimExpr>>> BroadcastShapes(
    const CallNode& call, const std::vector<const std::vector<PrimExpr>*>& shapes,
    arith::Analyzer* ana);

// The indices into `input` for output point `out_index` under broadcasting: dimensions of
// constant size 1 read index 0 (unless the output's is 1 too: then the index is the output's,
// so that an elementwise consumer indexes its producer by its own iter vars, which inlining and
// compute-at need); leading output dimensions the input lacks are dropped.
tir::Indices BroadcastIndex(const Buffer& input, const Buffer& output,
                            const tir::Indices& out_index);

// x[index] where `inside` holds, else `fill`. Both sides of a select are evaluated, so the
// indices are clamped into x's bounds: the load never leaves the buffer.
PrimExpr GuardedLoad(const Buffer& x, tir::Indices index, const PrimExpr& inside,
                     const PrimExpr& fill);
PrimExpr Div(PrimExpr a, PrimExpr b);

// Registration entry points of the families defined in ops/.
void RegisterElementwiseOps(std::vector<OpInfo>* ops);   // unary, binary, compare, where, astype
void RegisterReduceOps(std::vector<OpInfo>* ops);        // sum..variance, argmax, softmax
void RegisterNNOps(std::vector<OpInfo>* ops);            // linear, conv2d, pools
void RegisterNormAndImageOps(std::vector<OpInfo>* ops);  // batch_norm, layer_norm, resize2d
void RegisterManipulateOps(std::vector<OpInfo>* ops);    // expand_dims..pad, full
void RegisterIndexOps(std::vector<OpInfo>* ops);         // take, gathers, scatters
void RegisterQuantizedOps(std::vector<OpInfo>* ops);     // qnn: conv2d, depthwise, dense (int8)

}  // namespace kiln::ir::relax::ops

#endif  // KILN_COMPILER_RELAX_OPS_OP_COMMON_H_
