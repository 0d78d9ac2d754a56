#include "compiler/frontend/onnx/convert_context.h"

#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/frontend/onnx/shape_math.h"
#include "runtime/support/status_macros.h"

namespace kiln::frontend::onnx_import {

using ir::relax::ConstantNode;
using ir::relax::TensorStructInfoNode;

namespace {

size_t ElementBytes(DataType t) { return t.is_bool() ? 1 : static_cast<size_t>(t.bits() / 8); }

// IEEE binary16 (1 sign, 5 exponent, 10 fraction bits) to and from double; rounding to nearest
// even, overflow to infinity, NaN kept.
double HalfToDouble(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const double fraction = h & 0x3ff;
  double v = exponent == 0    ? std::ldexp(fraction, -24)
             : exponent == 31 ? (fraction != 0 ? std::nan("") : INFINITY)
                              : std::ldexp(fraction + 1024, exponent - 25);
  return (h & 0x8000) != 0 ? -v : v;
}
uint16_t DoubleToHalf(double v) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return 0x7e00;
  v = std::fabs(v);
  if (v >= 65520.0) return sign | 0x7c00;  // rounds to infinity
  // The value in units of the smallest subnormal (2^-24), or of its exponent's ulp.
  int exponent = v == 0 ? -25 : std::ilogb(v);
  if (exponent < -14) {
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(v, 24)));  // subnormal or 0
  }
  double scaled = std::nearbyint(std::ldexp(v, 10 - exponent));  // 1024 .. 2048
  if (scaled == 2048) {
    scaled = 1024;
    ++exponent;
  }
  return sign | static_cast<uint16_t>(((exponent + 15) << 10) | (static_cast<int>(scaled) - 1024));
}

// Element `i` of little-endian storage of `dtype`, as a double (integers exactly up to 2^53).
double LoadNumber(const char* data, DataType dtype, int64_t i) {
  const char* p = data + i * ElementBytes(dtype);
  auto read = [p](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, p, sizeof(v));
    return static_cast<double>(v);
  };
  if (dtype.is_bool()) return *p != 0;
  if (dtype.is_float() && dtype.bits() == 16) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return HalfToDouble(h);
  }
  if (dtype.is_float()) return dtype.bits() == 64 ? read(double{}) : read(float{});
  if (dtype.is_uint()) {
    switch (dtype.bits()) {
      case 8:
        return read(uint8_t{});
      case 16:
        return read(uint16_t{});
      case 32:
        return read(uint32_t{});
      default:
        return read(uint64_t{});
    }
  }
  switch (dtype.bits()) {
    case 8:
      return read(int8_t{});
    case 16:
      return read(int16_t{});
    case 32:
      return read(int32_t{});
    default:
      return read(int64_t{});
  }
}

int64_t LoadInt(const char* data, DataType dtype, int64_t i) {
  if (dtype.is_int() && dtype.bits() == 64) {
    int64_t v;
    std::memcpy(&v, data + i * 8, 8);
    return v;
  }
  return static_cast<int64_t>(LoadNumber(data, dtype, i));
}

void StoreNumber(char* data, DataType dtype, int64_t i, double v) {
  char* p = data + i * ElementBytes(dtype);
  auto write = [p](auto value) { std::memcpy(p, &value, sizeof(value)); };
  if (dtype.is_bool()) {
    *p = v != 0;
  } else if (dtype.is_float() && dtype.bits() == 16) {
    write(DoubleToHalf(v));
  } else if (dtype.is_float()) {
    dtype.bits() == 64 ? write(v) : write(static_cast<float>(v));
  } else if (dtype.is_uint()) {
    switch (dtype.bits()) {
      case 8:
        write(static_cast<uint8_t>(v));
        break;
      case 16:
        write(static_cast<uint16_t>(v));
        break;
      case 32:
        write(static_cast<uint32_t>(v));
        break;
      default:
        write(static_cast<uint64_t>(v));
    }
  } else {
    switch (dtype.bits()) {
      case 8:
        write(static_cast<int8_t>(v));
        break;
      case 16:
        write(static_cast<int16_t>(v));
        break;
      case 32:
        write(static_cast<int32_t>(v));
        break;
      default:
        write(static_cast<int64_t>(v));
    }
  }
}

}  // namespace

