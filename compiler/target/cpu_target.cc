#include "compiler/target/cpu_target.h"

#include <algorithm>
#include <fstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace kiln::target {
namespace {

// Per CPU: the FMA throughput in vector bits per cycle (units x width), its latency, and the
// data caches of one core (L3: the whole chip's share a core sees; 0 when it varies by part).
struct CpuFacts {
  const char* cpu;
  int fma_bits_per_cycle;
  int fma_latency;
  int64_t l1d_kib, l2_kib, l3_kib;
};

// Published microarchitecture figures (vendors' optimization manuals). 512-bit FMAs on Zen 4
// issue through two 256-bit pipes: 512 bits per cycle, as on Zen 2 and 3.
constexpr CpuFacts kKnownCpus[] = {
    {"haswell", 512, 5, 32, 256, 0},          {"broadwell", 512, 5, 32, 256, 0},
    {"skylake", 512, 4, 32, 256, 0},          {"skylake-avx512", 1024, 4, 32, 1024, 0},
    {"cascadelake", 1024, 4, 32, 1024, 0},    {"cooperlake", 1024, 4, 32, 1024, 0},
    {"icelake-server", 1024, 4, 48, 1280, 0}, {"sapphirerapids", 1024, 4, 48, 2048, 0},
    {"znver1", 256, 5, 32, 512, 8192},        {"znver2", 512, 5, 32, 512, 16384},
    {"znver3", 512, 4, 32, 512, 32768},       {"znver4", 512, 4, 32, 1024, 32768},
    {"cortex-a53", 64, 8, 32, 512, 0},        {"cortex-a55", 128, 4, 32, 256, 0},
    {"cortex-a72", 256, 7, 32, 1024, 0},      {"cortex-a76", 256, 4, 64, 512, 0},
    {"neoverse-n1", 256, 4, 64, 1024, 0},     {"neoverse-v1", 512, 4, 64, 1024, 0},
    {"a64fx", 1024, 9, 64, 8192, 0},
};

bool Has(const std::vector<std::string>& features, absl::string_view name) {
  return std::find(features.begin(), features.end(), name) != features.end();
}

// A sysfs cache size ("32K", "1024K", "32M") in bytes; 0 when unreadable.
int64_t ReadCacheSize(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text)) return 0;
  int64_t scale = 1;
  absl::string_view digits = text;
  if (absl::ConsumeSuffix(&digits, "K")) scale = 1 << 10;
  if (absl::ConsumeSuffix(&digits, "M")) scale = 1 << 20;
  int64_t n = 0;
  return absl::SimpleAtoi(digits, &n) ? n * scale : 0;
}

}  // namespace

int CpuTarget::Lanes(int element_bits) const { return std::max(1, vector_bits / element_bits); }

std::string CpuTarget::ToString() const {
  return absl::StrCat(
      arch, " ", cpu, ": ", vector_bits, "-bit vectors x ", vector_registers, " registers, ",
      fma_units, " FMA/cycle x ", fma_latency, " cycles, L1d ", l1d_bytes >> 10, " KiB, L2 ",
      l2_bytes >> 10, " KiB, L3 ", l3_bytes >> 10, " KiB, ", cores, cores == 1 ? " core" : " cores",
      masked_memory ? ", masked loads" : "", int8_dot_product ? ", int8 dot product" : "");
}

CpuTarget DescribeCpu(absl::string_view arch, absl::string_view cpu,
                      const std::vector<std::string>& features, int sve_vector_bits) {
  CpuTarget t;
  t.arch = std::string(arch);
  t.cpu = cpu.empty() ? "generic" : std::string(cpu);
  int fma_bits_per_cycle = 0;
  if (arch == "aarch64") {
    t.vector_bits = 128;
    t.vector_registers = 32;
    // SVE code is fixed-length only where the length is known (the board said it).
    if (Has(features, "sve") && sve_vector_bits >= 128) t.vector_bits = sve_vector_bits;
    fma_bits_per_cycle = 2 * t.vector_bits;
    t.int8_dot_product = Has(features, "asimddp") || Has(features, "i8mm");
  } else {
    const bool avx512 = Has(features, "avx512f");
    t.vector_bits = avx512 ? 512 : Has(features, "avx2") || Has(features, "avx") ? 256 : 128;
    t.vector_registers = avx512 ? 32 : 16;
    t.masked_memory = avx512;
    t.int8_dot_product = Has(features, "avx512_vnni") && Has(features, "avx512vl");
    fma_bits_per_cycle = Has(features, "fma") || avx512 ? 2 * t.vector_bits : t.vector_bits;
  }
  for (const CpuFacts& facts : kKnownCpus) {
    if (t.cpu != facts.cpu) continue;
    fma_bits_per_cycle = facts.fma_bits_per_cycle;
    t.fma_latency = facts.fma_latency;
    t.l1d_bytes = facts.l1d_kib << 10;
    t.l2_bytes = facts.l2_kib << 10;
    t.l3_bytes = facts.l3_kib << 10;
  }
  t.fma_units = std::max(1, fma_bits_per_cycle / t.vector_bits);
  return t;
}

CpuTarget WithHostCaches(CpuTarget target) {
  for (int index = 0; index < 8; ++index) {
    const std::string dir = absl::StrCat("/sys/devices/system/cpu/cpu0/cache/index", index, "/");
    std::ifstream level_in(dir + "level"), type_in(dir + "type");
    int level = 0;
    std::string type;
    if (!(level_in >> level) || !(type_in >> type) || type == "Instruction") continue;
    const int64_t size = ReadCacheSize(dir + "size");
    if (size <= 0) continue;
    if (level == 1) target.l1d_bytes = size;
    if (level == 2) target.l2_bytes = size;
    if (level == 3) target.l3_bytes = size;
  }
  target.cores = std::max(1u, std::thread::hardware_concurrency());
  return target;
}

CpuTarget Avx2Haswell() { return DescribeCpu("x86_64", "haswell", {"avx", "avx2", "fma"}); }

CpuTarget Avx512Znver4() {
  return DescribeCpu("x86_64", "znver4",
                     {"avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni"});
}

CpuTarget NeonCortexA72() { return DescribeCpu("aarch64", "cortex-a72", {"asimd"}); }

}  // namespace kiln::target
