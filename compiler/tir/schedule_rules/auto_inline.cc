#include "compiler/ir/tir_functor.h"
#include "compiler/tir/schedule_rules/rules.h"

namespace kiln::tir::rules {
namespace {

// A value cheap enough to recompute at every use: at most one arithmetic operation.
bool Cheap(const ir::BlockNode& block) {
  const auto* store = block.body.as<ir::BufferStoreNode>();
  if (store == nullptr) return false;
  int ops = 0;
  ir::PostOrderVisit(store->value, [&](const ir::PrimExpr& e) {
    if (!e.as<ir::VarNode>() && !e.as<ir::BufferLoadNode>() && !e.as<ir::IntImmNode>() &&
        !e.as<ir::FloatImmNode>() && !e.as<ir::CastNode>()) {
      ++ops;
    }
  });
  return ops <= 3;  // padding: if_then_else(bounds, load, 0) with its comparisons
}

}  // namespace

// AutoInline: elementwise blocks writing an intermediate, computed where they are read.
void AutoInline(Schedule& sch) {
  for (bool changed = true; changed;) {
    changed = false;
    for (const BlockInfo& info : Blocks(sch)) {
      if (info.has_reduce || info.writes_param || info.block->init || !info.plain ||
          !info.block->body.as<ir::BufferStoreNode>()) {
        continue;
      }
      absl::StatusOr<BlockRV> b = sch.GetBlock(info.name);
      if (!b.ok()) continue;
      bool into_elementwise = true;
      absl::StatusOr<std::vector<BlockRV>> consumers = sch.GetConsumers(*b);
      if (!consumers.ok() || consumers->empty()) continue;
      std::vector<BlockInfo> all = Blocks(sch);
      for (BlockRV c : *consumers) {
        const BlockInfo* ci = Find(all, *sch.BlockName(c));
        if (ci == nullptr || ci->has_reduce) into_elementwise = false;
      }
      if (!into_elementwise && !Cheap(*info.block)) continue;
      if (sch.ComputeInline(*b).ok()) {
        changed = true;
        break;
      }
    }
  }
}

}  // namespace kiln::tir::rules