int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Expr MakeNumericConstant(DataType dtype, std::vector<int64_t> shape,
                         const std::vector<double>& values) {
  std::string bytes(values.size() * ElementBytes(dtype), '\0');
  for (size_t k = 0; k < values.size(); ++k) StoreNumber(bytes.data(), dtype, k, values[k]);
  return ir::relax::MakeConstant(dtype, std::move(shape), std::move(bytes));
}

std::vector<double> ConstantNumbers(const ConstantNode& c) {
  std::vector<double> out;
  int64_t n = NumElements(c.shape);
  for (int64_t k = 0; k < n; ++k) out.push_back(LoadNumber(c.bytes->data(), c.dtype, k));
  return out;
}

Value KnownInts(std::vector<PrimExpr> elems, std::vector<int64_t> shape, DataType dtype) {
  Value v;
  v.elems = std::move(elems);
  v.elems_shape = std::move(shape);
  v.elems_dtype = dtype;
  return v;
}

absl::StatusOr<int64_t> Axis(const Context& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return ctx.Error(absl::StrCat("axis ", axis, " is out of range for rank ", rank));
  return axis < 0 ? axis + rank : axis;
}

absl::StatusOr<std::vector<PrimExpr>> InputShape(Context& ctx, size_t i) {
  if (!ctx.Has(i)) return ctx.Error(absl::StrCat("input ", i, " is required"));
  const Value& v = ctx.In(i);
  if (!v.expr) {
    std::vector<PrimExpr> dims;
    for (int64_t d : v.elems_shape) dims.push_back(I64(d));
    return dims;
  }
  return ctx.Shape(v.expr);
}

absl::StatusOr<Expr> PerChannel(Context& ctx, const Expr& v, size_t rank) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, ctx.Shape(v));
  if (shape.size() != 1) return ctx.Error("a per-channel input must be a vector");
  std::vector<PrimExpr> to = {shape[0]};
  for (size_t k = 2; k < rank; ++k) to.push_back(I64(1));
  return ctx.Call("relax.reshape", {v, ir::relax::MakeShape(to)});
}

Outputs One(Expr e) {
  Value v;
  v.expr = std::move(e);
  Outputs out;
  out.push_back(std::move(v));
  return out;
}

absl::StatusOr<Outputs> OneOf(absl::StatusOr<Expr> e) {
  if (!e.ok()) return e.status();
  return One(*std::move(e));
}

PrimExpr I64(int64_t v) { return ir::IntImm(DataType::Int(64), v); }

ir::ObjectRef IntAttr(int64_t v) { return ir::IntImm(DataType::Int(64), v); }
ir::ObjectRef FloatAttr(double v) { return ir::FloatImm(DataType::Float(64), v); }
ir::ObjectRef StrAttr(const std::string& v) { return ir::Make<ir::StringImmNode>(v); }
ir::ObjectRef IntsAttr(const std::vector<int64_t>& v) {
  std::vector<ir::ObjectRef> items;
  for (int64_t x : v) items.push_back(IntAttr(x));
  return ir::Make<ir::ArrayNode>(std::move(items));
}

absl::StatusOr<DataType> DataTypeFromOnnx(int elem_type) {
  switch (elem_type) {
    case onnx::TensorProto::FLOAT:
      return DataType::Float(32);
    case onnx::TensorProto::DOUBLE:
      return DataType::Float(64);
    case onnx::TensorProto::FLOAT16:
      return DataType::Float(16);
    case onnx::TensorProto::INT8:
      return DataType::Int(8);
    case onnx::TensorProto::UINT8:
      return DataType::UInt(8);
    case onnx::TensorProto::INT16:
      return DataType::Int(16);
    case onnx::TensorProto::UINT16:
      return DataType::UInt(16);
    case onnx::TensorProto::UINT32:
      return DataType::UInt(32);
    case onnx::TensorProto::UINT64:
      return DataType::UInt(64);
    case onnx::TensorProto::INT32:
      return DataType::Int(32);
    case onnx::TensorProto::INT64:
      return DataType::Int(64);
    case onnx::TensorProto::BOOL:
      return DataType::Bool();
    default:
      break;
  }
  std::string name =
      onnx::TensorProto::DataType_IsValid(elem_type)
          ? onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(elem_type))
          : absl::StrCat("#", elem_type);
  return absl::UnimplementedError(absl::StrCat("tensor element type ", name,
                                               " is not supported (float16, float32, float64, "
                                               "int8, int16, int32, int64, uint8, uint16, uint32, "
                                               "uint64, bool)"));
}

