#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compiler/codegen/fast_math.h"
#include "compiler/codegen/kernel_codegen.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/tir_functor.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "runtime/kernel_abi.h"

namespace kiln::codegen::kernel {

void KernelCodeGen::Stmt(const ir::Stmt& s) {
  if (!status_.ok()) return;
  if (!s) return (void)Fail(absl::StrCat(name_, ": a null statement"));
  if (const auto* seq = s.as<SeqStmtNode>()) {
    for (const ir::Stmt& x : seq->seq) Stmt(x);
  } else if (const auto* st = s.as<BufferStoreNode>()) {
    const BufferInfo* info = BufferOf(st->buffer);
    llvm::Value* value = info ? Expr(st->value) : nullptr;
    if (!value) return;
    DataType target = info->dtype.with_lanes(st->value->dtype.lanes());
    if (st->value->dtype != target) value = Cast(value, st->value->dtype, target);
    if (target.lanes() > 1) {  // a vector store: contiguous, or a scatter
      value = ToMemory(value, target);
      if (llvm::Value* base = ContiguousBase(*info, st->indices))
        return ContiguousStore(*info, base, value);
      llvm::Value* flat = FlatIndex(*info, st->indices);
      if (!flat) return;
      if (!flat->getType()->isVectorTy()) flat = b_.CreateVectorSplat(target.lanes(), flat);
      b_.CreateMaskedScatter(value, Address(*info, flat), llvm::Align(info->dtype.bytes()));
      return;
    }
    llvm::Value* flat = FlatIndex(*info, st->indices);
    if (!flat) return;
    llvm::Type* mem = MemType(info->dtype);
    if (info->dtype.is_bool()) value = b_.CreateZExt(value, i8_);
    Tag(b_.CreateStore(value, b_.CreateInBoundsGEP(mem, info->data, flat)), *info);
  } else if (const auto* f = s.as<ForNode>()) {
    For(*f);
  } else if (const auto* l = s.as<LetStmtNode>()) {
    llvm::Value* v = Expr(l->value);
    if (!v) return;
    vars_[l->var.get()] = v;
    Stmt(l->body);
  } else if (const auto* i = s.as<IfThenElseNode>()) {
    llvm::Value* cond = Expr(i->condition);
    if (!cond) return;
    llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn_);
    llvm::BasicBlock* else_bb =
        i->else_case ? llvm::BasicBlock::Create(ctx_, "else", fn_) : nullptr;
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "endif", fn_);
    b_.CreateCondBr(cond, then_bb, else_bb ? else_bb : done);
    b_.SetInsertPoint(then_bb);
    Stmt(i->then_case);
    b_.CreateBr(done);
    if (else_bb) {
      b_.SetInsertPoint(else_bb);
      Stmt(i->else_case);
      b_.CreateBr(done);
    }
    b_.SetInsertPoint(done);
  } else if (const auto* w = s.as<WhileNode>()) {
    llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx_, "while", fn_);
    llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "while_body", fn_);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "while_end", fn_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::Value* cond = Expr(w->condition);
    if (!cond) return;
    b_.CreateCondBr(cond, body, done);
    b_.SetInsertPoint(body);
    Stmt(w->body);
    b_.CreateBr(head);
    b_.SetInsertPoint(done);
  } else if (const auto* a = s.as<AssertStmtNode>()) {
    llvm::Value* cond = Expr(a->condition);
    if (!cond) return;
    Check(cond, absl::StrCat(name_, ": ", a->message));
    Stmt(a->body);
  } else if (const auto* a = s.as<AttrStmtNode>()) {
    Stmt(a->body);
  } else if (const auto* e = s.as<EvaluateNode>()) {
    if (!e->value.as<IntImmNode>()) Expr(e->value);
  } else if (const auto* a = s.as<AllocateNode>()) {
    Allocate(*a);
  } else {
    Fail(absl::StrCat(name_, ": ", NodeKindName(s->kind()),
                      " must be lowered before code generation (tir::LowerTir)"));
  }
}

