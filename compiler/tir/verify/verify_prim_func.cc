#include "compiler/tir/verify/verify_prim_func.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/arith/analyzer.h"
#include "compiler/ir/structural.h"

namespace kiln::tir {
namespace {

using ir::NodeKind;

class Verifier {
 public:
  Verifier(std::string function, std::vector<TirViolation>* out)
      : function_(std::move(function)), out_(out) {}

  void Run(const ir::PrimFuncNode& f) {
    for (const ir::Var& p : f.params) Bind(p, "parameter");
    // A parameter's buffer binds its storage and the size variables of its shape.
    for (const auto& [param, buffer] : f.buffer_map) {
      Bind(buffer->data, "parameter buffer");
      std::vector<ir::PrimExpr> fields = buffer->shape;
      fields.insert(fields.end(), buffer->strides.begin(), buffer->strides.end());
      fields.push_back(buffer->elem_offset);
      for (const ir::PrimExpr& d : fields) {
        const auto* v = d.as<ir::VarNode>();
        if (v != nullptr && bound_.count(v) == 0) Bind(d.as_ref<ir::VarNode>(), "parameter shape");
      }
    }
    for (const auto& [param, buffer] : f.buffer_map) CheckBufferFields(buffer);
    if (f.body) VisitStmt(f.body);
  }

 private:
  void Report(const std::string& rule, std::string message) {
    out_->push_back({rule, function_, std::move(message)});
  }

  // ---- scopes ------------------------------------------------------------------------------
  void Bind(const ir::Var& v, const char* by) {
    if (v == nullptr) return;
    if (bound_[v.get()]++ > 0) {
      Report("TIR-SCOPE", absl::StrCat("variable '", v->name, "' is bound again by a ", by,
                                       " inside the scope that already binds it"));
    }
  }
  void Unbind(const ir::Var& v) {
    if (v == nullptr) return;
    auto it = bound_.find(v.get());
    if (it != bound_.end() && --it->second <= 0) bound_.erase(it);
    analyzer_.Bind(v, arith::ConstIntBound::kNegInf, arith::ConstIntBound::kPosInf);
  }
  // A loop or block iterator ranges over [min, min + extent), bounded by what min and extent
  // are known to be (a symbolic extent leaves it unbounded above).
  void BindRange(const ir::Var& v, const ir::PrimExpr& min, const ir::PrimExpr& extent) {
    const arith::ConstIntBound lo = analyzer_.Bound(analyzer_.Simplify(min));
    const arith::ConstIntBound n = analyzer_.Bound(analyzer_.Simplify(extent));
    const bool known = lo.min != arith::ConstIntBound::kNegInf &&
                       lo.max != arith::ConstIntBound::kPosInf &&
                       n.max != arith::ConstIntBound::kPosInf && n.max >= 1;
    analyzer_.Bind(v, lo.min, known ? lo.max + n.max - 1 : arith::ConstIntBound::kPosInf);
  }

  // A let-bound integer takes its value's range.
  void BindValue(const ir::Var& v, const ir::PrimExpr& value) {
    if (!v->dtype.is_integral() || !v->dtype.is_scalar()) return;
    const arith::ConstIntBound b = analyzer_.Bound(analyzer_.Simplify(value));
    analyzer_.Bind(v, b.min, b.max);
  }
  void Use(const ir::VarNode* v) {
    if (bound_.count(v) > 0 || reported_unbound_.count(v) > 0) return;
    reported_unbound_.insert(v);
    Report("TIR-SCOPE", absl::StrCat("variable '", v->name,
                                     "' is used where nothing binds it (outside the loop, let, "
                                     "block or parameter that defines it)"));
  }

