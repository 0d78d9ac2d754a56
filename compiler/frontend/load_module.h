// The one entry point of the front ends: a module's bytes in any of the forms Kiln reads
// (TVMScript, protobuf IR, ONNX) to an IRModule. The CLI and kiln-worker both load through it;
// kilnd itself never does, so hostile input is parsed only inside a supervised worker.
#ifndef KILN_COMPILER_FRONTEND_LOAD_MODULE_H_
#define KILN_COMPILER_FRONTEND_LOAD_MODULE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler/ir/module.h"

namespace kiln::frontend {

enum class SourceForm { kTvmScript, kIrProto, kOnnx };

// The form a file name implies: .py, .pb or .onnx; Unimplemented for anything else.
absl::StatusOr<SourceForm> FormFromPath(absl::string_view path);

struct LoadOptions {
  // The largest constant a front end computes itself (an ONNX Range of constant bounds): a
  // model of a few bytes must not make the compiler build gigabytes. Larger is refused.
  int64_t max_constant_bytes = int64_t{64} << 20;
  // Where an ONNX model's external data files are (ParseModuleFile: the file's directory). Empty
  // for bytes that came without a file (a kilnd submit): such a model is refused.
  std::string external_data_dir;
};

// Parses `bytes` as `form`, as written (not normalized: `kiln check` reports what it finds).
// Errors start with `name` (parse errors carry name:line:col).
absl::StatusOr<ir::IRModule> ParseModule(SourceForm form, absl::string_view bytes,
                                         absl::string_view name, const LoadOptions& options = {});

// ParseModule, then normalization (StructInfo filled in). The parsers' own codes stand where
// they say something (an unsupported ONNX operator is Unimplemented); anything else the input
// caused is InvalidArgument.
absl::StatusOr<ir::IRModule> LoadModule(SourceForm form, absl::string_view bytes,
                                        absl::string_view name, const LoadOptions& options = {});

// Reads the file at `path` and parses it in the form its name implies (not normalized).
absl::StatusOr<ir::IRModule> ParseModuleFile(const std::string& path,
                                             const LoadOptions& options = {});

}  // namespace kiln::frontend

#endif  // KILN_COMPILER_FRONTEND_LOAD_MODULE_H_
