// The code generator of one kernel library: TIR PrimFuncs to LLVM IR functions in the kernel C
// ABI (runtime/kernel_abi.h). Internal to compiler/codegen; codegen_llvm.h is the interface.
// Its methods are in three files by what they emit:
//   kernel_codegen.cc        a function: its prologue (argument checks, buffers, size variables),
//                            types, the failure exit, alias scopes
//   kernel_codegen_expr.cc   expressions: indices, loads and stores (contiguous, strided,
//                            masked, guarded), casts, math, binary operations
//   kernel_codegen_stmt.cc   statements: loops (serial, unrolled, parallel), allocations
#ifndef KILN_COMPILER_CODEGEN_KERNEL_CODEGEN_H_
#define KILN_COMPILER_CODEGEN_KERNEL_CODEGEN_H_

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "compiler/ir/tir_stmt.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

namespace kiln::codegen::kernel {

// Adds `block`'s instructions to `*count`, stopping once it passes `limit` (ilist's size() is
// linear: a capped count costs at most `limit` steps). True when `*count` is past `limit`.
bool CountPast(const llvm::BasicBlock& block, size_t limit, size_t* count);

using namespace ir;  // NOLINT: code generation reads every TIR node (this namespace only)

// The instruction dot4_u8i8 (four uint8 x int8 products summed into each int32 lane) becomes.
enum class Int8Dot {
  kPortable,    // widened, multiplied and summed (LLVM picks what the target has)
  kVnni,        // AVX-512 VNNI with VL: vpdpbusd, 4, 8 or 16 lanes
  kArmI8mm,     // Armv8.6 i8mm: usdot, 4 lanes
  kArmDotprod,  // Armv8.2 dot product: udot of the weights offset to uint8, less 128 x the
                // activations' sum (a second udot)
};

// The form the target's features (Linux names, LlvmTargetInfo::device_features) allow.
Int8Dot Int8DotFor(const std::vector<std::string>& features);

class KernelCodeGen {
 public:
  // `masked_tails`: the target loads and stores a vector's first lanes with one masked
  // instruction (AVX-512), so a vector of an odd length is one access, not a chain of them.
  KernelCodeGen(llvm::LLVMContext& ctx, llvm::Module* module, bool masked_tails, Int8Dot int8_dot)
      : ctx_(ctx), module_(module), b_(ctx), masked_tails_(masked_tails), int8_dot_(int8_dot) {
    i1_ = b_.getInt1Ty();
    i8_ = b_.getInt8Ty();
    i32_ = b_.getInt32Ty();
    i64_ = b_.getInt64Ty();
    ptr_ = llvm::PointerType::getUnqual(ctx);
    // DLTensor: data, device{type, id}, ndim, dtype{code, bits, lanes}, shape, strides, byte_offset
    llvm::StructType* device = llvm::StructType::get(ctx, {i32_, i32_});
    llvm::StructType* dtype = llvm::StructType::get(ctx, {i8_, i8_, b_.getInt16Ty()});
    dltensor_ =
        llvm::StructType::create(ctx, {ptr_, device, i32_, dtype, ptr_, ptr_, i64_}, "DLTensor");
    context_ = llvm::StructType::create(ctx, {ptr_, ptr_, ptr_}, "KilnContext");
    // a * b + c may become one fused multiply-add (as TVM and C compilers with -ffp-contract=fast
    // do); no other fast-math liberties.
    llvm::FastMathFlags fmf;
    fmf.setAllowContract(true);
    b_.setFastMathFlags(fmf);
  }

  // Starts emitting into `fn`: an entry block (where `make_ctx` produces the KilnContext
  // pointer), and the shared failure exit that reports a message through it and returns 1.
  void OpenFunction(llvm::Function* fn, const std::function<llvm::Value*()>& make_ctx);
  void CloseFunction();
  // Heap allocations are made in the entry block and released on every way out.
  void FreeHeap(llvm::IRBuilder<>& at);
  void ReturnSuccess();

  absl::Status Generate(const std::string& name, const PrimFuncNode& f);

