#include "compiler/codegen/codegen_llvm.h"

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

namespace kiln::codegen {
namespace {

using namespace ir;  // NOLINT: code generation reads every TIR node

// The DLPack DLDataType packed as DLTensor holds it in memory: code | bits << 8 | lanes << 16.
uint32_t PackedDType(DataType t) {
  return static_cast<uint32_t>(t.code()) | static_cast<uint32_t>(t.bits()) << 8 |
         static_cast<uint32_t>(t.lanes()) << 16;
}

class KernelCodeGen {
 public:
  // `masked_tails`: the target loads and stores a vector's first lanes with one masked
  // instruction (AVX-512), so a vector of an odd length is one access, not a chain of them.
  KernelCodeGen(llvm::LLVMContext& ctx, llvm::Module* module, bool masked_tails)
      : ctx_(ctx), module_(module), b_(ctx), masked_tails_(masked_tails) {
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
  void OpenFunction(llvm::Function* fn, const std::function<llvm::Value*()>& make_ctx) {
    fn_ = fn;
    entry_ = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry_);
    ctx_arg_ = make_ctx();
    fail_ = llvm::BasicBlock::Create(ctx_, "fail", fn_);
    b_.SetInsertPoint(fail_);
    fail_message_ = b_.CreatePHI(ptr_, 4, "message");
    llvm::Value* set_error = b_.CreateLoad(ptr_, b_.CreateStructGEP(context_, ctx_arg_, 0));
    b_.CreateCall(llvm::FunctionType::get(b_.getVoidTy(), {ptr_, ptr_}, false), set_error,
                  {ctx_arg_, fail_message_});
    b_.CreateRet(b_.getInt32(1));
    b_.SetInsertPoint(entry_);
  }
  void CloseFunction() {
    if (fail_message_->getNumIncomingValues() == 0) {
      fail_->eraseFromParent();
    } else if (!heap_.empty() || !heap_slots_.empty()) {
      llvm::IRBuilder<> at(fail_, fail_->getFirstInsertionPt());
      FreeHeap(at);
    }
    heap_.clear();
    heap_slots_.clear();
  }
  // Heap allocations are made in the entry block and released on every way out.
  void FreeHeap(llvm::IRBuilder<>& at) {
    llvm::FunctionCallee free_fn = module_->getOrInsertFunction(
        "free", llvm::FunctionType::get(at.getVoidTy(), {ptr_}, false));
    for (llvm::Value* p : heap_) at.CreateCall(free_fn, {p});
    for (llvm::Value* slot : heap_slots_) at.CreateCall(free_fn, {at.CreateLoad(ptr_, slot)});
  }
  void ReturnSuccess() {
    FreeHeap(b_);
    b_.CreateRet(b_.getInt32(0));
  }

  absl::Status Generate(const std::string& name, const PrimFuncNode& f) {
    name_ = name;
    vars_.clear();
    buffers_.clear();
    llvm::FunctionType* type = llvm::FunctionType::get(i32_, {ptr_, ptr_, i32_, ptr_}, false);
    fn_ = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module_);
    fn_->setVisibility(llvm::GlobalValue::DefaultVisibility);
    llvm::Argument* args = fn_->getArg(0);
    llvm::Argument* kinds = fn_->getArg(1);
    llvm::Argument* num_args = fn_->getArg(2);
    for (int i = 0; i < 2; ++i) fn_->addParamAttr(i, llvm::Attribute::NoAlias);

    OpenFunction(fn_, [&] { return static_cast<llvm::Value*>(fn_->getArg(3)); });
    b_.SetInsertPoint(entry_);
    Check(b_.CreateICmpEQ(num_args, b_.getInt32(static_cast<int32_t>(f.params.size()))),
          absl::StrCat(name, ": expected ", f.params.size(), " arguments"));
    // Scalars first: a size parameter (call_tir's tir_vars) is what a dimension such as n * 4
    // is computed from.
    for (size_t i = 0; i < f.params.size() && status_.ok(); ++i) {
      const Var& param = f.params[i];
      if (f.BufferOf(param)) continue;
      llvm::Value* kind = b_.CreateLoad(i32_, b_.CreateGEP(i32_, kinds, b_.getInt64(i)));
      llvm::Value* slot = b_.CreateGEP(i64_, args, b_.getInt64(i));
      std::string what = absl::StrCat(name, ": argument ", i, " (", param->name, ")");
      DataType t = param->dtype;
      if (t.is_float()) {
        Check(b_.CreateICmpEQ(kind, b_.getInt32(KILN_ARG_FLOAT)), what + " must be a float");
        vars_[param.get()] = b_.CreateFPCast(b_.CreateLoad(b_.getDoubleTy(), slot), Type(t));
      } else if (t.is_integral()) {
        Check(b_.CreateICmpEQ(kind, b_.getInt32(KILN_ARG_INT)), what + " must be an integer");
        vars_[param.get()] = b_.CreateIntCast(b_.CreateLoad(i64_, slot), Type(t), t.is_int());
      } else {
        Fail(absl::StrCat(what, ": parameters of type ", t.ToString(), " are not supported"));
        return status_;
      }
    }
    // Then the buffers: first every dimension that is a variable not yet bound binds it (so that
    // `a: (n * 6,)` may come before `y: (n, 6)`), then every other is checked against the value
    // it computes.
    for (size_t i = 0; i < f.params.size() && status_.ok(); ++i) {
      Buffer buffer = f.BufferOf(f.params[i]);
      if (!buffer) continue;
      llvm::Value* kind = b_.CreateLoad(i32_, b_.CreateGEP(i32_, kinds, b_.getInt64(i)));
      std::string what = absl::StrCat(name, ": argument ", i, " (", buffer->name, ")");
      Check(b_.CreateICmpEQ(kind, b_.getInt32(KILN_ARG_TENSOR)), what + " must be a tensor");
      llvm::Value* slot = b_.CreateGEP(i64_, args, b_.getInt64(i));
      BindSizeVars(buffer, b_.CreateLoad(ptr_, slot), what);
    }
    for (size_t i = 0; i < f.params.size() && status_.ok(); ++i) {
      const Var& param = f.params[i];
      llvm::Value* kind = b_.CreateLoad(i32_, b_.CreateGEP(i32_, kinds, b_.getInt64(i)));
      llvm::Value* slot = b_.CreateGEP(i64_, args, b_.getInt64(i));
      Buffer buffer = f.BufferOf(param);
      std::string what =
          absl::StrCat(name, ": argument ", i, " (", buffer ? buffer->name : param->name, ")");
      if (buffer) {
        Check(b_.CreateICmpEQ(kind, b_.getInt32(KILN_ARG_TENSOR)), what + " must be a tensor");
        BindBuffer(buffer, b_.CreateLoad(ptr_, slot), what);
      }
    }
    if (!status_.ok()) return status_;
    AddAliasScopes(f);
    Stmt(f.body);
    if (!status_.ok()) return status_;
    ReturnSuccess();
    CloseFunction();
    return status_;
  }

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

