// The pass infrastructure: requirements are checked before anything runs, instruments see every
// pass in order, errors name the pass (and the PrimFunc), and the verifier names the first pass
// that breaks the IR.
#include "compiler/pass/pass.h"

#include "compiler/ir/relax_expr.h"
#include "compiler/pass/instruments.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/well_formed_verifier.h"
#include "compiler/script/printer.h"
#include "compiler/script/script_parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::pass {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kModule[] = R"(
@I.ir_module
class Module:
    @T.prim_func
    def add_one(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi] + T.float32(1)

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Module
        with R.dataflow():
            y = R.call_tir(cls.add_one, (x,), out_sinfo=R.Tensor((4,), "float32"))
            R.output(y)
        return y
)";

ir::IRModule Parse() {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(kModule, "module.py");
  EXPECT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<ir::IRModule> normal = ir::relax::NormalizeModule(*mod);
  EXPECT_TRUE(normal.ok()) << normal.status();
  return *normal;
}

PassPtr Identity(const std::string& name, std::vector<std::string> required = {}) {
  return MakeModulePass(
      name, [](const ir::IRModule& m) -> absl::StatusOr<ir::IRModule> { return m; },
      std::move(required));
}

// Records the order instruments are called in.
class Recorder : public PassInstrument {
 public:
  void BeforePass(const PassInfo& pass, const ir::IRModule&) override {
    calls.push_back("before " + pass.name);
  }
  absl::Status AfterPass(const PassInfo& pass, const ir::IRModule&) override {
    calls.push_back("after " + pass.name);
    return absl::OkStatus();
  }
  std::vector<std::string> calls;
};

TEST(PassContextTest, RunsPassesInOrderWithInstrumentsAroundEach) {
  PassContext ctx;
  auto recorder = std::make_shared<Recorder>();
  auto timer = std::make_shared<PassTimer>();
  ctx.AddInstrument(recorder);
  ctx.AddInstrument(timer);
  absl::StatusOr<ir::IRModule> out = ctx.Run(Parse(), {Identity("A"), Identity("B", {"A"})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(recorder->calls, ElementsAre("before A", "after A", "before B", "after B"));
  ASSERT_EQ(timer->entries().size(), 2u);
  EXPECT_EQ(timer->entries()[1].pass, "B");
  EXPECT_THAT(timer->Report(), HasSubstr("total"));
}

TEST(PassContextTest, AMissingRequirementStopsThePipelineBeforeAnyPassRuns) {
  PassContext ctx;
  auto recorder = std::make_shared<Recorder>();
  ctx.AddInstrument(recorder);
  absl::StatusOr<ir::IRModule> out = ctx.Run(Parse(), {Identity("B", {"A"}), Identity("A")});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("B requires A to run before it"));
  EXPECT_TRUE(recorder->calls.empty());
}

TEST(PassContextTest, ErrorsNameThePassAndThePrimFunc) {
  PassPtr failing =
      MakePrimFuncPass("Breaker", [](const ir::PrimFunc&) -> absl::StatusOr<ir::PrimFunc> {
        return absl::InvalidArgumentError("cannot do it");
      });
  absl::StatusOr<ir::IRModule> out = PassContext().Run(Parse(), {failing});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(out.status().message(), "Breaker: PrimFunc 'add_one': cannot do it");
}

TEST(PassContextTest, APrimFuncPassKeepsRelaxFunctionsAndUnchangedKernels) {
  ir::IRModule mod = Parse();
  int calls = 0;
  PassPtr count =
      MakePrimFuncPass("Count", [&](const ir::PrimFunc& f) -> absl::StatusOr<ir::PrimFunc> {
        ++calls;
        return f;
      });
  absl::StatusOr<ir::IRModule> out = PassContext().Run(mod, {count});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE((*out)->Lookup("main").same_as(mod->Lookup("main")));
  EXPECT_TRUE((*out)->Lookup("add_one").same_as(mod->Lookup("add_one")));
}

TEST(PassContextTest, TheVerifierNamesThePassThatBrokeTheIR) {
  // "Break" returns main with its body replaced by a variable bound nowhere.
  PassPtr breaker =
      MakeModulePass("Break", [](const ir::IRModule& m) -> absl::StatusOr<ir::IRModule> {
        const auto* main = m->Lookup("main").as<ir::relax::FunctionNode>();
        ir::relax::Var stray = ir::relax::MakeVar("stray", main->ret_struct_info);
        ir::IRModuleBuilder b(m);
        b.Update(m->GetGlobalVar("main"),
                 ir::relax::MakeFunction(main->params, stray, main->ret_struct_info, main->is_pure,
                                         main->attrs));
        return b.Build();
      });
  PassContext ctx;
  auto verifier = std::make_shared<ir::relax::WellFormedVerifier>();
  ctx.AddInstrument(verifier);
  absl::StatusOr<ir::IRModule> out =
      ctx.Run(Parse(), {Identity("Fine"), breaker, Identity("Never")});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("not well-formed after pass Break"));
  EXPECT_THAT(out.status().message(), HasSubstr("stray"));
  EXPECT_EQ(verifier->passes_verified(), 2);
}

TEST(PassContextTest, TheDumperPrintsAfterTheNamedPasses) {
  std::vector<std::string> dumped;
  PassContext ctx;
  ctx.AddInstrument(std::make_shared<PassDumper>(
      std::vector<std::string>{"B"}, [](const ir::IRModule& m) { return script::PrintScript(m); },
      [&](const std::string& pass, const std::string& text) {
        dumped.push_back(pass + "\n" + text);
      }));
  ASSERT_TRUE(ctx.Run(Parse(), {Identity("A"), Identity("B")}).ok());
  ASSERT_EQ(dumped.size(), 1u);
  EXPECT_THAT(dumped[0], HasSubstr("def add_one"));
}

}  // namespace
}  // namespace kiln::pass
