#include "compiler/codegen/kernel_codegen.h"

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

namespace kiln::codegen::kernel {

bool CountPast(const llvm::BasicBlock& block, size_t limit, size_t* count) {
  for (auto it = block.begin(); it != block.end() && *count <= limit; ++it) ++*count;
  return *count > limit;
}

namespace {

// The DLPack DLDataType packed as DLTensor holds it in memory: code | bits << 8 | lanes << 16.
uint32_t PackedDType(DataType t) {
  return static_cast<uint32_t>(t.code()) | static_cast<uint32_t>(t.bits()) << 8 |
         static_cast<uint32_t>(t.lanes()) << 16;
}

}  // namespace

void KernelCodeGen::OpenFunction(llvm::Function* fn,
                                 const std::function<llvm::Value*()>& make_ctx) {
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

void KernelCodeGen::CloseFunction() {
  if (fail_message_->getNumIncomingValues() == 0) {
    fail_->eraseFromParent();
  } else if (!heap_.empty() || !heap_slots_.empty()) {
    llvm::IRBuilder<> at(fail_, fail_->getFirstInsertionPt());
    FreeHeap(at);
  }
  heap_.clear();
  heap_slots_.clear();
}

void KernelCodeGen::FreeHeap(llvm::IRBuilder<>& at) {
  llvm::FunctionCallee free_fn =
      module_->getOrInsertFunction("free", llvm::FunctionType::get(at.getVoidTy(), {ptr_}, false));
  for (llvm::Value* p : heap_) at.CreateCall(free_fn, {p});
  for (llvm::Value* slot : heap_slots_) at.CreateCall(free_fn, {at.CreateLoad(ptr_, slot)});
}

void KernelCodeGen::ReturnSuccess() {
  FreeHeap(b_);
  b_.CreateRet(b_.getInt32(0));
}

absl::Status KernelCodeGen::Generate(const std::string& name, const PrimFuncNode& f) {
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

void KernelCodeGen::Tag(llvm::Instruction* access, const BufferInfo& info) {
  if (info.scope == nullptr) return;
  access->setMetadata(llvm::LLVMContext::MD_alias_scope, info.scope);
  access->setMetadata(llvm::LLVMContext::MD_noalias, info.noalias);
}

void KernelCodeGen::AddAliasScopes(const PrimFuncNode& f) {
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

void KernelCodeGen::Fail(const std::string& message) {
  if (status_.ok()) status_ = absl::InvalidArgumentError(message);
}

llvm::Type* KernelCodeGen::Type(DataType t) {
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

llvm::Type* KernelCodeGen::MemType(DataType t) {
  if (!t.is_bool()) return Type(t);
  return t.lanes() > 1 ? static_cast<llvm::Type*>(llvm::FixedVectorType::get(i8_, t.lanes())) : i8_;
}

llvm::Value* KernelCodeGen::FromMemory(llvm::Value* v, DataType t) {
  return t.is_bool() ? b_.CreateTrunc(v, Type(t)) : v;
}

llvm::Value* KernelCodeGen::ToMemory(llvm::Value* v, DataType t) {
  return t.is_bool() ? b_.CreateZExt(v, MemType(t)) : v;
}

void KernelCodeGen::Check(llvm::Value* ok, const std::string& message) {
  llvm::BasicBlock* pass = llvm::BasicBlock::Create(ctx_, "ok", fn_);
  llvm::Constant* text = b_.CreateGlobalStringPtr(message, "msg", 0, module_);
  fail_message_->addIncoming(text, b_.GetInsertBlock());
  b_.CreateCondBr(ok, pass, fail_, llvm::MDBuilder(ctx_).createBranchWeights(1 << 20, 1));
  b_.SetInsertPoint(pass);
}

void KernelCodeGen::BindSizeVars(const Buffer& buffer, llvm::Value* tensor,
                                 const std::string& what) {
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

void KernelCodeGen::BindBuffer(const Buffer& buffer, llvm::Value* tensor, const std::string& what) {
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

}  // namespace kiln::codegen::kernel