  // ---- expressions -------------------------------------------------------------------------
  void VisitExpr(const ir::PrimExpr& e) {
    if (e == nullptr) return;
    // A shared sub-expression is checked once: an expression DAG is walked in linear time.
    if (e->HasSeveralOwners() && !seen_.insert(e.get()).second) return;
    if (const auto* v = e.as<ir::VarNode>()) {
      Use(v);
    } else if (const auto* b = e.as<ir::BinaryNode>()) {
      VisitExpr(b->a);
      VisitExpr(b->b);
      CheckBinary(*b);
    } else if (const auto* n = e.as<ir::NotNode>()) {
      VisitExpr(n->a);
      if (!n->a->dtype.is_bool()) Report("TIR-DTYPE", "'not' of a non-boolean operand");
    } else if (const auto* c = e.as<ir::CastNode>()) {
      VisitExpr(c->value);
    } else if (const auto* s = e.as<ir::SelectNode>()) {
      VisitExpr(s->condition);
      CheckCondition(s->condition, "a select's condition");
      ++guarded_;
      VisitExpr(s->true_value);
      VisitExpr(s->false_value);
      --guarded_;
      if (!(s->true_value->dtype == s->false_value->dtype)) {
        Report("TIR-DTYPE",
               absl::StrCat("a select's values differ in type (", s->true_value->dtype.ToString(),
                            " and ", s->false_value->dtype.ToString(), ")"));
      }
    } else if (const auto* l = e.as<ir::BufferLoadNode>()) {
      for (const ir::PrimExpr& i : l->indices) VisitExpr(i);
      CheckAccess(l->buffer, l->indices, l->dtype, "load");
    } else if (const auto* r = e.as<ir::RampNode>()) {
      VisitExpr(r->base);
      VisitExpr(r->stride);
    } else if (const auto* bc = e.as<ir::BroadcastNode>()) {
      VisitExpr(bc->value);
    } else if (const auto* let = e.as<ir::LetNode>()) {
      VisitExpr(let->value);
      Bind(let->var, "let");
      BindValue(let->var, let->value);
      VisitExpr(let->body);
      Unbind(let->var);
    } else if (const auto* call = e.as<ir::CallNode>()) {
      // if_then_else evaluates only the branch its condition picks.
      const bool lazy = call->op == "if_then_else";
      if (lazy) ++guarded_;
      for (const ir::PrimExpr& a : call->args) VisitExpr(a);
      if (lazy) --guarded_;
    }
  }

  void CheckBinary(const ir::BinaryNode& b) {
    const NodeKind k = b.kind();
    if (k == NodeKind::kAnd || k == NodeKind::kOr) {
      if (!b.a->dtype.is_bool() || !b.b->dtype.is_bool()) {
        Report("TIR-DTYPE", absl::StrCat("a logical operation on non-boolean operands (",
                                         b.a->dtype.ToString(), ", ", b.b->dtype.ToString(), ")"));
      }
      return;
    }
    if (!(b.a->dtype == b.b->dtype)) {
      Report("TIR-DTYPE", absl::StrCat("the operands of ", ir::NodeKindName(k), " differ in type (",
                                       b.a->dtype.ToString(), " and ", b.b->dtype.ToString(), ")"));
    }
  }

  void CheckCondition(const ir::PrimExpr& c, const char* what) {
    if (c != nullptr && !c->dtype.is_bool()) {
      Report("TIR-DTYPE", absl::StrCat(what, " is ", c->dtype.ToString(), ", not boolean"));
    }
  }

  void CheckBufferFields(const ir::Buffer& b) {
    for (std::string& problem : BufferShapeProblems(*b)) Report("TIR-BUFFER", std::move(problem));
    for (const ir::PrimExpr& d : b->shape) VisitExpr(d);
    for (const ir::PrimExpr& s : b->strides) VisitExpr(s);
    VisitExpr(b->elem_offset);
  }

  // The bound of `e`, tightened by what it is a multiple of: (i * 64) % 128 for i >= 0 is at
  // most 64, not 127.
  arith::ConstIntBound TightBound(const ir::PrimExpr& e) {
    const ir::PrimExpr simple = analyzer_.Simplify(e);
    arith::ConstIntBound b = analyzer_.Bound(simple);
    const arith::ModularSet m = analyzer_.Modular(simple);
    if (m.coeff > 1 && b.max != arith::ConstIntBound::kPosInf &&
        b.min != arith::ConstIntBound::kNegInf) {
      auto wrap = [&](int64_t x) { return ((x % m.coeff) + m.coeff) % m.coeff; };
      b.max -= wrap(b.max - m.base);
      b.min += wrap(m.base - b.min);
    }
    return b;
  }

