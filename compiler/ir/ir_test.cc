#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/relax_functor.h"
#include "compiler/ir/structural.h"
#include "compiler/ir/testing/examples.h"
#include "compiler/ir/tir_functor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/support/large_stack.h"

namespace kiln::ir {
namespace {

using ::testing::HasSubstr;

TEST(DataTypeTest, ParsesPrintsAndClassifies) {
  for (const char* name : {"float32", "float16", "bfloat16", "int8", "int64", "uint8", "bool",
                           "float32x8", "handle", "void"}) {
    absl::StatusOr<DataType> t = DataType::Parse(name);
    ASSERT_TRUE(t.ok()) << name;
    EXPECT_EQ(t->ToString(), name);
  }
  EXPECT_TRUE(DataType::Parse("")->is_void());
  EXPECT_TRUE(DataType::Bool().is_bool());
  EXPECT_TRUE(DataType::Float(32, 4).is_vector());
  EXPECT_EQ(DataType::Float(16, 4).bytes(), 2);
  EXPECT_FALSE(DataType::Parse("float8").ok());
  EXPECT_FALSE(DataType::Parse("int3").ok());
  EXPECT_THAT(DataType::Parse("complex64").status().message(), HasSubstr("complex64"));
}

// Collects the kinds a visitor reaches.
class KindCollector : public StmtExprVisitor {
 public:
  void VisitExpr(const PrimExpr& e) override {
    kinds.insert(e->kind());
    DefaultVisitExpr(e);
  }
  void VisitStmt(const Stmt& s) override {
    kinds.insert(s->kind());
    DefaultVisitStmt(s);
  }
  std::set<NodeKind> kinds;
};

TEST(TirTest, VisitorReachesEveryKind) {
  PrimFunc f = testing::EveryTirKindPrimFunc();
  KindCollector collector;
  collector.VisitStmt(f->body);
  std::set<NodeKind> missing;
#define KILN_CHECK_KIND(Name) \
  if (!collector.kinds.count(NodeKind::k##Name)) missing.insert(NodeKind::k##Name);
  KILN_TIR_EXPR_KINDS(KILN_CHECK_KIND)
  KILN_TIR_STMT_KINDS(KILN_CHECK_KIND)
#undef KILN_CHECK_KIND
  std::string names;
  for (NodeKind k : missing) absl::StrAppend(&names, NodeKindName(k), " ");
  EXPECT_TRUE(missing.empty()) << "not reached: " << names << "\n" << DebugPrint(f);
}

TEST(TirTest, IdentityMutatorPreservesIdentity) {
  PrimFunc f = testing::EveryTirKindPrimFunc();
  StmtExprMutator identity;
  EXPECT_EQ(identity.VisitStmt(f->body), f->body);
}

TEST(TirTest, SubstituteRebuildsOnlyTheChangedPath) {
  Var i = MakeVar("i");
  Var j = MakeVar("j");
  PrimExpr untouched = j * 3;
  PrimExpr e = (i + 1) * untouched;
  PrimExpr out =
      Substitute(e, [&](const Var& v) { return v == i ? IntImm(i->dtype, 5) : nullptr; });
  EXPECT_NE(out, e);
  const auto* mul = out.as<BinaryNode>();
  ASSERT_NE(mul, nullptr);
  EXPECT_EQ(mul->b, untouched);  // the unchanged operand is the same node
  EXPECT_EQ(DebugPrint(out), "((5 + 1) * (j * 3))");
}

class RelaxKindCollector : public relax::ExprVisitor {
 public:
  void VisitExpr(const relax::Expr& e) override {
    kinds.insert(e->kind());
    DefaultVisitExpr(e);
  }
  void VisitBinding(const relax::Binding& b) override {
    kinds.insert(b->kind());
    relax::ExprVisitor::VisitBinding(b);
  }
  void VisitBindingBlock(const relax::BindingBlock& b) override {
    kinds.insert(b->kind());
    relax::ExprVisitor::VisitBindingBlock(b);
  }
  void VisitVarDef(const relax::Var& v) override { kinds.insert(v->kind()); }
  std::set<NodeKind> kinds;
};

TEST(RelaxTest, VisitorReachesEveryKind) {
  IRModule mod = testing::SmallRelaxModule();
  RelaxKindCollector collector;
  collector.VisitExpr(mod->Lookup("main").as_ref<relax::ExprNode>());
  std::string missing;
#define KILN_CHECK_KIND(Name) \
  if (!collector.kinds.count(NodeKind::k##Name)) absl::StrAppend(&missing, #Name, " ");
  KILN_RELAX_EXPR_KINDS(KILN_CHECK_KIND)
  KILN_RELAX_OTHER_KINDS(KILN_CHECK_KIND)
#undef KILN_CHECK_KIND
  // The example has no DataflowVar-free Op-less kinds left out except those listed here.
  EXPECT_EQ(missing, "") << DebugPrint(mod);
}

TEST(RelaxTest, IdentityMutatorPreservesIdentity) {
  IRModule mod = testing::SmallRelaxModule();
  relax::Expr main = mod->Lookup("main").as_ref<relax::ExprNode>();
  relax::ExprMutator identity;
  EXPECT_EQ(identity.VisitExpr(main), main);
}

TEST(RelaxTest, OpsAreInterned) {
  EXPECT_EQ(relax::GetOp("relax.call_tir"), relax::GetOp("relax.call_tir"));
  EXPECT_NE(relax::GetOp("relax.call_tir"), relax::GetOp("relax.call_packed"));
}

TEST(ModuleTest, RejectsDuplicatesAndNonFunctions) {
  IRModuleBuilder builder;
  relax::GlobalVar f = relax::MakeGlobalVar("f");
  ASSERT_TRUE(builder.Add(f, testing::MatmulPrimFunc(2, 2, 2)).ok());
  absl::Status dup = builder.Add(relax::MakeGlobalVar("f"), testing::MatmulPrimFunc(2, 2, 2));
  EXPECT_EQ(dup.code(), absl::StatusCode::kAlreadyExists);
  absl::Status bad = builder.Add(relax::MakeGlobalVar("g"), IntImm(DataType::Int(32), 1));
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("IntImm"));
  EXPECT_FALSE(builder.Add(nullptr, nullptr).ok());
}

// ---- Structural equality and hashing ------------------------------------------------------

TEST(StructuralTest, AlphaEquivalentModulesAreEqualWithEqualHashes) {
  IRModule a = testing::SmallRelaxModule();
  IRModule b = testing::SmallRelaxModule();  // fresh variables everywhere
  EXPECT_NE(a, b);
  EXPECT_TRUE(StructuralEqual(a, b)) << CheckStructuralEqual(a, b);
  EXPECT_EQ(StructuralHash(a), StructuralHash(b));
  EXPECT_TRUE(StructuralEqual(testing::EveryTirKindPrimFunc(), testing::EveryTirKindPrimFunc()));
  EXPECT_EQ(StructuralHash(testing::ChainModule(50)), StructuralHash(testing::ChainModule(50)));
}

TEST(StructuralTest, VariableNamesDoNotMatterButBindingDoes) {
  Var x = MakeVar("x"), y = MakeVar("y"), other = MakeVar("x");
  // let x = 1 in x + x   vs   let y = 1 in y + y
  PrimExpr lx = Make<LetNode>(x, IntImm(x->dtype, 1), x + x);
  PrimExpr ly = Make<LetNode>(y, IntImm(y->dtype, 1), y + y);
  EXPECT_TRUE(StructuralEqual(lx, ly));
  EXPECT_EQ(StructuralHash(lx), StructuralHash(ly));
  // let x = 1 in x + other  is not  let y = 1 in y + y
  PrimExpr mixed = Make<LetNode>(other, IntImm(x->dtype, 1), other + x);
  EXPECT_FALSE(StructuralEqual(mixed, ly));
  EXPECT_NE(StructuralHash(mixed), StructuralHash(ly));
}

TEST(StructuralTest, DifferencesAreFoundWithTheirPath) {
  PrimFunc a = testing::MatmulPrimFunc(4, 4, 4);
  PrimFunc b = testing::MatmulPrimFunc(4, 4, 8);
  EXPECT_FALSE(StructuralEqual(a, b));
  EXPECT_NE(StructuralHash(a), StructuralHash(b));
  absl::Status s = CheckStructuralEqual(a, b);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("buffer_map_buffers[0].shape[1]"));
  EXPECT_THAT(s.message(), HasSubstr("4 vs 8"));
}

TEST(StructuralTest, DtypesConstantsAndAttributesMatter) {
  Var i = MakeVar("i");
  EXPECT_FALSE(StructuralEqual(IntImm(DataType::Int(32), 1), IntImm(DataType::Int(64), 1)));
  EXPECT_FALSE(
      StructuralEqual(FloatImm(DataType::Float(32), 0.0), FloatImm(DataType::Float(32), -0.0)));
  EXPECT_FALSE(StructuralEqual(i + 1, i * 1));
  relax::Expr c1 =
      relax::MakeConstant(DataType::Float(32), {1}, std::string("\x00\x00\x80\x3f", 4));
  relax::Expr c2 =
      relax::MakeConstant(DataType::Float(32), {1}, std::string("\x00\x00\x00\x40", 4));
  EXPECT_FALSE(StructuralEqual(c1, c2));
  EXPECT_NE(StructuralHash(c1), StructuralHash(c2));
  Stmt s1 = MakeFor(i, IntImm(i->dtype, 0), IntImm(i->dtype, 8), ForKind::kSerial,
                    Make<EvaluateNode>(i), WithAttr({}, "pragma", IntImm(i->dtype, 1)));
  Stmt s2 = MakeFor(i, IntImm(i->dtype, 0), IntImm(i->dtype, 8), ForKind::kSerial,
                    Make<EvaluateNode>(i), WithAttr({}, "pragma", IntImm(i->dtype, 2)));
  Stmt s3 = MakeFor(i, IntImm(i->dtype, 0), IntImm(i->dtype, 8), ForKind::kVectorized,
                    Make<EvaluateNode>(i), WithAttr({}, "pragma", IntImm(i->dtype, 1)));
  EXPECT_FALSE(StructuralEqual(s1, s2));
  EXPECT_FALSE(StructuralEqual(s1, s3));
  EXPECT_THAT(CheckStructuralEqual(s1, s2).message(), HasSubstr("annotations.pragma"));
}

TEST(StructuralTest, DataflowVarIsNotVar) {
  relax::Var a = relax::MakeVar("a", nullptr);
  relax::Var b = relax::MakeDataflowVar("a", nullptr);
  EXPECT_FALSE(StructuralEqual(a, b));
}

TEST(StructuralTest, SymbolicShapesCompareByPosition) {
  using namespace relax;
  ir::Var n = MakeSizeVar("n"), m = MakeSizeVar("m");
  // f(x: (n, n)) vs f(x: (m, m)) equal; vs f(x: (n, m)) not.
  auto fn = [](PrimExpr d0, PrimExpr d1) {
    relax::Var x = relax::MakeVar("x", TensorSInfo({d0, d1}, DataType::Float(32)));
    return MakeFunction({x}, MakeSeq({}, x));
  };
  EXPECT_TRUE(StructuralEqual(fn(n, n), fn(m, m)));
  EXPECT_FALSE(StructuralEqual(fn(n, n), fn(n, m)));
  EXPECT_NE(StructuralHash(fn(n, n)), StructuralHash(fn(n, m)));
}

// A DAG whose nodes each use the one before twice stands for 2^depth nodes: hashing and
// comparing it must cost its size, not its expansion, and agree with the same tree unshared.
TEST(StructuralTest, SharedSubExpressionsCostTheirSizeAndHashAsTheTreeWould) {
  Var x = MakeVar("x");
  PrimExpr dag = x + 1;
  for (int i = 0; i < 200; ++i) dag = dag * dag;  // 2^200 nodes written out
  PrimExpr other = x + 1;
  for (int i = 0; i < 200; ++i) other = other * other;
  EXPECT_TRUE(StructuralEqual(dag, other));
  EXPECT_EQ(StructuralHash(dag), StructuralHash(other));
  PrimExpr last_differs = (x + 2);
  for (int i = 0; i < 200; ++i) last_differs = last_differs * last_differs;
  EXPECT_FALSE(StructuralEqual(dag, last_differs));
  EXPECT_NE(StructuralHash(dag), StructuralHash(last_differs));

  // Shared or copied, the same tree hashes the same, also when the shared part binds a variable
  // (its first visit defines `v`, every later one uses it).
  Var v = MakeVar("v");
  PrimExpr let = Make<LetNode>(v, IntImm(v->dtype, 1), v + x);
  PrimExpr let_copy = Make<LetNode>(v, IntImm(v->dtype, 1), v + x);
  PrimExpr shared = (let * let) + let;
  PrimExpr copied = (let * let_copy) + Make<LetNode>(v, IntImm(v->dtype, 1), v + x);
  EXPECT_EQ(StructuralHash(shared), StructuralHash(copied));
  EXPECT_TRUE(StructuralEqual(shared, copied));
  Var w = MakeVar("v");
  PrimExpr rebinds = (let * let) + Make<LetNode>(w, IntImm(w->dtype, 1), w + x);
  EXPECT_NE(StructuralHash(shared), StructuralHash(rebinds));
}

// The hash must not depend on addresses: a child process (fresh heap, ASLR) must agree.
TEST(StructuralTest, HashIsStableAcrossProcesses) {
  const char* child = std::getenv("KILN_HASH_CHILD");
  if (child != nullptr) {
    std::printf("HASH=%llu\n",
                static_cast<unsigned long long>(StructuralHash(testing::SmallRelaxModule())));
    std::exit(0);
  }
  // Resolve our own path here: inside popen's shell, /proc/self/exe would be the shell.
  char self[4096] = {};
  ASSERT_GT(readlink("/proc/self/exe", self, sizeof(self) - 1), 0);
  std::string cmd = absl::StrCat("KILN_HASH_CHILD=1 '", self,
                                 "' --gtest_filter=StructuralTest.HashIsStableAcrossProcesses");
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char line[256];
  unsigned long long child_hash = 0;
  while (std::fgets(line, sizeof(line), pipe) != nullptr) {
    std::sscanf(line, "HASH=%llu", &child_hash);
  }
  ASSERT_EQ(pclose(pipe), 0);
  EXPECT_EQ(child_hash, StructuralHash(testing::SmallRelaxModule()));
}

// A pinned value: if this changes, the hash definition changed and kStructuralHashVersion must
// be bumped (old cache keys become invalid).
TEST(StructuralTest, HashOfAFixedModuleIsPinned) {
  EXPECT_EQ(kStructuralHashVersion, 1u);
  uint64_t h = StructuralHash(testing::MatmulPrimFunc(16, 16, 16));
  EXPECT_EQ(h, StructuralHash(testing::MatmulPrimFunc(16, 16, 16)));
  EXPECT_EQ(absl::StrCat(h), "10928050790138612996");
}

TEST(PrinterTest, PrintsReadableTir) {
  std::string text = DebugPrint(testing::MatmulPrimFunc(4, 4, 4));
  EXPECT_THAT(text, HasSubstr("with T.block(\"C\"):"));
  EXPECT_THAT(text, HasSubstr("vk = T.axis.reduce(4, k)"));
  EXPECT_THAT(text, HasSubstr("C[vi, vj] = (C[vi, vj] + (A[vi, vk] * B[vk, vj]))"));
  EXPECT_THAT(text, HasSubstr("with T.init():"));
}

// Printed by appending: a chain as deep as the front ends allow prints in linear time (returning
// strings level by level copied the whole tail at each of the 20,000 levels).
TEST(PrinterTest, PrintsDeepChainsWhole) {
  // As the compiler does, on its large stack: the walks recurse once per level.
  int status = runtime::RunWithStack(runtime::kCompilerStackBytes, [] {
    Var x = MakeVar("x");
    PrimExpr chain = x;
    for (int i = 0; i < kMaxNestingDepth; ++i) chain = chain + 1;
    std::string text = DebugPrint(chain);
    // "x", then "(" and " + 1)" per level.
    EXPECT_EQ(text.size(), 1 + 6 * static_cast<size_t>(kMaxNestingDepth));
    EXPECT_TRUE(absl::StartsWith(text, "((((")) << text.substr(0, 20);
    EXPECT_TRUE(absl::EndsWith(text, " + 1) + 1) + 1)")) << text.substr(text.size() - 20);
    return 0;
  });
  EXPECT_EQ(status, 0);
}

TEST(PrinterTest, PrintsReadableRelax) {
  std::string text = DebugPrint(testing::SmallRelaxModule());
  EXPECT_THAT(text, HasSubstr("def main(x: R.Tensor((n, 4), \"float32\"))"));
  EXPECT_THAT(text, HasSubstr("with R.dataflow():"));
  EXPECT_THAT(text, HasSubstr("relax.call_tir(cls.matmul, (x, x)"));
  EXPECT_THAT(text, HasSubstr("R.output(gv)"));
  EXPECT_THAT(text, HasSubstr("R.match_cast(item, R.Tensor((m,), \"float32\"))"));
}

}  // namespace
}  // namespace kiln::ir
