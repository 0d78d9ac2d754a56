// Scheduling TensorIR (seeds/tensorir_rfc.txt): primitives that rewrite one PrimFunc of a
// module block by block, each checking its preconditions first. A primitive that fails returns
// an error naming what and where, and leaves the schedule as it was; one that succeeds leaves a
// valid program and appends an instruction to the trace.
//
// Blocks and loops are named by random variables (BlockRV, LoopRV), integers drawn by the
// sampling instructions by ExprRV. A BlockRV stands for a block name (unique in the function), a
// LoopRV for a loop variable: both stay valid across rewrites that keep the block or loop, and a
// loop that a split or fuse replaced is reported as gone.
//
//   Schedule sch = *Schedule::Create(mod, "matmul");
//   BlockRV c = *sch.GetBlock("C");
//   std::vector<LoopRV> loops = *sch.GetLoops(c);                 // i, j, k
//   std::vector<LoopRV> i = *sch.Split(loops[0], {Factor(), 4});  // i_0, i_1 (i_0 inferred)
//   sch.Parallel(i[0]);
//   sch.mod();    // the scheduled module
//   sch.trace();  // replayable (schedule/trace.h)
#ifndef KILN_COMPILER_TIR_SCHEDULE_SCHEDULE_H_
#define KILN_COMPILER_TIR_SCHEDULE_SCHEDULE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/ir/module.h"
#include "proto/kiln/v1/trace.pb.h"

namespace kiln::tir {

struct BlockRV {
  int id = -1;
};
struct LoopRV {
  int id = -1;
};
struct ExprRV {
  int id = -1;
};

// A split factor: a constant, a sampled integer, or absent (inferred from the loop's extent).
class Factor {
 public:
  Factor() = default;                                      // inferred
  Factor(int64_t value) : kind_(kConst), value_(value) {}  // NOLINT: implicit
  Factor(int value) : kind_(kConst), value_(value) {}      // NOLINT: implicit
  Factor(ExprRV rv) : kind_(kSampled), rv_(rv) {}          // NOLINT: implicit
  bool inferred() const { return kind_ == kInfer; }
  bool sampled() const { return kind_ == kSampled; }
  int64_t value() const { return value_; }
  ExprRV rv() const { return rv_; }

 private:
  enum Kind { kInfer, kConst, kSampled } kind_ = kInfer;
  int64_t value_ = 0;
  ExprRV rv_;
};

// An annotation value: an integer or a string.
struct AnnotationValue {
  AnnotationValue(int64_t v) : is_int(true), int_value(v) {}   // NOLINT: implicit
  AnnotationValue(int v) : is_int(true), int_value(v) {}       // NOLINT: implicit
  AnnotationValue(std::string v) : str_value(std::move(v)) {}  // NOLINT: implicit
  AnnotationValue(const char* v) : str_value(v) {}             // NOLINT: implicit
  bool is_int = false;
  int64_t int_value = 0;
  std::string str_value;
};

class Schedule {
 public:
  // Schedules the PrimFunc `func_name` of `mod`; `seed` drives the sampling instructions.
  static absl::StatusOr<Schedule> Create(ir::IRModule mod, std::string func_name,
                                         uint64_t seed = 1);

  const ir::IRModule& mod() const { return mod_; }
  ir::PrimFunc func() const;
  const std::string& func_name() const { return func_name_; }
  const v1::TraceProto& trace() const { return trace_; }

  // --- Look-ups ---
  absl::StatusOr<BlockRV> GetBlock(const std::string& name);
  // The loops around the block, outermost first (inside its enclosing block).
  absl::StatusOr<std::vector<LoopRV>> GetLoops(BlockRV block);
  // The blocks directly inside (not nested in another block), in program order.
  absl::StatusOr<std::vector<BlockRV>> GetChildBlocks(BlockRV block);
  absl::StatusOr<std::vector<BlockRV>> GetChildBlocks(LoopRV loop);
  // Blocks of the same scope that write what `block` reads (producers), or read what it writes.
  absl::StatusOr<std::vector<BlockRV>> GetProducers(BlockRV block);
  absl::StatusOr<std::vector<BlockRV>> GetConsumers(BlockRV block);
  // What the random variables stand for now.
  absl::StatusOr<std::string> BlockName(BlockRV block) const;
  absl::StatusOr<std::string> LoopName(LoopRV loop) const;
  absl::StatusOr<int64_t> Get(ExprRV value) const;

  // --- Sampling (decisions recorded in the trace; a given decision is checked and replayed) ---
  // `n` factors whose product is the loop's constant extent, the innermost at most
  // `max_innermost_factor` (for n = 1 the one factor is the extent).
  absl::StatusOr<std::vector<ExprRV>> SamplePerfectTile(
      LoopRV loop, int n, int64_t max_innermost_factor,
      std::optional<std::vector<int64_t>> decision = std::nullopt);
  // One of `candidates`, with the given probabilities.
  absl::StatusOr<ExprRV> SampleCategorical(std::vector<int64_t> candidates,
                                           std::vector<double> probabilities,
                                           std::optional<int64_t> decision = std::nullopt);
  // A loop of the block's first consumer where compute_at may place `block` (decision: its
  // index among those loops, outermost first).
  absl::StatusOr<LoopRV> SampleComputeLocation(BlockRV block,
                                               std::optional<int64_t> decision = std::nullopt);

