// The passes of the build pipeline, each on its own: structural results written as TVMScript,
// and for FuseOps and FoldConstant the numbers the compiled module computes.
#include "compiler/backend/pipeline.h"

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "compiler/backend/build.h"
#include "compiler/backend/fold_constant.h"
#include "compiler/backend/memory_plan.h"
#include "compiler/backend/testing/model_test_util.h"
#include "compiler/frontend/load_module.h"
#include "compiler/ir/relax_functor.h"
#include "compiler/ir/structural.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/transform/transform.h"
#include "compiler/script/printer.h"
#include "compiler/script/script_parser.h"
#include "compiler/tir/default_schedule.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::backend {
namespace {

namespace relax = ir::relax;
using testing::Array;
using testing::CompileAndRun;
using testing::FromTensor;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::Random;
using testing::ToTensor;

ir::IRModule Parse(const std::string& text) {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(text, "test.py");
  EXPECT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<ir::IRModule> normalized = relax::NormalizeModule(*mod);
  EXPECT_TRUE(normalized.ok()) << normalized.status();
  return *normalized;
}

void ExpectModule(const absl::StatusOr<ir::IRModule>& got, const std::string& want) {
  ASSERT_TRUE(got.ok()) << got.status();
  absl::Status eq = ir::CheckStructuralEqual(*got, Parse(want));
  EXPECT_TRUE(eq.ok()) << eq << "\ngot:\n" << script::PrintScript(*got);
}

// The Relax function `name`'s bindings, flattened.
std::vector<relax::Binding> Bindings(const ir::IRModule& mod, const std::string& name) {
  std::vector<relax::Binding> out;
  const auto* f = mod->Lookup(name).as<relax::FunctionNode>();
  if (f == nullptr) return out;
  for (const relax::BindingBlock& b : f->body.as<relax::SeqExprNode>()->blocks)
    out.insert(out.end(), b->bindings.begin(), b->bindings.end());
  return out;
}

// The callee names of main's call_tir bindings, in order.
std::vector<std::string> KernelCalls(const ir::IRModule& mod) {
  std::vector<std::string> names;
  for (const relax::Binding& b : Bindings(mod, "main")) {
    const auto* call = b->value.as<relax::CallNode>();
    if (call == nullptr || !call->op.as<relax::OpNode>() ||
        call->op.as<relax::OpNode>()->name != "relax.call_tir") {
      continue;
    }
    names.push_back(call->args[0].as<relax::GlobalVarNode>()->name_hint);
  }
  return names;
}

TEST(CanonicalizeBindingsTest, AliasesTuplesAndNoOpCastsDisappear) {
  const char* input = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        with R.dataflow():
            y = x
            t = (y, x)
            a = t[0]
            z = R.add(a, y)
            c = R.match_cast(z, R.Tensor((4, 8), dtype="float32"))
            gv = c
            R.output(gv)
        return gv
)";
  const char* want = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), dtype="float32")) -> R.Tensor((4, 8), dtype="float32"):
        with R.dataflow():
            t = (x, x)
            gv = R.add(x, x)
            R.output(gv)
        return gv
)";
  ExpectModule(relax::CanonicalizeBindings(Parse(input)), want);
}

TEST(CanonicalizeBindingsTest, KeepsCastsThatCheckAndAliasesThatNarrow) {
  // The match_cast binds n (a run-time check); `gv = lv` must stay because lv has two uses.
  const char* input = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(dtype="float32", ndim=2)):
        n = T.int64()
        with R.dataflow():
            c = R.match_cast(x, R.Tensor((n, 4), dtype="float32"))
            lv = R.exp(c)
            gv = lv
            w = R.add(lv, lv)
            R.output(gv, w)
        return (gv, w)
)";
  absl::StatusOr<ir::IRModule> out = relax::CanonicalizeBindings(Parse(input));
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<relax::Binding> b = Bindings(*out, "main");
  ASSERT_EQ(b.size(), 4u) << script::PrintScript(*out);
  EXPECT_TRUE(b[0].as<relax::MatchCastNode>());
}

