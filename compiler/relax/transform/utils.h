// Small analyses the Relax passes share.
#ifndef KILN_COMPILER_RELAX_TRANSFORM_UTILS_H_
#define KILN_COMPILER_RELAX_TRANSFORM_UTILS_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/ir/relax_expr.h"
#include "compiler/target/cpu_policy.h"

namespace kiln::ir::relax {

// How often each variable is used (not defined) in `e`.
std::unordered_map<const VarNode*, int> CountVarUses(const Expr& e);

// The name of the Op a call calls ("relax.nn.conv2d"), "" for anything else.
const char* OpName(const CallNode* call);

// A string attribute's value, or `fallback` where it is absent or not a string.
std::string StringAttrOr(const Attrs& attrs, const char* key, const std::string& fallback);

// An attribute value listing integers (int64), as the operators' axes and bounds are written.
ObjectRef IntList(const std::vector<int64_t>& values);

// A conv2d or conv3d call by the constant weight `w` (OIHW or OIDHW), described for the CPU
// policy's decisions (target/cpu_policy.h); `input_nhwc` is left for the caller.
target::ConvDescription DescribeConv(const CallNode& call, const ConstantNode& w);

}  // namespace kiln::ir::relax

#endif  // KILN_COMPILER_RELAX_TRANSFORM_UTILS_H_