  void Tag(llvm::Instruction* access, const BufferInfo& info) {
    if (info.scope == nullptr) return;
    access->setMetadata(llvm::LLVMContext::MD_alias_scope, info.scope);
    access->setMetadata(llvm::LLVMContext::MD_noalias, info.noalias);
  }

  // tir.noalias: distinct buffer parameters never overlap; tell LLVM so that it can keep values
  // in registers and vectorize without runtime overlap checks.
  void AddAliasScopes(const PrimFuncNode& f) {
    ObjectRef flag = GetAttr(f.attrs, "tir.noalias");
    const auto* imm = flag.as<IntImmNode>();
    if (imm == nullptr || imm->value == 0) return;
    llvm::MDBuilder md(ctx_);
    llvm::MDNode* domain = md.createAnonymousAliasScopeDomain(name_);
    std::vector<std::pair<BufferInfo*, llvm::MDNode*>> scopes;
    for (const auto& [param, buffer] : f.buffer_map) {
      auto it = buffers_.find(buffer.get());
      if (it == buffers_.end()) continue;
      scopes.emplace_back(&it->second, md.createAnonymousAliasScope(domain, buffer->name));
    }
    for (auto& [info, scope] : scopes) {
      std::vector<llvm::Metadata*> others;
      for (auto& [other_info, other] : scopes) {
        if (other != scope) others.push_back(other);
      }
      info->scope = llvm::MDNode::get(ctx_, {scope});
      info->noalias = llvm::MDNode::get(ctx_, others);
    }
  }

  void Fail(const std::string& message) {
    if (status_.ok()) status_ = absl::InvalidArgumentError(message);
  }

  llvm::Type* Type(DataType t) {
    if (t.lanes() > 1) return llvm::FixedVectorType::get(Type(t.element_of()), t.lanes());
    if (t.lanes() != 1) {
      Fail(absl::StrCat(name_, ": type ", t.ToString(), " has no lanes"));
      return i32_;
    }
    if (t.is_bool()) return i1_;
    if (t.is_int() || t.is_uint()) return b_.getIntNTy(t.bits());
    if (t.code() == DataType::Code::kBFloat) return b_.getBFloatTy();
    if (t.is_float()) {
      if (t.bits() == 16) return b_.getHalfTy();
      if (t.bits() == 32) return b_.getFloatTy();
      if (t.bits() == 64) return b_.getDoubleTy();
    }
    Fail(absl::StrCat(name_, ": type ", t.ToString(), " is not supported"));
    return i32_;
  }
  // How elements of `t` sit in memory (bool takes a byte).
  llvm::Type* MemType(DataType t) {
    if (!t.is_bool()) return Type(t);
    return t.lanes() > 1 ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(i8_, t.lanes()))
                         : i8_;
  }
  // A value loaded as MemType(t) in registers, and back.
  llvm::Value* FromMemory(llvm::Value* v, DataType t) {
    return t.is_bool() ? b_.CreateTrunc(v, Type(t)) : v;
  }
  llvm::Value* ToMemory(llvm::Value* v, DataType t) {
    return t.is_bool() ? b_.CreateZExt(v, MemType(t)) : v;
  }

  // Branches to the shared failure exit with `message` unless `ok`.
  void Check(llvm::Value* ok, const std::string& message) {
    llvm::BasicBlock* pass = llvm::BasicBlock::Create(ctx_, "ok", fn_);
    llvm::Constant* text = b_.CreateGlobalStringPtr(message, "msg", 0, module_);
    fail_message_->addIncoming(text, b_.GetInsertBlock());
    b_.CreateCondBr(ok, pass, fail_, llvm::MDBuilder(ctx_).createBranchWeights(1 << 20, 1));
    b_.SetInsertPoint(pass);
  }

  // Binds the size variables that are whole dimensions of `buffer` and not yet bound.
  void BindSizeVars(const Buffer& buffer, llvm::Value* tensor, const std::string& what) {
    int rank = static_cast<int>(buffer->shape.size());
    std::vector<int> binding;
    for (int d = 0; d < rank; ++d) {
      const auto* v = buffer->shape[d].as<VarNode>();
      if (v != nullptr && vars_.count(v) == 0) binding.push_back(d);
    }
    if (binding.empty()) return;
    llvm::Value* ndim = b_.CreateLoad(i32_, b_.CreateStructGEP(dltensor_, tensor, 2));
    Check(b_.CreateICmpEQ(ndim, b_.getInt32(rank)),
          absl::StrCat(what, " must have ", rank, " dimensions"));
    llvm::Value* shape = b_.CreateLoad(ptr_, b_.CreateStructGEP(dltensor_, tensor, 4));
    for (int d : binding) {
      const auto* v = buffer->shape[d].as<VarNode>();
      if (vars_.count(v) > 0) continue;  // an earlier dimension of this buffer bound it
      llvm::Value* actual = b_.CreateLoad(i64_, b_.CreateGEP(i64_, shape, b_.getInt64(d)));
      vars_[v] = b_.CreateIntCast(actual, Type(v->dtype), true);
    }
  }

