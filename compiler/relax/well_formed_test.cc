// One failing program per well-formedness criterion of seeds/relax_spec.md (and per normal-form
// criterion), each checked for the rule, the place and the message.
#include "compiler/relax/well_formed.h"

#include "absl/strings/str_join.h"
#include "compiler/ir/testing/examples.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::ir::relax {
namespace {

using ::testing::HasSubstr;

class WellFormedTest : public ::testing::Test {
 protected:
  PrimExpr C(int64_t v) { return IntImm(DataType::Int(64), v); }
  Expr Exp(Expr a) { return MakeCall(GetOp("relax.exp"), {std::move(a)}); }
  Attrs Symbol(const std::string& name) {
    return WithAttr({}, "global_symbol", Make<ir::StringImmNode>(name));
  }
  // A module whose only (externally visible) function is `main`.
  IRModule Main(std::vector<Var> params, std::vector<BindingBlock> blocks, Expr body,
                StructInfo ret = nullptr, bool pure = true, Attrs extra = {}) {
    Attrs attrs = Symbol("main");
    for (auto& [key, value] : extra) attrs = WithAttr(attrs, key, value);
    IRModuleBuilder b;
    EXPECT_TRUE(b.Add(main_gv, MakeFunction(std::move(params), MakeSeq(std::move(blocks), body),
                                            ret, pure, attrs))
                    .ok());
    return b.Build();
  }
  std::string All(const std::vector<WellFormedViolation>& vs) {
    std::vector<std::string> lines;
    for (const auto& v : vs) lines.push_back(v.ToString());
    return absl::StrJoin(lines, "\n");
  }
  // Expects a violation of `rule` whose message contains `text`, in `binding` if given.
  void Expect(const IRModule& mod, const std::string& rule, const std::string& text,
              const std::string& binding = "") {
    std::vector<WellFormedViolation> vs = FindWellFormedViolations(mod);
    for (const WellFormedViolation& v : vs) {
      if (v.rule == rule && v.message.find(text) != std::string::npos &&
          (binding.empty() || v.binding == binding)) {
        return;
      }
    }
    ADD_FAILURE() << "no " << rule << " violation with \"" << text << "\""
                  << (binding.empty() ? "" : " in binding '" + binding + "'") << "; got:\n"
                  << All(vs);
  }

