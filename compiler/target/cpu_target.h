// What the compiler knows of a CPU it generates code for: vector width and registers, the FMA
// units' throughput and latency, caches and cores. Every schedule decision that depends on the
// machine is derived from this description (cpu_policy.h), never from an ISA constant, so that
// a default fitted on one CPU follows the target to another. Free of LLVM: the description is
// read off the features LLVM resolved (codegen/llvm_target.h lists them in Linux's names).
#ifndef KILN_COMPILER_TARGET_CPU_TARGET_H_
#define KILN_COMPILER_TARGET_CPU_TARGET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace kiln::target {

struct CpuTarget {
  std::string arch = "x86_64";  // "x86_64" or "aarch64"
  std::string cpu = "generic";  // LLVM's CPU name: "znver4", "haswell", "cortex-a72"
  int vector_bits = 128;        // the widest vector the kernels use
  int vector_registers = 16;    // architectural vector registers at that width
  int fma_units = 1;            // full-width vector FMAs issued per cycle
  int fma_latency = 4;          // cycles from an FMA to a dependent one
  int64_t l1d_bytes = 32 << 10;
  int64_t l2_bytes = 512 << 10;
  int64_t l3_bytes = 0;  // 0: none, or unknown
  int cores = 1;
  // Loads and stores of any lanes of a vector in one instruction, whatever its length (AVX-512's
  // mask registers): a masked access of a row's odd span costs what an aligned one does.
  bool masked_memory = false;
  // An int8 dot product of four pairs per 32-bit lane in one instruction (AVX-512 VNNI's
  // vpdpbusd, Arm's usdot with i8mm or udot with the dot product): int8 kernels
  // (relax.qnn.*_int8) run on it; elsewhere they run in float32.
  bool int8_dot_product = false;

  // Elements of `element_bits` in one vector (16 float32 lanes for AVX-512).
  int Lanes(int element_bits = 32) const;
  // One line for logs and bench tables: "x86_64 znver4: 512-bit x 32 registers, ...".
  std::string ToString() const;
};

// The description of `cpu` of `arch` with `features` (Linux names: "avx2", "avx512f", "fma",
// "asimd", "sve"; runtime::KnownCpuFeatures lists them), with the caches and FMA timing of that
// CPU where Kiln knows them, else typical ones for the ISA. `sve_vector_bits`, when not 0, is the
// SVE implementation's vector length (the board's registration says it; LLVM cannot).
CpuTarget DescribeCpu(absl::string_view arch, absl::string_view cpu,
                      const std::vector<std::string>& features, int sve_vector_bits = 0);

// This machine's cache sizes and core count (sysfs), over `target`'s: what a compile for the
// host uses.
CpuTarget WithHostCaches(CpuTarget target);

// The descriptions tests and benchmarks name.
CpuTarget Avx2Haswell();    // x86-64 AVX2 + FMA, 16 ymm registers
CpuTarget Avx512Znver4();   // x86-64 AVX-512 (with VNNI), 32 zmm registers, FMAs at half rate
CpuTarget NeonCortexA72();  // aarch64 NEON, 32 128-bit registers

}  // namespace kiln::target

#endif  // KILN_COMPILER_TARGET_CPU_TARGET_H_