// static
double KernelCodeGen::Work(const ir::Stmt& s, bool* exact) {
  constexpr double kUnknownExtent = 1024;
  if (!s) return 0;
  if (const auto* f = s.as<ForNode>()) {
    const int64_t* extent = AsConstInt(f->extent);
    if (extent == nullptr && exact != nullptr) *exact = false;
    return (extent != nullptr ? static_cast<double>(*extent) : kUnknownExtent) *
           Work(f->body, exact);
  }
  if (const auto* seq = s.as<SeqStmtNode>()) {
    double total = 0;
    for (const ir::Stmt& child : seq->seq) total += Work(child, exact);
    return total;
  }
  if (const auto* store = s.as<BufferStoreNode>()) return store->value->dtype.lanes();
  if (const auto* branch = s.as<IfThenElseNode>())
    return std::max(Work(branch->then_case, exact), Work(branch->else_case, exact));
  if (const auto* let = s.as<LetStmtNode>()) return Work(let->body, exact);
  if (const auto* a = s.as<AllocateNode>()) return Work(a->body, exact);
  if (const auto* a = s.as<AttrStmtNode>()) return Work(a->body, exact);
  if (const auto* a = s.as<AssertStmtNode>()) return Work(a->body, exact);
  return 1;
}

void KernelCodeGen::For(const ForNode& f) {
  // A parallel loop with too little work to pay for waking the other threads runs serially
  // (adaptive grain: a small model must not be slower on two threads than on one). With a
  // symbolic extent over a body of known size, the choice is made at run time.
  constexpr double kMinParallelWork = 1 << 15;
  if (f.for_kind == ForKind::kParallel) {
    bool exact = true;
    double body_work = Work(f.body, &exact);
    if (const int64_t* extent = AsConstInt(f.extent)) {
      if (body_work * *extent >= kMinParallelWork) return ParallelLoop(f);
    } else if (exact && body_work < kMinParallelWork) {
      return ParallelIfLarge(
          f, static_cast<int64_t>(std::ceil(kMinParallelWork / std::max(body_work, 1.0))));
    } else {
      return ParallelLoop(f);
    }
  }
  // Short unrolled loops with constant bounds are unrolled here, so that what follows (LICM,
  // register allocation) sees straight-line code; so is a loop that runs once (a tile of one),
  // whatever its kind, so that the indices it takes part in are constants: an accumulator tile
  // indexed by such a loop's variable stayed in memory.
  const int64_t* umin = AsConstInt(f.min);
  const int64_t* uext = AsConstInt(f.extent);
  const bool once = uext != nullptr && *uext == 1 && f.for_kind != ForKind::kVectorized;
  if ((f.for_kind == ForKind::kUnrolled || once) && umin != nullptr && uext != nullptr &&
      *uext <= 16) {
    for (int64_t i = 0; i < *uext && status_.ok(); ++i) {
      vars_[f.loop_var.get()] = llvm::ConstantInt::get(Type(f.loop_var->dtype), *umin + i, true);
      Stmt(f.body);
    }
    return;
  }
  SerialLoop(f);
}

void KernelCodeGen::SerialLoop(const ForNode& f) {
  llvm::Value* min = Expr(f.min);
  llvm::Value* extent = min ? Expr(f.extent) : nullptr;
  if (!extent) return;
  llvm::Type* t = Type(f.loop_var->dtype);
  min = b_.CreateIntCast(min, t, true);
  SerialLoop(f, min, b_.CreateAdd(min, b_.CreateIntCast(extent, t, true)));
}

