#include "compiler/relax/block_builder.h"

#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/relax/op_registry.h"
#include "compiler/relax/struct_info.h"
#include "runtime/support/status_macros.h"

namespace kiln::ir::relax {
namespace {

// A dimension is code every pass and the kernels write out; real models' are a few terms.
constexpr int64_t kMaxDimensionTerms = 2000;
// Tuples in tuples: a model nests a few levels (a KV cache of layers of pairs). Passes look at a
// binding's StructInfo whole, so a tuple nested n deep taken apart level by level costs n^2.
constexpr int kMaxTupleNesting = 256;

int TupleNesting(const StructInfo& sinfo) {
  const auto* t = sinfo.as<TupleStructInfoNode>();
  return t != nullptr ? t->nesting : 0;
}

// The rank of the first tensor in `sinfo` of more than kMaxTensorRank dimensions, or -1. Each
// StructInfo node is looked at once per builder (`checked` holds them, so no address is reused):
// aliases of a wide tuple cost nothing.
using CheckedSInfo = std::unordered_map<const void*, StructInfo>;
int64_t RankOverLimit(const StructInfo& sinfo, CheckedSInfo* checked) {
  if (!sinfo || !checked->emplace(sinfo.get(), sinfo).second) return -1;
  if (const auto* t = sinfo.as<TensorStructInfoNode>()) {
    return t->ndim > ir::kMaxTensorRank ? t->ndim : -1;
  }
  if (const auto* t = sinfo.as<TupleStructInfoNode>()) {
    for (const StructInfo& f : t->fields) {
      if (int64_t r = RankOverLimit(f, checked); r >= 0) return r;
    }
  }
  if (const auto* f = sinfo.as<FuncStructInfoNode>()) {
    if (f->params) {
      for (const StructInfo& p : *f->params) {
        if (int64_t r = RankOverLimit(p, checked); r >= 0) return r;
      }
    }
    return RankOverLimit(f->ret, checked);
  }
  return -1;
}

std::string TooDeep(const StructInfo& sinfo) {
  return absl::StrCat("tuples nested ", TupleNesting(sinfo), " levels deep (more than ",
                      kMaxTupleNesting, ")");
}

// What makes `sinfo` one no model means, said of it ("has tuples nested 300 levels deep ...",
// "is a tensor of 100 dimensions ..."), or "".
std::string OverLimits(const StructInfo& sinfo, CheckedSInfo* checked) {
  if (!sinfo) return "";
  if (TupleNesting(sinfo) > kMaxTupleNesting) return "has " + TooDeep(sinfo);
  if (int64_t rank = RankOverLimit(sinfo, checked); rank >= 0) {
    return absl::StrCat("is a tensor of ", rank, " dimensions: more than the ", ir::kMaxTensorRank,
                        " a tensor may have");
  }
  return "";
}

bool IsBoolScalar(const StructInfo& s) {
  if (const auto* p = s.as<PrimStructInfoNode>()) return p->dtype.is_bool();
  if (const auto* t = s.as<TensorStructInfoNode>()) {
    return (t->dtype.is_bool() || t->dtype.is_void()) && (t->ndim == 0 || t->ndim == -1);
  }
  return false;
}

std::string NameOf(const Expr& callee) {
  if (const auto* op = callee.as<OpNode>()) return op->name;
  if (const auto* gv = callee.as<GlobalVarNode>()) return absl::StrCat("'", gv->name_hint, "'");
  if (const auto* v = callee.as<VarNode>()) return absl::StrCat("'", v->name_hint, "'");
  if (const auto* e = callee.as<ExternFuncNode>()) return absl::StrCat("'", e->global_symbol, "'");
  return NodeKindName(callee->kind());
}

}  // namespace

class BlockBuilder::Impl {
 public:
  explicit Impl(IRModule context) : context_(std::move(context)) {
    ctx_.module = context_.get();
    ctx_.analyzer = &analyzer_;
  }

  // ---- Scopes and blocks -------------------------------------------------------------------

  // A function body or SeqExpr under construction: finished blocks, the open one, and the
  // variables (Relax and shape) it defines.
  struct Scope {
    std::vector<BindingBlock> finished;
    std::optional<bool> open_block_is_dataflow;
    std::vector<Binding> open_bindings;
    std::unordered_set<const Object*> defined;
  };

  void PushScope() { scopes_.emplace_back(); }
  Scope PopScope() {
    Scope s = std::move(scopes_.back());
    scopes_.pop_back();
    return s;
  }
  Scope& Top() { return scopes_.back(); }

