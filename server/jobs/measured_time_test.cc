#include "server/jobs/measured_time.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::server {
namespace {

using ::testing::HasSubstr;

TEST(MeasuredTimeTest, ImpossibleTimesAreRefused) {
  v1::DeviceAttributes avx512;
  avx512.set_cores(2);
  avx512.add_cpu_features("avx2");
  avx512.add_cpu_features("avx512f");
  // 2 cores x 16 lanes x 2 units x 2 operations x 6 GHz.
  EXPECT_DOUBLE_EQ(PeakFlopsBound(avx512), 2 * 16 * 2 * 2 * 6e9);
  v1::DeviceAttributes board;
  board.add_cpu_features("asimd");  // cores unknown: one
  EXPECT_DOUBLE_EQ(PeakFlopsBound(board), 4 * 2 * 2 * 6e9);

  // A 1 GFLOP kernel takes at least 1e9 / 7.68e11 s = 1.3 ms on the AVX-512 pair.
  EXPECT_TRUE(CheckReportedSeconds(2e-3, 1e9, avx512).ok());
  absl::Status fast = CheckReportedSeconds(1e-4, 1e9, avx512);
  EXPECT_EQ(fast.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(fast.message(), HasSubstr("faster than the device's peak allows"));
  for (double bad : {-1.0, 0.0, std::nan(""), 1.0 / 0.0}) {
    EXPECT_FALSE(CheckReportedSeconds(bad, 0, avx512).ok()) << bad;
  }
  EXPECT_TRUE(CheckReportedSeconds(1e-9, 0, avx512).ok());  // unknown work: positive will do
}

}  // namespace
}  // namespace kiln::server