  // A term of an element offset: `index * coeff`.
  using Term = std::pair<ir::PrimExpr, int64_t>;

  // Adds `e * coeff` to `terms` as a sum of terms, constants to `*constant`.
  static void Decompose(const ir::PrimExpr& e, int64_t coeff, std::vector<Term>* terms,
                        int64_t* constant) {
    if (const int64_t* c = ir::AsConstInt(e)) {
      *constant += *c * coeff;
      return;
    }
    if (const auto* b = e.as<ir::BinaryNode>()) {
      if (b->kind() == NodeKind::kAdd || b->kind() == NodeKind::kSub) {
        Decompose(b->a, coeff, terms, constant);
        Decompose(b->b, b->kind() == NodeKind::kAdd ? coeff : -coeff, terms, constant);
        return;
      }
      if (b->kind() == NodeKind::kMul) {
        if (const int64_t* c = ir::AsConstInt(b->b))
          return Decompose(b->a, coeff * *c, terms, constant);
        if (const int64_t* c = ir::AsConstInt(b->a))
          return Decompose(b->b, coeff * *c, terms, constant);
      }
    }
    terms->push_back({e, coeff});
  }

  // A fused loop split back into dimensions (or a flattened buffer's index) has terms e // k * s
  // and e % k * (s / k): merged into e, and e // k % m with e % k into e % (k * m), the offset's
  // bound is exact rather than the sum of the parts' bounds.
  static void MergeSplitIndices(std::vector<Term>* terms) {
    auto split = [](const ir::PrimExpr& e, NodeKind kind, ir::PrimExpr* x, int64_t* c) {
      const auto* b = e.as<ir::BinaryNode>();
      if (b == nullptr || b->kind() != kind) return false;
      const int64_t* k = ir::AsConstInt(b->b);
      if (k == nullptr || *k <= 0) return false;
      *x = b->a;
      *c = *k;
      return true;
    };
    bool merged = true;
    while (merged) {
      merged = false;
      for (size_t i = 0; i < terms->size() && !merged; ++i) {
        for (size_t j = 0; j < terms->size() && !merged; ++j) {
          if (i == j) continue;
          const auto& [outer, outer_coeff] = (*terms)[i];
          const auto& [inner, inner_coeff] = (*terms)[j];
          ir::PrimExpr e, quotient;
          int64_t k = 0, k2 = 0, m = 0;
          if (!split(inner, NodeKind::kFloorMod, &e, &k) || outer_coeff != k * inner_coeff) {
            continue;
          }
          ir::PrimExpr joined;
          if (split(outer, NodeKind::kFloorDiv, &quotient, &k2) && k2 == k &&
              ir::ExprDeepEqual(quotient, e)) {
            joined = e;  // e // k * k + e % k
          } else if (split(outer, NodeKind::kFloorMod, &quotient, &m) &&
                     split(quotient, NodeKind::kFloorDiv, &quotient, &k2) && k2 == k &&
                     ir::ExprDeepEqual(quotient, e)) {
            joined = ir::FloorMod(e, ir::IntImm(e->dtype, k * m));  // e // k % m * k + e % k
          } else {
            continue;
          }
          const int64_t coeff = inner_coeff;
          terms->erase(terms->begin() + static_cast<std::ptrdiff_t>(std::max(i, j)));
          terms->erase(terms->begin() + static_cast<std::ptrdiff_t>(std::min(i, j)));
          terms->push_back({joined, coeff});
          merged = true;
        }
      }
    }
  }

