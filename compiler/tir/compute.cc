#include "compiler/tir/compute.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "compiler/ir/tir_functor.h"

namespace kiln::tir {

using namespace kiln::ir;  // NOLINT: this file only builds TIR

PrimExpr ReduceIdentity(Combiner combiner, DataType dtype) {
  switch (combiner) {
    case Combiner::kSum:
      return MakeConst(dtype, 0);
    case Combiner::kProd:
      return MakeConst(dtype, 1);
    case Combiner::kMax:
    case Combiner::kMin: {
      bool max = combiner == Combiner::kMax;
      if (dtype.is_float()) {
        // The largest finite value, as TVM does: kernels are compiled without infinities.
        double big = dtype.bits() == 64   ? std::numeric_limits<double>::max()
                     : dtype.bits() == 16 ? 65504.0
                                          : std::numeric_limits<float>::max();
        return FloatImm(dtype, max ? -big : big);
      }
      if (dtype.is_bool()) return IntImm(dtype, max ? 0 : 1);
      if (dtype.is_uint()) {
        uint64_t hi = dtype.bits() >= 64 ? std::numeric_limits<uint64_t>::max()
                                         : (uint64_t{1} << dtype.bits()) - 1;
        return IntImm(dtype, max ? 0 : static_cast<int64_t>(hi));
      }
      int64_t hi = dtype.bits() >= 64 ? std::numeric_limits<int64_t>::max()
                                      : (int64_t{1} << (dtype.bits() - 1)) - 1;
      return IntImm(dtype, max ? -hi - 1 : hi);
    }
  }
  return nullptr;
}

PrimExpr Load(const Buffer& buffer, const Indices& indices) {
  return Make<BufferLoadNode>(buffer->dtype, buffer, indices);
}

namespace {

PrimExpr Combine(Combiner combiner, const PrimExpr& acc, const PrimExpr& value) {
  switch (combiner) {
    case Combiner::kSum:
      return acc + value;
    case Combiner::kProd:
      return acc * value;
    case Combiner::kMax:
      return Max(acc, value);
    case Combiner::kMin:
      return Min(acc, value);
  }
  return nullptr;
}

// The regions a block reads: every load of a buffer other than its output, one point each (the
// lowering passes do not depend on them; they document the access for printing and analysis).
std::vector<BufferRegion> ReadRegions(const PrimExpr& value, const Buffer& out) {
  std::vector<BufferRegion> reads;
  PostOrderVisit(value, [&](const PrimExpr& e) {
    const auto* load = e.as<BufferLoadNode>();
    if (load == nullptr || load->buffer == out) return;
    std::vector<Range> region;
    for (const PrimExpr& i : load->indices) region.push_back(MakeRange(i, IntImm(i->dtype, 1)));
    reads.push_back(Make<BufferRegionNode>(load->buffer, std::move(region)));
  });
  return reads;
}

std::vector<Range> PointRegion(const Indices& indices) {
  std::vector<Range> region;
  for (const PrimExpr& i : indices) region.push_back(MakeRange(i, IntImm(i->dtype, 1)));
  return region;
}

}  // namespace

PrimExpr ComputeBuilder::Rebind(const PrimExpr& e) {
  return Substitute(e, [this](const Var& v) -> PrimExpr {
    if (own_vars_.count(v.get())) return v;  // already the function's own
    auto it = rebound_.find(v.get());
    if (it == rebound_.end()) {
      Var fresh = MakeSizeVar(v->name, v->dtype);
      own_vars_.insert(fresh.get());
      it = rebound_.emplace(v.get(), fresh).first;
      rebound_order_.emplace_back(v, fresh);
    }
    return it->second;
  });
}

Buffer ComputeBuilder::Param(const std::string& name, DataType dtype,
                             const std::vector<PrimExpr>& shape) {
  std::vector<PrimExpr> dims;
  for (const PrimExpr& d : shape) dims.push_back(Rebind(d));
  Buffer buffer = MakeBuffer(name, dtype, std::move(dims));
  Var handle = MakeVar(name, DataType::Handle());
  params_.push_back(handle);
  buffer_map_.emplace_back(handle, buffer);
  return buffer;
}

Buffer ComputeBuilder::Input(const std::string& name, DataType dtype,
                             const std::vector<PrimExpr>& shape) {
  return Param(name, dtype, shape);
}

Buffer ComputeBuilder::Output(const std::string& name, DataType dtype,
                              const std::vector<PrimExpr>& shape) {
  return Param(name, dtype, shape);
}

Buffer ComputeBuilder::Temp(const std::string& name, DataType dtype,
                            const std::vector<PrimExpr>& shape) {
  std::vector<PrimExpr> dims;
  for (const PrimExpr& d : shape) dims.push_back(Rebind(d));
  Buffer buffer = MakeBuffer(name, dtype, std::move(dims));
  temps_.push_back(buffer);
  return buffer;
}

std::string ComputeBuilder::BlockName(const std::string& name) {
  int n = block_names_[name]++;
  return n == 0 ? name : absl::StrCat(name, "_", n);
}

void ComputeBuilder::Compute(const std::string& name, const Buffer& out, const IndexFn& value) {
  AddStage(
      name, out, out->shape, {},
      [&](const Indices& spatial, const Indices&) { return value(spatial); }, nullptr,
      /*accumulate=*/false, Combiner::kSum);
}

void ComputeBuilder::ComputeOver(const std::string& name, const Buffer& out,
                                 const std::vector<PrimExpr>& domain, const IndexMapFn& store_at,
                                 const IndexFn& value) {
  AddStage(
      name, out, domain, {}, [&](const Indices& spatial, const Indices&) { return value(spatial); },
      store_at,
      /*accumulate=*/false, Combiner::kSum);
}

void ComputeBuilder::Reduce(const std::string& name, const Buffer& out,
                            const std::vector<PrimExpr>& reduce_extents, Combiner combiner,
                            const ReduceFn& value) {
  AddStage(name, out, out->shape, reduce_extents, value, nullptr, /*accumulate=*/true, combiner);
}

void ComputeBuilder::AddStage(const std::string& name, const Buffer& out,
                              const std::vector<PrimExpr>& domain,
                              const std::vector<PrimExpr>& reduce_extents,
                              const std::function<PrimExpr(const Indices&, const Indices&)>& value,
                              const IndexMapFn& store_at, bool accumulate, Combiner combiner) {
  std::string block_name = BlockName(name);
  auto* block = new BlockNode();
  Block owner(block);
  block->name = block_name;
  std::vector<Var> loops;
  std::vector<PrimExpr> extents;
  Indices spatial, reduce;
  auto add_axis = [&](const PrimExpr& extent, IterKind kind, const std::string& prefix) {
    PrimExpr ext = Rebind(extent);
    DataType index = ext->dtype.is_integral() ? ext->dtype : DataType::Int(64);
    size_t k = loops.size();
    Var loop = MakeVar(absl::StrCat(prefix, k), index);
    Var iter = MakeVar(absl::StrCat("v_", prefix, k), index);
    block->iter_vars.push_back(Make<IterVarNode>(iter, MakeRange(IntImm(index, 0), ext), kind));
    loops.push_back(loop);
    extents.push_back(ext);
    (kind == IterKind::kSpatial ? spatial : reduce).push_back(iter);
  };
  for (const PrimExpr& d : domain) add_axis(d, IterKind::kSpatial, "ax");
  for (const PrimExpr& d : reduce_extents) add_axis(d, IterKind::kReduce, "k");

  PrimExpr v = value(spatial, reduce);
  if (v->dtype != out->dtype) v = Cast(out->dtype, v);
  const Indices at = store_at ? store_at(spatial) : spatial;
  block->reads = ReadRegions(v, out);
  block->writes = {Make<BufferRegionNode>(out, PointRegion(at))};
  if (accumulate) {
    block->init = Make<BufferStoreNode>(out, ReduceIdentity(combiner, out->dtype), at);
    block->reads.insert(block->reads.begin(), Make<BufferRegionNode>(out, PointRegion(at)));
    v = Combine(combiner, Load(out, at), v);
  }
  block->body = Make<BufferStoreNode>(out, v, at);

  std::vector<PrimExpr> iter_values(loops.begin(), loops.end());
  Stmt nest = Make<BlockRealizeNode>(std::move(iter_values), Bool(true), owner);
  for (size_t i = loops.size(); i-- > 0;) {
    nest = MakeFor(loops[i], IntImm(extents[i]->dtype, 0), extents[i], ForKind::kSerial, nest);
  }
  stages_.push_back(nest);
}

PrimFunc ComputeBuilder::Build() {
  auto* f = new PrimFuncNode();
  PrimFunc owner(f);
  f->params = params_;
  f->buffer_map = buffer_map_;
  std::unordered_set<const Object*> bindable;
  for (const auto& [handle, buffer] : buffer_map_) {
    for (const PrimExpr& d : buffer->shape) {
      if (d.as<VarNode>()) bindable.insert(d.get());
    }
  }
  for (const auto& [outer, own] : rebound_order_) {
    if (bindable.count(own.get()) > 0) continue;
    f->params.push_back(own);
    size_args_.push_back(outer);
  }
  Stmt body = stages_.size() == 1 ? stages_[0] : Seq(stages_);
  if (!temps_.empty()) {
    auto* root = new BlockNode();
    Block root_owner(root);
    root->name = "root";
    root->alloc_buffers = temps_;
    root->body = body;
    body = Make<BlockRealizeNode>(std::vector<PrimExpr>{}, Bool(true), root_owner);
  }
  f->body = body;
  f->attrs = WithAttr({}, "tir.noalias", Bool(true));
  return owner;
}

}  // namespace kiln::tir