namespace {

// Whether a loop body has more than `limit` instructions: the block `body` and every block
// created after `done` (the body's nested blocks: blocks are appended as they are made).
bool BodyLargerThan(llvm::BasicBlock* body, llvm::BasicBlock* done, size_t limit) {
  size_t count = 0;
  if (CountPast(*body, limit, &count)) return true;
  for (auto it = std::next(done->getIterator()); it != done->getParent()->end(); ++it) {
    if (CountPast(*it, limit, &count)) return true;
  }
  return false;
}

// Far above what LLVM would fully unroll at O3 (a few hundred instructions, times four at most
// when unrolling simplifies the body).
constexpr size_t kLargestUnrollableBody = 4096;

}  // namespace

void KernelCodeGen::SerialLoop(const ForNode& f, llvm::Value* begin, llvm::Value* end) {
  llvm::Type* t = begin->getType();
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  llvm::BasicBlock* head = llvm::BasicBlock::Create(ctx_, "for", fn_);
  llvm::BasicBlock* body = llvm::BasicBlock::Create(ctx_, "for_body", fn_);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "for_end", fn_);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode* i = b_.CreatePHI(t, 2, f.loop_var->name);
  i->addIncoming(begin, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(i, end), body, done);
  b_.SetInsertPoint(body);
  vars_[f.loop_var.get()] = i;
  Stmt(f.body);
  if (!status_.ok()) return;
  llvm::Value* next = b_.CreateAdd(i, llvm::ConstantInt::get(t, 1), "", false, true);
  llvm::BranchInst* back = b_.CreateBr(head);
  i->addIncoming(next, b_.GetInsertBlock());
  const char* hint_name = f.for_kind == ForKind::kVectorized ? "llvm.loop.vectorize.enable"
                          : f.for_kind == ForKind::kUnrolled ? "llvm.loop.unroll.full"
                                                             : nullptr;
  if (hint_name == nullptr && BodyLargerThan(body, done, kLargestUnrollableBody)) {
    // LLVM's full-unroll analysis simulates the body once per iteration it might unroll, at a
    // cost that grows faster than the body (an expression of 10^4 `or`s: minutes). A body this
    // large is never unrolled anyway: skipping the analysis changes no code.
    hint_name = "llvm.loop.unroll.disable";
  }
  if (hint_name != nullptr) {
    llvm::MDNode* hint =
        f.for_kind == ForKind::kVectorized || f.for_kind == ForKind::kUnrolled
            ? llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, hint_name),
                                       llvm::ConstantAsMetadata::get(b_.getTrue())})
            : llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, hint_name)});
    llvm::MDNode* loop = llvm::MDNode::getDistinct(ctx_, {nullptr, hint});
    loop->replaceOperandWith(0, loop);
    back->setMetadata(llvm::LLVMContext::MD_loop, loop);
  }
  b_.SetInsertPoint(done);
}

void KernelCodeGen::ParallelIfLarge(const ForNode& f, int64_t min_parallel_extent) {
  llvm::Value* extent = Expr(f.extent);
  if (!extent) return;
  llvm::Value* large =
      b_.CreateICmpSGE(b_.CreateIntCast(extent, i64_, true), b_.getInt64(min_parallel_extent));
  llvm::BasicBlock* parallel = llvm::BasicBlock::Create(ctx_, "parallel", fn_);
  llvm::BasicBlock* serial = llvm::BasicBlock::Create(ctx_, "serial", fn_);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "parallel_end", fn_);
  b_.CreateCondBr(large, parallel, serial);
  b_.SetInsertPoint(parallel);
  ParallelLoop(f);
  if (!status_.ok()) return;
  b_.CreateBr(done);
  b_.SetInsertPoint(serial);
  SerialLoop(f);
  if (!status_.ok()) return;
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

