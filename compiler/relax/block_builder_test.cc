#include "compiler/relax/block_builder.h"

#include "compiler/ir/printer.h"
#include "compiler/ir/structural.h"
#include "compiler/ir/testing/examples.h"
#include "compiler/relax/struct_info.h"
#include "compiler/relax/well_formed.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::ir::relax {
namespace {

using ::testing::HasSubstr;

class BlockBuilderTest : public ::testing::Test {
 protected:
  PrimExpr C(int64_t v) { return IntImm(DataType::Int(64), v); }
  Expr Op(const char* name, std::vector<Expr> args) {
    return MakeCall(GetOp(name), std::move(args));
  }
  // The dimensions of a tensor StructInfo (fails the test when they are unknown).
  std::vector<PrimExpr> Dims(const StructInfo& sinfo) {
    const auto* t = sinfo.as<TensorStructInfoNode>();
    EXPECT_NE(t, nullptr) << ToString(sinfo);
    if (t == nullptr || t->dims() == nullptr) {
      ADD_FAILURE() << "no known shape: " << ToString(sinfo);
      return {};
    }
    return *t->dims();
  }
  void ExpectDims(const StructInfo& sinfo, const std::vector<PrimExpr>& expected) {
    std::vector<PrimExpr> dims = Dims(sinfo);
    ASSERT_EQ(dims.size(), expected.size()) << ToString(sinfo);
    for (size_t i = 0; i < dims.size(); ++i) {
      EXPECT_TRUE(ana.CanProveEqual(dims[i], expected[i]))
          << "dim " << i << " of " << ToString(sinfo) << " vs " << DebugPrint(expected[i]);
    }
  }
  IRModule ModuleWith(const Function& main) {
    IRModuleBuilder b;
    Function f =
        MakeFunction(main->params, main->body, main->ret_struct_info, main->is_pure,
                     WithAttr(main->attrs, "global_symbol", Make<ir::StringImmNode>("main")));
    EXPECT_TRUE(b.Add(MakeGlobalVar("main"), f).ok());
    return b.Build();
  }

  DataType f32 = DataType::Float(32);
  ir::Var n = MakeSizeVar("n"), m = MakeSizeVar("m"), k = MakeSizeVar("k");
  arith::Analyzer ana;
};

TEST_F(BlockBuilderTest, FlattenOfSymbolicShapeIsTheProduct) {
  BlockBuilder bb;
  Var x = MakeVar("x", TensorSInfo({n, C(4)}, f32));
  bb.BeginFunction("f", {x});
  bb.BeginDataflowBlock();
  absl::StatusOr<Var> flat = bb.Emit(Op("relax.flatten", {x}), "flat");
  ASSERT_TRUE(flat.ok()) << flat.status();
  EXPECT_TRUE((*flat)->is_dataflow());
  ExpectDims((*flat)->struct_info(), {n * 4});
  absl::StatusOr<Var> out = bb.EmitOutput(*flat, "out");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FALSE((*out)->is_dataflow());
  ASSERT_TRUE(bb.EndBlock().ok());
  absl::StatusOr<Function> f = bb.EndFunction(*out);
  ASSERT_TRUE(f.ok()) << f.status();
  const auto* fsinfo = (*f)->struct_info().as<FuncStructInfoNode>();
  ASSERT_NE(fsinfo, nullptr);
  ExpectDims(fsinfo->ret, {n * 4});
  EXPECT_TRUE(CheckWellFormed(ModuleWith(*f)).ok());
}

TEST_F(BlockBuilderTest, BroadcastReshapeAndShapeOf) {
  BlockBuilder bb;
  Var x = MakeVar("x", TensorSInfo({n, C(1), C(4)}, f32));
  Var y = MakeVar("y", TensorSInfo({C(3), C(1)}, f32));
  bb.BeginFunction("f", {x, y});
  bb.BeginDataflowBlock();
  absl::StatusOr<Var> sum = bb.Emit(Op("relax.add", {x, y}));
  ASSERT_TRUE(sum.ok()) << sum.status();
  ExpectDims((*sum)->struct_info(), {n, C(3), C(4)});
  absl::StatusOr<Var> reshaped = bb.Emit(Op("relax.reshape", {*sum, MakeShape({n * 6, C(2)})}));
  ASSERT_TRUE(reshaped.ok()) << reshaped.status();
  ExpectDims((*reshaped)->struct_info(), {n * 6, C(2)});
  absl::StatusOr<Var> shape = bb.Emit(Op("relax.shape_of", {*reshaped}));
  ASSERT_TRUE(shape.ok()) << shape.status();
  const auto* s = (*shape)->struct_info().as<ShapeStructInfoNode>();
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->ndim, 2);
  // Reshaping 3 elements into 4 is provably wrong. (12n into 5n is not: n may be 0.)
  absl::StatusOr<Var> bad = bb.Emit(Op("relax.reshape", {y, MakeShape({C(4)})}), "bad");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("in function 'f', binding 'bad'"));
  EXPECT_THAT(bad.status().message(), HasSubstr("cannot reshape"));
}