  // --- Loops ---
  // Splits a serial loop into nested loops of the given extents, outermost first; one factor may
  // be inferred. When the product exceeds the extent, the blocks inside get a predicate.
  absl::StatusOr<std::vector<LoopRV>> Split(LoopRV loop, std::vector<Factor> factors);
  // Fuses a perfect nest of serial loops (outermost first) into one.
  absl::StatusOr<LoopRV> Fuse(std::vector<LoopRV> loops);
  // Puts loops of one perfect nest in the given order (outermost first); loops of the nest not
  // named keep their places.
  absl::Status Reorder(std::vector<LoopRV> loops);
  absl::Status Parallel(LoopRV loop);
  absl::Status Vectorize(LoopRV loop);
  absl::Status Unroll(LoopRV loop);
  // Binds a loop to a GPU thread axis ("blockIdx.x", "threadIdx.x", ...).
  absl::Status Bind(LoopRV loop, const std::string& thread_axis);
  absl::Status Annotate(LoopRV loop, const std::string& key, AnnotationValue value);
  absl::Status Annotate(BlockRV block, const std::string& key, AnnotationValue value);
  absl::Status Unannotate(LoopRV loop, const std::string& key);
  absl::Status Unannotate(BlockRV block, const std::string& key);

  // --- Blocks ---
  // Moves a producer block under `loop` of its consumers, computing only the part they read in
  // one iteration of the loop.
  absl::Status ComputeAt(BlockRV block, LoopRV loop);
  // Moves a consumer block under `loop` of its producers, consuming the part they write in one
  // iteration of the loop.
  absl::Status ReverseComputeAt(BlockRV block, LoopRV loop);
  // Substitutes an elementwise block's value into its consumers and removes it.
  absl::Status ComputeInline(BlockRV block);
  // Folds an elementwise consumer into its single producer and removes it.
  absl::Status ReverseComputeInline(BlockRV block);
  // A copy of the block's `read_index`-th read buffer in `scope`, made by a new block before it.
  absl::StatusOr<BlockRV> CacheRead(BlockRV block, int read_index, const std::string& scope);
  // The block writes a buffer in `scope` instead, copied to the original by a new block after.
  absl::StatusOr<BlockRV> CacheWrite(BlockRV block, int write_index, const std::string& scope);
  // Changes the storage scope of a buffer the block writes (allocated in the function).
  absl::Status SetScope(BlockRV block, int write_index, const std::string& scope);
  // Splits a reduction block's init into its own block placed before `loop`.
  absl::StatusOr<BlockRV> DecomposeReduction(BlockRV block, LoopRV loop);
  // Factors the reduction over `loop` out: a new block ("<name>_rf", returned) computes partial
  // results into a buffer with one more dimension (the loop's, at `factor_axis`), and the block
  // becomes a reduction of those partials.
  absl::StatusOr<BlockRV> RFactor(LoopRV loop, int factor_axis);

  // --- Layouts ---
  // Pads the strides of a buffer the block writes (allocated in the function) so that the
  // stride of dimension `axis` is `factor * k + offset`: rows that start on distinct cache sets
  // or banks.
  absl::Status StorageAlign(BlockRV block, int write_index, int axis, int factor, int offset);
  // Rewrites the layout of a buffer the block reads (`write` false) or writes: each dimension d
  // with inner_factors[d] > 1 is split into (i / f, i % f), then the dimensions so made are put
  // in `order` (a permutation of them). Every access in the function follows; e.g. packing a
  // (k, n) operand into (n / 16, k, 16) panels is inner_factors {1, 16}, order {1, 0, 2}.
  absl::Status TransformLayout(BlockRV block, int buffer_index, bool write,
                               std::vector<int64_t> inner_factors, std::vector<int> order);
  // Pads the iteration domain of an einsum-like block (each access indexes by plain iter vars)
  // to multiples of `padding` (one per iter var): the inputs are copied into zero-padded
  // buffers, the block computes into a padded output, and a copy block writes back the part
  // that exists.
  absl::Status PadEinsum(BlockRV block, std::vector<int64_t> padding);

  // --- Tensorization ---
  // Makes the loops from `loop` down, with the one block under them, the body of a new outer
  // block ("<name>_o", returned) whose iter vars are the outer parts of the block's.
  absl::StatusOr<BlockRV> Blockize(LoopRV loop);
  // Replaces the body of `block` (loops around one block, as Blockize makes it) with the
  // implementation of the registered tensor intrinsic `intrin` (schedule/tensor_intrin.h),
  // after checking that it computes what the intrinsic's description does.
  absl::Status Tensorize(BlockRV block, const std::string& intrin);
  // Blockize(loop), then Tensorize of the new block; returns it.
  absl::StatusOr<BlockRV> Tensorize(LoopRV loop, const std::string& intrin);

 private:
  Schedule() = default;
  // Random variables: what they stand for, checked; new ones.
  absl::StatusOr<ir::Var> LoopVar(LoopRV loop) const;
  BlockRV NewBlock(std::string name);
  LoopRV NewLoop(ir::Var var);
  ExprRV NewValue(int64_t value);
  // The function being scheduled, replaced (the module keeps its other functions).
  void SetFunc(ir::PrimFunc f);
  // Appends an instruction to the trace; inputs and outputs are named "b3", "l0", "v7".
  v1::TraceInstruction* Record(const char* kind);
  uint64_t NextRandom();

  ir::IRModule mod_;
  std::string func_name_;
  v1::TraceProto trace_;
  uint64_t rng_state_ = 0;
  std::vector<std::string> blocks_;  // BlockRV id -> block name
  std::vector<ir::Var> loops_;       // LoopRV id -> loop variable
  std::vector<int64_t> values_;      // ExprRV id -> value
};

}  // namespace kiln::tir

#endif  // KILN_COMPILER_TIR_SCHEDULE_SCHEDULE_H_
