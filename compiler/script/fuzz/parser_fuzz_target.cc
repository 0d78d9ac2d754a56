// The fuzz target of the TVMScript parser. Any input must parse or fail cleanly; whatever
// parses must also survive the round trip: printing it and parsing the text again gives a
// structurally equal module that prints to the same text. A violation traps.
//
// The custom mutator builds what byte flips almost never do: deep nests (a span wrapped in up to
// thousands of parentheses) and long chains (a short span repeated thousands of times, e.g.
// ` + x`), besides libFuzzer's own mutations.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>

#include "compiler/ir/structural.h"
#include "compiler/script/printer.h"
#include "compiler/script/script_parser.h"
#include "runtime/support/large_stack.h"

namespace {

int ParsePrintParse(const std::string& text) {
  absl::StatusOr<kiln::ir::IRModule> mod = kiln::script::ParseScript(text, "fuzz.py");
  if (!mod.ok()) return 0;
  std::string printed = kiln::script::PrintScript(*mod);
  absl::StatusOr<kiln::ir::IRModule> again = kiln::script::ParseScript(printed, "printed.py");
  if (!again.ok()) __builtin_trap();
  if (!kiln::ir::StructuralEqual(*mod, *again)) __builtin_trap();
  if (kiln::script::PrintScript(*again) != printed) __builtin_trap();
  return 0;
}

}  // namespace

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  std::mt19937 rng(seed);
  if (size < 2 || rng() % 3 == 0) return LLVMFuzzerMutate(data, size, max_size);
  std::string s(reinterpret_cast<const char*>(data), size);
  size_t a = rng() % size;
  size_t b = a + rng() % std::min<size_t>(size - a, 16);
  size_t k = 1 + rng() % (rng() % 8 == 0 ? 30000 : 300);
  std::string out;
  if (rng() % 2 == 0) {  // nest: s[a, b) inside k parentheses
    out = s.substr(0, a) + std::string(k, '(') + s.substr(a, b - a) + std::string(k, ')') +
          s.substr(b);
  } else {  // chain: s[a, b) k times
    std::string span = s.substr(a, std::max<size_t>(b - a, 1));
    out = s.substr(0, a);
    for (size_t i = 0; i < k && out.size() < max_size; ++i) out += span;
    out += s.substr(a);
  }
  if (out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1 << 20)) return 0;  // keep iterations fast
  std::string text(reinterpret_cast<const char*>(data), size);
  // As in kiln-worker: the walks over a deeply nested module need the compiler's stack.
  return kiln::runtime::RunWithStack(kiln::runtime::kCompilerStackBytes,
                                     [&] { return ParsePrintParse(text); });
}
