// The schedule's state (random variables, the trace, the PRNG), the look-ups and sampling.
#include "compiler/tir/schedule/schedule.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/tir/schedule/ir_util.h"

namespace kiln::tir {

using namespace ir;  // NOLINT: TIR rewriting
namespace su = schedule_util;

namespace {

constexpr int kTraceVersion = 1;

void AddRv(v1::TraceInstruction* inst, const std::string& rv) { inst->add_inputs()->set_rv(rv); }

// Prime factors of n, smallest first, with multiplicity.
std::vector<int64_t> PrimeFactors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t p = 2; p * p <= n; ++p) {
    while (n % p == 0) {
      out.push_back(p);
      n /= p;
    }
  }
  if (n > 1) out.push_back(n);
  return out;
}

}  // namespace

absl::StatusOr<Schedule> Schedule::Create(IRModule mod, std::string func_name, uint64_t seed) {
  const auto* f = mod->Lookup(func_name).as<PrimFuncNode>();
  if (f == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("schedule: the module has no PrimFunc '", func_name, "'"));
  }
  std::set<std::string> names;
  for (const BlockNode* b : su::AllBlocks(f->body)) {
    if (!names.insert(b->name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("schedule: '", func_name, "' has two blocks named '", b->name,
                       "'; block names must be unique to be scheduled"));
    }
  }
  Schedule sch;
  sch.mod_ = std::move(mod);
  sch.func_name_ = std::move(func_name);
  sch.trace_.set_version(kTraceVersion);
  sch.trace_.set_func_name(sch.func_name_);
  // splitmix64 seeding: any seed, 0 included, gives a well-mixed state.
  sch.rng_state_ = seed;
  return sch;
}

PrimFunc Schedule::func() const { return mod_->Lookup(func_name_).as_ref<PrimFuncNode>(); }

void Schedule::SetFunc(PrimFunc f) {
  IRModuleBuilder builder(mod_);
  builder.Update(mod_->GetGlobalVar(func_name_), f);
  mod_ = builder.Build();
}

uint64_t Schedule::NextRandom() {
  // splitmix64: tiny, seedable and the same on every platform.
  uint64_t z = (rng_state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

v1::TraceInstruction* Schedule::Record(const char* kind) {
  v1::TraceInstruction* inst = trace_.add_instructions();
  inst->set_kind(kind);
  return inst;
}

BlockRV Schedule::NewBlock(std::string name) {
  blocks_.push_back(std::move(name));
  return BlockRV{static_cast<int>(blocks_.size()) - 1};
}

LoopRV Schedule::NewLoop(Var var) {
  loops_.push_back(std::move(var));
  return LoopRV{static_cast<int>(loops_.size()) - 1};
}

ExprRV Schedule::NewValue(int64_t value) {
  values_.push_back(value);
  return ExprRV{static_cast<int>(values_.size()) - 1};
}

absl::StatusOr<Var> Schedule::LoopVar(LoopRV loop) const {
  if (loop.id < 0 || loop.id >= static_cast<int>(loops_.size())) {
    return absl::InvalidArgumentError(absl::StrCat("schedule: no loop l", loop.id));
  }
  const Var& var = loops_[loop.id];
  if (su::PathToLoop(func()->body, var.get()).empty()) {
    return absl::NotFoundError(absl::StrCat("schedule: loop '", var->name, "' is no longer in '",
                                            func_name_, "' (a split or fuse replaced it)"));
  }
  return var;
}

absl::StatusOr<std::string> Schedule::BlockName(BlockRV block) const {
  if (block.id < 0 || block.id >= static_cast<int>(blocks_.size())) {
    return absl::InvalidArgumentError(absl::StrCat("schedule: no block b", block.id));
  }
  const std::string& name = blocks_[block.id];
  if (su::PathToBlock(func()->body, name).empty()) {
    return absl::NotFoundError(absl::StrCat("schedule: block '", name, "' is no longer in '",
                                            func_name_, "' (it was inlined)"));
  }
  return name;
}

absl::StatusOr<std::string> Schedule::LoopName(LoopRV loop) const {
  absl::StatusOr<Var> var = LoopVar(loop);
  if (!var.ok()) return var.status();
  return (*var)->name;
}

absl::StatusOr<int64_t> Schedule::Get(ExprRV value) const {
  if (value.id < 0 || value.id >= static_cast<int>(values_.size())) {
    return absl::InvalidArgumentError(absl::StrCat("schedule: no value v", value.id));
  }
  return values_[value.id];
}

absl::StatusOr<BlockRV> Schedule::GetBlock(const std::string& name) {
  if (su::PathToBlock(func()->body, name).empty()) {
    std::vector<std::string> names;
    for (const BlockNode* b : su::AllBlocks(func()->body)) names.push_back(b->name);
    return absl::NotFoundError(absl::StrCat("schedule: '", func_name_, "' has no block '", name,
                                            "' (blocks: ", absl::StrJoin(names, ", "), ")"));
  }
  BlockRV rv = NewBlock(name);
  v1::TraceInstruction* inst = Record("GetBlock");
  inst->add_attrs()->set_str(name);
  inst->add_outputs(su::RvName(rv));
  return rv;
}

absl::StatusOr<std::vector<LoopRV>> Schedule::GetLoops(BlockRV block) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return name.status();
  std::vector<Stmt> path = su::PathToBlock(func()->body, *name);
  std::vector<LoopRV> loops;
  v1::TraceInstruction* inst = Record("GetLoops");
  AddRv(inst, su::RvName(block));
  for (const ForNode* f : su::LoopsInScope(path)) {
    loops.push_back(NewLoop(f->loop_var));
    inst->add_outputs(su::RvName(loops.back()));
  }
  return loops;
}

namespace {

std::vector<std::string> ChildBlockNames(const Stmt& s) {
  std::vector<std::string> names;
  for (const BlockRealizeNode* r : su::ChildRealizes(s)) names.push_back(r->block->name);
  return names;
}

}  // namespace

absl::StatusOr<std::vector<BlockRV>> Schedule::GetChildBlocks(BlockRV block) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return name.status();
  std::vector<Stmt> path = su::PathToBlock(func()->body, *name);
  const auto* realize = path.back().as<BlockRealizeNode>();
  std::vector<BlockRV> out;
  v1::TraceInstruction* inst = Record("GetChildBlocks");
  AddRv(inst, su::RvName(block));
  for (const std::string& child : ChildBlockNames(realize->block->body)) {
    out.push_back(NewBlock(child));
    inst->add_outputs(su::RvName(out.back()));
  }
  return out;
}

