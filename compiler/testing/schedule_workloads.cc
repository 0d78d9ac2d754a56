#include "compiler/testing/schedule_workloads.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "compiler/backend/toolchain.h"
#include "compiler/script/script_parser.h"
#include "runtime/library.h"
#include "runtime/npy.h"
#include "runtime/support/subprocess.h"
#include "runtime/tensor.h"

namespace kiln::tir::testing {

std::string MatmulScript(int64_t m, int64_t n, int64_t k) {
  return absl::StrReplaceAll(
      R"(
@T.prim_func
def matmul(A: T.Buffer((M, K), "float32"), B: T.Buffer((K, N), "float32"), C: T.Buffer((M, N), "float32")):
    T.func_attr({"tir.noalias": T.bool(True)})
    for i, j, k in T.grid(M, N, K):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads(A[vi, vk], B[vk, vj])
            T.writes(C[vi, vj])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
)",
      {{"M", absl::StrCat(m)}, {"N", absl::StrCat(n)}, {"K", absl::StrCat(k)}});
}

std::string Conv2dScript() {
  return R"(
@T.prim_func
def conv2d(X: T.Buffer((1, 8, 10, 10), "float32"), W: T.Buffer((8, 8, 3, 3), "float32"), Y: T.Buffer((1, 8, 8, 8), "float32")):
    T.func_attr({"tir.noalias": T.bool(True)})
    for n, f, y, x, c, ky, kx in T.grid(1, 8, 8, 8, 8, 3, 3):
        with T.block("Y"):
            vn, vf, vy, vx, vc, vky, vkx = T.axis.remap("SSSSRRR", [n, f, y, x, c, ky, kx])
            T.reads(X[vn, vc, vy + vky, vx + vkx], W[vf, vc, vky, vkx])
            T.writes(Y[vn, vf, vy, vx])
            with T.init():
                Y[vn, vf, vy, vx] = T.float32(0)
            Y[vn, vf, vy, vx] = Y[vn, vf, vy, vx] + X[vn, vc, vy + vky, vx + vkx] * W[vf, vc, vky, vkx]
)";
}

