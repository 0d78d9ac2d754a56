// The tokenizer of the Python subset TVMScript is written in (python_parser.h's first step):
// names, numbers, strings, operators, and INDENT / DEDENT / NEWLINE from the indentation, with
// `file:line:col` errors. Internal to compiler/script.
#ifndef KILN_COMPILER_SCRIPT_PYTHON_LEXER_H_
#define KILN_COMPILER_SCRIPT_PYTHON_LEXER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler/script/python_parser.h"

namespace kiln::script {

// An operator's one or two characters packed into an integer.
inline constexpr uint16_t OpCode(const char* op) {
  return static_cast<uint16_t>(static_cast<unsigned char>(op[0]) |
                               (op[0] != '\0' ? static_cast<unsigned char>(op[1]) << 8 : 0));
}

struct Token {
  enum class Kind { kName, kInt, kFloat, kString, kOp, kNewline, kIndent, kDedent, kEnd };
  Kind kind;
  Pos pos;
  std::string text;  // names, operators, decoded strings, number spelling
  uint16_t op = 0;   // operators: OpCode(text), compared instead of the text
  int64_t int_value = 0;
  double float_value = 0;
};

// The tokens of `text`, which starts at `origin` in `source`; `single_expression`: one
// expression (no statements, no indentation), as an annotation inside a string is.
absl::StatusOr<std::vector<Token>> Lex(const Source& source, absl::string_view text, Pos origin,
                                       bool single_expression);

}  // namespace kiln::script

#endif  // KILN_COMPILER_SCRIPT_PYTHON_LEXER_H_
