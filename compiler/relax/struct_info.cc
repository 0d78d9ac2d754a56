#include "compiler/relax/struct_info.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/structural.h"
#include "compiler/ir/tir_functor.h"

namespace kiln::ir::relax {
namespace {

BaseCheck Worst(BaseCheck a, BaseCheck b) { return std::max(a, b); }

// The dimensions a shape-carrying StructInfo pins down, if any: a ShapeExpr's values, or the
// values of a shape Var's own ShapeStructInfo.
const std::vector<PrimExpr>* KnownDims(const Expr& shape) {
  if (!shape) return nullptr;
  if (const auto* s = shape.as<ShapeExprNode>()) return &s->values;
  if (const auto* sinfo = shape->struct_info().as<ShapeStructInfoNode>()) {
    return sinfo->values ? &*sinfo->values : nullptr;
  }
  return nullptr;
}

BaseCheck CheckDim(const PrimExpr& base, const PrimExpr& derived, arith::Analyzer* ana) {
  if (base == derived || ana->CanProveEqual(base, derived)) return BaseCheck::kPass;
  const int64_t* a = AsConstInt(base);
  const int64_t* b = AsConstInt(derived);
  if (a != nullptr && b != nullptr) return BaseCheck::kFail;  // two different constants
  if (ana->CanProve(Binary(NodeKind::kNE, base, derived))) return BaseCheck::kFail;
  return BaseCheck::kUnprovable;
}

BaseCheck CheckDims(const std::vector<PrimExpr>* base, const std::vector<PrimExpr>* derived,
                    arith::Analyzer* ana) {
  if (base == nullptr) return BaseCheck::kPass;
  if (derived == nullptr) return BaseCheck::kLessSpecific;
  if (base->size() != derived->size()) return BaseCheck::kFail;
  BaseCheck result = BaseCheck::kPass;
  for (size_t i = 0; i < base->size(); ++i) {
    result = Worst(result, CheckDim((*base)[i], (*derived)[i], ana));
  }
  return result;
}

BaseCheck CheckNdim(int base, int derived) {
  if (base == -1) return BaseCheck::kPass;
  if (derived == -1) return BaseCheck::kLessSpecific;
  return base == derived ? BaseCheck::kPass : BaseCheck::kFail;
}

bool DimsEqual(const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b,
               arith::Analyzer* ana) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i] && !ana->CanProveEqual(a[i], b[i])) return false;
  }
  return true;
}

bool UsesOnly(const PrimExpr& e, const ShapeVarPredicate& in_scope) {
  bool ok = true;
  PostOrderVisitOnce(e, [&](const PrimExpr& sub) {
    if (const auto* v = sub.as<ir::VarNode>()) ok = ok && in_scope(v);
  });
  return ok;
}

bool AllUseOnly(const std::vector<PrimExpr>& dims, const ShapeVarPredicate& in_scope) {
  return std::all_of(dims.begin(), dims.end(),
                     [&](const PrimExpr& d) { return UsesOnly(d, in_scope); });
}

// Calls `on_dim(dim, is_binding_position)` for every PrimExpr inside `sinfo`.
void ForEachDim(const StructInfo& sinfo, const std::function<void(const PrimExpr&, bool)>& on_dim) {
  if (!sinfo) return;
  if (const auto* p = sinfo.as<PrimStructInfoNode>()) {
    if (p->value) on_dim(p->value, true);
  } else if (const auto* s = sinfo.as<ShapeStructInfoNode>()) {
    if (s->values) {
      for (const PrimExpr& v : *s->values) on_dim(v, true);
    }
  } else if (const auto* t = sinfo.as<TensorStructInfoNode>()) {
    // A shape Var refers to an existing value: its dimensions are uses, not bindings.
    if (const auto* shape = t->shape.as<ShapeExprNode>()) {
      for (const PrimExpr& v : shape->values) on_dim(v, true);
    }
  } else if (const auto* t = sinfo.as<TupleStructInfoNode>()) {
    for (const StructInfo& f : t->fields) ForEachDim(f, on_dim);
  } else if (const auto* f = sinfo.as<FuncStructInfoNode>()) {
    // A function type's shape variables are its own (bound per call): they bind nothing here.
    std::function<void(const PrimExpr&, bool)> as_use = [&](const PrimExpr& d, bool) {
      on_dim(d, false);
    };
    if (f->params) {
      for (const StructInfo& p : *f->params) ForEachDim(p, as_use);
    }
    ForEachDim(f->ret, as_use);
  }
}

}  // namespace

