// Whole modules through the back end and the runtime: TVMScript -> Build -> kernel library +
// VM executable -> VirtualMachine, against reference outputs.
#include "compiler/backend/build.h"

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "compiler/backend/vm_codegen.h"
#include "compiler/script/script_parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/artifact.h"
#include "runtime/npy.h"
#include "runtime/registry.h"
#include "runtime/vm/vm.h"

namespace kiln::backend {
namespace {

using runtime::Tensor;
using runtime::Value;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Builds `text` and loads it; the VM serializes and deserializes on the way, as an artifact would.
std::unique_ptr<runtime::vm::VirtualMachine> BuildAndLoad(const std::string& text,
                                                          const std::string& name) {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(text, name);
  EXPECT_TRUE(mod.ok()) << mod.status();
  if (!mod.ok()) return nullptr;
  absl::StatusOr<BuiltModule> built = Build(*mod, "llvm");
  EXPECT_TRUE(built.ok()) << built.status();
  if (!built.ok()) return nullptr;
  auto lib = runtime::KernelLibrary::LoadFromMemory(built->kernels, name);
  EXPECT_TRUE(lib.ok()) << lib.status();
  auto exec = runtime::vm::Executable::Deserialize(built->executable);
  EXPECT_TRUE(exec.ok()) << exec.status();
  if (!lib.ok() || !exec.ok()) return nullptr;
  auto vm = runtime::vm::VirtualMachine::Create(
      std::make_shared<const runtime::vm::Executable>(std::move(*exec)), *lib,
      std::make_shared<runtime::ThreadPool>(2), nullptr);
  EXPECT_TRUE(vm.ok()) << vm.status();
  return vm.ok() ? std::move(*vm) : nullptr;
}

void ExpectClose(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(std::vector<int64_t>(got.shape().begin(), got.shape().end()),
            std::vector<int64_t>(want.shape().begin(), want.shape().end()));
  const float* g = static_cast<const float*>(got.data());
  const float* w = static_cast<const float*>(want.data());
  for (int64_t i = 0; i < want.NumElements(); ++i)
    ASSERT_NEAR(g[i], w[i], tol + tol * std::abs(w[i])) << "element " << i;
}

// TVM's legalized import of the ONNX MLP (../shared/tvm_printed), weights in its metadata,
// against PyTorch's output for the reference input.
TEST(BuildTest, TvmLegalizedMlpMatchesTheReference) {
  auto vm = BuildAndLoad(ReadFile("compiler/script/testdata/tvm_mlp_legalized.py"), "mlp");
  ASSERT_NE(vm, nullptr);
  auto input = runtime::ReadNpy(ReadFile("runtime/testdata/mlp_dynamic_batch.input.npy"), "input");
  auto expected =
      runtime::ReadNpy(ReadFile("runtime/testdata/mlp_dynamic_batch.output.npy"), "output");
  ASSERT_TRUE(input.ok()) << input.status();
  ASSERT_TRUE(expected.ok()) << expected.status();
  absl::StatusOr<Value> out = vm->Invoke("main", {Value(*input)});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_NE(out->as_tensor(), nullptr);
  ExpectClose(*out->as_tensor(), *expected, 1e-4);
  // A wrong input is refused with the parameter and the dimension named.
  Tensor wrong = *Tensor::Empty({4, 63}, *runtime::ParseDataType("float32"));
  EXPECT_THAT(vm->Invoke("main", {Value(wrong)}).status().message(),
              HasSubstr("argument 'input' of 'main': dimension 1 is 63, expected 64"));
  Tensor ints = *Tensor::Empty({4, 64}, *runtime::ParseDataType("int32"));
  EXPECT_THAT(vm->Invoke("main", {Value(ints)}).status().message(),
              HasSubstr("argument 'input' of 'main': expected dtype float32, got int32"));
}

// A symbolic batch: compiled once, run for n = 1, 4, 7; the PrimFuncs bind n from their buffers.
constexpr const char* kSymbolic = R"(
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def scale_rows(a: T.handle, s: T.handle, o: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n, T.int64(3)), "float32")
        S = T.match_buffer(s, (T.int64(3),), "float32")
        O = T.match_buffer(o, (n, T.int64(3)), "float32")
        for i, j in T.grid(n, T.int64(3)):
            with T.block("O"):
                vi, vj = T.axis.remap("SS", [i, j])
                O[vi, vj] = A[vi, vj] * S[vj]