TEST_F(BlockBuilderTest, NestedCallsAreBoundLeftToRight) {
  BlockBuilder bb;
  Var x = MakeVar("x", TensorSInfo({n}, f32));
  // The body is a bare nested expression: it must become a SeqExpr of bindings.
  Expr nested = Op("relax.add", {Op("relax.exp", {x}), Op("relax.negative", {x})});
  absl::StatusOr<Function> f = bb.NormalizeFunction(MakeFunction({x}, nested), "f");
  ASSERT_TRUE(f.ok()) << f.status();
  const auto* seq = (*f)->body.as<SeqExprNode>();
  ASSERT_NE(seq, nullptr);
  ASSERT_EQ(seq->blocks.size(), 1u);
  const std::vector<Binding>& bindings = seq->blocks[0]->bindings;
  ASSERT_EQ(bindings.size(), 3u);
  EXPECT_EQ(bindings[0]->value.as<CallNode>()->op, GetOp("relax.exp"));
  EXPECT_EQ(bindings[1]->value.as<CallNode>()->op, GetOp("relax.negative"));
  const auto* add = bindings[2]->value.as<CallNode>();
  EXPECT_EQ(add->args[0], Expr(bindings[0]->var));
  EXPECT_EQ(add->args[1], Expr(bindings[1]->var));
  EXPECT_EQ(seq->body, Expr(bindings[2]->var));
  ExpectDims(seq->body->struct_info(), {n});
  EXPECT_TRUE(CheckWellFormed(ModuleWith(*f)).ok()) << CheckWellFormed(ModuleWith(*f));
}

TEST_F(BlockBuilderTest, SeqExprInBindingIsFlattenedAndBlocksConsolidated) {
  Var x = MakeVar("x", TensorSInfo({n}, f32));
  Var a = MakeVar("a", nullptr), b = MakeVar("b", nullptr), c = MakeVar("c", nullptr);
  Expr inner = MakeSeq({MakeBlock({MakeBinding(a, Op("relax.exp", {x}))})}, a);
  Expr body = MakeSeq({MakeBlock({MakeBinding(b, inner)}), MakeBlock({}),
                       MakeBlock({MakeBinding(c, Op("relax.add", {b, x}))})},
                      c);
  BlockBuilder bb;
  absl::StatusOr<Function> f = bb.NormalizeFunction(MakeFunction({x}, body), "f");
  ASSERT_TRUE(f.ok()) << f.status();
  const auto* seq = (*f)->body.as<SeqExprNode>();
  ASSERT_EQ(seq->blocks.size(), 1u);  // three blocks, one empty, consolidated into one
  ASSERT_EQ(seq->blocks[0]->bindings.size(), 3u);
  EXPECT_EQ(seq->blocks[0]->bindings[0]->var, a);  // flattened out of the nested SeqExpr
  EXPECT_EQ(seq->blocks[0]->bindings[1]->value, Expr(a));
  EXPECT_TRUE(CheckWellFormed(ModuleWith(*f)).ok()) << CheckWellFormed(ModuleWith(*f));
}