  // The lowest and highest element offset an access reaches in its buffer's memory (row-major
  // over the shape, or the explicit strides), lanes included; false when not known. The offset,
  // not each index, is what must stay inside: a vector may run from one row into the next.
  bool OffsetRange(const ir::BufferNode& buffer, const std::vector<ir::PrimExpr>& indices,
                   int64_t* lo, int64_t* hi, int64_t* size) {
    const size_t n = indices.size();
    std::vector<int64_t> strides(n, 1);
    int64_t elements = 1;
    for (size_t d = n; d-- > 0;) {
      const int64_t* extent = ir::AsConstInt(buffer.shape[d]);
      if (extent == nullptr) return false;
      if (!buffer.strides.empty()) {
        const int64_t* stride = ir::AsConstInt(buffer.strides[d]);
        if (stride == nullptr) return false;
        strides[d] = *stride;
      } else {
        strides[d] = elements;
      }
      elements *= *extent;
    }
    std::vector<Term> terms;  // of the indices (a ramp's base) times their strides
    int64_t constant = 0;
    int64_t span_lo = 0, span_hi = 0;  // what the lanes add
    for (size_t d = 0; d < n; ++d) {
      ir::PrimExpr index = indices[d];
      if (const auto* r = index.as<ir::RampNode>()) {
        const int64_t* step = ir::AsConstInt(r->stride);
        if (step == nullptr) return false;
        const int64_t last = *step * (r->lanes - 1) * strides[d];
        span_lo += std::min<int64_t>(0, last);
        span_hi += std::max<int64_t>(0, last);
        index = r->base;
      }
      if (index->dtype.lanes() != 1) return false;  // a broadcast or another vector form
      Decompose(index, strides[d], &terms, &constant);
    }
    MergeSplitIndices(&terms);
    // Each term bounded on its own (its multiples known), the sum's bound the sum of theirs.
    int64_t min = constant, max = constant;
    for (const auto& [index, coeff] : terms) {
      const arith::ConstIntBound b = TightBound(index);
      if (b.min == arith::ConstIntBound::kNegInf || b.max == arith::ConstIntBound::kPosInf) {
        return false;
      }
      min += coeff >= 0 ? b.min * coeff : b.max * coeff;
      max += coeff >= 0 ? b.max * coeff : b.min * coeff;
    }
    *lo = min + span_lo;
    *hi = max + span_hi;
    *size = elements;
    return true;
  }

  void CheckAccess(const ir::Buffer& buffer, const std::vector<ir::PrimExpr>& indices,
                   ir::DataType dtype, const char* what) {
    if (bound_.count(buffer->data.get()) == 0) {
      if (reported_buffers_.insert(buffer->data.get()).second) {
        Report("TIR-BUFFER", absl::StrCat("buffer '", buffer->name,
                                          "' is accessed where its "
                                          "storage is not declared (no parameter, allocation "
                                          "or block declares it in scope)"));
      }
      return;
    }
    if (dtype.code() != buffer->dtype.code() || dtype.bits() != buffer->dtype.bits()) {
      Report("TIR-DTYPE", absl::StrCat("a ", what, " of ", dtype.ToString(), " from buffer '",
                                       buffer->name, "' of ", buffer->dtype.ToString()));
    }
    if (indices.size() != buffer->shape.size()) {
      Report("TIR-BUFFER",
             absl::StrCat("a ", what, " of buffer '", buffer->name, "' has ", indices.size(),
                          " indices for its ", buffer->shape.size(), " dimensions"));
      return;
    }
    if (guarded_ > 0 || indices.empty()) return;  // what a condition protects is not judged
    int64_t lo = 0, hi = 0, size = 0;
    if (!OffsetRange(*buffer, indices, &lo, &hi, &size)) return;
    if (lo < 0 || hi >= size) {
      Report("TIR-BOUNDS", absl::StrCat("a ", what, " of buffer '", buffer->name,
                                        "' reaches element ", lo < 0 ? lo : hi, " of its ", size));
    }
  }

