// The one place that states how kernels are shaped for a CPU: register tiles, vector tiles,
// weight blocks and the layout a convolution runs in (ConvRunsInNhwc, NhwcWeightBlock,
// NchwWeightBlock), each derived from the target description (cpu_target.h). Layout conversion
// (ConvertConvLayout), weight packing (PackConstantWeights) and the schedule rules consult it,
// so the three agree on a target and no ISA constant or convolution threshold lives in any of
// them. Every field counts float32 elements unless it says registers.
#ifndef KILN_COMPILER_TARGET_CPU_POLICY_H_
#define KILN_COMPILER_TARGET_CPU_POLICY_H_

#include <cstdint>
#include <string>

#include "compiler/target/cpu_target.h"

namespace kiln::target {

struct CpuPolicy {
  // Lanes of one vector register.
  int64_t lanes = 16;
  // Registers a register tile's accumulators may take: enough independent FMA chains to keep the
  // units busy twice over (units x latency x 2, so the loads of the next step overlap), within the
  // register file less the operands a step streams (two vectors and two broadcasts).
  int64_t accumulator_registers = 8;
  // The register file less the streamed operands: the most a tile may take when a row of prime
  // extent is kept whole.
  int64_t tile_registers = 28;
  // The widest vectorized inner tile of a register tile: two vectors.
  int64_t max_vector_tile = 32;
  // The widest vector an elementwise loop is split into: four registers.
  int64_t max_elementwise_vector = 64;
  // Output channels per block of a packed weight (NCHW convolutions, matmul panels): one vector,
  // and at least one 64-byte cache line.
  int64_t channel_block = 16;
  // Output channels per block of an NHWC convolution's OHWI<b>o weight: two vectors when they
  // divide the channels, else one.
  int64_t nhwc_channel_block = 32;
  // Convolutions whose output rows are narrower than this run in NHWC, vectorized over
  // channels: 1024 / the vector registers (32 columns with 32 registers, 64 with 16), since an
  // NCHW tile's transposed write-back pays only over wide rows, and the fewer the registers the
  // wider the row must be.
  int64_t wide_row = 32;
  // A depthwise convolution striding 2 along NCHW rows reads its padded input deinterleaved
  // ([N, C, H, 2, W / 2]: each tap a contiguous run, not two vectors and a shuffle), where the
  // copy that deinterleaves it is one masked load per row (the target's masked memory access);
  // elsewhere the copy's edge masks cost more than the shuffles they save.
  bool split_strided_columns = false;
  // int8 operators run on the int8 dot product (the target has one); else they are rewritten
  // into float32 arithmetic before anything else sees them (FallbackInt8Ops).
  bool int8_kernels = false;

  // Elements of the accumulator tile.
  int64_t TileAccumulators() const { return accumulator_registers * lanes; }

  std::string ToString() const;
};

CpuPolicy PolicyFor(const CpuTarget& target);

// A float32 2-D convolution of NCHW data by a constant OIHW weight, as the policy sees it.
struct ConvDescription {
  int64_t out_channels = 0;
  int64_t reduction = 0;        // input channels per group x kernel height x kernel width
  int64_t groups = 1;           // 0: not a constant
  int64_t out_width = -1;       // -1: not static
  int64_t max_stride = 1;       // the largest stride; -1: one is not a constant
  bool input_nhwc = false;      // the input is available in NHWC already
  bool flat_pointwise = false;  // 1x1, stride 1, unpadded: legalized as a matmul along the image
};

// Where a convolution runs in NHWC, vectorized over channels (ConvertConvLayout): below the
// policy's wide row (an NCHW tile's transposed write-back pays only over wide rows). A grouped
// convolution reads its own channels, so vectors of them from NCHW data would be gathers: it
// runs in NHWC only where its input is NHWC already.
bool ConvRunsInNhwc(const ConvDescription& conv, const CpuPolicy& policy);

// Where an int8 convolution (relax.qnn.*) runs in NHWC: everywhere a float one could, whatever
// the row's width. Its lanes are output channels in either layout (the int8 dot product sums
// four input channels into each), so NCHW buys no row vectors; NHWC makes its input words a
// pixel's bytes as they lie and its requantized lanes one store.
bool Int8ConvRunsInNhwc(const ConvDescription& conv, const CpuPolicy& policy);

// The output-channel block of an NHWC convolution's weight, OHWI<b>o: two vectors where they
// divide the channels, else one; 0 (HWIO, unblocked) when neither divides or groups are not 1.
// HWIO keeps each block's weights 4 x O bytes apart per input channel, across all the weight's
// pages; blocks make them one contiguous stream.
int64_t NhwcWeightBlock(const ConvDescription& conv, const CpuPolicy& policy);

// The output-channel block of an NCHW convolution's packed weight, OIHW<b>o
// (PackConstantWeights): the policy's channel block, or half of it where that divides the
// channels; 0 to keep OIHW — a grouped convolution, a flat pointwise one (a matmul along the
// image, the weight as it is), and one with a small reduction over wide rows at stride 1 or 2,
// which vectorizes better along the image rows than over scattered output channels.
int64_t NchwWeightBlock(const ConvDescription& conv, const CpuPolicy& policy);

// Whether an NCHW depthwise convolution (groups = out_channels) striding `column_stride` along
// its rows reads its input deinterleaved (relax.nn.conv2d's split_columns).
bool SplitsColumns(const ConvDescription& conv, int64_t column_stride, const CpuPolicy& policy);

}  // namespace kiln::target

#endif  // KILN_COMPILER_TARGET_CPU_POLICY_H_