namespace {

absl::Status TensorError(const onnx::TensorProto& t, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("tensor '", t.name(), "': ", what));
}

// The tensor's element count. Dimensions are bounded so that the count cannot overflow (checked
// before each product: [2^40, 2^40] must not wrap to a small count, or to 0); the data must then
// be there.
absl::StatusOr<int64_t> ElementCount(const onnx::TensorProto& t) {
  constexpr int64_t kMaxElements = int64_t{1} << 40;
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || d > kMaxElements) return TensorError(t, absl::StrCat("bad dimension ", d));
    if (d != 0 && n > kMaxElements / d) return TensorError(t, "too many elements");
    n *= d;
  }
  return n;
}

// `raw`: t's raw data to move from, or null to copy it.
absl::StatusOr<Value> FromTensorProto(const onnx::TensorProto& t, std::string* raw) {
  auto error = [&](absl::string_view what) { return TensorError(t, what); };
  absl::StatusOr<DataType> dtype = DataTypeFromOnnx(t.data_type());
  if (!dtype.ok()) return error(dtype.status().message());
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    return error(
        "its data is in an external file: compile the model from its file, with the data "
        "files beside it (kiln compile model.onnx), or save it with its weights inside");
  }
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  absl::StatusOr<int64_t> count = ElementCount(t);
  if (!count.ok()) return count.status();
  const int64_t n = *count;
  size_t elem = ElementBytes(*dtype);
  std::string bytes;
  if (t.has_raw_data()) {
    if (t.raw_data().size() != n * elem) {
      return error(absl::StrCat("raw_data holds ", t.raw_data().size(), " bytes, ", n * elem,
                                " expected for ", n, " elements"));
    }
    bytes = raw != nullptr ? std::move(*raw) : t.raw_data();
  } else {
    // The typed field each type is stored in (onnx.proto): uint32 and uint64 in uint64_data,
    // the narrower integers, bool and float16's bit patterns in int32_data.
    bool in_uint64 = dtype->is_uint() && dtype->bits() >= 32;
    bool half_bits = dtype->is_float() && dtype->bits() == 16;
    int64_t given = half_bits ? t.int32_data_size()
                    : dtype->is_float()
                        ? (dtype->bits() == 64 ? t.double_data_size() : t.float_data_size())
                    : dtype->is_int() && dtype->bits() == 64 ? t.int64_data_size()
                    : in_uint64                              ? t.uint64_data_size()
                                                             : t.int32_data_size();
    if (given != n) return error(absl::StrCat("holds ", given, " values, ", n, " expected"));
    bytes.resize(n * elem);
    auto fill = [&](const auto& field) -> absl::Status {
      for (int64_t i = 0; i < n; ++i) StoreNumber(bytes.data(), *dtype, i, field.Get(i));
      return absl::OkStatus();
    };
    absl::Status s;
    if (half_bits) {
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h = static_cast<uint16_t>(t.int32_data(i));
        std::memcpy(&bytes[i * 2], &h, 2);
      }
    } else if (dtype->is_float()) {
      s = dtype->bits() == 64 ? fill(t.double_data()) : fill(t.float_data());
    } else if (dtype->is_int() && dtype->bits() == 64) {
      for (int64_t i = 0; i < n; ++i) {
        int64_t v = t.int64_data(i);
        std::memcpy(&bytes[i * 8], &v, 8);
      }
    } else if (in_uint64) {
      for (int64_t i = 0; i < n; ++i) {
        uint64_t v = t.uint64_data(i);
        std::memcpy(&bytes[i * elem], &v, elem);  // little-endian: the low bytes for uint32
      }
    } else {
      s = fill(t.int32_data());
    }
    if (!s.ok()) return s;
  }
  Value v;
  // uint64 values past INT64_MAX have no int64 element: such tensors stay run-time values.
  bool fits_int64 = !(dtype->is_uint() && dtype->bits() == 64);
  if (dtype->is_integral() && !dtype->is_bool() && fits_int64 && n <= kMaxKnownElems) {
    std::vector<PrimExpr> elems;
    for (int64_t i = 0; i < n; ++i)
      elems.push_back(ir::IntImm(DataType::Int(64), LoadInt(bytes.data(), *dtype, i)));
    v = KnownInts(std::move(elems), shape, *dtype);
  }
  v.expr = ir::relax::MakeConstant(*dtype, shape, std::move(bytes));
  return v;
}

}  // namespace