TEST_F(BlockBuilderTest, MatchCastBindsShapeVariablesScopedToTheSeqExpr) {
  BlockBuilder bb;
  Var x = MakeVar("x", TensorSInfoUnknown(f32, 2));
  bb.BeginFunction("f", {x});
  bb.BeginBindingBlock();
  absl::StatusOr<Var> cast = bb.EmitMatchCast(x, TensorSInfo({m, k}, f32), "cast");
  ASSERT_TRUE(cast.ok()) << cast.status();
  absl::StatusOr<Var> flat = bb.Emit(Op("relax.flatten", {*cast}), "flat");
  ASSERT_TRUE(flat.ok()) << flat.status();
  ExpectDims((*flat)->struct_info(), {m * k});
  ASSERT_TRUE(bb.EndBlock().ok());
  absl::StatusOr<Function> f = bb.EndFunction(*flat);
  ASSERT_TRUE(f.ok()) << f.status();
  // m and k are bound inside the body: the signature cannot mention them.
  const auto* fsinfo = (*f)->struct_info().as<FuncStructInfoNode>();
  EXPECT_EQ(ToString(fsinfo->ret), "R.Tensor(\"float32\", ndim=1)");
  EXPECT_TRUE(CheckWellFormed(ModuleWith(*f)).ok()) << CheckWellFormed(ModuleWith(*f));

  // A cast that can never succeed is a compile-time error.
  BlockBuilder bb2;
  bb2.BeginFunction("g", {x});
  bb2.BeginBindingBlock();
  absl::StatusOr<Var> never = bb2.EmitMatchCast(x, TensorSInfo({m}, f32), "never");
  ASSERT_FALSE(never.ok());
  EXPECT_THAT(never.status().message(), HasSubstr("match_cast can never succeed"));
}

TEST_F(BlockBuilderTest, SmallModuleInfersThroughCallTirTuplesMatchCastAndIf) {
  absl::StatusOr<IRModule> mod = NormalizeModule(testing::SmallRelaxModule());
  ASSERT_TRUE(mod.ok()) << mod.status();
  const auto* main = (*mod)->Lookup("main").as<FunctionNode>();
  const auto* seq = main->body.as<SeqExprNode>();
  ASSERT_EQ(seq->blocks.size(), 2u);
  ir::Var n_param = Dims(main->params[0]->struct_info())[0].as_ref<ir::VarNode>();
  const std::vector<Binding>& df = seq->blocks[0]->bindings;
  ExpectDims(df[0]->var->struct_info(), {n_param, C(4)});  // call_tir output
  ExpectDims(df[1]->var->struct_info(), {n_param * 4});    // flatten: (n, 4) -> (n*4,)
  const std::vector<Binding>& tail = seq->blocks[1]->bindings;
  const auto* tuple = tail[0]->var->struct_info().as<TupleStructInfoNode>();
  ASSERT_NE(tuple, nullptr);
  ASSERT_EQ(tuple->fields.size(), 6u);
  EXPECT_EQ(ToString(tuple->fields[1]), ToString(ShapeSInfo({n_param, C(4)})));
  EXPECT_EQ(ToString(tuple->fields[2]), "R.Prim(value=3)");
  EXPECT_TRUE(StructuralEqual(tail[1]->var->struct_info(), tuple->fields[0]));  // TupleGetItem
  // The If joins two branches of R.Tensor((m,)); m is bound by the match_cast in main's body,
  // so main's signature only keeps the rank.
  const Var& res = tail.back()->var;
  EXPECT_EQ(ToString(res->struct_info()), ToString(tail[2]->var->struct_info()));
  const auto* fsinfo = main->struct_info().as<FuncStructInfoNode>();
  EXPECT_EQ(ToString(fsinfo->ret), "R.Tensor(\"float32\", ndim=1)");
  EXPECT_FALSE(fsinfo->purity);
  EXPECT_TRUE(CheckWellFormed(*mod).ok()) << CheckWellFormed(*mod);
}

TEST_F(BlockBuilderTest, IfJoinsBranchStructInfo) {
  Var c = MakeVar("c", PrimSInfo(DataType::Bool()));
  Var x = MakeVar("x", TensorSInfo({n, C(4)}, f32));
  Var y = MakeVar("y", TensorSInfo({n, C(8)}, f32));
  auto join = [&](Expr t, Expr f) -> StructInfo {
    BlockBuilder bb;
    Var r = MakeVar("r", nullptr);
    Function fn =
        MakeFunction({c, x, y}, MakeSeq({MakeBlock({MakeBinding(r, Make<IfNode>(c, t, f))})}, r));
    absl::StatusOr<Function> out = bb.NormalizeFunction(fn, "f");
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? r->struct_info() : nullptr;
  };
  EXPECT_EQ(ToString(join(x, x)), ToString(x->struct_info()));
  EXPECT_EQ(ToString(join(x, y)), "R.Tensor(\"float32\", ndim=2)");
  EXPECT_EQ(ToString(join(x, MakeShape({n}))), "R.Object");
}