TEST(DeadCodeEliminationTest, UnusedBindingsAndPrivateFunctionsGo) {
  const char* input = R"(
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def copy(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("copy"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi]

    @T.prim_func(private=True)
    def unused(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("neg"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi] * T.float32(-1)

    @T.prim_func
    def exported(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("neg"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi] * T.float32(-1)

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        with R.dataflow():
            a = R.call_tir(cls.copy, (x,), out_sinfo=R.Tensor((4,), dtype="float32"))
            b = R.exp(a)
            c = R.add(b, b)
            gv = R.multiply(a, a)
            R.output(gv)
        return gv
)";
  const char* want = R"(
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def copy(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("copy"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi]

    @T.prim_func
    def exported(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("neg"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi] * T.float32(-1)

    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        cls = Module
        with R.dataflow():
            a = R.call_tir(cls.copy, (x,), out_sinfo=R.Tensor((4,), dtype="float32"))
            gv = R.multiply(a, a)
            R.output(gv)
        return gv
)";
  ExpectModule(relax::DeadCodeElimination(Parse(input)), want);
}

TEST(DeadCodeEliminationTest, KeepsImpureCalls) {
  const char* input = R"(
@I.ir_module
class Module:
    @R.function(pure=False)
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        unused = R.call_packed("kiln.test.side_effect", x, sinfo_args=R.Object)
        return x
)";
  absl::StatusOr<ir::IRModule> out = relax::DeadCodeElimination(Parse(input));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Bindings(*out, "main").size(), 1u);
}

TEST(ToNonDataflowTest, NoDataflowBlockOrVariableRemains) {
  const char* input = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        with R.dataflow():
            lv = R.exp(x)
            gv = R.add(lv, x)
            R.output(gv)
        return gv
)";
  const char* want = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
        lv = R.exp(x)
        gv = R.add(lv, x)
        return gv
)";
  ExpectModule(relax::ToNonDataflow(Parse(input)), want);
}

// A dense layer with an activation chain, softmax and a squared output, batch `n`.
std::string Mlp(const std::string& n) {
  return absl::StrCat(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((")",
                      n, R"(", 16), dtype="float32"), w: R.Tensor((16, 32), dtype="float32"),
             b: R.Tensor((32,), dtype="float32")):
        with R.dataflow():
            m = R.matmul(x, w)
            a = R.add(m, b)
            r = R.nn.relu(a)
            e = R.exp(R.multiply(r, R.const(0.5, "float32")))
            s = R.nn.softmax(e, axis=-1)
            gv = R.multiply(s, s)
            R.output(gv)
        return gv
)");
}

absl::StatusOr<ir::IRModule> LegalizeAndFuse(const std::string& text) {
  absl::StatusOr<ir::IRModule> mod = relax::LegalizeOps(Parse(text));
  if (!mod.ok()) return mod;
  mod = relax::FuseOps(*mod);
  if (!mod.ok()) return mod;
  return relax::DeadCodeElimination(*mod);
}

TEST(FuseOpsTest, GroupsEpilogueChainsAndLeavesOpaqueOpsAlone) {
  absl::StatusOr<ir::IRModule> fused = LegalizeAndFuse(Mlp("n"));
  ASSERT_TRUE(fused.ok()) << fused.status();
  // matmul + add + relu + multiply + exp is one group; softmax is opaque; s is used twice.
  EXPECT_THAT(KernelCalls(*fused),
              ::testing::ElementsAre("fused_matmul_add_relu_multiply_exp", "softmax", "multiply1"))
      << script::PrintScript(*fused);
  // The unfused kernels are gone; the fused one keeps the group's pattern.
  EXPECT_FALSE(
      ir::GetAttr(
          (*fused)->Lookup("fused_matmul_add_relu_multiply_exp").as<ir::PrimFuncNode>()->attrs,
          "op_pattern")
          .as<ir::IntImmNode>() == nullptr);
  EXPECT_FALSE((*fused)->Lookup("relu").as<ir::PrimFuncNode>());
}

