// What an ONNX operator converter sees: the node's inputs as Relax expressions or as values
// known while importing, its attributes, and a way to emit Relax calls. Internal to the importer.
#ifndef KILN_COMPILER_FRONTEND_ONNX_CONVERT_CONTEXT_H_
#define KILN_COMPILER_FRONTEND_ONNX_CONVERT_CONTEXT_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/frontend/onnx/onnx_proto.h"
#include "compiler/ir/module.h"
#include "compiler/ir/printer.h"
#include "compiler/relax/block_builder.h"

namespace kiln::frontend::onnx_import {

namespace arith = ::kiln::arith;

using ir::DataType;
using ir::PrimExpr;
using ir::relax::Expr;

// A value on an ONNX edge.
struct Value {
  // The Relax tensor. Null for a value known only by its elements; Context::Tensor makes one.
  Expr expr;
  // A sequence (SequenceConstruct and its family): its tensors, their number known at import
  // time (positions may be known only at run time: convert_sequence).
  bool is_sequence = false;
  std::vector<Value> sequence;
  // The elements of a small integer tensor known at import time, row-major: constants, or
  // expressions of symbolic dimensions (Shape of a dynamic-batch tensor gives [n, 64]).
  std::optional<std::vector<PrimExpr>> elems;
  std::vector<int64_t> elems_shape;
  DataType elems_dtype = DataType::Int(64);
};

// Builds a Value from known elements.
Value KnownInts(std::vector<PrimExpr> elems, std::vector<int64_t> shape,
                DataType dtype = DataType::Int(64));

// `v` as a Relax tensor: its expression, or its known elements as a constant.
absl::StatusOr<Expr> Materialize(const Value& v);

// Integer tensors up to this many elements keep their values for import-time shape arithmetic;
// arithmetic whose result would be larger is left to run time.
inline constexpr int64_t kMaxKnownElems = 1024;

int64_t NumElements(const std::vector<int64_t>& shape);
// A Relax constant of `dtype` and `shape` holding `values`, converted to `dtype`.
Expr MakeNumericConstant(DataType dtype, std::vector<int64_t> shape,
                         const std::vector<double>& values);
// The elements of a Relax constant as numbers (integers exact up to 2^53).
std::vector<double> ConstantNumbers(const ir::relax::ConstantNode& c);

// An ONNX name as a Python identifier for the printed module: "onnx::MatMul_1" -> onnx_MatMul_1.
std::string Identifier(const std::string& name);

// Attribute values for Relax calls.
ir::ObjectRef IntAttr(int64_t v);
ir::ObjectRef FloatAttr(double v);
ir::ObjectRef StrAttr(const std::string& v);
ir::ObjectRef IntsAttr(const std::vector<int64_t>& v);

class Context {
 public:
  Context(const onnx::NodeProto& node, int opset, std::vector<const Value*> inputs,
          ir::relax::BlockBuilder* builder, int64_t max_constant_bytes);

  const onnx::NodeProto& node() const { return node_; }
  int opset() const { return opset_; }
  // The largest constant a converter may compute while importing (ImportOnnx).
  int64_t max_constant_bytes() const { return max_constant_bytes_; }

