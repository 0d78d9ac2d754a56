#include "compiler/tir/schedule_rules/schedule_rules.h"

#include <set>
#include <string>

#include "compiler/tir/schedule_rules/rules.h"

namespace kiln::tir {

using rules::BlockInfo;

absl::Status ApplyScheduleRules(Schedule& sch, const target::CpuPolicy& policy,
                                const Decisions& decisions, UnsetDecisions unset) {
  rules::Sampler sampler(&sch, decisions, unset);
  rules::AutoInline(sch);
  std::set<std::string> placed;
  for (const BlockInfo& info : rules::Blocks(sch)) {
    if (placed.count(info.name) || !info.plain || !info.has_reduce) continue;
    const std::vector<BlockInfo> current = rules::Blocks(sch);
    const BlockInfo* now = rules::Find(current, info.name);
    if (now == nullptr || !now->plain) continue;
    const int last_spatial = rules::LastConstSpatial(*now);
    if (last_spatial < 0 || !(now->has_reuse || rules::VectorizableWindow(*now, last_spatial)))
      continue;
    absl::StatusOr<std::set<std::string>> tiled =
        rules::MultiLevelTiling(sch, sampler, *now, last_spatial, policy);
    if (!tiled.ok()) return tiled.status();
    placed.insert(tiled->begin(), tiled->end());
  }
  std::set<std::string> tiled_blocks = placed;
  for (const BlockInfo& info : rules::Blocks(sch)) {
    if (placed.count(info.name) || info.has_reduce || !info.plain || info.loops.empty()) continue;
    absl::StatusOr<BlockRV> b = sch.GetBlock(info.name);
    absl::StatusOr<std::vector<BlockRV>> consumers =
        b.ok() ? sch.GetConsumers(*b) : absl::StatusOr<std::vector<BlockRV>>(b.status());
    if (!consumers.ok() || consumers->size() != 1) continue;
    const std::string consumer = *sch.BlockName((*consumers)[0]);
    if (!tiled_blocks.count(consumer)) continue;
    const std::vector<BlockInfo> current = rules::Blocks(sch);
    const BlockInfo* now = rules::Find(current, info.name);
    if (now == nullptr) continue;
    if (absl::Status s = rules::RandomComputeLocation(sch, sampler, *now, consumer, policy);
        !s.ok())
      return s;
    placed.insert(info.name);
  }
  for (const BlockInfo& info : rules::Blocks(sch)) {
    if (placed.count(info.name)) continue;
    // Blocks another block's loops enclose (placed by compute-at) are left where they are.
    const std::vector<BlockInfo> current = rules::Blocks(sch);
    const BlockInfo* now = rules::Find(current, info.name);
    if (now == nullptr) continue;
    bool shared = false;
    for (const BlockInfo& other : current) {
      if (other.name != now->name && !now->loops.empty() && !other.loops.empty() &&
          other.loops.front() == now->loops.front()) {
        shared = true;
      }
    }
    if (shared) continue;
    if (now->has_reduce) {
      absl::StatusOr<bool> factored = rules::AddRFactor(sch, sampler, *now, policy);
      if (!factored.ok()) return factored.status();
      if (*factored) continue;
    }
    if (absl::Status s = rules::ParallelVectorize(sch, sampler, *now, policy); !s.ok()) return s;
  }
  return absl::OkStatus();
}

Decisions DecisionsOf(const v1::TraceProto& trace) {
  Decisions out;
  for (const v1::TraceInstruction& inst : trace.instructions()) {
    if (inst.has_decision())
      out.emplace_back(std::vector<int64_t>(inst.decision().begin(), inst.decision().end()));
  }
  return out;
}

}  // namespace kiln::tir
