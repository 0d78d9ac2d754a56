#include "server/devices.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "runtime/device_info.h"

namespace kiln::server {
namespace {

std::string Arch(const std::string& triple) { return triple.substr(0, triple.find('-')); }

// A feature named by its Linux name ("asimd") or its LLVM name ("neon") on the device's arch.
bool HasFeature(const v1::DeviceAttributes& a, const std::string& wanted) {
  auto has = [&](const std::string& name) {
    return std::find(a.cpu_features().begin(), a.cpu_features().end(), name) !=
           a.cpu_features().end();
  };
  if (has(wanted)) return true;
  for (const runtime::CpuFeature& f : runtime::KnownCpuFeatures()) {
    if (Arch(a.target_triple()) == f.arch && wanted == f.llvm && has(f.name)) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<DeviceSelector> ParseDeviceSelector(absl::string_view text) {
  DeviceSelector s;
  s.text = std::string(text);
  for (absl::string_view term : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    term = absl::StripAsciiWhitespace(term);
    size_t op = term.find_first_of("=~");
    if (op == absl::string_view::npos || op == 0) {
      return absl::InvalidArgumentError(absl::StrCat("device selector term '", term,
                                                     "': expected NAME=VALUE or features~FEATURE"));
    }
    std::string name(absl::StripAsciiWhitespace(term.substr(0, op)));
    std::string value(absl::StripAsciiWhitespace(term.substr(op + 1)));
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat("device selector term '", term, "': ", why));
    };
    if (value.empty()) return bad("no value");
    if (term[op] == '~') {
      if (name != "features") return bad("'~' applies to features only");
      s.features.push_back(value);
    } else if (name == "key") {
      s.key = value;
    } else if (name == "arch") {
      s.arch = value;
    } else if (name == "triple") {
      s.triple = value;
    } else if (name == "min_cores") {
      if (!absl::SimpleAtoi(value, &s.min_cores) || s.min_cores < 0) return bad("not a count");
    } else if (name == "min_memory_gb") {
      if (!absl::SimpleAtod(value, &s.min_memory_gb) || s.min_memory_gb < 0) {
        return bad("not a size in GiB");
      }
    } else if (name == "emulated") {
      if (value != "true" && value != "false") return bad("expected true or false");
      s.emulated = value == "true";
    } else {
      return bad(
          "unknown attribute (known: key, arch, triple, features~, min_cores, min_memory_gb, "
          "emulated)");
    }
  }
  if (s.text.find_first_not_of(" ,") == std::string::npos) {
    return absl::InvalidArgumentError("device selector: empty");
  }
  return s;
}

bool Matches(const DeviceSelector& s, const v1::Device& device) {
  const v1::DeviceAttributes& a = device.attributes();
  if (!s.key.empty() && device.key() != s.key) return false;
  if (!s.arch.empty() && Arch(a.target_triple()) != s.arch) return false;
  if (!s.triple.empty() && a.target_triple() != s.triple) return false;
  for (const std::string& f : s.features) {
    if (!HasFeature(a, f)) return false;
  }
  if (a.cores() < s.min_cores) return false;
  if (static_cast<double>(a.memory_bytes()) < s.min_memory_gb * (1 << 30)) return false;
  if (s.emulated.has_value() && a.emulated() != *s.emulated) return false;
  return true;
}

absl::StatusOr<v1::Device> SelectDevice(const DeviceSelector& selector,
                                        const std::vector<v1::Device>& devices) {
  const v1::Device* best = nullptr;
  for (const v1::Device& d : devices) {
    if (!Matches(selector, d)) continue;
    auto rank = [](const v1::Device& x) {
      return std::make_pair(x.agents_connected() > 0 ? 0 : 1, x.tasks_queued());
    };
    if (best == nullptr || rank(d) < rank(*best)) best = &d;
  }
  if (best != nullptr) return *best;
  std::vector<std::string> known;
  for (const v1::Device& d : devices) known.push_back(DescribeDevice(d));
  return absl::NotFoundError(
      absl::StrCat("no device matches '", selector.text,
                   "' (devices: ", known.empty() ? "none" : absl::StrJoin(known, "; "), ")"));
}

std::string TargetForDevice(const v1::DeviceAttributes& device,
                            const v1::DeviceAttributes& server_host) {
  const std::string arch = Arch(device.target_triple());
  if (!device.emulated() && arch == Arch(server_host.target_triple()) &&
      !device.cpu_model().empty() && device.cpu_model() == server_host.cpu_model()) {
    return "llvm";
  }
  std::vector<std::string> llvm_features;
  for (const runtime::CpuFeature& f : runtime::KnownCpuFeatures()) {
    if (f.arch == arch && HasFeature(device, f.name))
      llvm_features.push_back(absl::StrCat("+", f.llvm));
  }
  std::string target = absl::StrCat("llvm -mtriple=", arch, "-linux-gnu");
  if (!llvm_features.empty())
    absl::StrAppend(&target, " -mattr=", absl::StrJoin(llvm_features, ","));
  return target;
}

std::string DescribeDevice(const v1::Device& device) {
  const v1::DeviceAttributes& a = device.attributes();
  std::string out = absl::StrCat(device.key(), ": ", a.target_triple(), ", ", a.cores(), " cores");
  if (a.memory_bytes() > 0) {
    absl::StrAppend(&out, ", ", absl::SixDigits(static_cast<double>(a.memory_bytes()) / (1 << 30)),
                    " GiB");
  }
  if (a.cpu_features_size() > 0) absl::StrAppend(&out, ", ", absl::StrJoin(a.cpu_features(), " "));
  if (a.emulated()) absl::StrAppend(&out, " (emulated)");
  return out;
}

}  // namespace kiln::server
