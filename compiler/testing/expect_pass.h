// How a pass's own test reads, as TVM's per-pass tests do: TVMScript before, TVMScript expected
// after, structural equality; and its refusals.
#ifndef KILN_COMPILER_TESTING_EXPECT_PASS_H_
#define KILN_COMPILER_TESTING_EXPECT_PASS_H_

#include <string>

#include "compiler/ir/module.h"
#include "compiler/pass/pass.h"
#include "gtest/gtest.h"

namespace kiln::pass::testing {

// Parses TVMScript (normalized when `normalize`), failing the test on an error.
ir::IRModule ParseModule(const std::string& text, bool normalize = true);

// Runs `pass` alone (requirements unchecked: `before` is written in the form they produce) over
// `before` and expects a module structurally equal to `expected`; on a
// mismatch the failure shows the path of the first difference and both texts.
::testing::AssertionResult Transforms(const PassPtr& pass, const std::string& before,
                                      const std::string& expected, bool normalize = true);

// Runs `pass` alone over `before` and expects an error whose message contains `message`.
::testing::AssertionResult Refuses(const PassPtr& pass, const std::string& before,
                                   const std::string& message, bool normalize = true);

}  // namespace kiln::pass::testing

#endif  // KILN_COMPILER_TESTING_EXPECT_PASS_H_