 private:
  struct BufferInfo {
    llvm::Value* data;
    std::vector<llvm::Value*> strides;  // elements, row-major
    DataType dtype;
    // With tir.noalias: this buffer's alias scope, and the scopes of the other parameters.
    llvm::MDNode* scope = nullptr;
    llvm::MDNode* noalias = nullptr;
    // A "local" allocation: an accumulator tile that LLVM should keep in registers.
    bool register_tile = false;
  };

  void Tag(llvm::Instruction* access, const BufferInfo& info);

  // tir.noalias: distinct buffer parameters never overlap; tell LLVM so that it can keep values
  // in registers and vectorize without runtime overlap checks.
  void AddAliasScopes(const PrimFuncNode& f);

  void Fail(const std::string& message);

  llvm::Type* Type(DataType t);
  // How elements of `t` sit in memory (bool takes a byte).
  llvm::Type* MemType(DataType t);
  // A value loaded as MemType(t) in registers, and back.
  llvm::Value* FromMemory(llvm::Value* v, DataType t);
  llvm::Value* ToMemory(llvm::Value* v, DataType t);

  // Branches to the shared failure exit with `message` unless `ok`.
  void Check(llvm::Value* ok, const std::string& message);

  // Binds the size variables that are whole dimensions of `buffer` and not yet bound.
  void BindSizeVars(const Buffer& buffer, llvm::Value* tensor, const std::string& what);

  void BindBuffer(const Buffer& buffer, llvm::Value* tensor, const std::string& what);

  // ---- Expressions ----
  // An index as i64, or a vector of i64 for a vector index.
  llvm::Value* Index(const PrimExpr& e);

  // Makes `a` and `b` the same shape: a scalar meeting a vector is broadcast.
  void Match(llvm::Value** a, llvm::Value** b);

  // The address of element `flat` of `info`: one pointer, or a vector of pointers.
  llvm::Value* Address(const BufferInfo& info, llvm::Value* flat);

  // For a vector access whose last index is Ramp(base, 1, lanes) and whose other indices are
  // scalars: the scalar flat index of the first lane (a contiguous access), else null.
  llvm::Value* ContiguousBase(const BufferInfo& info, const std::vector<PrimExpr>& indices);

  // Whether `lanes` elements are better moved as a masked access of the next power of two:
  // LLVM splits an odd-length vector access (7, 14 or 28 lanes: a 7x7 or 28x28 row) into one
  // load or store per power-of-two piece, plus inserts.
  // Not for an accumulator tile ("local"): LLVM keeps those in registers only when every
  // access is a plain load or store.
  bool MaskedWidth(const BufferInfo& info, int lanes, int* width) const;
  llvm::Constant* FirstLanes(int lanes, int width);

  // `lanes` elements of `info` from element `base` on, in memory form.
  llvm::Value* ContiguousLoad(const BufferInfo& info, llvm::Value* base, int lanes);

  void ContiguousStore(const BufferInfo& info, llvm::Value* base, llvm::Value* value);

  // A vector load whose last index is Ramp(base, s, lanes) with a small constant stride s (a
  // stride-2 convolution's input row): one contiguous load of the (lanes - 1) * s + 1 elements
  // the lanes span, then every s-th element picked by a shuffle, instead of a gather of lanes
  // separate loads. Null when the access is not of that form.
  llvm::Value* StridedLoad(const BufferInfo& info, const std::vector<PrimExpr>& indices,
                           DataType t);

  // A vector Select(cond, buf[..., clamp(Ramp(base, 1, lanes))], fill), the clamp being
  // Min(Max(r, lo), hi), or only one of them where the simplifier proved the other bound: the
  // guarded load of a padded row (GuardedLoad). Its lanes are one contiguous row segment except
  // where the ramp leaves [lo, hi], so it becomes one masked load of the in-range lanes, lanes
  // outside taking buf at lo or hi as the clamp would, instead of a gather of clamped indices.
  // Null when the select is not of that form.
  // The ramp may also stride 2 to 4 (a deinterleaved row): one masked load of its span and a
  // shuffle, or with AVX2 PiecewiseEveryOther.
  llvm::Value* GuardedRowLoad(const SelectNode& select, DataType t);
  // Every other element of the `span` elements at `address` that `on` selects (the rest zero),
  // as `lanes` lanes, from masked loads of 8 lanes each deinterleaved in pairs.
  llvm::Value* PiecewiseEveryOther(llvm::Type* elem, llvm::Value* address, int span,
                                   llvm::Value* on, llvm::Align align, int lanes);

