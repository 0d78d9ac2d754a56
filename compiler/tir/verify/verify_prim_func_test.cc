// The TIR verifier: valid kernels pass after every lowering pass; each rule catches what it is
// for; a seeded bad pass is named by the instrument; what a condition protects, and a vector that
// runs from one row into the next inside its buffer, are not reported.
#include "compiler/tir/verify/verify_prim_func.h"

#include "absl/strings/str_cat.h"
#include "compiler/ir/tir_functor.h"
#include "compiler/script/script_parser.h"
#include "compiler/tir/transform/transform.h"
#include "compiler/tir/verify/tir_verifier.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::tir {
namespace {

using ::testing::HasSubstr;

ir::IRModule Parse(const std::string& text) {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(text);
  EXPECT_TRUE(mod.ok()) << mod.status();
  return *mod;
}

ir::PrimFunc Func(const ir::IRModule& mod, const std::string& name) {
  return mod->Lookup(name).as_ref<ir::PrimFuncNode>();
}

constexpr char kMatmul[] = R"(
@I.ir_module
class Module:
    @T.prim_func
    def matmul(A: T.Buffer((16, 32), "float32"), B: T.Buffer((32, 8), "float32"), C: T.Buffer((16, 8), "float32")):
        for i, j, k in T.grid(16, 8, 32):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
)";

// A pass that breaks what it touches, as a buggy pass would.
pass::PassPtr Breaking(const std::string& name, std::function<ir::Stmt(const ir::Stmt&)> rewrite) {
  return pass::MakePrimFuncPass(name,
                                [rewrite](const ir::PrimFunc& f) -> absl::StatusOr<ir::PrimFunc> {
                                  return ir::WithBody(f, rewrite(f->body));
                                });
}

// Every loop one iteration longer: an off-by-one.
ir::Stmt GrowLoops(const ir::Stmt& s) {
  struct Grow : ir::StmtExprMutator {
    ir::Stmt VisitStmt(const ir::Stmt& s) override {
      ir::Stmt visited = DefaultVisitStmt(s);
      const auto* f = visited.as<ir::ForNode>();
      if (f == nullptr) return visited;
      return ir::MakeFor(f->loop_var, f->min, f->extent + 1, f->for_kind, f->body, f->annotations);
    }
  };
  return Grow().VisitStmt(s);
}

TEST(TirVerifierTest, ValidKernelsPassAfterEveryLoweringPass) {
  pass::PassContext ctx;
  auto verifier = std::make_shared<TirVerifier>();
  ctx.AddInstrument(verifier);
  absl::StatusOr<ir::IRModule> lowered = ctx.Run(Parse(kMatmul), LowerTirPasses());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_GT(verifier->functions_verified(), 1);
  EXPECT_TRUE(VerifyPrimFuncs(*lowered).ok());
}

TEST(TirVerifierTest, ASeededBadPassIsNamedWithWhatItBroke) {
  pass::PassContext ctx;
  ctx.AddInstrument(std::make_shared<TirVerifier>());
  std::vector<pass::PassPtr> passes = LowerTirPasses();
  passes.insert(passes.begin() + 2, Breaking("GrowLoops", GrowLoops));
  absl::StatusOr<ir::IRModule> out = ctx.Run(Parse(kMatmul), passes);
  ASSERT_FALSE(out.ok());
  const std::string message(out.status().message());
  EXPECT_THAT(message, HasSubstr("not valid after pass GrowLoops"));
  EXPECT_THAT(message, HasSubstr("[TIR-BOUNDS] in 'matmul': a load of buffer 'A' reaches element"));
}

TEST(VerifyPrimFuncTest, AVariableUsedOutsideItsLoopIsReported) {
  ir::IRModule mod = Parse(kMatmul);
  // The loop variable replaced, in the body, by one nothing binds.
  const ir::Var stray = ir::MakeVar("stray");
  pass::PassContext ctx;
  absl::StatusOr<ir::IRModule> loops =
      ctx.Run(mod, {LowerInitBlockPass(), ConvertBlocksToLoopsPass()});
  ASSERT_TRUE(loops.ok()) << loops.status();
  ir::PrimFunc f = Func(*loops, "matmul");
  const auto* outer = f->body.as<ir::ForNode>();
  ASSERT_NE(outer, nullptr);
  const ir::Var i = outer->loop_var;
  ir::Stmt body = ir::Substitute(outer->body, [&](const ir::Var& v) -> ir::PrimExpr {
    return v == i ? ir::PrimExpr(stray) : ir::PrimExpr();
  });
  ir::PrimFunc broken = ir::WithBody(
      f, ir::MakeFor(i, outer->min, outer->extent, outer->for_kind, body, outer->annotations));
  EXPECT_THAT(std::string(VerifyPrimFunc("matmul", broken).message()),
              HasSubstr("[TIR-SCOPE] in 'matmul': variable 'stray' is used where "
                        "nothing binds it"));
  // Reported once however often it is used.
  EXPECT_EQ(FindTirViolations("matmul", broken).size(), 1u);
}

