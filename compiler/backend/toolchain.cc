#include "compiler/backend/toolchain.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "compiler/codegen/codegen_llvm.h"
#include "compiler/target/cpu_policy.h"
#include "compiler/tir/default_schedule.h"
#include "compiler/tir/interpret.h"
#include "compiler/tir/transform/transform.h"
#include "runtime/support/status_macros.h"
#include "runtime/support/subprocess.h"

namespace kiln::backend {
namespace {

constexpr char kLinker[] = "ld.lld-16";
constexpr int64_t kLinkTimeoutMs = 5 * 60 * 1000;

// The linker's path: the first executable ld.lld-16 on PATH (the subprocess helper takes paths).
std::string FindLinker() {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path ? path : "/usr/bin:/bin", ':')) {
    std::string candidate = absl::StrCat(dir.empty() ? "." : dir, "/", kLinker);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// A private temporary directory, removed with everything in it when this goes out of scope.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-link-XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

absl::StatusOr<std::string> LinkSharedLibrary(const std::string& object) {
  return LinkSharedLibrary(std::vector<std::string>{object});
}

absl::StatusOr<std::string> LinkSharedLibrary(const std::vector<std::string>& objects) {
  static const std::string linker = FindLinker();
  if (linker.empty()) {
    return absl::InternalError(absl::StrCat("no ", kLinker, " on PATH (Debian package lld-16)"));
  }
  TempDir dir;
  if (dir.path().empty()) {
    return absl::InternalError("cannot create a temporary directory for linking");
  }
  const std::string so_path = dir.path() + "/kernels.so";
  std::vector<std::string> argv = {linker, "-shared", "--hash-style=gnu", "-o", so_path};
  for (size_t i = 0; i < objects.size(); ++i) {
    const std::string obj_path = absl::StrCat(dir.path(), "/kernels", i, ".o");
    std::ofstream out(obj_path, std::ios::binary);
    out.write(objects[i].data(), static_cast<std::streamsize>(objects[i].size()));
    if (!out) return absl::InternalError("cannot write the object file for linking");
    argv.push_back(obj_path);
  }
  runtime::ChildOptions options;
  options.timeout_ms = kLinkTimeoutMs;
  absl::StatusOr<runtime::ChildResult> ran = runtime::RunChild(argv, "", options);
  if (!ran.ok()) return absl::InternalError(absl::StrCat(kLinker, ": ", ran.status().message()));
  if (!ran->exited_ok()) {
    return absl::InternalError(absl::StrCat(kLinker, " ", ran->Describe(kLinkTimeoutMs), ": ",
                                            ran->output, ran->error_tail));
  }
  std::ifstream in(so_path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  if (!in) return absl::InternalError(absl::StrCat(kLinker, " wrote no library"));
  return bytes.str();
}

int CodegenThreads() {
  constexpr int kMaxCodegenThreads = 4;
  return std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, kMaxCodegenThreads);
}

absl::StatusOr<std::string> BuildKernelLibrary(const ir::IRModule& mod, absl::string_view target,
                                               bool quick) {
  KILN_ASSIGN_OR_RETURN(codegen::LlvmTargetInfo info, codegen::ParseTarget(target));
  const target::CpuPolicy policy = target::PolicyFor(codegen::DescribeTarget(info));
  KILN_ASSIGN_OR_RETURN(ir::IRModule lowered,
                        tir::LowerTir(tir::ApplyDefaultSchedule(mod, policy)));
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> objects,
                        codegen::CompileToObjects(lowered, info, CodegenThreads(), quick));
  return LinkSharedLibrary(objects);
}

absl::StatusOr<std::map<std::string, runtime::Function>> LoadHostKernels(
    const ir::IRModule& kernels) {
  // Lowered as they are, unscheduled: serial scalar loops, what the interpreter runs.
  KILN_ASSIGN_OR_RETURN(ir::IRModule lowered, tir::LowerTir(kernels));
  std::map<std::string, runtime::Function> runnable;
  ir::IRModuleBuilder to_compile;
  for (const auto& [name, entry] : lowered->functions) {
    auto lowered_func = entry.second.as_ref<ir::PrimFuncNode>();
    if (!lowered_func) continue;
    absl::StatusOr<tir::InterpretedKernel> interpreted =
        tir::InterpretedKernel::Compile(lowered_func, kMaxInterpretedIterations);
    if (!interpreted.ok()) {
      KILN_RETURN_IF_ERROR(to_compile.Add(entry.first, kernels->Lookup(name)));
      continue;
    }
    // The name is copied in: C++17 cannot capture a structured binding.
    runnable[name] = [kernel = *std::move(interpreted), kernel_name = std::string(name)](
                         absl::Span<const runtime::Value> args) -> absl::StatusOr<runtime::Value> {
      std::vector<tir::InterpretedBuffer> buffers;
      for (const runtime::Value& a : args) {
        const runtime::Tensor* t = a.as_tensor();
        if (t == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat(kernel_name, ": not a tensor"));
        }
        buffers.push_back({t->data(), static_cast<int64_t>(t->NumBytes())});
      }
      absl::Status ran = kernel.Run(buffers);
      if (!ran.ok()) {
        return absl::Status(ran.code(), absl::StrCat(kernel_name, ": ", ran.message()));
      }
      return runtime::Value();
    };
  }
  ir::IRModule rest = to_compile.Build();
  if (rest->functions.empty()) return runnable;
  // Each kernel runs once: LLVM spends little time optimizing it.
  KILN_ASSIGN_OR_RETURN(std::string so, BuildKernelLibrary(rest, "llvm", /*quick=*/true));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<runtime::KernelLibrary> library,
                        runtime::KernelLibrary::LoadFromMemory(so, "fold"));
  for (const auto& [name, entry] : rest->functions) {
    KILN_ASSIGN_OR_RETURN(runnable[name], library->GetFunction(name, nullptr));
  }
  return runnable;
}

}  // namespace kiln::backend
