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

}  // namespace

absl::StatusOr<LlvmTargetInfo> LookupLlvmTarget(absl::string_view triple_name,
                                                absl::string_view cpu) {
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
  }

  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
      target->createMCSubtargetInfo(info.triple, info.cpu, info.features));
  if (subtarget == nullptr || (info.cpu != "generic" && !subtarget->isCPUStringValid(info.cpu))) {
    return absl::InvalidArgumentError(
        absl::StrCat("target '", info.triple, "' has no CPU named '", info.cpu, "'"));
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

std::string HostTriple() { return llvm::sys::getProcessTriple(); }

std::string LlvmVersion() { return LLVM_VERSION_STRING; }

absl::StatusOr<LlvmTargetInfo> ParseTarget(absl::string_view target) {
  std::vector<std::string> parts = absl::StrSplit(target, ' ', absl::SkipEmpty());
  if (parts.empty() || parts[0] != "llvm") {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown target '", target, "': expected \"llvm [-mtriple=...] [-mcpu=...]\""));
  }
  std::string triple, cpu;
  for (size_t i = 1; i < parts.size(); ++i) {
    if (absl::StartsWith(parts[i], "-mtriple=")) {
      triple = parts[i].substr(9);
    } else if (absl::StartsWith(parts[i], "-mcpu=")) {
      cpu = parts[i].substr(6);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("target '", target, "': unknown option '", parts[i], "'"));
    }
  }
  if (triple.empty()) {
    triple = HostTriple();
    if (cpu.empty()) cpu = "native";
  }
  return LookupLlvmTarget(triple, cpu);
}

}  // namespace kiln::codegen