  // ---- statements --------------------------------------------------------------------------
  void VisitStmt(const ir::Stmt& s) {
    if (s == nullptr) return;
    if (const auto* n = s.as<ir::LetStmtNode>()) {
      VisitExpr(n->value);
      Bind(n->var, "let");
      BindValue(n->var, n->value);
      VisitStmt(n->body);
      Unbind(n->var);
    } else if (const auto* n = s.as<ir::AttrStmtNode>()) {
      VisitExpr(n->value);
      VisitStmt(n->body);
    } else if (const auto* n = s.as<ir::AssertStmtNode>()) {
      VisitExpr(n->condition);
      CheckCondition(n->condition, "an assertion's condition");
      VisitStmt(n->body);
    } else if (const auto* n = s.as<ir::BufferStoreNode>()) {
      VisitExpr(n->value);
      for (const ir::PrimExpr& i : n->indices) VisitExpr(i);
      CheckAccess(n->buffer, n->indices, n->value->dtype, "store");
    } else if (const auto* n = s.as<ir::AllocateNode>()) {
      CheckBufferFields(n->buffer);
      Bind(n->buffer->data, "allocation");
      VisitStmt(n->body);
      Unbind(n->buffer->data);
    } else if (const auto* n = s.as<ir::ForNode>()) {
      VisitFor(*n);
    } else if (const auto* n = s.as<ir::WhileNode>()) {
      VisitExpr(n->condition);
      CheckCondition(n->condition, "a while loop's condition");
      ++guarded_;
      VisitStmt(n->body);
      --guarded_;
    } else if (const auto* n = s.as<ir::IfThenElseNode>()) {
      VisitExpr(n->condition);
      CheckCondition(n->condition, "an if's condition");
      ++guarded_;
      VisitStmt(n->then_case);
      VisitStmt(n->else_case);
      --guarded_;
    } else if (const auto* n = s.as<ir::SeqStmtNode>()) {
      for (const ir::Stmt& c : n->seq) VisitStmt(c);
    } else if (const auto* n = s.as<ir::EvaluateNode>()) {
      VisitExpr(n->value);
    } else if (const auto* n = s.as<ir::BlockRealizeNode>()) {
      VisitRealize(*n);
    } else if (const auto* n = s.as<ir::BlockNode>()) {
      Report("TIR-BLOCK", absl::StrCat("block '", n->name, "' is not under a block realize"));
    }
  }

  void VisitFor(const ir::ForNode& f) {
    VisitExpr(f.min);
    VisitExpr(f.extent);
    if (!f.loop_var->dtype.is_integral()) {
      Report("TIR-DTYPE", absl::StrCat("loop variable '", f.loop_var->name, "' is ",
                                       f.loop_var->dtype.ToString(), ", not an integer"));
    }
    Bind(f.loop_var, "loop");
    BindRange(f.loop_var, f.min, f.extent);
    VisitStmt(f.body);
    Unbind(f.loop_var);
  }

  void VisitRealize(const ir::BlockRealizeNode& r) {
    const ir::BlockNode& b = *r.block;
    for (const ir::PrimExpr& v : r.iter_values) VisitExpr(v);
    VisitExpr(r.predicate);
    CheckCondition(r.predicate, absl::StrCat("block '", b.name, "''s predicate").c_str());
    if (r.iter_values.size() != b.iter_vars.size()) {
      Report("TIR-BLOCK",
             absl::StrCat("block '", b.name, "' has ", b.iter_vars.size(),
                          " iterators but is realized with ", r.iter_values.size(), " values"));
    }
    const int64_t* always = ir::AsConstInt(r.predicate);
    const bool guarded = r.predicate != nullptr && (always == nullptr || *always == 0);
    if (guarded) ++guarded_;
    for (const ir::IterVar& iv : b.iter_vars) {
      VisitExpr(iv->dom->min);
      VisitExpr(iv->dom->extent);
      Bind(iv->var, "block iterator");
      BindRange(iv->var, iv->dom->min, iv->dom->extent);
    }
    for (const ir::Buffer& a : b.alloc_buffers) {
      CheckBufferFields(a);
      Bind(a->data, "block allocation");
    }
    for (const ir::MatchBufferRegion& m : b.match_buffers) {
      for (const ir::Range& range : m->source->region) {
        VisitExpr(range->min);
        VisitExpr(range->extent);
      }
      Bind(m->buffer->data, "match buffer");
    }
    for (const auto* regions : {&b.reads, &b.writes}) {
      for (const ir::BufferRegion& region : *regions) {
        for (const ir::Range& range : region->region) {
          VisitExpr(range->min);
          VisitExpr(range->extent);
        }
      }
    }
    VisitStmt(b.init);
    VisitStmt(b.body);
    for (const ir::MatchBufferRegion& m : b.match_buffers) Unbind(m->buffer->data);
    for (const ir::Buffer& a : b.alloc_buffers) Unbind(a->data);
    for (const ir::IterVar& iv : b.iter_vars) Unbind(iv->var);
    if (guarded) --guarded_;
  }