TEST(FuseOpsTest, StaticEpilogueIsAbsorbedIntoTheTiledMatmul) {
  absl::StatusOr<ir::IRModule> fused = LegalizeAndFuse(Mlp("8"));
  ASSERT_TRUE(fused.ok()) << fused.status();
  auto kernel = (*fused)->Lookup("fused_matmul_add_relu_multiply_exp").as_ref<ir::PrimFuncNode>();
  ASSERT_TRUE(kernel);
  std::string before = script::PrintScript(*fused);
  // Injective stages are inlined: one intermediate (the matmul result) is left...
  const auto* root = kernel->body.as<ir::BlockRealizeNode>();
  ASSERT_NE(root, nullptr) << before;
  EXPECT_EQ(root->block->alloc_buffers.size(), 1u) << before;
  // ...and the default schedule applies the epilogue as each accumulator tile is stored, so the
  // intermediate disappears.
  ir::PrimFunc scheduled = tir::ApplyDefaultSchedule(kernel);
  ir::IRModuleBuilder one;
  ASSERT_TRUE(one.Add(relax::MakeGlobalVar("k"), scheduled).ok());
  std::string text = script::PrintScript(one.Build());
  EXPECT_THAT(text, HasSubstr("T.exp(T.max(T_out_acc["));
  EXPECT_THAT(text, Not(HasSubstr("alloc_buffer"))) << text;
}

TEST(FuseOpsTest, FusedAndUnfusedComputeTheSame) {
  BuildOptions unfused;
  unfused.fuse = false;
  for (const char* n : {"n", "8"}) {
    for (int64_t rows : {1, 5, 8}) {
      if (std::string(n) == "8" && rows != 8) continue;
      SCOPED_TRACE(absl::StrCat("batch ", n, " rows ", rows));
      std::vector<runtime::Value> in = {ToTensor(Random({rows, 16}, 1)),
                                        ToTensor(Random({16, 32}, 2, -0.5, 0.5)),
                                        ToTensor(Random({32}, 3))};
      absl::StatusOr<runtime::Value> a = CompileAndRun(Mlp(n), in);
      absl::StatusOr<runtime::Value> b = CompileAndRun(Mlp(n), in, unfused);
      ASSERT_TRUE(a.ok()) << a.status();
      ASSERT_TRUE(b.ok()) << b.status();
      Array x = FromTensor(*a->as_tensor()), y = FromTensor(*b->as_tensor());
      ASSERT_EQ(x.shape, y.shape);
      for (int64_t i = 0; i < x.size(); ++i)
        ASSERT_NEAR(x.data[i], y.data[i], 1e-6 * (1 + std::abs(y.data[i]))) << "element " << i;
    }
  }
}

TEST(FuseOpsTest, AKernelUsedTwiceInOneGroupKeepsItsOperandsApart) {
  // add is one shared kernel; fused twice into one function it must not merge its buffers.
  const char* text = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("n", 3), dtype="float32"), y: R.Tensor(("n", 3), dtype="float32"),
             z: R.Tensor(("n", 3), dtype="float32")):
        with R.dataflow():
            a = R.add(x, y)
            b = R.add(a, z)
            gv = R.multiply(b, z)
            R.output(gv)
        return gv
)";
  Array x = Random({2, 3}, 4), y = Random({2, 3}, 5), z = Random({2, 3}, 6);
  absl::StatusOr<runtime::Value> out = CompileAndRun(text, {ToTensor(x), ToTensor(y), ToTensor(z)});
  ASSERT_TRUE(out.ok()) << out.status();
  Array got = FromTensor(*out->as_tensor());
  for (int64_t i = 0; i < x.size(); ++i) {
    double want = (x.data[i] + y.data[i] + z.data[i]) * z.data[i];
    EXPECT_NEAR(got.data[i], want, 1e-5 * (1 + std::abs(want)));
  }
  absl::StatusOr<ir::IRModule> fused = LegalizeAndFuse(text);
  ASSERT_TRUE(fused.ok()) << fused.status();
  EXPECT_EQ(KernelCalls(*fused).size(), 1u) << script::PrintScript(*fused);
}

