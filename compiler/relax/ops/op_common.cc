#include "compiler/relax/ops/op_common.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "compiler/relax/struct_info.h"

namespace kiln::ir::relax::ops {

const std::string& OpName(const CallNode& call) { return call.op.as<OpNode>()->name; }

absl::Status OpError(const CallNode& call, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(OpName(call), ": ", what));
}

absl::StatusOr<const TensorStructInfoNode*> TensorArg(const CallNode& call, size_t index) {
  if (index >= call.args.size()) {
    return OpError(call, absl::StrCat("missing argument ", index));
  }
  const auto* t = call.args[index]->struct_info().as<TensorStructInfoNode>();
  if (t == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(OpName(call), " argument ", index,
                                                   ": expected a tensor, got ",
                                                   ToString(call.args[index]->struct_info())));
  }
  return t;
}

const std::vector<PrimExpr>* DimsOf(const TensorStructInfoNode& t) {
  if (const std::vector<PrimExpr>* dims = t.dims()) return dims;
  if (t.shape) {
    if (const auto* s = t.shape->struct_info().as<ShapeStructInfoNode>()) {
      return s->values ? &*s->values : nullptr;
    }
  }
  return nullptr;
}

const std::vector<PrimExpr>* ShapeArg(const CallNode& call, size_t index) {
  const auto* s = call.args[index]->struct_info().as<ShapeStructInfoNode>();
  return s != nullptr && s->values ? &*s->values : nullptr;
}

absl::StatusOr<std::vector<PrimExpr>> KnownDims(const CallNode& call, size_t index) {
  absl::StatusOr<const TensorStructInfoNode*> t = TensorArg(call, index);
  if (!t.ok()) return t.status();
  const std::vector<PrimExpr>* dims = DimsOf(**t);
  if (dims == nullptr) {
    return OpError(call, absl::StrCat("argument ", index, " needs a known shape"));
  }
  return *dims;
}

PrimExpr Product(const std::vector<PrimExpr>& dims, arith::Analyzer* ana) {
  PrimExpr product = Int64(1);
  for (const PrimExpr& d : dims) product = product * d;
  return ana->Simplify(product);
}

PrimExpr Int64(int64_t value) { return IntImm(DataType::Int(64), value); }

namespace {

// An attribute value as an integer: an IntImm, or a negated one (`-1` parses as 0 - 1).
std::optional<int64_t> AsInt(const ObjectRef& value) {
  const auto* e = value.as<PrimExprNode>();
  if (e == nullptr) return std::nullopt;
  PrimExpr expr = value.as_ref<PrimExprNode>();
  if (const int64_t* c = AsConstInt(expr)) return *c;
  if (const auto* b = expr.as<BinaryNode>(); b != nullptr && b->kind() == NodeKind::kSub) {
    const int64_t* x = AsConstInt(b->a);
    const int64_t* y = AsConstInt(b->b);
    if (x != nullptr && y != nullptr) return *x - *y;
  }
  return std::nullopt;
}

std::optional<double> AsDouble(const ObjectRef& value) {
  if (std::optional<int64_t> i = AsInt(value)) return static_cast<double>(*i);
  PrimExpr expr = value.as_ref<PrimExprNode>();
  if (!expr) return std::nullopt;
  if (const auto* f = expr.as<FloatImmNode>()) return f->value;
  if (const auto* b = expr.as<BinaryNode>(); b != nullptr && b->kind() == NodeKind::kSub) {
    std::optional<double> x = AsDouble(b->a), y = AsDouble(b->b);
    if (x && y) return *x - *y;
  }
  if (const auto* c = expr.as<CastNode>()) return AsDouble(c->value);
  return std::nullopt;
}

}  // namespace

absl::StatusOr<int64_t> IntAttr(const CallNode& call, const char* key, int64_t fallback) {
  ObjectRef v = GetAttr(call.attrs, key);
  if (!v) return fallback;
  std::optional<int64_t> i = AsInt(v);
  if (!i) return OpError(call, absl::StrCat("attribute '", key, "' must be an integer"));
  return *i;
}

absl::StatusOr<double> FloatAttr(const CallNode& call, const char* key, double fallback) {
  ObjectRef v = GetAttr(call.attrs, key);
  if (!v) return fallback;
  std::optional<double> d = AsDouble(v);
  if (!d) return OpError(call, absl::StrCat("attribute '", key, "' must be a number"));
  return *d;
}

absl::StatusOr<bool> BoolAttr(const CallNode& call, const char* key, bool fallback) {
  ObjectRef v = GetAttr(call.attrs, key);
  if (!v) return fallback;
  std::optional<int64_t> i = AsInt(v);
  if (!i) return OpError(call, absl::StrCat("attribute '", key, "' must be True or False"));
  return *i != 0;
}

absl::StatusOr<std::string> StringAttr(const CallNode& call, const char* key,
                                       const std::string& fallback) {
  ObjectRef v = GetAttr(call.attrs, key);
  if (!v) return fallback;
  const auto* s = v.as<ir::StringImmNode>();
  if (s == nullptr) return OpError(call, absl::StrCat("attribute '", key, "' must be a string"));
  return s->value;
}

