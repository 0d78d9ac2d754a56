#include "compiler/codegen/llvm_target.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::codegen {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(LlvmTargetTest, FindsX86_64WithNamedCpu) {
  absl::StatusOr<LlvmTargetInfo> info = LookupLlvmTarget("x86_64-linux-gnu", "znver3");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->cpu, "znver3");
  EXPECT_EQ(info->pointer_bits, 64);
  EXPECT_THAT(info->triple, StartsWith("x86_64-"));
  // Little endian, ELF mangling, 64-bit pointers: the x86-64 SysV layout.
  EXPECT_THAT(info->data_layout, StartsWith("e-m:e-"));
  EXPECT_THAT(info->data_layout, HasSubstr("n8:16:32:64"));
}

TEST(LlvmTargetTest, FindsAarch64ForEdgeBoards) {
  absl::StatusOr<LlvmTargetInfo> info = LookupLlvmTarget("aarch64-linux-gnu", "cortex-a72");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_THAT(info->triple, StartsWith("aarch64-"));
  EXPECT_EQ(info->pointer_bits, 64);
  EXPECT_THAT(info->data_layout, StartsWith("e-m:e-"));
  EXPECT_THAT(info->data_layout, HasSubstr("i128:128"));
}

TEST(LlvmTargetTest, NativeResolvesHostCpuAndFeatures) {
  absl::StatusOr<LlvmTargetInfo> info = LookupLlvmTarget(HostTriple(), "native");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_NE(info->cpu, "native");
  EXPECT_FALSE(info->features.empty());
}

TEST(LlvmTargetTest, RejectsUnknownTriple) {
  absl::StatusOr<LlvmTargetInfo> info = LookupLlvmTarget("teapot-unknown-linux", "");
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(info.status().message(), HasSubstr("teapot-unknown-linux"));
}

TEST(LlvmTargetTest, RejectsUnknownCpu) {
  absl::StatusOr<LlvmTargetInfo> info = LookupLlvmTarget("aarch64-linux-gnu", "pentium-pro-max");
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(info.status().message(), HasSubstr("pentium-pro-max"));
}

TEST(LlvmTargetTest, NativeIsRejectedForAForeignTriple) {
  const char* foreign =
      HostTriple().rfind("aarch64", 0) == 0 ? "x86_64-linux-gnu" : "aarch64-linux-gnu";
  EXPECT_FALSE(LookupLlvmTarget(foreign, "native").ok());
}

TEST(LlvmTargetTest, ListsTheDeviceFeaturesTheCodeMayUse) {
  // A generic aarch64 has NEON (Linux: asimd); -mattr adds the dot product (asimddp).
  absl::StatusOr<LlvmTargetInfo> generic = ParseTarget("llvm -mtriple=aarch64-linux-gnu");
  ASSERT_TRUE(generic.ok()) << generic.status();
  EXPECT_THAT(generic->device_features, ::testing::ElementsAre("asimd"));
  absl::StatusOr<LlvmTargetInfo> dot =
      ParseTarget("llvm -mtriple=aarch64-linux-gnu -mattr=+dotprod,+i8mm");
  ASSERT_TRUE(dot.ok()) << dot.status();
  EXPECT_THAT(dot->device_features, ::testing::ElementsAre("asimd", "asimddp", "i8mm"));
  // A CPU brings its own: znver3 has AVX2 and FMA.
  absl::StatusOr<LlvmTargetInfo> zen = ParseTarget("llvm -mtriple=x86_64-linux-gnu -mcpu=znver3");
  ASSERT_TRUE(zen.ok()) << zen.status();
  EXPECT_THAT(zen->device_features, ::testing::IsSupersetOf({"avx2", "fma"}));
  EXPECT_THAT(zen->device_features, ::testing::Not(::testing::Contains("avx512f")));
}

TEST(LlvmTargetTest, RejectsUnknownFeatures) {
  absl::Status bad = ParseTarget("llvm -mtriple=aarch64-linux-gnu -mattr=+avx2").status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("has no feature named 'avx2'"));
  EXPECT_THAT(ParseTarget("llvm -mattr=avx2").status().message(), HasSubstr("must start with +"));
}

TEST(LlvmTargetTest, ReportsLinkedLlvmVersion) { EXPECT_THAT(LlvmVersion(), StartsWith("16.")); }

}  // namespace
}  // namespace kiln::codegen
