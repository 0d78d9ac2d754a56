#include "compiler/tir/interpret.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"

namespace kiln::tir {

using ir::DataType;
using ir::NodeKind;
using ir::PrimExpr;

namespace {

struct Storage {
  char* base = nullptr;
  int64_t bytes = 0;
};

// The state of one run. The first error stops the loops; what is evaluated after it is ignored.
struct Frame {
  std::vector<int64_t> ints;   // integer and bool variables, by slot
  std::vector<double> floats;  // floating-point variables, by slot
  std::vector<Storage> buffers;
  std::vector<std::vector<char>> allocations;
  absl::Status error;
  void Fail(std::string message) {
    if (error.ok()) error = absl::InvalidArgumentError(std::move(message));
  }
};

using IntFn = std::function<int64_t(Frame&)>;
using FloatFn = std::function<double(Frame&)>;
using StmtFn = std::function<void(Frame&)>;

// An integer of `t` held in an int64: sign- or zero-extended from its width; bools are 0 or 1.
int64_t Wrap(DataType t, int64_t v) {
  if (t.is_bool()) return v != 0;
  const int bits = t.bits();
  if (bits >= 64) return v;
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  const uint64_t u = static_cast<uint64_t>(v) & mask;
  if (t.is_uint()) return static_cast<int64_t>(u);
  const uint64_t sign = uint64_t{1} << (bits - 1);
  return static_cast<int64_t>((u ^ sign) - sign);
}

// A float of `t`: float32 results are rounded to float32 as the compiled code rounds them.
double Round(DataType t, double v) {
  return t.bits() == 32 ? static_cast<double>(static_cast<float>(v)) : v;
}

bool SupportedScalar(DataType t) {
  if (t.lanes() != 1) return false;
  if (t.code() == DataType::Code::kFloat) return t.bits() == 32 || t.bits() == 64;
  if (t.is_bool()) return true;
  if (t.is_int() || t.is_uint()) {
    return t.bits() == 8 || t.bits() == 16 || t.bits() == 32 || t.bits() == 64;
  }
  return false;
}

// Bytes one element of `t` takes in memory (a bool takes a byte).
int64_t ElementBytes(DataType t) { return t.is_bool() ? 1 : t.bits() / 8; }

class Builder {
 public:
  explicit Builder(int64_t max_iterations) : max_iterations_(max_iterations) {}

  absl::Status status;
  int64_t iterations = 0;
  int num_ints = 0, num_floats = 0, num_buffers = 0;

  // The storage slot of a buffer's data variable (a parameter's, or an allocation's).
  int BufferSlot(const ir::VarNode* data) {
    auto [it, added] = buffer_slots_.try_emplace(data, num_buffers);
    if (added) ++num_buffers;
    return it->second;
  }

  StmtFn Stmt(const ir::Stmt& s);
  IntFn Int(const PrimExpr& e);
  FloatFn Float(const PrimExpr& e);

 private:
  void Unsupported(const std::string& what) {
    if (status.ok()) status = absl::UnimplementedError(absl::StrCat("the interpreter: ", what));
  }
  // Evaluates `value` into `var`, defined here (a let's binding: the value cannot use it).
  StmtFn Assign(const ir::VarNode* var, const PrimExpr& value) {
    if (var->dtype.is_float()) {
      FloatFn v = Float(value);
      const size_t slot = static_cast<size_t>(Define(var));
      return [v, slot](Frame& f) { f.floats[slot] = v(f); };
    }
    IntFn v = Int(value);
    const size_t slot = static_cast<size_t>(Define(var));
    return [v, slot](Frame& f) { f.ints[slot] = v(f); };
  }
  // A variable's slot, made when it is defined.
  int Define(const ir::VarNode* v) {
    if (v->dtype.is_float()) return float_slots_[v] = num_floats++;
    return int_slots_[v] = num_ints++;
  }
  // The element offset of an access: its indices over the buffer's strides (row-major where it
  // has none) plus its offset.
  IntFn Offset(const ir::BufferNode& b, const std::vector<PrimExpr>& indices);
  IntFn Load(const ir::BufferLoadNode& load);
  FloatFn LoadFloat(const ir::BufferLoadNode& load);
  StmtFn Store(const ir::BufferStoreNode& store);
  IntFn IntBinary(const ir::BinaryNode& b);
  FloatFn FloatBinary(const ir::BinaryNode& b);
  IntFn Compare(const ir::BinaryNode& b);
  FloatFn FloatCall(const ir::CallNode& c);