int64_t LargestDimensionTerms(const StructInfo& sinfo, int64_t cap) {
  std::unordered_map<const void*, int64_t> terms;  // by node, saturating at cap + 1
  auto of = [&](const PrimExpr& e) { return e ? terms.at(e.get()) : 0; };
  int64_t largest = 0;
  ForEachDim(sinfo, [&](const PrimExpr& dim, bool) {
    PostOrderVisitOnce(dim, [&](const PrimExpr& e) {
      int64_t n = 1;
      if (const auto* bin = e.as<ir::BinaryNode>()) {
        n += of(bin->a) + of(bin->b);
      } else if (const auto* cast = e.as<ir::CastNode>()) {
        n += of(cast->value);
      } else if (const auto* no = e.as<ir::NotNode>()) {
        n += of(no->a);
      } else if (const auto* sel = e.as<ir::SelectNode>()) {
        n += of(sel->condition) + of(sel->true_value) + of(sel->false_value);
      } else if (const auto* call = e.as<ir::CallNode>()) {
        for (const PrimExpr& arg : call->args) n += of(arg);
      }
      terms[e.get()] = std::min(n, cap + 1);
    });
    largest = std::max(largest, terms.at(dim.get()));
  });
  return largest;
}

BaseCheck CheckBaseOf(const StructInfo& base, const StructInfo& derived, arith::Analyzer* ana) {
  if (!base || base.as<ObjectStructInfoNode>()) return BaseCheck::kPass;
  if (!derived || derived.as<ObjectStructInfoNode>()) return BaseCheck::kLessSpecific;
  if (base->kind() != derived->kind()) return BaseCheck::kFail;

  if (const auto* b = base.as<PrimStructInfoNode>()) {
    const auto* d = derived.as<PrimStructInfoNode>();
    if (b->dtype != d->dtype) return BaseCheck::kFail;
    if (!b->value) return BaseCheck::kPass;
    if (!d->value) return BaseCheck::kLessSpecific;
    return CheckDim(b->value, d->value, ana);
  }
  if (const auto* b = base.as<ShapeStructInfoNode>()) {
    const auto* d = derived.as<ShapeStructInfoNode>();
    BaseCheck result = CheckNdim(b->ndim, d->ndim);
    if (result == BaseCheck::kFail || !b->values) return result;
    return Worst(result, CheckDims(&*b->values, d->values ? &*d->values : nullptr, ana));
  }
  if (const auto* b = base.as<TensorStructInfoNode>()) {
    const auto* d = derived.as<TensorStructInfoNode>();
    BaseCheck result = CheckNdim(b->ndim, d->ndim);
    if (!b->dtype.is_void()) {
      if (d->dtype.is_void()) {
        result = Worst(result, BaseCheck::kLessSpecific);
      } else if (b->dtype != d->dtype) {
        return BaseCheck::kFail;
      }
    }
    if (result == BaseCheck::kFail || !b->shape) return result;
    if (b->shape == d->shape) return result;
    const std::vector<PrimExpr>* base_dims = KnownDims(b->shape);
    if (base_dims == nullptr) {
      // The base's shape is a Var with unknown values: only that same Var is known to match.
      return Worst(result, d->shape ? BaseCheck::kUnprovable : BaseCheck::kLessSpecific);
    }
    return Worst(result, CheckDims(base_dims, KnownDims(d->shape), ana));
  }
  if (const auto* b = base.as<TupleStructInfoNode>()) {
    const auto* d = derived.as<TupleStructInfoNode>();
    if (b->fields.size() != d->fields.size()) return BaseCheck::kFail;
    BaseCheck result = BaseCheck::kPass;
    for (size_t i = 0; i < b->fields.size(); ++i) {
      result = Worst(result, CheckBaseOf(b->fields[i], d->fields[i], ana));
    }
    return result;
  }
  const auto* b = base.as<FuncStructInfoNode>();
  const auto* d = derived.as<FuncStructInfoNode>();
  BaseCheck result = BaseCheck::kPass;
  if (b->purity && !d->purity) return BaseCheck::kFail;
  if (!b->params) return result;
  if (!d->params) return BaseCheck::kLessSpecific;
  if (b->params->size() != d->params->size()) return BaseCheck::kFail;
  for (size_t i = 0; i < b->params->size(); ++i) {
    // Parameters are contravariant: the derived function must accept what the base accepts.
    result = Worst(result, CheckBaseOf((*d->params)[i], (*b->params)[i], ana));
  }
  return Worst(result, CheckBaseOf(b->ret, d->ret, ana));
}

