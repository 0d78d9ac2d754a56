// The toolchain: a PrimFunc module becomes a library that loads and computes; what the linker
// refuses comes back as an error with its output.
#include "compiler/backend/toolchain.h"

#include "compiler/script/script_parser.h"
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

TEST(ToolchainTest, TheLinkersRefusalIsAnErrorWithItsOutput) {
  absl::StatusOr<std::string> so = LinkSharedLibrary("this is not an object file");
  ASSERT_FALSE(so.ok());
  EXPECT_EQ(so.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(so.status().message(), HasSubstr("ld.lld-16 exited with status 1"));
  EXPECT_THAT(so.status().message(), HasSubstr("kernels.o"));
}

TEST(ToolchainTest, AnUnknownTargetIsRefusedBeforeAnyWork) {
  absl::StatusOr<std::string> so = BuildKernelLibrary(ir::IRModuleBuilder().Build(), "cuda");
  ASSERT_FALSE(so.ok());
  EXPECT_THAT(so.status().message(), HasSubstr("unknown target 'cuda'"));
}

}  // namespace
}  // namespace kiln::backend
