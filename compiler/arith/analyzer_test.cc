#include "compiler/arith/analyzer.h"

#include "compiler/ir/printer.h"
#include "gtest/gtest.h"

namespace kiln::arith {
namespace {

using namespace ir;  // NOLINT: test brevity

class AnalyzerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ana_.Bind(i, 0, 15);  // i in [0, 16)
    ana_.Bind(j, 0, 31);  // j in [0, 32)
    ana_.Bind(k, 0, 3);   // k in [0, 4)
  }
  PrimExpr C(int64_t v) { return IntImm(DataType::Int(64), v); }
  std::string S(const PrimExpr& e) { return DebugPrint(ana_.Simplify(e)); }

  Var i = MakeVar("i"), j = MakeVar("j"), k = MakeVar("k"), x = MakeVar("x");
  Var n = MakeSizeVar("n"), m = MakeSizeVar("m");
  Analyzer ana_;
};

// ---- Canonical simplification ----

TEST_F(AnalyzerTest, FloorDivOfSplitIndexRecoversOuter) {
  EXPECT_EQ(S(FloorDiv(i * 32 + j, C(32))), "i");
}
TEST_F(AnalyzerTest, FloorModOfSplitIndexRecoversInner) {
  EXPECT_EQ(S(FloorMod(i * 32 + j, C(32))), "j");
}
TEST_F(AnalyzerTest, CommutedProductsAreEqual) { EXPECT_TRUE(ana_.CanProveEqual(n * 4, 4 * n)); }
TEST_F(AnalyzerTest, ProductMinusCommutedProductIsZero) { EXPECT_EQ(S(n * 4 - 4 * n), "0"); }
TEST_F(AnalyzerTest, FoldsConstants) { EXPECT_EQ(S(C(3) * C(4) + C(5)), "17"); }
TEST_F(AnalyzerTest, CollectsLikeTerms) { EXPECT_EQ(S(x + x + x - x * 2), "x"); }
TEST_F(AnalyzerTest, DistributesProducts) { EXPECT_EQ(S((x + 1) * 3 - 3 * x), "3"); }
// A product of many sums (concatenated symbolic dimensions, flattened) would expand into 2^30
// terms: it stays factored, so simplifying it takes as long as reading it.
TEST_F(AnalyzerTest, ProductsOfManySumsStayFactored) {
  PrimExpr product = C(1);
  for (int d = 0; d < 30; ++d) product = product * (MakeSizeVar("d" + std::to_string(d)) + 1);
  std::string simplified = S(product);
  EXPECT_LT(simplified.size(), 1000u) << simplified;
  EXPECT_NE(simplified.find("d29"), std::string::npos) << simplified;
}
TEST_F(AnalyzerTest, CancelsToZero) { EXPECT_EQ(S(x - x), "0"); }
TEST_F(AnalyzerTest, ConstantFloorDivRoundsDown) { EXPECT_EQ(S(FloorDiv(C(-7), C(2))), "-4"); }
TEST_F(AnalyzerTest, ConstantFloorModIsNonNegative) { EXPECT_EQ(S(FloorMod(C(-7), C(2))), "1"); }
TEST_F(AnalyzerTest, FloorDivOfMultiple) {
  EXPECT_EQ(S(FloorDiv(x * 8 + 16, C(4))), "((x * 2) + 4)");
}
TEST_F(AnalyzerTest, FloorModOfMultipleIsConstant) { EXPECT_EQ(S(FloorMod(x * 8 + 3, C(4))), "3"); }
TEST_F(AnalyzerTest, FloorDivCombinesTermsBeforeDividing) {
  // x*4 + x*4 + 1 = 8x + 1, and 1 // 8 = 0.
  EXPECT_EQ(S(FloorDiv(x * 4 + x * 4 + 1, C(8))), "x");
}
TEST_F(AnalyzerTest, FloorDivSplitsDivisiblePart) {
  // (x*8 + 3) // 4 = x*2 + 3//4 = x*2 (3 is in [0, 4)).
  EXPECT_EQ(S(FloorDiv(x * 8 + 3, C(4))), "(x * 2)");
}
TEST_F(AnalyzerTest, FloorDivOfUnknownRemainderStaysOpaque) {
  EXPECT_EQ(S(FloorDiv(x + 1, C(4))), "((x + 1) // 4)");
}
TEST_F(AnalyzerTest, NestedSplitFuse) {
  // Fusing (i, j) into f = i*32 + j and splitting again by 32 gives back i and j.
  PrimExpr fused = i * 32 + j;
  EXPECT_EQ(S(FloorDiv(fused, C(32)) * 32 + FloorMod(fused, C(32))), "((i * 32) + j)");
}
TEST_F(AnalyzerTest, ThreeLevelTileIndex) {
  // ((i*4 + k) // 4) with k in [0, 4) is i.
  EXPECT_EQ(S(FloorDiv(i * 4 + k, C(4))), "i");
  EXPECT_EQ(S(FloorMod(i * 4 + k, C(4))), "k");
}
TEST_F(AnalyzerTest, TruncDivOfNonNegativeIsFloorDiv) {
  EXPECT_EQ(S(Binary(NodeKind::kDiv, i * 32 + j, C(32))), "i");
}
TEST_F(AnalyzerTest, TruncDivOfPossiblyNegativeStays) {
  EXPECT_EQ(S(Binary(NodeKind::kDiv, x, C(2))), "T.Div(x, 2)");
}
TEST_F(AnalyzerTest, MinByBounds) { EXPECT_EQ(S(Min(i, C(100))), "i"); }
TEST_F(AnalyzerTest, MaxByBounds) { EXPECT_EQ(S(Max(i, C(-1))), "i"); }
TEST_F(AnalyzerTest, MinOfEqualTermsCollapses) { EXPECT_EQ(S(Min(x + 1, x + 2)), "(x + 1)"); }
TEST_F(AnalyzerTest, MinOfUnorderedTermsStays) { EXPECT_EQ(S(Min(x, n)), "T.min(x, n)"); }
TEST_F(AnalyzerTest, SelectOnKnownCondition) { EXPECT_EQ(S(Select(i < C(16), x, n)), "x"); }
TEST_F(AnalyzerTest, FloatConstantFolding) {
  EXPECT_EQ(S(FloatImm(DataType::Float(32), 1.5) * FloatImm(DataType::Float(32), 2.0)),
            "T.float32(3)");
}
TEST_F(AnalyzerTest, LogicFolding) {
  EXPECT_EQ(S(Binary(NodeKind::kAnd, Bool(true), x < n)), "(x < n)");
  EXPECT_EQ(S(Binary(NodeKind::kOr, x < n, Bool(true))), "True");
  EXPECT_EQ(S(Not(i < C(16))), "False");
}
TEST_F(AnalyzerTest, CastOfConstantFolds) {
  EXPECT_EQ(S(Cast(DataType::Int(32), C(7) + C(1))), "8");
}
TEST_F(AnalyzerTest, SimplifiesInsideOpaqueAtoms) {
  PrimExpr call = Call(DataType::Int(64), "opaque", {x + x - x});
  EXPECT_EQ(S(call + 0), "T.opaque(x)");
}