StructInfo StructInfoLCA(const StructInfo& a, const StructInfo& b, arith::Analyzer* ana) {
  if (!a || !b || a->kind() != b->kind()) return ObjectSInfo();
  if (a == b) return a;
  if (const auto* x = a.as<PrimStructInfoNode>()) {
    const auto* y = b.as<PrimStructInfoNode>();
    if (x->dtype != y->dtype) return ObjectSInfo();
    bool same_value = x->value && y->value && ana->CanProveEqual(x->value, y->value);
    return same_value ? a : PrimSInfo(x->dtype);
  }
  if (const auto* x = a.as<ShapeStructInfoNode>()) {
    const auto* y = b.as<ShapeStructInfoNode>();
    if (x->values && y->values && DimsEqual(*x->values, *y->values, ana)) return a;
    return ShapeSInfoUnknown(x->ndim == y->ndim ? x->ndim : -1);
  }
  if (const auto* x = a.as<TensorStructInfoNode>()) {
    const auto* y = b.as<TensorStructInfoNode>();
    DataType dtype = x->dtype == y->dtype ? x->dtype : DataType::Void();
    int ndim = x->ndim == y->ndim ? x->ndim : -1;
    Expr shape;
    if (x->shape && x->shape == y->shape) {
      shape = x->shape;
    } else {
      const std::vector<PrimExpr>* xd = KnownDims(x->shape);
      const std::vector<PrimExpr>* yd = KnownDims(y->shape);
      if (xd != nullptr && yd != nullptr && DimsEqual(*xd, *yd, ana)) shape = MakeShape(*xd);
    }
    if (dtype == x->dtype && ndim == x->ndim && shape == x->shape) return a;
    return Make<TensorStructInfoNode>(shape, dtype, ndim);
  }
  if (const auto* x = a.as<TupleStructInfoNode>()) {
    const auto* y = b.as<TupleStructInfoNode>();
    if (x->fields.size() != y->fields.size()) return ObjectSInfo();
    std::vector<StructInfo> fields;
    for (size_t i = 0; i < x->fields.size(); ++i) {
      fields.push_back(StructInfoLCA(x->fields[i], y->fields[i], ana));
    }
    return TupleSInfo(std::move(fields));
  }
  const auto* x = a.as<FuncStructInfoNode>();
  const auto* y = b.as<FuncStructInfoNode>();
  if (StructuralEqual(a, b)) return a;
  // Different signatures: all that is common is "a function returning the join of the results".
  return Make<FuncStructInfoNode>(std::nullopt, StructInfoLCA(x->ret, y->ret, ana),
                                  x->purity && y->purity);
}