    @T.prim_func(private=True)
    def row_sum(a: T.handle, o: T.handle):
        n = T.int64()
        A = T.match_buffer(a, (n, T.int64(3)), "float32")
        O = T.match_buffer(o, (n,), "float32")
        for i, k in T.grid(n, T.int64(3)):
            with T.block("O"):
                vi, vk = T.axis.remap("SR", [i, k])
                with T.init():
                    O[vi] = T.float32(0)
                O[vi] = O[vi] + A[vi, vk]

    @R.function
    def main(x: R.Tensor(("n", 3), dtype="float32"), s: R.Tensor((3,), dtype="float32")) -> R.Tuple(R.Tensor(("n", 3), dtype="float32"), R.Tensor(("n",), dtype="float32")):
        n = T.int64()
        cls = Module
        with R.dataflow():
            y = R.call_tir(cls.scale_rows, (x, s), out_sinfo=R.Tensor((n, 3), dtype="float32"))
            z = R.call_tir(cls.row_sum, (y,), out_sinfo=R.Tensor((n,), dtype="float32"))
            r = (y, z)
            R.output(r)
        return r
)";

TEST(BuildTest, SymbolicBatchRunsForEverySize) {
  auto vm = BuildAndLoad(kSymbolic, "symbolic");
  ASSERT_NE(vm, nullptr);
  Tensor s = *Tensor::Empty({3}, *runtime::ParseDataType("float32"));
  for (int j = 0; j < 3; ++j) static_cast<float*>(s.data())[j] = j + 1.0f;
  for (int64_t n : {1, 4, 7}) {
    Tensor x = *Tensor::Empty({n, 3}, *runtime::ParseDataType("float32"));
    for (int64_t i = 0; i < n * 3; ++i) static_cast<float*>(x.data())[i] = 0.5f * i;
    absl::StatusOr<Value> out = vm->Invoke("main", {Value(x), Value(s)});
    ASSERT_TRUE(out.ok()) << out.status();
    const runtime::Tuple* t = out->as_tuple();
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(t->size(), 2u);
    const Tensor& y = *(*t)[0].as_tensor();
    const Tensor& z = *(*t)[1].as_tensor();
    ASSERT_EQ(y.shape()[0], n);
    ASSERT_EQ(z.shape()[0], n);
    for (int64_t i = 0; i < n; ++i) {
      float sum = 0;
      for (int j = 0; j < 3; ++j) {
        float want = 0.5f * (i * 3 + j) * (j + 1);
        EXPECT_EQ(static_cast<const float*>(y.data())[i * 3 + j], want);
        sum += want;
      }
      EXPECT_NEAR(static_cast<const float*>(z.data())[i], sum, 1e-5);
    }
  }
  Tensor bad = *Tensor::Empty({2, 4}, *runtime::ParseDataType("float32"));
  EXPECT_THAT(vm->Invoke("main", {Value(bad), Value(s)}).status().message(),
              HasSubstr("argument 'x' of 'main': dimension 1 is 4, expected 3"));
  Tensor s4 = *Tensor::Empty({4}, *runtime::ParseDataType("float32"));
  Tensor x2 = *Tensor::Empty({2, 3}, *runtime::ParseDataType("float32"));
  EXPECT_THAT(vm->Invoke("main", {Value(x2), Value(s4)}).status().message(),
              HasSubstr("argument 's' of 'main': dimension 0 is 4, expected 3"));
}