void KernelCodeGen::ParallelLoop(const ForNode& f) {
  llvm::Value* min = Expr(f.min);
  llvm::Value* extent = min ? Expr(f.extent) : nullptr;
  if (!extent) return;
  min = b_.CreateIntCast(min, i64_, true);
  extent = b_.CreateIntCast(extent, i64_, true);
  // What the body uses from outside: variables and buffers.
  struct Uses : StmtExprVisitor {
    void VisitExpr(const PrimExpr& e) override {
      if (const auto* v = e.as<VarNode>()) vars.push_back(v);
      if (const auto* l = e.as<BufferLoadNode>()) buffers.push_back(l->buffer.get());
      StmtExprVisitor::VisitExpr(e);
    }
    void VisitStmt(const ir::Stmt& s) override {
      if (const auto* st = s.as<BufferStoreNode>()) buffers.push_back(st->buffer.get());
      StmtExprVisitor::VisitStmt(s);
    }
    std::vector<const VarNode*> vars;
    std::vector<const BufferNode*> buffers;
  } uses;
  uses.VisitStmt(f.body);
  std::vector<const Object*> vars, buffers;
  std::vector<llvm::Type*> fields = {ptr_, i64_, i64_};  // ctx, min, extent
  // A variable that is a constant here (the index of a loop that runs once) stays a constant in
  // the task, as constant strides do: an accumulator tile indexed by it then stays in registers.
  std::vector<std::pair<const Object*, llvm::Value*>> constants;
  for (const VarNode* v : uses.vars) {
    if (vars_.count(v) == 0 || std::find(vars.begin(), vars.end(), v) != vars.end()) continue;
    if (llvm::isa<llvm::Constant>(vars_[v])) {
      constants.emplace_back(v, vars_[v]);
      continue;
    }
    vars.push_back(v);
    fields.push_back(vars_[v]->getType());
  }
  for (const BufferNode* bn : uses.buffers) {
    if (buffers_.count(bn) == 0 || std::find(buffers.begin(), buffers.end(), bn) != buffers.end())
      continue;
    buffers.push_back(bn);
    fields.push_back(ptr_);
    // A constant stride stays a constant in the task (folded into its addressing modes).
    for (llvm::Value* stride : buffers_[bn].strides) {
      if (!llvm::isa<llvm::Constant>(stride)) fields.push_back(i64_);
    }
  }
  llvm::StructType* closure_ty = llvm::StructType::get(ctx_, fields);
  llvm::AllocaInst* closure;
  {
    llvm::IRBuilder<> entry(entry_, entry_->begin());
    closure = entry.CreateAlloca(closure_ty);
  }
  unsigned slot = 0;
  auto store = [&](llvm::Value* v) {
    b_.CreateStore(v, b_.CreateStructGEP(closure_ty, closure, slot++));
  };
  store(ctx_arg_);
  store(min);
  store(extent);
  for (const Object* v : vars) store(vars_[v]);
  for (const Object* bn : buffers) {
    store(buffers_[bn].data);
    for (llvm::Value* stride : buffers_[bn].strides) {
      if (!llvm::isa<llvm::Constant>(stride)) store(stride);
    }
  }
  // At most 64 tasks: enough to balance the pool, few enough to amortize the launch.
  llvm::Value* num_tasks =
      b_.CreateSelect(b_.CreateICmpSLT(extent, b_.getInt64(64)), extent, b_.getInt64(64));
  num_tasks =
      b_.CreateSelect(b_.CreateICmpSLT(num_tasks, b_.getInt64(1)), b_.getInt64(1), num_tasks);

  // Emit the task with the generator's state saved.
  llvm::Function* saved_fn = fn_;
  llvm::Value* saved_ctx = ctx_arg_;
  llvm::BasicBlock *saved_entry = entry_, *saved_fail = fail_, *saved_block = b_.GetInsertBlock();
  llvm::PHINode* saved_message = fail_message_;
  std::vector<llvm::Value*> saved_heap = std::move(heap_);
  std::vector<llvm::Value*> saved_slots = std::move(heap_slots_);
  heap_.clear();
  heap_slots_.clear();
  auto saved_vars = vars_;
  auto saved_buffers = buffers_;

  llvm::Function* task = llvm::Function::Create(
      llvm::FunctionType::get(i32_, {i64_, i64_, ptr_}, false), llvm::Function::InternalLinkage,
      absl::StrCat(name_, "_parallel"), module_);
  llvm::Argument* arg = task->getArg(2);
  unsigned field = 0;
  auto load = [&](llvm::Type* t) {
    return b_.CreateLoad(t, b_.CreateStructGEP(closure_ty, arg, field++));
  };
  OpenFunction(task, [&] { return static_cast<llvm::Value*>(load(ptr_)); });
  vars_.clear();  // the task sees only what the closure carries
  buffers_.clear();
  llvm::Value* task_min = load(i64_);
  llvm::Value* task_extent = load(i64_);
  for (const Object* v : vars) vars_[v] = load(fields[field]);
  for (const auto& [v, value] : constants) vars_[v] = value;
  for (const Object* bn : buffers) {
    BufferInfo info = saved_buffers[bn];
    info.data = load(ptr_);
    for (llvm::Value*& stride : info.strides) {
      if (!llvm::isa<llvm::Constant>(stride)) stride = load(i64_);
    }
    buffers_[bn] = info;
  }
  llvm::Value* index = task->getArg(0);
  llvm::Value* count = task->getArg(1);
  llvm::Value* chunk =
      b_.CreateSDiv(b_.CreateAdd(task_extent, b_.CreateSub(count, b_.getInt64(1))), count);
  llvm::Value* begin = b_.CreateAdd(task_min, b_.CreateMul(index, chunk));
  llvm::Value* stop = b_.CreateAdd(task_min, task_extent);
  llvm::Value* end = b_.CreateAdd(begin, chunk);
  end = b_.CreateSelect(b_.CreateICmpSLT(end, stop), end, stop);
  llvm::Type* t = Type(f.loop_var->dtype);
  SerialLoop(f, b_.CreateIntCast(begin, t, true), b_.CreateIntCast(end, t, true));
  ReturnSuccess();
  CloseFunction();

  fn_ = saved_fn;
  ctx_arg_ = saved_ctx;
  entry_ = saved_entry;
  fail_ = saved_fail;
  fail_message_ = saved_message;
  heap_ = std::move(saved_heap);
  heap_slots_ = std::move(saved_slots);
  vars_ = saved_vars;
  buffers_ = saved_buffers;
  b_.SetInsertPoint(saved_block);
  if (!status_.ok()) return;
  llvm::Value* launch = b_.CreateLoad(ptr_, b_.CreateStructGEP(context_, ctx_arg_, 1));
  llvm::FunctionType* launch_ty = llvm::FunctionType::get(i32_, {ptr_, i64_, ptr_, ptr_}, false);
  llvm::Value* rc = b_.CreateCall(launch_ty, launch, {ctx_arg_, num_tasks, task, closure});
  Check(b_.CreateICmpEQ(rc, b_.getInt32(0)), absl::StrCat(name_, ": a parallel task failed"));
}