StructInfo EraseToWellDefined(const StructInfo& sinfo, const ShapeVarPredicate& shape_var_in_scope,
                              const RelaxVarPredicate& var_in_scope) {
  if (!sinfo) return sinfo;
  if (const auto* p = sinfo.as<PrimStructInfoNode>()) {
    if (!p->value || UsesOnly(p->value, shape_var_in_scope)) return sinfo;
    return PrimSInfo(p->dtype);
  }
  if (const auto* s = sinfo.as<ShapeStructInfoNode>()) {
    if (!s->values || AllUseOnly(*s->values, shape_var_in_scope)) return sinfo;
    return ShapeSInfoUnknown(s->ndim);
  }
  if (const auto* t = sinfo.as<TensorStructInfoNode>()) {
    if (!t->shape) return sinfo;
    if (const auto* var = t->shape.as<VarNode>()) {
      if (var_in_scope(var)) return sinfo;
      // The shape Var leaves scope; its known values may still be expressible.
      const std::vector<PrimExpr>* dims = KnownDims(t->shape);
      if (dims != nullptr && AllUseOnly(*dims, shape_var_in_scope)) {
        return Make<TensorStructInfoNode>(MakeShape(*dims), t->dtype, t->ndim);
      }
      return TensorSInfoUnknown(t->dtype, t->ndim);
    }
    const std::vector<PrimExpr>* dims = KnownDims(t->shape);
    if (dims == nullptr || AllUseOnly(*dims, shape_var_in_scope)) return sinfo;
    return TensorSInfoUnknown(t->dtype, t->ndim);
  }
  if (const auto* t = sinfo.as<TupleStructInfoNode>()) {
    std::vector<StructInfo> fields;
    bool changed = false;
    for (const StructInfo& f : t->fields) {
      fields.push_back(EraseToWellDefined(f, shape_var_in_scope, var_in_scope));
      changed |= fields.back() != f;
    }
    return changed ? TupleSInfo(std::move(fields)) : sinfo;
  }
  if (const auto* f = sinfo.as<FuncStructInfoNode>()) {
    // A function type's own parameter shape variables are always in scope within it.
    std::unordered_set<const ir::VarNode*> own;
    if (f->params) {
      for (const StructInfo& p : *f->params) {
        for (const ir::Var& v : BindableShapeVars(p)) own.insert(v.get());
      }
    }
    ShapeVarPredicate inner = [&](const ir::VarNode* v) {
      return own.count(v) > 0 || shape_var_in_scope(v);
    };
    StructInfo ret = EraseToWellDefined(f->ret, inner, var_in_scope);
    if (ret == f->ret) return sinfo;
    return Make<FuncStructInfoNode>(f->params, ret, f->purity, f->derive_func);
  }
  return sinfo;  // Object
}

std::vector<ir::Var> ShapeVarsIn(const StructInfo& sinfo) {
  std::vector<ir::Var> out;
  std::unordered_set<const ir::VarNode*> seen;
  ForEachDim(sinfo, [&](const PrimExpr& dim, bool) {
    PostOrderVisit(dim, [&](const PrimExpr& e) {
      if (const auto* v = e.as<ir::VarNode>(); v != nullptr && seen.insert(v).second) {
        out.push_back(e.as_ref<ir::VarNode>());
      }
    });
  });
  return out;
}

std::vector<ir::Var> BindableShapeVars(const StructInfo& sinfo) {
  std::vector<ir::Var> out;
  std::unordered_set<const ir::VarNode*> seen;
  ForEachDim(sinfo, [&](const PrimExpr& dim, bool binding_position) {
    const auto* v = dim.as<ir::VarNode>();
    if (binding_position && v != nullptr && seen.insert(v).second) {
      out.push_back(dim.as_ref<ir::VarNode>());
    }
  });
  return out;
}

