// The toolchain: a PrimFunc module becomes a library that loads and computes; what the linker
// refuses comes back as an error with its output.
#include "compiler/backend/toolchain.h"

#include "absl/strings/str_cat.h"
#include "compiler/codegen/codegen_llvm.h"
#include "compiler/script/script_parser.h"
#include "compiler/tir/default_schedule.h"
#include "compiler/tir/transform/transform.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/library.h"
#include "runtime/tensor.h"

namespace kiln::backend {
namespace {

using ::testing::HasSubstr;

TEST(ToolchainTest, AKernelLibraryLoadsAndExportsItsKernels) {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(R"(
@I.ir_module
class Module:
    @T.prim_func
    def twice(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            B[i] = A[i] * T.float32(2)
)",
                                                         "twice.py");
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<std::string> so = BuildKernelLibrary(*mod, "llvm");
  ASSERT_TRUE(so.ok()) << so.status();
  EXPECT_EQ(so->substr(0, 4),
            "\x7f"
            "ELF");
  absl::StatusOr<std::shared_ptr<runtime::KernelLibrary>> lib =
      runtime::KernelLibrary::LoadFromMemory(*so, "twice");
  ASSERT_TRUE(lib.ok()) << lib.status();
  EXPECT_TRUE((*lib)->GetFunction("twice", nullptr).ok());
}

// Two libraries exporting the same kernel name, loaded at once, each run their own kernel: the
// loader must not hand back the first for the second (dlopen knows libraries by path).
TEST(ToolchainTest, TwoLoadedLibrariesWithOneKernelNameStayApart) {
  std::vector<std::shared_ptr<runtime::KernelLibrary>> libs;
  for (const char* factor : {"2", "3"}) {
    absl::StatusOr<ir::IRModule> mod = script::ParseScript(
        std::string(
            "@I.ir_module\nclass Module:\n    @T.prim_func\n"
            "    def scale(A: T.Buffer((4,), \"float32\"), B: T.Buffer((4,), \"float32\")):\n"
            "        for i in range(4):\n"
            "            B[i] = A[i] * T.float32(") +
            factor + ")\n",
        "scale.py");
    ASSERT_TRUE(mod.ok()) << mod.status();
    absl::StatusOr<std::string> so = BuildKernelLibrary(*mod, "llvm");
    ASSERT_TRUE(so.ok()) << so.status();
    absl::StatusOr<std::shared_ptr<runtime::KernelLibrary>> lib =
        runtime::KernelLibrary::LoadFromMemory(*so, factor);
    ASSERT_TRUE(lib.ok()) << lib.status();
    libs.push_back(*lib);
  }
  for (size_t k = 0; k < libs.size(); ++k) {
    runtime::Tensor a = *runtime::Tensor::Empty({4}, *runtime::ParseDataType("float32"));
    runtime::Tensor b = *runtime::Tensor::Empty({4}, *runtime::ParseDataType("float32"));
    for (int i = 0; i < 4; ++i) static_cast<float*>(a.data())[i] = 1.0f;
    absl::StatusOr<runtime::Function> fn = libs[k]->GetFunction("scale", nullptr);
    ASSERT_TRUE(fn.ok()) << fn.status();
    std::vector<runtime::Value> args = {a, b};
    ASSERT_TRUE((*fn)(args).ok());
    EXPECT_EQ(static_cast<const float*>(b.data())[0], k == 0 ? 2.0f : 3.0f);
  }
}

// Code generation split over threads: five kernels in three objects, linked into one library
// that exports each (and its ABI version once: a second definition would not link).
TEST(ToolchainTest, KernelsCompiledInPartsLinkIntoOneLibrary) {
  std::string text = "@I.ir_module\nclass Module:\n";
  for (int k = 1; k <= 5; ++k) {
    text +=
        absl::StrCat("    @T.prim_func\n    def scale", k,
                     "(A: T.Buffer((4,), \"float32\"), B: T.Buffer((4,), \"float32\")):\n",
                     "        for i in range(4):\n            B[i] = A[i] * T.float32(", k, ")\n");
  }
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(text, "scales.py");
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<ir::IRModule> lowered =
      tir::LowerTir(tir::ApplyDefaultSchedule(*mod, target::PolicyFor(target::Avx512Znver4())));
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  absl::StatusOr<codegen::LlvmTargetInfo> target = codegen::ParseTarget("llvm");
  ASSERT_TRUE(target.ok());
  absl::StatusOr<std::vector<std::string>> objects =
      codegen::CompileToObjects(*lowered, *target, 3);
  ASSERT_TRUE(objects.ok()) << objects.status();
  EXPECT_EQ(objects->size(), 3u);
  absl::StatusOr<std::string> so = LinkSharedLibrary(*objects);
  ASSERT_TRUE(so.ok()) << so.status();
  absl::StatusOr<std::shared_ptr<runtime::KernelLibrary>> lib =
      runtime::KernelLibrary::LoadFromMemory(*so, "scales");
  ASSERT_TRUE(lib.ok()) << lib.status();
  for (int k = 1; k <= 5; ++k) {
    runtime::Tensor a = *runtime::Tensor::Empty({4}, *runtime::ParseDataType("float32"));
    runtime::Tensor b = *runtime::Tensor::Empty({4}, *runtime::ParseDataType("float32"));
    for (int i = 0; i < 4; ++i) static_cast<float*>(a.data())[i] = 1.5f;
    absl::StatusOr<runtime::Function> fn = (*lib)->GetFunction(absl::StrCat("scale", k), nullptr);
    ASSERT_TRUE(fn.ok()) << fn.status();
    std::vector<runtime::Value> args = {a, b};
    ASSERT_TRUE((*fn)(args).ok());
    EXPECT_EQ(static_cast<const float*>(b.data())[3], 1.5f * k);
  }
}

TEST(ToolchainTest, TheLinkersRefusalIsAnErrorWithItsOutput) {
  absl::StatusOr<std::string> so = LinkSharedLibrary("this is not an object file");
  ASSERT_FALSE(so.ok());
  EXPECT_EQ(so.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(so.status().message(), HasSubstr("ld.lld-16 exited with status 1"));
  EXPECT_THAT(so.status().message(), HasSubstr("kernels0.o"));
}

TEST(ToolchainTest, AnUnknownTargetIsRefusedBeforeAnyWork) {
  absl::StatusOr<std::string> so = BuildKernelLibrary(ir::IRModuleBuilder().Build(), "cuda");
  ASSERT_FALSE(so.ok());
  EXPECT_THAT(so.status().message(), HasSubstr("unknown target 'cuda'"));
}

}  // namespace
}  // namespace kiln::backend