void KernelCodeGen::Allocate(const AllocateNode& a) {
  const Buffer& buffer = a.buffer;
  int64_t count = 1;
  for (const PrimExpr& d : buffer->shape) {
    const auto* c = d.as<IntImmNode>();
    if (c == nullptr) return DynamicAllocate(a);
    if (c->value < 0) {
      return (void)Fail(
          absl::StrCat(name_, ": allocation '", buffer->name, "' has a negative dimension"));
    }
    count *= c->value;
  }
  int64_t bytes = count * std::max(buffer->dtype.bytes(), 1);
  if (bytes > (int64_t{1} << 34)) {
    return (void)Fail(
        absl::StrCat(name_, ": allocation '", buffer->name, "' of ", bytes, " bytes is too large"));
  }
  llvm::Value* mem;
  llvm::IRBuilder<> entry(entry_, entry_->begin());
  if (bytes <= kMaxStackBytes) {
    llvm::AllocaInst* alloca =
        entry.CreateAlloca(MemType(buffer->dtype), entry.getInt64(count), buffer->name);
    alloca->setAlignment(llvm::Align(64));
    mem = alloca;
  } else {
    llvm::FunctionCallee alloc = module_->getOrInsertFunction(
        "aligned_alloc", llvm::FunctionType::get(ptr_, {i64_, i64_}, false));
    mem = entry.CreateCall(alloc, {entry.getInt64(64), entry.getInt64((bytes + 63) / 64 * 64)},
                           buffer->name);
    heap_.push_back(mem);
    Check(
        b_.CreateICmpNE(mem, llvm::ConstantPointerNull::get(ptr_)),
        absl::StrCat(name_, ": out of memory allocating '", buffer->name, "' (", bytes, " bytes)"));
  }
  BufferInfo info;
  info.data = mem;
  info.dtype = buffer->dtype;
  info.register_tile = buffer->scope == "local";
  int64_t stride = 1;
  info.strides.assign(buffer->shape.size(), nullptr);
  for (int d = static_cast<int>(buffer->shape.size()) - 1; d >= 0; --d) {
    info.strides[d] = b_.getInt64(stride);
    stride *= buffer->shape[d].as<IntImmNode>()->value;
  }
  buffers_[buffer.get()] = info;
  Stmt(a.body);
}