TEST_F(BlockBuilderTest, CallsToGlobalFunctionsSubstituteShapes) {
  // f(a: R.Tensor((p, 4))) -> R.Tensor((p * 4,)); main(x: R.Tensor((8, 4))) = f(x)
  ir::Var p = MakeSizeVar("p");
  Var a = MakeVar("a", TensorSInfo({p, C(4)}, f32));
  Function f = MakeFunction({a}, Op("relax.flatten", {a}), TensorSInfo({p * 4}, f32));
  Var x = MakeVar("x", TensorSInfo({C(8), C(4)}, f32));
  GlobalVar gf = MakeGlobalVar("f");
  Var y = MakeVar("y", nullptr);
  Function main =
      MakeFunction({x}, MakeSeq({MakeBlock({MakeBinding(y, MakeCall(gf, {x}))})}, y), nullptr, true,
                   WithAttr({}, "global_symbol", Make<ir::StringImmNode>("main")));
  IRModuleBuilder builder;
  ASSERT_TRUE(builder.Add(gf, f).ok());
  ASSERT_TRUE(builder.Add(MakeGlobalVar("main"), main).ok());
  absl::StatusOr<IRModule> mod = NormalizeModule(builder.Build());
  ASSERT_TRUE(mod.ok()) << mod.status();
  EXPECT_EQ(ToString(y->struct_info()), "R.Tensor((32,), \"float32\")");
  EXPECT_TRUE(CheckWellFormed(*mod).ok()) << CheckWellFormed(*mod);

  // A wrong argument names the callee and the argument.
  Var z = MakeVar("z", TensorSInfo({C(8)}, f32));
  Var w = MakeVar("w", nullptr);
  Function bad = MakeFunction({z}, MakeSeq({MakeBlock({MakeBinding(w, MakeCall(gf, {z}))})}, w));
  IRModuleBuilder builder2;
  ASSERT_TRUE(builder2.Add(gf, f).ok());
  ASSERT_TRUE(builder2.Add(MakeGlobalVar("main"), bad).ok());
  absl::StatusOr<IRModule> failed = NormalizeModule(builder2.Build());
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(failed.status().message(), HasSubstr("in function 'main', binding 'w'"));
  EXPECT_THAT(failed.status().message(), HasSubstr("argument 0 of 'f'"));
}

TEST_F(BlockBuilderTest, CalleesWithoutReturnAnnotationAreInferredFirst) {
  // main calls helper (defined under a later name, with no return annotation).
  Var a = MakeVar("a", TensorSInfo({n}, f32));
  Function helper = MakeFunction({a}, Op("relax.exp", {a}));
  GlobalVar gh = MakeGlobalVar("zz_helper");
  Var x = MakeVar("x", TensorSInfo({C(5)}, f32));
  Var y = MakeVar("y", nullptr);
  Function main = MakeFunction({x}, MakeSeq({MakeBlock({MakeBinding(y, MakeCall(gh, {x}))})}, y));
  IRModuleBuilder builder;
  ASSERT_TRUE(builder.Add(gh, helper).ok());
  ASSERT_TRUE(builder.Add(MakeGlobalVar("main"), main).ok());
  absl::StatusOr<IRModule> mod = NormalizeModule(builder.Build());
  ASSERT_TRUE(mod.ok()) << mod.status();
  EXPECT_EQ(ToString(y->struct_info()), "R.Tensor((5,), \"float32\")");

  // Recursion without a return annotation cannot be typed.
  Var b = MakeVar("b", TensorSInfo({n}, f32));
  Var r = MakeVar("r", nullptr);
  GlobalVar gr = MakeGlobalVar("rec");
  Function rec = MakeFunction({b}, MakeSeq({MakeBlock({MakeBinding(r, MakeCall(gr, {b}))})}, r));
  IRModuleBuilder builder2;
  ASSERT_TRUE(builder2.Add(gr, rec).ok());
  absl::StatusOr<IRModule> failed = NormalizeModule(builder2.Build());
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(failed.status().message(), HasSubstr("needs a return StructInfo annotation"));
}

