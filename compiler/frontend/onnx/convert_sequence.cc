// Sequences inside a graph (SequenceConstruct, SequenceEmpty, SequenceInsert, SequenceAt,
// SequenceErase, SequenceLength, ConcatFromSequence, SplitToSequence): a sequence is its tensors
// as the import knows them, so its length is known at import time. A position may be known
// only at run time: then the tensors must share a shape, each result is chosen among them by
// `where` on the position, and a position out of range stops the run.
#include "absl/strings/str_cat.h"
#include "compiler/frontend/onnx/convert_context.h"
#include "compiler/frontend/onnx/shape_math.h"
#include "runtime/support/status_macros.h"

namespace kiln::frontend::onnx_import {
namespace {

Value Sequence(std::vector<Value> items) {
  Value v;
  v.is_sequence = true;
  v.sequence = std::move(items);
  return v;
}

absl::StatusOr<std::vector<Value>> SequenceIn(Context& ctx, size_t i) {
  if (!ctx.Has(i) || !ctx.In(i).is_sequence) {
    return ctx.Error(absl::StrCat("input ", i, " must be a sequence"));
  }
  return ctx.In(i).sequence;
}

// A position into a sequence of `n`, valid from -n to n - 1 (to n when `end_ok`), normalized.
struct Position {
  std::optional<int64_t> known;
  Expr at_run_time;  // int64 [], normalized and checked, when not known
};

absl::StatusOr<Position> ReadPosition(Context& ctx, size_t i, int64_t n, bool end_ok) {
  const int64_t last = end_ok ? n : n - 1;
  if (absl::StatusOr<std::vector<int64_t>> known = ctx.ConstInts(i); known.ok()) {
    if (known->size() != 1) return ctx.Error("a position is one value");
    int64_t p = (*known)[0];
    if (p < -n || p > last) {
      return ctx.Error(absl::StrCat("position ", p, " is outside ", -n, " to ", last));
    }
    return Position{p < 0 ? p + n : p, Expr()};
  }
  ShapeMath m{ctx};
  KILN_ASSIGN_OR_RETURN(Expr given, ctx.Tensor(i));
  KILN_ASSIGN_OR_RETURN(Expr p, m.One(given));
  KILN_ASSIGN_OR_RETURN(Expr negative, m.Call("relax.less", {p, m.I(0)}));
  KILN_ASSIGN_OR_RETURN(Expr shifted, m.Call("relax.add", {p, m.I(n)}));
  KILN_ASSIGN_OR_RETURN(p, m.Call("relax.where", {negative, shifted, p}));
  // In range: 0 <= p <= last; binding p as a size checks the first, the count the second.
  KILN_ASSIGN_OR_RETURN(Expr room, m.Call("relax.subtract", {m.I(last), p}));
  KILN_ASSIGN_OR_RETURN(Expr beyond, m.Negatives(room));
  KILN_ASSIGN_OR_RETURN(Expr below, m.Negatives(p));
  KILN_RETURN_IF_ERROR(ctx.DimsAtRunTime(p, {beyond, below}).status());
  KILN_ASSIGN_OR_RETURN(p, m.Call("relax.reshape", {p, ir::relax::MakeShape({})}));
  return Position{std::nullopt, p};
}

// Whether the tensors share one shape and dtype: what choosing among them at run time needs.
absl::Status SameShapes(Context& ctx, const std::vector<Expr>& tensors) {
  for (size_t k = 1; k < tensors.size(); ++k) {
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> a, ctx.Shape(tensors[0]));
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> b, ctx.Shape(tensors[k]));
    bool same = a.size() == b.size() && ctx.DType(tensors[0]) == ctx.DType(tensors[k]);
    for (size_t d = 0; same && d < a.size(); ++d) same = ctx.analyzer()->CanProveEqual(a[d], b[d]);
    if (!same) {
      return ctx.Unsupported(
          "a position known only at run time into a sequence of tensors of different shapes");
    }
  }
  return absl::OkStatus();
}

// choices[index] where `index` (int64 []) is known only at run time.
absl::StatusOr<Expr> Choose(Context& ctx, const std::vector<Expr>& choices, const Expr& index) {
  KILN_RETURN_IF_ERROR(SameShapes(ctx, choices));
  ShapeMath m{ctx};
  Expr out = choices[0];
  for (size_t j = 1; j < choices.size(); ++j) {
    KILN_ASSIGN_OR_RETURN(Expr here, m.Call("relax.equal", {index, m.I(static_cast<int64_t>(j))}));
    KILN_ASSIGN_OR_RETURN(out, m.Call("relax.where", {here, choices[j], out}));
  }
  return out;
}

