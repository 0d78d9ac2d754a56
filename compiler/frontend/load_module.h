// The one entry point of the front ends: a module's bytes in any of the forms Kiln reads
// (TVMScript, protobuf IR, ONNX) to an IRModule. The CLI and kiln-worker both load through it;
// kilnd itself never does, so hostile input is parsed only inside a supervised worker.
#ifndef KILN_COMPILER_FRONTEND_LOAD_MODULE_H_
#define KILN_COMPILER_FRONTEND_LOAD_MODULE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler/ir/module.h"

namespace kiln::frontend {

enum class SourceForm { kTvmScript, kIrProto, kOnnx };

// The form a file name implies: .py, .pb or .onnx; Unimplemented for anything else.
absl::StatusOr<SourceForm> FormFromPath(absl::string_view path);

// Parses `bytes` as `form`, as written (not normalized: `kiln check` reports what it finds).
// Errors start with `name` (parse errors carry name:line:col).
absl::StatusOr<ir::IRModule> ParseModule(SourceForm form, absl::string_view bytes,
                                         absl::string_view name);

// ParseModule, then normalization (StructInfo filled in). The parsers' own codes stand where
// they say something (an unsupported ONNX operator is Unimplemented); anything else the input
// caused is InvalidArgument.
absl::StatusOr<ir::IRModule> LoadModule(SourceForm form, absl::string_view bytes,
                                        absl::string_view name);

// Reads the file at `path` and parses it in the form its name implies (not normalized).
absl::StatusOr<ir::IRModule> ParseModuleFile(const std::string& path);

}  // namespace kiln::frontend

#endif  // KILN_COMPILER_FRONTEND_LOAD_MODULE_H_
