#include "compiler/tir/schedule/tensor_intrin.h"

#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "compiler/tir/schedule/ir_util.h"

namespace kiln::tir {

using namespace ir;  // NOLINT: builds TIR

namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, TensorIntrin> intrins;
};

Registry& GetRegistry() {
  static Registry* registry = new Registry();
  return *registry;
}

PrimFunc MakeFunc(const std::string& name, const std::vector<Buffer>& buffers, Stmt body) {
  auto* f = new PrimFuncNode();
  PrimFunc owner(f);
  for (const Buffer& b : buffers) {
    Var handle = MakeVar(b->name + "_handle", DataType::Handle());
    f->params.push_back(handle);
    f->buffer_map.emplace_back(handle, b);
  }
  f->body = std::move(body);
  f->attrs =
      WithAttr(WithAttr({}, "global_symbol", Make<StringImmNode>(name)), "tir.noalias", Bool(true));
  return owner;
}

PrimExpr I64(int64_t v) { return IntImm(DataType::Int(64), v); }

void RegisterBuiltins() {
  // The 4 x 16 register tile: 8 ymm accumulators with AVX2, 16 q-registers with NEON.
  TensorIntrin avx2 = MatmulMicroKernel(4, 16, 1, 8);
  TensorIntrin neon = MatmulMicroKernel(4, 16, 1, 4);
  GetRegistry().intrins.emplace("x86_avx2_fma_f32_4x16", avx2);
  GetRegistry().intrins.emplace("arm_neon_f32_4x16", neon);
}

// The first look-up or registration registers the built-ins (once).
void EnsureBuiltins() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::lock_guard<std::mutex> lock(GetRegistry().mu);
    RegisterBuiltins();
  });
}

}  // namespace

TensorIntrin MatmulMicroKernel(int mr, int nr, int kc, int lanes) {
  DataType f32 = DataType::Float(32);
  // The description: C[i, j] += A[i, k] * B[k, j] over the tile.
  Buffer a = MakeBuffer("A", f32, {I64(mr), I64(kc)});
  Buffer b = MakeBuffer("B", f32, {I64(kc), I64(nr)});
  Buffer c = MakeBuffer("C", f32, {I64(mr), I64(nr)});
  Var i = MakeVar("i"), j = MakeVar("j"), k = MakeVar("k");
  Var vi = MakeVar("vi"), vj = MakeVar("vj"), vk = MakeVar("vk");
  auto* block = new BlockNode();
  Block block_owner(block);
  block->name = "update";
  block->iter_vars = {
      Make<IterVarNode>(vi, MakeRange(I64(0), I64(mr)), IterKind::kSpatial),
      Make<IterVarNode>(vj, MakeRange(I64(0), I64(nr)), IterKind::kSpatial),
      Make<IterVarNode>(vk, MakeRange(I64(0), I64(kc)), IterKind::kReduce),
  };
  block->reads = {schedule_util::PointRegion(a, {vi, vk}), schedule_util::PointRegion(b, {vk, vj})};
  block->writes = {schedule_util::PointRegion(c, {vi, vj})};
  block->body =
      Make<BufferStoreNode>(c,
                            Make<BufferLoadNode>(f32, c, std::vector<PrimExpr>{vi, vj}) +
                                Make<BufferLoadNode>(f32, a, std::vector<PrimExpr>{vi, vk}) *
                                    Make<BufferLoadNode>(f32, b, std::vector<PrimExpr>{vk, vj}),
                            std::vector<PrimExpr>{vi, vj});
  Stmt desc = Make<BlockRealizeNode>(std::vector<PrimExpr>{i, j, k}, Bool(true), block_owner);
  desc = MakeFor(k, I64(0), I64(kc), ForKind::kSerial, desc);
  desc = MakeFor(j, I64(0), I64(nr), ForKind::kSerial, desc);
  desc = MakeFor(i, I64(0), I64(mr), ForKind::kSerial, desc);

  // The implementation: for each k, row i's accumulators C[i, v*lanes : (v+1)*lanes] take a
  // fused multiply-add of A[i, k] broadcast and a vector of B's row k. The tile's loads and
  // stores stay at fixed addresses across k, so LLVM keeps them in registers.
  Buffer ai = MakeBuffer("A", f32, {I64(mr), I64(kc)});
  Buffer bi = MakeBuffer("B", f32, {I64(kc), I64(nr)});
  Buffer ci = MakeBuffer("C", f32, {I64(mr), I64(nr)});
  Var ki = MakeVar("k"), ii = MakeVar("i"), v = MakeVar("v");
  DataType vec = f32.with_lanes(lanes);
  PrimExpr cols = Make<RampNode>(v * I64(lanes), I64(1), lanes);
  PrimExpr acc = Make<BufferLoadNode>(vec, ci, std::vector<PrimExpr>{ii, cols});
  PrimExpr row = Make<BufferLoadNode>(vec, bi, std::vector<PrimExpr>{ki, cols});
  PrimExpr scalar = Make<BufferLoadNode>(f32, ai, std::vector<PrimExpr>{ii, ki});
  PrimExpr fma = Call(vec, "fma", {Make<BroadcastNode>(scalar, lanes), row, acc});
  Stmt impl = Make<BufferStoreNode>(ci, fma, std::vector<PrimExpr>{ii, cols});
  impl = MakeFor(v, I64(0), I64(nr / lanes), ForKind::kUnrolled, impl);
  impl = MakeFor(ii, I64(0), I64(mr), ForKind::kUnrolled, impl);
  impl = MakeFor(ki, I64(0), I64(kc), ForKind::kSerial, impl);
  std::string name = absl::StrCat("matmul_f32_", mr, "x", nr, "x", kc, "_v", lanes);
  return {MakeFunc(name + "_desc", {a, b, c}, desc), MakeFunc(name + "_impl", {ai, bi, ci}, impl)};
}