// ---- Bounds ----

TEST_F(AnalyzerTest, BoundOfAffineIndex) {
  ConstIntBound b = ana_.Bound(i * 4 + 3);
  EXPECT_EQ(b.min, 3);
  EXPECT_EQ(b.max, 63);
}
TEST_F(AnalyzerTest, BoundOfDifference) {
  ConstIntBound b = ana_.Bound(i - j);
  EXPECT_EQ(b.min, -31);
  EXPECT_EQ(b.max, 15);
}
TEST_F(AnalyzerTest, BoundOfFloorModIsDivisorRange) {
  ConstIntBound b = ana_.Bound(FloorMod(x, C(8)));
  EXPECT_EQ(b.min, 0);
  EXPECT_EQ(b.max, 7);
}
TEST_F(AnalyzerTest, BoundOfFloorDiv) {
  ConstIntBound b = ana_.Bound(FloorDiv(j, C(8)));
  EXPECT_EQ(b.min, 0);
  EXPECT_EQ(b.max, 3);
}
TEST_F(AnalyzerTest, SizeVarIsNonNegative) {
  EXPECT_EQ(ana_.Bound(n).min, 0);
  EXPECT_EQ(ana_.Bound(n).max, ConstIntBound::kPosInf);
}
TEST_F(AnalyzerTest, UnboundedVarSaturates) {
  ConstIntBound b = ana_.Bound(x * 2 + 1);
  EXPECT_EQ(b.min, ConstIntBound::kNegInf);
  EXPECT_EQ(b.max, ConstIntBound::kPosInf);
}
TEST_F(AnalyzerTest, Int32VarUsesDtypeRange) {
  Var small = MakeVar("s", DataType::Int(8));
  EXPECT_EQ(ana_.Bound(small).min, -128);
  EXPECT_EQ(ana_.Bound(small).max, 127);
}
TEST_F(AnalyzerTest, BindFromRange) {
  Var r = MakeVar("r");
  ana_.Bind(r, MakeRange(C(2), C(5)));
  EXPECT_EQ(ana_.Bound(r).min, 2);
  EXPECT_EQ(ana_.Bound(r).max, 6);
}
TEST_F(AnalyzerTest, BoundOfMinMaxAndSelect) {
  EXPECT_EQ(ana_.Bound(Min(i, j)).max, 15);
  EXPECT_EQ(ana_.Bound(Max(i, j)).min, 0);
  ConstIntBound s = ana_.Bound(Select(x < n, i, j + 100));
  EXPECT_EQ(s.min, 0);
  EXPECT_EQ(s.max, 131);
}

