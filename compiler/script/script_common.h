// What the TVMScript printer and parser must agree on: the dtype a bare literal takes from its
// context, and the text of constant tensors.
#ifndef KILN_COMPILER_SCRIPT_SCRIPT_COMMON_H_
#define KILN_COMPILER_SCRIPT_SCRIPT_COMMON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/ir/data_type.h"

namespace kiln::script {

// The dtype of a bare integer / float literal given the dtype its context suggests (an operand
// sibling, a Relax shape); an unsuitable or void hint falls back to int32 / float32.
inline ir::DataType IntHint(ir::DataType hint) {
  return hint.is_integral() && !hint.is_bool() && hint.lanes() == 1 ? hint : ir::DataType::Int(32);
}
inline ir::DataType FloatHint(ir::DataType hint) {
  return hint.is_float() && hint.lanes() == 1 ? hint : ir::DataType::Float(32);
}

// The shortest decimal text that reads back as exactly `v`, always with a '.' or an exponent.
std::string FloatRepr(double v);

// Constant data as a Python literal: a scalar or nested lists ("[[1.0, 2.0], [3.0, 4.0]]"), or,
// for dtypes without a literal form, a hex string of the raw bytes. `needs_shape` is set when the
// text alone does not determine the shape (a zero-sized dimension, raw bytes).
struct ConstantFormat {
  bool needs_shape = false;
};
std::string FormatConstantData(ir::DataType dtype, const std::vector<int64_t>& shape,
                               const std::string& bytes, ConstantFormat* format);

// The element encodings of FormatConstantData, for the parser.
bool HasLiteralForm(ir::DataType dtype);
// Appends one element, little-endian, to `bytes`; false if the value does not fit the dtype.
bool AppendIntElement(ir::DataType dtype, int64_t value, std::string* bytes);
bool AppendFloatElement(ir::DataType dtype, double value, std::string* bytes);

}  // namespace kiln::script

#endif  // KILN_COMPILER_SCRIPT_SCRIPT_COMMON_H_
