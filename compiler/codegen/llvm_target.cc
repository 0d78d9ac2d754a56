#include "compiler/codegen/llvm_target.h"

#include <memory>
#include <mutex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/Host.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Triple.h"
#include "runtime/device_info.h"

namespace kiln::codegen {
namespace {

void InitializeLlvmTargetsOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
  });
}

std::string HostFeatures() {
  llvm::StringMap<bool> host_features;
  std::vector<std::string> enabled;
  if (llvm::sys::getHostCPUFeatures(host_features)) {
    for (const auto& entry : host_features) {
      enabled.push_back(absl::StrCat(entry.second ? "+" : "-", entry.first().str()));
    }
  }
  std::sort(enabled.begin(), enabled.end());
  return absl::StrJoin(enabled, ",");
}

// LLVM 16 keeps a target's feature table private, and ignores an unknown feature (with a
// warning); a known one is the only kind whose "+" and "-" give different feature bits.
bool IsFeatureOf(const llvm::Target& target, const std::string& triple, absl::string_view name) {
  std::unique_ptr<llvm::MCSubtargetInfo> on(
      target.createMCSubtargetInfo(triple, "generic", absl::StrCat("+", name)));
  std::unique_ptr<llvm::MCSubtargetInfo> off(
      target.createMCSubtargetInfo(triple, "generic", absl::StrCat("-", name)));
  return on != nullptr && off != nullptr && on->getFeatureBits() != off->getFeatureBits();
}

}  // namespace

absl::StatusOr<LlvmTargetInfo> LookupLlvmTarget(absl::string_view triple_name,
                                                absl::string_view cpu, absl::string_view features) {
  InitializeLlvmTargetsOnce();
  llvm::Triple triple(llvm::Triple::normalize(std::string(triple_name)));
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple.str(), error);
  if (target == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown target triple '", triple_name, "': ", error));
  }

  LlvmTargetInfo info;
  info.triple = triple.str();
  info.cpu = cpu.empty() ? "generic" : std::string(cpu);
  if (info.cpu == "native") {
    if (triple.getArch() != llvm::Triple(llvm::sys::getProcessTriple()).getArch()) {
      return absl::InvalidArgumentError(
          absl::StrCat("-mcpu=native is only valid for the host triple ", HostTriple(), ", not '",
                       triple_name, "'"));
    }
    info.cpu = llvm::sys::getHostCPUName().str();
    info.features = HostFeatures();
    info.host = true;
  }
  if (!features.empty()) {
    info.features =
        info.features.empty() ? std::string(features) : absl::StrCat(info.features, ",", features);
  }

  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
      target->createMCSubtargetInfo(info.triple, info.cpu, info.features));
  if (subtarget == nullptr || (info.cpu != "generic" && !subtarget->isCPUStringValid(info.cpu))) {
    return absl::InvalidArgumentError(
        absl::StrCat("target '", info.triple, "' has no CPU named '", info.cpu, "'"));
  }
  for (absl::string_view f : absl::StrSplit(features, ',', absl::SkipEmpty())) {
    if (f[0] != '+' && f[0] != '-') {
      return absl::InvalidArgumentError(
          absl::StrCat("-mattr feature '", f, "' must start with + or -"));
    }
    if (!IsFeatureOf(*target, info.triple, f.substr(1))) {
      return absl::InvalidArgumentError(
          absl::StrCat("target '", info.triple, "' has no feature named '", f.substr(1), "'"));
    }
  }
  const std::string arch = info.triple.substr(0, info.triple.find('-'));
  for (const runtime::CpuFeature& f : runtime::KnownCpuFeatures()) {
    if (arch == f.arch && subtarget->checkFeatures(absl::StrCat("+", f.llvm))) {
      info.device_features.push_back(f.name);
    }
  }

  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      info.triple, info.cpu, info.features, llvm::TargetOptions(), llvm::Reloc::PIC_));
  if (machine == nullptr) {
    return absl::InternalError(absl::StrCat("LLVM could not create a target machine for '",
                                            info.triple, "' with CPU '", info.cpu, "'"));
  }
  const llvm::DataLayout layout = machine->createDataLayout();
  info.data_layout = layout.getStringRepresentation();
  info.pointer_bits = static_cast<int>(layout.getPointerSizeInBits());
  return info;
}

target::CpuTarget DescribeTarget(const LlvmTargetInfo& info) {
  const std::string arch = info.triple.substr(0, info.triple.find('-'));
  target::CpuTarget t = target::DescribeCpu(arch, info.cpu, info.device_features);
  return info.host ? target::WithHostCaches(std::move(t)) : t;
}

std::string HostTriple() { return llvm::sys::getProcessTriple(); }

std::string LlvmVersion() { return LLVM_VERSION_STRING; }

absl::StatusOr<LlvmTargetInfo> ParseTarget(absl::string_view target) {
  std::vector<std::string> parts = absl::StrSplit(target, ' ', absl::SkipEmpty());
  if (parts.empty() || parts[0] != "llvm") {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown target '", target, "': expected \"llvm [-mtriple=...] [-mcpu=...]\""));
  }
  std::string triple, cpu, features;
  for (size_t i = 1; i < parts.size(); ++i) {
    if (absl::StartsWith(parts[i], "-mtriple=")) {
      triple = parts[i].substr(9);
    } else if (absl::StartsWith(parts[i], "-mcpu=")) {
      cpu = parts[i].substr(6);
    } else if (absl::StartsWith(parts[i], "-mattr=")) {
      features = parts[i].substr(7);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("target '", target, "': unknown option '", parts[i], "'"));
    }
  }
  if (triple.empty()) {
    triple = HostTriple();
    if (cpu.empty()) cpu = "native";
  }
  return LookupLlvmTarget(triple, cpu, features);
}

}  // namespace kiln::codegen
