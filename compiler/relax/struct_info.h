// Static reasoning about Relax StructInfo (seeds/relax_spec.md, "Structural Information"):
// subsumption ("is every value described by `derived` also described by `base`?"), the least
// upper bound used to join If branches, erasure of out-of-scope symbols when a value leaves its
// scope, and the shape-variable bookkeeping that MatchCast and function signatures need.
//
// The analysis is best-effort, as the spec requires: where it cannot decide statically it says
// so (kUnprovable / kLessSpecific) and the caller chooses between a run-time check and an error.
#ifndef KILN_COMPILER_RELAX_STRUCT_INFO_H_
#define KILN_COMPILER_RELAX_STRUCT_INFO_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/arith/analyzer.h"
#include "compiler/ir/relax_expr.h"

namespace kiln::ir::relax {

// The derive_func of packed functions (ExternFunc values): the call's result is its first
// sinfo_arg, or ObjectStructInfo without one.
inline constexpr char kDeriveFromSinfoArgs[] = "kiln.derive_from_sinfo_args";

// Outcomes of CheckBaseOf, ordered from best to worst (combine with std::max).
enum class BaseCheck {
  kPass = 0,          // statically proven
  kUnprovable = 1,    // same structure, but symbolic dimensions not provably equal
  kLessSpecific = 2,  // `derived` lacks information `base` requires (unknown ndim/dtype/shape)
  kFail = 3,          // provably incompatible: no value is described by both
};

// Is every value described by `derived` also described by `base`? Null means "unknown"
// (ObjectStructInfo for `base`, "nothing known" for `derived`).
BaseCheck CheckBaseOf(const StructInfo& base, const StructInfo& derived, arith::Analyzer* ana);

// The most specific StructInfo describing every value of `a` and of `b`.
StructInfo StructInfoLCA(const StructInfo& a, const StructInfo& b, arith::Analyzer* ana);

// Drops the parts of `sinfo` that mention shape variables or Relax variables that are not in
// scope (the predicates say which are), keeping what stays meaningful: a tensor whose shape
// used an out-of-scope variable keeps its dtype and rank. Returns `sinfo` itself if nothing
// needs erasing.
using ShapeVarPredicate = std::function<bool(const ir::VarNode*)>;
using RelaxVarPredicate = std::function<bool(const VarNode*)>;
StructInfo EraseToWellDefined(const StructInfo& sinfo, const ShapeVarPredicate& shape_var_in_scope,
                              const RelaxVarPredicate& var_in_scope);

// Every shape variable mentioned in `sinfo`, in first-appearance order, without repeats.
std::vector<ir::Var> ShapeVarsIn(const StructInfo& sinfo);
// The shape variables `sinfo` can bind: those that appear by themselves as a dimension of a
// tensor shape, a value of a shape, or the value of a PrimStructInfo (spec, well-formedness
// criterion 5).
std::vector<ir::Var> BindableShapeVars(const StructInfo& sinfo);

// Shape variable -> value, filled by MatchShapeVars and applied by SubstituteShapeVars.
using ShapeVarMap = std::unordered_map<const ir::VarNode*, PrimExpr>;

// Walks `pattern` and `value` side by side; where a dimension of `pattern` is a lone variable
// for which `bound` has no value yet, records the corresponding dimension of `value`.
void MatchShapeVars(const StructInfo& pattern, const StructInfo& value, ShapeVarMap* bound);
// `sinfo` with the shape variables in `map` replaced (and simplified).
StructInfo SubstituteShapeVars(const StructInfo& sinfo, const ShapeVarMap& map,
                               arith::Analyzer* ana);

// The result StructInfo of calling a function of type `func` with arguments of `args`: the
// parameters' shape variables are bound from the arguments and substituted into the return.
// Fails when an argument is provably incompatible or less specific than its parameter (the
// caller must insert a match_cast); `callee` names the function in the message.
absl::StatusOr<StructInfo> DeriveCallResult(const FuncStructInfoNode& func,
                                            const std::vector<StructInfo>& args,
                                            const std::string& callee, arith::Analyzer* ana);

// The size of the largest dimension expression in `sinfo`, counted as written out (a term used
// twice counts twice), up to `cap` + 1. Computed over shared nodes once; what it guards is the
// passes that write a dimension out (codegen, printing): a symbolic dimension squared again and
// again doubles its written size with each squaring.
int64_t LargestDimensionTerms(const StructInfo& sinfo, int64_t cap);

// The StructInfo of a Function value: its parameters' annotations, its return annotation (or
// `inferred_ret` when it has none) and its purity.
StructInfo FunctionStructInfo(const FunctionNode& func, const StructInfo& inferred_ret);

// Short text for messages: R.Tensor((n, 4), "float32"), R.Tuple(...), R.Object.
std::string ToString(const StructInfo& sinfo);

// The bytes of a tensor of known dtype and constant shape, computed with checked arithmetic:
// nullopt when the shape is not all constants, a dimension is negative, or the size does not fit
// in an int64 (a client can write a [2^40, 2^40] tensor).
std::optional<int64_t> StaticTensorBytes(const StructInfo& sinfo);

}  // namespace kiln::ir::relax

#endif  // KILN_COMPILER_RELAX_STRUCT_INFO_H_