absl::Status LoadExternalData(onnx::TensorProto* t, const std::string& dir) {
  if (t->data_location() != onnx::TensorProto::EXTERNAL) return absl::OkStatus();
  auto error = [&](absl::string_view what) { return TensorError(*t, what); };
  std::string location;
  int64_t offset = 0, length = -1;
  for (const onnx::StringStringEntryProto& e : t->external_data()) {
    int64_t v = 0;
    if (e.key() == "location") {
      location = e.value();
    } else if ((e.key() == "offset" || e.key() == "length") &&
               (!absl::SimpleAtoi(e.value(), &v) || v < 0)) {
      return error(absl::StrCat("external data ", e.key(), " '", e.value().substr(0, 32),
                                "' is not a byte count"));
    } else if (e.key() == "offset") {
      offset = v;
    } else if (e.key() == "length") {
      length = v;
    }
  }
  // A file beside the model, never one elsewhere: the path is relative and does not go up.
  const std::filesystem::path relative(location);
  bool escapes = location.empty() || relative.is_absolute();
  for (const std::filesystem::path& part : relative) escapes = escapes || part == "..";
  if (escapes) {
    return error(absl::StrCat("external data location '", location.substr(0, 256),
                              "' is not a file name relative to the model's directory"));
  }
  absl::StatusOr<DataType> dtype = DataTypeFromOnnx(t->data_type());
  if (!dtype.ok()) return error(dtype.status().message());
  absl::StatusOr<int64_t> count = ElementCount(*t);
  if (!count.ok()) return count.status();
  const int64_t expected = *count * static_cast<int64_t>(ElementBytes(*dtype));
  if (length >= 0 && length != expected) {
    return error(absl::StrCat("external data of ", length, " bytes, ", expected, " expected"));
  }
  const std::string path = (std::filesystem::path(dir) / relative).string();
  std::error_code size_error;
  const uintmax_t file_bytes = std::filesystem::file_size(path, size_error);
  std::ifstream in(path, std::ios::binary);
  if (size_error || !in) {
    return error(absl::StrCat("cannot open its external data file '", location, "'"));
  }
  // Checked against the file before anything is allocated: a few bytes of model may name
  // terabytes.
  if (file_bytes < static_cast<uintmax_t>(offset) ||
      file_bytes - static_cast<uintmax_t>(offset) < static_cast<uintmax_t>(expected)) {
    return error(absl::StrCat("its external data file '", location, "' holds fewer than ", expected,
                              " bytes at offset ", offset));
  }
  std::string bytes(static_cast<size_t>(expected), '\0');
  in.seekg(offset);
  in.read(bytes.data(), expected);
  if (!in || in.gcount() != expected) {
    return error(absl::StrCat("cannot read its external data file '", location, "'"));
  }
  t->clear_external_data();
  t->set_data_location(onnx::TensorProto::DEFAULT);
  *t->mutable_raw_data() = std::move(bytes);
  return absl::OkStatus();
}

