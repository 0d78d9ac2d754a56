// Quantized operators: int8 kernels whose arithmetic is the int8 dot product (dot4_u8i8: four
// uint8 activations by four int8 weights into int32, VNNI's vpdpbusd) with the requantizing
// epilogue fused into the store.
//
// relax.qnn.conv2d_int8(data, weight, bias, multiplier) -> [N, O, OH, OW] uint8
//   data        uint8 [N, C, H, W] (NCHW), zero point `input_zero_point`
//   weight      int32 [O / b, ceil(C / 4), KH, KW, b]: int8 weights four input channels to a word
//               (channel 4i + k in byte k), b output channels innermost (b = 16, 8 or 4)
//   bias        int32 [O]: the bias at scale input × weight, minus input_zero_point × Σ weights
//   multiplier  float32 [O]: input_scale × weight_scale / output_scale
//   attrs       strides, padding (top, left, bottom, right), dilation, input_zero_point,
//               output_zero_point, out_min and out_max (the range stored, an activation's clamp
//               within uint8's)
// y = clamp(round_half_even((Σ data·weight + bias) × multiplier) + output_zero_point, out_min,
// out_max): padding reads the input's zero point, so a border tap adds nothing.
//
// Both convolutions take data_layout "NHWC" too: data [N, H, W, C], the result [N, OH, OW, O],
// the depthwise weight [KH, KW, C]; the dense one also NCHW data into an NHWC result
// (out_layout "NHWC"). ConvertConvLayout rewrites them so.
//
// relax.qnn.depthwise_conv2d_int8(data, weight, bias, multiplier) -> [N, C, OH, OW] uint8
//   the same for one channel per group: weight float32 [C, KH, KW] holding int8 values and bias
//   float32 [C]. A depthwise window sums few products (KH × KW × 255 × 128 < 2^24), so float32
//   arithmetic on the integers is exact, and it reads uint8 rather than the float32 a
//   dequantized input would be.
//
// relax.qnn.dense_int8(data, weight, correction) -> [M, N] int32
//   data        uint8 [M, K]
//   weight      int32 [N / b, ceil(K / 4), b]: int8 weights four of K to a word, b columns
//               innermost
//   correction  int32 [N]: added to each column (− zero_point × Σ weights, for MatMulInteger)
// The exact integer product, for a dequantizing or requantizing epilogue of elementwise
// operators that fusion applies as the accumulator tile is stored.
#include "absl/strings/str_cat.h"
#include "compiler/ir/printer.h"
#include "compiler/relax/ops/op_common.h"

