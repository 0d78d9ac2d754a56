// RandomComputeLocation: a convolution's padding is computed under its consumer's parallel loop
// when each iteration needs its own part of it (a depthwise convolution's channels), and only
// as far as that iteration reads.

#include "compiler/script/printer.h"
#include "compiler/testing/expect_schedule.h"
#include "compiler/testing/schedule_workloads.h"
#include "compiler/tir/default_schedule.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::tir {
namespace {

using ::testing::HasSubstr;

constexpr char kPaddedDepthwise[] = R"(
@T.prim_func
def dw(X: T.Buffer((1, 32, 14, 14), "float32"), W: T.Buffer((32, 1, 3, 3), "float32"), Y: T.Buffer((1, 32, 14, 14), "float32")):
    T.func_attr({"tir.noalias": T.bool(True)})
    with T.block("root"):
        P = T.alloc_buffer((1, 32, 16, 16), "float32")
        for n, c, h, w in T.grid(1, 32, 16, 16):
            with T.block("pad"):
                vn, vc, vh, vw = T.axis.remap("SSSS", [n, c, h, w])
                T.reads(X[vn, vc, vh - 1, vw - 1])
                T.writes(P[vn, vc, vh, vw])
                P[vn, vc, vh, vw] = T.if_then_else(1 <= vh and vh < 15 and 1 <= vw and vw < 15, X[vn, vc, vh - 1, vw - 1], T.float32(0))
        for n, c, h, w, kh, kw in T.grid(1, 32, 14, 14, 3, 3):
            with T.block("dw"):
                vn, vc, vh, vw, vkh, vkw = T.axis.remap("SSSSRR", [n, c, h, w, kh, kw])
                T.reads(P[vn, vc, vh + vkh, vw + vkw], W[vc, 0, vkh, vkw])
                T.writes(Y[vn, vc, vh, vw])
                with T.init():
                    Y[vn, vc, vh, vw] = T.float32(0)
                Y[vn, vc, vh, vw] = Y[vn, vc, vh, vw] + P[vn, vc, vh + vkh, vw + vkw] * W[vc, 0, vkh, vkw]
)";

TEST(ComputeLocationTest, ADepthwisePaddingIsComputedPerChannelUnderTheParallelLoop) {
  absl::StatusOr<ir::IRModule> mod = testing::Parse(kPaddedDepthwise);
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<Schedule> sch =
      DefaultSchedule(*mod, "dw", target::PolicyFor(target::Avx512Znver4()));
  ASSERT_TRUE(sch.ok()) << sch.status();
  const std::string scheduled = script::PrintScript(sch->mod());
  const size_t parallel = scheduled.find("T.parallel(");
  const size_t pad = scheduled.find("T.block(\"pad\")");
  ASSERT_NE(parallel, std::string::npos);
  ASSERT_NE(pad, std::string::npos);
  EXPECT_LT(parallel, pad);  // under the parallel loop, not at the root
  // Only the block's channel (a depthwise tile is one channel's rows: channels share no input),
  // 16 x 16 padded values.
  EXPECT_THAT(scheduled,
              HasSubstr("for c_0 in T.parallel(32):\n                for ax0 in range(16):\n"
                        "                    for ax1 in T.vectorized(16):"));
  testing::ExpectSameNumbers(*mod, *sch);
}

}  // namespace
}  // namespace kiln::tir