void KernelCodeGen::DynamicAllocate(const AllocateNode& a) {
  const Buffer& buffer = a.buffer;
  std::vector<llvm::Value*> dims;
  llvm::Value* count = b_.getInt64(1);
  llvm::Value* non_negative = b_.getTrue();
  for (const PrimExpr& d : buffer->shape) {
    llvm::Value* v = Index(d);
    if (!v) return;
    dims.push_back(v);
    non_negative = b_.CreateAnd(non_negative, b_.CreateICmpSGE(v, b_.getInt64(0)));
    count = b_.CreateMul(count, v);
  }
  Check(non_negative,
        absl::StrCat(name_, ": allocation '", buffer->name, "' has a negative dimension"));
  llvm::Value* bytes = b_.CreateMul(count, b_.getInt64(std::max(buffer->dtype.bytes(), 1)));
  llvm::Value* rounded = b_.CreateMul(
      b_.CreateUDiv(b_.CreateAdd(bytes, b_.getInt64(64)), b_.getInt64(64)), b_.getInt64(64));
  llvm::AllocaInst* slot;
  {
    llvm::IRBuilder<> entry(entry_, entry_->begin());
    slot = entry.CreateAlloca(ptr_, nullptr, buffer->name + "_slot");
    entry.CreateStore(llvm::ConstantPointerNull::get(ptr_), slot);
  }
  heap_slots_.push_back(slot);
  llvm::FunctionCallee alloc = module_->getOrInsertFunction(
      "aligned_alloc", llvm::FunctionType::get(ptr_, {i64_, i64_}, false));
  llvm::Value* mem = b_.CreateCall(alloc, {b_.getInt64(64), rounded}, buffer->name);
  b_.CreateStore(mem, slot);
  Check(b_.CreateICmpNE(mem, llvm::ConstantPointerNull::get(ptr_)),
        absl::StrCat(name_, ": out of memory allocating '", buffer->name, "'"));
  BufferInfo info;
  info.data = mem;
  info.dtype = buffer->dtype;
  info.strides.assign(dims.size(), nullptr);
  llvm::Value* stride = b_.getInt64(1);
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    info.strides[d] = stride;
    stride = b_.CreateMul(stride, dims[d]);
  }
  buffers_[buffer.get()] = info;
  Stmt(a.body);
  if (!status_.ok()) return;
  llvm::FunctionCallee free_fn =
      module_->getOrInsertFunction("free", llvm::FunctionType::get(b_.getVoidTy(), {ptr_}, false));
  b_.CreateCall(free_fn, {b_.CreateLoad(ptr_, slot)});
  b_.CreateStore(llvm::ConstantPointerNull::get(ptr_), slot);
}

}  // namespace kiln::codegen::kernel
