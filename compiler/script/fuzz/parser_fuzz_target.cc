// The fuzz target of the TVMScript parser. Any input must parse or fail cleanly; whatever
// parses must also survive the round trip: printing it and parsing the text again gives a
// structurally equal module that prints to the same text. A violation traps.
#include <cstddef>
#include <cstdint>
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

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1 << 16)) return 0;  // keep iterations fast; large inputs add nothing new
  std::string text(reinterpret_cast<const char*>(data), size);
  // As in kiln-worker: the walks over a deeply nested module need the compiler's stack.
  return kiln::runtime::RunWithStack(kiln::runtime::kCompilerStackBytes,
                                     [&] { return ParsePrintParse(text); });
}