  // ---- Inputs ----
  size_t num_inputs() const { return inputs_.size(); }
  // False for an omitted optional input (an empty name) or one past the end.
  bool Has(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  // Input `i`; an empty Value (no expression, no elements) when it is absent.
  const Value& In(size_t i) const;
  // Input `i` as a Relax tensor (known elements become a constant).
  absl::StatusOr<Expr> Tensor(size_t i);
  // Input `i`'s elements when known at import time (possibly symbolic), else nullopt.
  std::optional<std::vector<PrimExpr>> Elems(size_t i) const;
  // Input `i`'s integer elements, which must be constants known at import time.
  absl::StatusOr<std::vector<int64_t>> ConstInts(size_t i) const;
  // Input `i`'s elements as numbers, which must be constants known at import time.
  absl::StatusOr<std::vector<double>> ConstFloats(size_t i) const;

  // ---- Attributes. A missing attribute gives the default; one of the wrong type is an error
  // (status() reports it after the converter returns). ----
  bool HasAttr(const std::string& name) const { return attrs_.count(name) != 0; }
  int64_t Int(const std::string& name, int64_t fallback);
  double Float(const std::string& name, double fallback);
  std::string Str(const std::string& name, const std::string& fallback);
  std::optional<std::vector<int64_t>> Ints(const std::string& name);
  std::optional<std::vector<double>> Floats(const std::string& name);
  const onnx::TensorProto* TensorAttr(const std::string& name);
  const absl::Status& status() const { return status_; }

  // ---- Building ----
  // Emits `op(args, attrs)` and returns the bound variable.
  absl::StatusOr<Expr> Call(const std::string& op, std::vector<Expr> args, ir::Attrs attrs = {});
  absl::StatusOr<Expr> Emit(const Expr& expr);
  // `R.match_cast(value, sinfo)`: new shape variables in `sinfo` become bound at run time.
  absl::StatusOr<Expr> MatchCast(const Expr& value, const ir::relax::StructInfo& sinfo);
  // The values of the 1-D int64 tensor `dims` ([n], n known), computed at run time, as fresh
  // shape variables. Each of `must_be_zero` (int64 tensors [1]) is checked to be 0 at run time
  // (the match_cast fails, naming the value), so that a shape that cannot hold stops the run
  // before a kernel sees it.
  absl::StatusOr<std::vector<PrimExpr>> DimsAtRunTime(const Expr& dims,
                                                      std::vector<Expr> must_be_zero = {});
  // The shape and dtype of an emitted tensor expression.
  absl::StatusOr<std::vector<PrimExpr>> Shape(const Expr& e) const;
  DataType DType(const Expr& e) const;
  // A scalar constant of `dtype`.
  Expr Scalar(DataType dtype, double value) const;
  // The int64 constant 0, 1, ..., n - 1 in `shape` (whose one non-1 dimension is n): the index
  // a one-hot mask compares against. ResourceExhausted past max_constant_bytes().
  absl::StatusOr<Expr> Iota(int64_t n, std::vector<int64_t> shape) const;
  arith::Analyzer* analyzer() { return builder_->analyzer(); }

  // An InvalidArgument error (the importer adds the node's name, type and opset).
  absl::Status Error(absl::string_view what) const;
  absl::Status Unsupported(absl::string_view what) const;

 private:
  void Fail(absl::string_view what);
  const onnx::AttributeProto* Attr(const std::string& name, int type);

  const onnx::NodeProto& node_;
  int64_t max_constant_bytes_;
  int opset_;
  std::vector<const Value*> inputs_;
  ir::relax::BlockBuilder* builder_;
  std::map<std::string, const onnx::AttributeProto*> attrs_;
  absl::Status status_;
};

// A converter returns one Value per node output.
using Outputs = std::vector<Value>;
using ConvertFn = absl::StatusOr<Outputs> (*)(Context& ctx);
using ConverterTable = std::map<std::string, ConvertFn>;

// The single output `e`.
Outputs One(Expr e);
absl::StatusOr<Outputs> OneOf(absl::StatusOr<Expr> e);
PrimExpr I64(int64_t v);
// Reshapes a per-channel vector [C] to [C, 1, ..., 1] so it broadcasts against [N, C, ...] of
// rank `rank`.
absl::StatusOr<Expr> PerChannel(Context& ctx, const Expr& v, size_t rank);
// `axis` in [-rank, rank) made non-negative.
absl::StatusOr<int64_t> Axis(const Context& ctx, int64_t axis, int64_t rank);
// The shape of input `i`: of its known elements or of its tensor.
absl::StatusOr<std::vector<PrimExpr>> InputShape(Context& ctx, size_t i);

void RegisterMathConverters(ConverterTable* table);    // elementwise, activations, logic
void RegisterReduceConverters(ConverterTable* table);  // reductions, softmax, TopK
void RegisterNNConverters(ConverterTable* table);      // conv, gemm, pools, resize, losses
void RegisterNormConverters(ConverterTable* table);    // batch, instance, layer norm, LRN
void RegisterTensorConverters(ConverterTable* table);  // creation, shapes, gathers, scatters
void RegisterLayoutConverters(ConverterTable* table);  // reshape, transpose, concat, pad, ...
void RegisterSelectConverters(ConverterTable* table);  // slice, gather, compress, nonzero
void RegisterEinsumConverter(ConverterTable* table);
void RegisterQuantizeConverters(ConverterTable* table);   // QuantizeLinear and its family
void RegisterRecurrentConverters(ConverterTable* table);  // RNN, GRU, LSTM
void RegisterGridSampleConverter(ConverterTable* table);
void RegisterDftConverter(ConverterTable* table);
void RegisterDetConverter(ConverterTable* table);
void RegisterSequenceConverters(ConverterTable* table);  // SequenceConstruct and its family
// The optimizers of ONNX's training domain, registered as "DOMAIN.OpType".
inline constexpr const char* kTrainingDomain = "ai.onnx.preview.training";
void RegisterTrainingConverters(ConverterTable* table);  // Adagrad, Momentum, Adam
// ONNX Runtime's contributed operators: its quantized ones, registered as "DOMAIN.OpType" with
// the quantization converters.
inline constexpr const char* kMicrosoftDomain = "com.microsoft";

// Split and SplitToSequence by sizes (input 1) computed at run time: part j gathers x along the
// axis at offset_j + k, the sizes bound as shape variables and checked to be non-negative and to
// add up to the axis's `extent`. `parts_expected` (-1: any) is how many sizes there must be.
absl::StatusOr<Outputs> SplitAtRunTime(Context& ctx, const Expr& x, const PrimExpr& extent,
                                       int64_t axis, int64_t parts_expected);

// ONNX's Conv of `x` and `weight` (1-, 2- or 3-D, the node's window attributes), plus `bias`
// per channel when given: Conv's converter and ConvInteger's.
absl::StatusOr<Expr> ConvOf(Context& ctx, Expr x, Expr weight, const Expr& bias);

// The strides, dilation and padding attributes of relax.nn.conv2d (and relax.qnn.conv2d_int8) for
// the node's 2-D window over data of `x_shape` with a `kernel` of taps.
absl::StatusOr<ir::Attrs> Conv2dWindowAttrs(Context& ctx, const std::vector<PrimExpr>& x_shape,
                                            std::vector<int64_t> kernel);

// Rounds a float tensor to the nearest integer, ties to even (ONNX's Round and quantization).
absl::StatusOr<Expr> RoundHalfEven(Context& ctx, const Expr& x);

// ONNX TensorProto.DataType -> Kiln dtype; an error for types Kiln does not compute with.
absl::StatusOr<DataType> DataTypeFromOnnx(int elem_type);
// A TensorProto (initializer or attribute) as a Relax constant Value; small integer tensors also
// carry their elements.
absl::StatusOr<Value> ValueFromTensorProto(const onnx::TensorProto& t);
// The same, taking the raw data out of `t` instead of copying it (an initializer of megabytes).
absl::StatusOr<Value> ValueFromTensorProto(onnx::TensorProto&& t);
// A tensor whose data is in an external file (ONNX's external data, for models over 2 GB): the
// data read from the file its entry names in `dir` (the model's directory; a name that is absolute
// or goes up is refused) into the tensor, once. Nothing for a tensor with its data inside.
absl::Status LoadExternalData(onnx::TensorProto* t, const std::string& dir);

// NumPy broadcasting of known shapes.
absl::StatusOr<std::vector<int64_t>> BroadcastKnown(const std::vector<int64_t>& a,
                                                    const std::vector<int64_t>& b);

}  // namespace kiln::frontend::onnx_import

#endif  // KILN_COMPILER_FRONTEND_ONNX_CONVERT_CONTEXT_H_