// ---- Modular sets ----

TEST_F(AnalyzerTest, ModularOfAffine) {
  ModularSet s = ana_.Modular(x * 4 + 3);
  EXPECT_EQ(s.coeff, 4);
  EXPECT_EQ(s.base, 3);
}
TEST_F(AnalyzerTest, ModularOfSumTakesGcd) {
  ModularSet s = ana_.Modular(x * 6 + n * 4 + 1);
  EXPECT_EQ(s.coeff, 2);
  EXPECT_EQ(s.base, 1);
}
TEST_F(AnalyzerTest, ModularOfFloorDiv) {
  ModularSet s = ana_.Modular(FloorDiv(x * 8 + 4, C(4)));
  EXPECT_EQ(s.coeff, 2);
  EXPECT_EQ(s.base, 1);
}
TEST_F(AnalyzerTest, ModularOfFloorModByDivisor) {
  ModularSet s = ana_.Modular(FloorMod(x * 8 + 5, C(4)));
  EXPECT_EQ(s.coeff, 0);
  EXPECT_EQ(s.base, 1);
}
TEST_F(AnalyzerTest, ModularOfFloorModKeepsTheCommonStep) {
  ModularSet s = ana_.Modular(FloorMod(x * 64, C(128)));
  EXPECT_EQ(s.coeff, 64);
  EXPECT_EQ(s.base, 0);
  s = ana_.Modular(FloorMod(x * 6 + 4, C(4)));  // gcd(6, 4) = 2
  EXPECT_EQ(s.coeff, 2);
  EXPECT_EQ(s.base, 0);
}

TEST_F(AnalyzerTest, ModularOfConstant) {
  ModularSet s = ana_.Modular(C(12));
  EXPECT_EQ(s.coeff, 0);
  EXPECT_EQ(s.base, 12);
}

// ---- Prover ----

TEST_F(AnalyzerTest, ProvesLoopBound) { EXPECT_TRUE(ana_.CanProve(i < C(16))); }
TEST_F(AnalyzerTest, DoesNotProveWhatMayFail) { EXPECT_FALSE(ana_.CanProve(i < C(15))); }
TEST_F(AnalyzerTest, ProvesAffineInBounds) { EXPECT_TRUE(ana_.CanProve(i * 32 + j < C(512))); }
TEST_F(AnalyzerTest, RefutesOutOfBounds) { EXPECT_FALSE(ana_.CanProve(i * 32 + j < C(511))); }
TEST_F(AnalyzerTest, ProvesSymbolicInequality) { EXPECT_TRUE(ana_.CanProve(n <= n + 1)); }
TEST_F(AnalyzerTest, ProvesSymbolicNonNegativity) { EXPECT_TRUE(ana_.CanProve(C(0) <= n * m)); }
TEST_F(AnalyzerTest, ProvesParityMismatch) {
  EXPECT_TRUE(ana_.CanProve(Binary(NodeKind::kNE, x * 2, x * 4 + 1)));
}
TEST_F(AnalyzerTest, ProvesEqualityThroughDivMod) {
  EXPECT_TRUE(ana_.CanProveEqual(FloorDiv(i * 32 + j, C(32)) * 32 + FloorMod(i * 32 + j, C(32)),
                                 i * 32 + j));
}
TEST_F(AnalyzerTest, DoesNotProveUnrelatedEquality) { EXPECT_FALSE(ana_.CanProveEqual(n, m)); }
TEST_F(AnalyzerTest, OverflowIsNotAProof) {
  PrimExpr big = C(int64_t{1} << 62);
  EXPECT_FALSE(ana_.CanProve(big * 4 < C(0)));
}

}  // namespace
}  // namespace kiln::arith
