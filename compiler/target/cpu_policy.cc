#include "compiler/target/cpu_policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace kiln::target {

namespace {
// Registers one step of a register tile streams: its vector tile (two vectors) and the
// broadcast operands (two).
constexpr int64_t kStreamedRegisters = 4;
// An NCHW convolution writes its tile back transposed (each output channel's row segment read
// across the accumulators), which pays only over rows wide enough: 1024 / registers columns, 32
// with 32 registers and 64 with 16, since the fewer the registers the more of the transposes
// spill (set by measurement on both ISAs: bench/README.md, "Schedules from the target
// description").
constexpr int64_t kWideRowRegisters = 1024;
// Float32 values in a 64-byte cache line: a packed weight's block is at least one line, so that
// each step of the reduction reads whole lines rather than half of one.
constexpr int64_t kCacheLineFloats = 16;
// Below this many multiply-adds per output (a 1x1 expansion of 16 or 24 channels, a first
// convolution over 3 colour channels) a packed weight's scattered output vectors do not pay.
constexpr int64_t kMinPackedReduction = 64;
}  // namespace

CpuPolicy PolicyFor(const CpuTarget& target) {
  CpuPolicy p;
  p.lanes = target.Lanes(32);
  p.tile_registers = std::max<int64_t>(2, target.vector_registers - kStreamedRegisters);
  const int64_t in_flight = int64_t{2} * target.fma_units * target.fma_latency;
  p.accumulator_registers = std::clamp<int64_t>(in_flight, 2, p.tile_registers);
  p.max_vector_tile = 2 * p.lanes;
  p.max_elementwise_vector = 4 * p.lanes;
  p.channel_block = std::max<int64_t>(p.lanes, kCacheLineFloats);
  p.nhwc_channel_block = 2 * p.lanes;
  p.wide_row = kWideRowRegisters / target.vector_registers;
  p.split_strided_columns = target.masked_memory;
  p.int8_kernels = target.int8_dot_product;
  return p;
}

bool ConvRunsInNhwc(const ConvDescription& conv, const CpuPolicy& policy) {
  if (conv.out_width < 0 || conv.out_width >= policy.wide_row) return false;
  return conv.input_nhwc || conv.groups == 1;
}

bool Int8ConvRunsInNhwc(const ConvDescription& conv, const CpuPolicy& /*policy*/) {
  return conv.out_width >= 0 && (conv.input_nhwc || conv.groups == 1);
}

int64_t NhwcWeightBlock(const ConvDescription& conv, const CpuPolicy& policy) {
  if (conv.groups != 1) return 0;
  const int64_t o = conv.out_channels, wide = policy.nhwc_channel_block, narrow = wide / 2;
  return o % wide == 0 ? wide : narrow > 1 && o % narrow == 0 ? narrow : 0;
}

int64_t NchwWeightBlock(const ConvDescription& conv, const CpuPolicy& policy) {
  const bool small_stride = conv.max_stride >= 0 && conv.max_stride <= 2;
  if (conv.reduction < kMinPackedReduction && small_stride && conv.out_width >= 0 &&
      conv.out_width >= policy.wide_row) {
    return 0;
  }
  if (conv.flat_pointwise || conv.groups != 1) return 0;
  const int64_t o = conv.out_channels, full = policy.channel_block, half = full / 2;
  return o % full == 0 ? full : half > 1 && o % half == 0 ? half : 0;
}

bool SplitsColumns(const ConvDescription& conv, int64_t column_stride, const CpuPolicy& policy) {
  return policy.split_strided_columns && column_stride == 2 && conv.groups > 1 &&
         conv.groups == conv.out_channels;
}

std::string CpuPolicy::ToString() const {
  return absl::StrCat(lanes, " lanes, ", accumulator_registers, " accumulator registers (",
                      TileAccumulators(), " elements, ", tile_registers, " at most), vector tile ",
                      max_vector_tile, ", channel blocks ", channel_block, "/", nhwc_channel_block,
                      ", NHWC below ", wide_row, " columns",
                      split_strided_columns ? ", strided depthwise columns split" : "",
                      int8_kernels ? ", int8 kernels" : "");
}

}  // namespace kiln::target
