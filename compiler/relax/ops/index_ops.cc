// Index operators: take (clamped), gather_elements, gather_nd, scatter_elements and scatter_nd
// (the scatters legalized as gathers: each output element reduces over the index positions aimed
// at it).
#include <functional>

#include "absl/strings/str_cat.h"
#include "compiler/ir/printer.h"
#include "compiler/relax/ops/op_common.h"
#include "compiler/relax/struct_info.h"

namespace kiln::ir::relax::ops {
namespace {

using tir::Combiner;
using tir::Indices;
using tir::Load;

// ---- take(x, indices, axis): gathers along axis; out-of-range indices are clamped ----

// An index read from a tensor, as int64, a negative one counting back from `dim` (NumPy's and
// ONNX's convention for every gather).
PrimExpr GatherIndex(const PrimExpr& loaded, const PrimExpr& dim) {
  PrimExpr at = Cast(DataType::Int(64), loaded);
  return Select(at < IntImm(DataType::Int(64), 0), at + Cast(DataType::Int(64), dim), at);
}

// The data and index operands every gather reads: both shapes known, integer indices.
struct GatherOperands {
  std::vector<PrimExpr> data, indices;
  DataType dtype;  // the data's, which the result keeps
};

absl::StatusOr<GatherOperands> ReadGatherOperands(const CallNode& call) {
  absl::StatusOr<std::vector<PrimExpr>> dims = KnownDims(call, 0);
  if (!dims.ok()) return dims.status();
  absl::StatusOr<std::vector<PrimExpr>> idx = KnownDims(call, 1);
  if (!idx.ok()) return idx.status();
  DataType idx_type = call.args[1]->struct_info().as<TensorStructInfoNode>()->dtype;
  if (!idx_type.is_void() && !idx_type.is_integral())
    return OpError(call, absl::StrCat("indices must be integers, got ", idx_type.ToString()));
  return GatherOperands{*dims, *idx, call.args[0]->struct_info().as<TensorStructInfoNode>()->dtype};
}

absl::StatusOr<StructInfo> InferTake(const CallNode& call, const OpInferContext&) {
  absl::StatusOr<GatherOperands> g = ReadGatherOperands(call);
  if (!g.ok()) return g.status();
  absl::StatusOr<int64_t> axis_attr = IntAttr(call, "axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  absl::StatusOr<int> axis = NormalizeAxis(call, *axis_attr, static_cast<int>(g->data.size()));
  if (!axis.ok()) return axis.status();
  std::vector<PrimExpr> out(g->data.begin(), g->data.begin() + *axis);
  out.insert(out.end(), g->indices.begin(), g->indices.end());
  out.insert(out.end(), g->data.begin() + *axis + 1, g->data.end());
  return TensorSInfo(std::move(out), g->dtype);
}

absl::Status LegalizeTake(const CallNode& call, const std::vector<Buffer>& in,
                          const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  const Buffer &x = in[0], &idx = in[1];
  absl::StatusOr<int64_t> axis_attr = IntAttr(call, "axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  absl::StatusOr<int> axis = NormalizeAxis(call, *axis_attr, static_cast<int>(x->shape.size()));
  if (!axis.ok()) return axis.status();
  size_t ni = idx->shape.size();
  b.Compute("T_take", out[0], [&](const Indices& i) {
    Indices where(i.begin() + *axis, i.begin() + *axis + ni);
    PrimExpr at = GatherIndex(Load(idx, where), x->shape[*axis]);
    Indices src(i.begin(), i.begin() + *axis);
    src.push_back(at);
    src.insert(src.end(), i.begin() + *axis + ni, i.end());
    return GuardedLoad(x, src, Bool(true), MakeConst(x->dtype, 0));
  });
  return absl::OkStatus();
}

// ---- gather_elements(x, indices, axis): out[i] = x[i with i[axis] = indices[i]] ----

absl::StatusOr<StructInfo> InferGatherElements(const CallNode& call, const OpInferContext&) {
  absl::StatusOr<GatherOperands> g = ReadGatherOperands(call);
  if (!g.ok()) return g.status();
  if (g->indices.size() != g->data.size()) {
    return OpError(call, absl::StrCat("indices have rank ", g->indices.size(), ", the data rank ",
                                      g->data.size(), "; they must be equal"));
  }
  absl::StatusOr<int64_t> axis_attr = IntAttr(call, "axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  absl::StatusOr<int> axis = NormalizeAxis(call, *axis_attr, static_cast<int>(g->data.size()));
  if (!axis.ok()) return axis.status();
  return TensorSInfo(g->indices, g->dtype);
}

// Negative indices count from the end; one still out of range reads 0.
absl::Status LegalizeGatherElements(const CallNode& call, const std::vector<Buffer>& in,
                                    const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  const Buffer &x = in[0], &idx = in[1];
  absl::StatusOr<int64_t> axis_attr = IntAttr(call, "axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  absl::StatusOr<int> axis = NormalizeAxis(call, *axis_attr, static_cast<int>(x->shape.size()));
  if (!axis.ok()) return axis.status();
  b.Compute("T_gather_elements", out[0], [&](const Indices& i) {
    PrimExpr at = GatherIndex(Load(idx, i), x->shape[*axis]);
    Indices src = i;
    src[*axis] = at;
    return GuardedLoad(x, src, Bool(true), MakeConst(x->dtype, 0));
  });
  return absl::OkStatus();
}

// ---- gather_nd(x, indices, batch_dims): indices' last axis holds m coordinates into x ----
// out[b..., i..., j...] = x[b..., indices[b..., i..., 0..m-1], j...] (ONNX GatherND, TVM's op).

absl::StatusOr<StructInfo> InferGatherND(const CallNode& call, const OpInferContext&) {
  absl::StatusOr<GatherOperands> g = ReadGatherOperands(call);
  if (!g.ok()) return g.status();
  const std::vector<PrimExpr>* dims = &g->data;
  const std::vector<PrimExpr>* idx = &g->indices;
  absl::StatusOr<int64_t> batch = IntAttr(call, "batch_dims", 0);
  if (!batch.ok()) return batch.status();
  if (idx->empty()) return OpError(call, "indices need at least one axis");
  const int64_t* m = AsConstInt(idx->back());
  if (m == nullptr) return OpError(call, "the last axis of indices must have a known length");
  int64_t r = static_cast<int64_t>(dims->size()), q = static_cast<int64_t>(idx->size());
  if (*batch < 0 || *batch >= std::min(r, q) || *m < 1 || *batch + *m > r) {
    return OpError(
        call, absl::StrCat("batch_dims ", *batch, " and ", *m,
                           " coordinates do not fit data of rank ", r, " and indices of rank ", q));
  }
  std::vector<PrimExpr> out(idx->begin(), idx->end() - 1);
  out.insert(out.end(), dims->begin() + *batch + *m, dims->end());
  return TensorSInfo(std::move(out), g->dtype);
}

absl::Status LegalizeGatherND(const CallNode& call, const std::vector<Buffer>& in,
                              const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  const Buffer &x = in[0], &idx = in[1];
  absl::StatusOr<int64_t> batch_attr = IntAttr(call, "batch_dims", 0);
  if (!batch_attr.ok()) return batch_attr.status();
  const size_t batch = static_cast<size_t>(*batch_attr);
  const size_t q = idx->shape.size();
  const int64_t m = *AsConstInt(idx->shape.back());
  b.Compute("T_gather_nd", out[0], [&](const Indices& i) {
    // i = [batch..., rest of indices' leading axes..., trailing axes of x...]
    Indices src(i.begin(), i.begin() + static_cast<long>(batch));
    Indices at(i.begin(), i.begin() + static_cast<long>(q - 1));
    for (int64_t k = 0; k < m; ++k) {
      at.push_back(Int64(k));
      src.push_back(GatherIndex(Load(idx, at), x->shape[batch + static_cast<size_t>(k)]));
      at.pop_back();
    }
    src.insert(src.end(), i.begin() + static_cast<long>(q - 1), i.end());
    return GuardedLoad(x, src, Bool(true), MakeConst(x->dtype, 0));
  });
  return absl::OkStatus();
}

// ---- scatter_elements(data, indices, updates, axis, reduction) and
//      scatter_nd(data, indices, updates, reduction): TVM's ops, ONNX's semantics ----
// Written as gathers, so that every output element is computed once by one reduction: the
// updates aimed at an element are combined over the positions r of indices that name it.
// reduction "update" keeps the last one (the highest r), as ONNX's reference does; "add", "mul",
// "max" and "min" fold them into the data's element.

absl::StatusOr<Combiner> ScatterCombiner(const CallNode& call, bool* last_wins) {
  absl::StatusOr<std::string> r = StringAttr(call, "reduction", "update");
  if (!r.ok()) return r.status();
  *last_wins = *r == "update";
  if (*r == "update" || *r == "max") return Combiner::kMax;
  if (*r == "add") return Combiner::kSum;
  if (*r == "mul") return Combiner::kProd;
  if (*r == "min") return Combiner::kMin;
  return OpError(
      call, absl::StrCat("reduction \"", *r, "\" is not one of update, add, mul, max and min"));
}

absl::StatusOr<StructInfo> InferScatter(const CallNode& call, const OpInferContext&) {
  absl::StatusOr<GatherOperands> g = ReadGatherOperands(call);
  if (!g.ok()) return g.status();
  absl::StatusOr<std::vector<PrimExpr>> updates = KnownDims(call, 2);
  if (!updates.ok()) return updates.status();
  DataType update_type = call.args[2]->struct_info().as<TensorStructInfoNode>()->dtype;
  if (update_type != g->dtype) {
    return OpError(call, absl::StrCat("updates have dtype ", update_type.ToString(), ", the data ",
                                      g->dtype.ToString()));
  }
  bool last_wins;
  if (absl::StatusOr<Combiner> c = ScatterCombiner(call, &last_wins); !c.ok()) return c.status();
  size_t r = g->data.size(), q = g->indices.size();
  if (OpName(call) == "relax.scatter_elements") {
    absl::StatusOr<int64_t> axis = IntAttr(call, "axis", 0);
    if (!axis.ok()) return axis.status();
    if (absl::StatusOr<int> a = NormalizeAxis(call, *axis, static_cast<int>(r)); !a.ok())
      return a.status();
    if (q != r || updates->size() != r) {
      return OpError(call, absl::StrCat("data, indices and updates have ranks ", r, ", ", q,
                                        " and ", updates->size(), "; they must be equal"));
    }
  } else {
    const int64_t* k = q == 0 ? nullptr : AsConstInt(g->indices.back());
    if (k == nullptr || *k < 1 || static_cast<size_t>(*k) > r)
      return OpError(call,
                     "the last axis of indices must have a known length from 1 to the "
                     "data's rank");
    if (updates->size() != q - 1 + r - static_cast<size_t>(*k)) {
      return OpError(call, absl::StrCat("updates have rank ", updates->size(), ", expected ",
                                        q - 1 + r - static_cast<size_t>(*k)));
    }
  }
  return call.args[0]->struct_info();
}

// `matches(p, r)` says whether position r of indices (and updates, read at `update_at(p, r)`)
// aims at output element p; `reduce_extents` spans r.
absl::Status LegalizeScatterAsGather(
    const CallNode& call, const Buffer& data, const Buffer& updates, const Buffer& out,
    const std::vector<PrimExpr>& reduce_extents,
    const std::function<PrimExpr(const Indices&, const Indices&)>& matches,
    const std::function<Indices(const Indices&, const Indices&)>& update_at,
    tir::ComputeBuilder& b) {
  bool last_wins;
  absl::StatusOr<Combiner> combiner = ScatterCombiner(call, &last_wins);
  if (!combiner.ok()) return combiner.status();
  const DataType i64 = DataType::Int(64);
  if (last_wins) {
    // The highest position aimed at each element, or -1: then that update, else the data.
    Buffer last = b.Temp("scatter_last", i64, out->shape);
    b.Reduce("scatter_last", last, reduce_extents, Combiner::kMax,
             [&](const Indices& p, const Indices& r) {
               PrimExpr flat = Int64(0);
               for (size_t k = 0; k < r.size(); ++k)
                 flat = flat * Cast(i64, reduce_extents[k]) + Cast(i64, r[k]);
               return Select(matches(p, r), flat, Int64(-1));
             });
    b.Compute("T_scatter", out, [&](const Indices& p) {
      PrimExpr flat = Load(last, p);
      Indices r(reduce_extents.size());
      PrimExpr rest = Select(flat < Int64(0), Int64(0), flat);
      for (size_t k = reduce_extents.size(); k-- > 0;) {
        r[k] = FloorMod(rest, Cast(i64, reduce_extents[k]));
        rest = FloorDiv(rest, Cast(i64, reduce_extents[k]));
      }
      return Select(flat < Int64(0), Load(data, p), Load(updates, update_at(p, r)));
    });
    return absl::OkStatus();
  }
  Buffer folded = b.Temp("scatter_folded", out->dtype, out->shape);
  PrimExpr identity = tir::ReduceIdentity(*combiner, out->dtype);
  b.Reduce("scatter_folded", folded, reduce_extents, *combiner,
           [&](const Indices& p, const Indices& r) {
             return Select(matches(p, r), Load(updates, update_at(p, r)), identity);
           });
  b.Compute("T_scatter", out, [&](const Indices& p) {
    PrimExpr x = Load(data, p), u = Load(folded, p);
    switch (*combiner) {
      case Combiner::kSum:
        return x + u;
      case Combiner::kProd:
        return x * u;
      case Combiner::kMax:
        return Max(x, u);
      case Combiner::kMin:
        return Min(x, u);
    }
    return x;
  });
  return absl::OkStatus();
}

absl::Status LegalizeScatterElements(const CallNode& call, const std::vector<Buffer>& in,
                                     const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  const Buffer &data = in[0], &idx = in[1], &updates = in[2];
  absl::StatusOr<int64_t> axis_attr = IntAttr(call, "axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  absl::StatusOr<int> axis = NormalizeAxis(call, *axis_attr, static_cast<int>(data->shape.size()));
  if (!axis.ok()) return axis.status();
  const size_t a = static_cast<size_t>(*axis);
  // Indices may be smaller than the data on every axis: only elements inside their extent on the
  // other axes can be aimed at.
  auto update_at = [&](const Indices& p, const Indices& r) {
    Indices at = p;
    at[a] = r[0];
    return at;
  };
  auto matches = [&](const Indices& p, const Indices& r) {
    PrimExpr inside = Bool(true);
    for (size_t k = 0; k < p.size(); ++k) {
      if (k != a) inside = Binary(NodeKind::kAnd, inside, p[k] < idx->shape[k]);
    }
    PrimExpr target = GuardedLoad(idx, update_at(p, r), inside, MakeConst(idx->dtype, 0));
    return Binary(
        NodeKind::kAnd, inside,
        Binary(NodeKind::kEQ, GatherIndex(target, data->shape[a]), Cast(DataType::Int(64), p[a])));
  };
  auto guarded_update_at = [&](const Indices& p, const Indices& r) {
    Indices at = update_at(p, r);
    for (size_t k = 0; k < at.size(); ++k) {
      if (k != a) at[k] = Min(at[k], idx->shape[k] - MakeConst(idx->shape[k]->dtype, 1));
    }
    return at;
  };
  return LegalizeScatterAsGather(call, data, updates, out[0], {idx->shape[a]}, matches,
                                 guarded_update_at, b);
}

absl::Status LegalizeScatterND(const CallNode& call, const std::vector<Buffer>& in,
                               const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  const Buffer &data = in[0], &idx = in[1], &updates = in[2];
  const size_t k = static_cast<size_t>(*AsConstInt(idx->shape.back()));
  std::vector<PrimExpr> positions(idx->shape.begin(), idx->shape.end() - 1);
  auto matches = [&](const Indices& p, const Indices& r) {
    PrimExpr all = Bool(true);
    Indices at = r;
    for (size_t j = 0; j < k; ++j) {
      at.push_back(Int64(static_cast<int64_t>(j)));
      all = Binary(NodeKind::kAnd, all,
                   Binary(NodeKind::kEQ, GatherIndex(Load(idx, at), data->shape[j]),
                          Cast(DataType::Int(64), p[j])));
      at.pop_back();
    }
    return all;
  };
  auto update_at = [&](const Indices& p, const Indices& r) {
    Indices at = r;
    at.insert(at.end(), p.begin() + static_cast<long>(k), p.end());
    return at;
  };
  return LegalizeScatterAsGather(call, data, updates, out[0], positions, matches, update_at, b);
}

}  // namespace

void RegisterIndexOps(std::vector<OpInfo>* ops) {
  ops->push_back({"relax.take", 2, InferTake, true, OpPattern::kInjective,
                  "gathers along axis by integer indices", LegalizeTake});
  ops->push_back({"relax.gather_elements", 2, InferGatherElements, true, OpPattern::kInjective,
                  "gathers x along axis at an index per output element (ONNX GatherElements)",
                  LegalizeGatherElements});
  ops->push_back({"relax.gather_nd", 2, InferGatherND, true, OpPattern::kInjective,
                  "gathers slices of x at coordinate tuples in indices' last axis (batch_dims)",
                  LegalizeGatherND});
  ops->push_back({"relax.scatter_elements", 3, InferScatter, true, OpPattern::kOpaque,
                  "writes updates into a copy of data along axis at per-element indices "
                  "(reduction update, add, mul, max or min; ONNX ScatterElements)",
                  LegalizeScatterElements});
  ops->push_back({"relax.scatter_nd", 3, InferScatter, true, OpPattern::kOpaque,
                  "writes update slices into a copy of data at coordinate tuples in indices' "
                  "last axis (reduction as scatter_elements; ONNX ScatterND)",
                  LegalizeScatterND});
}

}  // namespace kiln::ir::relax::ops
