#include "compiler/arith/analyzer.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <unordered_map>
#include <utility>

#include "compiler/ir/structural.h"

namespace kiln::arith {

using ir::BinaryNode;
using ir::DataType;
using ir::IntImmNode;
using ir::NodeKind;

namespace {

constexpr int64_t kNegInf = ConstIntBound::kNegInf;
constexpr int64_t kPosInf = ConstIntBound::kPosInf;

bool IsInf(int64_t v) { return v == kNegInf || v == kPosInf; }

int64_t SatAdd(int64_t a, int64_t b) {
  if (IsInf(a)) return a;
  if (IsInf(b)) return b;
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return a > 0 ? kPosInf : kNegInf;
  return r;
}

int64_t SatNeg(int64_t a) {
  if (a == kNegInf) return kPosInf;
  if (a == kPosInf) return kNegInf;
  return -a;
}

int64_t SatMul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  bool negative = (a < 0) != (b < 0);
  if (IsInf(a) || IsInf(b)) return negative ? kNegInf : kPosInf;
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return negative ? kNegInf : kPosInf;
  return r;
}

int64_t FloorDivInt(int64_t a, int64_t b) {
  if (IsInf(a)) return (a > 0) == (b > 0) ? kPosInf : kNegInf;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t FloorModInt(int64_t a, int64_t b) { return a - FloorDivInt(a, b) * b; }

ConstIntBound Everything() { return {}; }

ConstIntBound DtypeBound(DataType t) {
  if (t.is_bool()) return {0, 1};
  if (t.is_uint() && t.bits() < 64) return {0, (int64_t{1} << t.bits()) - 1};
  if (t.is_int() && t.bits() < 64) {
    return {-(int64_t{1} << (t.bits() - 1)), (int64_t{1} << (t.bits() - 1)) - 1};
  }
  if (t.is_uint()) return {0, kPosInf};
  return Everything();
}

ConstIntBound MulBounds(ConstIntBound a, ConstIntBound b) {
  int64_t p[4] = {SatMul(a.min, b.min), SatMul(a.min, b.max), SatMul(a.max, b.min),
                  SatMul(a.max, b.max)};
  return {*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
}

bool IsIntegral(const PrimExpr& e) { return e->dtype.is_integral() && !e->dtype.is_bool(); }

// `once(e)` memoized over shared nodes within the outermost call (which owns the memo; the nodes
// are the root's, alive throughout): a DAG is walked once per node, not once per path.
template <typename T, typename Once>
T Memoized(std::unordered_map<const void*, T>** memo, const PrimExpr& e, const Once& once) {
  std::unordered_map<const void*, T> outermost;
  const bool owner = *memo == nullptr;
  if (owner) *memo = &outermost;
  T result;
  if (auto it = (*memo)->find(e.get()); it != (*memo)->end()) {
    result = it->second;
  } else {
    result = once(e);  // may grow the memo: no iterator is held across it
    (*memo)->emplace(e.get(), result);
  }
  if (owner) *memo = nullptr;
  return result;
}

}  // namespace

// ---- Canonical sums -------------------------------------------------------------------------

// sum over monomials of coeff * (atom_i0 * atom_i1 * ...) + constant.
struct Sum {
  std::map<std::vector<int>, int64_t> terms;
  int64_t constant = 0;
  bool valid = true;  // false after an overflow: the caller keeps the expression as it was
};

class Canonicalizer {
 public:
  explicit Canonicalizer(Analyzer* analyzer)
      : analyzer_(analyzer), simplified_(analyzer->simplified_) {}

  // Both walks are memoized over shared nodes: a symbolic shape squared again and again is a
  // DAG of n nodes and 2^n paths, and is walked once per node (each memo holds its node, so no
  // address is reused while this lives). Simplify's memo is the analyzer's, across calls.
  PrimExpr Simplify(const PrimExpr& e) {
    if (!e) return e;
    auto it = simplified_.find(e.get());
    if (it != simplified_.end()) return it->second.second;
    PrimExpr out;
    if (IsIntegral(e) && e->dtype.is_scalar()) {
      Sum s = ToSum(e);
      out = s.valid ? ToExpr(s, e->dtype) : e;
    } else {
      out = SimplifyNonIntegral(e);
    }
    simplified_.emplace(e.get(), std::make_pair(e, out));
    return out;
  }

 private:
  int Atom(const PrimExpr& e) {
    for (size_t i = 0; i < atoms_.size(); ++i) {
      if (ir::ExprDeepEqual(atoms_[i], e)) return static_cast<int>(i);
    }
    atoms_.push_back(e);
    return static_cast<int>(atoms_.size() - 1);
  }

  Sum AtomSum(const PrimExpr& e) {
    Sum s;
    s.terms[{Atom(e)}] = 1;
    return s;
  }

  static Sum Const(int64_t c) {
    Sum s;
    s.constant = c;
    return s;
  }

  static void AddInto(Sum* acc, const Sum& s, int64_t scale) {
    if (!s.valid) acc->valid = false;
    for (const auto& [mono, coeff] : s.terms) {
      int64_t scaled;
      if (__builtin_mul_overflow(coeff, scale, &scaled) ||
          __builtin_add_overflow(acc->terms[mono], scaled, &acc->terms[mono])) {
        acc->valid = false;
      }
    }
    int64_t scaled;
    if (__builtin_mul_overflow(s.constant, scale, &scaled) ||
        __builtin_add_overflow(acc->constant, scaled, &acc->constant)) {
      acc->valid = false;
    }
    for (auto it = acc->terms.begin(); it != acc->terms.end();) {
      it = it->second == 0 ? acc->terms.erase(it) : std::next(it);
    }
  }

  // Multiplying out (a + 1) * (b + 1) * ... doubles the terms with each factor: a product of
  // twenty symbolic shape dimensions would take a million terms. Past this many the product is
  // left as written (factored), like an overflow.
  static constexpr size_t kMaxProductTerms = 256;

  static Sum Multiply(const Sum& a, const Sum& b) {
    Sum out;
    out.valid = a.valid && b.valid;
    if ((a.terms.size() + 1) * (b.terms.size() + 1) > kMaxProductTerms) {
      out.valid = false;
      return out;
    }
    auto add_term = [&](std::vector<int> mono, int64_t x, int64_t y) {
      int64_t c;
      if (__builtin_mul_overflow(x, y, &c)) out.valid = false;
      std::sort(mono.begin(), mono.end());
      if (mono.empty()) {
        if (__builtin_add_overflow(out.constant, c, &out.constant)) out.valid = false;
      } else if (__builtin_add_overflow(out.terms[mono], c, &out.terms[mono])) {
        out.valid = false;
      }
    };
    std::vector<std::pair<std::vector<int>, int64_t>> ta(a.terms.begin(), a.terms.end());
    std::vector<std::pair<std::vector<int>, int64_t>> tb(b.terms.begin(), b.terms.end());
    ta.push_back({{}, a.constant});
    tb.push_back({{}, b.constant});
    for (const auto& [ma, ca] : ta) {
      for (const auto& [mb, cb] : tb) {
        std::vector<int> mono = ma;
        mono.insert(mono.end(), mb.begin(), mb.end());
        add_term(std::move(mono), ca, cb);
      }
    }
    for (auto it = out.terms.begin(); it != out.terms.end();) {
      it = it->second == 0 ? out.terms.erase(it) : std::next(it);
    }
    return out;
  }

  ConstIntBound BoundOf(const Sum& s) {
    ConstIntBound total{s.constant, s.constant};
    for (const auto& [mono, coeff] : s.terms) {
      ConstIntBound t{coeff, coeff};
      for (int atom : mono) t = MulBounds(t, analyzer_->Bound(atoms_[atom]));
      total = {SatAdd(total.min, t.min), SatAdd(total.max, t.max)};
    }
    return total;
  }

  // Splits s into c * quotient + remainder with remainder coefficients in [0, c).
  static void Split(const Sum& s, int64_t c, Sum* quotient, Sum* remainder) {
    for (const auto& [mono, coeff] : s.terms) {
      int64_t q = FloorDivInt(coeff, c);
      if (q != 0) quotient->terms[mono] = q;
      if (coeff - q * c != 0) remainder->terms[mono] = coeff - q * c;
    }
    quotient->constant = FloorDivInt(s.constant, c);
    remainder->constant = FloorModInt(s.constant, c);
  }

  Sum ToSum(const PrimExpr& e) {
    auto it = sums_.find(e.get());
    if (it != sums_.end()) return it->second.second;
    Sum s = ToSumOnce(e);
    sums_.emplace(e.get(), std::make_pair(e, s));
    return s;
  }

  Sum ToSumOnce(const PrimExpr& e) {
    if (const int64_t* v = ir::AsConstInt(e)) return Const(*v);
    const auto* bin = e.as<BinaryNode>();
    if (bin == nullptr) return AtomSum(SimplifyChildren(e));
    switch (bin->kind()) {
      case NodeKind::kAdd:
      case NodeKind::kSub: {
        Sum acc = ToSum(bin->a);
        AddInto(&acc, ToSum(bin->b), bin->kind() == NodeKind::kAdd ? 1 : -1);
        return acc;
      }
      case NodeKind::kMul:
        return Multiply(ToSum(bin->a), ToSum(bin->b));
      case NodeKind::kDiv:
      case NodeKind::kMod:
        // Truncated division equals floor division when both sides are non-negative.
        if (analyzer_->Bound(bin->a).min >= 0 && analyzer_->Bound(bin->b).min > 0) {
          return DivMod(bin->kind() == NodeKind::kDiv, bin->a, bin->b, e);
        }
        return AtomSum(SimplifyChildren(e));
      case NodeKind::kFloorDiv:
        return DivMod(true, bin->a, bin->b, e);
      case NodeKind::kFloorMod:
        return DivMod(false, bin->a, bin->b, e);
      case NodeKind::kMin:
      case NodeKind::kMax:
        return MinMax(bin->kind() == NodeKind::kMin, bin->a, bin->b);
      default:
        return AtomSum(SimplifyChildren(e));
    }
  }

  Sum DivMod(bool is_div, const PrimExpr& a, const PrimExpr& b, const PrimExpr& original) {
    Sum divisor = ToSum(b);
    // Only division by a positive constant is reasoned about.
    if (!divisor.terms.empty() || divisor.constant <= 0 || !divisor.valid) {
      return AtomSum(SimplifyChildren(original));
    }
    int64_t c = divisor.constant;
    Sum s = ToSum(a);
    if (!s.valid) return s;
    Sum quotient, remainder;
    Split(s, c, &quotient, &remainder);
    ConstIntBound r = BoundOf(remainder);
    int64_t k = FloorDivInt(r.min, c);
    bool decided = !IsInf(r.min) && !IsInf(r.max) && FloorDivInt(r.max, c) == k;
    if (is_div) {
      if (decided) {
        AddInto(&quotient, Const(k), 1);
        return quotient;
      }
      AddInto(&quotient,
              AtomSum(ir::FloorDiv(ToExpr(remainder, a->dtype), ir::IntImm(a->dtype, c))), 1);
      return quotient;
    }
    if (decided) {
      AddInto(&remainder, Const(-k * c), 1);
      return remainder;
    }
    return AtomSum(ir::FloorMod(ToExpr(remainder, a->dtype), ir::IntImm(a->dtype, c)));
  }

  Sum MinMax(bool is_min, const PrimExpr& a, const PrimExpr& b) {
    Sum sa = ToSum(a);
    Sum sb = ToSum(b);
    Sum diff = sa;
    AddInto(&diff, sb, -1);
    if (diff.valid) {
      ConstIntBound d = BoundOf(diff);
      if (d.max <= 0) return is_min ? sa : sb;  // a <= b
      if (d.min >= 0) return is_min ? sb : sa;  // a >= b
    }
    PrimExpr ea = ToExpr(sa, a->dtype);
    PrimExpr eb = ToExpr(sb, b->dtype);
    return AtomSum(is_min ? ir::Min(ea, eb) : ir::Max(ea, eb));
  }

  PrimExpr ToExpr(const Sum& s, DataType dtype) {
    PrimExpr result;
    for (const auto& [mono, coeff] : s.terms) {
      PrimExpr product;
      for (int atom : mono) product = product ? product * atoms_[atom] : atoms_[atom];
      int64_t magnitude = coeff < 0 ? -coeff : coeff;
      PrimExpr term = magnitude == 1 ? product : product * ir::IntImm(dtype, magnitude);
      if (!result) {
        result = coeff < 0 ? ir::IntImm(dtype, 0) - term : term;
      } else {
        result = coeff < 0 ? result - term : result + term;
      }
    }
    if (!result) return ir::IntImm(dtype, s.constant);
    if (s.constant > 0) return result + ir::IntImm(dtype, s.constant);
    if (s.constant < 0) return result - ir::IntImm(dtype, -s.constant);
    return result;
  }

  // Simplifies the operands of an expression kept as an atom.
  PrimExpr SimplifyChildren(const PrimExpr& e) {
    if (const auto* bin = e.as<BinaryNode>()) {
      PrimExpr a = Simplify(bin->a);
      PrimExpr b = Simplify(bin->b);
      if (a == bin->a && b == bin->b) return e;
      return ir::Make<BinaryNode>(bin->kind(), bin->dtype, a, b);
    }
    if (const auto* sel = e.as<ir::SelectNode>()) return SelectSimplify(*sel, e);
    if (const auto* call = e.as<ir::CallNode>()) {
      std::vector<PrimExpr> args;
      bool changed = false;
      for (const PrimExpr& arg : call->args) {
        args.push_back(Simplify(arg));
        changed |= args.back() != arg;
      }
      return changed ? ir::Call(call->dtype, call->op, std::move(args)) : e;
    }
    if (const auto* cast = e.as<ir::CastNode>()) {
      PrimExpr v = Simplify(cast->value);
      if (const int64_t* c = ir::AsConstInt(v); c != nullptr && cast->dtype.is_integral()) {
        return ir::IntImm(cast->dtype, *c);
      }
      return v == cast->value ? e : ir::Cast(cast->dtype, v);
    }
    return e;
  }

  PrimExpr SelectSimplify(const ir::SelectNode& sel, const PrimExpr& e) {
    PrimExpr c = Simplify(sel.condition);
    PrimExpr t = Simplify(sel.true_value);
    PrimExpr f = Simplify(sel.false_value);
    if (const int64_t* v = ir::AsConstInt(c)) return *v ? t : f;
    if (c == sel.condition && t == sel.true_value && f == sel.false_value) return e;
    return ir::Select(c, t, f);
  }

  // Comparisons, logic, floats and selects.
  PrimExpr SimplifyNonIntegral(const PrimExpr& e) {
    if (const auto* sel = e.as<ir::SelectNode>()) return SelectSimplify(*sel, e);
    if (const auto* n = e.as<ir::NotNode>()) {
      PrimExpr a = Simplify(n->a);
      if (const int64_t* v = ir::AsConstInt(a)) return ir::Bool(*v == 0);
      return a == n->a ? e : ir::Not(a);
    }
    const auto* bin = e.as<BinaryNode>();
    if (bin == nullptr) return SimplifyChildren(e);
    PrimExpr a = Simplify(bin->a);
    PrimExpr b = Simplify(bin->b);
    NodeKind k = bin->kind();
    if (k == NodeKind::kAnd || k == NodeKind::kOr) {
      const int64_t* ca = ir::AsConstInt(a);
      const int64_t* cb = ir::AsConstInt(b);
      bool is_and = k == NodeKind::kAnd;
      if (ca != nullptr) return (*ca != 0) == is_and ? b : ir::Bool(!is_and);
      if (cb != nullptr) return (*cb != 0) == is_and ? a : ir::Bool(!is_and);
    } else if (k >= NodeKind::kEQ && k <= NodeKind::kGE && IsIntegral(a) && a->dtype.is_scalar()) {
      Sum diff = ToSum(a);
      AddInto(&diff, ToSum(b), -1);  // a - b
      if (diff.valid) {
        ConstIntBound d = BoundOf(diff);
        int64_t g = 0;
        for (const auto& [mono, coeff] : diff.terms) g = std::gcd(g, coeff < 0 ? -coeff : coeff);
        bool zero_impossible =
            d.min > 0 || d.max < 0 || (g > 1 && FloorModInt(diff.constant, g) != 0);
        bool is_zero = diff.terms.empty() && diff.constant == 0;
        switch (k) {
          case NodeKind::kEQ:
            if (is_zero) return ir::Bool(true);
            if (zero_impossible) return ir::Bool(false);
            break;
          case NodeKind::kNE:
            if (is_zero) return ir::Bool(false);
            if (zero_impossible) return ir::Bool(true);
            break;
          case NodeKind::kLT:
            if (d.max < 0) return ir::Bool(true);
            if (d.min >= 0) return ir::Bool(false);
            break;
          case NodeKind::kLE:
            if (d.max <= 0) return ir::Bool(true);
            if (d.min > 0) return ir::Bool(false);
            break;
          case NodeKind::kGT:
            if (d.min > 0) return ir::Bool(true);
            if (d.max <= 0) return ir::Bool(false);
            break;
          case NodeKind::kGE:
            if (d.min >= 0) return ir::Bool(true);
            if (d.max < 0) return ir::Bool(false);
            break;
          default:
            break;
        }
      }
    } else if (a->dtype.is_float()) {
      const auto* fa = a.as<ir::FloatImmNode>();
      const auto* fb = b.as<ir::FloatImmNode>();
      if (fa != nullptr && fb != nullptr) {
        double x = fa->value, y = fb->value;
        switch (k) {
          case NodeKind::kAdd:
            return ir::FloatImm(a->dtype, x + y);
          case NodeKind::kSub:
            return ir::FloatImm(a->dtype, x - y);
          case NodeKind::kMul:
            return ir::FloatImm(a->dtype, x * y);
          case NodeKind::kDiv:
            if (y != 0) return ir::FloatImm(a->dtype, x / y);
            break;
          case NodeKind::kMin:
            return ir::FloatImm(a->dtype, std::min(x, y));
          case NodeKind::kMax:
            return ir::FloatImm(a->dtype, std::max(x, y));
          case NodeKind::kEQ:
            return ir::Bool(x == y);
          case NodeKind::kNE:
            return ir::Bool(x != y);
          case NodeKind::kLT:
            return ir::Bool(x < y);
          case NodeKind::kLE:
            return ir::Bool(x <= y);
          case NodeKind::kGT:
            return ir::Bool(x > y);
          case NodeKind::kGE:
            return ir::Bool(x >= y);
          default:
            break;
        }
      }
    }
    if (a == bin->a && b == bin->b) return e;
    return ir::Make<BinaryNode>(k, bin->dtype, a, b);
  }

  Analyzer* analyzer_;
  std::vector<PrimExpr> atoms_;
  std::unordered_map<const void*, std::pair<PrimExpr, Sum>> sums_;
  std::unordered_map<const void*, std::pair<PrimExpr, PrimExpr>>& simplified_;
};

// ---- Analyzer ------------------------------------------------------------------------------

void Analyzer::Bind(const Var& v, int64_t min, int64_t max) {
  // What was simplified under the old bounds may simplify further now. Dropped whole rather than
  // cleared: clear() would walk the buckets a large simplification left, at every bind.
  if (!simplified_.empty())
    std::unordered_map<const void*, std::pair<PrimExpr, PrimExpr>>().swap(simplified_);
  bounds_[v.get()] = {min, max};
}

void Analyzer::Bind(const Var& v, const ir::Range& range) {
  const int64_t* min = ir::AsConstInt(range->min);
  const int64_t* extent = ir::AsConstInt(range->extent);
  if (min != nullptr && extent != nullptr && *extent > 0) {
    Bind(v, *min, *min + *extent - 1);
  } else if (min != nullptr) {
    Bind(v, *min, kPosInf);
  }
}

const ConstIntBound* Analyzer::FindBound(const ir::Object* var) const {
  auto it = bounds_.find(var);
  return it != bounds_.end() ? &it->second : nullptr;
}

ConstIntBound Analyzer::Bound(const PrimExpr& e) {
  return Memoized(&bound_memo_, e, [this](const PrimExpr& x) { return BoundOnce(x); });
}

ConstIntBound Analyzer::BoundOnce(const PrimExpr& e) {
  if (const int64_t* v = ir::AsConstInt(e)) return {*v, *v};
  if (const auto* var = e.as<ir::VarNode>()) {
    if (const ConstIntBound* b = FindBound(var)) return *b;
    if (var->is_size_var) return {0, kPosInf};
    return DtypeBound(var->dtype);
  }
  if (const auto* bin = e.as<BinaryNode>()) {
    if (bin->kind() >= NodeKind::kEQ) return {0, 1};  // comparisons and logic
    ConstIntBound a = Bound(bin->a);
    ConstIntBound b = Bound(bin->b);
    switch (bin->kind()) {
      case NodeKind::kAdd:
        return {SatAdd(a.min, b.min), SatAdd(a.max, b.max)};
      case NodeKind::kSub:
        return {SatAdd(a.min, SatNeg(b.max)), SatAdd(a.max, SatNeg(b.min))};
      case NodeKind::kMul:
        return MulBounds(a, b);
      case NodeKind::kFloorDiv:
      case NodeKind::kDiv:
        if (b.is_const() && b.min > 0 && (bin->kind() == NodeKind::kFloorDiv || a.min >= 0)) {
          return {FloorDivInt(a.min, b.min), FloorDivInt(a.max, b.min)};
        }
        return DtypeBound(e->dtype);
      case NodeKind::kFloorMod:
      case NodeKind::kMod:
        if (b.min > 0 && !IsInf(b.max)) {
          if (a.min >= 0 && a.max < b.min) return a;  // already reduced
          if (bin->kind() == NodeKind::kFloorMod || a.min >= 0) return {0, b.max - 1};
        }
        return DtypeBound(e->dtype);
      case NodeKind::kMin:
        return {std::min(a.min, b.min), std::min(a.max, b.max)};
      case NodeKind::kMax:
        return {std::max(a.min, b.min), std::max(a.max, b.max)};
      default:
        return DtypeBound(e->dtype);
    }
  }
  if (const auto* sel = e.as<ir::SelectNode>()) {
    ConstIntBound t = Bound(sel->true_value);
    ConstIntBound f = Bound(sel->false_value);
    return {std::min(t.min, f.min), std::max(t.max, f.max)};
  }
  if (const auto* cast = e.as<ir::CastNode>()) {
    ConstIntBound v = Bound(cast->value);
    ConstIntBound t = DtypeBound(cast->dtype);
    if (v.min >= t.min && v.max <= t.max) return v;
    return t;
  }
  if (e.as<ir::NotNode>()) return {0, 1};
  return DtypeBound(e->dtype);
}

ModularSet Analyzer::Modular(const PrimExpr& e) {
  return Memoized(&modular_memo_, e, [this](const PrimExpr& x) { return ModularOnce(x); });
}

ModularSet Analyzer::ModularOnce(const PrimExpr& e) {
  if (const int64_t* v = ir::AsConstInt(e)) return {0, *v};
  const auto* bin = e.as<BinaryNode>();
  if (bin == nullptr) return {1, 0};
  ModularSet a = Modular(bin->a);
  ModularSet b = Modular(bin->b);
  auto normalize = [](int64_t coeff, int64_t base) -> ModularSet {
    if (coeff < 0) coeff = -coeff;
    return {coeff, coeff == 0 ? base : FloorModInt(base, coeff)};
  };
  switch (bin->kind()) {
    case NodeKind::kAdd:
      return normalize(std::gcd(a.coeff, b.coeff), a.base + b.base);
    case NodeKind::kSub:
      return normalize(std::gcd(a.coeff, b.coeff), a.base - b.base);
    case NodeKind::kMul: {
      // (ca*x + ba)(cb*y + bb) = ca*cb*xy + ca*bb*x + cb*ba*y + ba*bb
      int64_t coeff = std::gcd(std::gcd(a.coeff * b.coeff, a.coeff * b.base), b.coeff * a.base);
      return normalize(coeff, a.base * b.base);
    }
    case NodeKind::kFloorDiv:
      if (b.coeff == 0 && b.base > 0 && a.coeff % b.base == 0 && a.coeff != 0) {
        return normalize(a.coeff / b.base, FloorDivInt(a.base, b.base));
      }
      if (b.coeff == 0 && b.base > 0 && a.coeff == 0) return {0, FloorDivInt(a.base, b.base)};
      return {1, 0};
    case NodeKind::kFloorMod:
      if (b.coeff == 0 && b.base > 0 && a.coeff % b.base == 0) {
        return {0, FloorModInt(a.base, b.base)};
      }
      // x % c keeps what x is a multiple of, up to gcd(x's step, c): (i * 64) % 128 is 64k.
      if (b.coeff == 0 && b.base > 0) return normalize(std::gcd(a.coeff, b.base), a.base);
      return {1, 0};
    default:
      return {1, 0};
  }
}

PrimExpr Analyzer::Simplify(const PrimExpr& e) { return Canonicalizer(this).Simplify(e); }

bool Analyzer::CanProve(const PrimExpr& cond) {
  PrimExpr simplified = Simplify(cond);
  const int64_t* v = ir::AsConstInt(simplified);
  return v != nullptr && *v != 0;
}

bool Analyzer::CanProveEqual(const PrimExpr& a, const PrimExpr& b) {
  PrimExpr difference = Simplify(a - b);
  const int64_t* v = ir::AsConstInt(difference);
  return v != nullptr && *v == 0;
}

}  // namespace kiln::arith
