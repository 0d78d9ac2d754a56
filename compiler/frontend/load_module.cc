#include "compiler/frontend/load_module.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/well_formed.h"
#include "compiler/script/script_parser.h"
#include "compiler/wire/ir_proto.h"

namespace kiln::frontend {

absl::StatusOr<SourceForm> FormFromPath(absl::string_view path) {
  if (absl::EndsWith(path, ".py")) return SourceForm::kTvmScript;
  if (absl::EndsWith(path, ".pb")) return SourceForm::kIrProto;
  if (absl::EndsWith(path, ".onnx")) return SourceForm::kOnnx;
  return absl::UnimplementedError("expected TVMScript (.py), protobuf IR (.pb) or ONNX (.onnx)");
}

absl::StatusOr<ir::IRModule> ParseModule(SourceForm form, absl::string_view bytes,
                                         absl::string_view name, const LoadOptions& options) {
  switch (form) {
    case SourceForm::kTvmScript:
      return script::ParseScript(bytes, std::string(name));
    case SourceForm::kIrProto:
      return wire::DeserializeModule(bytes);
    case SourceForm::kOnnx:
      return ImportOnnx(bytes, name, options.max_constant_bytes, options.external_data_dir);
  }
  return absl::InvalidArgumentError("unknown module form");
}

absl::StatusOr<ir::IRModule> LoadModule(SourceForm form, absl::string_view bytes,
                                        absl::string_view name, const LoadOptions& options) {
  absl::StatusOr<ir::IRModule> mod = ParseModule(form, bytes, name, options);
  if (mod.ok()) mod = ir::relax::NormalizeModule(*mod);
  if (mod.ok()) {
    absl::Status sizes = ir::relax::CheckTensorSizes(*mod);
    if (sizes.ok()) return mod;
    mod = sizes;
  }
  std::string message(mod.status().message());
  if (!absl::StartsWith(message, name)) message = absl::StrCat(name, ": ", message);
  absl::StatusCode code = mod.status().code() == absl::StatusCode::kUnimplemented
                              ? absl::StatusCode::kUnimplemented
                              : absl::StatusCode::kInvalidArgument;
  return absl::Status(code, message);
}

absl::StatusOr<ir::IRModule> ParseModuleFile(const std::string& path, const LoadOptions& options) {
  absl::StatusOr<SourceForm> form = FormFromPath(path);
  if (!form.ok()) return form.status();
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return absl::NotFoundError("cannot open the file");
  // Read once into a buffer of the file's size: a stream copied into a growing string copied a
  // 47 MB model three times.
  std::string bytes;
  const std::streamoff size = in.tellg();
  if (size >= 0) {
    bytes.resize(static_cast<size_t>(size));
    in.seekg(0);
    in.read(bytes.data(), size);
  }
  if (size < 0 || !in) {  // not a regular file: read it as a stream
    in.clear();
    in.seekg(0);
    std::ostringstream stream;
    stream << in.rdbuf();
    bytes = stream.str();
  }
  LoadOptions with_dir = options;
  if (with_dir.external_data_dir.empty()) {
    with_dir.external_data_dir = std::filesystem::path(path).parent_path().string();
    if (with_dir.external_data_dir.empty()) with_dir.external_data_dir = ".";
  }
  return ParseModule(*form, bytes, path, with_dir);
}

}  // namespace kiln::frontend