absl::StatusOr<std::vector<Expr>> Tensors(const std::vector<Value>& items) {
  std::vector<Expr> out;
  for (const Value& v : items) {
    KILN_ASSIGN_OR_RETURN(Expr e, Materialize(v));
    out.push_back(e);
  }
  return out;
}

absl::StatusOr<Outputs> SequenceEmpty(Context&) { return Outputs{Sequence({})}; }

absl::StatusOr<Outputs> SequenceConstruct(Context& ctx) {
  std::vector<Value> items;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.Has(i) || ctx.In(i).is_sequence) return ctx.Error("takes tensors");
    items.push_back(ctx.In(i));
  }
  return Outputs{Sequence(std::move(items))};
}

absl::StatusOr<Outputs> SequenceLength(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(std::vector<Value> items, SequenceIn(ctx, 0));
  return Outputs{KnownInts({I64(static_cast<int64_t>(items.size()))}, {})};
}

absl::StatusOr<Outputs> SequenceInsert(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(std::vector<Value> items, SequenceIn(ctx, 0));
  if (!ctx.Has(1) || ctx.In(1).is_sequence) return ctx.Error("input 1 must be a tensor");
  const Value& inserted = ctx.In(1);
  const int64_t n = static_cast<int64_t>(items.size());
  if (!ctx.Has(2)) {
    items.push_back(inserted);
    return Outputs{Sequence(std::move(items))};
  }
  KILN_ASSIGN_OR_RETURN(Position p, ReadPosition(ctx, 2, n, /*end_ok=*/true));
  if (p.known) {
    items.insert(items.begin() + *p.known, inserted);
    return Outputs{Sequence(std::move(items))};
  }
  // Element j: the old j before the position, the new one at it, the old j - 1 after it.
  KILN_ASSIGN_OR_RETURN(std::vector<Expr> old, Tensors(items));
  KILN_ASSIGN_OR_RETURN(Expr fresh, Materialize(inserted));
  std::vector<Expr> all = old;
  all.push_back(fresh);
  KILN_RETURN_IF_ERROR(SameShapes(ctx, all));
  ShapeMath m{ctx};
  std::vector<Value> out;
  for (int64_t j = 0; j <= n; ++j) {
    Expr e = fresh;
    if (j > 0) {  // after the position
      KILN_ASSIGN_OR_RETURN(Expr after, m.Call("relax.less", {p.at_run_time, m.I(j)}));
      KILN_ASSIGN_OR_RETURN(e, m.Call("relax.where", {after, old[j - 1], e}));
    }
    if (j < n) {  // before it
      KILN_ASSIGN_OR_RETURN(Expr before, m.Call("relax.greater", {p.at_run_time, m.I(j)}));
      KILN_ASSIGN_OR_RETURN(e, m.Call("relax.where", {before, old[j], e}));
    }
    out.push_back(One(e)[0]);
  }
  return Outputs{Sequence(std::move(out))};
}

absl::StatusOr<Outputs> SequenceAt(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(std::vector<Value> items, SequenceIn(ctx, 0));
  if (items.empty()) return ctx.Error("the sequence is empty");
  KILN_ASSIGN_OR_RETURN(Position p, ReadPosition(ctx, 1, static_cast<int64_t>(items.size()),
                                                 /*end_ok=*/false));
  if (p.known) return Outputs{items[*p.known]};
  KILN_ASSIGN_OR_RETURN(std::vector<Expr> tensors, Tensors(items));
  return OneOf(Choose(ctx, tensors, p.at_run_time));
}

absl::StatusOr<Outputs> SequenceErase(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(std::vector<Value> items, SequenceIn(ctx, 0));
  if (items.empty()) return ctx.Error("the sequence is empty");
  const int64_t n = static_cast<int64_t>(items.size());
  if (!ctx.Has(1)) {
    items.pop_back();
    return Outputs{Sequence(std::move(items))};
  }
  KILN_ASSIGN_OR_RETURN(Position p, ReadPosition(ctx, 1, n, /*end_ok=*/false));
  if (p.known) {
    items.erase(items.begin() + *p.known);
    return Outputs{Sequence(std::move(items))};
  }
  // Element j: the old j before the position, the old j + 1 from it on.
  KILN_ASSIGN_OR_RETURN(std::vector<Expr> old, Tensors(items));
  KILN_RETURN_IF_ERROR(SameShapes(ctx, old));
  ShapeMath m{ctx};
  std::vector<Value> out;
  for (int64_t j = 0; j + 1 < n; ++j) {
    KILN_ASSIGN_OR_RETURN(Expr before, m.Call("relax.greater", {p.at_run_time, m.I(j)}));
    KILN_ASSIGN_OR_RETURN(Expr e, m.Call("relax.where", {before, old[j], old[j + 1]}));
    out.push_back(One(e)[0]);
  }
  return Outputs{Sequence(std::move(out))};
}

