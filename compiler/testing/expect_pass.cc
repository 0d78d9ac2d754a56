#include "compiler/testing/expect_pass.h"

#include "compiler/ir/structural.h"
#include "compiler/relax/block_builder.h"
#include "compiler/script/printer.h"
#include "compiler/script/script_parser.h"

namespace kiln::pass::testing {

ir::IRModule ParseModule(const std::string& text, bool normalize) {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(text, "test.py");
  EXPECT_TRUE(mod.ok()) << mod.status();
  if (!mod.ok()) return ir::IRModuleBuilder().Build();
  if (!normalize) return *mod;
  absl::StatusOr<ir::IRModule> normal = ir::relax::NormalizeModule(*mod);
  EXPECT_TRUE(normal.ok()) << normal.status();
  return normal.ok() ? *normal : *mod;
}

::testing::AssertionResult Transforms(const PassPtr& pass, const std::string& before,
                                      const std::string& expected, bool normalize) {
  ir::IRModule in = ParseModule(before, normalize);
  ir::IRModule want = ParseModule(expected, normalize);
  PassContext alone;
  alone.set_check_requirements(false);
  absl::StatusOr<ir::IRModule> got = alone.Run(in, {pass});
  if (!got.ok()) {
    return ::testing::AssertionFailure() << pass->name() << " failed: " << got.status();
  }
  absl::Status equal = ir::CheckStructuralEqual(*got, want);
  if (equal.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << pass->name() << " did not give the expected module: " << equal.message()
         << "\n---- got ----\n"
         << script::PrintScript(*got) << "---- expected ----\n"
         << script::PrintScript(want);
}

::testing::AssertionResult Refuses(const PassPtr& pass, const std::string& before,
                                   const std::string& message, bool normalize) {
  PassContext alone;
  alone.set_check_requirements(false);
  absl::StatusOr<ir::IRModule> got = alone.Run(ParseModule(before, normalize), {pass});
  if (got.ok()) {
    return ::testing::AssertionFailure() << pass->name() << " accepted the module:\n"
                                         << script::PrintScript(*got);
  }
  if (got.status().message().find(message) == absl::string_view::npos) {
    return ::testing::AssertionFailure() << pass->name() << " refused with '"
                                         << got.status().message() << "', not '" << message << "'";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace kiln::pass::testing
