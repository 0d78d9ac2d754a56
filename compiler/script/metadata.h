// TVM's metadata section: the `metadata = tvm.ir.load_json("""...""")` preamble of modules
// printed with `mod.script(show_meta=True)`. Its JSON object graph holds, under the root Map's
// key "relax.expr.Constant", the constants the module text refers to as
// `metadata["relax.expr.Constant"][i]`; their data are base64 of TVM's NDArray binary layout
// (see ../shared/tvm_printed/README.md).
#ifndef KILN_COMPILER_SCRIPT_METADATA_H_
#define KILN_COMPILER_SCRIPT_METADATA_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler/ir/relax_expr.h"

namespace kiln::script {

// The Constant nodes of the section, in index order. Errors say what is malformed.
absl::StatusOr<std::vector<ir::relax::Expr>> ParseTvmMetadata(absl::string_view json);

// One NDArray in TVM's binary layout (magic, reserved, device, ndim, dtype, shape, size, data).
absl::StatusOr<ir::relax::Expr> DecodeTvmNDArray(absl::string_view bytes);
std::string EncodeTvmNDArray(const ir::relax::ConstantNode& constant);

// The JSON of a metadata section holding `constants` in order, in the form ParseTvmMetadata
// (and TVM's loader) reads: root Map -> "relax.expr.Constant" Array -> Constants -> b64ndarrays.
std::string PrintTvmMetadata(const std::vector<const ir::relax::ConstantNode*>& constants);

}  // namespace kiln::script

#endif  // KILN_COMPILER_SCRIPT_METADATA_H_
