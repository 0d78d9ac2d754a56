// Loop primitives: split, fuse, reorder, the loop kinds (parallel, vectorize, unroll, bind) and
// annotations.
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/ir/tir_functor.h"
#include "compiler/tir/schedule/ir_util.h"
#include "compiler/tir/schedule/schedule.h"

namespace kiln::tir {

using namespace ir;  // NOLINT: TIR rewriting
namespace su = schedule_util;

namespace {

bool Uses(const PrimExpr& e, const VarNode* var) {
  bool found = false;
  PostOrderVisit(e, [&](const PrimExpr& x) { found |= x.get() == var; });
  return found;
}

// `s` with `pred` conjoined to the predicate of every block realize directly inside it.
Stmt AddPredicate(const Stmt& s, const PrimExpr& pred) {
  std::map<const StmtNode*, Stmt> replacements;
  for (const BlockRealizeNode* r : su::ChildRealizes(s)) {
    replacements[r] = Make<BlockRealizeNode>(r->iter_values, su::And(r->predicate, pred), r->block);
  }
  return su::Rebuild(s, replacements);
}

// A block iter var driven by `loop` that is not spatial, if any: what parallel, vectorize and
// bind refuse.
std::string NonSpatialUse(const ForNode& loop) {
  for (const BlockRealizeNode* r : su::ChildRealizes(loop.body)) {
    for (size_t k = 0; k < r->iter_values.size(); ++k) {
      const IterVar& iv = r->block->iter_vars[k];
      if (iv->iter_kind != IterKind::kSpatial && Uses(r->iter_values[k], loop.loop_var.get())) {
        return absl::StrCat("it drives the ", IterKindName(iv->iter_kind), " iter var '",
                            iv->var->name, "' of block '", r->block->name, "'");
      }
    }
  }
  return "";
}

ObjectRef AnnotationObject(const AnnotationValue& value) {
  if (value.is_int) return IntImm(DataType::Int(32), value.int_value);
  return Make<StringImmNode>(value.str_value);
}

void RecordAnnotation(v1::TraceInstruction* inst, const AnnotationValue& value) {
  if (value.is_int) {
    inst->add_attrs()->set_int_(value.int_value);
  } else {
    inst->add_attrs()->set_str(value.str_value);
  }
}

Attrs WithoutAttr(const Attrs& attrs, const std::string& key) {
  Attrs out;
  for (const auto& kv : attrs) {
    if (kv.first != key) out.push_back(kv);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<LoopRV>> Schedule::Split(LoopRV loop, std::vector<Factor> factors) {
  absl::StatusOr<Var> var = LoopVar(loop);
  if (!var.ok()) return var.status();
  PrimFunc f = func();
  const auto* node = su::PathToLoop(f->body, var->get()).back().as<ForNode>();
  std::string what = absl::StrCat("split of loop '", (*var)->name, "'");
  if (node->for_kind != ForKind::kSerial) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": the loop is ", ForKindName(node->for_kind), "; only serial loops are split"));
  }
  if (factors.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": needs at least two factors"));
  }
  int inferred = -1;
  int64_t known = 1;
  std::vector<int64_t> values(factors.size(), 0);
  for (size_t k = 0; k < factors.size(); ++k) {
    if (factors[k].inferred()) {
      if (inferred >= 0) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": at most one factor is inferred"));
      }
      inferred = static_cast<int>(k);
      continue;
    }
    if (factors[k].sampled()) {
      absl::StatusOr<int64_t> v = Get(factors[k].rv());
      if (!v.ok()) return v.status();
      values[k] = *v;
    } else {
      values[k] = factors[k].value();
    }
    if (values[k] < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": factor ", k, " is ", values[k], "; factors must be positive"));
    }
    known *= values[k];
  }
  DataType t = (*var)->dtype;
  const int64_t* extent = AsConstInt(node->extent);
  std::vector<PrimExpr> extents(factors.size());
  bool exact = false;
  if (extent != nullptr) {
    if (inferred >= 0) values[inferred] = (*extent + known - 1) / known;
    int64_t product = inferred >= 0 ? known * values[inferred] : known;
    if (product < *extent) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": the factors' product ", product,
                                                     " is less than the extent ", *extent));
    }
    exact = product == *extent;
    for (size_t k = 0; k < factors.size(); ++k) extents[k] = IntImm(t, values[k]);
  } else {
    if (inferred < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": the extent is symbolic, so one factor must be inferred"));
    }
    for (size_t k = 0; k < factors.size(); ++k) {
      extents[k] = static_cast<int>(k) == inferred
                       ? FloorDiv(node->extent + IntImm(t, known - 1), IntImm(t, known))
                       : IntImm(t, values[k]);
    }
  }
  // loop var = min + ((v0 * e1 + v1) * e2 + v2) ...
  std::set<std::string> names = su::UsedNames(f);
  std::vector<Var> vars;
  PrimExpr fused;
  for (size_t k = 0; k < factors.size(); ++k) {
    vars.push_back(MakeVar(su::FreshName(absl::StrCat((*var)->name, "_", k), &names), t));
    fused = k == 0 ? PrimExpr(vars[0]) : su::Add(fused * extents[k], vars[k]);
  }
  PrimExpr value = su::Add(node->min, fused);
  Stmt body = Substitute(node->body, [&](const Var& v) -> PrimExpr {
    return v.get() == var->get() ? value : PrimExpr();
  });
  if (!exact) body = AddPredicate(body, fused < node->extent);
  for (size_t k = factors.size(); k-- > 0;) {
    body = MakeFor(vars[k], IntImm(t, 0), extents[k], ForKind::kSerial, body);
  }
  SetFunc(WithBody(f, su::Rebuild(f->body, {{node, body}})));

  v1::TraceInstruction* inst = Record("Split");
  inst->add_inputs()->set_rv(su::RvName(loop));
  for (const Factor& factor : factors) {
    if (factor.inferred()) {
      inst->add_inputs()->set_none(true);
    } else if (factor.sampled()) {
      inst->add_inputs()->set_rv(su::RvName(factor.rv()));
    } else {
      inst->add_inputs()->set_int_(factor.value());
    }
  }
  std::vector<LoopRV> out;
  for (const Var& v : vars) {
    out.push_back(NewLoop(v));
    inst->add_outputs(su::RvName(out.back()));
  }
  return out;
}

