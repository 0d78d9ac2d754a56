#include "compiler/target/cpu_target.h"

#include "compiler/target/cpu_policy.h"
#include "gtest/gtest.h"

namespace kiln::target {
namespace {

TEST(CpuTargetTest, VectorsAndRegistersFollowTheFeatures) {
  const CpuTarget avx2 = Avx2Haswell();
  EXPECT_EQ(avx2.vector_bits, 256);
  EXPECT_EQ(avx2.vector_registers, 16);
  EXPECT_EQ(avx2.fma_units, 2);
  EXPECT_EQ(avx2.fma_latency, 5);
  EXPECT_EQ(avx2.Lanes(32), 8);
  EXPECT_EQ(avx2.Lanes(8), 32);

  const CpuTarget avx512 = Avx512Znver4();
  EXPECT_EQ(avx512.vector_bits, 512);
  EXPECT_EQ(avx512.vector_registers, 32);
  EXPECT_EQ(avx512.fma_units, 1);  // 512-bit FMAs through two 256-bit pipes
  EXPECT_EQ(avx512.l2_bytes, 1 << 20);

  // The same CPU held to AVX2 has twice the FMA units at half the width.
  const CpuTarget znver4_avx2 = DescribeCpu("x86_64", "znver4", {"avx", "avx2", "fma"});
  EXPECT_EQ(znver4_avx2.vector_bits, 256);
  EXPECT_EQ(znver4_avx2.fma_units, 2);

  const CpuTarget neon = NeonCortexA72();
  EXPECT_EQ(neon.vector_bits, 128);
  EXPECT_EQ(neon.vector_registers, 32);
  EXPECT_EQ(neon.fma_latency, 7);

  // SVE is fixed-length only when the board says its length.
  EXPECT_EQ(DescribeCpu("aarch64", "neoverse-v1", {"asimd", "sve"}).vector_bits, 128);
  EXPECT_EQ(DescribeCpu("aarch64", "neoverse-v1", {"asimd", "sve"}, 256).vector_bits, 256);

  // int8 kernels where one instruction does four products per lane: VNNI, Arm's dot product
  // or i8mm; AVX2 and a plain NEON core run them in float32.
  EXPECT_TRUE(avx512.int8_dot_product);
  EXPECT_FALSE(avx2.int8_dot_product);
  EXPECT_FALSE(neon.int8_dot_product);
  EXPECT_TRUE(DescribeCpu("aarch64", "cortex-a76", {"asimd", "asimddp"}).int8_dot_product);
  EXPECT_TRUE(DescribeCpu("aarch64", "neoverse-v1", {"asimd", "i8mm"}).int8_dot_product);
  EXPECT_TRUE(PolicyFor(DescribeCpu("aarch64", "cortex-a76", {"asimd", "asimddp"})).int8_kernels);
  EXPECT_FALSE(PolicyFor(neon).int8_kernels);

  // An unknown CPU gets the ISA's typical figures.
  const CpuTarget generic = DescribeCpu("x86_64", "generic", {"sse4_2"});
  EXPECT_EQ(generic.vector_bits, 128);
  EXPECT_EQ(generic.fma_units, 1);
}

TEST(CpuPolicyTest, Avx512KeepsTheTilesFittedOnIt) {
  const CpuPolicy p = PolicyFor(Avx512Znver4());
  EXPECT_EQ(p.lanes, 16);
  EXPECT_EQ(p.accumulator_registers, 8);  // 1 unit x 4 cycles x 2
  EXPECT_EQ(p.TileAccumulators(), 128);
  EXPECT_EQ(p.tile_registers, 28);
  EXPECT_EQ(p.max_vector_tile, 32);
  EXPECT_EQ(p.max_elementwise_vector, 64);
  EXPECT_EQ(p.channel_block, 16);
  EXPECT_EQ(p.nhwc_channel_block, 32);
  EXPECT_EQ(p.wide_row, 32);
}

TEST(CpuPolicyTest, Avx2TilesFitSixteenRegisters) {
  const CpuPolicy p = PolicyFor(Avx2Haswell());
  EXPECT_EQ(p.lanes, 8);
  // 2 units x 5 cycles x 2 = 20 chains wanted; 16 registers less 4 streamed allow 12.
  EXPECT_EQ(p.accumulator_registers, 12);
  EXPECT_EQ(p.TileAccumulators(), 96);
  EXPECT_LE(p.accumulator_registers + 4, 16);
  EXPECT_EQ(p.max_vector_tile, 16);
  EXPECT_EQ(p.channel_block, 16);  // two vectors: a cache line
  EXPECT_EQ(p.nhwc_channel_block, 16);
  EXPECT_EQ(p.wide_row, 64);
}

TEST(CpuPolicyTest, NeonAndSveTiles) {
  const CpuPolicy neon = PolicyFor(NeonCortexA72());
  EXPECT_EQ(neon.lanes, 4);
  EXPECT_EQ(neon.accumulator_registers, 28);  // 2 x 7 x 2, and 32 less 4 streamed
  EXPECT_EQ(neon.TileAccumulators(), 112);
  EXPECT_EQ(neon.max_vector_tile, 8);
  EXPECT_EQ(neon.channel_block, 16);
  EXPECT_EQ(neon.wide_row, 32);

  const CpuPolicy sve = PolicyFor(DescribeCpu("aarch64", "neoverse-v1", {"asimd", "sve"}, 256));
  EXPECT_EQ(sve.lanes, 8);
  EXPECT_EQ(sve.accumulator_registers, 16);  // 2 units x 4 cycles x 2
  EXPECT_EQ(sve.TileAccumulators(), 128);
  EXPECT_EQ(sve.channel_block, 16);
}

TEST(CpuTargetTest, HostCachesAreRead) {
  const CpuTarget host = WithHostCaches(DescribeCpu("x86_64", "generic", {}));
  EXPECT_GE(host.cores, 1);
  EXPECT_GT(host.l1d_bytes, 0);
  EXPECT_GT(host.l2_bytes, 0);
}

TEST(CpuTargetTest, DescribesItselfInOneLine) {
  EXPECT_EQ(Avx2Haswell().ToString(),
            "x86_64 haswell: 256-bit vectors x 16 registers, 2 FMA/cycle x 5 cycles, L1d 32 KiB, "
            "L2 256 KiB, L3 0 KiB, 1 core");
}

// The convolution decisions, one convolution shape per rule, on both x86 ISAs.
TEST(CpuPolicyTest, ConvolutionLayoutsAndBlocksFollowThePolicy) {
  const CpuPolicy avx512 = PolicyFor(Avx512Znver4());
  const CpuPolicy avx2 = PolicyFor(Avx2Haswell());
  ASSERT_EQ(avx512.wide_row, 32);
  ASSERT_EQ(avx2.wide_row, 64);

  ConvDescription conv;  // a 3x3 convolution of 64 channels over 28 columns
  conv.out_channels = 64;
  conv.reduction = 64 * 9;
  conv.out_width = 28;
  EXPECT_TRUE(ConvRunsInNhwc(conv, avx512));
  EXPECT_EQ(NhwcWeightBlock(conv, avx512), 32);  // two 16-lane vectors
  EXPECT_EQ(NhwcWeightBlock(conv, avx2), 16);    // two 8-lane vectors
  conv.out_channels = 24;                        // one vector divides, two do not
  EXPECT_EQ(NhwcWeightBlock(conv, avx2), 8);
  EXPECT_EQ(NhwcWeightBlock(conv, avx512), 0);  // HWIO
  EXPECT_EQ(NchwWeightBlock(conv, avx512), 8);  // half a channel block

  // Wide rows stay NCHW; 48 columns are wide on AVX-512, narrow on AVX2 (16 registers).
  conv.out_channels = 64;
  conv.out_width = 48;
  // An int8 convolution runs in NHWC at any width (its lanes are output channels either way);
  // a depthwise one, where its input is NHWC already; a symbolic width, never.
  EXPECT_FALSE(ConvRunsInNhwc(conv, avx512));
  EXPECT_TRUE(Int8ConvRunsInNhwc(conv, avx512));
  ConvDescription int8_depthwise = conv;
  int8_depthwise.groups = 64;
  EXPECT_FALSE(Int8ConvRunsInNhwc(int8_depthwise, avx512));
  int8_depthwise.input_nhwc = true;
  EXPECT_TRUE(Int8ConvRunsInNhwc(int8_depthwise, avx512));
  int8_depthwise.out_width = -1;
  EXPECT_FALSE(Int8ConvRunsInNhwc(int8_depthwise, avx512));
  EXPECT_FALSE(ConvRunsInNhwc(conv, avx512));
  EXPECT_TRUE(ConvRunsInNhwc(conv, avx2));
  EXPECT_EQ(NchwWeightBlock(conv, avx512), 16);
  conv.out_width = -1;  // unknown width: NCHW
  EXPECT_FALSE(ConvRunsInNhwc(conv, avx2));

  // A grouped convolution: NHWC only from NHWC input, never a blocked weight.
  ConvDescription depthwise;
  depthwise.out_channels = 32;
  depthwise.reduction = 9;
  depthwise.groups = 32;
  depthwise.out_width = 14;
  EXPECT_FALSE(ConvRunsInNhwc(depthwise, avx512));
  depthwise.input_nhwc = true;
  EXPECT_TRUE(ConvRunsInNhwc(depthwise, avx512));
  EXPECT_EQ(NhwcWeightBlock(depthwise, avx512), 0);
  EXPECT_EQ(NchwWeightBlock(depthwise, avx512), 0);

  // A first convolution over 3 colours and wide rows vectorizes along the rows, unpacked; at
  // stride 4 it is packed; a flat pointwise one is a matmul with its weight as it is.
  ConvDescription stem;
  stem.out_channels = 32;
  stem.reduction = 3 * 9;
  stem.out_width = 112;
  stem.max_stride = 2;
  EXPECT_EQ(NchwWeightBlock(stem, avx512), 0);
  stem.max_stride = 4;
  EXPECT_EQ(NchwWeightBlock(stem, avx512), 16);
  stem.flat_pointwise = true;
  EXPECT_EQ(NchwWeightBlock(stem, avx512), 0);
}

}  // namespace
}  // namespace kiln::target
