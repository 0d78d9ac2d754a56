// Every module of the TVMScript corpus goes through the whole backend (default schedule,
// lowering, LLVM, linking, loading): each either builds and loads, or fails with a message;
// nothing crashes. Which ones build is pinned, so that a regression shows.
#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "compiler/backend/toolchain.h"
#include "compiler/script/script_parser.h"
#include "gtest/gtest.h"
#include "runtime/library.h"

namespace kiln::codegen {
namespace {

std::vector<std::string> CorpusFiles() {
  std::vector<std::string> files;
  const char* dir = "compiler/script/testdata";
  if (DIR* d = opendir(dir)) {
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name.size() > 3 && name.substr(name.size() - 3) == ".py") files.push_back(name);
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(CorpusTest, EveryModuleBuildsOrFailsCleanly) {
  std::set<std::string> built;
  for (const std::string& name : CorpusFiles()) {
    SCOPED_TRACE(name);
    std::ifstream in("compiler/script/testdata/" + name);
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<ir::IRModule> mod = script::ParseScript(text.str(), name);
    ASSERT_TRUE(mod.ok()) << mod.status();
    bool has_prim = false;
    for (const auto& [fn, entry] : (*mod)->functions)
      has_prim |= entry.second.as<ir::PrimFuncNode>() != nullptr;
    if (!has_prim) continue;
    absl::StatusOr<std::string> so = backend::BuildKernelLibrary(*mod, "llvm");
    if (!so.ok()) {
      EXPECT_FALSE(so.status().message().empty());
      std::printf("%s: %s\n", name.c_str(), std::string(so.status().message()).c_str());
      continue;
    }
    absl::StatusOr<std::shared_ptr<runtime::KernelLibrary>> lib =
        runtime::KernelLibrary::LoadFromMemory(*so, name);
    ASSERT_TRUE(lib.ok()) << lib.status();
    built.insert(name);
  }
  // The TIR modules the backend supports today. tir_control fails with a message (a string
  // argument to an extern call).
  for (const char* expected :
       {"tir_elementwise.py", "tir_matmul.py", "tir_symbolic.py", "tvm_mlp_legalized.py",
        "relax_mlp_legalized.py", "tir_loop_kinds.py", "tir_literals.py", "tir_nested_if.py",
        "tir_reduction_where.py", "tir_vector.py", "tir_exprs.py", "tir_buffers.py"}) {
    EXPECT_TRUE(built.count(expected) > 0) << expected << " no longer builds";
  }
}

}  // namespace
}  // namespace kiln::codegen
