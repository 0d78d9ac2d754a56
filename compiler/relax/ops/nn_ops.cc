// Neural-network operators: linear, conv2d (NCHW or NHWC data, a kernel in any order of OIHW;
// stride, padding, dilation, groups), conv3d (NCDHW), conv2d_transpose, max/avg/adaptive-avg
// pooling. Normalization and resizing are in norm_image_ops.cc.
#include <algorithm>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "compiler/ir/printer.h"
#include "compiler/relax/ops/op_common.h"

namespace kiln::ir::relax::ops {
namespace {

using tir::Combiner;
using tir::Indices;
using tir::Load;

// ---- linear(x, w[, b]): x (..., K), w (N, K), b (N) -> (..., N) ----

absl::StatusOr<StructInfo> InferLinear(const CallNode& call, const OpInferContext& ctx) {
  if (call.args.size() != 2 && call.args.size() != 3)
    return OpError(call, "takes (x, weight) or (x, weight, bias)");
  absl::StatusOr<const TensorStructInfoNode*> x = TensorArg(call, 0);
  if (!x.ok()) return x.status();
  for (size_t i = 1; i < call.args.size(); ++i) {
    absl::StatusOr<const TensorStructInfoNode*> t = TensorArg(call, i);
    if (!t.ok()) return t.status();
    if (!(*t)->dtype.is_void() && !(*x)->dtype.is_void() && (*t)->dtype != (*x)->dtype)
      return OpError(call, absl::StrCat("argument ", i, " has dtype ", (*t)->dtype.ToString(),
                                        ", x has ", (*x)->dtype.ToString()));
  }
  const std::vector<PrimExpr>* xd = DimsOf(**x);
  absl::StatusOr<std::vector<PrimExpr>> w = KnownDims(call, 1);
  if (xd == nullptr || !w.ok()) return TensorSInfoUnknown((*x)->dtype, (*x)->ndim);
  if (w->size() != 2) return OpError(call, "the weight must be (out_features, in_features)");
  if (xd->empty()) return OpError(call, "x must have rank >= 1");
  if (ctx.analyzer->CanProve(Binary(NodeKind::kNE, xd->back(), (*w)[1]))) {
    return OpError(call, absl::StrCat("in_features differ: x has ", DebugPrint(xd->back()),
                                      ", the weight ", DebugPrint((*w)[1])));
  }
  if (call.args.size() == 3) {
    absl::StatusOr<std::vector<PrimExpr>> bias = KnownDims(call, 2);
    if (bias.ok() &&
        (bias->size() != 1 || ctx.analyzer->CanProve(Binary(NodeKind::kNE, (*bias)[0], (*w)[0])))) {
      return OpError(call, "the bias must be (out_features,)");
    }
  }
  std::vector<PrimExpr> out(xd->begin(), xd->end() - 1);
  out.push_back((*w)[0]);
  return TensorSInfo(std::move(out), (*x)->dtype);
}

absl::Status LegalizeLinear(const CallNode&, const std::vector<Buffer>& in,
                            const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  const Buffer &x = in[0], &w = in[1];
  bool bias = in.size() == 3;
  Buffer acc = bias ? b.Temp("matmul", out[0]->dtype, out[0]->shape) : out[0];
  b.Reduce("matmul", acc, {w->shape[1]}, Combiner::kSum, [&](const Indices& s, const Indices& r) {
    Indices xi(s.begin(), s.end() - 1);
    xi.push_back(r[0]);
    return Load(x, xi) * Load(w, {s.back(), r[0]});
  });
  if (bias) {
    b.Compute("T_add", out[0],
              [&](const Indices& i) { return Load(acc, i) + Load(in[2], {i.back()}); });
  }
  return absl::OkStatus();
}

// ---- Spatial windows: conv2d and pooling share the layout and window arithmetic ----

struct Window {
  bool nhwc = false;
  int64_t stride[2] = {1, 1};
  int64_t dilation[2] = {1, 1};
  int64_t pad[4] = {0, 0, 0, 0};  // top, left, bottom, right
  bool ceil_mode = false;
  int h_axis() const { return nhwc ? 1 : 2; }
  int c_axis() const { return nhwc ? 3 : 1; }
  bool padded() const { return pad[0] || pad[1] || pad[2] || pad[3]; }
};

absl::StatusOr<Window> ParseWindow(const CallNode& call, const char* layout_key) {
  Window w;
  absl::StatusOr<bool> nhwc = NhwcAttr(call, layout_key, false);
  if (!nhwc.ok()) return nhwc.status();
  w.nhwc = *nhwc;
  auto pair = [&](const char* key, int64_t* dst) -> absl::Status {
    absl::StatusOr<std::optional<std::vector<int64_t>>> v = IntListAttr(call, key);
    if (!v.ok()) return v.status();
    if (!v->has_value()) return absl::OkStatus();
    const std::vector<int64_t>& l = **v;
    if (l.size() != 1 && l.size() != 2)
      return OpError(call, absl::StrCat("'", key, "' takes 1 or 2 values"));
    dst[0] = l[0];
    dst[1] = l.size() == 2 ? l[1] : l[0];
    if (dst[0] < 1 || dst[1] < 1) return OpError(call, absl::StrCat("'", key, "' must be >= 1"));
    return absl::OkStatus();
  };
  if (absl::Status s = pair("strides", w.stride); !s.ok()) return s;
  if (absl::Status s = pair("dilation", w.dilation); !s.ok()) return s;
  absl::StatusOr<std::optional<std::vector<int64_t>>> pad = IntListAttr(call, "padding");
  if (!pad.ok()) return pad.status();
  if (pad->has_value()) {
    const std::vector<int64_t>& p = **pad;
    if (p.size() == 1) {
      std::fill(w.pad, w.pad + 4, p[0]);
    } else if (p.size() == 2) {
      w.pad[0] = w.pad[2] = p[0];
      w.pad[1] = w.pad[3] = p[1];
    } else if (p.size() == 4) {
      std::copy(p.begin(), p.end(), w.pad);
    } else {
      return OpError(call, "'padding' takes 1, 2 or 4 values");
    }
    for (int64_t v : w.pad) {
      if (v < 0) return OpError(call, "'padding' must be >= 0");
    }
  }
  absl::StatusOr<bool> ceil_mode = BoolAttr(call, "ceil_mode", false);
  if (!ceil_mode.ok()) return ceil_mode.status();
  w.ceil_mode = *ceil_mode;
  return w;
}

// The output extent of a window of `k` taps along spatial dimension `d` (0: H, 1: W).
PrimExpr WindowOut(const Window& w, int d, const PrimExpr& size, const PrimExpr& k,
                   arith::Analyzer* ana) {
  PrimExpr span = size + (w.pad[d] + w.pad[d + 2]) - (k - 1) * w.dilation[d] - 1;
  if (w.ceil_mode) span = span + (w.stride[d] - 1);
  return ana->Simplify(FloorDiv(span, Int64(w.stride[d])) + 1);
}

// conv2d(data, weight, strides, padding, dilation, groups, data_layout, kernel_layout, out_dtype)
struct ConvShape {
  Window window;
  // Where the weight keeps its output channels, input channels, height and width: any order of
  // "OIHW" (PyTorch's OIHW, TensorFlow's HWIO, TVM's OHWI for NHWC data).
  int o = 0, i = 1, h = 2, w = 3;
  int64_t groups = 1;
  // "OIHW<b>o": the output channels in blocks of b, innermost ([O / b, I, H, W, b]), the layout
  // PackConstantWeights gives a constant weight so that a vector of b output channels is one load.
  int64_t o_block = 0;
  // out_layout (default: data_layout): ConvertConvLayout's first NHWC convolution reads NCHW
  // data and writes NHWC, each input value a broadcast whatever its layout.
  bool out_nhwc = false;
  // "OHWI<b>o": [O / b, H, W, I, b], the NHWC counterpart ConvertConvLayout gives a constant
  // weight: a vector of output channels is one load, and one block's weights are contiguous.
  int64_t w_block = 0;
  // split_columns: a depthwise convolution striding 2 along NCHW rows reads its padded input
  // deinterleaved (ConvertConvLayout sets it where the target policy says).
  bool split_columns = false;
  int out_h_axis() const { return out_nhwc ? 1 : 2; }
  int out_c_axis() const { return out_nhwc ? 3 : 1; }
};

// A convolution's result dtype: its out_dtype attribute, or its data's.
absl::StatusOr<DataType> OutDtype(const CallNode& call, DataType data) {
  absl::StatusOr<std::string> out_dtype = StringAttr(call, "out_dtype", "");
  if (!out_dtype.ok()) return out_dtype.status();
  if (out_dtype->empty()) return data;
  absl::StatusOr<DataType> d = DataType::Parse(*out_dtype);
  if (!d.ok()) return OpError(call, "bad out_dtype");
  return d->is_void() ? data : *d;
}

// A convolution's operands: data of rank `data_rank` (`data_rank_error` says so otherwise) and a
// weight of rank `weight_rank`, their dims where known (else null), and the result's dtype.
struct ConvOperands {
  const std::vector<PrimExpr>* data = nullptr;
  const std::vector<PrimExpr>* weight = nullptr;
  DataType dtype;
};

absl::StatusOr<ConvOperands> ReadConvOperands(const CallNode& call, int data_rank,
                                              const char* data_rank_error, int weight_rank) {
  absl::StatusOr<const TensorStructInfoNode*> x = TensorArg(call, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<const TensorStructInfoNode*> wt = TensorArg(call, 1);
  if (!wt.ok()) return wt.status();
  absl::StatusOr<DataType> dtype = OutDtype(call, (*x)->dtype);
  if (!dtype.ok()) return dtype.status();
  if ((*x)->ndim >= 0 && (*x)->ndim != data_rank) return OpError(call, data_rank_error);
  if ((*wt)->ndim >= 0 && (*wt)->ndim != weight_rank)
    return OpError(call, absl::StrCat("weight must have rank ", weight_rank));
  return ConvOperands{DimsOf(**x), DimsOf(**wt), *dtype};
}

// The checks a convolution's channels pass: the weight's `in_c` per group times `groups` is the
// data's `channels`, and `groups` divides the output channels.
absl::Status CheckConvChannels(const CallNode& call, const OpInferContext& ctx,
                               const PrimExpr& in_c, int64_t groups, const PrimExpr& channels,
                               const PrimExpr& out_c) {
  if (ctx.analyzer->CanProve(Binary(NodeKind::kNE, in_c * groups, channels))) {
    return OpError(call, absl::StrCat("the weight expects ", DebugPrint(in_c), " x ", groups,
                                      " input channels (groups), data has ", DebugPrint(channels)));
  }
  const int64_t* oc = AsConstInt(out_c);
  if (oc != nullptr && *oc % groups != 0)
    return OpError(call, "output channels must divide by groups");
  return absl::OkStatus();
}

absl::StatusOr<ConvShape> ParseConv(const CallNode& call) {
  ConvShape c;
  absl::StatusOr<Window> w = ParseWindow(call, "data_layout");
  if (!w.ok()) return w.status();
  c.window = *w;
  absl::StatusOr<std::string> kl =
      StringAttr(call, "kernel_layout", c.window.nhwc ? "HWIO" : "OIHW");
  if (!kl.ok()) return kl.status();
  if (absl::StartsWith(*kl, "OIHW") && kl->size() > 5 && kl->back() == 'o') {
    if (!absl::SimpleAtoi(kl->substr(4, kl->size() - 5), &c.o_block) || c.o_block < 1)
      return OpError(call, absl::StrCat("kernel_layout \"", *kl, "\" has no block size"));
    if (c.window.nhwc) return OpError(call, "a blocked kernel_layout needs NCHW data");
  }
  if (absl::StartsWith(*kl, "OHWI") && kl->size() > 5 && kl->back() == 'o') {
    if (!absl::SimpleAtoi(kl->substr(4, kl->size() - 5), &c.w_block) || c.w_block < 1)
      return OpError(call, absl::StrCat("kernel_layout \"", *kl, "\" has no block size"));
  }
  std::string sorted = c.o_block ? "OIHW" : c.w_block ? "OHWI" : *kl;
  std::sort(sorted.begin(), sorted.end());
  if (sorted != "HIOW") {
    return OpError(call, absl::StrCat("kernel_layout \"", *kl,
                                      "\" is not supported (an order of O, I, H and W)"));
  }
  c.o = static_cast<int>(kl->find('O'));
  c.i = static_cast<int>(kl->find('I'));
  c.h = static_cast<int>(kl->find('H'));
  c.w = static_cast<int>(kl->find('W'));
  absl::StatusOr<int64_t> groups = IntAttr(call, "groups", 1);
  if (!groups.ok()) return groups.status();
  if (*groups < 1) return OpError(call, "groups must be >= 1");
  c.groups = *groups;
  if ((c.o_block || c.w_block) && c.groups != 1)
    return OpError(call, "a blocked kernel_layout needs groups=1");
  if (c.window.ceil_mode) return OpError(call, "ceil_mode is for pooling");
  absl::StatusOr<bool> out_nhwc = NhwcAttr(call, "out_layout", c.window.nhwc);
  if (!out_nhwc.ok()) return out_nhwc.status();
  c.out_nhwc = *out_nhwc;
  if (c.o_block && c.out_nhwc) return OpError(call, "kernel_layout \"OIHW<b>o\" writes NCHW");
  absl::StatusOr<bool> split = BoolAttr(call, "split_columns", false);
  if (!split.ok()) return split.status();
  c.split_columns = *split;
  if (c.split_columns && (c.window.nhwc || c.out_nhwc || c.o_block || c.w_block || c.o != 0 ||
                          c.i != 1 || c.window.stride[1] != 2 || c.groups == 1)) {
    return OpError(
        call, "split_columns is for a grouped NCHW/OIHW convolution striding 2 along its rows");
  }
  if (c.w_block && !c.out_nhwc) return OpError(call, "kernel_layout \"OHWI<b>o\" writes NHWC");
  return c;
}

absl::StatusOr<StructInfo> InferConv2d(const CallNode& call, const OpInferContext& ctx) {
  absl::StatusOr<ConvShape> conv = ParseConv(call);
  if (!conv.ok()) return conv.status();
  const int64_t block = conv->o_block ? conv->o_block : conv->w_block;
  absl::StatusOr<ConvOperands> operands =
      ReadConvOperands(call, 4, "data must have rank 4", block ? 5 : 4);
  if (!operands.ok()) return operands.status();
  const std::vector<PrimExpr>* xd = operands->data;
  const std::vector<PrimExpr>* wd = operands->weight;
  const DataType dtype = operands->dtype;
  if (xd == nullptr || wd == nullptr) return TensorSInfoUnknown(dtype, 4);
  const Window& win = conv->window;
  PrimExpr channels = (*xd)[win.c_axis()];
  if (block && ctx.analyzer->CanProve(Binary(NodeKind::kNE, (*wd)[4], Int64(block))))
    return OpError(call, "the weight's last dimension must be the kernel_layout's block");
  PrimExpr out_c = block ? ctx.analyzer->Simplify((*wd)[0] * block) : (*wd)[conv->o];
  PrimExpr in_c = (*wd)[conv->i];
  PrimExpr kh = (*wd)[conv->h];
  PrimExpr kw = (*wd)[conv->w];
  if (absl::Status s = CheckConvChannels(call, ctx, in_c, conv->groups, channels, out_c); !s.ok())
    return s;
  PrimExpr oh = WindowOut(win, 0, (*xd)[win.h_axis()], kh, ctx.analyzer);
  PrimExpr ow = WindowOut(win, 1, (*xd)[win.h_axis() + 1], kw, ctx.analyzer);
  for (const PrimExpr& o : {oh, ow}) {
    const int64_t* c = AsConstInt(o);
    if (c != nullptr && *c < 1) return OpError(call, "the kernel is larger than the padded input");
  }
  PrimExpr n = (*xd)[0];
  std::vector<PrimExpr> out = conv->out_nhwc ? std::vector<PrimExpr>{n, oh, ow, out_c}
                                             : std::vector<PrimExpr>{n, out_c, oh, ow};
  return TensorSInfo(std::move(out), dtype);
}

// `dim` grown by `by`: a constant where it is one (a loop of constant extent is what the
// schedule tiles).
PrimExpr GrownDim(const PrimExpr& dim, int64_t by) {
  const int64_t* c = AsConstInt(dim);
  return c != nullptr ? IntImm(dim->dtype, *c + by) : dim + by;
}

// Whether each of `src`'s indices along `axes` lies inside `x`, as one conjunction.
PrimExpr InsideAlong(const Buffer& x, const Indices& src, const std::vector<int>& axes) {
  PrimExpr inside;
  for (int a : axes) {
    PrimExpr in_a =
        Binary(NodeKind::kAnd, IntImm(src[a]->dtype, 0) <= src[a], src[a] < x->shape[a]);
    inside = inside ? Binary(NodeKind::kAnd, inside, in_a) : in_a;
  }
  return inside;
}

// A copy of `x` padded with `fill` by before[k] and after[k] along axes[k] (or `x` itself
// without padding).
Buffer PadAxes(tir::ComputeBuilder& b, const Buffer& x, const std::vector<int>& axes,
               const std::vector<int64_t>& before, const std::vector<int64_t>& after,
               const PrimExpr& fill) {
  bool padded = false;
  std::vector<PrimExpr> shape = x->shape;
  for (size_t k = 0; k < axes.size(); ++k) {
    padded |= before[k] != 0 || after[k] != 0;
    shape[axes[k]] = GrownDim(shape[axes[k]], before[k] + after[k]);
  }
  if (!padded) return x;
  Buffer out = b.Temp("pad_temp", x->dtype, shape);
  b.Compute("pad_temp", out, [&](const Indices& i) {
    Indices src = i;
    for (size_t k = 0; k < axes.size(); ++k) src[axes[k]] = i[axes[k]] - before[k];
    return GuardedLoad(x, src, InsideAlong(x, src, axes), fill);
  });
  return out;
}

// A 2-D window's padded copy of `x` (or `x` itself without padding), padded with `fill`.
Buffer PadSpatial(tir::ComputeBuilder& b, const Buffer& x, const Window& w, const PrimExpr& fill) {
  const int h = w.h_axis();
  return PadAxes(b, x, {h, h + 1}, {w.pad[0], w.pad[1]}, {w.pad[2], w.pad[3]}, fill);
}

// A depthwise convolution (one output channel per group) marked split_columns (NCHW data, an
// OIHW weight, striding 2 along the rows).
bool DeinterleavesColumns(const ConvShape& conv, const PrimExpr& out_c) {
  const int64_t* channels = AsConstInt(out_c);
  return conv.split_columns && channels != nullptr && *channels == conv.groups;
}

absl::Status LegalizeConv2d(const CallNode& call, const std::vector<Buffer>& in,
                            const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  absl::StatusOr<ConvShape> conv = ParseConv(call);
  if (!conv.ok()) return conv.status();
  const Window& w = conv->window;
  const Buffer& weight = in[1];
  PrimExpr in_c = weight->shape[conv->i];
  PrimExpr kh = weight->shape[conv->h];
  PrimExpr kw = weight->shape[conv->w];
  PrimExpr out_c = weight->shape[conv->o];
  if (conv->w_block) out_c = out[0]->shape[conv->out_c_axis()];
  DataType t = out[0]->dtype;
  int h = w.h_axis(), c = w.c_axis();
  if (DeinterleavesColumns(*conv, out_c) && AsConstInt(in[0]->shape[3]) != nullptr) {
    // A depthwise convolution striding 2 along NCHW rows reads every other column: its padded
    // input is kept as [N, C, H, 2, W / 2], the even columns then the odd ones of each row, so
    // that each tap reads a contiguous run (kw = 0: even columns from ow, 1: odd ones, 2: even
    // ones from ow + 1) rather than two vectors and a shuffle per tap.
    const Buffer& x = in[0];
    const int64_t padded_w = *AsConstInt(x->shape[3]) + w.pad[1] + w.pad[3];
    std::vector<PrimExpr> shape = x->shape;
    shape[2] = GrownDim(shape[2], w.pad[0] + w.pad[2]);
    shape[3] = IntImm(shape[3]->dtype, 2);
    shape.push_back(IntImm(shape[3]->dtype, (padded_w + 1) / 2));
    Buffer split = b.Temp("pad_temp", x->dtype, shape);
    b.Compute("pad_temp", split, [&](const Indices& i) {
      Indices src = {i[0], i[1], i[2] - w.pad[0], i[4] * 2 + i[3] - w.pad[1]};
      return GuardedLoad(x, src, InsideAlong(x, src, {2, 3}), MakeConst(x->dtype, 0));
    });
    b.Reduce("conv2d", out[0], {in_c, kh, kw}, Combiner::kSum,
             [&](const Indices& s, const Indices& r) {
               PrimExpr column = r[2] * w.dilation[1];
               Indices xi = {s[0], s[1] * in_c + r[0], s[2] * w.stride[0] + r[1] * w.dilation[0],
                             FloorMod(column, Int64(2)), s[3] + FloorDiv(column, Int64(2))};
               return Cast(t, Load(split, xi)) * Cast(t, Load(weight, {s[1], r[0], r[1], r[2]}));
             });
    return absl::OkStatus();
  }
  Buffer data = PadSpatial(b, in[0], w, MakeConst(in[0]->dtype, 0));
  if (conv->o_block) {
    // Accumulated in [N, O / b, OH, OW, b], vectors of b output channels (the weight's blocks),
    // then unpacked into NCHW by a block iterating the packed layout: the schedule rules fold
    // the unpacking, and the epilogue after it, into the accumulator tile's write-back.
    const std::vector<PrimExpr>& os = out[0]->shape;
    Buffer packed =
        b.Temp("conv2d_packed", t, {os[0], weight->shape[0], os[2], os[3], weight->shape[4]});
    b.Reduce(
        "conv2d", packed, {in_c, kh, kw}, Combiner::kSum, [&](const Indices& s, const Indices& r) {
          Indices xi = {s[0], r[0], s[2] * w.stride[0] + r[1] * w.dilation[0],
                        s[3] * w.stride[1] + r[2] * w.dilation[1]};
          return Cast(t, Load(data, xi)) * Cast(t, Load(weight, {s[1], r[0], r[1], r[2], s[4]}));
        });
    b.ComputeOver(
        "conv2d_unpack", out[0], packed->shape,
        [&](const Indices& i) -> Indices {
          return {i[0], i[1] * conv->o_block + i[4], i[2], i[3]};
        },
        [&](const Indices& i) { return Load(packed, i); });
    return absl::OkStatus();
  }
  if (Conv2dIsFlatPointwise(call)) {
    // A matmul of the weight [O, I] by the image as [I, H * W]: vectors run along the flattened
    // rows, contiguous in NCHW in and out, whatever the row width (56 is not a multiple of 16).
    const PrimExpr width = in[0]->shape[3];
    const std::vector<PrimExpr>& os = out[0]->shape;
    const PrimExpr pixels = IntImm(os[2]->dtype, *AsConstInt(os[2]) * *AsConstInt(os[3]));
    Buffer flat = b.Temp("conv2d_flat", t, {os[0], out_c, pixels});
    b.Reduce("conv2d", flat, {in_c}, Combiner::kSum, [&](const Indices& s, const Indices& r) {
      Indices wi(4, IntImm(s[0]->dtype, 0));
      wi[conv->o] = s[1];
      wi[conv->i] = r[0];
      return Cast(t, Load(in[0], {s[0], r[0], FloorDiv(s[2], width), FloorMod(s[2], width)})) *
             Cast(t, Load(weight, wi));
    });
    b.ComputeOver(
        "conv2d_unflatten", out[0], flat->shape,
        [&](const Indices& i) -> Indices {
          return {i[0], i[1], FloorDiv(i[2], width), FloorMod(i[2], width)};
        },
        [&](const Indices& i) { return Load(flat, i); });
    return absl::OkStatus();
  }
  const int oh = conv->out_h_axis();
  // NHWC data (and so an HWIO or OHWI weight) keeps input channels innermost in memory: a dense
  // convolution's are its innermost reduction, so that each step reads the next element of both
  // rather than one window position apart (a row of the weight's kernel window lies tens of
  // kilobytes away, all in one L1 set). A grouped one keeps its order.
  const bool channels_last = w.nhwc && conv->groups == 1;
  const std::vector<PrimExpr> reductions =
      channels_last ? std::vector<PrimExpr>{kh, kw, in_c} : std::vector<PrimExpr>{in_c, kh, kw};
  b.Reduce("conv2d", out[0], reductions, Combiner::kSum,
           [&](const Indices& s, const Indices& reduced) {
             // r: (input channel, window row, window column), whatever the loop order.
             const Indices r = channels_last ? Indices{reduced[2], reduced[0], reduced[1]}
                                             : Indices{reduced[0], reduced[1], reduced[2]};
             PrimExpr oc = s[conv->out_c_axis()];
             // A depthwise convolution (one output channel per group) reads its own channel: an
             // index affine in the loops, which compute-at of the padding needs.
             const int64_t* oc_total = AsConstInt(out_c);
             const bool depthwise = oc_total != nullptr && *oc_total == conv->groups;
             PrimExpr group = conv->groups == 1 ? IntImm(oc->dtype, 0)
                              : depthwise       ? oc
                                          : FloorDiv(oc, FloorDiv(out_c, Int64(conv->groups)));
             PrimExpr ic = conv->groups == 1 ? r[0] : group * in_c + r[0];
             Indices xi(4);
             xi[0] = s[0];
             xi[c] = ic;
             xi[h] = s[oh] * w.stride[0] + r[1] * w.dilation[0];
             xi[h + 1] = s[oh + 1] * w.stride[1] + r[2] * w.dilation[1];
             Indices wi(4);
             wi[conv->o] = conv->w_block ? FloorDiv(oc, Int64(conv->w_block)) : oc;
             wi[conv->i] = r[0];
             wi[conv->h] = r[1];
             wi[conv->w] = r[2];
             if (conv->w_block) wi.push_back(FloorMod(oc, Int64(conv->w_block)));
             return Cast(t, Load(data, xi)) * Cast(t, Load(weight, wi));
           });
  return absl::OkStatus();
}

// ---- conv3d(data, weight, strides, padding, dilation, groups, data_layout, kernel_layout,
// out_layout, out_dtype): NCDHW data by an OIDHW weight, or OIDHW<b>o as PackConstantWeights
// packs it. One kernel for the whole window (a 3-D convolution as many 2-D ones, one per depth
// tap, read and wrote its image once per tap). ----

struct Conv3dShape {
  int64_t stride[3] = {1, 1, 1};
  int64_t dilation[3] = {1, 1, 1};
  int64_t pad[6] = {0, 0, 0, 0, 0, 0};  // front, top, left, back, bottom, right (TVM's order)
  int64_t groups = 1;
  // "OIDHW<b>o": [O / b, I, D, H, W, b], a vector of b output channels one load.
  int64_t o_block = 0;
};

absl::StatusOr<Conv3dShape> ParseConv3d(const CallNode& call) {
  Conv3dShape c;
  for (const char* key : {"data_layout", "out_layout"}) {
    absl::StatusOr<std::string> layout = StringAttr(call, key, "NCDHW");
    if (!layout.ok()) return layout.status();
    if (*layout != "NCDHW")
      return OpError(call, absl::StrCat(key, " \"", *layout, "\" is not supported (NCDHW)"));
  }
  absl::StatusOr<std::string> kl = StringAttr(call, "kernel_layout", "OIDHW");
  if (!kl.ok()) return kl.status();
  if (*kl != "OIDHW" &&
      (!absl::StartsWith(*kl, "OIDHW") || kl->size() < 7 || kl->back() != 'o' ||
       !absl::SimpleAtoi(kl->substr(5, kl->size() - 6), &c.o_block) || c.o_block < 1)) {
    return OpError(call,
                   absl::StrCat("kernel_layout \"", *kl, "\" is not supported (OIDHW, OIDHW<b>o)"));
  }
  auto triple = [&](const char* key, int64_t* dst) -> absl::Status {
    absl::StatusOr<std::optional<std::vector<int64_t>>> v = IntListAttr(call, key);
    if (!v.ok()) return v.status();
    if (!v->has_value()) return absl::OkStatus();
    const std::vector<int64_t>& l = **v;
    if (l.size() != 1 && l.size() != 3)
      return OpError(call, absl::StrCat("'", key, "' takes 1 or 3 values"));
    for (int d = 0; d < 3; ++d) {
      dst[d] = l[l.size() == 1 ? 0 : d];
      if (dst[d] < 1) return OpError(call, absl::StrCat("'", key, "' must be >= 1"));
    }
    return absl::OkStatus();
  };
  if (absl::Status s = triple("strides", c.stride); !s.ok()) return s;
  if (absl::Status s = triple("dilation", c.dilation); !s.ok()) return s;
  absl::StatusOr<std::optional<std::vector<int64_t>>> pad = IntListAttr(call, "padding");
  if (!pad.ok()) return pad.status();
  if (pad->has_value()) {
    const std::vector<int64_t>& p = **pad;
    if (p.size() != 1 && p.size() != 3 && p.size() != 6)
      return OpError(call, "'padding' takes 1, 3 or 6 values");
    for (int k = 0; k < 6; ++k) {
      c.pad[k] = p.size() == 1 ? p[0] : p.size() == 3 ? p[k % 3] : p[k];
      if (c.pad[k] < 0) return OpError(call, "'padding' must be >= 0");
    }
  }
  absl::StatusOr<int64_t> groups = IntAttr(call, "groups", 1);
  if (!groups.ok()) return groups.status();
  if (*groups < 1) return OpError(call, "groups must be >= 1");
  c.groups = *groups;
  if (c.o_block && c.groups != 1) return OpError(call, "a blocked kernel_layout needs groups=1");
  return c;
}

absl::StatusOr<StructInfo> InferConv3d(const CallNode& call, const OpInferContext& ctx) {
  absl::StatusOr<Conv3dShape> conv = ParseConv3d(call);
  if (!conv.ok()) return conv.status();
  absl::StatusOr<ConvOperands> operands =
      ReadConvOperands(call, 5, "data must have rank 5 (NCDHW)", conv->o_block ? 6 : 5);
  if (!operands.ok()) return operands.status();
  const std::vector<PrimExpr>* xd = operands->data;
  const std::vector<PrimExpr>* wd = operands->weight;
  const DataType dtype = operands->dtype;
  if (xd == nullptr || wd == nullptr) return TensorSInfoUnknown(dtype, 5);
  if (conv->o_block &&
      ctx.analyzer->CanProve(Binary(NodeKind::kNE, (*wd)[5], Int64(conv->o_block))))
    return OpError(call, "the weight's last dimension must be the kernel_layout's block");
  PrimExpr out_c = conv->o_block ? ctx.analyzer->Simplify((*wd)[0] * conv->o_block) : (*wd)[0];
  if (absl::Status s = CheckConvChannels(call, ctx, (*wd)[1], conv->groups, (*xd)[1], out_c);
      !s.ok())
    return s;
  std::vector<PrimExpr> out = {(*xd)[0], out_c};
  for (int d = 0; d < 3; ++d) {
    PrimExpr span = (*xd)[2 + d] + (conv->pad[d] + conv->pad[d + 3]) -
                    ((*wd)[2 + d] - 1) * conv->dilation[d] - 1;
    PrimExpr extent = ctx.analyzer->Simplify(FloorDiv(span, Int64(conv->stride[d])) + 1);
    const int64_t* c = AsConstInt(extent);
    if (c != nullptr && *c < 1) return OpError(call, "the kernel is larger than the padded input");
    out.push_back(extent);
  }
  return TensorSInfo(std::move(out), dtype);
}

absl::Status LegalizeConv3d(const CallNode& call, const std::vector<Buffer>& in,
                            const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  absl::StatusOr<Conv3dShape> conv = ParseConv3d(call);
  if (!conv.ok()) return conv.status();
  const Buffer& x = in[0];
  const Buffer& weight = in[1];
  const DataType t = out[0]->dtype;
  const Buffer data = PadAxes(b, x, {2, 3, 4}, {conv->pad[0], conv->pad[1], conv->pad[2]},
                              {conv->pad[3], conv->pad[4], conv->pad[5]}, MakeConst(x->dtype, 0));
  const std::vector<PrimExpr> reductions = {weight->shape[1], weight->shape[2], weight->shape[3],
                                            weight->shape[4]};
  // The input element a (spatial, reduction) pair reads, at input channel `ic`.
  auto input = [&](const Indices& s, const Indices& r, const PrimExpr& ic, int first_spatial) {
    Indices xi = {s[0], ic};
    for (int d = 0; d < 3; ++d) {
      xi.push_back(s[first_spatial + d] * conv->stride[d] + r[1 + d] * conv->dilation[d]);
    }
    return Cast(t, Load(data, xi));
  };
  if (conv->o_block) {
    // Accumulated in [N, O / b, OD, OH, OW, b], vectors of b output channels, then unpacked
    // into NCDHW (the schedule rules fold the unpacking into the tile's write-back).
    const std::vector<PrimExpr>& os = out[0]->shape;
    Buffer packed = b.Temp("conv3d_packed", t,
                           {os[0], weight->shape[0], os[2], os[3], os[4], weight->shape[5]});
    b.Reduce("conv3d", packed, reductions, Combiner::kSum, [&](const Indices& s, const Indices& r) {
      return input(s, r, r[0], 2) * Cast(t, Load(weight, {s[1], r[0], r[1], r[2], r[3], s[5]}));
    });
    b.ComputeOver(
        "conv3d_unpack", out[0], packed->shape,
        [&](const Indices& i) -> Indices {
          return {i[0], i[1] * conv->o_block + i[5], i[2], i[3], i[4]};
        },
        [&](const Indices& i) { return Load(packed, i); });
    return absl::OkStatus();
  }
  const PrimExpr out_c = weight->shape[0];
  b.Reduce("conv3d", out[0], reductions, Combiner::kSum, [&](const Indices& s, const Indices& r) {
    const PrimExpr& oc = s[1];
    // A depthwise convolution reads its own channel (an index affine in the loops).
    const int64_t* oc_total = AsConstInt(out_c);
    const bool depthwise = oc_total != nullptr && *oc_total == conv->groups;
    PrimExpr group = depthwise ? oc : FloorDiv(oc, FloorDiv(out_c, Int64(conv->groups)));
    PrimExpr ic = conv->groups == 1 ? r[0] : group * weight->shape[1] + r[0];
    return input(s, r, ic, 2) * Cast(t, Load(weight, {oc, r[0], r[1], r[2], r[3]}));
  });
  return absl::OkStatus();
}

// ---- conv2d_transpose(data, weight, strides, padding, output_padding, dilation, groups) ----
// NCHW data and an IOHW weight (in_channels, out_channels / groups, kh, kw), as ONNX's
// ConvTranspose and PyTorch's ConvTranspose2d store it. The gradient of conv2d with respect to
// its input: out[y] gathers in[(y + pad - ky * dilation) / stride] where that division is exact.

struct TransposedConv {
  int64_t stride[2] = {1, 1};
  int64_t dilation[2] = {1, 1};
  int64_t pad[4] = {0, 0, 0, 0};  // top, left, bottom, right
  int64_t output_padding[2] = {0, 0};
  int64_t groups = 1;
};

absl::StatusOr<TransposedConv> ParseTransposedConv(const CallNode& call) {
  TransposedConv c;
  for (const char* key : {"data_layout", "kernel_layout"}) {
    const char* want = std::string(key) == "data_layout" ? "NCHW" : "IOHW";
    absl::StatusOr<std::string> layout = StringAttr(call, key, want);
    if (!layout.ok()) return layout.status();
    if (*layout != want)
      return OpError(call, absl::StrCat(key, " \"", *layout, "\" is not supported (", want, ")"));
  }
  auto list = [&](const char* key, int64_t* dst, size_t n, int64_t min) -> absl::Status {
    absl::StatusOr<std::optional<std::vector<int64_t>>> v = IntListAttr(call, key);
    if (!v.ok()) return v.status();
    if (!v->has_value()) return absl::OkStatus();
    const std::vector<int64_t>& l = **v;
    if (l.size() != n) return OpError(call, absl::StrCat("'", key, "' takes ", n, " values"));
    for (size_t k = 0; k < n; ++k) {
      if (l[k] < min) return OpError(call, absl::StrCat("'", key, "' must be >= ", min));
      dst[k] = l[k];
    }
    return absl::OkStatus();
  };
  if (absl::Status s = list("strides", c.stride, 2, 1); !s.ok()) return s;
  if (absl::Status s = list("dilation", c.dilation, 2, 1); !s.ok()) return s;
  if (absl::Status s = list("padding", c.pad, 4, 0); !s.ok()) return s;
  if (absl::Status s = list("output_padding", c.output_padding, 2, 0); !s.ok()) return s;
  absl::StatusOr<int64_t> groups = IntAttr(call, "groups", 1);
  if (!groups.ok()) return groups.status();
  if (*groups < 1) return OpError(call, "groups must be >= 1");
  c.groups = *groups;
  return c;
}

absl::StatusOr<StructInfo> InferConv2dTranspose(const CallNode& call, const OpInferContext& ctx) {
  absl::StatusOr<TransposedConv> conv = ParseTransposedConv(call);
  if (!conv.ok()) return conv.status();
  absl::StatusOr<const TensorStructInfoNode*> x = TensorArg(call, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<const TensorStructInfoNode*> wt = TensorArg(call, 1);
  if (!wt.ok()) return wt.status();
  DataType dtype = (*x)->dtype;
  if ((*x)->ndim >= 0 && (*x)->ndim != 4) return OpError(call, "data must have rank 4");
  if ((*wt)->ndim >= 0 && (*wt)->ndim != 4) return OpError(call, "weight must have rank 4");
  const std::vector<PrimExpr>* xd = DimsOf(**x);
  const std::vector<PrimExpr>* wd = DimsOf(**wt);
  if (xd == nullptr || wd == nullptr) return TensorSInfoUnknown(dtype, 4);
  if (ctx.analyzer->CanProve(Binary(NodeKind::kNE, (*wd)[0], (*xd)[1]))) {
    return OpError(call, absl::StrCat("the weight expects ", DebugPrint((*wd)[0]),
                                      " input channels, data has ", DebugPrint((*xd)[1])));
  }
  const int64_t* channels = AsConstInt((*xd)[1]);
  if (channels != nullptr && *channels % conv->groups != 0)
    return OpError(call, "input channels must divide by groups");
  std::vector<PrimExpr> out = {(*xd)[0], ctx.analyzer->Simplify((*wd)[1] * conv->groups)};
  for (int d = 0; d < 2; ++d) {
    PrimExpr size = ((*xd)[2 + d] - 1) * conv->stride[d] - (conv->pad[d] + conv->pad[d + 2]) +
                    ((*wd)[2 + d] - 1) * conv->dilation[d] + conv->output_padding[d] + 1;
    size = ctx.analyzer->Simplify(size);
    const int64_t* c = AsConstInt(size);
    if (c != nullptr && *c < 1) return OpError(call, "the padding leaves no output");
    out.push_back(size);
  }
  return TensorSInfo(std::move(out), dtype);
}

absl::Status LegalizeConv2dTranspose(const CallNode& call, const std::vector<Buffer>& in,
                                     const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  absl::StatusOr<TransposedConv> conv = ParseTransposedConv(call);
  if (!conv.ok()) return conv.status();
  const Buffer &data = in[0], &weight = in[1];
  const int64_t* channels = AsConstInt(data->shape[1]);
  PrimExpr in_per_group = channels != nullptr ? Int64(*channels / conv->groups)
                                              : FloorDiv(data->shape[1], Int64(conv->groups));
  PrimExpr out_per_group = weight->shape[1];
  DataType t = out[0]->dtype;
  b.Reduce(
      "conv2d_transpose", out[0], {in_per_group, weight->shape[2], weight->shape[3]},
      Combiner::kSum, [&](const Indices& s, const Indices& r) {
        PrimExpr group = conv->groups == 1 ? IntImm(s[1]->dtype, 0) : FloorDiv(s[1], out_per_group);
        PrimExpr ic = conv->groups == 1 ? r[0] : group * in_per_group + r[0];
        PrimExpr oc = conv->groups == 1 ? s[1] : FloorMod(s[1], out_per_group);
        Indices xi = {s[0], ic, PrimExpr(), PrimExpr()};
        PrimExpr inside = Bool(true);
        for (int d = 0; d < 2; ++d) {
          // The input row this tap reads: exact division by the stride, inside the input.
          PrimExpr at = s[2 + d] + conv->pad[d] - r[1 + d] * conv->dilation[d];
          PrimExpr q = FloorDiv(at, Int64(conv->stride[d]));
          PrimExpr ok = Binary(NodeKind::kAnd, IntImm(at->dtype, 0) <= at, q < data->shape[2 + d]);
          if (conv->stride[d] > 1) {
            ok = Binary(
                NodeKind::kAnd, ok,
                Binary(NodeKind::kEQ, FloorMod(at, Int64(conv->stride[d])), IntImm(at->dtype, 0)));
          }
          inside = Binary(NodeKind::kAnd, inside, ok);
          xi[2 + d] = q;
        }
        PrimExpr x = GuardedLoad(data, xi, inside, MakeConst(data->dtype, 0));
        return Cast(t, x) * Cast(t, Load(weight, {ic, oc, r[1], r[2]}));
      });
  return absl::OkStatus();
}

// ---- Pooling ----

absl::StatusOr<std::vector<int64_t>> PoolSize(const CallNode& call) {
  absl::StatusOr<std::optional<std::vector<int64_t>>> v = IntListAttr(call, "pool_size");
  if (!v.ok()) return v.status();
  if (!v->has_value() || (*v)->empty() || (*v)->size() > 2)
    return OpError(call, "needs pool_size=[kh, kw]");
  std::vector<int64_t> k = **v;
  if (k.size() == 1) k.push_back(k[0]);
  if (k[0] < 1 || k[1] < 1) return OpError(call, "pool_size must be >= 1");
  return k;
}

absl::StatusOr<StructInfo> InferPool2d(const CallNode& call, const OpInferContext& ctx) {
  absl::StatusOr<Window> w = ParseWindow(call, "layout");
  if (!w.ok()) return w.status();
  absl::StatusOr<std::vector<int64_t>> k = PoolSize(call);
  if (!k.ok()) return k.status();
  absl::StatusOr<const TensorStructInfoNode*> x = TensorArg(call, 0);
  if (!x.ok()) return x.status();
  if ((*x)->ndim >= 0 && (*x)->ndim != 4) return OpError(call, "data must have rank 4");
  const std::vector<PrimExpr>* xd = DimsOf(**x);
  if (xd == nullptr) return TensorSInfoUnknown((*x)->dtype, 4);
  std::vector<PrimExpr> out = *xd;
  out[w->h_axis()] = WindowOut(*w, 0, (*xd)[w->h_axis()], Int64((*k)[0]), ctx.analyzer);
  out[w->h_axis() + 1] = WindowOut(*w, 1, (*xd)[w->h_axis() + 1], Int64((*k)[1]), ctx.analyzer);
  for (int d : {w->h_axis(), w->h_axis() + 1}) {
    const int64_t* c = AsConstInt(out[d]);
    if (c != nullptr && *c < 1) return OpError(call, "the window is larger than the padded input");
  }
  return TensorSInfo(std::move(out), (*x)->dtype);
}

absl::Status LegalizePool2d(const CallNode& call, const std::vector<Buffer>& in,
                            const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  absl::StatusOr<Window> w = ParseWindow(call, "layout");
  if (!w.ok()) return w.status();
  absl::StatusOr<std::vector<int64_t>> k = PoolSize(call);
  if (!k.ok()) return k.status();
  const Buffer& x = in[0];
  DataType t = x->dtype;
  int h = w->h_axis();
  bool is_max = OpName(call) == "relax.nn.max_pool2d";
  // The source point of tap (r0, r1) for output point s, unpadded; may fall outside x.
  auto source = [&](const Indices& s, const Indices& r) {
    Indices src = s;
    src[h] = s[h] * w->stride[0] + r[0] * w->dilation[0] - w->pad[0];
    src[h + 1] = s[h + 1] * w->stride[1] + r[1] * w->dilation[1] - w->pad[1];
    return src;
  };
  auto inside = [&](const Indices& src) {
    PrimExpr zero = IntImm(src[h]->dtype, 0);
    return Binary(NodeKind::kAnd, Binary(NodeKind::kAnd, zero <= src[h], src[h] < x->shape[h]),
                  Binary(NodeKind::kAnd, zero <= src[h + 1], src[h + 1] < x->shape[h + 1]));
  };
  // Taps past the bottom/right edge exist with ceil_mode even without padding.
  bool bounded = w->padded() || w->ceil_mode;
  std::vector<PrimExpr> taps = {Int64((*k)[0]), Int64((*k)[1])};
  if (is_max) {
    PrimExpr lowest = tir::ReduceIdentity(Combiner::kMax, t);
    if (!w->ceil_mode) {
      // Padding as a block of its own, as for conv2d: the window's taps then read unguarded
      // and vectorize along the row.
      Buffer padded = PadSpatial(b, x, *w, lowest);
      b.Reduce("pool_max", out[0], taps, Combiner::kMax, [&](const Indices& s, const Indices& r) {
        Indices src = source(s, r);
        src[h] = src[h] + w->pad[0];
        src[h + 1] = src[h + 1] + w->pad[1];
        return Load(padded, src);
      });
      return absl::OkStatus();
    }
    b.Reduce("pool_max", out[0], taps, Combiner::kMax, [&](const Indices& s, const Indices& r) {
      Indices src = source(s, r);
      if (!bounded) return Load(x, src);
      return GuardedLoad(x, src, inside(src), lowest);
    });
    return absl::OkStatus();
  }
  absl::StatusOr<bool> include_pad = BoolAttr(call, "count_include_pad", false);
  if (!include_pad.ok()) return include_pad.status();
  Buffer sum = b.Temp("pool_sum", t, out[0]->shape);
  b.Reduce("pool_sum", sum, taps, Combiner::kSum, [&](const Indices& s, const Indices& r) {
    Indices src = source(s, r);
    if (!bounded) return Load(x, src);
    return GuardedLoad(x, src, inside(src), MakeConst(t, 0));
  });
  if (!bounded || *include_pad) {
    double n = static_cast<double>((*k)[0] * (*k)[1]);
    b.Compute("pool_avg", out[0],
              [&](const Indices& i) { return Div(Load(sum, i), MakeConst(t, n)); });
    return absl::OkStatus();
  }
  Buffer count = b.Temp("pool_count", t, out[0]->shape);
  b.Reduce("pool_count", count, taps, Combiner::kSum, [&](const Indices& s, const Indices& r) {
    return Select(inside(source(s, r)), MakeConst(t, 1), MakeConst(t, 0));
  });
  b.Compute("pool_avg", out[0], [&](const Indices& i) {
    return Div(Load(sum, i), Max(Load(count, i), MakeConst(t, 1)));
  });
  return absl::OkStatus();
}

// adaptive_avg_pool2d(x, output_size=[oh, ow], layout): output cell i averages input rows
// [floor(i*H/oh), ceil((i+1)*H/oh)).
absl::StatusOr<std::vector<PrimExpr>> AdaptiveOut(const CallNode& call,
                                                  const std::vector<PrimExpr>& xd, int h) {
  absl::StatusOr<std::optional<std::vector<int64_t>>> v = IntListAttr(call, "output_size");
  if (!v.ok()) return v.status();
  std::vector<PrimExpr> out = xd;
  if (v->has_value()) {
    const std::vector<int64_t>& o = **v;
    if (o.empty() || o.size() > 2) return OpError(call, "output_size takes 1 or 2 values");
    out[h] = Int64(o[0]);
    out[h + 1] = Int64(o.size() == 2 ? o[1] : o[0]);
    if (o[0] < 1 || o.back() < 1) return OpError(call, "output_size must be >= 1");
  }
  return out;
}

absl::StatusOr<StructInfo> InferAdaptivePool2d(const CallNode& call, const OpInferContext&) {
  absl::StatusOr<Window> w = ParseWindow(call, "layout");
  if (!w.ok()) return w.status();
  absl::StatusOr<const TensorStructInfoNode*> x = TensorArg(call, 0);
  if (!x.ok()) return x.status();
  if ((*x)->ndim >= 0 && (*x)->ndim != 4) return OpError(call, "data must have rank 4");
  const std::vector<PrimExpr>* xd = DimsOf(**x);
  if (xd == nullptr) return TensorSInfoUnknown((*x)->dtype, 4);
  absl::StatusOr<std::vector<PrimExpr>> out = AdaptiveOut(call, *xd, w->h_axis());
  if (!out.ok()) return out.status();
  return TensorSInfo(std::move(*out), (*x)->dtype);
}

absl::Status LegalizeAdaptivePool2d(const CallNode& call, const std::vector<Buffer>& in,
                                    const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  absl::StatusOr<Window> w = ParseWindow(call, "layout");
  if (!w.ok()) return w.status();
  const Buffer& x = in[0];
  DataType t = x->dtype;
  int h = w->h_axis();
  // Window bounds and the largest window, per spatial dimension (static sizes only).
  int64_t taps[2];
  for (int d = 0; d < 2; ++d) {
    const int64_t* size = AsConstInt(x->shape[h + d]);
    const int64_t* cells = AsConstInt(out[0]->shape[h + d]);
    if (size == nullptr || cells == nullptr) return OpError(call, "needs static spatial sizes");
    taps[d] = 0;
    for (int64_t i = 0; i < *cells; ++i) {
      int64_t start = i * *size / *cells, end = ((i + 1) * *size + *cells - 1) / *cells;
      taps[d] = std::max(taps[d], end - start);
    }
  }
  auto bounds = [&](const PrimExpr& i, int d) {
    PrimExpr size = x->shape[h + d], cells = out[0]->shape[h + d];
    return std::make_pair(FloorDiv(i * size, cells), FloorDiv((i + 1) * size + cells - 1, cells));
  };
  Buffer sum = b.Temp("pool_sum", t, out[0]->shape);
  b.Reduce("adaptive_pool_sum", sum, {Int64(taps[0]), Int64(taps[1])}, Combiner::kSum,
           [&](const Indices& s, const Indices& r) {
             auto [h0, h1] = bounds(s[h], 0);
             auto [w0, w1] = bounds(s[h + 1], 1);
             Indices src = s;
             src[h] = h0 + r[0];
             src[h + 1] = w0 + r[1];
             PrimExpr inside = Binary(NodeKind::kAnd, src[h] < h1, src[h + 1] < w1);
             return GuardedLoad(x, src, inside, MakeConst(t, 0));
           });
  b.Compute("adaptive_pool_avg", out[0], [&](const Indices& i) {
    auto [h0, h1] = bounds(i[h], 0);
    auto [w0, w1] = bounds(i[h + 1], 1);
    return Div(Load(sum, i), Cast(t, (h1 - h0) * (w1 - w0)));
  });
  return absl::OkStatus();
}

}  // namespace

// A 1x1 convolution, stride 1, unpadded, ungrouped, over an NCHW image of H * W a multiple of
// 4. (An image of odd area, a 7x7 one, fills vectors badly along it: such a convolution is
// vectorized over output channels instead.)
bool Conv2dIsFlatPointwise(const CallNode& call) {
  absl::StatusOr<ConvShape> conv = ParseConv(call);
  if (!conv.ok() || call.args.size() != 2) return false;
  const Window& w = conv->window;
  if (conv->o_block || w.nhwc || conv->out_nhwc || conv->groups != 1 || w.padded() ||
      w.stride[0] != 1 || w.stride[1] != 1)
    return false;
  const auto* x = call.args[0]->struct_info().as<TensorStructInfoNode>();
  const auto* wt = call.args[1]->struct_info().as<TensorStructInfoNode>();
  const std::vector<PrimExpr>* xd = x != nullptr ? x->dims() : nullptr;
  const std::vector<PrimExpr>* wd = wt != nullptr ? wt->dims() : nullptr;
  if (xd == nullptr || wd == nullptr || xd->size() != 4 || wd->size() != 4) return false;
  const int64_t* kh = AsConstInt((*wd)[conv->h]);
  const int64_t* kw = AsConstInt((*wd)[conv->w]);
  const int64_t* h = AsConstInt((*xd)[2]);
  const int64_t* width = AsConstInt((*xd)[3]);
  return kh && kw && h && width && *kh == 1 && *kw == 1 && (*h * *width) % 4 == 0;
}

void RegisterNNOps(std::vector<OpInfo>* ops) {
  ops->push_back({"relax.nn.linear", -1, InferLinear, true, OpPattern::kOutEWiseFusable,
                  "x @ weight^T (+ bias); weight is (out_features, in_features)", LegalizeLinear});
  ops->push_back({"relax.nn.conv2d", 2, InferConv2d, true, OpPattern::kOutEWiseFusable,
                  "2-D convolution (NCHW/OIHW or NHWC/HWIO; strides, padding, dilation, groups)",
                  LegalizeConv2d});
  ops->push_back({"relax.nn.conv3d", 2, InferConv3d, true, OpPattern::kOutEWiseFusable,
                  "3-D convolution (NCDHW/OIDHW; strides, padding, dilation, groups)",
                  LegalizeConv3d});
  ops->push_back({"relax.nn.conv2d_transpose", 2, InferConv2dTranspose, true,
                  OpPattern::kOutEWiseFusable,
                  "2-D transposed convolution (NCHW/IOHW; strides, padding, output_padding, "
                  "dilation, groups)",
                  LegalizeConv2dTranspose});
  for (const char* name : {"relax.nn.max_pool2d", "relax.nn.avg_pool2d"}) {
    ops->push_back({name, 1, InferPool2d, true, OpPattern::kOutEWiseFusable,
                    "2-D pooling (pool_size, strides, padding, dilation, ceil_mode, layout)",
                    LegalizePool2d});
  }
  ops->push_back({"relax.nn.adaptive_avg_pool2d", 1, InferAdaptivePool2d, true,
                  OpPattern::kOutEWiseFusable, "average pooling to output_size cells",
                  LegalizeAdaptivePool2d});
}

}  // namespace kiln::ir::relax::ops
