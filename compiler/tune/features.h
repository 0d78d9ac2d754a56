// Program features of a scheduled kernel, the cost model's input: per store (the statements that
// do the work), its loop structure (iterations, parallel / vectorized / unrolled extents), its
// arithmetic, how its accesses stride along the innermost loop, and the bytes its accesses touch
// under the innermost 1..6 loops (the working set each cache level sees, and so the reuse).
// The kernel's vector is that of its two heaviest stores and two totals; fixed length.
#ifndef KILN_COMPILER_TUNE_FEATURES_H_
#define KILN_COMPILER_TUNE_FEATURES_H_

#include <vector>

#include "compiler/ir/tir_stmt.h"

namespace kiln::tune {

inline constexpr int kStoreFeatures = 22;
inline constexpr int kFeatures = 2 * kStoreFeatures + 2;

std::vector<float> ExtractFeatures(const ir::PrimFunc& scheduled);

}  // namespace kiln::tune

#endif  // KILN_COMPILER_TUNE_FEATURES_H_