absl::StatusOr<Value> ValueFromTensorProto(const onnx::TensorProto& t) {
  return FromTensorProto(t, nullptr);
}

absl::StatusOr<Value> ValueFromTensorProto(onnx::TensorProto&& t) {
  return FromTensorProto(t, t.has_raw_data() ? t.mutable_raw_data() : nullptr);
}

absl::StatusOr<std::vector<int64_t>> BroadcastKnown(const std::vector<int64_t>& a,
                                                    const std::vector<int64_t>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t x = i + a.size() >= n ? a[i + a.size() - n] : 1;
    int64_t y = i + b.size() >= n ? b[i + b.size() - n] : 1;
    if (x != y && x != 1 && y != 1) {
      return absl::InvalidArgumentError(absl::StrCat("shapes [", absl::StrJoin(a, ", "), "] and [",
                                                     absl::StrJoin(b, ", "), "] do not broadcast"));
    }
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// ---- Context ----

Context::Context(const onnx::NodeProto& node, int opset, std::vector<const Value*> inputs,
                 ir::relax::BlockBuilder* builder, int64_t max_constant_bytes)
    : node_(node),
      max_constant_bytes_(max_constant_bytes),
      opset_(opset),
      inputs_(std::move(inputs)),
      builder_(builder) {
  for (const onnx::AttributeProto& a : node.attribute()) attrs_[a.name()] = &a;
}

absl::StatusOr<Expr> Materialize(const Value& v) {
  if (v.is_sequence) {
    return absl::UnimplementedError(
        "a sequence where a tensor is expected (sequences stay inside "
        "the graph: graph inputs and outputs are tensors)");
  }
  if (v.expr) return v.expr;
  if (!v.elems) return absl::InvalidArgumentError("a value is missing");
  const std::vector<PrimExpr>& elems = *v.elems;
  bool constant = true;
  for (const PrimExpr& e : elems) constant = constant && ir::AsConstInt(e) != nullptr;
  if (constant) {
    std::vector<double> values;
    for (const PrimExpr& e : elems) values.push_back(static_cast<double>(*ir::AsConstInt(e)));
    return MakeNumericConstant(v.elems_dtype, v.elems_shape, values);
  }
  // Without a context to compute them at run time (Context::Tensor does), integers that depend
  // on a symbolic dimension cannot become a tensor.
  std::string dims;
  for (const PrimExpr& e : elems) dims += (dims.empty() ? "" : ", ") + ir::DebugPrint(e);
  return absl::UnimplementedError(absl::StrCat(
      "the integer tensor [", dims,
      "] depends on a symbolic dimension and is used as data, which is not supported"));
}

const Value& Context::In(size_t i) const {
  static const Value* const kAbsent = new Value();
  return Has(i) ? *inputs_[i] : *kAbsent;
}

absl::StatusOr<Expr> Context::Tensor(size_t i) {
  if (!Has(i)) return Error(absl::StrCat("input ", i, " is required"));
  const Value& v = In(i);
  bool symbolic = false;
  if (!v.expr && !v.is_sequence && v.elems) {
    for (const PrimExpr& e : *v.elems) symbolic = symbolic || ir::AsConstInt(e) == nullptr;
  }
  if (!symbolic) return Materialize(v);
  // Integers that depend on a symbolic dimension, used as data (a decoder's sequence length in
  // its positions and mask): computed at run time from the shape they come from.
  ShapeMath m{*this};
  KILN_ASSIGN_OR_RETURN(Expr t, m.Tensor(*v.elems));
  if (v.elems_shape != std::vector<int64_t>{static_cast<int64_t>(v.elems->size())}) {
    std::vector<PrimExpr> shape;
    for (int64_t d : v.elems_shape) shape.push_back(I64(d));
    KILN_ASSIGN_OR_RETURN(t, Call("relax.reshape", {t, ir::relax::MakeShape(shape)}));
  }
  if (v.elems_dtype == DataType::Int(64)) return t;
  return Call("relax.astype", {t}, {{"dtype", StrAttr(v.elems_dtype.ToString())}});
}

std::optional<std::vector<PrimExpr>> Context::Elems(size_t i) const {
  if (!Has(i)) return std::nullopt;
  return In(i).elems;
}

absl::StatusOr<std::vector<int64_t>> Context::ConstInts(size_t i) const {
  if (!Has(i)) return Error(absl::StrCat("input ", i, " is required"));
  const Value& v = In(i);
  std::vector<int64_t> out;
  if (v.elems) {
    for (const PrimExpr& e : *v.elems) {
      const int64_t* c = ir::AsConstInt(e);
      if (c == nullptr) {
        return Unsupported(absl::StrCat("input ", i, " ('", node_.input(i),
                                        "') must be known at import time, but depends on the "
                                        "symbolic value ",
                                        ir::DebugPrint(e)));
      }
      out.push_back(*c);
    }
    return out;
  }
  absl::StatusOr<std::vector<double>> numbers = ConstFloats(i);
  if (!numbers.ok()) return numbers.status();
  for (double d : *numbers) out.push_back(static_cast<int64_t>(d));
  return out;
}

absl::StatusOr<std::vector<double>> Context::ConstFloats(size_t i) const {
  if (!Has(i)) return Error(absl::StrCat("input ", i, " is required"));
  const Value& v = In(i);
  std::vector<double> out;
  if (v.elems) {
    absl::StatusOr<std::vector<int64_t>> ints = ConstInts(i);
    if (!ints.ok()) return ints.status();
    for (int64_t x : *ints) out.push_back(static_cast<double>(x));
    return out;
  }
  const auto* c = v.expr.as<ConstantNode>();
  if (c == nullptr) {
    return Unsupported(absl::StrCat("input ", i, " ('", node_.input(i),
                                    "') must be a constant (an initializer or a Constant node)"));
  }
  return ConstantNumbers(*c);
}

const onnx::AttributeProto* Context::Attr(const std::string& name, int type) {
  auto it = attrs_.find(name);
  if (it == attrs_.end()) return nullptr;
  if (it->second->type() != type) {
    Fail(absl::StrCat("attribute '", name, "' has type ",
                      onnx::AttributeProto::AttributeType_Name(it->second->type()), ", expected ",
                      onnx::AttributeProto::AttributeType_Name(
                          static_cast<onnx::AttributeProto::AttributeType>(type))));
    return nullptr;
  }
  return it->second;
}

int64_t Context::Int(const std::string& name, int64_t fallback) {
  const onnx::AttributeProto* a = Attr(name, onnx::AttributeProto::INT);
  return a ? a->i() : fallback;
}

double Context::Float(const std::string& name, double fallback) {
  const onnx::AttributeProto* a = Attr(name, onnx::AttributeProto::FLOAT);
  return a ? a->f() : fallback;
}

std::string Context::Str(const std::string& name, const std::string& fallback) {
  const onnx::AttributeProto* a = Attr(name, onnx::AttributeProto::STRING);
  return a ? a->s() : fallback;
}

std::optional<std::vector<int64_t>> Context::Ints(const std::string& name) {
  const onnx::AttributeProto* a = Attr(name, onnx::AttributeProto::INTS);
  if (a == nullptr) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

std::optional<std::vector<double>> Context::Floats(const std::string& name) {
  const onnx::AttributeProto* a = Attr(name, onnx::AttributeProto::FLOATS);
  if (a == nullptr) return std::nullopt;
  return std::vector<double>(a->floats().begin(), a->floats().end());
}

const onnx::TensorProto* Context::TensorAttr(const std::string& name) {
  const onnx::AttributeProto* a = Attr(name, onnx::AttributeProto::TENSOR);
  return a ? &a->t() : nullptr;
}

void Context::Fail(absl::string_view what) {
  if (status_.ok()) status_ = absl::InvalidArgumentError(what);
}

absl::StatusOr<Expr> Context::Call(const std::string& op, std::vector<Expr> args, ir::Attrs attrs) {
  return Emit(ir::relax::MakeCall(ir::relax::GetOp(op), std::move(args), {}, std::move(attrs)));
}

absl::StatusOr<Expr> Context::Emit(const Expr& expr) {
  absl::StatusOr<ir::relax::Var> var = builder_->Emit(expr);
  if (!var.ok()) return var.status();
  return Expr(*var);
}

std::string Identifier(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "v" + out;
  return out;
}

absl::StatusOr<Expr> Context::MatchCast(const Expr& value, const ir::relax::StructInfo& sinfo) {
  absl::StatusOr<ir::relax::Var> var = builder_->EmitMatchCast(value, sinfo);
  if (!var.ok()) return var.status();
  return Expr(*var);
}

absl::StatusOr<std::vector<PrimExpr>> Context::DimsAtRunTime(const Expr& dims,
                                                             std::vector<Expr> must_be_zero) {
  KILN_ASSIGN_OR_RETURN(std::vector<PrimExpr> shape, Shape(dims));
  const int64_t* n = shape.size() == 1 ? ir::AsConstInt(shape[0]) : nullptr;
  if (n == nullptr) return Unsupported("a shape input of unknown length");
  // One shape of the dimensions followed by the checks: [d0, ..., dn-1, c0, c1, ...], matched
  // against [v0, ..., vn-1, 0, 0, ...].
  std::vector<PrimExpr> vars, pattern;
  const std::string base = node_.output_size() > 0 ? node_.output(0) : node_.op_type();
  for (int64_t k = 0; k < *n; ++k) {
    vars.push_back(ir::MakeSizeVar(absl::StrCat(Identifier(base), "_d", k)));
    pattern.push_back(vars.back());
  }
  pattern.resize(pattern.size() + must_be_zero.size(), ir::IntImm(DataType::Int(64), 0));
  Expr all = dims;
  if (!must_be_zero.empty()) {
    must_be_zero.insert(must_be_zero.begin(), dims);
    KILN_ASSIGN_OR_RETURN(
        all, Call("relax.concat", {ir::relax::MakeTuple(must_be_zero)}, {{"axis", IntAttr(0)}}));
  }
  KILN_ASSIGN_OR_RETURN(Expr values, Call("relax.tensor_to_shape", {all}));
  KILN_RETURN_IF_ERROR(MatchCast(values, ir::relax::ShapeSInfo(pattern)).status());
  return vars;
}

absl::StatusOr<std::vector<PrimExpr>> Context::Shape(const Expr& e) const {
  if (!e) return Error("a required input is missing");
  if (const auto* c = e.as<ConstantNode>()) {
    std::vector<PrimExpr> dims;
    for (int64_t d : c->shape) dims.push_back(ir::IntImm(DataType::Int(64), d));
    return dims;
  }
  const auto* t = e->struct_info().as<TensorStructInfoNode>();
  const std::vector<PrimExpr>* dims = t != nullptr ? t->dims() : nullptr;
  if (dims == nullptr) return Error("an input's shape is not known");
  return *dims;
}

DataType Context::DType(const Expr& e) const {
  if (!e) return DataType::Void();
  if (const auto* c = e.as<ConstantNode>()) return c->dtype;
  const auto* t = e->struct_info().as<TensorStructInfoNode>();
  return t != nullptr ? t->dtype : DataType::Void();
}

absl::StatusOr<Expr> Context::Iota(int64_t n, std::vector<int64_t> shape) const {
  if (n < 0 || n > max_constant_bytes_ / 8) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "an index constant of ", n, " elements is larger than the ", max_constant_bytes_ >> 20,
        " MiB a constant computed while importing may be (--max-constant-mb)"));
  }
  std::vector<double> ids(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) ids[static_cast<size_t>(k)] = static_cast<double>(k);
  return MakeNumericConstant(DataType::Int(64), std::move(shape), ids);
}

Expr Context::Scalar(DataType dtype, double value) const {
  return MakeNumericConstant(dtype, {}, {value});
}

absl::Status Context::Error(absl::string_view what) const {
  return absl::InvalidArgumentError(what);
}

absl::Status Context::Unsupported(absl::string_view what) const {
  return absl::UnimplementedError(what);
}

}  // namespace kiln::frontend::onnx_import
