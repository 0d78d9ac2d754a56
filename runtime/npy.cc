#include "runtime/npy.h"

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kiln::runtime {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

struct NpyType {
  const char* descr;  // without the byte-order character
  DLDataType dtype;
};

constexpr NpyType kTypes[] = {
    {"f4", {kDLFloat, 32, 1}}, {"f8", {kDLFloat, 64, 1}}, {"f2", {kDLFloat, 16, 1}},
    {"i1", {kDLInt, 8, 1}},    {"i2", {kDLInt, 16, 1}},   {"i4", {kDLInt, 32, 1}},
    {"i8", {kDLInt, 64, 1}},   {"u1", {kDLUInt, 8, 1}},   {"u2", {kDLUInt, 16, 1}},
    {"u4", {kDLUInt, 32, 1}},  {"u8", {kDLUInt, 64, 1}},  {"b1", {kDLUInt, 1, 1}},
};

// The value of 'key' in the header dict, e.g. "'<f4'" or "(4, 64)" or "False".
absl::StatusOr<absl::string_view> DictValue(absl::string_view header, absl::string_view key,
                                            absl::string_view what) {
  std::string quoted = absl::StrCat("'", key, "'");
  size_t at = header.find(quoted);
  if (at == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": the .npy header has no '", key, "'"));
  }
  absl::string_view rest = header.substr(at + quoted.size());
  rest = absl::StripLeadingAsciiWhitespace(rest);
  if (!absl::ConsumePrefix(&rest, ":")) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": malformed .npy header"));
  }
  rest = absl::StripLeadingAsciiWhitespace(rest);
  size_t end = rest.front() == '(' ? rest.find(')') + 1 : rest.find_first_of(",}");
  if (end == absl::string_view::npos || end == 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": malformed .npy header"));
  }
  return absl::StripTrailingAsciiWhitespace(rest.substr(0, end));
}

}  // namespace

absl::StatusOr<Tensor> ReadNpy(absl::string_view bytes, absl::string_view what) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, kMagicSize) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": not a .npy file"));
  }
  uint8_t major = static_cast<uint8_t>(bytes[6]);
  size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = static_cast<uint8_t>(bytes[8]) | static_cast<uint8_t>(bytes[9]) << 8;
    header_start = 10;
  } else if ((major == 2 || major == 3) && bytes.size() >= 12) {
    for (int i = 0; i < 4; ++i) header_len |= size_t{static_cast<uint8_t>(bytes[8 + i])} << (8 * i);
    header_start = 12;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": .npy version ", major, " is not supported"));
  }
  if (header_len > bytes.size() - header_start) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": the .npy header is truncated"));
  }
  absl::string_view header = bytes.substr(header_start, header_len);
  absl::StatusOr<absl::string_view> descr = DictValue(header, "descr", what);
  absl::StatusOr<absl::string_view> fortran = DictValue(header, "fortran_order", what);
  absl::StatusOr<absl::string_view> shape_text = DictValue(header, "shape", what);
  if (!descr.ok()) return descr.status();
  if (!fortran.ok()) return fortran.status();
  if (!shape_text.ok()) return shape_text.status();
  if (*fortran != "False") {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": Fortran-order arrays are not supported"));
  }
  absl::string_view d = absl::StripPrefix(absl::StripSuffix(*descr, "'"), "'");
  if (d.size() != 3 || (d[0] != '<' && d[0] != '|' && d[0] != '=')) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": dtype ", *descr, " is not a little-endian number"));
  }
  const NpyType* type = nullptr;
  for (const NpyType& t : kTypes) {
    if (d.substr(1) == t.descr) type = &t;
  }
  if (type == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": dtype ", *descr, " is not supported"));
  }
  std::vector<int64_t> shape;
  absl::string_view dims = absl::StripSuffix(absl::StripPrefix(*shape_text, "("), ")");
  for (absl::string_view part : absl::StrSplit(dims, ',', absl::SkipWhitespace())) {
    int64_t dim = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &dim) || dim < 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": bad shape ", *shape_text));
    }
    shape.push_back(dim);
  }
  absl::StatusOr<Tensor> t = Tensor::Empty(shape, type->dtype);
  if (!t.ok()) return t.status();
  size_t data_start = header_start + header_len;
  if (bytes.size() - data_start != t->NumBytes()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", bytes.size() - data_start,
                                                   " bytes of data for shape ", *shape_text, " of ",
                                                   *descr, ", which needs ", t->NumBytes()));
  }
  std::memcpy(t->data(), bytes.data() + data_start, t->NumBytes());
  return *t;
}

absl::StatusOr<std::string> WriteNpy(const Tensor& t) {
  const NpyType* type = nullptr;
  for (const NpyType& entry : kTypes) {
    DLDataType d = entry.dtype;
    if (d.code == t.dtype().code && d.bits == t.dtype().bits && d.lanes == t.dtype().lanes)
      type = &entry;
  }
  if (type == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("a ", DataTypeToString(t.dtype()), " tensor cannot be written as .npy"));
  }
  std::string shape = absl::StrJoin(t.shape(), ", ");
  if (t.ndim() == 1) shape += ",";
  std::string header =
      absl::StrCat("{'descr': '", type->descr[0] == 'b' || type->descr[1] == '1' ? "|" : "<",
                   type->descr, "', 'fortran_order': False, 'shape': (", shape, "), }");
  // Pad with spaces so that the data starts on a 64-byte boundary, ending in a newline.
  size_t total = kMagicSize + 4 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::string out(kMagic, kMagicSize);
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  out += header;
  out.append(static_cast<const char*>(t.data()), t.NumBytes());
  return out;
}

}  // namespace kiln::runtime