  // One element of the buffer, as stored in memory (bool as a byte); null on failure.
  llvm::Value* ScalarLoad(const BufferInfo& info, const std::vector<PrimExpr>& indices);

  llvm::Value* FlatIndex(const BufferInfo& info, const std::vector<PrimExpr>& indices);

  const BufferInfo* BufferOf(const Buffer& b);

  llvm::Value* Cast(llvm::Value* v, DataType from, DataType to);

  llvm::Value* MathCall(const ir::CallNode& c);
  // acc + dot4_u8i8(a, b) on `lanes` int32 lanes (acc null: 0).
  llvm::Value* Dot4(llvm::Value* acc, llvm::Value* a, llvm::Value* b, int lanes);
  // acc + dot4 over `lanes` lanes by `one` on `piece` lanes at a time (an instruction's width),
  // the pieces joined again; acc null: 0.
  llvm::Value* Dot4InPieces(
      llvm::Value* acc, llvm::Value* a, llvm::Value* b, int lanes, int piece,
      llvm::function_ref<llvm::Value*(llvm::Value*, llvm::Value*, llvm::Value*)> one);

  llvm::Value* Expr(const PrimExpr& e);

  llvm::Value* BinaryOp(const BinaryNode& n);

  // ---- Statements ----
  void Stmt(const ir::Stmt& s);

  // Roughly how many elements a statement computes (a vector store counts its lanes), with
  // loops of symbolic extent counted as large; `exact` turns false when there is one.
  static double Work(const ir::Stmt& s, bool* exact = nullptr);

  void For(const ForNode& f);

  // The loop over [min, min + extent) run on this thread.
  void SerialLoop(const ForNode& f);

  // for (loop_var = begin; loop_var < end; ++loop_var) body, with the schedule's loop hints.
  void SerialLoop(const ForNode& f, llvm::Value* begin, llvm::Value* end);

  // A parallel loop of symbolic extent: launched on the pool when the extent reaches
  // `min_parallel_extent` iterations, else run serially here.
  void ParallelIfLarge(const ForNode& f, int64_t min_parallel_extent);

  // A parallel loop: its body becomes a task function running one chunk of the iterations,
  // launched through ctx->parallel_for with the values it uses passed in a closure struct.
  void ParallelLoop(const ForNode& f);

  void Allocate(const AllocateNode& a);

  // An allocation whose size is only known at run time: on the heap for the extent of its body.
  // Its pointer lives in a slot (null outside the body) that the failure exit also frees.
  void DynamicAllocate(const AllocateNode& a);

  static constexpr int64_t kMaxStackBytes = 64 * 1024;  // larger allocations go to the heap

  llvm::LLVMContext& ctx_;
  llvm::Module* module_;
  llvm::IRBuilder<> b_;
  const bool masked_tails_;
  const Int8Dot int8_dot_;
  std::vector<llvm::Value*> heap_;        // this function's heap allocations of constant size
  std::vector<llvm::Value*> heap_slots_;  // and slots of those sized at run time
  llvm::Type *i1_, *i8_, *i32_, *i64_;
  llvm::PointerType* ptr_;
  llvm::StructType* dltensor_;
  llvm::StructType* context_;
  llvm::Function* fn_ = nullptr;
  llvm::Value* ctx_arg_ = nullptr;
  llvm::BasicBlock* entry_ = nullptr;
  llvm::BasicBlock* fail_ = nullptr;
  llvm::PHINode* fail_message_ = nullptr;
  std::string name_;
  std::unordered_map<const Object*, llvm::Value*> vars_;
  std::unordered_map<const Object*, BufferInfo> buffers_;
  absl::Status status_;
};

}  // namespace kiln::codegen::kernel

#endif  // KILN_COMPILER_CODEGEN_KERNEL_CODEGEN_H_