  void Define(const Object* var) {
    if (!scopes_.empty()) Top().defined.insert(var);
  }
  bool InScope(const Object* var, size_t num_scopes) const {
    for (size_t i = 0; i < num_scopes && i < scopes_.size(); ++i) {
      if (scopes_[i].defined.count(var) > 0) return true;
    }
    return false;
  }

  const Scope& Top() const { return scopes_.back(); }
  bool BlockOpen() const { return !scopes_.empty() && Top().open_block_is_dataflow.has_value(); }
  bool InDataflowBlock() const { return BlockOpen() && *Top().open_block_is_dataflow; }

  void BeginBlock(bool dataflow) {
    if (scopes_.empty()) PushScope();
    if (BlockOpen()) CloseBlock();
    Top().open_block_is_dataflow = dataflow;
  }
  // Moves the open block (if any) to the finished list; returns it.
  BindingBlock CloseBlock() {
    Scope& s = Top();
    if (!s.open_block_is_dataflow) return nullptr;
    BindingBlock block =
        Make<BindingBlockNode>(*s.open_block_is_dataflow, std::move(s.open_bindings));
    s.open_bindings.clear();
    s.open_block_is_dataflow.reset();
    s.finished.push_back(block);
    return block;
  }

  // ---- Error context -----------------------------------------------------------------------

  absl::Status Error(absl::string_view message) const {
    std::string where;
    if (!functions_.empty())
      where = absl::StrCat("in function '", absl::StrJoin(functions_, "' > '"), "'");
    if (!binding_.empty())
      absl::StrAppend(&where, where.empty() ? "in" : ",", " binding '", binding_, "'");
    return absl::InvalidArgumentError(where.empty() ? std::string(message)
                                                    : absl::StrCat(where, ": ", message));
  }
  absl::Status Error(const absl::Status& status) const { return Error(status.message()); }

  // ---- StructInfo of leaves ----------------------------------------------------------------

  absl::StatusOr<StructInfo> GlobalSignature(const GlobalVarNode& gv) {
    if (resolver_) {
      absl::StatusOr<StructInfo> sinfo = resolver_(gv);
      if (!sinfo.ok()) return Error(sinfo.status());
      return sinfo;
    }
    if (!context_) return StructInfo(ObjectSInfo());
    ObjectRef func = context_->Lookup(gv.name_hint);
    if (!func) return Error(absl::StrCat("no function '", gv.name_hint, "' in the module"));
    if (const auto* f = func.as<FunctionNode>()) {
      if (f->struct_info()) return f->struct_info();
      if (f->ret_struct_info) return FunctionStructInfo(*f, nullptr);
      return Error(absl::StrCat("the return StructInfo of '", gv.name_hint,
                                "' is unknown: annotate it or normalize the module"));
    }
    return StructInfo(ObjectSInfo());  // a PrimFunc: opaque to Relax
  }

  absl::StatusOr<StructInfo> SInfo(const Expr& e) {
    if (const auto* gv = e.as<GlobalVarNode>()) return GlobalSignature(*gv);
    if (!e->struct_info()) {
      if (const auto* v = e.as<VarNode>()) {
        return Error(absl::StrCat("variable '", v->name_hint,
                                  "' is used but has no StructInfo: it is unbound or used before "
                                  "its binding"));
      }
      return Error(absl::StrCat("a ", NodeKindName(e->kind()), " has no StructInfo"));
    }
    return e->struct_info();
  }

  // ---- Normalization -----------------------------------------------------------------------

  // Returns `e` as a leaf, binding it to a fresh variable in the open block if it is not one.
  absl::StatusOr<Expr> NormalizeLeaf(const Expr& e) {
    KILN_ASSIGN_OR_RETURN(Expr value, NormalizeValue(e));
    if (IsLeaf(value) && !value.as<OpNode>()) return value;
    if (!BlockOpen()) {
      return Error(absl::StrCat("a nested ", NodeKindName(value->kind()),
                                " needs a binding, but no block is open"));
    }
    KILN_ASSIGN_OR_RETURN(StructInfo sinfo, SInfo(value));
    Var var = InDataflowBlock() ? MakeDataflowVar("lv", sinfo) : MakeVar("lv", sinfo);
    Top().open_bindings.push_back(MakeBinding(var, value));
    Define(var.get());
    return Expr(var);
  }

  absl::Status NormalizeLeaves(const std::vector<Expr>& in, std::vector<Expr>* out, bool* changed) {
    out->clear();
    out->reserve(in.size());
    for (const Expr& e : in) {
      KILN_ASSIGN_OR_RETURN(Expr n, NormalizeLeaf(e));
      *changed |= n != e;
      out->push_back(std::move(n));
    }
    return absl::OkStatus();
  }

