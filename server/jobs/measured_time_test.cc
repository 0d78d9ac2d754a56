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

// Finding 6: NaN and negative profile times, and outputs whose size contradicts their shape,
// were stored as SUCCEEDED; finding 5: outputs were unbounded.
TEST(MeasuredTimeTest, TaskResultsAreCheckedAndBounded) {
  v1::TaskResult profile;
  profile.mutable_profile()->add_seconds_per_call(1e-3);
  profile.mutable_profile()->set_median_seconds(1e-3);
  EXPECT_TRUE(CheckTaskResult(profile, 1 << 20).ok());
  profile.mutable_profile()->add_seconds_per_call(std::nan(""));
  EXPECT_THAT(CheckTaskResult(profile, 1 << 20).message(), HasSubstr("not a positive number"));
  v1::TaskResult negative;
  negative.mutable_profile()->set_median_seconds(-1);
  EXPECT_FALSE(CheckTaskResult(negative, 1 << 20).ok());

  v1::TaskResult inference;
  v1::TensorValue* y = inference.mutable_inference()->add_outputs();
  y->set_name("y");
  y->set_dtype("float32");
  y->add_shape(4);
  y->add_shape(8);
  y->set_data(std::string(4 * 8 * 4, '\0'));
  EXPECT_TRUE(CheckTaskResult(inference, 1 << 20).ok());
  EXPECT_THAT(CheckTaskResult(inference, 100).message(), HasSubstr("--max-output-mb"));
  y->set_data(std::string(7, '\0'));
  EXPECT_THAT(CheckTaskResult(inference, 1 << 20).message(),
              HasSubstr("output 'y' holds 7 bytes, its shape and dtype 128"));
  y->set_data(std::string(128, '\0'));
  y->add_shape(-1);
  EXPECT_THAT(CheckTaskResult(inference, 1 << 20).message(), HasSubstr("impossible shape"));
}

// Finding 6: outputs whose shape contradicted the artifact's signature were stored as SUCCEEDED.
TEST(MeasuredTimeTest, OutputsMustMatchTheArtifactsSignature) {
  v1::TaskResult inference;
  v1::TensorValue* y = inference.mutable_inference()->add_outputs();
  y->set_name("output");
  y->set_dtype("float32");
  y->add_shape(4);
  y->add_shape(8);
  y->set_data(std::string(4 * 8 * 4, '\0'));
  v1::TensorValue want;  // float32[n, 8]: the batch symbolic
  want.set_dtype("float32");
  want.add_shape(-1);
  want.add_shape(8);
  EXPECT_TRUE(CheckTaskResult(inference, 1 << 20, {want}).ok());
  want.set_shape(1, 10);
  EXPECT_THAT(CheckTaskResult(inference, 1 << 20, {want}).message(),
              HasSubstr("output 'output' is float32[4, 8], the artifact's signature says "
                        "float32[-1, 10]"));
  want.set_shape(1, 8);
  want.set_dtype("int64");
  EXPECT_FALSE(CheckTaskResult(inference, 1 << 20, {want}).ok());
  EXPECT_THAT(CheckTaskResult(inference, 1 << 20, {want, want}).message(),
              HasSubstr("1 outputs, the artifact's signature says 2"));
}

}  // namespace
}  // namespace kiln::server