void MatchShapeVars(const StructInfo& pattern, const StructInfo& value, ShapeVarMap* bound) {
  if (!pattern || !value || pattern->kind() != value->kind()) return;
  auto match_dims = [&](const std::vector<PrimExpr>* pat, const std::vector<PrimExpr>* val) {
    if (pat == nullptr || val == nullptr || pat->size() != val->size()) return;
    for (size_t i = 0; i < pat->size(); ++i) {
      const auto* v = (*pat)[i].as<ir::VarNode>();
      if (v != nullptr && bound->count(v) == 0) bound->emplace(v, (*val)[i]);
    }
  };
  if (const auto* p = pattern.as<PrimStructInfoNode>()) {
    const auto* v = value.as<PrimStructInfoNode>();
    if (p->value && v->value) {
      std::vector<PrimExpr> a{p->value}, b{v->value};
      match_dims(&a, &b);
    }
  } else if (const auto* p = pattern.as<ShapeStructInfoNode>()) {
    const auto* v = value.as<ShapeStructInfoNode>();
    if (p->values && v->values) match_dims(&*p->values, &*v->values);
  } else if (const auto* p = pattern.as<TensorStructInfoNode>()) {
    const auto* v = value.as<TensorStructInfoNode>();
    if (p->shape.as<ShapeExprNode>()) match_dims(KnownDims(p->shape), KnownDims(v->shape));
  } else if (const auto* p = pattern.as<TupleStructInfoNode>()) {
    const auto* v = value.as<TupleStructInfoNode>();
    for (size_t i = 0; i < p->fields.size() && i < v->fields.size(); ++i) {
      MatchShapeVars(p->fields[i], v->fields[i], bound);
    }
  }
}

StructInfo SubstituteShapeVars(const StructInfo& sinfo, const ShapeVarMap& map,
                               arith::Analyzer* ana) {
  if (!sinfo || map.empty()) return sinfo;
  auto subst = [&](const PrimExpr& e) {
    PrimExpr out = Substitute(e, [&](const ir::Var& v) -> PrimExpr {
      auto it = map.find(v.get());
      return it != map.end() ? it->second : PrimExpr();
    });
    return out == e ? e : ana->Simplify(out);
  };
  auto subst_all = [&](const std::vector<PrimExpr>& dims, bool* changed) {
    std::vector<PrimExpr> out;
    for (const PrimExpr& d : dims) {
      out.push_back(subst(d));
      *changed |= out.back() != d;
    }
    return out;
  };
  bool changed = false;
  if (const auto* p = sinfo.as<PrimStructInfoNode>()) {
    if (!p->value) return sinfo;
    PrimExpr v = subst(p->value);
    return v == p->value ? sinfo : PrimSInfo(p->dtype, v);
  }
  if (const auto* s = sinfo.as<ShapeStructInfoNode>()) {
    if (!s->values) return sinfo;
    std::vector<PrimExpr> values = subst_all(*s->values, &changed);
    return changed ? ShapeSInfo(std::move(values)) : sinfo;
  }
  if (const auto* t = sinfo.as<TensorStructInfoNode>()) {
    const auto* shape = t->shape.as<ShapeExprNode>();
    if (shape == nullptr) return sinfo;
    std::vector<PrimExpr> dims = subst_all(shape->values, &changed);
    return changed ? TensorSInfo(std::move(dims), t->dtype) : sinfo;
  }
  if (const auto* t = sinfo.as<TupleStructInfoNode>()) {
    std::vector<StructInfo> fields;
    for (const StructInfo& f : t->fields) {
      fields.push_back(SubstituteShapeVars(f, map, ana));
      changed |= fields.back() != f;
    }
    return changed ? TupleSInfo(std::move(fields)) : sinfo;
  }
  if (const auto* f = sinfo.as<FuncStructInfoNode>()) {
    StructInfo ret = SubstituteShapeVars(f->ret, map, ana);
    std::optional<std::vector<StructInfo>> params;
    if (f->params) {
      params.emplace();
      for (const StructInfo& p : *f->params) {
        params->push_back(SubstituteShapeVars(p, map, ana));
        changed |= params->back() != p;
      }
    }
    if (!changed && ret == f->ret) return sinfo;
    return Make<FuncStructInfoNode>(std::move(params), ret, f->purity, f->derive_func);
  }
  return sinfo;
}