absl::StatusOr<LoopRV> Schedule::Fuse(std::vector<LoopRV> loops) {
  if (loops.size() < 2) return absl::InvalidArgumentError("fuse: needs at least two loops");
  PrimFunc f = func();
  std::vector<const ForNode*> nodes;
  std::vector<std::string> names;
  for (LoopRV l : loops) {
    absl::StatusOr<Var> var = LoopVar(l);
    if (!var.ok()) return var.status();
    nodes.push_back(su::PathToLoop(f->body, var->get()).back().as<ForNode>());
    names.push_back((*var)->name);
  }
  std::string what = absl::StrCat("fuse of loops ", absl::StrJoin(names, ", "));
  for (size_t k = 0; k < nodes.size(); ++k) {
    if (nodes[k]->for_kind != ForKind::kSerial) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, ": loop '", names[k], "' is ", ForKindName(nodes[k]->for_kind)));
    }
    if (k + 1 < nodes.size() && nodes[k]->body.get() != nodes[k + 1]) {
      return absl::FailedPreconditionError(absl::StrCat(
          what, ": loop '", names[k + 1], "' is not the only statement in the body of '", names[k],
          "'; fused loops must form a perfect nest, outermost first"));
    }
    for (size_t j = 0; j < k; ++j) {
      if (Uses(nodes[k]->min, nodes[j]->loop_var.get()) ||
          Uses(nodes[k]->extent, nodes[j]->loop_var.get())) {
        return absl::FailedPreconditionError(
            absl::StrCat(what, ": the range of '", names[k], "' depends on '", names[j], "'"));
      }
    }
  }
  DataType t = nodes[0]->loop_var->dtype;
  std::set<std::string> used = su::UsedNames(f);
  Var fused = MakeVar(su::FreshName(absl::StrJoin(names, "_") + "_fused", &used), t);
  PrimExpr extent = nodes[0]->extent;
  for (size_t k = 1; k < nodes.size(); ++k) {
    const int64_t* a = AsConstInt(extent);
    const int64_t* b = AsConstInt(nodes[k]->extent);
    extent = a && b ? IntImm(t, *a * *b) : extent * nodes[k]->extent;
  }
  // loop k = min_k + (fused // (product of the extents inside it)) % extent_k
  std::map<const VarNode*, PrimExpr> values;
  PrimExpr inner = IntImm(t, 1);
  for (size_t k = nodes.size(); k-- > 0;) {
    PrimExpr v = su::IsConst(inner, 1) ? PrimExpr(fused) : FloorDiv(fused, inner);
    if (k > 0) v = FloorMod(v, nodes[k]->extent);
    values[nodes[k]->loop_var.get()] = su::Add(nodes[k]->min, v);
    const int64_t* a = AsConstInt(inner);
    const int64_t* b = AsConstInt(nodes[k]->extent);
    inner = a && b ? IntImm(t, *a * *b) : inner * nodes[k]->extent;
  }
  Stmt body = Substitute(nodes.back()->body, [&](const Var& v) -> PrimExpr {
    auto it = values.find(v.get());
    return it == values.end() ? PrimExpr() : it->second;
  });
  body = MakeFor(fused, IntImm(t, 0), extent, ForKind::kSerial, body);
  SetFunc(WithBody(f, su::Rebuild(f->body, {{nodes[0], body}})));
  v1::TraceInstruction* inst = Record("Fuse");
  for (LoopRV l : loops) inst->add_inputs()->set_rv(su::RvName(l));
  LoopRV out = NewLoop(fused);
  inst->add_outputs(su::RvName(out));
  return out;
}