TEST(FoldConstantTest, KernelsOnConstantsRunAtCompileTime) {
  // (c1 + c2)^T is folded; x @ that stays.
  const char* text = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2), dtype="float32")):
        with R.dataflow():
            c = R.add(R.const([[1.0, 2.0], [3.0, 4.0]], "float32"), R.const([[0.5, 0.5], [0.5, 0.5]], "float32"))
            t = R.permute_dims(c, axes=[1, 0])
            gv = R.matmul(x, t)
            R.output(gv)
        return gv
)";
  absl::StatusOr<ir::IRModule> legal = relax::LegalizeOps(Parse(text));
  ASSERT_TRUE(legal.ok()) << legal.status();
  absl::StatusOr<ir::IRModule> folded = FoldConstant(*legal);
  ASSERT_TRUE(folded.ok()) << folded.status();
  EXPECT_EQ(KernelCalls(*folded).size(), 1u) << script::PrintScript(*folded);
  // t = [[1.5, 3.5], [2.5, 4.5]]: x = [1, 10] gives [26.5, 48.5].
  Array x{{1, 2}, {1, 10}};
  absl::StatusOr<runtime::Value> out = CompileAndRun(text, {ToTensor(x)});
  ASSERT_TRUE(out.ok()) << out.status();
  Array got = FromTensor(*out->as_tensor());
  EXPECT_NEAR(got.data[0], 26.5, 1e-5);
  EXPECT_NEAR(got.data[1], 48.5, 1e-5);
}

// A chain of three kernels on static shapes after ToNonDataflow, the input of the two passes
// that make memory explicit.
const char* kChain = R"(
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def neg(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
        for i in range(64):
            with T.block("neg"):
                vi = T.axis.spatial(64, i)
                B[vi] = A[vi] * T.float32(-1)

    @R.function
    def main(x: R.Tensor((64,), dtype="float32")) -> R.Tensor((64,), dtype="float32"):
        cls = Module
        a = R.call_tir(cls.neg, (x,), out_sinfo=R.Tensor((64,), dtype="float32"))
        b = R.call_tir(cls.neg, (a,), out_sinfo=R.Tensor((64,), dtype="float32"))
        c = R.call_tir(cls.neg, (b,), out_sinfo=R.Tensor((64,), dtype="float32"))
        gv = R.call_tir(cls.neg, (c,), out_sinfo=R.Tensor((64,), dtype="float32"))
        return gv
)";

TEST(CallTIRRewriteTest, OutputsBecomeExplicitAllocations) {
  absl::StatusOr<ir::IRModule> out = relax::CallTIRRewrite(Parse(kChain));
  ASSERT_TRUE(out.ok()) << out.status();
  std::string text = script::PrintScript(*out);
  EXPECT_THAT(text, HasSubstr("a: R.Tensor((64,), dtype=\"float32\") = R.builtin.alloc_tensor("
                              "R.shape([64]), R.dtype(\"float32\"), R.prim_value(0))"));
  EXPECT_THAT(text, HasSubstr("= cls.neg(a, b)"));
  EXPECT_THAT(text, HasSubstr("\"relax.force_pure\": T.bool(True)"));
  EXPECT_THAT(text, Not(HasSubstr("call_tir")));
  // Before ToNonDataflow it refuses: a direct kernel call is not dataflow.
  absl::StatusOr<ir::IRModule> legal = relax::LegalizeOps(Parse(Mlp("n")));
  ASSERT_TRUE(legal.ok()) << legal.status();
  absl::StatusOr<ir::IRModule> dataflow = relax::CallTIRRewrite(*legal);
  ASSERT_FALSE(dataflow.ok());
  EXPECT_THAT(dataflow.status().message(), HasSubstr("runs after ToNonDataflow"));
}