TEST_F(BlockBuilderTest, NormalizingNormalCodeKeepsIdentity) {
  absl::StatusOr<IRModule> once = NormalizeModule(testing::ChainModule(20));
  ASSERT_TRUE(once.ok()) << once.status();
  absl::StatusOr<IRModule> twice = NormalizeModule(*once);
  ASSERT_TRUE(twice.ok());
  EXPECT_EQ(*twice, *once);
  // An already-normal input keeps its function nodes.
  IRModule chain = testing::ChainModule(5);
  absl::StatusOr<IRModule> normalized = NormalizeModule(chain);
  ASSERT_TRUE(normalized.ok());
  EXPECT_EQ((*normalized)->Lookup("main"), chain->Lookup("main"));
  EXPECT_TRUE(CheckWellFormed(*normalized).ok()) << CheckWellFormed(*normalized);
}

TEST_F(BlockBuilderTest, ErrorsNameTheFunctionAndBinding) {
  Var x = MakeVar("x", TensorSInfo({n}, f32));
  Var i = MakeVar("i", TensorSInfo({n}, DataType::Int(32)));
  auto normalize = [&](std::vector<Binding> bindings, bool dataflow = false) {
    Expr body = bindings.back()->var;
    BindingBlock block =
        dataflow ? MakeDataflowBlock(std::move(bindings)) : MakeBlock(std::move(bindings));
    BlockBuilder bb;
    return bb.NormalizeFunction(MakeFunction({x, i}, MakeSeq({block}, body)), "main").status();
  };
  Var v = MakeVar("v", nullptr);
  absl::Status s = normalize({MakeBinding(v, Op("relax.add", {x, i}))});
  EXPECT_THAT(s.message(), HasSubstr("in function 'main', binding 'v': relax.add: operand dtypes "
                                     "differ (float32 vs int32)"));
  s = normalize({MakeBinding(MakeVar("u", nullptr), Op("relax.not_an_op", {x}))});
  EXPECT_THAT(s.message(), HasSubstr("binding 'u': unknown operator 'relax.not_an_op'"));
  s = normalize({MakeBinding(MakeVar("p", nullptr), Op("relax.print", {x}))}, true);
  EXPECT_THAT(s.message(), HasSubstr("impure call to relax.print inside a dataflow block"));
  s = normalize({MakeBinding(MakeVar("t", nullptr), Make<TupleGetItemNode>(MakeTuple({x}), 2))});
  EXPECT_THAT(s.message(), HasSubstr("index 2 is out of range for a tuple of 1 fields"));
  s = normalize({MakeBinding(MakeVar("a", TensorSInfo({n, n}, f32)), Op("relax.exp", {x}))});
  EXPECT_THAT(s.message(), HasSubstr("binding 'a': the annotation R.Tensor((n, n), \"float32\") "
                                     "does not match"));
  s = normalize({MakeBinding(MakeVar("o", nullptr), MakeTuple({GetOp("relax.exp")}))});
  EXPECT_THAT(s.message(), HasSubstr("operator 'relax.exp' used as a value"));
  s = normalize({MakeBinding(MakeVar("c", nullptr), MakeCall(x, {x}))});
  EXPECT_THAT(s.message(), HasSubstr("callee 'x' is not a function"));
  s = normalize(
      {MakeBinding(MakeVar("u2", nullptr), Op("relax.flatten", {MakeVar("ghost", nullptr)}))});
  EXPECT_THAT(s.message(), HasSubstr("variable 'ghost' is used but has no StructInfo"));
  BlockBuilder bb;
  s = bb.NormalizeFunction(MakeFunction({MakeVar("q", nullptr)}, x), "main").status();
  EXPECT_THAT(s.message(), HasSubstr("in function 'main': parameter 'q' has no StructInfo"));
}

