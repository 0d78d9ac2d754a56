// DataType: the scalar (or vector) type of TIR values and Relax tensors, as in TVM: a type code,
// a bit width and a lane count. Relax uses lanes == 1, and Void() for "unknown dtype".
#ifndef KILN_COMPILER_IR_DATA_TYPE_H_
#define KILN_COMPILER_IR_DATA_TYPE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln::ir {

class DataType {
 public:
  // Codes match DLPack's DLDataTypeCode where DLPack has them.
  enum class Code : uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kHandle = 3, kBFloat = 4 };

  constexpr DataType() = default;  // void
  constexpr DataType(Code code, int bits, int lanes)
      : code_(code), bits_(static_cast<uint8_t>(bits)), lanes_(static_cast<uint16_t>(lanes)) {}

  static constexpr DataType Int(int bits, int lanes = 1) { return {Code::kInt, bits, lanes}; }
  static constexpr DataType UInt(int bits, int lanes = 1) { return {Code::kUInt, bits, lanes}; }
  static constexpr DataType Float(int bits, int lanes = 1) { return {Code::kFloat, bits, lanes}; }
  static constexpr DataType BFloat16(int lanes = 1) { return {Code::kBFloat, 16, lanes}; }
  static constexpr DataType Bool(int lanes = 1) { return UInt(1, lanes); }
  static constexpr DataType Handle() { return {Code::kHandle, 64, 1}; }
  // The Relax "unknown dtype" and TIR's "no value": handle with 0 bits and 0 lanes.
  static constexpr DataType Void() { return {Code::kHandle, 0, 0}; }

  // Parses "float32", "int64", "bool", "bfloat16", "float32x4", "handle", "void", "".
  // "" parses as void (TVMScript's R.Tensor(shape) without dtype).
  static absl::StatusOr<DataType> Parse(absl::string_view text);

  Code code() const { return code_; }
  int bits() const { return bits_; }
  int lanes() const { return lanes_; }
  int bytes() const { return (bits_ + 7) / 8; }

  bool is_int() const { return code_ == Code::kInt; }
  bool is_uint() const { return code_ == Code::kUInt; }
  bool is_float() const { return code_ == Code::kFloat || code_ == Code::kBFloat; }
  bool is_bool() const { return code_ == Code::kUInt && bits_ == 1; }
  bool is_handle() const { return code_ == Code::kHandle && !is_void(); }
  bool is_void() const { return code_ == Code::kHandle && bits_ == 0 && lanes_ == 0; }
  bool is_scalar() const { return lanes_ == 1; }
  bool is_vector() const { return lanes_ > 1; }
  // Integer-valued (int, uint, bool): the types index arithmetic works on.
  bool is_integral() const { return code_ == Code::kInt || code_ == Code::kUInt; }

  DataType with_lanes(int lanes) const { return {code_, bits_, lanes}; }
  DataType element_of() const { return with_lanes(1); }

  std::string ToString() const;

  friend bool operator==(DataType a, DataType b) {
    return a.code_ == b.code_ && a.bits_ == b.bits_ && a.lanes_ == b.lanes_;
  }
  friend bool operator!=(DataType a, DataType b) { return !(a == b); }

 private:
  Code code_ = Code::kHandle;
  uint8_t bits_ = 0;
  uint16_t lanes_ = 0;
};

}  // namespace kiln::ir

#endif  // KILN_COMPILER_IR_DATA_TYPE_H_