  void BindBuffer(const Buffer& buffer, llvm::Value* tensor, const std::string& what) {
    if (!buffer->strides.empty() && buffer->strides.size() != buffer->shape.size()) {
      Fail(what + ": the buffer declares strides for a different rank");
      return;
    }
    int rank = static_cast<int>(buffer->shape.size());
    llvm::Value* ndim = b_.CreateLoad(i32_, b_.CreateStructGEP(dltensor_, tensor, 2));
    Check(b_.CreateICmpEQ(ndim, b_.getInt32(rank)),
          absl::StrCat(what, " must have ", rank, " dimensions"));
    llvm::Value* dtype = b_.CreateLoad(i32_, b_.CreateStructGEP(dltensor_, tensor, 3));
    Check(b_.CreateICmpEQ(dtype, b_.getInt32(PackedDType(buffer->dtype))),
          absl::StrCat(what, " must have dtype ", buffer->dtype.ToString()));
    llvm::Value* shape = b_.CreateLoad(ptr_, b_.CreateStructGEP(dltensor_, tensor, 4));
    std::vector<llvm::Value*> dims;
    for (int d = 0; d < rank && status_.ok(); ++d) {
      llvm::Value* actual = b_.CreateLoad(i64_, b_.CreateGEP(i64_, shape, b_.getInt64(d)));
      dims.push_back(actual);
      const PrimExpr& expected = buffer->shape[d];
      if (const auto* v = expected.as<VarNode>(); v != nullptr && vars_.count(v) == 0) {
        vars_[v] = b_.CreateIntCast(actual, Type(v->dtype), true);  // binds the symbolic size
        continue;
      }
      llvm::Value* want = Index(expected);
      if (!want) return;
      Check(b_.CreateICmpEQ(actual, want),
            absl::StrCat(what, " dimension ", d, " must be ", DebugPrint(expected)));
      // Past the check the two are equal: a constant extent makes the strides constants, which
      // fold into addressing modes (a row stride held in a register became a chain of adds, one
      // per row of a tile, that serialized a pointwise convolution's multiply-adds).
      if (llvm::isa<llvm::Constant>(want)) dims.back() = want;
    }
    BufferInfo info;
    info.dtype = buffer->dtype;
    info.strides.assign(rank, nullptr);
    llvm::Value* stride = b_.getInt64(1);
    for (int d = rank - 1; d >= 0; --d) {
      info.strides[d] = stride;
      if (d > 0) stride = b_.CreateMul(stride, dims[d]);
    }
    // The tensor's strides: as given, or compact when the DLTensor has none. They must equal the
    // buffer's: compact ones, or those it declares (a lone unbound variable binds).
    llvm::Value* strides = b_.CreateLoad(ptr_, b_.CreateStructGEP(dltensor_, tensor, 5));
    std::vector<llvm::Value*> actual(rank);
    if (rank > 0) {
      llvm::BasicBlock* load_strides = llvm::BasicBlock::Create(ctx_, "strides", fn_);
      llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "strides_ok", fn_);
      llvm::BasicBlock* from = b_.GetInsertBlock();
      b_.CreateCondBr(b_.CreateICmpEQ(strides, llvm::ConstantPointerNull::get(ptr_)), done,
                      load_strides);
      b_.SetInsertPoint(load_strides);
      std::vector<llvm::Value*> loaded(rank);
      for (int d = 0; d < rank; ++d)
        loaded[d] = b_.CreateLoad(i64_, b_.CreateGEP(i64_, strides, b_.getInt64(d)));
      llvm::BasicBlock* loaded_in = b_.GetInsertBlock();
      b_.CreateBr(done);
      b_.SetInsertPoint(done);
      for (int d = 0; d < rank; ++d) {
        llvm::PHINode* phi = b_.CreatePHI(i64_, 2);
        phi->addIncoming(info.strides[d], from);
        phi->addIncoming(loaded[d], loaded_in);
        actual[d] = phi;
      }
    }
    std::vector<llvm::Value*> expected = info.strides;
    std::string expected_text = "be compact (row-major, no gaps)";
    if (!buffer->strides.empty()) {
      std::vector<std::string> parts;
      for (int d = 0; d < rank; ++d) {
        const PrimExpr& declared = buffer->strides[d];
        parts.push_back(DebugPrint(declared));
        if (const auto* v = declared.as<VarNode>(); v != nullptr && vars_.count(v) == 0) {
          vars_[v] = b_.CreateIntCast(actual[d], Type(v->dtype), true);
        }
        expected[d] = Index(declared);
        if (!expected[d]) return;
      }
      expected_text = absl::StrCat("have strides (", absl::StrJoin(parts, ", "), ")");
    }
    llvm::Value* all_match = b_.getTrue();
    for (int d = 0; d < rank; ++d) {
      // A dimension of extent 1 may carry any stride.
      llvm::Value* ok = b_.CreateOr(b_.CreateICmpEQ(actual[d], expected[d]),
                                    b_.CreateICmpEQ(dims[d], b_.getInt64(1)));
      all_match = b_.CreateAnd(all_match, ok);
    }
    if (rank > 0) Check(all_match, absl::StrCat(what, " must ", expected_text));
    info.strides = expected;
    llvm::Value* data = b_.CreateLoad(ptr_, b_.CreateStructGEP(dltensor_, tensor, 0));
    Check(b_.CreateICmpNE(data, llvm::ConstantPointerNull::get(ptr_)), what + " has no data");
    llvm::Value* offset = b_.CreateLoad(i64_, b_.CreateStructGEP(dltensor_, tensor, 6));
    data = b_.CreateGEP(i8_, data, offset);
    // The buffer's declared alignment (64 unless written otherwise, as in TVM; runtime tensors
    // are allocated so) is checked, then given to LLVM as a fact for aligned vector accesses.
    int64_t alignment = std::max<int64_t>(buffer->data_alignment, buffer->dtype.bytes());
    if (alignment > 1 && (alignment & (alignment - 1)) == 0) {
      llvm::Value* misaligned =
          b_.CreateAnd(b_.CreatePtrToInt(data, i64_), b_.getInt64(alignment - 1));
      Check(b_.CreateICmpEQ(misaligned, b_.getInt64(0)),
            absl::StrCat(what, " must be aligned to ", alignment, " bytes"));
      b_.CreateAlignmentAssumption(module_->getDataLayout(), data, alignment);
    }
    if (const auto* eo = buffer->elem_offset.as<IntImmNode>(); eo == nullptr || eo->value != 0) {
      if (!buffer->elem_offset) return (void)Fail(what + ": a buffer without elem_offset");
      data = b_.CreateGEP(MemType(buffer->dtype), data, Index(buffer->elem_offset));
    }
    info.data = data;
    buffers_[buffer.get()] = info;
    if (buffer->data) vars_[buffer->data.get()] = data;
  }

  // ---- Expressions ----
  // An index as i64, or a vector of i64 for a vector index.
  llvm::Value* Index(const PrimExpr& e) {
    llvm::Value* v = Expr(e);
    if (!v) return nullptr;
    llvm::Type* t = i64_;
    if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType())) {
      t = llvm::FixedVectorType::get(i64_, vt->getNumElements());
    }
    return b_.CreateIntCast(v, t, !e->dtype.is_uint());
  }

  // Makes `a` and `b` the same shape: a scalar meeting a vector is broadcast.
  void Match(llvm::Value** a, llvm::Value** b) {
    auto* va = llvm::dyn_cast<llvm::FixedVectorType>((*a)->getType());
    auto* vb = llvm::dyn_cast<llvm::FixedVectorType>((*b)->getType());
    if (va != nullptr && vb == nullptr) *b = b_.CreateVectorSplat(va->getNumElements(), *b);
    if (vb != nullptr && va == nullptr) *a = b_.CreateVectorSplat(vb->getNumElements(), *a);
  }

  // The address of element `flat` of `info`: one pointer, or a vector of pointers.
  llvm::Value* Address(const BufferInfo& info, llvm::Value* flat) {
    return b_.CreateInBoundsGEP(MemType(info.dtype.element_of()), info.data, flat);
  }

  // For a vector access whose last index is Ramp(base, 1, lanes) and whose other indices are
  // scalars: the scalar flat index of the first lane (a contiguous access), else null.
  llvm::Value* ContiguousBase(const BufferInfo& info, const std::vector<PrimExpr>& indices) {
    if (indices.empty()) return nullptr;
    const auto* ramp = indices.back().as<RampNode>();
    const auto* stride = ramp != nullptr ? ramp->stride.as<IntImmNode>() : nullptr;
    if (stride == nullptr || stride->value != 1) return nullptr;
    for (size_t d = 0; d + 1 < indices.size(); ++d) {
      if (indices[d]->dtype.lanes() != 1) return nullptr;
    }
    std::vector<PrimExpr> scalar = indices;
    scalar.back() = ramp->base;
    return FlatIndex(info, scalar);
  }

  // Whether `lanes` elements are better moved as a masked access of the next power of two:
  // LLVM splits an odd-length vector access (7, 14 or 28 lanes: a 7x7 or 28x28 row) into one
  // load or store per power-of-two piece, plus inserts.
  // Not for an accumulator tile ("local"): LLVM keeps those in registers only when every
  // access is a plain load or store.
  bool MaskedWidth(const BufferInfo& info, int lanes, int* width) const {
    *width = static_cast<int>(llvm::PowerOf2Ceil(lanes));
    return masked_tails_ && lanes > 2 && *width != lanes && !info.register_tile;
  }
  llvm::Constant* FirstLanes(int lanes, int width) {
    std::vector<llvm::Constant*> bits;
    for (int k = 0; k < width; ++k) bits.push_back(b_.getInt1(k < lanes));
    return llvm::ConstantVector::get(bits);
  }

  // `lanes` elements of `info` from element `base` on, in memory form.
  llvm::Value* ContiguousLoad(const BufferInfo& info, llvm::Value* base, int lanes) {
    llvm::Type* elem = MemType(info.dtype.element_of());
    llvm::Align align(info.dtype.bytes());
    int width;
    if (!MaskedWidth(info, lanes, &width)) {
      llvm::LoadInst* v =
          b_.CreateAlignedLoad(llvm::FixedVectorType::get(elem, lanes), Address(info, base), align);
      Tag(v, info);
      return v;
    }
    // Masked-off lanes are never read, so the access may end past the buffer (no inbounds GEP).
    llvm::CallInst* wide =
        b_.CreateMaskedLoad(llvm::FixedVectorType::get(elem, width),
                            b_.CreateGEP(elem, info.data, base), align, FirstLanes(lanes, width));
    Tag(wide, info);
    std::vector<int> first(lanes);
    std::iota(first.begin(), first.end(), 0);
    return b_.CreateShuffleVector(wide, first);
  }

  void ContiguousStore(const BufferInfo& info, llvm::Value* base, llvm::Value* value) {
    llvm::Type* elem = MemType(info.dtype.element_of());
    llvm::Align align(info.dtype.bytes());
    const int lanes =
        static_cast<int>(llvm::cast<llvm::FixedVectorType>(value->getType())->getNumElements());
    int width;
    if (!MaskedWidth(info, lanes, &width)) {
      Tag(b_.CreateAlignedStore(value, Address(info, base), align), info);
      return;
    }
    std::vector<int> widen(width);
    for (int k = 0; k < width; ++k) widen[k] = k < lanes ? k : -1;
    Tag(b_.CreateMaskedStore(b_.CreateShuffleVector(value, widen),
                             b_.CreateGEP(elem, info.data, base), align, FirstLanes(lanes, width)),
        info);
  }

  // A vector load whose last index is Ramp(base, s, lanes) with a small constant stride s (a
  // stride-2 convolution's input row): one contiguous load of the (lanes - 1) * s + 1 elements
  // the lanes span, then every s-th element picked by a shuffle, instead of a gather of lanes
  // separate loads. Null when the access is not of that form.
  llvm::Value* StridedLoad(const BufferInfo& info, const std::vector<PrimExpr>& indices,
                           DataType t) {
    constexpr int64_t kMaxStride = 4;
    if (indices.empty() || t.is_bool()) return nullptr;
    const auto* ramp = indices.back().as<RampNode>();
    const auto* stride = ramp != nullptr ? ramp->stride.as<IntImmNode>() : nullptr;
    if (stride == nullptr || stride->value < 2 || stride->value > kMaxStride) return nullptr;
    for (size_t d = 0; d + 1 < indices.size(); ++d) {
      if (indices[d]->dtype.lanes() != 1) return nullptr;
    }
    std::vector<PrimExpr> scalar = indices;
    scalar.back() = ramp->base;
    llvm::Value* base = FlatIndex(info, scalar);
    if (!base) return nullptr;
    const int span = (ramp->lanes - 1) * static_cast<int>(stride->value) + 1;
    llvm::Value* all = ContiguousLoad(info, base, span);
    std::vector<int> picks;
    for (int k = 0; k < ramp->lanes; ++k) picks.push_back(k * static_cast<int>(stride->value));
    return b_.CreateShuffleVector(all, picks);
  }

  // A vector Select(cond, buf[..., clamp(Ramp(base, 1, lanes))], fill), the clamp being
  // Min(Max(r, lo), hi), or only one of them where the simplifier proved the other bound: the
  // guarded load of a padded row (GuardedLoad). Its lanes are one contiguous row segment except
  // where the ramp leaves [lo, hi], so it becomes one masked load of the in-range lanes, lanes
  // outside taking buf at lo or hi as the clamp would, instead of a gather of clamped indices.
  // Null when the select is not of that form.
  llvm::Value* GuardedRowLoad(const SelectNode& select, DataType t) {
    const auto* load = select.true_value.as<BufferLoadNode>();
    if (load == nullptr || t.is_bool() || load->indices.empty()) return nullptr;
    const BufferInfo* info = BufferOf(load->buffer);
    if (!info) return nullptr;
    auto scalar = [](const PrimExpr& e) -> PrimExpr {
      if (const auto* b = e.as<BroadcastNode>()) return b->value;
      return e->dtype.lanes() == 1 ? e : PrimExpr();
    };
    PrimExpr index = load->indices.back(), lo, hi;
    if (const auto* m = index.as<BinaryNode>(); m && m->kind() == NodeKind::kMin) {
      hi = scalar(m->b);
      index = m->a;
    }
    if (const auto* m = index.as<BinaryNode>(); m && m->kind() == NodeKind::kMax) {
      lo = scalar(m->b);
      index = m->a;
    }
    const auto* ramp = index.as<RampNode>();
    const auto* stride = ramp != nullptr ? ramp->stride.as<IntImmNode>() : nullptr;
    if (stride == nullptr || stride->value != 1 || ramp->lanes != t.lanes() || (!lo && !hi))
      return nullptr;
    std::vector<PrimExpr> at = load->indices;
    for (size_t d = 0; d + 1 < at.size(); ++d) {
      if (at[d]->dtype.lanes() != 1) return nullptr;
    }
    llvm::Value* cond = Expr(select.condition);
    llvm::Value* fill = cond ? Expr(select.false_value) : nullptr;
    llvm::Value* r = fill ? Expr(index) : nullptr;
    if (!r) return nullptr;
    // Per bound: the lanes past it, and buf at it (one scalar load) for them.
    llvm::Value* in_range = nullptr;
    llvm::Value* edges = nullptr;  // the clamped lanes' values
    for (const PrimExpr& bound : {lo, hi}) {
      if (!bound) continue;
      llvm::Value* v = Expr(bound);
      if (!v || v->getType() != r->getType()->getScalarType()) return nullptr;
      llvm::Value* splat = b_.CreateVectorSplat(t.lanes(), v);
      llvm::Value* past =
          bound.get() == lo.get() ? b_.CreateICmpSLT(r, splat) : b_.CreateICmpSGT(r, splat);
      at.back() = bound;
      llvm::Value* edge = ScalarLoad(*info, at);
      if (!edge) return nullptr;
      llvm::Value* edge_splat = b_.CreateVectorSplat(t.lanes(), edge);
      edges = edges ? b_.CreateSelect(past, edge_splat, edges) : edge_splat;
      llvm::Value* inside = b_.CreateNot(past);
      in_range = in_range ? b_.CreateAnd(in_range, inside) : inside;
    }
    at.back() = ramp->base;
    llvm::Value* base = FlatIndex(*info, at);
    if (!base) return nullptr;
    if (!cond->getType()->isVectorTy()) cond = b_.CreateVectorSplat(t.lanes(), cond);
    if (!fill->getType()->isVectorTy()) fill = b_.CreateVectorSplat(t.lanes(), fill);
    // Lanes masked off are never read: the ramp may run past the row, even past the buffer (so
    // the address is no inbounds GEP).
    llvm::Value* address = b_.CreateGEP(MemType(info->dtype.element_of()), info->data, base);
    llvm::Value* loaded = b_.CreateMaskedLoad(MemType(t), address, llvm::Align(info->dtype.bytes()),
                                              b_.CreateAnd(cond, in_range), edges);
    return b_.CreateSelect(cond, FromMemory(loaded, t), fill);
  }

  // One element of the buffer, as stored in memory (bool as a byte); null on failure.
  llvm::Value* ScalarLoad(const BufferInfo& info, const std::vector<PrimExpr>& indices) {
    llvm::Value* flat = FlatIndex(info, indices);
    if (!flat) return nullptr;
    llvm::Type* mem = MemType(info.dtype);
    llvm::LoadInst* v = b_.CreateLoad(mem, b_.CreateInBoundsGEP(mem, info.data, flat));
    Tag(v, info);
    return v;
  }

  llvm::Value* FlatIndex(const BufferInfo& info, const std::vector<PrimExpr>& indices) {
    if (indices.size() != info.strides.size()) {
      Fail(absl::StrCat(name_, ": a buffer access with ", indices.size(),
                        " indices on a buffer of rank ", info.strides.size()));
      return nullptr;
    }
    llvm::Value* flat = b_.getInt64(0);
    for (size_t d = 0; d < indices.size(); ++d) {
      llvm::Value* i = Index(indices[d]);
      if (!i) return nullptr;
      llvm::Value* stride = info.strides[d];
      Match(&i, &stride);
      llvm::Value* term = b_.CreateMul(i, stride, "", false, true);
      Match(&flat, &term);
      flat = b_.CreateAdd(flat, term, "", false, true);
    }
    return flat;
  }

  const BufferInfo* BufferOf(const Buffer& b) {
    auto it = buffers_.find(b.get());
    if (it == buffers_.end()) {
      Fail(absl::StrCat(name_, ": buffer '", b ? b->name : "?",
                        "' is not a parameter or allocation"));
      return nullptr;
    }
    return &it->second;
  }

  llvm::Value* Cast(llvm::Value* v, DataType from, DataType to) {
    llvm::Type* target = Type(to);
    if (from == to) return v;
    if (to.is_bool()) {
      return from.is_float() ? b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0))
                             : b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
    }
    if (from.is_integral() && to.is_integral()) return b_.CreateIntCast(v, target, from.is_int());
    if (from.is_integral())
      return from.is_int() ? b_.CreateSIToFP(v, target) : b_.CreateUIToFP(v, target);
    if (to.is_integral())
      return to.is_int() ? b_.CreateFPToSI(v, target) : b_.CreateFPToUI(v, target);
    return b_.CreateFPCast(v, target);
  }

  llvm::Value* MathCall(const ir::CallNode& c) {
    // A module decoded from the wire may hold any argument count: check it before args[0].
    if (int arity = ir::MathIntrinsicArity(c.op);
        arity > 0 && c.args.size() != static_cast<size_t>(arity)) {
      Fail(absl::StrCat(name_, ": ", c.op, " takes ", arity, " arguments, got ", c.args.size()));
      return nullptr;
    }
    std::vector<llvm::Value*> args;
    for (const PrimExpr& a : c.args) {
      llvm::Value* v = Expr(a);
      if (!v) return nullptr;
      args.push_back(v);
    }
    llvm::Type* t = Type(c.dtype);
    if (c.op == "shift_left" || c.op == "shift_right") {
      if (!c.dtype.is_int() && !c.dtype.is_uint()) {
        Fail(absl::StrCat(name_, ": ", c.op, " needs an integer type, not ", c.dtype.ToString()));
        return nullptr;
      }
      // Shifting by the width or more is poison in LLVM: such a shift gives 0 here (the sign, for
      // an arithmetic right shift), as every bit is shifted out.
      llvm::Value* width = llvm::ConstantInt::get(t, c.dtype.bits());
      llvm::Value* over = b_.CreateICmpUGE(args[1], width);
      llvm::Value* amount =
          b_.CreateSelect(over, llvm::ConstantInt::get(t, c.dtype.bits() - 1), args[1]);
      if (c.op == "shift_left") {
        return b_.CreateSelect(over, llvm::Constant::getNullValue(t),
                               b_.CreateShl(args[0], amount));
      }
      if (c.dtype.is_uint()) {
        return b_.CreateSelect(over, llvm::Constant::getNullValue(t),
                               b_.CreateLShr(args[0], amount));
      }
      return b_.CreateAShr(args[0], amount);
    }
    static const std::unordered_map<std::string, llvm::Intrinsic::ID> kIntrinsics = {
        {"exp", llvm::Intrinsic::exp},     {"exp2", llvm::Intrinsic::exp2},
        {"log", llvm::Intrinsic::log},     {"log2", llvm::Intrinsic::log2},
        {"sqrt", llvm::Intrinsic::sqrt},   {"fabs", llvm::Intrinsic::fabs},
        {"floor", llvm::Intrinsic::floor}, {"ceil", llvm::Intrinsic::ceil},
        {"round", llvm::Intrinsic::round}, {"trunc", llvm::Intrinsic::trunc},
        {"sin", llvm::Intrinsic::sin},     {"cos", llvm::Intrinsic::cos},
        {"pow", llvm::Intrinsic::pow},     {"fma", llvm::Intrinsic::fma}};
    if (!c.dtype.is_float() && c.op != "if_then_else") {
      Fail(absl::StrCat(name_, ": ", c.op, " needs a float type, not ", c.dtype.ToString()));
      return nullptr;
    }
    if (c.dtype.bits() == 32 && HasFastMath(c.op)) return EmitFastMath(b_, c.op, args[0]);
    auto it = kIntrinsics.find(c.op);
    if (it != kIntrinsics.end()) {
      llvm::Function* f = llvm::Intrinsic::getDeclaration(module_, it->second, {t});
      return b_.CreateCall(f, args);
    }
    if (c.op == "rsqrt") {
      llvm::Function* f = llvm::Intrinsic::getDeclaration(module_, llvm::Intrinsic::sqrt, {t});
      return b_.CreateFDiv(llvm::ConstantFP::get(t, 1.0), b_.CreateCall(f, args));
    }
    if (c.op == "sigmoid") {
      llvm::Function* f = llvm::Intrinsic::getDeclaration(module_, llvm::Intrinsic::exp, {t});
      llvm::Value* e = b_.CreateCall(f, {b_.CreateFNeg(args[0])});
      return b_.CreateFDiv(llvm::ConstantFP::get(t, 1.0),
                           b_.CreateFAdd(llvm::ConstantFP::get(t, 1.0), e));
    }
    if (c.op == "isnan") return b_.CreateFCmpUNO(args[0], args[0]);
    static const std::set<std::string> kLibm = {"tanh", "erf",  "log1p", "tan",   "asin",  "acos",
                                                "atan", "sinh", "cosh",  "asinh", "acosh", "atanh"};
    if (kLibm.count(c.op) > 0) {
      if (c.dtype.bits() != 32 && c.dtype.bits() != 64) {
        Fail(absl::StrCat(name_, ": ", c.op, " on ", c.dtype.ToString(), " is not supported"));
        return nullptr;
      }
      // libm, resolved when the library is loaded; one call per lane for vectors.
      llvm::Type* scalar = t->getScalarType();
      std::string fname = c.dtype.bits() == 32 ? c.op + "f" : c.op;
      llvm::FunctionCallee f =
          module_->getOrInsertFunction(fname, llvm::FunctionType::get(scalar, {scalar}, false));
      if (c.dtype.lanes() == 1) return b_.CreateCall(f, args);
      llvm::Value* out = llvm::UndefValue::get(t);
      for (int lane = 0; lane < c.dtype.lanes(); ++lane) {
        llvm::Value* x = b_.CreateExtractElement(args[0], lane);
        out = b_.CreateInsertElement(out, b_.CreateCall(f, {x}), lane);
      }
      return out;
    }
    Fail(absl::StrCat(name_, ": the intrinsic '", c.op, "' is not supported by code generation"));
    return nullptr;
  }

  llvm::Value* Expr(const PrimExpr& e) {
    if (!status_.ok() || !e) return Fail(absl::StrCat(name_, ": a null expression")), nullptr;
    DataType t = e->dtype;
    if (const auto* i = e.as<IntImmNode>())
      return llvm::ConstantInt::get(Type(t), static_cast<uint64_t>(i->value), t.is_int());
    if (const auto* f = e.as<FloatImmNode>()) return llvm::ConstantFP::get(Type(t), f->value);
    if (const auto* v = e.as<VarNode>()) {
      auto it = vars_.find(v);
      if (it == vars_.end())
        return Fail(absl::StrCat(name_, ": variable '", v->name, "' is not bound")), nullptr;
      return it->second;
    }
    if (const auto* c = e.as<CastNode>()) {
      llvm::Value* v = Expr(c->value);
      return v ? Cast(v, c->value->dtype, t) : nullptr;
    }
    if (const auto* n = e.as<NotNode>()) {
      llvm::Value* v = Expr(n->a);
      return v ? b_.CreateNot(v) : nullptr;
    }
    if (const auto* s = e.as<SelectNode>()) {
      if (t.lanes() > 1) {
        if (llvm::Value* v = GuardedRowLoad(*s, t)) return v;
      }
      llvm::Value* c = Expr(s->condition);
      llvm::Value* a = c ? Expr(s->true_value) : nullptr;
      llvm::Value* b = a ? Expr(s->false_value) : nullptr;
      return b ? b_.CreateSelect(c, a, b) : nullptr;
    }
    if (const auto* l = e.as<BufferLoadNode>()) {
      const BufferInfo* info = BufferOf(l->buffer);
      if (!info) return nullptr;
      if (t.lanes() > 1) {  // a vector load: contiguous, or a gather
        llvm::Type* vec = MemType(t);
        if (llvm::Value* base = ContiguousBase(*info, l->indices))
          return FromMemory(ContiguousLoad(*info, base, t.lanes()), t);
        if (llvm::Value* strided = StridedLoad(*info, l->indices, t)) return strided;
        llvm::Value* flat = FlatIndex(*info, l->indices);
        if (!flat) return nullptr;
        if (!flat->getType()->isVectorTy()) flat = b_.CreateVectorSplat(t.lanes(), flat);
        if (info->register_tile && !t.is_bool()) {
          // Lanes across an accumulator tile (a packed convolution's write-back, reading one
          // output channel of each pixel): element loads LLVM turns into shuffles of the
          // registers the tile lives in, where a gather would go through memory.
          llvm::Type* elem = MemType(info->dtype.element_of());
          llvm::Value* lanes = llvm::PoisonValue::get(vec);
          for (int k = 0; k < t.lanes(); ++k) {
            llvm::Value* at = b_.CreateGEP(elem, info->data, b_.CreateExtractElement(flat, k));
            llvm::LoadInst* one = b_.CreateLoad(elem, at);
            Tag(one, *info);
            lanes = b_.CreateInsertElement(lanes, one, k);
          }
          return FromMemory(lanes, t);
        }
        return FromMemory(
            b_.CreateMaskedGather(vec, Address(*info, flat), llvm::Align(info->dtype.bytes())), t);
      }
      llvm::Value* v = ScalarLoad(*info, l->indices);
      return v && info->dtype.is_bool() ? b_.CreateTrunc(v, i1_) : v;
    }
    if (const auto* r = e.as<RampNode>()) {
      llvm::Value* base = Expr(r->base);
      llvm::Value* stride = base ? Expr(r->stride) : nullptr;
      if (!stride) return nullptr;
      std::vector<llvm::Constant*> lanes;
      for (int i = 0; i < r->lanes; ++i)
        lanes.push_back(llvm::ConstantInt::get(base->getType(), i));
      llvm::Value* steps = llvm::ConstantVector::get(lanes);
      return b_.CreateAdd(b_.CreateVectorSplat(r->lanes, base),
                          b_.CreateMul(b_.CreateVectorSplat(r->lanes, stride), steps));
    }
    if (const auto* bc = e.as<BroadcastNode>()) {
      llvm::Value* v = Expr(bc->value);
      return v ? b_.CreateVectorSplat(bc->lanes, v) : nullptr;
    }
    if (const auto* l = e.as<LetNode>()) {
      llvm::Value* v = Expr(l->value);
      if (!v) return nullptr;
      vars_[l->var.get()] = v;
      return Expr(l->body);
    }
    if (const auto* c = e.as<ir::CallNode>()) {
      if (c->op == "if_then_else" && c->args.size() == 3) {
        llvm::Value* cond = Expr(c->args[0]);
        llvm::Value* a = cond ? Expr(c->args[1]) : nullptr;
        llvm::Value* b = a ? Expr(c->args[2]) : nullptr;
        return b ? b_.CreateSelect(cond, a, b) : nullptr;
      }
      return MathCall(*c);
    }
    if (const auto* bin = e.as<BinaryNode>()) return BinaryOp(*bin);
    return Fail(absl::StrCat(name_, ": ", NodeKindName(e->kind()),
                             " is not supported by code generation yet")),
           nullptr;
  }

  llvm::Value* BinaryOp(const BinaryNode& n) {
    llvm::Value* a = Expr(n.a);
    llvm::Value* b = a ? Expr(n.b) : nullptr;
    if (!b) return nullptr;
    DataType t = n.a->dtype;
    bool fp = t.is_float();
    bool sign = t.is_int();
    switch (n.kind()) {
      case NodeKind::kAdd:
        return fp ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b, "", false, sign);
      case NodeKind::kSub:
        return fp ? b_.CreateFSub(a, b) : b_.CreateSub(a, b, "", false, sign);
      case NodeKind::kMul:
        return fp ? b_.CreateFMul(a, b) : b_.CreateMul(a, b, "", false, sign);
      case NodeKind::kDiv:
        return fp ? b_.CreateFDiv(a, b) : sign ? b_.CreateSDiv(a, b) : b_.CreateUDiv(a, b);
      case NodeKind::kMod:
        return fp ? b_.CreateFRem(a, b) : sign ? b_.CreateSRem(a, b) : b_.CreateURem(a, b);
      case NodeKind::kFloorDiv: {
        if (fp) {
          llvm::Function* floor =
              llvm::Intrinsic::getDeclaration(module_, llvm::Intrinsic::floor, {a->getType()});
          return b_.CreateCall(floor, {b_.CreateFDiv(a, b)});
        }
        if (!sign) return b_.CreateUDiv(a, b);
        // Round toward negative infinity: adjust when the remainder's sign differs from b's.
        llvm::Value* q = b_.CreateSDiv(a, b);
        llvm::Value* r = b_.CreateSRem(a, b);
        llvm::Value* zero = llvm::ConstantInt::get(a->getType(), 0);
        llvm::Value* adjust =
            b_.CreateAnd(b_.CreateICmpNE(r, zero),
                         b_.CreateICmpNE(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(b, zero)));
        return b_.CreateSub(q, b_.CreateZExt(adjust, a->getType()));
      }
      case NodeKind::kFloorMod: {
        if (fp) {
          llvm::Function* floor =
              llvm::Intrinsic::getDeclaration(module_, llvm::Intrinsic::floor, {a->getType()});
          return b_.CreateFSub(a, b_.CreateFMul(b, b_.CreateCall(floor, {b_.CreateFDiv(a, b)})));
        }
        if (!sign) return b_.CreateURem(a, b);
        llvm::Value* r = b_.CreateSRem(a, b);
        llvm::Value* zero = llvm::ConstantInt::get(a->getType(), 0);
        llvm::Value* adjust =
            b_.CreateAnd(b_.CreateICmpNE(r, zero),
                         b_.CreateICmpNE(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(b, zero)));
        return b_.CreateSelect(adjust, b_.CreateAdd(r, b), r);
      }
      case NodeKind::kMin:
        return b_.CreateSelect(fp     ? b_.CreateFCmpOLT(a, b)
                               : sign ? b_.CreateICmpSLT(a, b)
                                      : b_.CreateICmpULT(a, b),
                               a, b);
      case NodeKind::kMax:
        return b_.CreateSelect(fp     ? b_.CreateFCmpOGT(a, b)
                               : sign ? b_.CreateICmpSGT(a, b)
                                      : b_.CreateICmpUGT(a, b),
                               a, b);
      case NodeKind::kEQ:
        return fp ? b_.CreateFCmpOEQ(a, b) : b_.CreateICmpEQ(a, b);
      case NodeKind::kNE:
        return fp ? b_.CreateFCmpUNE(a, b) : b_.CreateICmpNE(a, b);
      case NodeKind::kLT:
        return fp ? b_.CreateFCmpOLT(a, b) : sign ? b_.CreateICmpSLT(a, b) : b_.CreateICmpULT(a, b);
      case NodeKind::kLE:
        return fp ? b_.CreateFCmpOLE(a, b) : sign ? b_.CreateICmpSLE(a, b) : b_.CreateICmpULE(a, b);
      case NodeKind::kGT:
        return fp ? b_.CreateFCmpOGT(a, b) : sign ? b_.CreateICmpSGT(a, b) : b_.CreateICmpUGT(a, b);
      case NodeKind::kGE:
        return fp ? b_.CreateFCmpOGE(a, b) : sign ? b_.CreateICmpSGE(a, b) : b_.CreateICmpUGE(a, b);
      case NodeKind::kAnd:
        return b_.CreateAnd(a, b);
      case NodeKind::kOr:
        return b_.CreateOr(a, b);
      default:
        return Fail(absl::StrCat(name_, ": unsupported operator")), nullptr;
    }
  }

  // ---- Statements ----
  void Stmt(const ir::Stmt& s) {
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

  // Roughly how many elements a statement computes (a vector store counts its lanes), with
  // loops of symbolic extent counted as large; `exact` turns false when there is one.
  static double Work(const ir::Stmt& s, bool* exact = nullptr) {
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

  void For(const ForNode& f) {
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
    // register allocation) sees straight-line code.
    const int64_t* umin = AsConstInt(f.min);
    const int64_t* uext = AsConstInt(f.extent);
    if (f.for_kind == ForKind::kUnrolled && umin != nullptr && uext != nullptr && *uext <= 16) {
      for (int64_t i = 0; i < *uext && status_.ok(); ++i) {
        vars_[f.loop_var.get()] = llvm::ConstantInt::get(Type(f.loop_var->dtype), *umin + i, true);
        Stmt(f.body);
      }
      return;
    }
    SerialLoop(f);
  }

  // The loop over [min, min + extent) run on this thread.
  void SerialLoop(const ForNode& f) {
    llvm::Value* min = Expr(f.min);
    llvm::Value* extent = min ? Expr(f.extent) : nullptr;
    if (!extent) return;
    llvm::Type* t = Type(f.loop_var->dtype);
    min = b_.CreateIntCast(min, t, true);
    SerialLoop(f, min, b_.CreateAdd(min, b_.CreateIntCast(extent, t, true)));
  }

  // for (loop_var = begin; loop_var < end; ++loop_var) body, with the schedule's loop hints.
  void SerialLoop(const ForNode& f, llvm::Value* begin, llvm::Value* end) {
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
    if (f.for_kind == ForKind::kVectorized || f.for_kind == ForKind::kUnrolled) {
      llvm::MDNode* hint =
          llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, f.for_kind == ForKind::kVectorized
                                                                 ? "llvm.loop.vectorize.enable"
                                                                 : "llvm.loop.unroll.full"),
                                   llvm::ConstantAsMetadata::get(b_.getTrue())});
      llvm::MDNode* loop = llvm::MDNode::getDistinct(ctx_, {nullptr, hint});
      loop->replaceOperandWith(0, loop);
      back->setMetadata(llvm::LLVMContext::MD_loop, loop);
    }
    b_.SetInsertPoint(done);
  }

  // A parallel loop of symbolic extent: launched on the pool when the extent reaches
  // `min_parallel_extent` iterations, else run serially here.
  void ParallelIfLarge(const ForNode& f, int64_t min_parallel_extent) {
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

  // A parallel loop: its body becomes a task function running one chunk of the iterations,
  // launched through ctx->parallel_for with the values it uses passed in a closure struct.
  void ParallelLoop(const ForNode& f) {
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
    for (const VarNode* v : uses.vars) {
      if (vars_.count(v) == 0 || std::find(vars.begin(), vars.end(), v) != vars.end()) continue;
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

  void Allocate(const AllocateNode& a) {
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
      return (void)Fail(absl::StrCat(name_, ": allocation '", buffer->name, "' of ", bytes,
                                     " bytes is too large"));
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
      Check(b_.CreateICmpNE(mem, llvm::ConstantPointerNull::get(ptr_)),
            absl::StrCat(name_, ": out of memory allocating '", buffer->name, "' (", bytes,
                         " bytes)"));
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

  // An allocation whose size is only known at run time: on the heap for the extent of its body.
  // Its pointer lives in a slot (null outside the body) that the failure exit also frees.
  void DynamicAllocate(const AllocateNode& a) {
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
    llvm::FunctionCallee free_fn = module_->getOrInsertFunction(
        "free", llvm::FunctionType::get(b_.getVoidTy(), {ptr_}, false));
    b_.CreateCall(free_fn, {b_.CreateLoad(ptr_, slot)});
    b_.CreateStore(llvm::ConstantPointerNull::get(ptr_), slot);
  }

  static constexpr int64_t kMaxStackBytes = 64 * 1024;  // larger allocations go to the heap

  llvm::LLVMContext& ctx_;
  llvm::Module* module_;
  llvm::IRBuilder<> b_;
  const bool masked_tails_;
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

std::unique_ptr<llvm::TargetMachine> MakeTargetMachine(const LlvmTargetInfo& target) {
  std::string error;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(target.triple, error);
  if (t == nullptr) return nullptr;
  llvm::TargetOptions options;
  options.AllowFPOpFusion = llvm::FPOpFusion::Fast;  // honor the contract flags on fmul/fadd
  return std::unique_ptr<llvm::TargetMachine>(
      t->createTargetMachine(target.triple, target.cpu, target.features, options, llvm::Reloc::PIC_,
                             std::nullopt, llvm::CodeGenOpt::Aggressive));
}

// The LLVM module of `mod`'s PrimFuncs, or of those `only` names when given; the ABI version
// symbol goes into the module that `with_abi_version` says (one per library).
absl::StatusOr<std::unique_ptr<llvm::Module>> BuildModule(
    llvm::LLVMContext& ctx, const IRModule& mod, const LlvmTargetInfo& target,
    const std::vector<std::string>* only = nullptr, bool with_abi_version = true) {
  auto module = std::make_unique<llvm::Module>("kiln", ctx);
  module->setTargetTriple(target.triple);
  module->setDataLayout(target.data_layout);
  const bool masked_tails = std::find(target.device_features.begin(), target.device_features.end(),
                                      "avx512f") != target.device_features.end();
  KernelCodeGen gen(ctx, module.get(), masked_tails);
  for (const auto& [name, entry] : mod->functions) {
    const auto* f = entry.second.as<PrimFuncNode>();
    if (f == nullptr) continue;
    if (only != nullptr && std::find(only->begin(), only->end(), name) == only->end()) continue;
    absl::Status s = gen.Generate(name, *f);
    if (!s.ok()) return s;
  }
  // Owned by the module.
  if (with_abi_version) {
    new llvm::GlobalVariable(
        *module, llvm::Type::getInt32Ty(ctx), true, llvm::GlobalValue::ExternalLinkage,
        llvm::ConstantInt::get(llvm::Type::getInt32Ty(ctx), KILN_KERNEL_ABI_VERSION),
        "kiln_abi_version");
  }
  std::string errors;
  llvm::raw_string_ostream os(errors);
  if (llvm::verifyModule(*module, &os)) {
    return absl::InternalError(
        absl::StrCat("code generation produced invalid LLVM IR: ", os.str()));
  }
  return module;
}

}  // namespace

absl::StatusOr<std::string> EmitLlvmIr(const IRModule& lowered, const LlvmTargetInfo& target) {
  llvm::LLVMContext ctx;
  absl::StatusOr<std::unique_ptr<llvm::Module>> module = BuildModule(ctx, lowered, target);
  if (!module.ok()) return module.status();
  std::string text;
  llvm::raw_string_ostream os(text);
  (*module)->print(os, nullptr);
  return os.str();
}

namespace {

// One object of the PrimFuncs `only` names (all when null), in its own LLVM context.
absl::StatusOr<std::string> CompilePart(const IRModule& lowered, const LlvmTargetInfo& target,
                                        const std::vector<std::string>* only, bool with_abi_version,
                                        bool quick = false) {
  llvm::LLVMContext ctx;
  absl::StatusOr<std::unique_ptr<llvm::Module>> module =
      BuildModule(ctx, lowered, target, only, with_abi_version);
  if (!module.ok()) return module.status();
  std::unique_ptr<llvm::TargetMachine> tm = MakeTargetMachine(target);
  if (!tm) return absl::InternalError(absl::StrCat("no LLVM target machine for ", target.triple));
  // The new pass manager's O3 pipeline (O1 when quick).
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(tm.get());
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(
      quick ? llvm::OptimizationLevel::O1 : llvm::OptimizationLevel::O3);
  mpm.run(**module, mam);
  // Object code.
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream out(buffer);
  llvm::legacy::PassManager emit;
  if (tm->addPassesToEmitFile(emit, out, nullptr, llvm::CGFT_ObjectFile)) {
    return absl::InternalError("LLVM cannot emit object files for this target");
  }
  emit.run(**module);
  return std::string(buffer.begin(), buffer.end());
}

}  // namespace

absl::StatusOr<std::string> CompileToObject(const IRModule& lowered, const LlvmTargetInfo& target) {
  return CompilePart(lowered, target, nullptr, true);
}

absl::StatusOr<std::vector<std::string>> CompileToObjects(const IRModule& lowered,
                                                          const LlvmTargetInfo& target, int parts,
                                                          bool quick) {
  // The kernels dealt out in turn, in the module's order (fused kernels of one model are of
  // comparable size).
  std::vector<std::vector<std::string>> names(static_cast<size_t>(std::max(parts, 1)));
  size_t next = 0;
  for (const auto& [name, entry] : lowered->functions) {
    if (!entry.second.as<PrimFuncNode>()) continue;
    names[next++ % names.size()].push_back(name);
  }
  while (names.size() > 1 && names.back().empty()) names.pop_back();
  std::vector<absl::StatusOr<std::string>> objects(names.size(), absl::UnknownError(""));
  std::vector<std::thread> threads;
  for (size_t p = 1; p < names.size(); ++p) {
    threads.emplace_back(
        [&, p] { objects[p] = CompilePart(lowered, target, &names[p], false, quick); });
  }
  objects[0] = CompilePart(lowered, target, &names[0], true, quick);
  for (std::thread& t : threads) t.join();
  std::vector<std::string> out;
  for (absl::StatusOr<std::string>& o : objects) {
    if (!o.ok()) return o.status();
    out.push_back(std::move(*o));
  }
  return out;
}

}  // namespace kiln::codegen