absl::Status RegisterTensorIntrin(const std::string& name, PrimFunc desc, PrimFunc impl) {
  EnsureBuiltins();
  std::string what = absl::StrCat("tensor intrinsic '", name, "'");
  if (!desc || !impl) return absl::InvalidArgumentError(what + ": a function is missing");
  if (desc->buffer_map.size() != impl->buffer_map.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": the description has ", desc->buffer_map.size(),
                     " buffers, the implementation ", impl->buffer_map.size()));
  }
  for (size_t k = 0; k < desc->buffer_map.size(); ++k) {
    const Buffer& d = desc->buffer_map[k].second;
    const Buffer& i = impl->buffer_map[k].second;
    bool same = d->dtype == i->dtype && d->shape.size() == i->shape.size();
    for (size_t x = 0; same && x < d->shape.size(); ++x) {
      const int64_t* dx = AsConstInt(d->shape[x]);
      const int64_t* ix = AsConstInt(i->shape[x]);
      same = dx != nullptr && ix != nullptr && *dx == *ix;
    }
    if (!same) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": buffer ", k, " ('", d->name,
                       "') differs in dtype or constant shape between description and "
                       "implementation"));
    }
  }
  // The description: loops (through an optional root block) around one block realize.
  Stmt s = desc->body;
  if (const auto* r = s.as<BlockRealizeNode>(); r && r->block->iter_vars.empty()) {
    s = r->block->body;
  }
  while (const auto* loop = s.as<ForNode>()) s = loop->body;
  if (s.as<BlockRealizeNode>() == nullptr) {
    return absl::InvalidArgumentError(what +
                                      ": the description must be a loop nest around one block");
  }
  std::lock_guard<std::mutex> lock(GetRegistry().mu);
  if (!GetRegistry().intrins.emplace(name, TensorIntrin{desc, impl}).second) {
    return absl::AlreadyExistsError(what + " is already registered");
  }
  return absl::OkStatus();
}

absl::StatusOr<TensorIntrin> LookupTensorIntrin(const std::string& name) {
  EnsureBuiltins();
  std::lock_guard<std::mutex> lock(GetRegistry().mu);
  auto it = GetRegistry().intrins.find(name);
  if (it == GetRegistry().intrins.end()) {
    std::string known;
    for (const auto& [n, unused] : GetRegistry().intrins) absl::StrAppend(&known, " ", n);
    return absl::NotFoundError(
        absl::StrCat("no tensor intrinsic '", name, "'; registered:", known));
  }
  return it->second;
}

}  // namespace kiln::tir
