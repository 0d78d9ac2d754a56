#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_join.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/relax_functor.h"
#include "compiler/ir/structural.h"
#include "compiler/ir/testing/examples.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/well_formed.h"
#include "compiler/script/printer.h"
#include "compiler/script/script_parser.h"
#include "compiler/wire/ir_proto.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::script {
namespace {

using ::testing::HasSubstr;
using namespace ir;  // NOLINT: test brevity

IRModule WithPrimFunc(const std::string& name, PrimFunc f) {
  IRModuleBuilder b;
  EXPECT_TRUE(b.Add(relax::MakeGlobalVar(name), f).ok());
  return b.Build();
}

// parse(print(m)) == m structurally, and printing again gives the same bytes. A normalized `m`
// is compared with the parsed module normalized: like TVM, the printer leaves out the StructInfo
// of a call made for its effect (`R.print(x)`, no fields), which normalization gives back.
void ExpectRoundTrip(const IRModule& mod, const std::string& what, bool normalized = false) {
  SCOPED_TRACE(what);
  std::string text = PrintScript(mod);
  absl::StatusOr<IRModule> parsed = ParseScript(text, what + ".py");
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  absl::StatusOr<IRModule> compared = normalized ? relax::NormalizeModule(*parsed) : parsed;
  ASSERT_TRUE(compared.ok()) << compared.status();
  absl::Status equal = CheckStructuralEqual(mod, *compared);
  EXPECT_TRUE(equal.ok()) << equal << "\n" << text;
  EXPECT_EQ(PrintScript(*parsed), text);
}

TEST(ScriptTest, ExamplesRoundTrip) {
  ExpectRoundTrip(WithPrimFunc("matmul", testing::MatmulPrimFunc(16, 8, 4)), "matmul");
  ExpectRoundTrip(WithPrimFunc("every_tir_kind", testing::EveryTirKindPrimFunc()),
                  "every_tir_kind");
  ExpectRoundTrip(testing::SmallRelaxModule(), "small_relax");
  ExpectRoundTrip(testing::ChainModule(5), "chain");
  absl::StatusOr<IRModule> normalized = relax::NormalizeModule(testing::SmallRelaxModule());
  ASSERT_TRUE(normalized.ok());
  ExpectRoundTrip(*normalized, "small_relax_normalized", /*normalized=*/true);
}

std::vector<std::string> TestFiles() {
  std::vector<std::string> files;
  const char* dir = "compiler/script/testdata";
  if (DIR* d = opendir(dir)) {
    while (dirent* entry = readdir(d)) {
      std::string name = entry->d_name;
      if (name.size() > 3 && name.substr(name.size() - 3) == ".py")
        files.push_back(std::string(dir) + "/" + name);
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every module under testdata/ parses; printing and parsing it again gives an equal module and
// the same text; Relax modules also normalize and pass the well-formedness checker.
TEST(ScriptTest, TestdataModulesRoundTrip) {
  std::vector<std::string> files = TestFiles();
  EXPECT_GE(files.size(), 15u);
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    absl::StatusOr<IRModule> mod = ParseScript(ReadFile(file), file);
    ASSERT_TRUE(mod.ok()) << mod.status();
    ExpectRoundTrip(*mod, file);
    absl::StatusOr<IRModule> normalized = relax::NormalizeModule(*mod);
    ASSERT_TRUE(normalized.ok()) << normalized.status();
    ExpectRoundTrip(*normalized, file + " (normalized)", /*normalized=*/true);
    bool has_relax = false;
    for (const auto& [name, entry] : (*mod)->functions)
      has_relax |= entry.second.as<relax::FunctionNode>() != nullptr;
    if (has_relax) {  // the checker's rules are Relax's
      absl::Status wf = relax::CheckWellFormed(*normalized);
      EXPECT_TRUE(wf.ok()) << wf;
    }
  }
}

// Every node kind of the IR appears somewhere in the corpus, so the round trips above cover
// all of them; and the protobuf wire form round-trips the same modules.
TEST(ScriptTest, CorpusCoversEveryNodeKindAndRoundTripsThroughProto) {
  std::set<NodeKind> seen;
  std::vector<const Object*> stack;
  std::set<const Object*> visited;
  std::vector<IRModule> keep_alive;
  for (const std::string& file : TestFiles()) {
    absl::StatusOr<IRModule> mod = ParseScript(ReadFile(file), file);
    ASSERT_TRUE(mod.ok()) << mod.status();
    absl::StatusOr<IRModule> normalized = relax::NormalizeModule(*mod);
    ASSERT_TRUE(normalized.ok()) << normalized.status();
    for (const IRModule& m : {*mod, *normalized}) {
      absl::StatusOr<IRModule> back = wire::DeserializeModule(wire::SerializeModule(m));
      ASSERT_TRUE(back.ok()) << file << ": " << back.status();
      EXPECT_TRUE(StructuralEqual(m, *back)) << file;
      EXPECT_EQ(PrintScript(*back), PrintScript(m)) << file;
      stack.push_back(m.get());
      keep_alive.push_back(m);
    }
  }
  while (!stack.empty()) {
    const Object* node = stack.back();
    stack.pop_back();
    if (node == nullptr || !visited.insert(node).second) continue;
    seen.insert(node->kind());
    for (const FieldVisitor::Field& f : FieldsOf(*node)) {
      if (f.type == FieldVisitor::Type::kObject) stack.push_back(f.object);
      if (f.type == FieldVisitor::Type::kObjectList)
        stack.insert(stack.end(), f.objects.begin(), f.objects.end());
      if (f.type == FieldVisitor::Type::kAttrs) {
        for (const auto& [key, value] : *f.attrs) stack.push_back(value.get());
      }
    }
  }
  std::vector<std::string> missing;
  for (int k = 0; k < static_cast<int>(NodeKind::kNumKinds); ++k) {
    if (seen.count(static_cast<NodeKind>(k)) == 0)
      missing.push_back(NodeKindName(static_cast<NodeKind>(k)));
  }
  EXPECT_TRUE(missing.empty()) << "node kinds no test module uses: "
                               << absl::StrJoin(missing, ", ");
}

// The module TVM 0.20 prints for an ONNX MLP: weights come from the metadata section, decoded
// from TVM's NDArray layout (values checked against an independent Python decoding).
TEST(ScriptTest, TvmPrintedModuleWithMetadata) {
  absl::StatusOr<IRModule> mod =
      ParseScript(ReadFile("compiler/script/testdata/tvm_mlp.py"), "tvm_mlp.py");
  ASSERT_TRUE(mod.ok()) << mod.status();
  std::vector<const relax::ConstantNode*> constants;
  struct Finder : relax::ExprVisitor {
    void VisitExpr(const relax::Expr& e) override {
      if (const auto* c = e.as<relax::ConstantNode>()) {
        if (std::find(out->begin(), out->end(), c) == out->end()) out->push_back(c);
      }
      relax::ExprVisitor::VisitExpr(e);
    }
    std::vector<const relax::ConstantNode*>* out;
  } finder;
  finder.out = &constants;
  finder.VisitExpr((*mod)->Lookup("main").as_ref<relax::FunctionNode>());
  ASSERT_EQ(constants.size(), 4u);
  auto first = [](const relax::ConstantNode* c) {
    float f;
    std::memcpy(&f, c->bytes->data(), 4);
    return f;
  };
  EXPECT_EQ(constants[0]->shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(constants[0]->dtype, DataType::Float(32));
  EXPECT_FLOAT_EQ(first(constants[0]), -0.0970839262008667f);
  EXPECT_EQ(constants[3]->shape, (std::vector<int64_t>{8}));
  EXPECT_FLOAT_EQ(first(constants[3]), -0.10304847359657288f);
  // Inferred through the newly registered permute_dims and matmul.
  absl::StatusOr<IRModule> normalized = relax::NormalizeModule(*mod);
  ASSERT_TRUE(normalized.ok()) << normalized.status();
  EXPECT_THAT(PrintScript(*normalized),
              HasSubstr("lv: R.Tensor((64, 32), dtype=\"float32\") = R.permute_dims("));
}

TEST(ScriptTest, MetadataErrors) {
  const std::string body =
      "@I.ir_module\nclass Module:\n    @R.function\n    def main():\n"
      "        c = metadata[\"relax.expr.Constant\"][5]\n        return c\n";
  absl::StatusOr<IRModule> none = ParseScript(body, "m.py");
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(),
              HasSubstr("m.py:5:13: metadata is used but the file has no metadata section"));
  std::string empty_section =
      "metadata = tvm.ir.load_json(\"\"\"{\"root\": 1, \"nodes\": [{\"type_key\": \"\"}, "
      "{\"type_key\": \"Map\", \"keys\": [\"relax.expr.Constant\"], \"data\": [2]}, "
      "{\"type_key\": \"Array\", \"data\": []}], \"b64ndarrays\": []}\"\"\")\n";
  absl::StatusOr<IRModule> out_of_range = ParseScript(empty_section + body, "m.py");
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_THAT(out_of_range.status().message(),
              HasSubstr("metadata has 0 constants; index 5 is out of range"));
  absl::StatusOr<IRModule> bad_json =
      ParseScript("metadata = tvm.ir.load_json(\"{nope\")\n" + body, "m.py");
  ASSERT_FALSE(bad_json.ok());
  EXPECT_THAT(bad_json.status().message(), HasSubstr("m.py:1:29: metadata: not a JSON object"));
  std::string bad_array =
      "metadata = tvm.ir.load_json(\"\"\"{\"root\": 1, \"nodes\": [{\"type_key\": \"\"}, "
      "{\"type_key\": \"Map\", \"keys\": [\"relax.expr.Constant\"], \"data\": [2]}, "
      "{\"type_key\": \"Array\", \"data\": [3]}, {\"type_key\": \"relax.expr.Constant\", "
      "\"attrs\": {\"data\": \"0\"}}], \"b64ndarrays\": [\"AAAA\"]}\"\"\")\n";
  absl::StatusOr<IRModule> bad_ndarray = ParseScript(bad_array + body, "m.py");
  ASSERT_FALSE(bad_ndarray.ok());
  EXPECT_THAT(bad_ndarray.status().message(), HasSubstr("an NDArray without TVM's magic number"));
}

// As TVM prints blocks: consecutive iter vars bound to their enclosing loops over the loops' exact
// ranges print as one T.axis.remap; one bound to an expression, or over another range, prints on
// its own (and a run of one remapped var prints on its own too).
TEST(ScriptTest, BlocksPrintTheirTrivialBindingsAsRemap) {
  const std::string text =
      "@I.ir_module\nclass Module:\n    @T.prim_func\n"
      "    def f(A: T.Buffer((8, 4), \"float32\"), B: T.Buffer((8,), \"float32\")):\n"
      "        for i, k in T.grid(8, 4):\n"
      "            with T.block(\"sum\"):\n"
      "                vi = T.axis.spatial(8, i)\n"
      "                vk = T.axis.reduce(4, k)\n"
      "                with T.init():\n"
      "                    B[vi] = T.float32(0)\n"
      "                B[vi] = B[vi] + A[vi, vk]\n"
      "        for i, j in T.grid(8, 2):\n"
      "            with T.block(\"copy\"):\n"
      "                vi = T.axis.spatial(8, i)\n"
      "                vj = T.axis.spatial(4, j * 2)\n"
      "                A[vi, vj] = B[vi]\n";
  absl::StatusOr<IRModule> mod = ParseScript(text, "remap.py");
  ASSERT_TRUE(mod.ok()) << mod.status();
  std::string printed = PrintScript(*mod);
  EXPECT_THAT(printed, HasSubstr("vi, vk = T.axis.remap(\"SR\", [i, k])"));
  EXPECT_THAT(printed, HasSubstr("vi_1 = T.axis.spatial(8, i_1)"));
  EXPECT_THAT(printed, HasSubstr("vj = T.axis.spatial(4, j * 2)"));
  absl::StatusOr<IRModule> again = ParseScript(printed, "printed.py");
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << printed;
  EXPECT_TRUE(StructuralEqual(*mod, *again));
  EXPECT_EQ(PrintScript(*again), printed);
}

// R.TupleGetItem(t, i), TVM's long form, is t[i].
TEST(ScriptTest, TupleGetItemLongForm) {
  const std::string text =
      "@I.ir_module\nclass Module:\n    @R.function\n"
      "    def main(x: R.Tensor((8,), dtype=\"float32\")):\n"
      "        t = (x, R.exp(x))\n        y = R.TupleGetItem(t, 1)\n        return y\n";
  absl::StatusOr<IRModule> mod = ParseScript(text, "tgi.py");
  ASSERT_TRUE(mod.ok()) << mod.status();
  EXPECT_THAT(PrintScript(*mod), HasSubstr(" = t[1]"));
}

}  // namespace
}  // namespace kiln::script