// The .kiln artifact: one file that loads and runs, with a manifest describing the entry points;
// corruption and a foreign target are refused.
// A shape known at compile time is a constant of the executable, not built by make_shape on
// every call; a symbolic one is built from the shape heap.
TEST(BuildTest, StaticShapesAreConstantsOfTheExecutable) {
  auto disassemble = [](const std::string& text, const std::string& name) -> std::string {
    absl::StatusOr<ir::IRModule> mod = script::ParseScript(text, name);
    EXPECT_TRUE(mod.ok()) << mod.status();
    if (!mod.ok()) return "";
    absl::StatusOr<BuiltModule> built = Build(*mod, "llvm");
    EXPECT_TRUE(built.ok()) << built.status();
    if (!built.ok()) return "";
    auto exec = runtime::vm::Executable::Deserialize(built->executable);
    EXPECT_TRUE(exec.ok()) << exec.status();
    return exec.ok() ? exec->AsText() : "";
  };
  std::string symbolic = disassemble(kSymbolic, "symbolic");
  EXPECT_THAT(symbolic, HasSubstr("make_shape"));
  EXPECT_THAT(symbolic, HasSubstr("vm.builtin.empty"));
  std::string static_text = disassemble(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")):
        with R.dataflow():
            y = R.add(x, x)
            z = R.multiply(y, x)
            R.output(z)
        return z
)",
                                        "static");
  EXPECT_THAT(static_text, ::testing::Not(HasSubstr("make_shape")));
  EXPECT_THAT(static_text, HasSubstr("shape(2, 3)"));
}

TEST(BuildTest, ArtifactLoadsRunsAndIsVerified) {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(kSymbolic, "symbolic.py");
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<std::string> bytes = BuildArtifact(*mod, "llvm");
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<runtime::LoadedArtifact> loaded = runtime::LoadArtifact(*bytes, nullptr);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const kiln::v1::ArtifactManifest& m = loaded->manifest;
  EXPECT_EQ(m.target(), "llvm");
  EXPECT_EQ(m.digest().size(), 64u);
  ASSERT_EQ(m.functions_size(), 1);
  const kiln::v1::EntryFunction& main_fn = m.functions(0);
  EXPECT_EQ(main_fn.name(), "main");
  ASSERT_EQ(main_fn.params_size(), 2);
  EXPECT_EQ(main_fn.params(0).name(), "x");
  EXPECT_EQ(main_fn.params(0).dtype(), "float32");
  EXPECT_EQ(main_fn.params(0).dims(0), "n");
  EXPECT_EQ(main_fn.params(0).dims(1), "3");
  EXPECT_EQ(main_fn.result().kind(), "tuple");
  Tensor x = *Tensor::Empty({2, 3}, *runtime::ParseDataType("float32"));
  Tensor s = *Tensor::Empty({3}, *runtime::ParseDataType("float32"));
  for (int i = 0; i < 6; ++i) static_cast<float*>(x.data())[i] = 1.0f;
  for (int i = 0; i < 3; ++i) static_cast<float*>(s.data())[i] = 2.0f;
  absl::StatusOr<Value> out = loaded->vm->Invoke("main", {Value(x), Value(s)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(static_cast<const float*>((*out->as_tuple())[1].as_tensor()->data())[1], 6.0f);

  std::string corrupt = *bytes;
  corrupt[corrupt.size() / 2] ^= 0x5a;
  absl::Status bad = runtime::LoadArtifact(corrupt, nullptr).status();
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(runtime::LoadArtifact("not an artifact", nullptr).status().message(),
              HasSubstr("not a Kiln artifact"));
  absl::StatusOr<std::string> arm =
      BuildArtifact(*mod, "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72");
  ASSERT_TRUE(arm.ok()) << arm.status();
  absl::Status foreign = runtime::LoadArtifact(*arm, nullptr).status();
  EXPECT_EQ(foreign.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(foreign.message(), HasSubstr("compiled for aarch64"));
  // Without the host check the file still parses and verifies.
  EXPECT_TRUE(runtime::ParseArtifact(*arm, /*check_host=*/false).ok());
  // The digest covers where the code may run: the same kernels for a board with SVE are another
  // artifact, and a manifest edited to claim fewer CPU features no longer verifies.
  absl::StatusOr<std::string> sve =
      BuildArtifact(*mod, "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72 -mattr=+sve");
  ASSERT_TRUE(sve.ok()) << sve.status();
  absl::StatusOr<kiln::v1::ArtifactProto> a72 = runtime::ParseArtifact(*arm, false);
  absl::StatusOr<kiln::v1::ArtifactProto> with_sve = runtime::ParseArtifact(*sve, false);
  ASSERT_TRUE(a72.ok() && with_sve.ok());
  EXPECT_NE(a72->manifest().digest(), with_sve->manifest().digest());
  kiln::v1::ArtifactProto edited = *with_sve;
  edited.mutable_manifest()->clear_cpu_features();
  absl::Status tampered = runtime::ParseArtifact(edited.SerializeAsString(), false).status();
  EXPECT_EQ(tampered.code(), absl::StatusCode::kDataLoss) << tampered;
}

TEST(BuildTest, TheManifestNamesEveryKernelItsOperatorsAndItsWork) {
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4, 8), "float32"), w: R.Tensor((8, 16), "float32"), b: R.Tensor((16,), "float32")) -> R.Tensor((4, 16), "float32"):
        with R.dataflow():
            y = R.matmul(x, w)
            z = R.add(y, b)
            r = R.nn.relu(z)
            s = R.nn.log_softmax(r, axis=-1)
            R.output(s)
        return s
)",
                                                         "layer.py");
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<std::string> bytes = BuildArtifact(*mod, "llvm");
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<kiln::v1::ArtifactProto> a = runtime::ParseArtifact(*bytes, true);
  ASSERT_TRUE(a.ok()) << a.status();
  std::map<std::string, const kiln::v1::KernelInfo*> kernels;
  for (const kiln::v1::KernelInfo& k : a->manifest().kernels()) kernels[k.name()] = &k;
  ASSERT_TRUE(kernels.count("fused_matmul_add_relu")) << a->manifest().DebugString();
  const kiln::v1::KernelInfo& layer = *kernels["fused_matmul_add_relu"];
  EXPECT_THAT(layer.fused_ops(), ElementsAre("relax.matmul", "relax.add", "relax.nn.relu"));
  // A multiply-add per (i, j, k), then the bias add and the ReLU's max per output.
  EXPECT_EQ(layer.flops(), 2.0 * 4 * 16 * 8 + 2.0 * 4 * 16);
  ASSERT_TRUE(kernels.count("log_softmax")) << a->manifest().DebugString();
  EXPECT_THAT(kernels["log_softmax"]->fused_ops(), ElementsAre("relax.nn.log_softmax"));
  EXPECT_GT(kernels["log_softmax"]->flops(), 0);
  // The manifest alone, read without the executable and kernels, is the same manifest.
  absl::StatusOr<kiln::v1::ArtifactManifest> manifest = runtime::ReadArtifactManifest(*bytes);
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  EXPECT_EQ(manifest->SerializeAsString(), a->manifest().SerializeAsString());
  EXPECT_FALSE(runtime::ReadArtifactManifest(bytes->substr(0, 20)).ok());  // cut in the manifest
  EXPECT_FALSE(runtime::ReadArtifactManifest("garbage bytes").ok());
}

