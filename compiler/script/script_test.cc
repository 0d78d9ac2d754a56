#include <cstdio>

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

TEST(ScriptTest, PrintsTvmStyle) {
  std::string text = PrintScript(WithPrimFunc("every", testing::EveryTirKindPrimFunc()));
  std::printf("%s\n", text.c_str());
  std::string relax = PrintScript(*relax::NormalizeModule(testing::SmallRelaxModule()));
  std::printf("%s\n", relax.c_str());
}

}  // namespace
}  // namespace kiln::script