  // Returns `e` in binding-value form: a leaf, or a non-leaf whose children are leaves.
  absl::StatusOr<Expr> NormalizeValue(const Expr& e) {
    if (!e) return Error("a null expression");
    switch (e->kind()) {
      case NodeKind::kRelaxVar:
      case NodeKind::kDataflowVar:
      case NodeKind::kGlobalVar: {
        KILN_RETURN_IF_ERROR(SInfo(e).status());
        return e;
      }
      case NodeKind::kConstant: {
        const auto* c = e.as<ConstantNode>();
        if (!e->struct_info()) {
          std::vector<PrimExpr> dims;
          for (int64_t d : c->shape) dims.push_back(IntImm(DataType::Int(64), d));
          e->SetStructInfoOnce(TensorSInfo(std::move(dims), c->dtype));
        }
        return e;
      }
      case NodeKind::kShapeExpr: {
        const auto* s = e.as<ShapeExprNode>();
        for (size_t i = 0; i < s->values.size(); ++i) {
          if (!s->values[i] || !s->values[i]->dtype.is_integral()) {
            return Error(absl::StrCat("shape dimension ", i, " must be an integer expression"));
          }
        }
        e->SetStructInfoOnce(ShapeSInfo(s->values));
        return e;
      }
      case NodeKind::kPrimValue: {
        const auto* p = e.as<PrimValueNode>();
        if (!p->value) return Error("a PrimValue without a value");
        e->SetStructInfoOnce(PrimSInfo(p->value->dtype, p->value));
        return e;
      }
      case NodeKind::kRelaxStringImm:
      case NodeKind::kDataTypeImm:
        e->SetStructInfoOnce(ObjectSInfo());
        return e;
      case NodeKind::kExternFunc:
        e->SetStructInfoOnce(
            Make<FuncStructInfoNode>(std::nullopt, ObjectSInfo(), false, kDeriveFromSinfoArgs));
        return e;
      case NodeKind::kOp:
        return Error(absl::StrCat("operator '", e.as<OpNode>()->name,
                                  "' used as a value: operators may only be called"));
      case NodeKind::kTuple:
        return NormalizeTuple(e);
      case NodeKind::kRelaxCall:
        return NormalizeCall(e);
      case NodeKind::kTupleGetItem:
        return NormalizeTupleGetItem(e);
      case NodeKind::kIf:
        return NormalizeIf(e);
      case NodeKind::kSeqExpr:
        return FlattenSeq(e);
      case NodeKind::kFunction:
        return NormalizeFunction(e.as_ref<FunctionNode>(), "");
      default:
        return Error(
            absl::StrCat("unexpected ", NodeKindName(e->kind()), " in a Relax expression"));
    }
  }

  absl::StatusOr<Expr> NormalizeTuple(const Expr& e) {
    const auto* t = e.as<TupleNode>();
    std::vector<Expr> fields;
    bool changed = false;
    KILN_RETURN_IF_ERROR(NormalizeLeaves(t->fields, &fields, &changed));
    Expr out = changed ? MakeTuple(fields) : e;
    if (!out->struct_info()) {
      std::vector<StructInfo> sinfos;
      for (const Expr& f : fields) {
        KILN_ASSIGN_OR_RETURN(StructInfo s, SInfo(f));
        sinfos.push_back(std::move(s));
      }
      StructInfo sinfo = TupleSInfo(std::move(sinfos));
      if (TupleNesting(sinfo) > kMaxTupleNesting) return Error(TooDeep(sinfo));
      out->SetStructInfoOnce(std::move(sinfo));
    }
    return out;
  }

