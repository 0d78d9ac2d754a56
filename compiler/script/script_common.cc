#include "compiler/script/script_common.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace kiln::script {
namespace {

using ir::DataType;

float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  int exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      exp = 1;
      while ((mant & 0x400) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      bits = sign | static_cast<uint32_t>(exp + 112) << 23 | mant << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000 | mant << 13;
  } else {
    bits = sign | static_cast<uint32_t>(exp + 112) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToHalf(float f) {  // round to nearest even
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  int exp = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
  uint32_t mant = bits & 0x7fffff;
  if (((bits >> 23) & 0xff) == 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  if (exp >= 31) return sign | 0x7c00;
  if (exp <= 0) {
    if (exp < -10) return sign;
    mant |= 0x800000;
    int shift = 14 - exp;
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return sign | static_cast<uint16_t>(half);
  }
  uint32_t half = static_cast<uint32_t>(exp) << 10 | mant >> 13;
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;
  return sign | static_cast<uint16_t>(half);
}

std::string Element(DataType dtype, const char* p) {
  int bits = dtype.bits();
  if (dtype.is_bool()) return *p ? "True" : "False";
  if (dtype.is_int() || dtype.is_uint()) {
    uint64_t raw = 0;
    std::memcpy(&raw, p, bits / 8);
    if (dtype.is_int() && bits < 64 && (raw >> (bits - 1)) & 1) raw |= ~uint64_t{0} << bits;
    return dtype.is_int() ? absl::StrCat(static_cast<int64_t>(raw)) : absl::StrCat(raw);
  }
  double v;
  if (dtype.code() == DataType::Code::kBFloat) {
    uint32_t b = static_cast<uint32_t>(static_cast<uint8_t>(p[0])) << 16 |
                 static_cast<uint32_t>(static_cast<uint8_t>(p[1])) << 24;
    float f;
    std::memcpy(&f, &b, 4);
    v = f;
  } else if (bits == 16) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    v = HalfToFloat(h);
  } else if (bits == 32) {
    float f;
    std::memcpy(&f, p, 4);
    v = f;
  } else {
    std::memcpy(&v, p, 8);
  }
  if (std::isnan(v)) return "\"nan\"";
  if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
  return FloatRepr(v);
}

void Nested(DataType dtype, const std::vector<int64_t>& shape, size_t dim, const char** p,
            std::string* out) {
  if (dim == shape.size()) {
    *out += Element(dtype, *p);
    *p += dtype.bytes();
    return;
  }
  *out += "[";
  for (int64_t i = 0; i < shape[dim]; ++i) {
    if (i > 0) *out += ", ";
    Nested(dtype, shape, dim + 1, p, out);
  }
  *out += "]";
}

}  // namespace

std::string FloatRepr(double v) {
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

bool HasLiteralForm(DataType dtype) {
  if (dtype.lanes() != 1) return false;
  if (dtype.is_bool()) return true;
  int bits = dtype.bits();
  if (dtype.is_int() || dtype.is_uint()) return bits == 8 || bits == 16 || bits == 32 || bits == 64;
  if (dtype.code() == DataType::Code::kBFloat) return bits == 16;
  if (dtype.code() == DataType::Code::kFloat) return bits == 16 || bits == 32 || bits == 64;
  return false;
}

std::string FormatConstantData(DataType dtype, const std::vector<int64_t>& shape,
                               const std::string& bytes, ConstantFormat* format) {
  int64_t count = 1;
  bool zero = false;
  for (int64_t d : shape) {
    count *= d;
    zero |= d == 0;
  }
  if (!HasLiteralForm(dtype) || static_cast<int64_t>(bytes.size()) != count * dtype.bytes()) {
    format->needs_shape = true;
    static const char* kHex = "0123456789abcdef";
    std::string hex = "\"";
    for (unsigned char c : bytes) {
      hex += kHex[c >> 4];
      hex += kHex[c & 15];
    }
    return hex + "\"";
  }
  format->needs_shape = zero;
  std::string out;
  const char* p = bytes.data();
  Nested(dtype, shape, 0, &p, &out);
  return out;
}

bool AppendIntElement(DataType dtype, int64_t value, std::string* bytes) {
  int bits = dtype.bits();
  if (dtype.is_bool()) {
    if (value != 0 && value != 1) return false;
    bytes->push_back(static_cast<char>(value));
    return true;
  }
  if (!dtype.is_int() && !dtype.is_uint())
    return AppendFloatElement(dtype, static_cast<double>(value), bytes);
  if (bits < 64) {
    int64_t lo = dtype.is_int() ? -(int64_t{1} << (bits - 1)) : 0;
    int64_t hi = dtype.is_int() ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
    if (value < lo || value > hi) return false;
  } else if (dtype.is_uint() && value < 0) {
    return false;
  }
  uint64_t raw = static_cast<uint64_t>(value);
  for (int i = 0; i < bits / 8; ++i) bytes->push_back(static_cast<char>((raw >> (8 * i)) & 0xff));
  return true;
}

bool AppendFloatElement(DataType dtype, double value, std::string* bytes) {
  if (dtype.is_int() || dtype.is_uint()) return false;
  int bits = dtype.bits();
  char buf[8];
  if (dtype.code() == DataType::Code::kBFloat) {
    float f = static_cast<float>(value);
    uint32_t b;
    std::memcpy(&b, &f, 4);
    uint32_t rounded = (b + 0x7fff + ((b >> 16) & 1)) >> 16;
    if (std::isnan(f)) rounded = (b >> 16) | 0x40;
    bytes->push_back(static_cast<char>(rounded & 0xff));
    bytes->push_back(static_cast<char>((rounded >> 8) & 0xff));
    return true;
  }
  if (bits == 16) {
    uint16_t h = FloatToHalf(static_cast<float>(value));
    std::memcpy(buf, &h, 2);
  } else if (bits == 32) {
    float f = static_cast<float>(value);
    std::memcpy(buf, &f, 4);
  } else if (bits == 64) {
    std::memcpy(buf, &value, 8);
  } else {
    return false;
  }
  bytes->append(buf, bits / 8);
  return true;
}

}  // namespace kiln::script