TEST(VerifyPrimFuncTest, TypesRanksAndBlockRealizesAreChecked) {
  ir::IRModule mod = Parse(R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((4, 8), "float32"), B: T.Buffer((4, 8), "float64")):
        for i, j in T.grid(4, 8):
            B[i, j] = A[i, j]
)");
  std::vector<TirViolation> found = FindTirViolations("f", Func(mod, "f"));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].rule, "TIR-DTYPE");
  EXPECT_THAT(found[0].message, HasSubstr("a store of float32 from buffer 'B' of float64"));

  // A store that lost an index, as a buggy flattening would leave it.
  struct DropIndex : ir::StmtExprMutator {
    ir::Stmt VisitStmt(const ir::Stmt& s) override {
      const auto* store = s.as<ir::BufferStoreNode>();
      if (store == nullptr) return DefaultVisitStmt(s);
      std::vector<ir::PrimExpr> indices(store->indices.begin(), store->indices.end() - 1);
      return ir::Stmt(new ir::BufferStoreNode(store->buffer, store->value, indices));
    }
  };
  ir::PrimFunc f = Func(mod, "f");
  ir::PrimFunc broken = ir::WithBody(f, DropIndex().VisitStmt(f->body));
  EXPECT_THAT(std::string(VerifyPrimFunc("f", broken).message()),
              HasSubstr("[TIR-BUFFER] in 'f': a store of buffer 'B' has 1 indices for its 2 "
                        "dimensions"));
}

// Issue 52, finding 8: T.Buffer((-8,)) and buffers of (2^62)^4 elements compiled.
TEST(VerifyPrimFuncTest, NegativeDimensionsAndBuffersPast2To63BytesAreReported) {
  ir::IRModule mod = Parse(R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((-8,), "float32"), B: T.Buffer((T.int64(4611686018427387904), T.int64(4611686018427387904)), "float32")):
        A[0] = B[0, 0]
)");
  std::vector<TirViolation> found = FindTirViolations("f", Func(mod, "f"));
  std::string all;
  for (const TirViolation& v : found) absl::StrAppend(&all, v.rule, ": ", v.message, "\n");
  EXPECT_THAT(all, HasSubstr("TIR-BUFFER: buffer 'A' dimension 0 is -8: a dimension is never "
                             "negative"));
  EXPECT_THAT(all, HasSubstr("TIR-BUFFER: buffer 'B' (2 dimensions, float32) is larger than "
                             "2^63 bytes"));
}

TEST(VerifyPrimFuncTest, WhatAConditionGuardsIsNotJudged) {
  ir::IRModule mod = Parse(R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((10,), "float32"), B: T.Buffer((10,), "float32")):
        for i, j in T.grid(3, 4):
            if i * 4 + j < 10:
                B[i * 4 + j] = A[i * 4 + j]
)");
  EXPECT_TRUE(VerifyPrimFunc("f", Func(mod, "f")).ok());
  // Without the condition the last row reaches past the end.
  mod = Parse(R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((10,), "float32"), B: T.Buffer((10,), "float32")):
        for i, j in T.grid(3, 4):
            B[i * 4 + j] = A[i * 4 + j]
)");
  EXPECT_THAT(std::string(VerifyPrimFunc("f", Func(mod, "f")).message()),
              HasSubstr("a store of buffer 'B' reaches element 11 of its 10"));
}

TEST(VerifyPrimFuncTest, AVectorMayRunIntoTheNextRowButNotPastTheBuffer) {
  // A fused 56 x 56 axis vectorized by 32: rows are crossed, the buffer's 3136 elements never.
  const std::string fits = R"(
@I.ir_module
class Module:
    @T.prim_func
    def f(A: T.Buffer((56, 56), "float32")):
        for i in range(98):
            A[i * 32 // 56, T.Ramp(i * 32 % 56, 1, 32)] = T.Broadcast(T.float32(0), 32)
)";
  EXPECT_TRUE(VerifyPrimFunc("f", Func(Parse(fits), "f")).ok());
  std::string past = fits;
  past.replace(past.find("range(98)"), 9, "range(99)");
  EXPECT_THAT(std::string(VerifyPrimFunc("f", Func(Parse(past), "f")).message()),
              HasSubstr("reaches element 3167 of its 3136"));
}

}  // namespace
}  // namespace kiln::tir
