// A parser for the Python subset TVMScript uses: indentation, decorators, classes, defs with
// annotations, (annotated) assignments, tuples, calls with keyword arguments, subscripts and
// slices, with/for/if/else/while, return/assert/pass, comments, string and number literals.
// Imports are skipped. Errors come back as `file:line:col: message` followed by the offending
// line and a caret; nesting is bounded, so no input can overflow the stack.
#ifndef KILN_COMPILER_SCRIPT_PYTHON_PARSER_H_
#define KILN_COMPILER_SCRIPT_PYTHON_PARSER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler/script/python_ast.h"

namespace kiln::script {

// The text being parsed, for error messages.
class Source {
 public:
  Source(std::string filename, std::string text);
  const std::string& filename() const { return filename_; }
  const std::string& text() const { return text_; }
  // `filename:line:col: message`, then the line and a caret under the column.
  absl::Status Error(Pos pos, absl::string_view message) const;

 private:
  std::string filename_;
  std::string text_;
  std::vector<size_t> line_starts_;
};

absl::StatusOr<PyBody> ParsePython(const Source& source);

// Parses `text` (e.g. the inside of a string annotation "n * 4") as one expression; positions
// are reported relative to `at`.
absl::StatusOr<PyExprPtr> ParsePythonExpr(const Source& source, absl::string_view text, Pos at);

}  // namespace kiln::script

#endif  // KILN_COMPILER_SCRIPT_PYTHON_PARSER_H_