  const int64_t max_iterations_;
  int64_t enclosing_ = 1;  // the product of the enclosing loops' extents
  std::unordered_map<const ir::VarNode*, int> int_slots_, float_slots_, buffer_slots_;
};

IntFn Builder::Offset(const ir::BufferNode& b, const std::vector<PrimExpr>& indices) {
  std::vector<IntFn> idx;
  std::vector<int64_t> strides(indices.size(), 1);
  for (const PrimExpr& i : indices) idx.push_back(Int(i));
  if (!b.strides.empty()) {
    if (b.strides.size() != indices.size()) Unsupported("strides that do not match the indices");
    for (size_t k = 0; k < b.strides.size() && k < indices.size(); ++k) {
      const int64_t* s = ir::AsConstInt(b.strides[k]);
      if (s == nullptr) return Unsupported("a stride that is not a constant"), nullptr;
      strides[k] = *s;
    }
  } else if (indices.size() > 1) {
    if (b.shape.size() != indices.size()) Unsupported("a shape that does not match the indices");
    int64_t stride = 1;
    for (size_t k = indices.size(); k-- > 0;) {
      strides[k] = stride;
      const int64_t* d = k < b.shape.size() ? ir::AsConstInt(b.shape[k]) : nullptr;
      if (d == nullptr) return Unsupported("a dimension that is not a constant"), nullptr;
      stride *= *d;
    }
  }
  int64_t base = 0;
  if (b.elem_offset) {
    const int64_t* o = ir::AsConstInt(b.elem_offset);
    if (o == nullptr) return Unsupported("an element offset that is not a constant"), nullptr;
    base = *o;
  }
  if (idx.size() == 1 && strides[0] == 1) {
    return [i = idx[0], base](Frame& f) { return base + i(f); };
  }
  return [idx = std::move(idx), strides = std::move(strides), base](Frame& f) {
    int64_t at = base;
    for (size_t k = 0; k < idx.size(); ++k) at += idx[k](f) * strides[k];
    return at;
  };
}

// Reads element `at` of storage `slot` as a T, bounds checked.
template <typename T>
T Read(Frame& f, int slot, int64_t at, const std::string& name) {
  const Storage& s = f.buffers[static_cast<size_t>(slot)];
  if (at < 0 || at >= s.bytes / static_cast<int64_t>(sizeof(T))) {
    f.Fail(absl::StrCat("a load of '", name, "'[", at, "] is outside its ", s.bytes, " bytes"));
    return T{};
  }
  T v;
  std::memcpy(&v, s.base + at * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

template <typename T>
void Write(Frame& f, int slot, int64_t at, T v, const std::string& name) {
  const Storage& s = f.buffers[static_cast<size_t>(slot)];
  if (at < 0 || at >= s.bytes / static_cast<int64_t>(sizeof(T))) {
    f.Fail(absl::StrCat("a store to '", name, "'[", at, "] is outside its ", s.bytes, " bytes"));
    return;
  }
  std::memcpy(s.base + at * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

template <typename T>
IntFn LoadAs(int slot, IntFn offset, std::string name) {
  return [slot, offset = std::move(offset), name = std::move(name)](Frame& f) {
    return static_cast<int64_t>(Read<T>(f, slot, offset(f), name));
  };
}

IntFn Builder::Load(const ir::BufferLoadNode& load) {
  const DataType t = load.buffer->dtype;
  if (!SupportedScalar(t) || t.is_float() || load.dtype != t) {
    return Unsupported(absl::StrCat("a load of ", load.dtype.ToString())), nullptr;
  }
  const int slot = BufferSlot(load.buffer->data.get());
  IntFn at = Offset(*load.buffer, load.indices);
  const std::string& name = load.buffer->name;
  if (t.is_bool()) {
    return [slot, at, name](Frame& f) { return int64_t{Read<uint8_t>(f, slot, at(f), name) != 0}; };
  }
  switch (t.bits()) {
    case 8:
      return t.is_int() ? LoadAs<int8_t>(slot, at, name) : LoadAs<uint8_t>(slot, at, name);
    case 16:
      return t.is_int() ? LoadAs<int16_t>(slot, at, name) : LoadAs<uint16_t>(slot, at, name);
    case 32:
      return t.is_int() ? LoadAs<int32_t>(slot, at, name) : LoadAs<uint32_t>(slot, at, name);
    default:
      return LoadAs<int64_t>(slot, at, name);
  }
}

FloatFn Builder::LoadFloat(const ir::BufferLoadNode& load) {
  const DataType t = load.buffer->dtype;
  if (!SupportedScalar(t) || !t.is_float() || load.dtype != t) {
    return Unsupported(absl::StrCat("a load of ", load.dtype.ToString())), nullptr;
  }
  const int slot = BufferSlot(load.buffer->data.get());
  IntFn at = Offset(*load.buffer, load.indices);
  std::string name = load.buffer->name;
  if (t.bits() == 32) {
    return [slot, at, name](Frame& f) {
      return static_cast<double>(Read<float>(f, slot, at(f), name));
    };
  }
  return [slot, at, name](Frame& f) { return Read<double>(f, slot, at(f), name); };
}

template <typename T>
StmtFn StoreInt(int slot, IntFn at, IntFn value, std::string name) {
  return [slot, at = std::move(at), value = std::move(value), name = std::move(name)](Frame& f) {
    Write<T>(f, slot, at(f), static_cast<T>(value(f)), name);
  };
}

StmtFn Builder::Store(const ir::BufferStoreNode& store) {
  const DataType t = store.buffer->dtype;
  if (!SupportedScalar(t) || store.value->dtype != t) {
    return Unsupported(absl::StrCat("a store of ", store.value->dtype.ToString())), nullptr;
  }
  iterations += enclosing_;
  if (iterations > max_iterations_) {
    return Unsupported(absl::StrCat("more than ", max_iterations_, " iterations")), nullptr;
  }
  const int slot = BufferSlot(store.buffer->data.get());
  IntFn at = Offset(*store.buffer, store.indices);
  std::string name = store.buffer->name;
  if (t.is_float()) {
    FloatFn v = Float(store.value);
    if (t.bits() == 32) {
      return [slot, at, v, name](Frame& f) {
        Write<float>(f, slot, at(f), static_cast<float>(v(f)), name);
      };
    }
    return [slot, at, v, name](Frame& f) { Write<double>(f, slot, at(f), v(f), name); };
  }
  IntFn v = Int(store.value);
  if (t.is_bool()) return StoreInt<uint8_t>(slot, at, v, name);
  switch (t.bits()) {
    case 8:
      return StoreInt<uint8_t>(slot, at, v, name);
    case 16:
      return StoreInt<uint16_t>(slot, at, v, name);
    case 32:
      return StoreInt<uint32_t>(slot, at, v, name);
    default:
      return StoreInt<uint64_t>(slot, at, v, name);
  }
}

IntFn Builder::Compare(const ir::BinaryNode& b) {
  const NodeKind k = b.kind();
  const DataType t = b.a->dtype;
  if (t.is_float()) {
    FloatFn x = Float(b.a), y = Float(b.b);
    return [k, x, y](Frame& f) -> int64_t {
      const double a = x(f), c = y(f);
      switch (k) {
        case NodeKind::kEQ:
          return a == c;
        case NodeKind::kNE:
          return a != c;
        case NodeKind::kLT:
          return a < c;
        case NodeKind::kLE:
          return a <= c;
        case NodeKind::kGT:
          return a > c;
        default:
          return a >= c;
      }
    };
  }
  IntFn x = Int(b.a), y = Int(b.b);
  const bool unsigned_compare = t.is_uint() && t.bits() == 64;
  return [k, x, y, unsigned_compare](Frame& f) -> int64_t {
    const int64_t a = x(f), c = y(f);
    if (unsigned_compare) {
      const uint64_t ua = static_cast<uint64_t>(a), uc = static_cast<uint64_t>(c);
      switch (k) {
        case NodeKind::kEQ:
          return ua == uc;
        case NodeKind::kNE:
          return ua != uc;
        case NodeKind::kLT:
          return ua < uc;
        case NodeKind::kLE:
          return ua <= uc;
        case NodeKind::kGT:
          return ua > uc;
        default:
          return ua >= uc;
      }
    }
    switch (k) {
      case NodeKind::kEQ:
        return a == c;
      case NodeKind::kNE:
        return a != c;
      case NodeKind::kLT:
        return a < c;
      case NodeKind::kLE:
        return a <= c;
      case NodeKind::kGT:
        return a > c;
      default:
        return a >= c;
    }
  };
}

IntFn Builder::IntBinary(const ir::BinaryNode& b) {
  const NodeKind k = b.kind();
  if (k >= NodeKind::kEQ && k <= NodeKind::kGE) return Compare(b);
  const DataType t = b.dtype;
  if (t.is_uint() && t.bits() == 64 && k != NodeKind::kAdd && k != NodeKind::kSub &&
      k != NodeKind::kMul && k != NodeKind::kAnd && k != NodeKind::kOr) {
    return Unsupported("uint64 division and comparison arithmetic"), nullptr;
  }
  IntFn x = Int(b.a), y = Int(b.b);
  return [k, t, x, y](Frame& f) -> int64_t {
    const int64_t a = x(f), c = y(f);
    // Wrapping arithmetic, as the compiled code's.
    const uint64_t ua = static_cast<uint64_t>(a), uc = static_cast<uint64_t>(c);
    switch (k) {
      case NodeKind::kAdd:
        return Wrap(t, static_cast<int64_t>(ua + uc));
      case NodeKind::kSub:
        return Wrap(t, static_cast<int64_t>(ua - uc));
      case NodeKind::kMul:
        return Wrap(t, static_cast<int64_t>(ua * uc));
      case NodeKind::kMin:
        return a < c ? a : c;
      case NodeKind::kMax:
        return a > c ? a : c;
      case NodeKind::kAnd:
        return (a != 0) && (c != 0);
      case NodeKind::kOr:
        return (a != 0) || (c != 0);
      default:
        break;
    }
    if (c == 0) {
      f.Fail("an integer division by zero");
      return 0;
    }
    if (c == -1 && a == std::numeric_limits<int64_t>::min()) return Wrap(t, a);  // -min wraps
    switch (k) {
      case NodeKind::kDiv:
        return Wrap(t, a / c);
      case NodeKind::kMod:
        return Wrap(t, a % c);
      case NodeKind::kFloorDiv: {
        int64_t q = a / c;
        if ((a % c != 0) && ((a < 0) != (c < 0))) --q;
        return Wrap(t, q);
      }
      default: {  // kFloorMod
        int64_t r = a % c;
        if (r != 0 && ((r < 0) != (c < 0))) r += c;
        return Wrap(t, r);
      }
    }
  };
}

FloatFn Builder::FloatBinary(const ir::BinaryNode& b) {
  const NodeKind k = b.kind();
  const DataType t = b.dtype;
  FloatFn x = Float(b.a), y = Float(b.b);
  switch (k) {
    case NodeKind::kAdd:
      return [t, x, y](Frame& f) { return Round(t, x(f) + y(f)); };
    case NodeKind::kSub:
      return [t, x, y](Frame& f) { return Round(t, x(f) - y(f)); };
    case NodeKind::kMul:
      return [t, x, y](Frame& f) { return Round(t, x(f) * y(f)); };
    case NodeKind::kDiv:
      return [t, x, y](Frame& f) { return Round(t, x(f) / y(f)); };
    case NodeKind::kMin:
      return [x, y](Frame& f) {
        const double a = x(f), c = y(f);
        return a < c ? a : c;
      };
    case NodeKind::kMax:
      return [x, y](Frame& f) {
        const double a = x(f), c = y(f);
        return a > c ? a : c;
      };
    default:
      return Unsupported(absl::StrCat(ir::NodeKindName(k), " of floats")), nullptr;
  }
}

FloatFn Builder::FloatCall(const ir::CallNode& c) {
  const DataType t = c.dtype;
  if (c.op == "if_then_else" && c.args.size() == 3) {
    IntFn cond = Int(c.args[0]);
    FloatFn yes = Float(c.args[1]), no = Float(c.args[2]);
    return [cond, yes, no](Frame& f) { return cond(f) != 0 ? yes(f) : no(f); };
  }
  if (c.op == "fma" && c.args.size() == 3) {
    FloatFn a = Float(c.args[0]), b = Float(c.args[1]), d = Float(c.args[2]);
    if (t.bits() == 32) {
      return [a, b, d](Frame& f) {
        return static_cast<double>(
            std::fma(static_cast<float>(a(f)), static_cast<float>(b(f)), static_cast<float>(d(f))));
      };
    }
    return [a, b, d](Frame& f) { return std::fma(a(f), b(f), d(f)); };
  }
  // Intrinsics whose results are correctly rounded or exact: the compiled code's results.
  using Unary = double (*)(double);
  static const std::unordered_map<std::string, Unary> kExact = {
      {"sqrt", [](double v) { return std::sqrt(v); }},
      {"fabs", [](double v) { return std::fabs(v); }},
      {"floor", [](double v) { return std::floor(v); }},
      {"ceil", [](double v) { return std::ceil(v); }},
      {"trunc", [](double v) { return std::trunc(v); }},
      {"round", [](double v) { return std::round(v); }},
      {"nearbyint", [](double v) { return std::nearbyint(v); }},
  };
  if (c.args.size() == 1) {
    FloatFn x = Float(c.args[0]);
    if (c.op == "rsqrt") {
      return [t, x](Frame& f) { return Round(t, 1.0 / Round(t, std::sqrt(x(f)))); };
    }
    if (auto it = kExact.find(c.op); it != kExact.end()) {
      Unary op = it->second;
      return [t, x, op](Frame& f) { return Round(t, op(x(f))); };
    }
  }
  return Unsupported(absl::StrCat("the intrinsic '", c.op, "'")), nullptr;
}

IntFn Builder::Int(const PrimExpr& e) {
  if (!status.ok()) return nullptr;
  const DataType t = e->dtype;
  if (!SupportedScalar(t) || t.is_float()) {
    return Unsupported(absl::StrCat("an integer expression of ", t.ToString())), nullptr;
  }
  if (const auto* i = e.as<ir::IntImmNode>()) {
    const int64_t v = Wrap(t, i->value);
    return [v](Frame&) { return v; };
  }
  if (const auto* v = e.as<ir::VarNode>()) {
    auto it = int_slots_.find(v);
    if (it == int_slots_.end())
      return Unsupported(absl::StrCat("the free variable '", v->name, "'")), nullptr;
    const size_t slot = static_cast<size_t>(it->second);
    return [slot](Frame& f) { return f.ints[slot]; };
  }
  if (const auto* b = e.as<ir::BinaryNode>()) return IntBinary(*b);
  if (const auto* n = e.as<ir::NotNode>()) {
    IntFn a = Int(n->a);
    return [a](Frame& f) -> int64_t { return a(f) == 0; };
  }
  if (const auto* s = e.as<ir::SelectNode>()) {
    IntFn cond = Int(s->condition), yes = Int(s->true_value), no = Int(s->false_value);
    return [cond, yes, no](Frame& f) {  // both evaluated, as a select's operands are
      const int64_t a = yes(f), b = no(f);
      return cond(f) != 0 ? a : b;
    };
  }
  if (const auto* l = e.as<ir::BufferLoadNode>()) return Load(*l);
  if (const auto* c = e.as<ir::CastNode>()) {
    const DataType from = c->value->dtype;
    if (from.is_float()) {
      FloatFn x = Float(c->value);
      if (t.is_bool()) return [x](Frame& f) -> int64_t { return x(f) != 0.0; };
      return [t, x](Frame& f) -> int64_t {
        const double raw = x(f);
        const double v = std::trunc(raw);
        const double lo = t.is_uint() ? 0.0 : -std::ldexp(1.0, t.bits() - 1);
        const double hi = t.is_uint() ? std::ldexp(1.0, t.bits()) : std::ldexp(1.0, t.bits() - 1);
        if (!(v >= lo && v < hi)) {
          f.Fail(absl::StrCat("a cast of ", raw, " to ", t.ToString(), " is out of its range"));
          return 0;
        }
        return t.is_uint() ? static_cast<int64_t>(static_cast<uint64_t>(v))
                           : static_cast<int64_t>(v);
      };
    }
    IntFn x = Int(c->value);
    return [t, x](Frame& f) { return Wrap(t, x(f)); };
  }
  if (const auto* l = e.as<ir::LetNode>()) {
    StmtFn bind = Assign(l->var.get(), l->value);
    IntFn body = Int(l->body);
    return [bind, body](Frame& f) {
      bind(f);
      return body(f);
    };
  }
  if (const auto* c = e.as<ir::CallNode>()) {
    if (c->op == "if_then_else" && c->args.size() == 3) {
      IntFn cond = Int(c->args[0]), yes = Int(c->args[1]), no = Int(c->args[2]);
      return [cond, yes, no](Frame& f) { return cond(f) != 0 ? yes(f) : no(f); };
    }
    if (c->op == "isnan" && c->args.size() == 1) {
      FloatFn x = Float(c->args[0]);
      return [x](Frame& f) -> int64_t { return std::isnan(x(f)); };
    }
    if (c->op == "dot4_u8i8" && c->args.size() == 2) {
      IntFn a = Int(c->args[0]), b = Int(c->args[1]);
      return [a, b](Frame& f) -> int64_t {
        const auto x = static_cast<uint32_t>(a(f)), y = static_cast<uint32_t>(b(f));
        int64_t sum = 0;
        for (int k = 0; k < 32; k += 8)
          sum += int64_t{static_cast<uint8_t>(x >> k)} * static_cast<int8_t>(y >> k);
        return sum;
      };
    }
    return Unsupported(absl::StrCat("the intrinsic '", c->op, "'")), nullptr;
  }
  return Unsupported(ir::NodeKindName(e->kind())), nullptr;
}

FloatFn Builder::Float(const PrimExpr& e) {
  if (!status.ok()) return nullptr;
  const DataType t = e->dtype;
  if (!SupportedScalar(t) || !t.is_float()) {
    return Unsupported(absl::StrCat("a float expression of ", t.ToString())), nullptr;
  }
  if (const auto* i = e.as<ir::FloatImmNode>()) {
    const double v = Round(t, i->value);
    return [v](Frame&) { return v; };
  }
  if (const auto* v = e.as<ir::VarNode>()) {
    auto it = float_slots_.find(v);
    if (it == float_slots_.end())
      return Unsupported(absl::StrCat("the free variable '", v->name, "'")), nullptr;
    const size_t slot = static_cast<size_t>(it->second);
    return [slot](Frame& f) { return f.floats[slot]; };
  }
  if (const auto* b = e.as<ir::BinaryNode>()) return FloatBinary(*b);
  if (const auto* s = e.as<ir::SelectNode>()) {
    IntFn cond = Int(s->condition);
    FloatFn yes = Float(s->true_value), no = Float(s->false_value);
    return [cond, yes, no](Frame& f) {
      const double a = yes(f), b = no(f);
      return cond(f) != 0 ? a : b;
    };
  }
  if (const auto* l = e.as<ir::BufferLoadNode>()) return LoadFloat(*l);
  if (const auto* c = e.as<ir::CastNode>()) {
    const DataType from = c->value->dtype;
    if (from.is_float()) {
      FloatFn x = Float(c->value);
      return [t, x](Frame& f) { return Round(t, x(f)); };
    }
    IntFn x = Int(c->value);
    // Straight from the integer to the type: int64 -> double -> float could round twice.
    const bool wide_unsigned = from.is_uint() && from.bits() == 64;
    if (t.bits() == 32) {
      return [x, wide_unsigned](Frame& f) {
        const int64_t v = x(f);
        return static_cast<double>(wide_unsigned ? static_cast<float>(static_cast<uint64_t>(v))
                                                 : static_cast<float>(v));
      };
    }
    return [x, wide_unsigned](Frame& f) {
      const int64_t v = x(f);
      return wide_unsigned ? static_cast<double>(static_cast<uint64_t>(v)) : static_cast<double>(v);
    };
  }
  if (const auto* l = e.as<ir::LetNode>()) {
    StmtFn bind = Assign(l->var.get(), l->value);
    FloatFn body = Float(l->body);
    return [bind, body](Frame& f) {
      bind(f);
      return body(f);
    };
  }
  if (const auto* c = e.as<ir::CallNode>()) return FloatCall(*c);
  return Unsupported(ir::NodeKindName(e->kind())), nullptr;
}

StmtFn Builder::Stmt(const ir::Stmt& s) {
  if (!status.ok()) return nullptr;
  if (const auto* seq = s.as<ir::SeqStmtNode>()) {
    std::vector<StmtFn> parts;
    for (const ir::Stmt& p : seq->seq) parts.push_back(Stmt(p));
    return [parts = std::move(parts)](Frame& f) {
      for (const StmtFn& p : parts) {
        if (!f.error.ok()) return;
        p(f);
      }
    };
  }
  if (const auto* loop = s.as<ir::ForNode>()) {
    const int64_t* min = ir::AsConstInt(loop->min);
    const int64_t* extent = ir::AsConstInt(loop->extent);
    if (min == nullptr || extent == nullptr)
      return Unsupported("a loop of unknown extent"), nullptr;
    if (loop->for_kind == ir::ForKind::kThreadBinding)
      return Unsupported("a bound thread"), nullptr;
    const size_t slot = static_cast<size_t>(Define(loop->loop_var.get()));
    const int64_t outer = enclosing_;
    if (__builtin_mul_overflow(outer, std::max<int64_t>(*extent, 0), &enclosing_)) {
      enclosing_ = std::numeric_limits<int64_t>::max();
    }
    StmtFn body = Stmt(loop->body);
    enclosing_ = outer;
    const int64_t first = *min, end = *min + *extent;
    return [slot, first, end, body](Frame& f) {
      for (int64_t i = first; i < end && f.error.ok(); ++i) {
        f.ints[slot] = i;
        body(f);
      }
    };
  }
  if (const auto* store = s.as<ir::BufferStoreNode>()) return Store(*store);
  if (const auto* branch = s.as<ir::IfThenElseNode>()) {
    IntFn cond = Int(branch->condition);
    StmtFn yes = Stmt(branch->then_case);
    StmtFn no = branch->else_case ? Stmt(branch->else_case) : StmtFn();
    return [cond, yes, no](Frame& f) {
      if (cond(f) != 0) {
        yes(f);
      } else if (no) {
        no(f);
      }
    };
  }
  if (const auto* let = s.as<ir::LetStmtNode>()) {
    StmtFn bind = Assign(let->var.get(), let->value);
    StmtFn body = Stmt(let->body);
    return [bind, body](Frame& f) {
      bind(f);
      body(f);
    };
  }
  if (const auto* attr = s.as<ir::AttrStmtNode>()) return Stmt(attr->body);
  if (const auto* check = s.as<ir::AssertStmtNode>()) {
    IntFn cond = Int(check->condition);
    StmtFn body = Stmt(check->body);
    std::string message = check->message;
    return [cond, body, message](Frame& f) {
      if (cond(f) == 0) return f.Fail(message);
      body(f);
    };
  }
  if (const auto* alloc = s.as<ir::AllocateNode>()) {
    const ir::BufferNode& b = *alloc->buffer;
    if (!SupportedScalar(b.dtype))
      return Unsupported("an allocation of " + b.dtype.ToString()), nullptr;
    int64_t elements = 1;
    for (const PrimExpr& d : b.shape) {
      const int64_t* n = ir::AsConstInt(d);
      if (n == nullptr || *n < 0) return Unsupported("an allocation of unknown size"), nullptr;
      elements *= *n;
    }
    const int64_t bytes = elements * ElementBytes(b.dtype);
    const size_t slot = static_cast<size_t>(BufferSlot(b.data.get()));
    StmtFn body = Stmt(alloc->body);
    return [slot, bytes, body](Frame& f) {
      // An allocation inside a loop takes its storage once (its contents are undefined anyway).
      if (f.buffers[slot].bytes != bytes) {
        f.allocations.emplace_back(static_cast<size_t>(bytes), '\0');
        f.buffers[slot] = Storage{f.allocations.back().data(), bytes};
      }
      body(f);
    };
  }
  if (const auto* eval = s.as<ir::EvaluateNode>()) {
    if (ir::AsConstInt(eval->value) != nullptr) return [](Frame&) {};
    return Unsupported("an evaluated expression"), nullptr;
  }
  return Unsupported(ir::NodeKindName(s->kind())), nullptr;
}

}  // namespace

struct InterpretedKernel::Program {
  StmtFn body;
  std::vector<int> param_slots;  // the storage slot of each parameter
  int num_ints = 0, num_floats = 0, num_buffers = 0;
  int64_t iterations = 0;
};

absl::StatusOr<InterpretedKernel> InterpretedKernel::Compile(const ir::PrimFunc& lowered,
                                                             int64_t max_iterations) {
  Builder builder(max_iterations);
  auto program = std::make_shared<Program>();
  for (const ir::Var& param : lowered->params) {
    ir::Buffer buffer = lowered->BufferOf(param);
    if (!buffer || !SupportedScalar(buffer->dtype)) {
      return absl::UnimplementedError(
          absl::StrCat("the interpreter: parameter '", param->name, "' is not a buffer it reads"));
    }
    program->param_slots.push_back(builder.BufferSlot(buffer->data.get()));
  }
  program->body = builder.Stmt(lowered->body);
  if (!builder.status.ok()) return builder.status;
  program->num_ints = builder.num_ints;
  program->num_floats = builder.num_floats;
  program->num_buffers = builder.num_buffers;
  program->iterations = builder.iterations;
  return InterpretedKernel(std::move(program));
}

int64_t InterpretedKernel::iterations() const { return program_->iterations; }

absl::Status InterpretedKernel::Run(absl::Span<const InterpretedBuffer> buffers) const {
  const Program& p = *program_;
  if (buffers.size() != p.param_slots.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the kernel takes ", p.param_slots.size(), " buffers, not ", buffers.size()));
  }
  Frame f;
  f.ints.assign(static_cast<size_t>(p.num_ints), 0);
  f.floats.assign(static_cast<size_t>(p.num_floats), 0.0);
  f.buffers.assign(static_cast<size_t>(p.num_buffers), Storage{});
  for (size_t i = 0; i < buffers.size(); ++i) {
    f.buffers[static_cast<size_t>(p.param_slots[i])] =
        Storage{static_cast<char*>(buffers[i].data), buffers[i].bytes};
  }
  p.body(f);
  return f.error;
}

}  // namespace kiln::tir