absl::StatusOr<StructInfo> DeriveCallResult(const FuncStructInfoNode& func,
                                            const std::vector<StructInfo>& args,
                                            const std::string& callee, arith::Analyzer* ana) {
  if (!func.params) return func.ret ? func.ret : ObjectSInfo();
  const std::vector<StructInfo>& params = *func.params;
  if (params.size() != args.size()) {
    return absl::InvalidArgumentError(absl::StrCat(callee, " takes ", params.size(),
                                                   " arguments but is called with ", args.size()));
  }
  // Bind every parameter shape variable first (parameters may use each other's variables in any
  // order, criterion 6), then check each argument against its parameter.
  ShapeVarMap bound;
  for (size_t i = 0; i < params.size(); ++i) MatchShapeVars(params[i], args[i], &bound);
  for (size_t i = 0; i < params.size(); ++i) {
    StructInfo expected = SubstituteShapeVars(params[i], bound, ana);
    BaseCheck check = CheckBaseOf(expected, args[i], ana);
    if (check == BaseCheck::kFail) {
      return absl::InvalidArgumentError(absl::StrCat("argument ", i, " of ", callee, ": expected ",
                                                     ToString(expected), ", got ",
                                                     ToString(args[i])));
    }
    if (check == BaseCheck::kLessSpecific) {
      return absl::InvalidArgumentError(
          absl::StrCat("argument ", i, " of ", callee, ": expected ", ToString(expected), ", got ",
                       ToString(args[i]), ", which is less specific; add an R.match_cast"));
    }
  }
  StructInfo ret = SubstituteShapeVars(func.ret ? func.ret : ObjectSInfo(), bound, ana);
  // Variables of the callee's signature that the arguments did not pin down mean nothing here.
  std::unordered_set<const ir::VarNode*> own;
  for (const StructInfo& p : params) {
    for (const ir::Var& v : ShapeVarsIn(p)) own.insert(v.get());
  }
  return EraseToWellDefined(
      ret, [&](const ir::VarNode* v) { return own.count(v) == 0 || bound.count(v) > 0; },
      [](const VarNode*) { return true; });
}

StructInfo FunctionStructInfo(const FunctionNode& func, const StructInfo& inferred_ret) {
  std::vector<StructInfo> params;
  for (const Var& p : func.params) {
    params.push_back(p->struct_info() ? p->struct_info() : ObjectSInfo());
  }
  StructInfo ret = func.ret_struct_info ? func.ret_struct_info : inferred_ret;
  return FuncSInfo(std::move(params), ret ? ret : ObjectSInfo(), func.is_pure);
}

std::string ToString(const StructInfo& sinfo) {
  return sinfo ? DebugPrint(sinfo) : std::string("(unknown)");
}

std::optional<int64_t> StaticTensorBytes(const StructInfo& sinfo) {
  const auto* t = sinfo.as<TensorStructInfoNode>();
  const std::vector<ir::PrimExpr>* dims = t != nullptr ? t->dims() : nullptr;
  if (dims == nullptr || t->dtype.is_void()) return std::nullopt;
  int64_t bytes = (t->dtype.bits() * t->dtype.lanes() + 7) / 8;
  for (const ir::PrimExpr& d : *dims) {
    const int64_t* c = ir::AsConstInt(d);
    if (c == nullptr || *c < 0 || __builtin_mul_overflow(bytes, *c, &bytes)) return std::nullopt;
  }
  return bytes;
}

}  // namespace kiln::ir::relax