  absl::StatusOr<Expr> NormalizeCall(const Expr& e) {
    const auto* call = e.as<CallNode>();
    if (!call->op) return Error("a call without a callee");
    Expr op = call->op;
    bool changed = false;
    if (!op.as<OpNode>() && !op.as<ExternFuncNode>() && !op.as<GlobalVarNode>() &&
        !op.as<VarNode>()) {
      KILN_ASSIGN_OR_RETURN(op, NormalizeLeaf(op));
      changed = true;
    }
    std::vector<Expr> args;
    KILN_RETURN_IF_ERROR(NormalizeLeaves(call->args, &args, &changed));
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].as<OpNode>()) return Error("an operator passed as an argument");
    }
    Expr out = changed ? MakeCall(op, args, call->sinfo_args, call->attrs) : e;
    const auto* out_call = out.as<CallNode>();

    bool pure = true;
    StructInfo result;
    if (const auto* o = op.as<OpNode>()) {
      const OpInfo* info = LookupOp(o->name);
      if (info == nullptr) return Error(absl::StrCat("unknown operator '", o->name, "'"));
      pure = info->pure;
      if (!out->struct_info()) {
        absl::StatusOr<StructInfo> inferred = InferOpCall(*out_call, ctx_);
        if (!inferred.ok()) return Error(inferred.status());
        result = *inferred;
      }
    } else if (op.as<ExternFuncNode>()) {
      pure = false;  // call_packed: opaque, may have side effects
      if (call->sinfo_args.size() > 1) return Error("a packed call takes at most one sinfo_arg");
      result = call->sinfo_args.empty() ? ObjectSInfo() : call->sinfo_args[0];
    } else {
      KILN_ASSIGN_OR_RETURN(StructInfo callee, SInfo(op));
      const auto* func = callee.as<FuncStructInfoNode>();
      if (func == nullptr) {
        if (op.as<GlobalVarNode>() && callee.as<ObjectStructInfoNode>()) {
          pure = false;  // a PrimFunc called directly
          result = ObjectSInfo();
        } else {
          return Error(
              absl::StrCat("callee ", NameOf(op), " is not a function: ", ToString(callee)));
        }
      } else {
        pure = func->purity;
        if (!out->struct_info()) {
          if (!func->derive_func.empty()) {
            result = call->sinfo_args.empty() ? ObjectSInfo() : call->sinfo_args[0];
          } else {
            std::vector<StructInfo> arg_sinfos;
            for (const Expr& a : args) {
              KILN_ASSIGN_OR_RETURN(StructInfo s, SInfo(a));
              arg_sinfos.push_back(std::move(s));
            }
            absl::StatusOr<StructInfo> derived =
                DeriveCallResult(*func, arg_sinfos, NameOf(op), &analyzer_);
            if (!derived.ok()) return Error(derived.status());
            result = *derived;
          }
        }
      }
    }
    if (!pure && InDataflowBlock()) {
      return Error(absl::StrCat("impure call to ", NameOf(op),
                                " inside a dataflow block (dataflow blocks must be pure)"));
    }
    if (result) out->SetStructInfoOnce(result);
    return out;
  }

  absl::StatusOr<Expr> NormalizeTupleGetItem(const Expr& e) {
    const auto* tgi = e.as<TupleGetItemNode>();
    KILN_ASSIGN_OR_RETURN(Expr tuple, NormalizeLeaf(tgi->tuple));
    Expr out = tuple != tgi->tuple ? Make<TupleGetItemNode>(tuple, tgi->index) : e;
    if (out->struct_info()) return out;
    KILN_ASSIGN_OR_RETURN(StructInfo s, SInfo(tuple));
    if (s.as<ObjectStructInfoNode>()) {
      out->SetStructInfoOnce(ObjectSInfo());
      return out;
    }
    const auto* t = s.as<TupleStructInfoNode>();
    if (t == nullptr) {
      return Error(absl::StrCat("TupleGetItem on a value that is not a tuple: ", ToString(s)));
    }
    if (tgi->index < 0 || tgi->index >= static_cast<int>(t->fields.size())) {
      return Error(absl::StrCat("TupleGetItem index ", tgi->index,
                                " is out of range for a tuple of ", t->fields.size(), " fields"));
    }
    out->SetStructInfoOnce(t->fields[tgi->index]);
    return out;
  }

  absl::StatusOr<Expr> NormalizeIf(const Expr& e) {
    const auto* n = e.as<IfNode>();
    if (InDataflowBlock()) return Error("an If inside a dataflow block (dataflow is branch-free)");
    KILN_ASSIGN_OR_RETURN(Expr cond, NormalizeLeaf(n->cond));
    KILN_ASSIGN_OR_RETURN(StructInfo cond_sinfo, SInfo(cond));
    if (!IsBoolScalar(cond_sinfo)) {
      return Error(
          absl::StrCat("the If condition must be a boolean scalar, got ", ToString(cond_sinfo)));
    }
    KILN_ASSIGN_OR_RETURN(Expr t, NormalizeScope(n->true_branch));
    KILN_ASSIGN_OR_RETURN(Expr f, NormalizeScope(n->false_branch));
    bool changed = cond != n->cond || t != n->true_branch || f != n->false_branch;
    Expr out = changed ? Make<IfNode>(cond, t, f) : e;
    out->SetStructInfoOnce(StructInfoLCA(t->struct_info(), f->struct_info(), &analyzer_));
    return out;
  }

  // A SeqExpr in binding position: its bindings join the open block, its body is the value.
  absl::StatusOr<Expr> FlattenSeq(const Expr& e) {
    const auto* seq = e.as<SeqExprNode>();
    if (!BlockOpen()) return NormalizeScope(e);
    bool outer_dataflow = InDataflowBlock();
    for (const BindingBlock& block : seq->blocks) {
      if (outer_dataflow && !block->is_dataflow()) {
        return Error(
            "a SeqExpr with an ordinary binding block cannot be flattened into a "
            "dataflow block");
      }
      bool switch_kind = block->is_dataflow() != InDataflowBlock();
      if (switch_kind) BeginBlock(block->is_dataflow());
      for (const Binding& b : block->bindings) KILN_RETURN_IF_ERROR(NormalizeBinding(b));
      if (switch_kind) BeginBlock(outer_dataflow);
    }
    return NormalizeValue(seq->body);
  }

  // A new scope whose result is a SeqExpr: function bodies and If branches.
  absl::StatusOr<Expr> NormalizeScope(const Expr& e) {
    size_t outer_scopes = scopes_.size();
    PushScope();
    const auto* seq = e.as<SeqExprNode>();
    absl::StatusOr<Expr> body;
    if (seq != nullptr) {
      for (const BindingBlock& block : seq->blocks) {
        BeginBlock(block->is_dataflow());
        for (const Binding& b : block->bindings) {
          absl::Status s = NormalizeBinding(b);
          if (!s.ok()) {
            PopScope();
            return s;
          }
        }
        CloseBlock();
      }
    }
    // The result is bound, if need be, in an ordinary block: a DataflowVar may not leave its
    // dataflow block.
    BeginBlock(false);
    body = NormalizeLeaf(seq != nullptr ? seq->body : e);
    CloseBlock();
    Scope scope = PopScope();
    if (!body.ok()) return body.status();
    std::vector<BindingBlock> blocks = Consolidate(std::move(scope.finished));
    KILN_ASSIGN_OR_RETURN(StructInfo body_sinfo, SInfo(*body));
    // Variables defined in this scope mean nothing outside it.
    StructInfo sinfo = EraseToWellDefined(
        body_sinfo,
        [&](const ir::VarNode* v) { return InScope(v, outer_scopes) || !scope.defined.count(v); },
        [&](const VarNode* v) { return InScope(v, outer_scopes) || !scope.defined.count(v); });

    Expr out;
    if (seq != nullptr && *body == seq->body && SameBlocks(blocks, seq->blocks)) {
      out = e;
    } else {
      if (seq != nullptr) ReuseUnchangedBlocks(seq->blocks, &blocks);
      out = MakeSeq(std::move(blocks), *body);
    }
    out->SetStructInfoOnce(sinfo);
    return out;
  }

  // Merges adjacent blocks of the same kind and drops empty ones (normal form, criterion 4).
  static std::vector<BindingBlock> Consolidate(std::vector<BindingBlock> blocks) {
    std::vector<BindingBlock> out;
    for (BindingBlock& b : blocks) {
      if (b->bindings.empty()) continue;
      if (!out.empty() && out.back()->is_dataflow() == b->is_dataflow()) {
        std::vector<Binding> merged = out.back()->bindings;
        merged.insert(merged.end(), b->bindings.begin(), b->bindings.end());
        out.back() = Make<BindingBlockNode>(b->is_dataflow(), std::move(merged));
      } else {
        out.push_back(std::move(b));
      }
    }
    return out;
  }
  static bool SameBindings(const BindingBlock& a, const BindingBlock& b) {
    return a->is_dataflow() == b->is_dataflow() && a->bindings == b->bindings;
  }
  static bool SameBlocks(const std::vector<BindingBlock>& a, const std::vector<BindingBlock>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!SameBindings(a[i], b[i])) return false;
    }
    return true;
  }
  static void ReuseUnchangedBlocks(const std::vector<BindingBlock>& original,
                                   std::vector<BindingBlock>* blocks) {
    for (size_t i = 0; i < blocks->size() && i < original.size(); ++i) {
      if (SameBindings((*blocks)[i], original[i])) (*blocks)[i] = original[i];
    }
  }

  absl::Status NormalizeBinding(const Binding& b) {
    if (!b->var && !b.as<MatchCastNode>()) return Error("a VarBinding without a variable");
    std::string saved = binding_;
    binding_ = b->var ? b->var->name_hint : "_";
    absl::Status s = b.as<MatchCastNode>() ? NormalizeMatchCast(b) : NormalizeVarBinding(b);
    binding_ = saved;
    return s;
  }

  absl::Status CheckVarKind(const Var& var) {
    if (var->is_dataflow() && !InDataflowBlock()) {
      return Error(
          absl::StrCat("DataflowVar '", var->name_hint, "' is bound outside a dataflow block"));
    }
    return absl::OkStatus();
  }

  absl::Status NormalizeVarBinding(const Binding& b) {
    KILN_RETURN_IF_ERROR(CheckVarKind(b->var));
    if (b->value.as<FunctionNode>()) {
      // A local function may call itself through its variable: it is in scope in its body.
      Define(b->var.get());
      KILN_ASSIGN_OR_RETURN(Expr value,
                            NormalizeFunction(b->value.as_ref<FunctionNode>(), b->var->name_hint));
      return Append(b, value);
    }
    KILN_ASSIGN_OR_RETURN(Expr value, NormalizeValue(b->value));
    return Append(b, value);
  }

  // Checks the variable's annotation against the value and appends the binding.
  absl::Status Append(const Binding& b, const Expr& value) {
    KILN_ASSIGN_OR_RETURN(StructInfo sinfo, SInfo(value));
    if (LargestDimensionTerms(sinfo, kMaxDimensionTerms) > kMaxDimensionTerms) {
      return Error(absl::StrCat("a dimension of its value is an expression of more than ",
                                kMaxDimensionTerms,
                                " terms written out: no shape a model means (a symbolic "
                                "dimension squared again and again?)"));
    }
    if (std::string why = OverLimits(sinfo, &limits_checked_); !why.empty()) {
      return Error(absl::StrCat("its value ", why));
    }
    const Var& var = b->var;
    if (std::string why = OverLimits(var->struct_info(), &limits_checked_); !why.empty()) {
      return Error(absl::StrCat("the annotation ", why));
    }
    if (var->struct_info()) {
      BaseCheck check = CheckBaseOf(var->struct_info(), sinfo, &analyzer_);
      if (check == BaseCheck::kFail) {
        return Error(absl::StrCat("the annotation ", ToString(var->struct_info()),
                                  " does not match the value's ", ToString(sinfo)));
      }
      if (check == BaseCheck::kLessSpecific) {
        return Error(absl::StrCat("the value's ", ToString(sinfo),
                                  " is less specific than the annotation ",
                                  ToString(var->struct_info()), "; use R.match_cast"));
      }
    } else {
      var->SetStructInfoOnce(sinfo);
    }
    Top().open_bindings.push_back(value == b->value ? b : MakeBinding(var, value));
    Define(var.get());
    return absl::OkStatus();
  }

  absl::Status NormalizeMatchCast(const Binding& b) {
    const auto* mc = b.as<MatchCastNode>();
    if (!mc->struct_info) return Error("a match_cast without a target StructInfo");
    if (b->var) KILN_RETURN_IF_ERROR(CheckVarKind(b->var));
    KILN_ASSIGN_OR_RETURN(Expr value, NormalizeLeaf(b->value));
    KILN_ASSIGN_OR_RETURN(StructInfo sinfo, SInfo(value));
    if (CheckBaseOf(mc->struct_info, sinfo, &analyzer_) == BaseCheck::kFail) {
      return Error(absl::StrCat("match_cast can never succeed: the value is ", ToString(sinfo),
                                ", the target ", ToString(mc->struct_info)));
    }
    // The target's lone, not yet bound shape variables become bound here.
    for (const ir::Var& v : BindableShapeVars(mc->struct_info)) {
      if (!InScope(v.get(), scopes_.size())) Define(v.get());
    }
    if (b->var) {
      if (b->var->struct_info()) {
        if (CheckBaseOf(b->var->struct_info(), mc->struct_info, &analyzer_) == BaseCheck::kFail) {
          return Error(absl::StrCat("the annotation ", ToString(b->var->struct_info()),
                                    " contradicts the match_cast target ",
                                    ToString(mc->struct_info)));
        }
      } else {
        b->var->SetStructInfoOnce(mc->struct_info);
      }
      Define(b->var.get());
    }
    Top().open_bindings.push_back(
        value == b->value ? b : MakeMatchCast(b->var, value, mc->struct_info));
    return absl::OkStatus();
  }

  // Declares parameters and the shape variables their annotations bind.
  absl::Status DeclareParams(const std::vector<Var>& params) {
    for (const Var& p : params) {
      if (!p) return Error("a null parameter");
      if (!p->struct_info()) {
        return Error(absl::StrCat("parameter '", p->name_hint, "' has no StructInfo annotation"));
      }
      if (p->is_dataflow()) {
        return Error(absl::StrCat("parameter '", p->name_hint, "' is a DataflowVar"));
      }
      if (std::string why = OverLimits(p->struct_info(), &limits_checked_); !why.empty()) {
        return Error(absl::StrCat("parameter '", p->name_hint, "' ", why));
      }
      Define(p.get());
      for (const ir::Var& v : BindableShapeVars(p->struct_info())) Define(v.get());
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Expr> NormalizeFunction(const Function& f, const std::string& name) {
    functions_.push_back(name.empty() ? "<lambda>" : name);
    std::string saved_binding = binding_;
    binding_.clear();
    absl::StatusOr<Expr> out = NormalizeFunctionBody(f);
    binding_ = saved_binding;
    functions_.pop_back();
    return out;
  }

  absl::StatusOr<Expr> NormalizeFunctionBody(const Function& f) {
    PushScope();
    absl::Status declared = DeclareParams(f->params);
    if (!declared.ok()) {
      PopScope();
      return declared;
    }
    absl::StatusOr<Expr> body = NormalizeScope(f->body);
    PopScope();
    if (!body.ok()) return body.status();
    StructInfo body_sinfo = (*body)->struct_info();
    if (f->ret_struct_info &&
        CheckBaseOf(f->ret_struct_info, body_sinfo, &analyzer_) == BaseCheck::kFail) {
      return Error(absl::StrCat("the body's ", ToString(body_sinfo),
                                " does not match the return annotation ",
                                ToString(f->ret_struct_info)));
    }
    Expr out = *body == f->body
                   ? Expr(f)
                   : Expr(MakeFunction(f->params, *body, f->ret_struct_info, f->is_pure, f->attrs));
    // The inferred return may only mention the parameters' shape variables.
    std::unordered_set<const Object*> sig;
    for (const Var& p : f->params) {
      for (const ir::Var& v : ShapeVarsIn(p->struct_info())) sig.insert(v.get());
    }
    StructInfo ret = EraseToWellDefined(
        body_sinfo,
        [&](const ir::VarNode* v) { return sig.count(v) > 0 || InScope(v, scopes_.size()); },
        [&](const VarNode* v) { return InScope(v, scopes_.size()); });
    out->SetStructInfoOnce(FunctionStructInfo(*f, ret));
    return out;
  }

  IRModule context_;
  arith::Analyzer analyzer_;
  CheckedSInfo limits_checked_;  // StructInfo nodes whose ranks were checked
  OpInferContext ctx_;
  GlobalResolver resolver_;
  std::vector<Scope> scopes_;
  std::vector<std::string> functions_;  // the enclosing functions, outermost first
  std::string binding_;                 // the binding being normalized
  // Open BeginFunction calls: the params and the scope depth they opened.
  struct OpenFunction {
    std::string name;
    std::vector<Var> params;
  };
  std::vector<OpenFunction> open_functions_;
};

BlockBuilder::BlockBuilder(IRModule context) : impl_(std::make_unique<Impl>(std::move(context))) {}
BlockBuilder::~BlockBuilder() = default;

void BlockBuilder::BeginFunction(const std::string& name, std::vector<Var> params) {
  impl_->functions_.push_back(name);
  impl_->PushScope();
  // Errors in the parameters are reported by EndFunction, which checks the whole function.
  (void)impl_->DeclareParams(params);
  impl_->open_functions_.push_back({name, std::move(params)});
}

absl::StatusOr<Function> BlockBuilder::EndFunction(const Expr& result, StructInfo ret, bool is_pure,
                                                   Attrs attrs) {
  if (impl_->open_functions_.empty()) return impl_->Error("EndFunction without BeginFunction");
  Impl::OpenFunction open = std::move(impl_->open_functions_.back());
  impl_->open_functions_.pop_back();
  impl_->CloseBlock();
  Impl::Scope scope = impl_->PopScope();
  impl_->functions_.pop_back();
  // Re-normalize the assembled function as a whole: checks parameters, infers the body's
  // StructInfo (the bindings are already normal and are kept as they are).
  Function draft = MakeFunction(open.params, MakeSeq(std::move(scope.finished), result),
                                std::move(ret), is_pure, std::move(attrs));
  KILN_ASSIGN_OR_RETURN(Expr normalized, impl_->NormalizeFunction(draft, open.name));
  return normalized.as_ref<FunctionNode>();
}

void BlockBuilder::BeginBindingBlock() { impl_->BeginBlock(false); }
void BlockBuilder::BeginDataflowBlock() { impl_->BeginBlock(true); }

absl::StatusOr<BindingBlock> BlockBuilder::EndBlock() {
  if (!impl_->BlockOpen()) return impl_->Error("EndBlock without an open block");
  return impl_->CloseBlock();
}

absl::StatusOr<Var> BlockBuilder::Emit(const Expr& expr, const std::string& name_hint) {
  if (!impl_->BlockOpen()) return impl_->Error("Emit without an open block");
  std::string name = name_hint.empty() ? "lv" : name_hint;
  Var var = impl_->InDataflowBlock() ? MakeDataflowVar(name, nullptr) : MakeVar(name, nullptr);
  KILN_RETURN_IF_ERROR(EmitBinding(MakeBinding(var, expr)));
  return var;
}

absl::StatusOr<Var> BlockBuilder::EmitOutput(const Expr& expr, const std::string& name_hint) {
  if (!impl_->BlockOpen()) return impl_->Error("EmitOutput without an open block");
  Var var = MakeVar(name_hint.empty() ? "gv" : name_hint, nullptr);
  KILN_RETURN_IF_ERROR(EmitBinding(MakeBinding(var, expr)));
  return var;
}

absl::StatusOr<Var> BlockBuilder::EmitMatchCast(const Expr& value, const StructInfo& sinfo,
                                                const std::string& name_hint) {
  if (!impl_->BlockOpen()) return impl_->Error("EmitMatchCast without an open block");
  std::string name = name_hint.empty() ? "lv" : name_hint;
  Var var = impl_->InDataflowBlock() ? MakeDataflowVar(name, nullptr) : MakeVar(name, nullptr);
  KILN_RETURN_IF_ERROR(EmitBinding(MakeMatchCast(var, value, sinfo)));
  return var;
}

absl::Status BlockBuilder::EmitBinding(const Binding& binding) {
  if (!impl_->BlockOpen()) return impl_->Error("EmitBinding without an open block");
  if (!binding) return impl_->Error("a null binding");
  return impl_->NormalizeBinding(binding);
}

absl::StatusOr<Expr> BlockBuilder::Normalize(const Expr& expr) {
  return impl_->NormalizeValue(expr);
}

absl::StatusOr<Function> BlockBuilder::NormalizeFunction(const Function& func,
                                                         const std::string& name) {
  if (!func) return impl_->Error("a null function");
  KILN_ASSIGN_OR_RETURN(Expr out, impl_->NormalizeFunction(func, name));
  return out.as_ref<FunctionNode>();
}

absl::StatusOr<StructInfo> BlockBuilder::StructInfoOf(const Expr& expr) {
  return impl_->SInfo(expr);
}

arith::Analyzer* BlockBuilder::analyzer() { return &impl_->analyzer_; }

void BlockBuilder::SetGlobalResolver(GlobalResolver resolver) {
  impl_->resolver_ = std::move(resolver);
}

// ---- Module normalization --------------------------------------------------------------------

namespace {

// Normalizes functions on demand so that a call can use its callee's inferred return type;
// recursion without a return annotation is reported rather than looping.
class ModuleNormalizer {
 public:
  explicit ModuleNormalizer(IRModule mod) : mod_(std::move(mod)) {}

  absl::StatusOr<IRModule> Run() {
    for (const auto& [name, entry] : mod_->functions) {
      if (entry.second.as<FunctionNode>()) KILN_RETURN_IF_ERROR(NormalizeByName(name).status());
    }
    bool changed = false;
    IRModuleBuilder builder(mod_);
    for (const auto& [name, func] : done_) {
      const auto& entry = mod_->functions.at(name);
      if (func != entry.second) {
        builder.Update(entry.first, func);
        changed = true;
      }
    }
    return changed ? builder.Build() : mod_;
  }

 private:
  absl::StatusOr<Function> NormalizeByName(const std::string& name) {
    auto it = done_.find(name);
    if (it != done_.end()) return it->second;
    Function f = mod_->Lookup(name).as_ref<FunctionNode>();
    in_progress_.insert(name);
    BlockBuilder builder(mod_);
    builder.SetGlobalResolver([this](const GlobalVarNode& gv) { return Signature(gv); });
    absl::StatusOr<Function> normalized = builder.NormalizeFunction(f, name);
    in_progress_.erase(name);
    if (normalized.ok()) done_[name] = *normalized;
    return normalized;
  }

  absl::StatusOr<StructInfo> Signature(const GlobalVarNode& gv) {
    ObjectRef func = mod_->Lookup(gv.name_hint);
    if (!func) {
      return absl::InvalidArgumentError(
          absl::StrCat("no function '", gv.name_hint, "' in the module"));
    }
    const auto* f = func.as<FunctionNode>();
    if (f == nullptr) return StructInfo(ObjectSInfo());  // a PrimFunc
    if (f->ret_struct_info) return FunctionStructInfo(*f, nullptr);
    auto done = done_.find(gv.name_hint);
    if (done != done_.end()) return done->second->struct_info();
    if (in_progress_.count(gv.name_hint) > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", gv.name_hint,
                       "' is called recursively and so needs a return StructInfo annotation"));
    }
    KILN_ASSIGN_OR_RETURN(Function normalized, NormalizeByName(gv.name_hint));
    return normalized->struct_info();
  }

  IRModule mod_;
  std::map<std::string, Function> done_;
  std::set<std::string> in_progress_;
};

}  // namespace

absl::StatusOr<IRModule> NormalizeModule(const IRModule& mod) {
  if (!mod) return absl::InvalidArgumentError("NormalizeModule: null module");
  return ModuleNormalizer(mod).Run();
}

}  // namespace kiln::ir::relax
