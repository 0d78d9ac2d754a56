#include "runtime/device_info.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::runtime {
namespace {

using ::testing::HasSubstr;

TEST(DeviceInfo, DescribesThisMachine) {
  v1::DeviceAttributes here = LocalDeviceAttributes();
  EXPECT_THAT(here.target_triple(), HasSubstr("-unknown-linux-gnu"));
  EXPECT_GT(here.cores(), 0);
  EXPECT_GT(here.memory_bytes(), 0);
  EXPECT_FALSE(here.hostname().empty());
  EXPECT_FALSE(here.emulated());  // the tests run natively; the aarch64 agent test covers qemu
  const std::string arch = here.target_triple().substr(0, here.target_triple().find('-'));
  for (const std::string& f : here.cpu_features()) {
    bool known = false;
    for (const CpuFeature& k : KnownCpuFeatures()) known |= (k.arch == arch && k.name == f);
    EXPECT_TRUE(known) << f;
  }
  EXPECT_TRUE(CheckCodeRunsOn(here.target_triple(),
                              {here.cpu_features().begin(), here.cpu_features().end()}, here)
                  .ok());
}

TEST(DeviceInfo, RefusesAnotherArchitectureOrMissingFeatures) {
  v1::DeviceAttributes board;
  board.set_target_triple("aarch64-unknown-linux-gnu");
  board.add_cpu_features("asimd");
  EXPECT_TRUE(CheckCodeRunsOn("aarch64-unknown-linux-gnu", {"asimd"}, board).ok());
  EXPECT_TRUE(CheckCodeRunsOn("aarch64-unknown-linux-gnu", {}, board).ok());
  absl::Status arch = CheckCodeRunsOn("x86_64-unknown-linux-gnu", {"avx2"}, board);
  EXPECT_EQ(arch.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(arch.message(), HasSubstr("compiled for x86_64-unknown-linux-gnu; this device is "
                                        "aarch64-unknown-linux-gnu"));
  absl::Status features = CheckCodeRunsOn("aarch64-unknown-linux-gnu", {"asimd", "sve"}, board);
  EXPECT_EQ(features.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(features.message(), HasSubstr("CPU features this device lacks: sve (the device has "
                                            "asimd)"));
}

}  // namespace
}  // namespace kiln::runtime
