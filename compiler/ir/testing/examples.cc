#include "compiler/ir/testing/examples.h"

#include "absl/strings/str_cat.h"

namespace kiln::ir::testing {

namespace {
PrimExpr I64(int64_t v) { return IntImm(DataType::Int(64), v); }

Var HandleParam(const std::string& name) { return MakeVar(name, DataType::Handle()); }
}  // namespace

PrimFunc MatmulPrimFunc(int64_t m, int64_t n, int64_t k) {
  DataType f32 = DataType::Float(32);
  Buffer a = MakeBuffer("A", f32, {I64(m), I64(k)});
  Buffer b = MakeBuffer("B", f32, {I64(k), I64(n)});
  Buffer c = MakeBuffer("C", f32, {I64(m), I64(n)});
  Var i = MakeVar("i"), j = MakeVar("j"), r = MakeVar("k");
  Var vi = MakeVar("vi"), vj = MakeVar("vj"), vk = MakeVar("vk");

  auto* block = new BlockNode();
  block->name = "C";
  block->iter_vars = {Make<IterVarNode>(vi, MakeRange(I64(0), I64(m)), IterKind::kSpatial),
                      Make<IterVarNode>(vj, MakeRange(I64(0), I64(n)), IterKind::kSpatial),
                      Make<IterVarNode>(vk, MakeRange(I64(0), I64(k)), IterKind::kReduce)};
  block->reads = {
      Make<BufferRegionNode>(a, std::vector<Range>{MakeRange(vi, I64(1)), MakeRange(vk, I64(1))}),
      Make<BufferRegionNode>(b, std::vector<Range>{MakeRange(vk, I64(1)), MakeRange(vj, I64(1))})};
  block->writes = {
      Make<BufferRegionNode>(c, std::vector<Range>{MakeRange(vi, I64(1)), MakeRange(vj, I64(1))})};
  block->init = Make<BufferStoreNode>(c, FloatImm(f32, 0.0), std::vector<PrimExpr>{vi, vj});
  PrimExpr load_c = Make<BufferLoadNode>(f32, c, std::vector<PrimExpr>{vi, vj});
  PrimExpr load_a = Make<BufferLoadNode>(f32, a, std::vector<PrimExpr>{vi, vk});
  PrimExpr load_b = Make<BufferLoadNode>(f32, b, std::vector<PrimExpr>{vk, vj});
  block->body = Make<BufferStoreNode>(c, load_c + load_a * load_b, std::vector<PrimExpr>{vi, vj});
  Stmt realize = Make<BlockRealizeNode>(std::vector<PrimExpr>{i, j, r}, Bool(true), Block(block));
  Stmt body = MakeFor(i, I64(0), I64(m), ForKind::kSerial,
                      MakeFor(j, I64(0), I64(n), ForKind::kSerial,
                              MakeFor(r, I64(0), I64(k), ForKind::kSerial, realize)));

  auto* f = new PrimFuncNode();
  Var pa = HandleParam("a"), pb = HandleParam("b"), pc = HandleParam("c");
  f->params = {pa, pb, pc};
  f->buffer_map = {{pa, a}, {pb, b}, {pc, c}};
  f->body = body;
  f->attrs = WithAttr({}, "tir.noalias", Bool(true));
  return PrimFunc(f);
}

PrimFunc EveryTirKindPrimFunc() {
  DataType f32 = DataType::Float(32);
  DataType i64 = DataType::Int(64);
  ir::Var n = MakeSizeVar("n");
  Buffer x = MakeBuffer("X", f32, {n});
  Buffer tmp = MakeBuffer("tmp", f32, {I64(8)}, "local");
  Var i = MakeVar("i"), t = MakeVar("t"), v = MakeVar("v"), vi = MakeVar("vi");
  PrimExpr load = Make<BufferLoadNode>(f32, x, std::vector<PrimExpr>{i});
  PrimExpr math = Call(f32, "exp", {Cast(f32, i)}) + Make<FloatImmNode>(f32, 0.5);
  PrimExpr index = FloorDiv(i * 32 + 3, I64(32)) + FloorMod(i, I64(4)) +
                   Binary(NodeKind::kDiv, i, I64(2)) + Binary(NodeKind::kMod, i, I64(3)) +
                   Min(i, n) + Max(i, I64(0)) - I64(1);
  PrimExpr cond = Binary(NodeKind::kAnd, Binary(NodeKind::kLT, i, n),
                         Binary(NodeKind::kOr, Binary(NodeKind::kGE, i, I64(0)),
                                Not(Binary(NodeKind::kEQ, i, I64(7)))));
  PrimExpr cond2 =
      Binary(NodeKind::kAnd, Binary(NodeKind::kNE, i, I64(1)),
             Binary(NodeKind::kAnd, Binary(NodeKind::kLE, i, n), Binary(NodeKind::kGT, n, I64(0))));
  PrimExpr vec = Make<RampNode>(i, I64(1), 4) + Make<BroadcastNode>(I64(2), 4);
  PrimExpr let = Make<LetNode>(v, index, v * 2);
  Stmt store = Make<BufferStoreNode>(x, Select(cond, math, load), std::vector<PrimExpr>{i});
  Stmt store_tmp = Make<BufferStoreNode>(tmp, load, std::vector<PrimExpr>{FloorMod(let, I64(8))});
  Stmt eval =
      Make<EvaluateNode>(Call(DataType::Int(32), "kiln.debug", {Make<StringImmNode>("s"), vec}));
  auto* block = new BlockNode();
  block->name = "inner";
  block->iter_vars = {Make<IterVarNode>(vi, MakeRange(I64(0), n), IterKind::kSpatial)};
  block->reads = {FullRegion(x)};
  block->writes = {FullRegion(x)};
  Buffer view = MakeBuffer("view", f32, {n});
  block->match_buffers = {Make<MatchBufferRegionNode>(view, FullRegion(x))};
  block->body = Make<BufferStoreNode>(view, FloatImm(f32, 1), std::vector<PrimExpr>{vi});
  Stmt realize = Make<BlockRealizeNode>(std::vector<PrimExpr>{i}, cond2, Block(block));
  Stmt loop_body = Seq({store, Make<IfThenElseNode>(cond, store_tmp, eval), realize});
  Stmt loop =
      MakeFor(i, I64(0), n, ForKind::kParallel, loop_body, WithAttr({}, "pragma_unroll", I64(4)));
  Stmt w = Make<WhileNode>(Binary(NodeKind::kLT, t, I64(3)), Make<EvaluateNode>(t));
  Stmt body = Make<LetStmtNode>(
      t, I64(0),
      Make<AssertStmtNode>(Binary(NodeKind::kGT, n, I64(0)), "n must be positive",
                           Make<AttrStmtNode>(nullptr, "pragma_note", I64(1),
                                              Make<AllocateNode>(tmp, Seq({loop, w})))));
  auto* f = new PrimFuncNode();
  Var px = HandleParam("x");
  f->params = {px, MakeVar("scale", i64)};
  f->buffer_map = {{px, x}};
  f->body = body;
  return PrimFunc(f);
}

IRModule SmallRelaxModule() {
  using namespace relax;
  DataType f32 = DataType::Float(32);
  ir::Var n = MakeSizeVar("n");
  ir::Var m = MakeSizeVar("m");
  relax::Var x = relax::MakeVar("x", TensorSInfo({n, I64(4)}, f32));
  GlobalVar matmul = MakeGlobalVar("matmul");
  Expr call_tir = GetOp("relax.call_tir");
  relax::Var lv0 = MakeDataflowVar("lv0", nullptr);
  relax::Var lv1 = MakeDataflowVar("lv1", nullptr);
  relax::Var gv = relax::MakeVar("gv", nullptr);
  relax::Var t = relax::MakeVar("t", nullptr);
  relax::Var item = relax::MakeVar("item", nullptr);
  relax::Var y = relax::MakeVar("y", TensorSInfo({m}, f32));
  relax::Var flag = relax::MakeVar("flag", PrimSInfo(DataType::Bool()));
  relax::Var res = relax::MakeVar("res", nullptr);
  BindingBlock df = MakeDataflowBlock(
      {MakeBinding(
           lv0, MakeCall(call_tir, {matmul, MakeTuple({x, x})}, {TensorSInfo({n, I64(4)}, f32)})),
       MakeBinding(lv1, MakeCall(GetOp("relax.flatten"), {lv0})), MakeBinding(gv, lv1)});
  Expr branch_true = MakeSeq({}, y);
  Expr branch_false = MakeSeq({}, y);
  BindingBlock tail = MakeBlock(
      {MakeBinding(t, MakeTuple({gv, MakeShape({n, I64(4)}), Make<PrimValueNode>(I64(3)),
                                 Make<relax::StringImmNode>("s"), Make<DataTypeImmNode>(f32),
                                 MakeConstant(f32, {2}, std::string(8, '\0'))})),
       MakeBinding(item, Make<TupleGetItemNode>(t, 0)),
       MakeMatchCast(y, item, TensorSInfo({m}, f32)),
       MakeBinding(flag,
                   MakeCall(Make<ExternFuncNode>("test.flag"), {}, {PrimSInfo(DataType::Bool())})),
       MakeBinding(res, Make<IfNode>(flag, branch_true, branch_false))});
  Function main = MakeFunction({x}, MakeSeq({df, tail}, res), nullptr, /*is_pure=*/false,
                               WithAttr({}, "global_symbol", Make<ir::StringImmNode>("main")));
  IRModuleBuilder builder;
  (void)builder.Add(MakeGlobalVar("main"), main);
  (void)builder.Add(matmul, MatmulPrimFunc(4, 4, 4));
  return builder.Build();
}

IRModule ChainModule(int num_bindings) {
  using namespace relax;
  DataType f32 = DataType::Float(32);
  ir::Var n = MakeSizeVar("n");
  relax::Var x = relax::MakeVar("x", TensorSInfo({n, I64(64)}, f32));
  GlobalVar kernel = MakeGlobalVar("kernel");
  Expr call_tir = GetOp("relax.call_tir");
  std::vector<Binding> bindings;
  Expr prev = x;
  for (int b = 0; b < num_bindings; ++b) {
    bool last = b + 1 == num_bindings;
    relax::Var v =
        last ? relax::MakeVar("out", nullptr) : MakeDataflowVar(absl::StrCat("lv", b), nullptr);
    bindings.push_back(MakeBinding(v, MakeCall(call_tir, {kernel, MakeTuple({prev, prev})},
                                               {TensorSInfo({n, I64(64)}, f32)})));
    prev = v;
  }
  Function main = MakeFunction({x}, MakeSeq({MakeDataflowBlock(std::move(bindings))}, prev),
                               nullptr, /*is_pure=*/true,
                               WithAttr({}, "global_symbol", Make<ir::StringImmNode>("main")));
  IRModuleBuilder builder;
  (void)builder.Add(MakeGlobalVar("main"), main);
  (void)builder.Add(kernel, MatmulPrimFunc(64, 64, 64));
  return builder.Build();
}

}  // namespace kiln::ir::testing
