// The values the runtime's functions take and return: one calling convention for compiled
// kernels, builtins and user functions.
#ifndef KILN_RUNTIME_VALUE_H_
#define KILN_RUNTIME_VALUE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/tensor.h"

namespace kiln::runtime {

class Value;
struct Closure;
using Tuple = std::vector<Value>;

// None, an integer, a float, a tensor, a string, a shape, a tuple or a closure.
class Value {
 public:
  Value() = default;
  Value(int64_t v) : v_(v) {}                                  // NOLINT: values convert implicitly
  Value(double v) : v_(v) {}                                   // NOLINT
  Value(Tensor v) : v_(std::move(v)) {}                        // NOLINT
  Value(std::string v) : v_(std::move(v)) {}                   // NOLINT
  Value(std::vector<int64_t> shape) : v_(std::move(shape)) {}  // NOLINT
  Value(std::shared_ptr<const Tuple> t) : v_(std::move(t)) {}  // NOLINT
  Value(std::shared_ptr<const Closure> c) : v_(std::move(c)) {}  // NOLINT
  static Value MakeTuple(Tuple fields) {
    return Value(std::make_shared<const Tuple>(std::move(fields)));
  }

  bool is_none() const { return std::holds_alternative<std::monostate>(v_); }
  const int64_t* as_int() const { return std::get_if<int64_t>(&v_); }
  const double* as_float() const { return std::get_if<double>(&v_); }
  const Tensor* as_tensor() const { return std::get_if<Tensor>(&v_); }
  const std::string* as_string() const { return std::get_if<std::string>(&v_); }
  const std::vector<int64_t>* as_shape() const { return std::get_if<std::vector<int64_t>>(&v_); }
  const Tuple* as_tuple() const {
    const auto* t = std::get_if<std::shared_ptr<const Tuple>>(&v_);
    return t ? t->get() : nullptr;
  }
  const Closure* as_closure() const {
    const auto* c = std::get_if<std::shared_ptr<const Closure>>(&v_);
    return c ? c->get() : nullptr;
  }
  // "int", "float", "tensor", "string", "shape", "tuple", "closure", "none": for messages.
  const char* kind_name() const;

 private:
  std::variant<std::monostate, int64_t, double, Tensor, std::string, std::vector<int64_t>,
               std::shared_ptr<const Tuple>, std::shared_ptr<const Closure>>
      v_;
};

// A function of a VM executable with values captured when the closure was made; calling it
// passes the captured values first.
struct Closure {
  std::string function;
  std::vector<Value> captured;
};

using Function = std::function<absl::StatusOr<Value>(absl::Span<const Value> args)>;

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_VALUE_H_