std::string SoftmaxScript() {
  return R"(
@T.prim_func
def softmax(A: T.Buffer((16, 64), "float32"), S: T.Buffer((16, 64), "float32")):
    T.func_attr({"tir.noalias": T.bool(True)})
    with T.block("root"):
        M = T.alloc_buffer((16,), "float32")
        E = T.alloc_buffer((16, 64), "float32")
        Z = T.alloc_buffer((16,), "float32")
        for i, k in T.grid(16, 64):
            with T.block("max"):
                vi, vk = T.axis.remap("SR", [i, k])
                T.reads(A[vi, vk])
                T.writes(M[vi])
                with T.init():
                    M[vi] = T.float32(-3.0e38)
                M[vi] = T.max(M[vi], A[vi, vk])
        for i, j in T.grid(16, 64):
            with T.block("exp"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(A[vi, vj], M[vi])
                T.writes(E[vi, vj])
                E[vi, vj] = T.exp(A[vi, vj] - M[vi])
        for i, k in T.grid(16, 64):
            with T.block("sum"):
                vi, vk = T.axis.remap("SR", [i, k])
                T.reads(E[vi, vk])
                T.writes(Z[vi])
                with T.init():
                    Z[vi] = T.float32(0)
                Z[vi] = Z[vi] + E[vi, vk]
        for i, j in T.grid(16, 64):
            with T.block("norm"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(E[vi, vj], Z[vi])
                T.writes(S[vi, vj])
                S[vi, vj] = E[vi, vj] / Z[vi]
)";
}

std::string ChainScript() {
  return R"(
@T.prim_func
def chain(A: T.Buffer((32, 48), "float32"), B: T.Buffer((32, 48), "float32"), D: T.Buffer((32, 48), "float32")):
    T.func_attr({"tir.noalias": T.bool(True)})
    with T.block("root"):
        S = T.alloc_buffer((32, 48), "float32")
        R = T.alloc_buffer((32, 48), "float32")
        for i, j in T.grid(32, 48):
            with T.block("add"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(A[vi, vj], B[vi, vj])
                T.writes(S[vi, vj])
                S[vi, vj] = A[vi, vj] + B[vi, vj]
        for i, j in T.grid(32, 48):
            with T.block("relu"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(S[vi, vj])
                T.writes(R[vi, vj])
                R[vi, vj] = T.max(S[vi, vj], T.float32(0))
        for i, j in T.grid(32, 48):
            with T.block("scale"):
                vi, vj = T.axis.remap("SS", [i, j])
                T.reads(R[vi, vj])
                T.writes(D[vi, vj])
                D[vi, vj] = R[vi, vj] * T.float32(2)
)";
}

absl::StatusOr<ir::IRModule> Parse(const std::string& script) {
  return script::ParseScript("@I.ir_module\nclass Module:\n" +
                             absl::StrReplaceAll(script, {{"\n", "\n    "}}));
}

namespace {

// PrimFunc `name` alone in a module, marked scheduled so that no default schedule touches it.
absl::StatusOr<ir::IRModule> AsScheduled(const ir::IRModule& mod, const std::string& name,
                                         ir::PrimFunc* f) {
  *f = mod->Lookup(name).as_ref<ir::PrimFuncNode>();
  if (!*f) return absl::NotFoundError(absl::StrCat("no PrimFunc ", name));
  ir::IRModuleBuilder builder;
  if (absl::Status s = builder.Add(mod->GetGlobalVar(name),
                                   ir::WithFuncAttr(*f, "tir.is_scheduled", ir::Bool(true)));
      !s.ok()) {
    return s;
  }
  return builder.Build();
}

// One float32 tensor per parameter buffer, uniform in [-1, 1) from `seed`.
absl::StatusOr<std::vector<runtime::Tensor>> SeededBuffers(const ir::PrimFunc& f, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<runtime::Tensor> tensors;
  for (const auto& [param, buffer] : f->buffer_map) {
    std::vector<int64_t> shape;
    for (const ir::PrimExpr& d : buffer->shape) shape.push_back(*ir::AsConstInt(d));
    absl::StatusOr<runtime::Tensor> t =
        runtime::Tensor::Empty(shape, *runtime::ParseDataType("float32"));
    if (!t.ok()) return t.status();
    float* p = static_cast<float*>(t->data());
    for (int64_t i = 0; i < t->NumElements(); ++i) p[i] = dist(rng);
    tensors.push_back(*t);
  }
  return tensors;
}

std::vector<float> Contents(const runtime::Tensor& t) {
  const float* p = static_cast<const float*>(t.data());
  return std::vector<float>(p, p + t.NumElements());
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

absl::Status WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  out.close();
  return out ? absl::OkStatus() : absl::InternalError(absl::StrCat("cannot write ", path));
}

}  // namespace

absl::StatusOr<std::vector<std::vector<float>>> RunPrimFunc(const ir::IRModule& mod,
                                                            const std::string& name,
                                                            uint32_t seed) {
  ir::PrimFunc f;
  absl::StatusOr<ir::IRModule> alone = AsScheduled(mod, name, &f);
  if (!alone.ok()) return alone.status();
  absl::StatusOr<std::string> so = backend::BuildKernelLibrary(*alone, "llvm");
  if (!so.ok()) return so.status();
  absl::StatusOr<std::shared_ptr<runtime::KernelLibrary>> lib =
      runtime::KernelLibrary::LoadFromMemory(*so, name);
  if (!lib.ok()) return lib.status();
  auto pool = std::make_shared<runtime::ThreadPool>(2);
  absl::StatusOr<runtime::Function> fn = (*lib)->GetFunction(name, pool);
  if (!fn.ok()) return fn.status();
  absl::StatusOr<std::vector<runtime::Tensor>> tensors = SeededBuffers(f, seed);
  if (!tensors.ok()) return tensors.status();
  std::vector<runtime::Value> args(tensors->begin(), tensors->end());
  absl::StatusOr<runtime::Value> ran = (*fn)(args);
  if (!ran.ok()) return ran.status();
  std::vector<std::vector<float>> out;
  for (const runtime::Tensor& t : *tensors) out.push_back(Contents(t));
  return out;
}

absl::StatusOr<std::vector<std::vector<float>>> RunPrimFuncOnAarch64(const ir::IRModule& mod,
                                                                     const std::string& name,
                                                                     uint32_t seed) {
  ir::PrimFunc f;
  absl::StatusOr<ir::IRModule> alone = AsScheduled(mod, name, &f);
  if (!alone.ok()) return alone.status();
  absl::StatusOr<std::string> so =
      backend::BuildKernelLibrary(*alone, "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72");
  if (!so.ok()) return so.status();
  const char* tmp = std::getenv("TEST_TMPDIR");
  const char* srcdir = std::getenv("TEST_SRCDIR");
  if (tmp == nullptr || srcdir == nullptr) {
    return absl::FailedPreconditionError("RunPrimFuncOnAarch64 runs under bazel test only");
  }
  static int calls = 0;
  std::string dir = absl::StrCat(tmp, "/aarch64_", name, "_", ++calls);
  std::filesystem::create_directories(dir);
  std::vector<std::string> argv = {"/usr/bin/qemu-aarch64",  // Debian's qemu-user
                                   absl::StrCat(srcdir, "/kiln/runtime/run_kernel_aarch64"),
                                   dir + "/kernel.so", name};
  if (absl::Status s = WriteFile(argv[2], *so); !s.ok()) return s;
  absl::StatusOr<std::vector<runtime::Tensor>> tensors = SeededBuffers(f, seed);
  if (!tensors.ok()) return tensors.status();
  for (size_t i = 0; i < tensors->size(); ++i) {
    argv.push_back(absl::StrCat(dir, "/buffer", i, ".npy"));
    absl::StatusOr<std::string> npy = runtime::WriteNpy((*tensors)[i]);
    if (!npy.ok()) return npy.status();
    if (absl::Status s = WriteFile(argv.back(), *npy); !s.ok()) return s;
  }
  absl::StatusOr<runtime::ChildResult> ran = runtime::RunChild(argv, "", runtime::ChildOptions());
  if (!ran.ok()) return ran.status();
  if (!ran->exited_ok()) {
    return absl::InternalError(
        absl::StrCat("qemu-aarch64 run_kernel ", ran->Describe(0), ": ", ran->error_tail));
  }
  std::vector<std::vector<float>> out;
  for (size_t i = 0; i < tensors->size(); ++i) {
    absl::StatusOr<std::string> bytes = ReadFile(argv[4 + i]);
    if (!bytes.ok()) return bytes.status();
    absl::StatusOr<runtime::Tensor> t = runtime::ReadNpy(*bytes, argv[4 + i]);
    if (!t.ok()) return t.status();
    out.push_back(Contents(*t));
  }
  return out;
}

}  // namespace kiln::tir::testing
