#include "compiler/ir/data_type.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace kiln::ir {
namespace {

struct CodeName {
  const char* prefix;
  DataType::Code code;
};

// Longer prefixes first: "bfloat" must not be read as an unknown "b" + "float".
constexpr CodeName kCodeNames[] = {{"bfloat", DataType::Code::kBFloat},
                                   {"float", DataType::Code::kFloat},
                                   {"uint", DataType::Code::kUInt},
                                   {"int", DataType::Code::kInt}};

}  // namespace

absl::StatusOr<DataType> DataType::Parse(absl::string_view text) {
  if (text.empty() || text == "void") return Void();
  if (text == "handle") return Handle();
  absl::string_view rest = text;
  int lanes = 1;
  size_t x = rest.find('x');
  if (x != absl::string_view::npos) {
    if (!absl::SimpleAtoi(rest.substr(x + 1), &lanes) || lanes < 1 || lanes > 65535) {
      return absl::InvalidArgumentError(absl::StrCat("bad lane count in dtype '", text, "'"));
    }
    rest = rest.substr(0, x);
  }
  if (rest == "bool") return Bool(lanes);
  for (const CodeName& entry : kCodeNames) {
    if (!absl::ConsumePrefix(&rest, entry.prefix)) continue;
    int bits = 0;
    if (!absl::SimpleAtoi(rest, &bits)) break;
    bool valid = false;
    switch (entry.code) {
      case Code::kInt:
      case Code::kUInt:
        valid = bits == 1 || bits == 4 || bits == 8 || bits == 16 || bits == 32 || bits == 64;
        break;
      case Code::kFloat:
        valid = bits == 16 || bits == 32 || bits == 64;
        break;
      case Code::kBFloat:
        valid = bits == 16;
        break;
      case Code::kHandle:
        break;
    }
    if (!valid) break;
    return DataType(entry.code, bits, lanes);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown dtype '", text, "'"));
}

std::string DataType::ToString() const {
  if (is_void()) return "void";
  if (code_ == Code::kHandle) return "handle";
  std::string base;
  if (is_bool()) {
    base = "bool";
  } else {
    const char* prefix = "?";
    for (const CodeName& entry : kCodeNames) {
      if (entry.code == code_) prefix = entry.prefix;
    }
    base = absl::StrCat(prefix, bits_);
  }
  if (lanes_ != 1) absl::StrAppend(&base, "x", lanes_);
  return base;
}

}  // namespace kiln::ir