absl::Status Schedule::Reorder(std::vector<LoopRV> loops) {
  PrimFunc f = func();
  struct Named {
    const ForNode* node;
    size_t depth;
  };
  std::vector<Named> given;
  std::vector<std::string> names;
  for (LoopRV l : loops) {
    absl::StatusOr<Var> var = LoopVar(l);
    if (!var.ok()) return var.status();
    std::vector<Stmt> path = su::PathToLoop(f->body, var->get());
    given.push_back({path.back().as<ForNode>(), path.size()});
    names.push_back((*var)->name);
  }
  std::string what = absl::StrCat("reorder of loops ", absl::StrJoin(names, ", "));
  std::set<const ForNode*> distinct;
  for (const Named& n : given) {
    if (!distinct.insert(n.node).second) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": a loop is named twice"));
    }
  }
  if (given.empty()) return absl::OkStatus();
  // The chain from the outermost named loop down to the innermost, a perfect nest.
  auto outer = std::min_element(given.begin(), given.end(),
                                [](const Named& a, const Named& b) { return a.depth < b.depth; });
  std::vector<const ForNode*> chain = {outer->node};
  while (chain.size() < given.size() ||
         std::any_of(given.begin(), given.end(), [&](const Named& n) {
           return std::find(chain.begin(), chain.end(), n.node) == chain.end();
         })) {
    const auto* next = chain.back()->body.as<ForNode>();
    if (next == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, ": they are not one perfect nest (the body of '",
                       chain.back()->loop_var->name, "' is not a single loop)"));
    }
    chain.push_back(next);
  }
  for (size_t a = 0; a < chain.size(); ++a) {
    if (chain[a]->for_kind == ForKind::kThreadBinding) {
      return absl::FailedPreconditionError(absl::StrCat(what, ": loop '", chain[a]->loop_var->name,
                                                        "' is bound to ", chain[a]->thread_tag));
    }
    for (size_t b = 0; b < chain.size(); ++b) {
      if (a != b && (Uses(chain[a]->min, chain[b]->loop_var.get()) ||
                     Uses(chain[a]->extent, chain[b]->loop_var.get()))) {
        return absl::FailedPreconditionError(
            absl::StrCat(what, ": the range of '", chain[a]->loop_var->name, "' depends on '",
                         chain[b]->loop_var->name, "'"));
      }
    }
  }
  // The named loops take their chain positions in the order given.
  std::vector<const ForNode*> order = chain;
  std::vector<size_t> slots;
  for (size_t k = 0; k < chain.size(); ++k) {
    if (distinct.count(chain[k])) slots.push_back(k);
  }
  for (size_t k = 0; k < slots.size(); ++k) order[slots[k]] = given[k].node;
  Stmt body = chain.back()->body;
  for (size_t k = order.size(); k-- > 0;) body = su::WithLoopBody(*order[k], body);
  SetFunc(WithBody(f, su::Rebuild(f->body, {{chain[0], body}})));
  v1::TraceInstruction* inst = Record("Reorder");
  for (LoopRV l : loops) inst->add_inputs()->set_rv(su::RvName(l));
  return absl::OkStatus();
}