absl::StatusOr<Outputs> ConcatFromSequence(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(std::vector<Value> items, SequenceIn(ctx, 0));
  if (items.empty()) return ctx.Error("the sequence is empty");
  KILN_ASSIGN_OR_RETURN(std::vector<Expr> tensors, Tensors(items));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> first, ctx.Shape(tensors[0]));
  const bool stack = ctx.Int("new_axis", 0) != 0;
  const int64_t rank = static_cast<int64_t>(first.size()) + (stack ? 1 : 0);
  if (!ctx.HasAttr("axis")) return ctx.Error("axis is required");
  int64_t axis = ctx.Int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return ctx.Error("axis out of range");
  if (stack) {
    for (Expr& t : tensors) {
      KILN_ASSIGN_OR_RETURN(t, ctx.Call("relax.expand_dims", {t}, {{"axis", IntsAttr({axis})}}));
    }
  }
  return OneOf(
      ctx.Call("relax.concat", {ir::relax::MakeTuple(tensors)}, {{"axis", IntAttr(axis)}}));
}

absl::StatusOr<Outputs> SplitToSequence(Context& ctx) {
  KILN_ASSIGN_OR_RETURN(Expr x, ctx.Tensor(0));
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> dims, ctx.Shape(x));
  const int64_t rank = static_cast<int64_t>(dims.size());
  int64_t axis = ctx.Int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return ctx.Error("axis out of range");
  if (ctx.Has(1) && !ctx.ConstInts(1).ok()) {  // sizes only the run knows, their number known
    KILN_ASSIGN_OR_RETURN(Expr given, ctx.Tensor(1));
    KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, ctx.Shape(given));
    if (shape.empty()) return ctx.Unsupported("a chunk size known only at run time");
    KILN_ASSIGN_OR_RETURN(Outputs parts, SplitAtRunTime(ctx, x, dims[axis], axis, -1));
    return Outputs{Sequence(std::move(parts))};
  }
  const int64_t* extent = ir::AsConstInt(dims[axis]);
  if (extent == nullptr) return ctx.Unsupported("SplitToSequence along an axis not known");
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (!ctx.Has(1)) {  // pieces of 1, the axis dropped unless keepdims
    sizes.assign(static_cast<size_t>(*extent), 1);
    squeeze = ctx.Int("keepdims", 1) == 0;
  } else {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> split, ctx.ConstInts(1));
    const bool scalar = ctx.In(1).elems_shape.empty() && split.size() == 1;
    if (scalar) {  // chunks of that size, the last smaller
      if (split[0] < 1) return ctx.Error("split must be positive");
      for (int64_t at = 0; at < *extent; at += split[0]) {
        sizes.push_back(std::min(split[0], *extent - at));
      }
    } else {
      sizes = split;
      int64_t total = 0;
      for (int64_t s : sizes) total += s;
      if (total != *extent) return ctx.Error("split sizes do not add up to the axis");
    }
  }
  std::vector<Value> items;
  int64_t at = 0;
  for (int64_t s : sizes) {
    KILN_ASSIGN_OR_RETURN(Expr piece, ctx.Call("relax.strided_slice", {x},
                                               {{"axes", IntsAttr({axis})},
                                                {"begin", IntsAttr({at})},
                                                {"end", IntsAttr({at + s})}}));
    if (squeeze) {
      KILN_ASSIGN_OR_RETURN(piece,
                            ctx.Call("relax.squeeze", {piece}, {{"axis", IntsAttr({axis})}}));
    }
    items.push_back(One(piece)[0]);
    at += s;
  }
  return Outputs{Sequence(std::move(items))};
}

}  // namespace

void RegisterSequenceConverters(ConverterTable* t) {
  (*t)["SequenceEmpty"] = SequenceEmpty;
  (*t)["SequenceConstruct"] = SequenceConstruct;
  (*t)["SequenceLength"] = SequenceLength;
  (*t)["SequenceInsert"] = SequenceInsert;
  (*t)["SequenceAt"] = SequenceAt;
  (*t)["SequenceErase"] = SequenceErase;
  (*t)["ConcatFromSequence"] = ConcatFromSequence;
  (*t)["SplitToSequence"] = SplitToSequence;
}

}  // namespace kiln::frontend::onnx_import
