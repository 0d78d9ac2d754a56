// StaticPlanBlockMemory after CallTIRRewrite: storage shared by lifetime, and the planned module
// computes the same.
#include "compiler/backend/testing/model_test_util.h"
#include "compiler/relax/transform/testing/examples.h"
#include "compiler/relax/transform/transform.h"
#include "compiler/script/printer.h"
#include "compiler/testing/expect_pass.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::ir::relax {
namespace {

using backend::testing::Array;
using backend::testing::CompileAndRun;
using backend::testing::FromTensor;
using backend::testing::Random;
using backend::testing::ToTensor;
using pass::testing::ParseModule;
using ::testing::HasSubstr;

TEST(StaticPlanBlockMemoryTest, IntermediatesShareStorageByLifetime) {
  absl::StatusOr<IRModule> rewritten = CallTIRRewrite(ParseModule(testing::kKernelChain));
  ASSERT_TRUE(rewritten.ok()) << rewritten.status();
  absl::StatusOr<IRModule> planned = StaticPlanBlockMemory(*rewritten);
  ASSERT_TRUE(planned.ok()) << planned.status();
  std::string text = script::PrintScript(*planned);
  // a, b, c are intermediates of 256 bytes; a and c never live at once (b is written from a and
  // read into c), so two slots suffice. gv is the result and stays on its own.
  PlannedMemory memory = PlannedMemoryOf(*(*planned)->Lookup("main").as<FunctionNode>());
  EXPECT_EQ(memory.tensors, 3);
  EXPECT_EQ(memory.tensor_bytes, 3 * 256);
  EXPECT_EQ(memory.storage_bytes, 2 * 256) << text;
  EXPECT_THAT(text, HasSubstr("R.memory.alloc_storage(R.shape([512])"));
  EXPECT_THAT(text, HasSubstr("c: R.Tensor((64,), dtype=\"float32\") = R.memory.alloc_tensor("
                              "storage, R.prim_value(0)"));
  EXPECT_THAT(text, HasSubstr("gv: R.Tensor((64,), dtype=\"float32\") = R.builtin.alloc_tensor("));
  // What the pass prints compiles again (the dump is a valid module) and computes -(-(-(-x))).
  Array x = Random({64}, 9);
  absl::StatusOr<runtime::Value> out = CompileAndRun(text, {ToTensor(x)});
  ASSERT_TRUE(out.ok()) << out.status();
  Array got = FromTensor(*out->as_tensor());
  for (int64_t i = 0; i < 64; ++i) EXPECT_FLOAT_EQ(got.data[i], x.data[i]);
}

}  // namespace
}  // namespace kiln::ir::relax
