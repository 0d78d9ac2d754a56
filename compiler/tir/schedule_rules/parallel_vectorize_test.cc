// ParallelVectorize: elementwise and transposing blocks, parallel outside and vectorized or tiled
// inside. Through DefaultSchedule: the rules with heuristic decisions, the AVX-512 policy's unless
// a test says otherwise, each schedule checked to compute what the unscheduled function does.
#include "compiler/ir/relax_expr.h"
#include "compiler/ir/structural.h"
#include "compiler/script/printer.h"
#include "compiler/script/script_parser.h"
#include "compiler/testing/expect_schedule.h"
#include "compiler/testing/schedule_workloads.h"
#include "compiler/tir/default_schedule.h"
#include "compiler/tir/schedule/trace.h"
#include "compiler/tir/schedule_rules/schedule_rules.h"
#include "compiler/tir/transform/transform.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::tir {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const target::CpuPolicy kAvx512 = target::PolicyFor(target::Avx512Znver4());

// A transpose (NHWC -> NCHW) is tiled: a vector's lanes of channels (the input's innermost
// dimension) just outside a row of the output, so that the input lines one row touches are
// reused from L1 for each of their channels, the outer loops fused and parallel.
TEST(ParallelVectorizeTest, ATransposeIsTiledSoItsInputLinesAreReused) {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(R"(
@I.ir_module
class Module:
    @T.prim_func
    def permute_dims(X: T.Buffer((1, 4, 28, 64), "float32"), Y: T.Buffer((1, 64, 4, 28), "float32")):
        for n, c, h, w in T.grid(1, 64, 4, 28):
            with T.block("T_transpose"):
                vn, vc, vh, vw = T.axis.remap("SSSS", [n, c, h, w])
                T.reads(X[vn, vh, vw, vc])
                T.writes(Y[vn, vc, vh, vw])
                Y[vn, vc, vh, vw] = X[vn, vh, vw, vc]
)");
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<Schedule> sch = DefaultSchedule(*mod, "permute_dims", kAvx512);
  ASSERT_TRUE(sch.ok()) << sch.status();
  const std::string scheduled = script::PrintScript(sch->mod());
  EXPECT_THAT(scheduled, HasSubstr("for n_c_0_h_w_0_fused in T.parallel(16):"));
  EXPECT_THAT(scheduled, HasSubstr("for c_1, w_1 in T.grid(16, 28):"));
  testing::ExpectSameNumbers(*mod, *sch);
}

}  // namespace
}  // namespace kiln::tir