TEST(StaticPlanBlockMemoryTest, IntermediatesShareStorageByLifetime) {
  absl::StatusOr<ir::IRModule> rewritten = relax::CallTIRRewrite(Parse(kChain));
  ASSERT_TRUE(rewritten.ok()) << rewritten.status();
  absl::StatusOr<ir::IRModule> planned = StaticPlanBlockMemory(*rewritten);
  ASSERT_TRUE(planned.ok()) << planned.status();
  std::string text = script::PrintScript(*planned);
  // a, b, c are intermediates of 256 bytes; a and c never live at once (b is written from a and
  // read into c), so two slots suffice. gv is the result and stays on its own.
  PlannedMemory memory = PlannedMemoryOf(*(*planned)->Lookup("main").as<relax::FunctionNode>());
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

TEST(PipelineTest, DumpsAfterTheNamedPassesInOrder) {
  BuildOptions options;
  options.dump_after = {"LegalizeOps", "FuseOps", "VMCodegen"};
  std::vector<std::string> seen;
  std::string after_fuse;
  options.dump = [&](const std::string& pass, const std::string& text) {
    seen.push_back(pass);
    if (pass == "FuseOps") after_fuse = text;
  };
  absl::StatusOr<BuiltModule> built = Build(Parse(Mlp("n")), "llvm", options);
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_THAT(seen, ::testing::ElementsAre("LegalizeOps", "FuseOps", "VMCodegen"));
  EXPECT_THAT(after_fuse, HasSubstr("def fused_matmul_add_relu_multiply_exp("));
  // The round trip: what a dump shows parses back.
  EXPECT_TRUE(script::ParseScript(after_fuse, "dump.py").ok());
}

TEST(PipelineTest, UnknownPassNamesAreRefusedWithTheList) {
  BuildOptions options;
  options.dump_after = {"FuseTIR"};
  absl::StatusOr<BuiltModule> built = Build(Parse(Mlp("n")), "llvm", options);
  ASSERT_FALSE(built.ok());
  EXPECT_THAT(built.status().message(), HasSubstr("no pass is called 'FuseTIR'"));
  EXPECT_THAT(built.status().message(), HasSubstr("CanonicalizeBindings, LegalizeOps"));
}

TEST(PipelineTest, EveryPassAndCodeGenerationStepIsTimedInOrder) {
  pass::PassTimer timer;
  BuildOptions options;
  options.timer = &timer;
  ASSERT_TRUE(Build(Parse(Mlp("n")), "llvm", options).ok());
  std::vector<std::string> steps;
  for (const auto& e : timer.entries()) steps.push_back(e.pass);
  EXPECT_THAT(steps, ::testing::ElementsAre(
                         "CanonicalizeBindings", "LegalizeOps", "FoldConstant",
                         "DeadCodeElimination", "FuseOps", "DeadCodeElimination", "DefaultSchedule",
                         "ToNonDataflow", "CallTIRRewrite", "StaticPlanBlockMemory", "VMCodegen",
                         "LowerInitBlock", "ConvertBlocksToLoops", "CompactAllocations",
                         "FlattenBuffers", "VectorizeLoops", "Simplify", "LLVM", "Link"));
  EXPECT_THAT(timer.Report(), HasSubstr("total"));
}

TEST(PipelineTest, ThePipelineIsInAnOrderItsPassesAccept) {
  EXPECT_TRUE(pass::PassContext::CheckOrder(Pipeline({})).ok());
  BuildOptions unfused;
  unfused.fuse = false;
  unfused.fold_constants = false;
  EXPECT_TRUE(pass::PassContext::CheckOrder(Pipeline(unfused)).ok());
}

// Verification after every pass over every shared model: the well-formedness checker finds no
// pass that breaks the IR.
class VerifiedPipelineTest : public ::testing::TestWithParam<const char*> {};

TEST_P(VerifiedPipelineTest, NoPassBreaksTheIR) {
  absl::StatusOr<frontend::SourceForm> form = frontend::FormFromPath(GetParam());
  ASSERT_TRUE(form.ok());
  std::ifstream in(GetParam(), std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  absl::StatusOr<ir::IRModule> mod = frontend::LoadModule(*form, bytes.str(), GetParam());
  ASSERT_TRUE(mod.ok()) << mod.status();
  BuildOptions options;
  options.verify = true;
  absl::StatusOr<BuiltModule> built = Build(*mod, "llvm", options);
  EXPECT_TRUE(built.ok()) << built.status();
}

INSTANTIATE_TEST_SUITE_P(
    SharedModels, VerifiedPipelineTest,
    ::testing::Values("compiler/script/testdata/tvm_mlp.py", "tests/models/mlp_784_128_10.onnx",
                      "tests/models/mlp_dynamic_batch.onnx", "tests/models/mobilenet_v2.onnx",
                      "tests/models/tiny_encoder_gelu.onnx",
                      "tests/models/tiny_encoder_opset17.onnx", "tests/models/tiny_resnet.onnx"));

}  // namespace
}  // namespace kiln::backend
