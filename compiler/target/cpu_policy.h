// The one place that states how kernels are shaped for a CPU: register tiles, vector tiles,
// weight blocks and the layout a convolution runs in, each derived from the target description
// (cpu_target.h). Layout conversion (ConvertConvLayout), weight packing (PackConstantWeights) and
// the schedule rules consult it, so the three agree on a target and no ISA constant lives in any
// of them. Every field counts float32 elements unless it says registers.
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

  // Elements of the accumulator tile.
  int64_t TileAccumulators() const { return accumulator_registers * lanes; }

  std::string ToString() const;
};

CpuPolicy PolicyFor(const CpuTarget& target);

}  // namespace kiln::target

#endif  // KILN_COMPILER_TARGET_CPU_POLICY_H_