absl::StatusOr<std::vector<BlockRV>> Schedule::GetChildBlocks(LoopRV loop) {
  absl::StatusOr<Var> var = LoopVar(loop);
  if (!var.ok()) return var.status();
  std::vector<Stmt> path = su::PathToLoop(func()->body, var->get());
  std::vector<BlockRV> out;
  v1::TraceInstruction* inst = Record("GetChildBlocks");
  AddRv(inst, su::RvName(loop));
  for (const std::string& child : ChildBlockNames(path.back().as<ForNode>()->body)) {
    out.push_back(NewBlock(child));
    inst->add_outputs(su::RvName(out.back()));
  }
  return out;
}

namespace {

// The blocks of `name`'s scope that it depends on (producers) or that depend on it.
std::vector<std::string> Neighbours(const PrimFunc& f, const std::string& name, bool producers) {
  std::vector<Stmt> path = su::PathToBlock(f->body, name);
  int scope = su::ScopeIndex(path);
  const BlockNode& self = *path.back().as<BlockRealizeNode>()->block;
  std::set<const BufferNode*> reads = su::LoadedBuffers(self);
  std::set<const BufferNode*> writes = su::StoredBuffers(self);
  std::vector<std::string> out;
  bool before = true;
  Stmt body = scope >= 0 ? path[scope].as<BlockNode>()->body : f->body;
  for (const BlockRealizeNode* r : su::ChildRealizes(body)) {
    const BlockNode& other = *r->block;
    if (other.name == name) {
      before = false;
      continue;
    }
    const std::set<const BufferNode*>& mine = producers ? reads : writes;
    std::set<const BufferNode*> theirs =
        producers ? su::StoredBuffers(other) : su::LoadedBuffers(other);
    bool linked = std::any_of(mine.begin(), mine.end(),
                              [&](const BufferNode* b) { return theirs.count(b) > 0; });
    if (linked && before == producers) out.push_back(other.name);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<BlockRV>> Schedule::GetProducers(BlockRV block) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return name.status();
  std::vector<BlockRV> out;
  v1::TraceInstruction* inst = Record("GetProducers");
  AddRv(inst, su::RvName(block));
  for (const std::string& n : Neighbours(func(), *name, true)) {
    out.push_back(NewBlock(n));
    inst->add_outputs(su::RvName(out.back()));
  }
  return out;
}

absl::StatusOr<std::vector<BlockRV>> Schedule::GetConsumers(BlockRV block) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return name.status();
  std::vector<BlockRV> out;
  v1::TraceInstruction* inst = Record("GetConsumers");
  AddRv(inst, su::RvName(block));
  for (const std::string& n : Neighbours(func(), *name, false)) {
    out.push_back(NewBlock(n));
    inst->add_outputs(su::RvName(out.back()));
  }
  return out;
}

// --- Sampling ---

absl::StatusOr<std::vector<ExprRV>> Schedule::SamplePerfectTile(
    LoopRV loop, int n, int64_t max_innermost_factor,
    std::optional<std::vector<int64_t>> decision) {
  absl::StatusOr<Var> var = LoopVar(loop);
  if (!var.ok()) return var.status();
  const auto* f = su::PathToLoop(func()->body, var->get()).back().as<ForNode>();
  const int64_t* extent = AsConstInt(f->extent);
  if (extent == nullptr || *extent < 1) {
    return absl::InvalidArgumentError(absl::StrCat("sample_perfect_tile: loop '", (*var)->name,
                                                   "' needs a constant positive extent"));
  }
  if (n < 1 || max_innermost_factor < 1) {
    return absl::InvalidArgumentError(
        "sample_perfect_tile: n and max_innermost_factor must be positive");
  }
  std::vector<int64_t> factors;
  if (decision.has_value()) {
    factors = *decision;
    int64_t product = 1;
    for (int64_t x : factors) product *= x;
    if (static_cast<int>(factors.size()) != n || product != *extent ||
        std::any_of(factors.begin(), factors.end(), [](int64_t x) { return x < 1; }) ||
        (n > 1 && factors.back() > max_innermost_factor)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sample_perfect_tile: decision [", absl::StrJoin(factors, ", "), "] is not ", n,
          " factors of ", *extent, " with the innermost at most ", max_innermost_factor));
    }
  } else {
    // The innermost: a divisor of the extent within the bound, uniformly; then each prime factor
    // of the rest goes to one of the outer positions, uniformly.
    std::vector<int64_t> divisors;
    for (int64_t d = 1; d <= std::min(*extent, max_innermost_factor); ++d) {
      if (*extent % d == 0) divisors.push_back(d);
    }
    factors.assign(n, 1);
    int64_t inner = n == 1 ? *extent : divisors[NextRandom() % divisors.size()];
    factors[n - 1] = inner;
    if (n > 1) {
      for (int64_t p : PrimeFactors(*extent / inner)) factors[NextRandom() % (n - 1)] *= p;
    }
  }
  std::vector<ExprRV> out;
  v1::TraceInstruction* inst = Record("SamplePerfectTile");
  AddRv(inst, su::RvName(loop));
  inst->add_attrs()->set_int_(n);
  inst->add_attrs()->set_int_(max_innermost_factor);
  inst->set_has_decision(true);
  for (int64_t x : factors) {
    inst->add_decision(x);
    out.push_back(NewValue(x));
    inst->add_outputs(su::RvName(out.back()));
  }
  return out;
}