namespace {

// Sets a serial loop's kind, after the checks that kind needs.
absl::StatusOr<Stmt> WithKind(const ForNode& loop, ForKind kind, const std::string& thread) {
  std::string what = absl::StrCat(ForKindName(kind), " of loop '", loop.loop_var->name, "'");
  if (loop.for_kind != ForKind::kSerial) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": the loop is already ", ForKindName(loop.for_kind)));
  }
  if (kind != ForKind::kUnrolled) {
    std::string why = NonSpatialUse(loop);
    if (!why.empty()) return absl::FailedPreconditionError(absl::StrCat(what, ": ", why));
  }
  ForNode* copy = su::CopyFor(loop);
  Stmt owner(copy);
  copy->for_kind = kind;
  copy->thread_tag = thread;
  return owner;
}

}  // namespace

#define KILN_LOOP_KIND_PRIMITIVE(Method, Kind, Name)                             \
  absl::Status Schedule::Method(LoopRV loop) {                                   \
    absl::StatusOr<Var> var = LoopVar(loop);                                     \
    if (!var.ok()) return var.status();                                          \
    PrimFunc f = func();                                                         \
    const auto* node = su::PathToLoop(f->body, var->get()).back().as<ForNode>(); \
    absl::StatusOr<Stmt> changed = WithKind(*node, Kind, "");                    \
    if (!changed.ok()) return changed.status();                                  \
    SetFunc(WithBody(f, su::Rebuild(f->body, {{node, *changed}})));              \
    Record(Name)->add_inputs()->set_rv(su::RvName(loop));                        \
    return absl::OkStatus();                                                     \
  }

KILN_LOOP_KIND_PRIMITIVE(Parallel, ForKind::kParallel, "Parallel")
KILN_LOOP_KIND_PRIMITIVE(Vectorize, ForKind::kVectorized, "Vectorize")
KILN_LOOP_KIND_PRIMITIVE(Unroll, ForKind::kUnrolled, "Unroll")
#undef KILN_LOOP_KIND_PRIMITIVE

absl::Status Schedule::Bind(LoopRV loop, const std::string& thread_axis) {
  static const std::set<std::string> kAxes = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                              "threadIdx.x", "threadIdx.y", "threadIdx.z",
                                              "vthread.x",   "vthread.y",   "vthread.z"};
  if (!kAxes.count(thread_axis)) {
    return absl::InvalidArgumentError(absl::StrCat("bind: unknown thread axis '", thread_axis,
                                                   "' (expected blockIdx.*, threadIdx.* or "
                                                   "vthread.*)"));
  }
  absl::StatusOr<Var> var = LoopVar(loop);
  if (!var.ok()) return var.status();
  PrimFunc f = func();
  const auto* node = su::PathToLoop(f->body, var->get()).back().as<ForNode>();
  absl::StatusOr<Stmt> changed = WithKind(*node, ForKind::kThreadBinding, thread_axis);
  if (!changed.ok()) return changed.status();
  SetFunc(WithBody(f, su::Rebuild(f->body, {{node, *changed}})));
  v1::TraceInstruction* inst = Record("Bind");
  inst->add_inputs()->set_rv(su::RvName(loop));
  inst->add_attrs()->set_str(thread_axis);
  return absl::OkStatus();
}