absl::StatusOr<bool> NhwcAttr(const CallNode& call, const char* key, bool fallback) {
  absl::StatusOr<std::string> layout = StringAttr(call, key, fallback ? "NHWC" : "NCHW");
  if (!layout.ok()) return layout.status();
  if (*layout != "NCHW" && *layout != "NHWC") {
    return OpError(call, absl::StrCat(key, " \"", *layout, "\" is not supported (NCHW, NHWC)"));
  }
  return *layout == "NHWC";
}

absl::StatusOr<std::optional<std::vector<int64_t>>> IntListAttr(const CallNode& call,
                                                                const char* key) {
  ObjectRef v = GetAttr(call.attrs, key);
  if (!v) return std::optional<std::vector<int64_t>>();
  std::vector<int64_t> out;
  if (const auto* list = v.as<ArrayNode>()) {
    for (const ObjectRef& item : list->items) {
      std::optional<int64_t> i = AsInt(item);
      if (!i) return OpError(call, absl::StrCat("attribute '", key, "' must list integers"));
      out.push_back(*i);
    }
  } else if (std::optional<int64_t> i = AsInt(v)) {
    out.push_back(*i);
  } else {
    return OpError(call, absl::StrCat("attribute '", key, "' must be an integer or a list"));
  }
  return std::optional<std::vector<int64_t>>(std::move(out));
}

absl::StatusOr<int> NormalizeAxis(const CallNode& call, int64_t axis, int ndim) {
  if (axis < -ndim || axis >= ndim) {
    return OpError(call,
                   absl::StrCat("axis ", axis, " is out of range for a tensor of rank ", ndim));
  }
  return static_cast<int>(axis < 0 ? axis + ndim : axis);
}

absl::StatusOr<std::vector<int>> ReduceAxes(const CallNode& call, const char* key, int ndim) {
  absl::StatusOr<std::optional<std::vector<int64_t>>> list = IntListAttr(call, key);
  if (!list.ok()) return list.status();
  std::vector<int> axes;
  if (!list->has_value()) {
    for (int i = 0; i < ndim; ++i) axes.push_back(i);
    return axes;
  }
  return NormalizeAxes(call, **list, ndim);
}

absl::StatusOr<std::vector<int>> NormalizeAxes(const CallNode& call,
                                               const std::vector<int64_t>& list, int ndim) {
  std::vector<int> axes;
  for (int64_t a : list) {
    absl::StatusOr<int> n = NormalizeAxis(call, a, ndim);
    if (!n.ok()) return n.status();
    if (std::find(axes.begin(), axes.end(), *n) != axes.end())
      return OpError(call, absl::StrCat("axis ", a, " is repeated"));
    axes.push_back(*n);
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

absl::StatusOr<std::optional<std::vector<PrimExpr>>> BroadcastShapes(
    const CallNode& call, const std::vector<const std::vector<PrimExpr>*>& shapes,
    arith::Analyzer* ana) {
  size_t ndim = 0;
  for (const auto* s : shapes) ndim = std::max(ndim, s->size());
  std::vector<PrimExpr> out(ndim);
  for (size_t i = 0; i < ndim; ++i) {
    PrimExpr dim;
    for (const auto* s : shapes) {
      int k = static_cast<int>(s->size()) - static_cast<int>(ndim) + static_cast<int>(i);
      if (k < 0) continue;
      const PrimExpr& d = (*s)[k];
      const int64_t* c = AsConstInt(d);
      if (c != nullptr && *c == 1) {
        if (!dim) dim = d;
        continue;
      }
      const int64_t* cur = dim ? AsConstInt(dim) : nullptr;
      if (!dim || (cur != nullptr && *cur == 1)) {
        dim = d;
      } else if (d.get() == dim.get() || ana->CanProveEqual(d, dim)) {
        continue;
      } else if (c != nullptr && cur != nullptr) {
        return OpError(call,
                       absl::StrCat("cannot broadcast dimension ", i, " (", *cur, " vs ", *c, ")"));
      } else {
        return std::optional<std::vector<PrimExpr>>();
      }
    }
    out[i] = dim;
  }
  return std::optional<std::vector<PrimExpr>>(std::move(out));
}

tir::Indices BroadcastIndex(const Buffer& input, const Buffer& output,
                            const tir::Indices& out_index) {
  tir::Indices index;
  size_t skip = out_index.size() - input->shape.size();
  for (size_t i = 0; i < input->shape.size(); ++i) {
    const int64_t* c = AsConstInt(input->shape[i]);
    const int64_t* o_extent = AsConstInt(output->shape[skip + i]);
    const PrimExpr& o = out_index[skip + i];
    const bool broadcast = c != nullptr && *c == 1 && (o_extent == nullptr || *o_extent != 1);
    index.push_back(broadcast ? IntImm(o->dtype, 0) : o);
  }
  return index;
}

PrimExpr GuardedLoad(const Buffer& x, tir::Indices index, const PrimExpr& inside,
                     const PrimExpr& fill) {
  for (size_t i = 0; i < index.size(); ++i) {
    PrimExpr zero = IntImm(index[i]->dtype, 0);
    index[i] = Min(Max(index[i], zero), x->shape[i] - 1);
  }
  return Select(inside, tir::Load(x, index), fill);
}

PrimExpr Div(PrimExpr a, PrimExpr b) { return Binary(NodeKind::kDiv, std::move(a), std::move(b)); }

}  // namespace kiln::ir::relax::ops