absl::StatusOr<ExprRV> Schedule::SampleCategorical(std::vector<int64_t> candidates,
                                                   std::vector<double> probabilities,
                                                   std::optional<int64_t> decision) {
  if (candidates.empty() || candidates.size() != probabilities.size()) {
    return absl::InvalidArgumentError(
        "sample_categorical: needs as many probabilities as candidates, at least one");
  }
  double total = 0;
  for (double p : probabilities) {
    if (!(p >= 0)) return absl::InvalidArgumentError("sample_categorical: negative probability");
    total += p;
  }
  if (total <= 0) return absl::InvalidArgumentError("sample_categorical: probabilities sum to 0");
  int64_t index = 0;
  if (decision.has_value()) {
    if (*decision < 0 || *decision >= static_cast<int64_t>(candidates.size())) {
      return absl::InvalidArgumentError(absl::StrCat("sample_categorical: decision ", *decision,
                                                     " is not an index of the ", candidates.size(),
                                                     " candidates"));
    }
    index = *decision;
  } else {
    double x = static_cast<double>(NextRandom() >> 11) * 0x1.0p-53 * total;
    for (index = 0; index + 1 < static_cast<int64_t>(candidates.size()); ++index) {
      x -= probabilities[index];
      if (x < 0) break;
    }
  }
  ExprRV out = NewValue(candidates[index]);
  v1::TraceInstruction* inst = Record("SampleCategorical");
  for (int64_t c : candidates) inst->add_attrs()->set_int_(c);
  for (double p : probabilities) inst->add_attrs()->set_real(p);
  inst->set_has_decision(true);
  inst->add_decision(index);
  inst->add_outputs(su::RvName(out));
  return out;
}

absl::StatusOr<LoopRV> Schedule::SampleComputeLocation(BlockRV block,
                                                       std::optional<int64_t> decision) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return name.status();
  // Candidates: the loops of the first consumer in the same scope.
  std::vector<std::string> consumers = Neighbours(func(), *name, false);
  std::vector<Var> candidates;
  if (!consumers.empty()) {
    for (const ForNode* f : su::LoopsInScope(su::PathToBlock(func()->body, consumers[0]))) {
      candidates.push_back(f->loop_var);
    }
  }
  if (candidates.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("sample_compute_location: block '", *name, "' has no consumer inside loops"));
  }
  int64_t index;
  if (decision.has_value()) {
    if (*decision < 0 || *decision >= static_cast<int64_t>(candidates.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("sample_compute_location: decision ", *decision, " is not an index of the ",
                       candidates.size(), " loops of block '", *name, "''s consumer"));
    }
    index = *decision;
  } else {
    index = static_cast<int64_t>(NextRandom() % candidates.size());
  }
  LoopRV out = NewLoop(candidates[index]);
  v1::TraceInstruction* inst = Record("SampleComputeLocation");
  AddRv(inst, su::RvName(block));
  inst->set_has_decision(true);
  inst->add_decision(index);
  inst->add_outputs(su::RvName(out));
  return out;
}

}  // namespace kiln::tir