TEST_F(BlockBuilderTest, CallTirIsCheckedAgainstThePrimFunc) {
  IRModule small = testing::SmallRelaxModule();
  Var x = MakeVar("x", TensorSInfo({C(4), C(4)}, f32));
  GlobalVar matmul = small->GetGlobalVar("matmul");
  auto call = [&](std::vector<Expr> inputs, StructInfo out) {
    BlockBuilder bb(small);
    bb.BeginFunction("f", {x});
    bb.BeginBindingBlock();
    return bb.Emit(
        MakeCall(GetOp("relax.call_tir"), {matmul, MakeTuple(std::move(inputs))}, {std::move(out)}),
        "y");
  };
  absl::StatusOr<Var> ok = call({x, x}, TensorSInfo({C(4), C(4)}, f32));
  ASSERT_TRUE(ok.ok()) << ok.status();
  ExpectDims((*ok)->struct_info(), {C(4), C(4)});
  absl::StatusOr<Var> arity = call({x}, TensorSInfo({C(4), C(4)}, f32));
  ASSERT_FALSE(arity.ok());
  EXPECT_THAT(arity.status().message(),
              HasSubstr("PrimFunc 'matmul' takes 3 parameters, but the call passes 1 inputs, 1 "
                        "outputs and 0 tir_vars"));
  absl::StatusOr<Var> no_shape = call({x, x}, TensorSInfoUnknown(f32, 2));
  ASSERT_FALSE(no_shape.ok());
  EXPECT_THAT(no_shape.status().message(), HasSubstr("known shape and dtype"));
}

// Malformed IR built through the public API (null fields, wrong node kinds in every slot) comes
// back as errors from the normalizer and as violations from the checker, never as a crash.
TEST_F(BlockBuilderTest, MalformedIrIsAnErrorNotACrash) {
  Var x = MakeVar("x", TensorSInfo({n}, f32));
  Var v = MakeVar("v", nullptr);
  auto in_block = [&](Expr value) { return MakeSeq({MakeBlock({MakeBinding(v, value)})}, v); };
  std::vector<Function> bad = {
      MakeFunction({x}, nullptr),
      MakeFunction({nullptr}, x),
      MakeFunction({x}, in_block(nullptr)),
      MakeFunction({x}, MakeSeq({MakeBlock({MakeBinding(nullptr, x)})}, x)),
      MakeFunction({x}, in_block(MakeCall(nullptr, {x}))),
      MakeFunction({x}, in_block(MakeCall(GetOp("relax.call_tir"), {x, x}))),
      MakeFunction({x}, in_block(MakeCall(GetOp("relax.call_tir"), {}))),
      MakeFunction(
          {x}, in_block(MakeCall(GetOp("relax.call_dps_packed"), {x, MakeTuple({})}, {nullptr}))),
      MakeFunction({x}, in_block(MakeTuple({x, nullptr}))),
      MakeFunction({x}, in_block(MakeShape({nullptr}))),
      MakeFunction({x}, in_block(Make<PrimValueNode>(nullptr))),
      MakeFunction({x}, in_block(Make<TupleGetItemNode>(x, 0))),
      MakeFunction({x}, in_block(Make<TupleGetItemNode>(MakeTuple({x}), -1))),
      MakeFunction({x}, in_block(Make<IfNode>(x, x, x))),
      MakeFunction({x}, in_block(Make<IfNode>(nullptr, nullptr, nullptr))),
      MakeFunction({x}, MakeSeq({MakeBlock({MakeMatchCast(v, x, nullptr)})}, v)),
      MakeFunction({x}, MakeSeq({MakeBlock({MakeMatchCast(v, x, ShapeSInfo({n}))})}, v)),
      MakeFunction({x}, in_block(MakeCall(GetOp("relax.flatten"), {x, x}))),
      MakeFunction({x}, in_block(MakeCall(GetOp("relax.reshape"), {x, x}))),
      MakeFunction({x}, in_block(MakeCall(MakeGlobalVar("nowhere"), {x}))),
      MakeFunction({x}, in_block(MakeSeq({MakeBlock({})}, nullptr))),
      MakeFunction({x}, x, ShapeSInfo({n})),
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    IRModule mod = ModuleWith(bad[i]);
    absl::StatusOr<IRModule> normalized = NormalizeModule(mod);
    EXPECT_FALSE(normalized.ok()) << "case " << i << " normalized:\n" << DebugPrint(*normalized);
    if (!normalized.ok()) {
      EXPECT_EQ(normalized.status().code(), absl::StatusCode::kInvalidArgument) << i;
      EXPECT_THAT(normalized.status().message(), HasSubstr("in function 'main'")) << i;
    }
    (void)FindWellFormedViolations(mod);
    (void)DebugPrint(mod);
  }
}

}  // namespace
}  // namespace kiln::ir::relax
