// The fuzz target of the ONNX importer: any bytes must import or fail with a message, and a
// module that imports must be well-formed Relax (every criterion of the spec). A violation
// traps.
#include <cstddef>
#include <cstdint>

#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/relax/well_formed.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1 << 16)) return 0;  // the per-op models are a few hundred bytes
  absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<kiln::ir::IRModule> mod = kiln::frontend::ImportOnnx(bytes, "fuzz.onnx");
  if (!mod.ok()) {
    if (mod.status().message().empty()) __builtin_trap();
    return 0;
  }
  if (!kiln::ir::relax::CheckWellFormed(*mod).ok()) __builtin_trap();
  return 0;
}