  DataType f32 = DataType::Float(32);
  ir::Var n = MakeSizeVar("n"), k = MakeSizeVar("k");
  Var x = MakeVar("x", TensorSInfo({n}, f32));
  GlobalVar main_gv = MakeGlobalVar("main");
};

TEST_F(WellFormedTest, ExamplesAreWellFormed) {
  EXPECT_TRUE(CheckWellFormed(testing::SmallRelaxModule()).ok())
      << CheckWellFormed(testing::SmallRelaxModule());
  EXPECT_TRUE(CheckWellFormed(testing::ChainModule(10)).ok())
      << CheckWellFormed(testing::ChainModule(10));
}

TEST_F(WellFormedTest, WF1DataflowVarBoundOutsideDataflowBlock) {
  Var lv = MakeDataflowVar("lv", nullptr);
  Expect(Main({x}, {MakeBlock({MakeBinding(lv, Exp(x))})}, x), "WF1",
         "DataflowVar 'lv' is bound outside a dataflow block", "lv");
}

TEST_F(WellFormedTest, WF1DataflowVarUsedOutsideItsBlock) {
  Var lv = MakeDataflowVar("lv", nullptr);
  Expect(Main({x}, {MakeDataflowBlock({MakeBinding(lv, Exp(x))})}, lv), "WF1",
         "DataflowVar 'lv' is used outside the dataflow block that defines it");
}

TEST_F(WellFormedTest, WF2VariableBoundTwice) {
  Var y = MakeVar("y", nullptr);
  Expect(Main({x}, {MakeBlock({MakeBinding(y, Exp(x)), MakeBinding(y, Exp(x))})}, y), "WF2",
         "variable 'y' is bound more than once", "y");
}

TEST_F(WellFormedTest, WF2VariableNeverBound) {
  Expect(Main({x}, {}, MakeVar("ghost", nullptr)), "WF2",
         "variable 'ghost' is neither a parameter nor bound by any binding");
}

TEST_F(WellFormedTest, WF2VariableUsedInItsOwnBinding) {
  Var y = MakeVar("y", nullptr);
  Expect(Main({x}, {MakeBlock({MakeBinding(y, Exp(y))})}, y), "WF2",
         "variable 'y' is used in its own binding", "y");
}

TEST_F(WellFormedTest, WF3VariableUsedBeforeItsBinding) {
  Var a = MakeVar("a", nullptr), b = MakeVar("b", nullptr);
  Expect(Main({x}, {MakeBlock({MakeBinding(a, Exp(b)), MakeBinding(b, Exp(x))})}, a), "WF3",
         "variable 'b' is used before it is bound", "a");
}

TEST_F(WellFormedTest, WF4ReturnAnnotationUsesUnboundShapeVariable) {
  Expect(Main({x}, {}, x, TensorSInfo({k}, f32)), "WF4",
         "the return annotation uses shape variable 'k'");
}

TEST_F(WellFormedTest, WF5ShapeExpressionUsesUnboundShapeVariable) {
  Var s = MakeVar("s", nullptr);
  Expect(Main({x}, {MakeBlock({MakeBinding(s, MakeShape({k * 2}))})}, s), "WF5",
         "shape variable 'k' in a shape expression is used before it is bound", "s");
}

TEST_F(WellFormedTest, WF6SignatureShapeVariableNeverInBindingPosition) {
  Var a = MakeVar("a", TensorSInfo({n * 2}, f32));
  Expect(Main({a}, {}, a), "WF6",
         "shape variable 'n' of parameter 'a' never appears in a binding position");
  // Any order is fine as long as the variable is bound somewhere in the signature.
  Var b = MakeVar("b", TensorSInfo({n}, f32));
  EXPECT_TRUE(CheckWellFormed(Main({a, b}, {}, a)).ok()) << CheckWellFormed(Main({a, b}, {}, a));
}

TEST_F(WellFormedTest, WF7IfInsideDataflowBlock) {
  Var c = MakeVar("c", PrimSInfo(DataType::Bool()));
  Var y = MakeVar("y", nullptr);
  Expr branch = MakeSeq({}, x);
  Expect(Main({c, x}, {MakeDataflowBlock({MakeBinding(y, Make<IfNode>(c, branch, branch))})}, y),
         "WF7", "an If inside a dataflow block", "y");
}

TEST_F(WellFormedTest, WF7RecursiveCallInsideDataflowBlock) {
  Var y = MakeVar("y", nullptr);
  Expect(
      Main({x}, {MakeDataflowBlock({MakeBinding(y, MakeCall(main_gv, {x}))})}, y, x->struct_info()),
      "WF7", "recursive call to 'main' inside a dataflow block", "y");
}

TEST_F(WellFormedTest, WF7MutuallyRecursiveCallInsideDataflowBlock) {
  GlobalVar other = MakeGlobalVar("other");
  Var y = MakeVar("y", nullptr), z = MakeVar("z", nullptr);
  Var p = MakeVar("p", TensorSInfo({n}, f32));
  IRModuleBuilder b;
  ASSERT_TRUE(
      b.Add(main_gv,
            MakeFunction({x},
                         MakeSeq({MakeDataflowBlock({MakeBinding(y, MakeCall(other, {x}))})}, y),
                         x->struct_info(), true, Symbol("main")))
          .ok());
  ASSERT_TRUE(
      b.Add(other,
            MakeFunction({p}, MakeSeq({MakeBlock({MakeBinding(z, MakeCall(main_gv, {p}))})}, z),
                         p->struct_info()))
          .ok());
  Expect(b.Build(), "WF7", "call to 'other', which is mutually recursive with 'main'", "y");
}

TEST_F(WellFormedTest, WF7ImpureCallInsideDataflowBlock) {
  Var y = MakeVar("y", nullptr);
  Expect(Main({x}, {MakeDataflowBlock({MakeBinding(y, MakeCall(GetOp("relax.print"), {x}))})}, x),
         "WF7", "impure operator 'relax.print' inside a dataflow block", "y");
}

TEST_F(WellFormedTest, WF8RecursionNeedsReturnAnnotation) {
  Var y = MakeVar("y", nullptr);
  Expect(Main({x}, {MakeBlock({MakeBinding(y, MakeCall(main_gv, {x}))})}, y), "WF8",
         "recursive but has no return StructInfo annotation");
}

TEST_F(WellFormedTest, WF9OperatorOutsideCallee) {
  Var t = MakeVar("t", nullptr);
  Expect(Main({x}, {MakeBlock({MakeBinding(t, MakeTuple({x, GetOp("relax.exp")}))})}, t), "WF9",
         "operator 'relax.exp' appears outside the callee of a call", "t");
}

TEST_F(WellFormedTest, WF10AnnotationNdimMismatch) {
  Var a = MakeVar("a", Make<TensorStructInfoNode>(MakeShape({n, n}), f32, 3));
  Expect(Main({a}, {}, a), "WF10", "has ndim 3 but a shape of 2 dimensions");
  Var s = MakeVar("s", Make<ShapeStructInfoNode>(1, std::vector<PrimExpr>{n, n}));
  Expect(Main({s}, {}, s), "WF10", "R.Shape in parameter 's' has ndim 1 but 2 values");
}

TEST_F(WellFormedTest, WF11LocalFunctionCapturesDataflowVar) {
  Var lv = MakeDataflowVar("lv", nullptr);
  Var f = MakeVar("f", nullptr);
  Var gv = MakeVar("gv", nullptr);
  Function local = MakeFunction({}, MakeSeq({}, lv));
  Expect(Main({x},
              {MakeDataflowBlock(
                  {MakeBinding(lv, Exp(x)), MakeBinding(f, local), MakeBinding(gv, lv)})},
              gv),
         "WF11", "local function uses DataflowVar 'lv' of the enclosing dataflow block");
}

TEST_F(WellFormedTest, WF12ModuleWithoutEntryPoint) {
  IRModuleBuilder b;
  ASSERT_TRUE(b.Add(main_gv, MakeFunction({x}, MakeSeq({}, x))).ok());
  Expect(b.Build(), "WF12", "no function has a global_symbol");
}

TEST_F(WellFormedTest, WF13GlobalSymbolDiffersFromName) {
  IRModuleBuilder b;
  ASSERT_TRUE(
      b.Add(main_gv, MakeFunction({x}, MakeSeq({}, x), nullptr, true, Symbol("entry"))).ok());
  Expect(b.Build(), "WF13", "global_symbol 'entry' differs from the function's name 'main'");
}

TEST_F(WellFormedTest, WF14TensorShapeMustBeShapeExprOrVarInScope) {
  Var a = MakeVar("a", Make<TensorStructInfoNode>(MakeTuple({}), f32, 0));
  Expect(Main({a}, {}, a), "WF14", "only a ShapeExpr or a Var is allowed");
  Var s = MakeVar("s", ShapeSInfo({n}));
  Var b = MakeVar("b", Make<TensorStructInfoNode>(s, f32, 1));
  Expect(Main({x, b}, {}, b), "WF14", "uses shape variable 's', which is not in scope");
  Var y = MakeVar("y", nullptr);
  // 2*k is not a binding position even in a match_cast.
  Expect(Main({x}, {MakeBlock({MakeMatchCast(y, x, TensorSInfo({k * 2}, f32))})}, y), "WF14",
         "shape variable 'k' in the match_cast target is used before it is bound", "y");
}

TEST_F(WellFormedTest, WF15ShapeAnnotationUsesUnboundVariable) {
  Var s = MakeVar("s", ShapeSInfo({k}));
  Expect(Main({x}, {MakeBlock({MakeBinding(s, MakeShape({n}))})}, s), "WF15",
         "shape variable 'k' in the annotation of 's' is used before it is bound", "s");
}

TEST_F(WellFormedTest, WF16PrimAnnotationUsesUnboundVariable) {
  Var p = MakeVar("p", PrimSInfo(DataType::Int(64), k));
  Expect(Main({x}, {MakeBlock({MakeBinding(p, Make<PrimValueNode>(C(1)))})}, p), "WF16",
         "shape variable 'k' in the annotation of 'p' is used before it is bound", "p");
}

TEST_F(WellFormedTest, WF17CallableNeedsExactlyOneOfParamsAndDeriveFunc) {
  Var both = MakeVar("both", Make<FuncStructInfoNode>(std::vector<StructInfo>{}, ObjectSInfo(),
                                                      true, "my.derive"));
  Expect(Main({both}, {}, both), "WF17", "defines both params and derive_func");
  Var neither = MakeVar("neither", Make<FuncStructInfoNode>(std::nullopt, ObjectSInfo(), true, ""));
  Expect(Main({neither}, {}, neither), "WF17", "defines neither params nor derive_func");
}

TEST_F(WellFormedTest, WF18PrimValueMustBeAnImmediate) {
  Var p = MakeVar("p", nullptr);
  Expect(Main({x}, {MakeBlock({MakeBinding(p, Make<PrimValueNode>(n))})}, p), "WF18",
         "a PrimValue must hold an IntImm or FloatImm", "p");
}

TEST_F(WellFormedTest, WF19PrimAnnotationDtype) {
  Var h = MakeVar("h", PrimSInfo(DataType::Handle()));
  Expect(Main({h}, {}, h), "WF19", "has dtype handle; only int, uint and float are allowed");
}

TEST_F(WellFormedTest, WF20DataTypeBitsAndLanes) {
  Var a = MakeVar("a", TensorSInfo({n}, DataType::Int(7)));
  Expect(Main({a}, {}, a), "WF20", "the R.Tensor dtype int7 is not a Relax scalar type");
  Var b = MakeVar("b", TensorSInfo({n}, DataType::Float(32, 4)));
  Expect(Main({b}, {}, b), "WF20", "the R.Tensor dtype float32x4 is not a Relax scalar type");
}

TEST_F(WellFormedTest, WF21ForcePureRequiresIsPure) {
  Expect(Main({x}, {}, x, nullptr, /*pure=*/false,
              WithAttr({}, "relax.force_pure", IntImm(DataType::Bool(), 1))),
         "WF21", "relax.force_pure but is_pure is false");
}

TEST_F(WellFormedTest, WF22PrimValueDtypeMatchesAnnotation) {
  Var p = MakeVar("p", PrimSInfo(DataType::Int(64), IntImm(DataType::Int(32), 3)));
  Expect(Main({p}, {}, p), "WF22", "has dtype int64 but its value is int32");
}

TEST_F(WellFormedTest, NF1NestedNonLeafArgument) {
  Var y = MakeVar("y", nullptr);
  Expect(Main({x}, {MakeBlock({MakeBinding(y, Exp(Exp(x)))})}, y), "NF1",
         "the call argument is a nested RelaxCall", "y");
  Expect(Main({x}, {}, Exp(x)), "NF1", "the body of a SeqExpr is a RelaxCall, not a leaf");
}

TEST_F(WellFormedTest, NF2SeqExprAsBindingValue) {
  Var y = MakeVar("y", nullptr);
  Expect(Main({x}, {MakeBlock({MakeBinding(y, MakeSeq({}, x))})}, y), "NF2",
         "a SeqExpr as a binding value", "y");
}

TEST_F(WellFormedTest, NF3BodiesAndBranchesAreSeqExprs) {
  IRModuleBuilder b;
  ASSERT_TRUE(b.Add(main_gv, MakeFunction({x}, x, nullptr, true, Symbol("main"))).ok());
  Expect(b.Build(), "NF3", "the function body is not a SeqExpr");
  Var c = MakeVar("c", PrimSInfo(DataType::Bool()));
  Var y = MakeVar("y", nullptr);
  Expect(Main({c, x}, {MakeBlock({MakeBinding(y, Make<IfNode>(c, x, x))})}, y), "NF3",
         "an If branch is not a SeqExpr", "y");
}

TEST_F(WellFormedTest, NF4BlocksAreConsolidated) {
  Var y = MakeVar("y", nullptr), z = MakeVar("z", nullptr);
  Expect(Main({x}, {MakeBlock({})}, x), "NF4", "an empty binding block");
  Expect(Main({x}, {MakeBlock({MakeBinding(y, Exp(x))}), MakeBlock({MakeBinding(z, Exp(y))})}, z),
         "NF4", "adjacent binding blocks of the same kind are not consolidated");
  // Normal form checks are optional.
  WellFormedOptions lenient;
  lenient.check_normal_form = false;
  EXPECT_TRUE(CheckWellFormed(Main({x}, {MakeBlock({})}, x), lenient).ok());
}

TEST_F(WellFormedTest, ReportsEveryViolation) {
  Var lv = MakeDataflowVar("lv", nullptr);
  Var a = MakeVar("a", nullptr), b = MakeVar("b", nullptr);
  IRModule mod = Main(
      {x}, {MakeBlock({MakeBinding(lv, Exp(x)), MakeBinding(a, Exp(b)), MakeBinding(b, Exp(x))})},
      a);
  absl::Status status = CheckWellFormed(mod);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("(2 violations)"));
  EXPECT_THAT(status.message(),
              HasSubstr("[WF1] in function 'main', binding 'lv': DataflowVar 'lv' is bound "
                        "outside a dataflow block"));
  EXPECT_THAT(status.message(),
              HasSubstr("[WF3] in function 'main', binding 'a': variable 'b' is used before it "
                        "is bound"));
}

}  // namespace
}  // namespace kiln::ir::relax
