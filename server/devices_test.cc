#include "server/devices.h"

#include "compiler/codegen/llvm_target.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::server {
namespace {

using ::testing::HasSubstr;

v1::Device MakeDevice(const std::string& key, const std::string& triple,
                      std::vector<std::string> features, int cores, bool emulated, int agents = 1,
                      int queued = 0) {
  v1::Device d;
  d.set_key(key);
  d.set_agents_connected(agents);
  d.set_tasks_queued(queued);
  v1::DeviceAttributes* a = d.mutable_attributes();
  a->set_target_triple(triple);
  for (const std::string& f : features) a->add_cpu_features(f);
  a->set_cores(cores);
  a->set_memory_bytes(int64_t{8} << 30);
  a->set_cpu_model(emulated ? "emulated aarch64" : "AMD EPYC");
  a->set_emulated(emulated);
  return d;
}

std::vector<v1::Device> Fleet() {
  return {MakeDevice("cpu", "x86_64-unknown-linux-gnu", {"avx2", "fma"}, 2, false),
          MakeDevice("board", "aarch64-unknown-linux-gnu", {"asimd", "asimddp"}, 4, true),
          MakeDevice("old-board", "aarch64-unknown-linux-gnu", {"asimd"}, 4, false, 0)};
}

std::string Pick(const std::string& text) {
  absl::StatusOr<DeviceSelector> s = ParseDeviceSelector(text);
  EXPECT_TRUE(s.ok()) << s.status();
  if (!s.ok()) return "";
  absl::StatusOr<v1::Device> d = SelectDevice(*s, Fleet());
  return d.ok() ? d->key() : std::string(d.status().message());
}

TEST(DeviceSelector, PicksByAttributes) {
  EXPECT_EQ(Pick("arch=x86_64"), "cpu");
  EXPECT_EQ(Pick("arch=aarch64"), "board");  // connected beats not connected
  EXPECT_EQ(Pick("arch=aarch64, emulated=false"), "old-board");
  EXPECT_EQ(Pick("features~neon,min_cores=4"), "board");  // LLVM's name for asimd
  EXPECT_EQ(Pick("features~asimd,features~dotprod"), "board");
  EXPECT_EQ(Pick("features~avx2,min_memory_gb=4"), "cpu");
  EXPECT_EQ(Pick("triple=aarch64-unknown-linux-gnu,key=old-board"), "old-board");
  EXPECT_THAT(Pick("arch=aarch64,min_cores=64"),
              HasSubstr("no device matches 'arch=aarch64,min_cores=64' (devices: cpu: "
                        "x86_64-unknown-linux-gnu, 2 cores, 8 GiB, avx2 fma; board:"));
  EXPECT_THAT(Pick("arch=riscv64"), HasSubstr("(emulated)"));
}

TEST(DeviceSelector, PrefersTheShortestQueue) {
  std::vector<v1::Device> two = {MakeDevice("a", "x86_64-unknown-linux-gnu", {}, 2, false, 1, 5),
                                 MakeDevice("b", "x86_64-unknown-linux-gnu", {}, 2, false, 1, 1)};
  absl::StatusOr<v1::Device> d = SelectDevice(*ParseDeviceSelector("arch=x86_64"), two);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->key(), "b");
}

TEST(DeviceSelector, RefusesWhatItCannotRead) {
  auto error = [](const std::string& text) {
    return std::string(ParseDeviceSelector(text).status().message());
  };
  EXPECT_THAT(error("arch"), HasSubstr("term 'arch': expected NAME=VALUE"));
  EXPECT_THAT(error("colour=red"), HasSubstr("unknown attribute"));
  EXPECT_THAT(error("min_cores=many"), HasSubstr("'min_cores=many': not a count"));
  EXPECT_THAT(error("arch~arm"), HasSubstr("'~' applies to features only"));
  EXPECT_THAT(error("emulated=maybe"), HasSubstr("expected true or false"));
  EXPECT_THAT(error("arch="), HasSubstr("no value"));
  EXPECT_THAT(error(" , "), HasSubstr("empty"));
}

TEST(TargetForDevice, NativeForThisMachineElseTripleAndFeatures) {
  v1::DeviceAttributes host = Fleet()[0].attributes();
  EXPECT_EQ(TargetForDevice(Fleet()[0].attributes(), host), "llvm");
  std::string board = TargetForDevice(Fleet()[1].attributes(), host);
  EXPECT_EQ(board, "llvm -mtriple=aarch64-linux-gnu -mattr=+neon,+dotprod");
  // The compiler reads it back, and the code it makes needs exactly what the board has.
  absl::StatusOr<codegen::LlvmTargetInfo> info = codegen::ParseTarget(board);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_THAT(info->device_features, ::testing::ElementsAre("asimd", "asimddp"));
  // Another x86-64 CPU model: generic x86-64 with its features, never this server's CPU.
  v1::DeviceAttributes other = host;
  other.set_cpu_model("Intel Xeon");
  EXPECT_EQ(TargetForDevice(other, host), "llvm -mtriple=x86_64-linux-gnu -mattr=+avx2,+fma");
}

}  // namespace
}  // namespace kiln::server
