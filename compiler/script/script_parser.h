// The TVMScript parser: text in the syntax of compiler/script/printer.h (and of modules printed
// by TVM) to an IRModule. The result is the module as written — run NormalizeModule to infer
// StructInfo and CheckWellFormed to validate it.
//
// Errors are `file:line:col: message` with the offending line and a caret; malformed input
// never crashes the parser.
#ifndef KILN_COMPILER_SCRIPT_SCRIPT_PARSER_H_
#define KILN_COMPILER_SCRIPT_SCRIPT_PARSER_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler/ir/module.h"

namespace kiln::script {

absl::StatusOr<ir::IRModule> ParseScript(absl::string_view text,
                                         const std::string& filename = "<script>");

}  // namespace kiln::script

#endif  // KILN_COMPILER_SCRIPT_SCRIPT_PARSER_H_
