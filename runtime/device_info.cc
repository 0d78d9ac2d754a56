#include "runtime/device_info.h"

#include <sys/utsname.h>
#include <unistd.h>
#if defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include <algorithm>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kiln::runtime {
namespace {

constexpr char kAgentVersion[] = "0.2.0";

constexpr CpuFeature kFeatures[] = {
    {"x86_64", "sse4_1", "sse4.1"},
    {"x86_64", "sse4_2", "sse4.2"},
    {"x86_64", "avx", "avx"},
    {"x86_64", "avx2", "avx2"},
    {"x86_64", "fma", "fma"},
    {"x86_64", "f16c", "f16c"},
    {"x86_64", "avx512f", "avx512f"},
    {"x86_64", "avx512bw", "avx512bw"},
    {"x86_64", "avx512vl", "avx512vl"},
    {"x86_64", "avx512_vnni", "avx512vnni"},
    {"x86_64", "avx512_bf16", "avx512bf16"},
    {"x86_64", "amx_tile", "amx-tile"},
    {"aarch64", "asimd", "neon"},
    {"aarch64", "asimdhp", "fullfp16"},
    {"aarch64", "asimddp", "dotprod"},
    {"aarch64", "i8mm", "i8mm"},
    {"aarch64", "bf16", "bf16"},
    {"aarch64", "sve", "sve"},
    {"aarch64", "sve2", "sve2"},
};

std::string MachineArchitecture() {
  struct utsname u;
  if (uname(&u) != 0) return "unknown";
  return u.machine;
}

bool Known(const std::string& arch, const std::string& name) {
  for (const CpuFeature& f : kFeatures) {
    if (arch == f.arch && name == f.name) return true;
  }
  return false;
}

#if defined(__aarch64__)
// The kernel's view of this CPU (or qemu's, which emulates the auxiliary vector faithfully).
std::vector<std::string> HwcapFeatures() {
  const unsigned long hwcap = getauxval(AT_HWCAP);
  const unsigned long hwcap2 = getauxval(AT_HWCAP2);
  std::vector<std::string> out;
  if (hwcap & HWCAP_ASIMD) out.push_back("asimd");
  if (hwcap & HWCAP_ASIMDHP) out.push_back("asimdhp");
  if (hwcap & HWCAP_ASIMDDP) out.push_back("asimddp");
  if (hwcap2 & HWCAP2_I8MM) out.push_back("i8mm");
  if (hwcap2 & HWCAP2_BF16) out.push_back("bf16");
  if (hwcap & HWCAP_SVE) out.push_back("sve");
  if (hwcap2 & HWCAP2_SVE2) out.push_back("sve2");
  return out;
}
#endif

}  // namespace

absl::Span<const CpuFeature> KnownCpuFeatures() { return kFeatures; }

v1::DeviceAttributes LocalDeviceAttributes() {
  v1::DeviceAttributes a;
  const std::string arch = MachineArchitecture();
  a.set_target_triple(absl::StrCat(arch, "-unknown-linux-gnu"));
  // /proc/cpuinfo names the model and (x86-64) the flags. qemu-user passes the host's file
  // through, so an x86-64 layout ("vendor_id", "flags") read by an aarch64 build means emulation.
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model;
  std::vector<std::string> flags;
  bool x86_layout = false;
  while (std::getline(cpuinfo, line)) {
    std::pair<std::string, std::string> kv = absl::StrSplit(line, absl::MaxSplits(':', 1));
    std::string key(absl::StripAsciiWhitespace(kv.first));
    std::string value(absl::StripAsciiWhitespace(kv.second));
    if (key == "vendor_id") x86_layout = true;
    if ((key == "model name" || key == "Model") && model.empty()) model = value;
    if ((key == "flags" || key == "Features") && flags.empty()) {
      flags = absl::StrSplit(value, ' ', absl::SkipEmpty());
    }
  }
#if defined(__aarch64__)
  a.set_emulated(x86_layout);
  flags = HwcapFeatures();
  if (a.emulated()) model = absl::StrCat("emulated aarch64 (qemu-user on ", model, ")");
#else
  (void)x86_layout;
#endif
  a.set_cpu_model(model);
  for (const std::string& f : flags) {
    if (Known(arch, f)) a.add_cpu_features(f);
  }
  a.set_cores(static_cast<int32_t>(std::thread::hardware_concurrency()));
  a.set_memory_bytes(static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE));
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  a.set_hostname(host);
  a.set_agent_version(kAgentVersion);
  return a;
}

absl::Status CheckCodeRunsOn(const std::string& triple, const std::vector<std::string>& features,
                             const v1::DeviceAttributes& attributes) {
  const std::string arch = triple.substr(0, triple.find('-'));
  const std::string& device = attributes.target_triple();
  if (arch != device.substr(0, device.find('-'))) {
    return absl::FailedPreconditionError(
        absl::StrCat("the artifact was compiled for ", triple, "; this device is ", device));
  }
  std::vector<std::string> missing;
  for (const std::string& f : features) {
    if (std::find(attributes.cpu_features().begin(), attributes.cpu_features().end(), f) ==
        attributes.cpu_features().end()) {
      missing.push_back(f);
    }
  }
  if (!missing.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the artifact's code uses CPU features this device lacks: ", absl::StrJoin(missing, ", "),
        " (the device has ", absl::StrJoin(attributes.cpu_features(), ", "),
        "); compile it for this device's target"));
  }
  return absl::OkStatus();
}

}  // namespace kiln::runtime