namespace kiln::ir::relax::ops {
namespace {

using tir::Combiner;
using tir::Indices;
using tir::Load;

struct QConvAttrs {
  int64_t stride[2] = {1, 1};
  int64_t dilation[2] = {1, 1};
  int64_t pad[4] = {0, 0, 0, 0};
  int64_t input_zero_point = 0;
  int64_t output_zero_point = 0;
  int64_t out_min = 0;
  int64_t out_max = 255;
  // data_layout "NHWC": data [N, H, W, C]; out_layout (data_layout's by default) "NHWC": the
  // result [N, OH, OW, O]. ConvertConvLayout chooses them; "NCHW" as documented above.
  bool nhwc = false;
  bool nhwc_out = false;
};

absl::StatusOr<QConvAttrs> ParseQConv(const CallNode& call) {
  QConvAttrs a;
  auto list = [&](const char* key, int64_t* dst, size_t n, int64_t least) -> absl::Status {
    absl::StatusOr<std::optional<std::vector<int64_t>>> v = IntListAttr(call, key);
    if (!v.ok()) return v.status();
    if (!v->has_value()) return absl::OkStatus();
    if ((*v)->size() != n) return OpError(call, absl::StrCat("'", key, "' takes ", n, " values"));
    for (size_t i = 0; i < n; ++i) {
      if ((**v)[i] < least) return OpError(call, absl::StrCat("'", key, "' must be >= ", least));
      dst[i] = (**v)[i];
    }
    return absl::OkStatus();
  };
  if (absl::Status s = list("strides", a.stride, 2, 1); !s.ok()) return s;
  if (absl::Status s = list("dilation", a.dilation, 2, 1); !s.ok()) return s;
  if (absl::Status s = list("padding", a.pad, 4, 0); !s.ok()) return s;
  struct Byte {
    const char* key;
    int64_t* dst;
    int64_t fallback;
  };
  for (const Byte& b : {Byte{"input_zero_point", &a.input_zero_point, 0},
                        Byte{"output_zero_point", &a.output_zero_point, 0},
                        Byte{"out_min", &a.out_min, 0}, Byte{"out_max", &a.out_max, 255}}) {
    absl::StatusOr<int64_t> v = IntAttr(call, b.key, b.fallback);
    if (!v.ok()) return v.status();
    if (*v < 0 || *v > 255) return OpError(call, absl::StrCat("'", b.key, "' must be in [0, 255]"));
    *b.dst = *v;
  }
  if (a.out_min > a.out_max) return OpError(call, "out_min is above out_max");
  absl::StatusOr<bool> nhwc = NhwcAttr(call, "data_layout", false);
  if (!nhwc.ok()) return nhwc.status();
  absl::StatusOr<bool> nhwc_out = NhwcAttr(call, "out_layout", *nhwc);
  if (!nhwc_out.ok()) return nhwc_out.status();
  a.nhwc = *nhwc;
  a.nhwc_out = *nhwc_out;
  return a;
}

// The uint8 a requantizing store writes for the accumulator `real` (already × multiplier).
PrimExpr Requantize(const QConvAttrs& a, const PrimExpr& real) {
  const DataType f32 = DataType::Float(32), i32 = DataType::Int(32);
  const double low = static_cast<double>(a.out_min - a.output_zero_point);
  const double high = static_cast<double>(a.out_max - a.output_zero_point);
  PrimExpr clamped = Min(Max(real, FloatImm(f32, low)), FloatImm(f32, high));
  PrimExpr q = Cast(i32, Call(f32, "nearbyint", {clamped})) + IntImm(i32, a.output_zero_point);
  return Cast(DataType::UInt(8), q);
}

PrimExpr OutExtent(const PrimExpr& size, int64_t pad, int64_t taps, int64_t dilation,
                   int64_t stride, arith::Analyzer* ana) {
  return ana->Simplify(FloorDiv(size + (pad - (taps - 1) * dilation - 1), Int64(stride)) + 1);
}

// The data's axes: channels, rows and columns.
struct Axes {
  int c, h, w;
};
Axes AxesOf(const QConvAttrs& a) { return a.nhwc ? Axes{3, 1, 2} : Axes{1, 2, 3}; }

// A window of kh × kw taps over `x` (NCHW or NHWC): the uint8 [N, channels, OH, OW] (or
// [N, OH, OW, channels]) it stores.
absl::StatusOr<StructInfo> WindowResult(const CallNode& call, const QConvAttrs& a,
                                        const std::vector<PrimExpr>& x, const PrimExpr& channels,
                                        int64_t kh, int64_t kw, arith::Analyzer* ana) {
  const Axes ax = AxesOf(a);
  const PrimExpr oh = OutExtent(x[ax.h], a.pad[0] + a.pad[2], kh, a.dilation[0], a.stride[0], ana);
  const PrimExpr ow = OutExtent(x[ax.w], a.pad[1] + a.pad[3], kw, a.dilation[1], a.stride[1], ana);
  for (const PrimExpr& o : {oh, ow}) {
    const int64_t* c = AsConstInt(o);
    if (c != nullptr && *c < 1) return OpError(call, "the kernel is larger than the padded input");
  }
  if (a.nhwc_out) return TensorSInfo({x[0], oh, ow, channels}, DataType::UInt(8));
  return TensorSInfo({x[0], channels, oh, ow}, DataType::UInt(8));
}

// An operand the int8 operators check: its name in errors, dtype and rank.
struct Operand {
  const char* name;
  DataType dtype;
  int rank;
};

// The operands' dims (null where unknown), after checking their dtypes and ranks.
absl::StatusOr<std::vector<const std::vector<PrimExpr>*>> CheckOperands(
    const CallNode& call, const std::vector<Operand>& operands) {
  std::vector<const std::vector<PrimExpr>*> dims(operands.size());
  for (size_t i = 0; i < operands.size(); ++i) {
    const Operand& want = operands[i];
    absl::StatusOr<const TensorStructInfoNode*> t = TensorArg(call, i);
    if (!t.ok()) return t.status();
    if ((*t)->dtype != want.dtype || ((*t)->ndim >= 0 && (*t)->ndim != want.rank)) {
      return OpError(
          call, absl::StrCat(want.name, " must be ", want.dtype.ToString(), " of rank ", want.rank,
                             ", not ", (*t)->dtype.ToString(), " of rank ", (*t)->ndim));
    }
    dims[i] = DimsOf(**t);
  }
  return dims;
}

absl::StatusOr<StructInfo> InferQConv2d(const CallNode& call, const OpInferContext& ctx) {
  static const std::vector<Operand> operands_of_conv = {{"data", DataType::UInt(8), 4},
                                                        {"weight", DataType::Int(32), 5},
                                                        {"bias", DataType::Int(32), 1},
                                                        {"multiplier", DataType::Float(32), 1}};
  absl::StatusOr<QConvAttrs> attrs = ParseQConv(call);
  if (!attrs.ok()) return attrs.status();
  absl::StatusOr<std::vector<const std::vector<PrimExpr>*>> operands =
      CheckOperands(call, operands_of_conv);
  if (!operands.ok()) return operands.status();
  const std::vector<const std::vector<PrimExpr>*>& dims = *operands;
  if (dims[0] == nullptr || dims[1] == nullptr) return TensorSInfoUnknown(DataType::UInt(8), 4);
  const std::vector<PrimExpr>& x = *dims[0];
  const std::vector<PrimExpr>& w = *dims[1];
  const int64_t* block = AsConstInt(w[4]);
  const int64_t* kh = AsConstInt(w[2]);
  const int64_t* kw = AsConstInt(w[3]);
  if (block == nullptr || (*block != 16 && *block != 8 && *block != 4) || kh == nullptr ||
      kw == nullptr) {
    return OpError(call, "the weight's window and block (16, 8 or 4) must be constants");
  }
  const PrimExpr& in_c = x[AxesOf(*attrs).c];
  const PrimExpr words = ctx.analyzer->Simplify(FloorDiv(in_c + 3, Int64(4)));
  if (ctx.analyzer->CanProve(Binary(NodeKind::kNE, words, w[1]))) {
    return OpError(
        call, absl::StrCat("the weight holds ", DebugPrint(w[1]),
                           " words of input channels, data has ", DebugPrint(in_c), " channels"));
  }
  const PrimExpr out_c = ctx.analyzer->Simplify(w[0] * *block);
  for (int i = 2; i < 4; ++i) {
    if (dims[i] != nullptr && ctx.analyzer->CanProve(Binary(NodeKind::kNE, (*dims[i])[0], out_c)))
      return OpError(
          call, absl::StrCat(operands_of_conv[i].name, " must hold one value per output channel"));
  }
  return WindowResult(call, *attrs, x, out_c, *kh, *kw, ctx.analyzer);
}

PrimExpr Grown(const PrimExpr& dim, int64_t by) {
  const int64_t* c = AsConstInt(dim);
  return c != nullptr ? IntImm(dim->dtype, *c + by) : dim + by;
}

absl::Status LegalizeQConv2d(const CallNode& call, const std::vector<Buffer>& in,
                             const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  absl::StatusOr<QConvAttrs> a = ParseQConv(call);
  if (!a.ok()) return a.status();
  const Buffer &x = in[0], &weight = in[1], &bias = in[2], &multiplier = in[3];
  const DataType i32 = DataType::Int(32), u32 = DataType::UInt(32), f32 = DataType::Float(32);
  const Axes ax = AxesOf(*a);
  const PrimExpr channels = x->shape[ax.c];

  // The input as words of four channels, padded with the zero point: what dot4 reads, [N, C / 4,
  // H, W] for NCHW throughout, else [N, H, W, C / 4], each pixel's words together (from NHWC
  // data, its bytes as they lie; from NCHW, four channel planes interleaved).
  const bool pixel_words = a->nhwc || a->nhwc_out;
  const PrimExpr rows = Grown(x->shape[ax.h], a->pad[0] + a->pad[2]);
  const PrimExpr cols = Grown(x->shape[ax.w], a->pad[1] + a->pad[3]);
  std::vector<PrimExpr> word_shape =
      pixel_words ? std::vector<PrimExpr>{x->shape[0], rows, cols, weight->shape[1]}
                  : std::vector<PrimExpr>{x->shape[0], weight->shape[1], rows, cols};
  Buffer words = b.Temp("pack_words", i32, word_shape);
  b.Compute("pack_words", words, [&](const Indices& i) {
    const PrimExpr& word_index = pixel_words ? i[3] : i[1];
    PrimExpr h = (pixel_words ? i[1] : i[2]) - a->pad[0];
    PrimExpr w = (pixel_words ? i[2] : i[3]) - a->pad[1];
    PrimExpr word;
    for (int k = 0; k < 4; ++k) {
      PrimExpr c = word_index * 4 + k;
      PrimExpr zero = IntImm(h->dtype, 0);
      PrimExpr inside = Binary(NodeKind::kAnd,
                               Binary(NodeKind::kAnd, c < channels,
                                      Binary(NodeKind::kAnd, zero <= h, h < x->shape[ax.h])),
                               Binary(NodeKind::kAnd, zero <= w, w < x->shape[ax.w]));
      // A channel past the last one reads the zero point too: its weights are 0.
      Indices at = a->nhwc ? Indices{i[0], h, w, c} : Indices{i[0], c, h, w};
      PrimExpr byte =
          Cast(u32, GuardedLoad(x, at, inside, IntImm(DataType::UInt(8), a->input_zero_point)));
      PrimExpr placed = k == 0 ? byte : byte * IntImm(u32, int64_t{1} << (8 * k));
      word = k == 0 ? placed : word + placed;
    }
    return Cast(i32, word);
  });

  const int64_t block = *AsConstInt(weight->shape[4]);
  const std::vector<PrimExpr>& os = out[0]->shape;
  const PrimExpr &oh = os[a->nhwc_out ? 1 : 2], &ow = os[a->nhwc_out ? 2 : 3];
  // The accumulators [N, O / b, OH, OW, b] in either layout: b output channels are the lanes.
  Buffer acc = b.Temp("qconv2d_packed", i32, {os[0], weight->shape[0], oh, ow, weight->shape[4]});
  b.Reduce("qconv2d", acc, {weight->shape[1], weight->shape[2], weight->shape[3]}, Combiner::kSum,
           [&](const Indices& s, const Indices& r) {
             PrimExpr h = s[2] * a->stride[0] + r[1] * a->dilation[0];
             PrimExpr w = s[3] * a->stride[1] + r[2] * a->dilation[1];
             Indices xi = pixel_words ? Indices{s[0], h, w, r[0]} : Indices{s[0], r[0], h, w};
             return Call(i32, "dot4_u8i8",
                         {Load(words, xi), Load(weight, {s[1], r[0], r[1], r[2], s[4]})});
           });
  // The requantizing store, into NCHW (a channel plane per lane) or NHWC (the lanes' bytes side
  // by side): the schedule rules fold it into the accumulator tile's write-back, as they do a
  // float convolution's unpacking.
  const bool nhwc = a->nhwc_out;
  b.ComputeOver(
      "qconv2d_requantize", out[0], acc->shape,
      [&](const Indices& i) -> Indices {
        if (nhwc) return {i[0], i[2], i[3], i[1] * block + i[4]};
        return {i[0], i[1] * block + i[4], i[2], i[3]};
      },
      [&](const Indices& i) {
        PrimExpr o = i[1] * block + i[4];
        return Requantize(*a, Cast(f32, Load(acc, i) + Load(bias, {o})) * Load(multiplier, {o}));
      });
  return absl::OkStatus();
}

absl::StatusOr<StructInfo> InferQDepthwise(const CallNode& call, const OpInferContext& ctx) {
  static const std::vector<Operand> operands_of_depthwise = {
      {"data", DataType::UInt(8), 4},
      {"weight", DataType::Float(32), 3},
      {"bias", DataType::Float(32), 1},
      {"multiplier", DataType::Float(32), 1}};
  absl::StatusOr<QConvAttrs> attrs = ParseQConv(call);
  if (!attrs.ok()) return attrs.status();
  absl::StatusOr<std::vector<const std::vector<PrimExpr>*>> operands =
      CheckOperands(call, operands_of_depthwise);
  if (!operands.ok()) return operands.status();
  const std::vector<const std::vector<PrimExpr>*>& dims = *operands;
  if (dims[0] == nullptr || dims[1] == nullptr) return TensorSInfoUnknown(DataType::UInt(8), 4);
  const std::vector<PrimExpr>& x = *dims[0];
  const std::vector<PrimExpr>& w = *dims[1];
  // The weight is [C, KH, KW], or [KH, KW, C] with NHWC data.
  const bool nhwc = attrs->nhwc;
  if (attrs->nhwc_out != nhwc) return OpError(call, "out_layout must be the data's");
  const int64_t* kh = AsConstInt(w[nhwc ? 0 : 1]);
  const int64_t* kw = AsConstInt(w[nhwc ? 1 : 2]);
  if (kh == nullptr || kw == nullptr || *kh * *kw * 255 * 128 >= (int64_t{1} << 24))
    return OpError(call, "the window must be constant and small enough to sum exactly in float32");
  const PrimExpr& channels = x[AxesOf(*attrs).c];
  for (int i = 1; i < 4; ++i) {
    const PrimExpr& c = i == 1 ? w[nhwc ? 2 : 0] : (dims[i] ? (*dims[i])[0] : channels);
    if (ctx.analyzer->CanProve(Binary(NodeKind::kNE, c, channels)))
      return OpError(
          call, absl::StrCat(operands_of_depthwise[i].name, " must hold one value per channel"));
  }
  return WindowResult(call, *attrs, x, channels, *kh, *kw, ctx.analyzer);
}

absl::Status LegalizeQDepthwise(const CallNode& call, const std::vector<Buffer>& in,
                                const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  absl::StatusOr<QConvAttrs> a = ParseQConv(call);
  if (!a.ok()) return a.status();
  const Buffer &x = in[0], &weight = in[1], &bias = in[2], &multiplier = in[3];
  const DataType f32 = DataType::Float(32);
  const Axes ax = AxesOf(*a);
  const bool nhwc = a->nhwc;
  Buffer data = x;
  if (a->pad[0] || a->pad[1] || a->pad[2] || a->pad[3]) {
    std::vector<PrimExpr> shape = x->shape;
    shape[ax.h] = Grown(x->shape[ax.h], a->pad[0] + a->pad[2]);
    shape[ax.w] = Grown(x->shape[ax.w], a->pad[1] + a->pad[3]);
    data = b.Temp("pad_temp", x->dtype, shape);
    b.Compute("pad_temp", data, [&](const Indices& i) {
      PrimExpr h = i[ax.h] - a->pad[0], w = i[ax.w] - a->pad[1];
      PrimExpr zero = IntImm(h->dtype, 0);
      PrimExpr inside =
          Binary(NodeKind::kAnd, Binary(NodeKind::kAnd, zero <= h, h < x->shape[ax.h]),
                 Binary(NodeKind::kAnd, zero <= w, w < x->shape[ax.w]));
      Indices at = i;
      at[ax.h] = h;
      at[ax.w] = w;
      return GuardedLoad(x, at, inside, IntImm(DataType::UInt(8), a->input_zero_point));
    });
  }
  Buffer acc = b.Temp("qdepthwise_acc", f32, out[0]->shape);
  const int taps_h = nhwc ? 0 : 1;
  b.Reduce("qdepthwise", acc, {weight->shape[taps_h], weight->shape[taps_h + 1]}, Combiner::kSum,
           [&](const Indices& s, const Indices& r) {
             Indices xi = s;
             xi[ax.h] = s[ax.h] * a->stride[0] + r[0] * a->dilation[0];
             xi[ax.w] = s[ax.w] * a->stride[1] + r[1] * a->dilation[1];
             Indices wi = nhwc ? Indices{r[0], r[1], s[ax.c]} : Indices{s[ax.c], r[0], r[1]};
             return Cast(f32, Load(data, xi)) * Load(weight, wi);
           });
  b.Compute("qdepthwise_requantize", out[0], [&](const Indices& i) {
    return Requantize(*a, (Load(acc, i) + Load(bias, {i[ax.c]})) * Load(multiplier, {i[ax.c]}));
  });
  return absl::OkStatus();
}

absl::StatusOr<StructInfo> InferQDense(const CallNode& call, const OpInferContext& ctx) {
  absl::StatusOr<std::vector<const std::vector<PrimExpr>*>> operands =
      CheckOperands(call, {{"data", DataType::UInt(8), 2},
                           {"weight", DataType::Int(32), 3},
                           {"correction", DataType::Int(32), 1}});
  if (!operands.ok()) return operands.status();
  const std::vector<const std::vector<PrimExpr>*>& dims = *operands;
  if (dims[0] == nullptr || dims[1] == nullptr) return TensorSInfoUnknown(DataType::Int(32), 2);
  const std::vector<PrimExpr>& x = *dims[0];
  const std::vector<PrimExpr>& w = *dims[1];
  const int64_t* block = AsConstInt(w[2]);
  if (block == nullptr || (*block != 16 && *block != 8 && *block != 4))
    return OpError(call, "the weight's block (16, 8 or 4) must be a constant");
  const PrimExpr words = ctx.analyzer->Simplify(FloorDiv(x[1] + 3, Int64(4)));
  if (ctx.analyzer->CanProve(Binary(NodeKind::kNE, words, w[1]))) {
    return OpError(call, absl::StrCat("the weight holds ", DebugPrint(w[1]),
                                      " words of the reduction, data has ", DebugPrint(x[1])));
  }
  const PrimExpr n = ctx.analyzer->Simplify(w[0] * *block);
  if (dims[2] != nullptr && ctx.analyzer->CanProve(Binary(NodeKind::kNE, (*dims[2])[0], n)))
    return OpError(call, "correction must hold one value per column");
  return TensorSInfo({x[0], n}, DataType::Int(32));
}

absl::Status LegalizeQDense(const CallNode&, const std::vector<Buffer>& in,
                            const std::vector<Buffer>& out, tir::ComputeBuilder& b) {
  const Buffer &x = in[0], &weight = in[1], &correction = in[2];
  const DataType i32 = DataType::Int(32), u32 = DataType::UInt(32);
  const PrimExpr k_extent = x->shape[1];
  Buffer words = b.Temp("pack_words", i32, {x->shape[0], weight->shape[1]});
  b.Compute("pack_words", words, [&](const Indices& i) {
    PrimExpr word;
    for (int k = 0; k < 4; ++k) {
      PrimExpr c = i[1] * 4 + k;
      // Past the last column of the reduction the weights are 0: any byte will do.
      PrimExpr byte =
          Cast(u32, GuardedLoad(x, {i[0], c}, c < k_extent, IntImm(DataType::UInt(8), 0)));
      PrimExpr placed = k == 0 ? byte : byte * IntImm(u32, int64_t{1} << (8 * k));
      word = k == 0 ? placed : word + placed;
    }
    return Cast(i32, word);
  });
  const int64_t block = *AsConstInt(weight->shape[2]);
  Buffer acc = b.Temp("dense_int8_packed", i32, {x->shape[0], weight->shape[0], weight->shape[2]});
  b.Reduce("dense_int8", acc, {weight->shape[1]}, Combiner::kSum,
           [&](const Indices& s, const Indices& r) {
             return Call(i32, "dot4_u8i8",
                         {Load(words, {s[0], r[0]}), Load(weight, {s[1], r[0], s[2]})});
           });
  b.ComputeOver(
      "dense_int8_unpack", out[0], acc->shape,
      [&](const Indices& i) -> Indices {
        return {i[0], i[1] * block + i[2]};
      },
      [&](const Indices& i) { return Load(acc, i) + Load(correction, {i[1] * block + i[2]}); });
  return absl::OkStatus();
}

}  // namespace

int64_t Int8WeightBlock(int64_t columns) {
  for (int64_t block : {16, 8, 4})
    if (columns % block == 0) return block;
  return 0;
}

int64_t Int8ConvWeightWord(int64_t o, int64_t i, int64_t h, int64_t w, int64_t words, int64_t kh,
                           int64_t kw, int64_t block) {
  return ((((o / block) * words + i / 4) * kh + h) * kw + w) * block + o % block;
}

int64_t Int8DenseWeightWord(int64_t k, int64_t n, int64_t words, int64_t block) {
  return ((n / block) * words + k / 4) * block + n % block;
}

void RegisterQuantizedOps(std::vector<OpInfo>* ops) {
  ops->push_back({"relax.qnn.conv2d_int8", 4, InferQConv2d, true, OpPattern::kOutEWiseFusable,
                  "int8 2-D convolution of uint8 NCHW data by packed int8 weights, requantized "
                  "to uint8 (strides, padding, dilation, zero points, clamp)",
                  LegalizeQConv2d});
  ops->push_back({"relax.qnn.depthwise_conv2d_int8", 4, InferQDepthwise, true,
                  OpPattern::kOutEWiseFusable,
                  "int8 depthwise 2-D convolution of uint8 NCHW data, exact in float32, "
                  "requantized to uint8 (strides, padding, dilation, zero points, clamp)",
                  LegalizeQDepthwise});
  ops->push_back({"relax.qnn.dense_int8", 3, InferQDense, true, OpPattern::kOutEWiseFusable,
                  "uint8 [M, K] by packed int8 weights into int32 [M, N], with the int8 dot "
                  "product (MatMulInteger)",
                  LegalizeQDense});
}

}  // namespace kiln::ir::relax::ops