// The user-facing example of the Relax RFC (seeds/relax_upstreaming_rfc_digest.md §3), in
// today's TVMScript: a dataflow block, match_cast binding a new variable m, an operator, flatten
// to the computed dimension n * m, call_tir of a PrimFunc, and call_packed to a function the
// embedder registers — here one that updates the result in place.
TEST(BuildTest, RelaxRfcExampleRunsWithARegisteredPackedFunction) {
  const char* text = R"(
@I.ir_module
class Module:
    @T.prim_func
    def tir_exp_func(x: T.handle, y: T.handle):
        n = T.int64()
        X = T.match_buffer(x, (n,), "float32")
        Y = T.match_buffer(y, (n,), "float32")
        for i in T.grid(n):
            with T.block("Y"):
                vi = T.axis.remap("S", [i])
                Y[vi] = T.exp(X[vi])

    @R.function(pure=False)
    def relax_func(x: R.Tensor(("n", "k"), dtype="float32"), w: R.Tensor(dtype="float32", ndim=2)):
        n = T.int64()
        k = T.int64()
        m = T.int64()
        cls = Module
        with R.dataflow():
            lv0 = R.match_cast(w, R.Tensor((k, m), dtype="float32"))
            lv1: R.Tensor((n, m), dtype="float32") = R.matmul(x, lv0)
            lv2: R.Tensor((n * m,), dtype="float32") = R.flatten(lv1)
            gv0 = R.call_tir(cls.tir_exp_func, (lv2,), out_sinfo=R.Tensor((n * m,), dtype="float32"))
            R.output(gv0)
        _ = R.call_packed("custom_inplace_update", gv0, sinfo_args=R.Object)
        return gv0
)";
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(text, "rfc.py");
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<BuiltModule> built = Build(*mod, "llvm");
  ASSERT_TRUE(built.ok()) << built.status();
  auto lib = runtime::KernelLibrary::LoadFromMemory(built->kernels, "rfc");
  ASSERT_TRUE(lib.ok()) << lib.status();
  auto exec = runtime::vm::Executable::Deserialize(built->executable);
  ASSERT_TRUE(exec.ok()) << exec.status();
  // The disassembly shows the computed dimension n * m evaluated by a shape function.
  EXPECT_THAT(exec->AsText(), HasSubstr("vm_shape_func_relax_func_0"));
  runtime::FunctionRegistry user;
  int calls = 0;
  ASSERT_TRUE(user.Register("custom_inplace_update",
                            [&](absl::Span<const Value> args) -> absl::StatusOr<Value> {
                              ++calls;
                              const Tensor* t = args[0].as_tensor();
                              float* data = static_cast<float*>(t->data());
                              for (int64_t i = 0; i < t->NumElements(); ++i) data[i] += 1;
                              return Value();
                            })
                  .ok());
  auto vm = runtime::vm::VirtualMachine::Create(
      std::make_shared<const runtime::vm::Executable>(std::move(*exec)), *lib,
      std::make_shared<runtime::ThreadPool>(1), &user);
  ASSERT_TRUE(vm.ok()) << vm.status();
  for (auto [n, k, m] : {std::tuple<int64_t, int64_t, int64_t>{2, 3, 4}, {5, 2, 1}}) {
    Tensor x = *Tensor::Empty({n, k}, DLDataType{kDLFloat, 32, 1});
    Tensor w = *Tensor::Empty({k, m}, DLDataType{kDLFloat, 32, 1});
    for (int64_t i = 0; i < n * k; ++i) static_cast<float*>(x.data())[i] = 0.1f * (i % 7) - 0.3f;
    for (int64_t i = 0; i < k * m; ++i) static_cast<float*>(w.data())[i] = 0.05f * (i % 5);
    absl::StatusOr<Value> out = (*vm)->Invoke("relax_func", {Value(x), Value(w)});
    ASSERT_TRUE(out.ok()) << out.status();
    const Tensor* y = out->as_tensor();
    ASSERT_NE(y, nullptr);
    ASSERT_EQ(y->NumElements(), n * m);
    ASSERT_EQ(y->ndim(), 1);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double dot = 0;
        for (int64_t p = 0; p < k; ++p)
          dot +=
              static_cast<float*>(x.data())[i * k + p] * static_cast<float*>(w.data())[p * m + j];
        EXPECT_NEAR(static_cast<const float*>(y->data())[i * m + j], std::exp(dot) + 1, 1e-5);
      }
  }
  EXPECT_EQ(calls, 2);
  // A weight whose rows do not match k fails in match_cast, naming it.
  Tensor x = *Tensor::Empty({2, 3}, DLDataType{kDLFloat, 32, 1});
  Tensor w = *Tensor::Empty({4, 2}, DLDataType{kDLFloat, 32, 1});
  absl::StatusOr<Value> bad = (*vm)->Invoke("relax_func", {Value(x), Value(w)});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("dimension 0 is 4, expected 3"));
}

TEST(BuildTest, OperatorsThatCannotBeLoweredAreNamed) {
  const char* text = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 3, "h", "w"), dtype="float32")):
        with R.dataflow():
            y = R.nn.adaptive_avg_pool2d(x, output_size=[2, 2])
            R.output(y)
        return y
)";
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(text, "pool.py");
  ASSERT_TRUE(mod.ok()) << mod.status();
  EXPECT_THAT(Build(*mod, "llvm").status().message(),
              HasSubstr("in function 'main', binding 'y': relax.nn.adaptive_avg_pool2d: needs "
                        "static spatial sizes"));
}

}  // namespace
}  // namespace kiln::backend