  const std::string function_;
  std::vector<TirViolation>* out_;
  std::unordered_map<const ir::Object*, int> bound_;  // variable -> how many scopes bind it
  std::unordered_set<const ir::Object*> reported_unbound_, reported_buffers_, seen_;
  arith::Analyzer analyzer_;
  int guarded_ = 0;  // inside a condition (if, predicate, select, if_then_else, while)
};

}  // namespace

std::string TirViolation::ToString() const {
  return absl::StrCat("[", rule, "] in '", function, "': ", message);
}

std::vector<TirViolation> FindTirViolations(const std::string& name, const ir::PrimFunc& func) {
  std::vector<TirViolation> out;
  Verifier(name, &out).Run(*func);
  return out;
}

absl::Status VerifyPrimFunc(const std::string& name, const ir::PrimFunc& func) {
  std::vector<TirViolation> found = FindTirViolations(name, func);
  if (found.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(
      found, "\n", [](std::string* out, const TirViolation& v) { out->append(v.ToString()); }));
}

absl::Status VerifyPrimFuncs(const ir::IRModule& mod) {
  std::vector<std::string> messages;
  for (const auto& [name, entry] : mod->functions) {
    const ir::ObjectRef& func = entry.second;
    if (func.as<ir::PrimFuncNode>() == nullptr) continue;
    absl::Status s = VerifyPrimFunc(name, func.as_ref<ir::PrimFuncNode>());
    if (!s.ok()) messages.emplace_back(s.message());
  }
  if (messages.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(messages, "\n"));
}

std::vector<std::string> BufferShapeProblems(const ir::BufferNode& b) {
  std::vector<std::string> problems;
  if (b.shape.size() > static_cast<size_t>(ir::kMaxTensorRank)) {
    problems.push_back(absl::StrCat("buffer '", b.name, "' has ", b.shape.size(),
                                    " dimensions: more than the ", ir::kMaxTensorRank,
                                    " a tensor may have"));
    return problems;
  }
  int64_t bytes = std::max(1, b.dtype.bits() * b.dtype.lanes() / 8);
  bool overflow = false;
  for (size_t i = 0; i < b.shape.size(); ++i) {
    const int64_t* c = ir::AsConstInt(b.shape[i]);
    if (c == nullptr) continue;
    if (*c < 0) {
      problems.push_back(absl::StrCat("buffer '", b.name, "' dimension ", i, " is ", *c,
                                      ": a dimension is never negative"));
    } else if (!overflow && __builtin_mul_overflow(bytes, *c, &bytes)) {
      overflow = true;
      problems.push_back(absl::StrCat("buffer '", b.name, "' (", b.shape.size(), " dimensions, ",
                                      b.dtype.ToString(),
                                      ") is larger than 2^63 bytes at dimension ", i));
    }
  }
  return problems;
}

absl::Status VerifyBufferShapes(const ir::IRModule& mod) {
  for (const auto& [name, entry] : mod->functions) {
    const auto* f = entry.second.as<ir::PrimFuncNode>();
    if (f == nullptr) continue;
    for (const auto& [param, buffer] : f->buffer_map) {
      std::vector<std::string> problems = BufferShapeProblems(*buffer);
      if (!problems.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("[TIR-BUFFER] in '", name, "': ", problems.front()));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status VerifyTypes(const ir::IRModule& mod) {
  std::vector<std::string> messages;
  for (const auto& [name, entry] : mod->functions) {
    const auto* f = entry.second.as<ir::PrimFuncNode>();
    if (f == nullptr) continue;
    for (const TirViolation& v : FindTirViolations(name, entry.second.as_ref<ir::PrimFuncNode>())) {
      if (v.rule == "TIR-DTYPE") messages.push_back(v.ToString());
    }
  }
  if (messages.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(messages, "\n"));
}

}  // namespace kiln::tir
