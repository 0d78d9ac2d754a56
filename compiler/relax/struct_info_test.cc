#include "compiler/relax/struct_info.h"

#include "compiler/ir/printer.h"
#include "compiler/ir/structural.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::ir::relax {
namespace {

using ::testing::HasSubstr;

class StructInfoTest : public ::testing::Test {
 protected:
  PrimExpr C(int64_t v) { return IntImm(DataType::Int(64), v); }
  DataType f32 = DataType::Float(32);
  DataType i32 = DataType::Int(32);
  ir::Var n = MakeSizeVar("n"), m = MakeSizeVar("m");
  arith::Analyzer ana;
};

TEST_F(StructInfoTest, ObjectIsTheBaseOfEverything) {
  EXPECT_EQ(CheckBaseOf(ObjectSInfo(), TensorSInfo({n}, f32), &ana), BaseCheck::kPass);
  EXPECT_EQ(CheckBaseOf(nullptr, ShapeSInfo({n}), &ana), BaseCheck::kPass);
  // ... and a value known only as an Object needs a run-time check to be anything more.
  EXPECT_EQ(CheckBaseOf(TensorSInfo({n}, f32), ObjectSInfo(), &ana), BaseCheck::kLessSpecific);
}

TEST_F(StructInfoTest, TensorSubsumption) {
  EXPECT_EQ(CheckBaseOf(TensorSInfo({n, C(4)}, f32), TensorSInfo({n, C(4)}, f32), &ana),
            BaseCheck::kPass);
  // n*4 and 4*n are the same dimension.
  EXPECT_EQ(CheckBaseOf(TensorSInfo({n * 4}, f32), TensorSInfo({4 * n}, f32), &ana),
            BaseCheck::kPass);
  // Unknown rank or dtype in the derived side: less specific.
  EXPECT_EQ(CheckBaseOf(TensorSInfo({n}, f32), TensorSInfoUnknown(f32, -1), &ana),
            BaseCheck::kLessSpecific);
  EXPECT_EQ(CheckBaseOf(TensorSInfo({n}, f32), TensorSInfo({n}, DataType::Void()), &ana),
            BaseCheck::kLessSpecific);
  // A less specific base accepts more.
  EXPECT_EQ(CheckBaseOf(TensorSInfoUnknown(f32, 2), TensorSInfo({n, m}, f32), &ana),
            BaseCheck::kPass);
  EXPECT_EQ(CheckBaseOf(TensorSInfoUnknown(DataType::Void(), -1), TensorSInfo({n}, i32), &ana),
            BaseCheck::kPass);
  // Provably different: rank, dtype, constant dimension, or n vs n+1.
  EXPECT_EQ(CheckBaseOf(TensorSInfo({n}, f32), TensorSInfo({n, m}, f32), &ana), BaseCheck::kFail);
  EXPECT_EQ(CheckBaseOf(TensorSInfo({n}, f32), TensorSInfo({n}, i32), &ana), BaseCheck::kFail);
  EXPECT_EQ(CheckBaseOf(TensorSInfo({C(3)}, f32), TensorSInfo({C(4)}, f32), &ana),
            BaseCheck::kFail);
  EXPECT_EQ(CheckBaseOf(TensorSInfo({n}, f32), TensorSInfo({n + 1}, f32), &ana), BaseCheck::kFail);
  // n vs m: might be equal at run time.
  EXPECT_EQ(CheckBaseOf(TensorSInfo({n}, f32), TensorSInfo({m}, f32), &ana),
            BaseCheck::kUnprovable);
  // Different kinds never match.
  EXPECT_EQ(CheckBaseOf(TensorSInfo({n}, f32), ShapeSInfo({n}), &ana), BaseCheck::kFail);
}

TEST_F(StructInfoTest, ShapePrimTupleAndFunctionSubsumption) {
  EXPECT_EQ(CheckBaseOf(ShapeSInfoUnknown(2), ShapeSInfo({n, m}), &ana), BaseCheck::kPass);
  EXPECT_EQ(CheckBaseOf(ShapeSInfo({n, m}), ShapeSInfoUnknown(2), &ana), BaseCheck::kLessSpecific);
  EXPECT_EQ(CheckBaseOf(ShapeSInfoUnknown(3), ShapeSInfo({n, m}), &ana), BaseCheck::kFail);
  EXPECT_EQ(CheckBaseOf(PrimSInfo(i32), PrimSInfo(i32, IntImm(i32, 3)), &ana), BaseCheck::kPass);
  EXPECT_EQ(CheckBaseOf(PrimSInfo(i32), PrimSInfo(f32), &ana), BaseCheck::kFail);
  StructInfo pair = TupleSInfo({TensorSInfo({n}, f32), ShapeSInfo({n})});
  EXPECT_EQ(CheckBaseOf(pair, TupleSInfo({TensorSInfo({n}, f32), ShapeSInfo({n})}), &ana),
            BaseCheck::kPass);
  EXPECT_EQ(CheckBaseOf(pair, TupleSInfo({TensorSInfo({n}, f32)}), &ana), BaseCheck::kFail);
  EXPECT_EQ(CheckBaseOf(pair, TupleSInfo({TensorSInfoUnknown(f32), ShapeSInfo({n})}), &ana),
            BaseCheck::kLessSpecific);
  // A pure function type does not describe an impure function.
  StructInfo pure = FuncSInfo({TensorSInfo({n}, f32)}, TensorSInfo({n}, f32), true);
  StructInfo impure = FuncSInfo({TensorSInfo({n}, f32)}, TensorSInfo({n}, f32), false);
  EXPECT_EQ(CheckBaseOf(pure, impure, &ana), BaseCheck::kFail);
  EXPECT_EQ(CheckBaseOf(impure, pure, &ana), BaseCheck::kPass);
}

TEST_F(StructInfoTest, LeastUpperBound) {
  // Equal shapes survive, different ones keep only what both share.
  StructInfo a = TensorSInfo({n, C(4)}, f32);
  EXPECT_TRUE(StructuralEqual(StructInfoLCA(a, TensorSInfo({n, C(4)}, f32), &ana), a));
  EXPECT_EQ(ToString(StructInfoLCA(a, TensorSInfo({n, C(8)}, f32), &ana)),
            "R.Tensor(\"float32\", ndim=2)");
  EXPECT_EQ(ToString(StructInfoLCA(a, TensorSInfo({n}, i32), &ana)), "R.Tensor(\"void\", ndim=-1)");
  EXPECT_EQ(ToString(StructInfoLCA(a, ShapeSInfo({n}), &ana)), "R.Object");
  EXPECT_EQ(ToString(StructInfoLCA(TupleSInfo({a, ShapeSInfo({n})}),
                                   TupleSInfo({a, ShapeSInfo({m})}), &ana)),
            ToString(TupleSInfo({a, ShapeSInfoUnknown(1)})));
  EXPECT_EQ(ToString(StructInfoLCA(TupleSInfo({a}), TupleSInfo({a, a}), &ana)), "R.Object");
  EXPECT_EQ(
      ToString(StructInfoLCA(PrimSInfo(i32, IntImm(i32, 1)), PrimSInfo(i32, IntImm(i32, 2)), &ana)),
      "R.Prim(\"int32\")");
}

TEST_F(StructInfoTest, EraseDropsOutOfScopeShapeVariables) {
  auto only_n = [&](const ir::VarNode* v) { return v == n.get(); };
  auto no_vars = [](const VarNode*) { return false; };
  StructInfo both = TensorSInfo({n, m}, f32);
  EXPECT_EQ(ToString(EraseToWellDefined(both, only_n, no_vars)), "R.Tensor(\"float32\", ndim=2)");
  StructInfo just_n = TensorSInfo({n * 4}, f32);
  EXPECT_EQ(EraseToWellDefined(just_n, only_n, no_vars), just_n);  // unchanged: same node
  StructInfo tuple = TupleSInfo({just_n, ShapeSInfo({m}), PrimSInfo(DataType::Int(64), m)});
  EXPECT_EQ(ToString(EraseToWellDefined(tuple, only_n, no_vars)),
            ToString(TupleSInfo({just_n, ShapeSInfoUnknown(1), PrimSInfo(DataType::Int(64))})));
  // A tensor whose shape is an out-of-scope shape Var keeps that Var's known values.
  Var s = MakeVar("s", ShapeSInfo({n, C(2)}));
  StructInfo by_var = Make<TensorStructInfoNode>(s, f32, 2);
  EXPECT_EQ(ToString(EraseToWellDefined(by_var, only_n, no_vars)),
            ToString(TensorSInfo({n, C(2)}, f32)));
}

TEST_F(StructInfoTest, BindableShapeVariablesAreTheLoneOnes) {
  StructInfo sinfo = TupleSInfo({TensorSInfo({n, m * 2}, f32), ShapeSInfo({n + m})});
  std::vector<ir::Var> bindable = BindableShapeVars(sinfo);
  ASSERT_EQ(bindable.size(), 1u);
  EXPECT_EQ(bindable[0], n);
  EXPECT_EQ(ShapeVarsIn(sinfo).size(), 2u);
}

TEST_F(StructInfoTest, DeriveCallResultBindsTheCalleesShapeVariables) {
  // f(x: R.Tensor((p, 4)), y: R.Tensor((p,))) -> R.Tensor((p * 4,))
  ir::Var p = MakeSizeVar("p");
  auto func = Make<FuncStructInfoNode>(
      std::vector<StructInfo>{TensorSInfo({p, C(4)}, f32), TensorSInfo({p}, f32)},
      TensorSInfo({p * 4}, f32), true);
  absl::StatusOr<StructInfo> ret =
      DeriveCallResult(*func, {TensorSInfo({n, C(4)}, f32), TensorSInfo({n}, f32)}, "'f'", &ana);
  ASSERT_TRUE(ret.ok()) << ret.status();
  const auto* t = ret->as<TensorStructInfoNode>();
  ASSERT_NE(t, nullptr);
  ASSERT_NE(t->dims(), nullptr);
  EXPECT_TRUE(ana.CanProveEqual((*t->dims())[0], n * 4)) << ToString(*ret);

  absl::StatusOr<StructInfo> concrete = DeriveCallResult(
      *func, {TensorSInfo({C(8), C(4)}, f32), TensorSInfo({C(8)}, f32)}, "'f'", &ana);
  ASSERT_TRUE(concrete.ok());
  EXPECT_EQ(ToString(*concrete), "R.Tensor((32,), \"float32\")");

  // Inconsistent arguments: p is 8 from the first and 7 from the second.
  absl::StatusOr<StructInfo> bad = DeriveCallResult(
      *func, {TensorSInfo({C(8), C(4)}, f32), TensorSInfo({C(7)}, f32)}, "'f'", &ana);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("argument 1 of 'f'"));
  absl::StatusOr<StructInfo> vague =
      DeriveCallResult(*func, {TensorSInfoUnknown(f32, 2), TensorSInfo({n}, f32)}, "'f'", &ana);
  ASSERT_FALSE(vague.ok());
  EXPECT_THAT(vague.status().message(), HasSubstr("less specific; add an R.match_cast"));
  EXPECT_FALSE(DeriveCallResult(*func, {TensorSInfo({n}, f32)}, "'f'", &ana).ok());
}

}  // namespace
}  // namespace kiln::ir::relax
