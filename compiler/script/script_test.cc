#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "compiler/ir/printer.h"
#include "compiler/ir/structural.h"
#include "compiler/ir/testing/examples.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/well_formed.h"
#include "compiler/script/printer.h"
#include "compiler/script/script_parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::script {
namespace {

using ::testing::HasSubstr;
using namespace ir;  // NOLINT: test brevity

IRModule WithPrimFunc(const std::string& name, PrimFunc f) {
  IRModuleBuilder b;
  EXPECT_TRUE(b.Add(relax::MakeGlobalVar(name), f).ok());
  return b.Build();
}

// parse(print(m)) == m structurally, and printing again gives the same bytes.
void ExpectRoundTrip(const IRModule& mod, const std::string& what) {
  SCOPED_TRACE(what);
  std::string text = PrintScript(mod);
  absl::StatusOr<IRModule> parsed = ParseScript(text, what + ".py");
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  absl::Status equal = CheckStructuralEqual(mod, *parsed);
  EXPECT_TRUE(equal.ok()) << equal << "\n" << text;
  EXPECT_EQ(PrintScript(*parsed), text);
}

TEST(ScriptTest, ExamplesRoundTrip) {
  ExpectRoundTrip(WithPrimFunc("matmul", testing::MatmulPrimFunc(16, 8, 4)), "matmul");
  ExpectRoundTrip(WithPrimFunc("every_tir_kind", testing::EveryTirKindPrimFunc()),
                  "every_tir_kind");
  ExpectRoundTrip(testing::SmallRelaxModule(), "small_relax");
  ExpectRoundTrip(testing::ChainModule(5), "chain");
  absl::StatusOr<IRModule> normalized = relax::NormalizeModule(testing::SmallRelaxModule());
  ASSERT_TRUE(normalized.ok());
  ExpectRoundTrip(*normalized, "small_relax_normalized");
}

std::vector<std::string> TestFiles() {
  std::vector<std::string> files;
  const char* dir = "compiler/script/testdata";
  if (DIR* d = opendir(dir)) {
    while (dirent* entry = readdir(d)) {
      std::string name = entry->d_name;
      if (name.size() > 3 && name.substr(name.size() - 3) == ".py")
        files.push_back(std::string(dir) + "/" + name);
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every module under testdata/ parses; printing and parsing it again gives an equal module and
// the same text; Relax modules also normalize and pass the well-formedness checker.
TEST(ScriptTest, TestdataModulesRoundTrip) {
  std::vector<std::string> files = TestFiles();
  EXPECT_GE(files.size(), 15u);
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    absl::StatusOr<IRModule> mod = ParseScript(ReadFile(file), file);
    ASSERT_TRUE(mod.ok()) << mod.status();
    ExpectRoundTrip(*mod, file);
    absl::StatusOr<IRModule> normalized = relax::NormalizeModule(*mod);
    ASSERT_TRUE(normalized.ok()) << normalized.status();
    ExpectRoundTrip(*normalized, file + " (normalized)");
    bool has_relax = false;
    for (const auto& [name, entry] : (*mod)->functions)
      has_relax |= entry.second.as<relax::FunctionNode>() != nullptr;
    if (has_relax) {  // the checker's rules are Relax's
      absl::Status wf = relax::CheckWellFormed(*normalized);
      EXPECT_TRUE(wf.ok()) << wf;
    }
  }
}

}  // namespace
}  // namespace kiln::script