namespace {

Stmt LoopWithAnnotations(const ForNode& loop, Attrs annotations) {
  ForNode* copy = su::CopyFor(loop);
  Stmt owner(copy);
  copy->annotations = CanonicalAttrs(std::move(annotations));
  return owner;
}

Stmt BlockWithAnnotations(const BlockNode& block, Attrs annotations) {
  BlockNode* copy = CopyBlock(block);
  Block owner(copy);
  copy->annotations = CanonicalAttrs(std::move(annotations));
  return owner;
}

}  // namespace

absl::Status Schedule::Annotate(LoopRV loop, const std::string& key, AnnotationValue value) {
  absl::StatusOr<Var> var = LoopVar(loop);
  if (!var.ok()) return var.status();
  if (key.empty()) return absl::InvalidArgumentError("annotate: the key is empty");
  PrimFunc f = func();
  const auto* node = su::PathToLoop(f->body, var->get()).back().as<ForNode>();
  Stmt changed =
      LoopWithAnnotations(*node, WithAttr(node->annotations, key, AnnotationObject(value)));
  SetFunc(WithBody(f, su::Rebuild(f->body, {{node, changed}})));
  v1::TraceInstruction* inst = Record("Annotate");
  inst->add_inputs()->set_rv(su::RvName(loop));
  inst->add_attrs()->set_str(key);
  RecordAnnotation(inst, value);
  return absl::OkStatus();
}

absl::Status Schedule::Annotate(BlockRV block, const std::string& key, AnnotationValue value) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return name.status();
  if (key.empty()) return absl::InvalidArgumentError("annotate: the key is empty");
  PrimFunc f = func();
  const BlockNode* node =
      su::PathToBlock(f->body, *name).back().as<BlockRealizeNode>()->block.get();
  Stmt changed =
      BlockWithAnnotations(*node, WithAttr(node->annotations, key, AnnotationObject(value)));
  SetFunc(WithBody(f, su::Rebuild(f->body, {{node, changed}})));
  v1::TraceInstruction* inst = Record("Annotate");
  inst->add_inputs()->set_rv(su::RvName(block));
  inst->add_attrs()->set_str(key);
  RecordAnnotation(inst, value);
  return absl::OkStatus();
}

absl::Status Schedule::Unannotate(LoopRV loop, const std::string& key) {
  absl::StatusOr<Var> var = LoopVar(loop);
  if (!var.ok()) return var.status();
  PrimFunc f = func();
  const auto* node = su::PathToLoop(f->body, var->get()).back().as<ForNode>();
  if (!GetAttr(node->annotations, key)) {
    return absl::NotFoundError(
        absl::StrCat("unannotate: loop '", (*var)->name, "' has no annotation '", key, "'"));
  }
  Stmt changed = LoopWithAnnotations(*node, WithoutAttr(node->annotations, key));
  SetFunc(WithBody(f, su::Rebuild(f->body, {{node, changed}})));
  v1::TraceInstruction* inst = Record("Unannotate");
  inst->add_inputs()->set_rv(su::RvName(loop));
  inst->add_attrs()->set_str(key);
  return absl::OkStatus();
}

absl::Status Schedule::Unannotate(BlockRV block, const std::string& key) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return name.status();
  PrimFunc f = func();
  const BlockNode* node =
      su::PathToBlock(f->body, *name).back().as<BlockRealizeNode>()->block.get();
  if (!GetAttr(node->annotations, key)) {
    return absl::NotFoundError(
        absl::StrCat("unannotate: block '", *name, "' has no annotation '", key, "'"));
  }
  Stmt changed = BlockWithAnnotations(*node, WithoutAttr(node->annotations, key));
  SetFunc(WithBody(f, su::Rebuild(f->body, {{node, changed}})));
  v1::TraceInstruction* inst = Record("Unannotate");
  inst->add_inputs()->set_rv(su::RvName(block));
  inst->add_attrs()->set_str(key);
  return absl::OkStatus();
}

}  // namespace kiln::tir
