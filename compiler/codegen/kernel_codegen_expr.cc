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
#include "llvm/IR/IntrinsicsAArch64.h"
#include "llvm/IR/IntrinsicsX86.h"
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

// A vector load striding at most this far is one wide load and a shuffle; beyond, a gather.
constexpr int64_t kMaxLoadStride = 4;

llvm::Value* KernelCodeGen::Index(const PrimExpr& e) {
  llvm::Value* v = Expr(e);
  if (!v) return nullptr;
  llvm::Type* t = i64_;
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType())) {
    t = llvm::FixedVectorType::get(i64_, vt->getNumElements());
  }
  return b_.CreateIntCast(v, t, !e->dtype.is_uint());
}

void KernelCodeGen::Match(llvm::Value** a, llvm::Value** b) {
  auto* va = llvm::dyn_cast<llvm::FixedVectorType>((*a)->getType());
  auto* vb = llvm::dyn_cast<llvm::FixedVectorType>((*b)->getType());
  if (va != nullptr && vb == nullptr) *b = b_.CreateVectorSplat(va->getNumElements(), *b);
  if (vb != nullptr && va == nullptr) *a = b_.CreateVectorSplat(vb->getNumElements(), *a);
}

llvm::Value* KernelCodeGen::Address(const BufferInfo& info, llvm::Value* flat) {
  return b_.CreateInBoundsGEP(MemType(info.dtype.element_of()), info.data, flat);
}

llvm::Value* KernelCodeGen::ContiguousBase(const BufferInfo& info,
                                           const std::vector<PrimExpr>& indices) {
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

bool KernelCodeGen::MaskedWidth(const BufferInfo& info, int lanes, int* width) const {
  *width = static_cast<int>(llvm::PowerOf2Ceil(lanes));
  return masked_tails_ && lanes > 2 && *width != lanes && !info.register_tile;
}

llvm::Constant* KernelCodeGen::FirstLanes(int lanes, int width) {
  std::vector<llvm::Constant*> bits;
  for (int k = 0; k < width; ++k) bits.push_back(b_.getInt1(k < lanes));
  return llvm::ConstantVector::get(bits);
}

llvm::Value* KernelCodeGen::ContiguousLoad(const BufferInfo& info, llvm::Value* base, int lanes) {
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

void KernelCodeGen::ContiguousStore(const BufferInfo& info, llvm::Value* base, llvm::Value* value) {
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

llvm::Value* KernelCodeGen::StridedLoad(const BufferInfo& info,
                                        const std::vector<PrimExpr>& indices, DataType t) {
  if (indices.empty() || t.is_bool()) return nullptr;
  const auto* ramp = indices.back().as<RampNode>();
  const auto* stride = ramp != nullptr ? ramp->stride.as<IntImmNode>() : nullptr;
  if (stride == nullptr || stride->value < 2 || stride->value > kMaxLoadStride) return nullptr;
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

llvm::Value* KernelCodeGen::GuardedRowLoad(const SelectNode& select, DataType t) {
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
  if (stride == nullptr || stride->value < 1 || stride->value > kMaxLoadStride ||
      ramp->lanes != t.lanes() || (!lo && !hi))
    return nullptr;
  std::vector<PrimExpr> at = load->indices;
  for (size_t d = 0; d + 1 < at.size(); ++d) {
    if (at[d]->dtype.lanes() != 1) return nullptr;
  }
  llvm::Value* cond = Expr(select.condition);
  llvm::Value* fill = cond ? Expr(select.false_value) : nullptr;
  llvm::Value* r = fill ? Expr(index) : nullptr;
  if (!r) return nullptr;
  // A strided row's lanes are compared as 32-bit offsets from its first element (AVX2 compares
  // 64-bit lanes four at a time, and a row of 113 takes dozens of them).
  const int s = static_cast<int>(stride->value);
  const int span = (t.lanes() - 1) * s + 1;
  llvm::Value* row_base = s > 1 ? Expr(ramp->base) : nullptr;
  if (s > 1 && !row_base) return nullptr;
  auto iota32 = [&](int n, int step) {
    std::vector<llvm::Constant*> v;
    for (int k = 0; k < n; ++k) v.push_back(b_.getInt32(k * step));
    return llvm::ConstantVector::get(v);
  };
  // The bound as an offset from the row's first element, within [-1, span].
  auto offset32 = [&](llvm::Value* bound) {
    llvm::Value* off = b_.CreateSub(bound, row_base);
    llvm::Value* low = llvm::ConstantInt::get(off->getType(), -1);
    llvm::Value* high = llvm::ConstantInt::get(off->getType(), span);
    off = b_.CreateSelect(b_.CreateICmpSLT(off, low), low, off);
    off = b_.CreateSelect(b_.CreateICmpSGT(off, high), high, off);
    return b_.CreateTrunc(off, i32_);
  };
  llvm::Value* inside = nullptr;  // a strided row's elements within the bounds
  // Per bound: the lanes past it, and buf at it (one scalar load) for them.
  llvm::Value* in_range = nullptr;
  llvm::Value* edges = nullptr;  // the clamped lanes' values
  for (const PrimExpr& bound : {lo, hi}) {
    if (!bound) continue;
    llvm::Value* v = Expr(bound);
    if (!v || v->getType() != r->getType()->getScalarType()) return nullptr;
    const bool is_lo = bound.get() == lo.get();
    llvm::Value* past;
    if (s > 1) {
      llvm::Value* off = offset32(v);
      llvm::Value* narrow = iota32(t.lanes(), s);
      llvm::Value* lanes_off = b_.CreateVectorSplat(t.lanes(), off);
      past = is_lo ? b_.CreateICmpSLT(narrow, lanes_off) : b_.CreateICmpSGT(narrow, lanes_off);
      llvm::Value* wide = iota32(span, 1);
      llvm::Value* wide_off = b_.CreateVectorSplat(span, off);
      llvm::Value* ok = is_lo ? b_.CreateICmpSGE(wide, wide_off) : b_.CreateICmpSLE(wide, wide_off);
      inside = inside ? b_.CreateAnd(inside, ok) : ok;
    } else {
      llvm::Value* splat = b_.CreateVectorSplat(t.lanes(), v);
      past = is_lo ? b_.CreateICmpSLT(r, splat) : b_.CreateICmpSGT(r, splat);
    }
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
  if (s > 1) {
    // Every stride-th element of one masked load of the whole span (a deinterleaved row of a
    // stride-2 convolution's padded input), its elements past the bounds masked off; the lanes
    // the index clamps take the edge values.
    llvm::Type* elem = MemType(info->dtype.element_of());
    llvm::Type* wide_type = llvm::FixedVectorType::get(elem, span);
    llvm::Value* address = b_.CreateGEP(elem, info->data, base);
    const llvm::Align align(info->dtype.bytes());
    std::vector<int> picks;
    for (int k = 0; k < t.lanes(); ++k) picks.push_back(k * s);
    llvm::Value* picked =
        masked_tails_
            ? b_.CreateShuffleVector(b_.CreateMaskedLoad(wide_type, address, align, inside), picks)
        : s == 2 ? PiecewiseEveryOther(elem, address, span, inside, align, t.lanes())
                 : nullptr;
    if (!picked) return nullptr;  // a gather
    llvm::Value* value = b_.CreateSelect(in_range, FromMemory(picked, t), FromMemory(edges, t));
    return b_.CreateSelect(cond, value, fill);
  }

  // Lanes masked off are never read: the ramp may run past the row, even past the buffer (so
  // the address is no inbounds GEP).
  llvm::Value* address = b_.CreateGEP(MemType(info->dtype.element_of()), info->data, base);
  llvm::Value* loaded = b_.CreateMaskedLoad(MemType(t), address, llvm::Align(info->dtype.bytes()),
                                            b_.CreateAnd(cond, in_range), edges);
  return b_.CreateSelect(cond, FromMemory(loaded, t), fill);
}

// Every other element of the `span` elements at `address` (those `on` selects; the rest zero),
// as `lanes` lanes, where the target masks loads of 8 lanes only (AVX2's vmaskmovps): masked loads
// of 8, each pair of them deinterleaved into 8 lanes of the result. (LLVM turns one masked load
// of 113 lanes into scalar code on AVX2.)
llvm::Value* KernelCodeGen::PiecewiseEveryOther(llvm::Type* elem, llvm::Value* address, int span,
                                                llvm::Value* on, llvm::Align align, int lanes) {
  constexpr int kPiece = 8;
  std::vector<llvm::Value*> pieces;
  for (int at = 0; at < span; at += kPiece) {
    std::vector<int> slots(kPiece);
    for (int k = 0; k < kPiece; ++k) slots[k] = std::min(at + k, span - 1);
    llvm::Value* mask = b_.CreateShuffleVector(on, slots);
    if (at + kPiece > span) {  // past the span: off
      std::vector<llvm::Constant*> bits;
      for (int k = 0; k < kPiece; ++k) bits.push_back(b_.getInt1(at + k < span));
      mask = b_.CreateAnd(mask, llvm::ConstantVector::get(bits));
    }
    pieces.push_back(b_.CreateMaskedLoad(llvm::FixedVectorType::get(elem, kPiece),
                                         b_.CreateGEP(elem, address, b_.getInt64(at)), align,
                                         mask));
  }
  if (pieces.size() % 2 == 1) pieces.push_back(llvm::Constant::getNullValue(pieces[0]->getType()));
  std::vector<int> even(kPiece);
  for (int k = 0; k < kPiece; ++k) even[k] = 2 * k;
  std::vector<llvm::Value*> parts;
  for (size_t k = 0; k < pieces.size(); k += 2)
    parts.push_back(b_.CreateShuffleVector(pieces[k], pieces[k + 1], even));
  // The parts, kPiece lanes each, joined and cut to the result's lanes.
  while (parts.size() > 1) {
    std::vector<llvm::Value*> joined;
    for (size_t k = 0; k < parts.size(); k += 2) {
      if (k + 1 == parts.size()) {
        joined.push_back(parts[k]);
        continue;
      }
      const int a = static_cast<int>(
          llvm::cast<llvm::FixedVectorType>(parts[k]->getType())->getNumElements());
      const int b = static_cast<int>(
          llvm::cast<llvm::FixedVectorType>(parts[k + 1]->getType())->getNumElements());
      llvm::Value* right = parts[k + 1];
      if (b < a) {  // widened with undefined lanes to the left one's width
        std::vector<int> widen(a);
        for (int m = 0; m < a; ++m) widen[m] = m < b ? m : -1;
        right = b_.CreateShuffleVector(right, widen);
      }
      std::vector<int> both(a + std::max(a, b));
      std::iota(both.begin(), both.end(), 0);
      joined.push_back(b_.CreateShuffleVector(parts[k], right, both));
    }
    parts = std::move(joined);
  }
  std::vector<int> first(lanes);
  std::iota(first.begin(), first.end(), 0);
  return b_.CreateShuffleVector(parts[0], first);
}

llvm::Value* KernelCodeGen::ScalarLoad(const BufferInfo& info,
                                       const std::vector<PrimExpr>& indices) {
  llvm::Value* flat = FlatIndex(info, indices);
  if (!flat) return nullptr;
  llvm::Type* mem = MemType(info.dtype);
  llvm::LoadInst* v = b_.CreateLoad(mem, b_.CreateInBoundsGEP(mem, info.data, flat));
  Tag(v, info);
  return v;
}

llvm::Value* KernelCodeGen::FlatIndex(const BufferInfo& info,
                                      const std::vector<PrimExpr>& indices) {
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

const KernelCodeGen::BufferInfo* KernelCodeGen::BufferOf(const Buffer& b) {
  auto it = buffers_.find(b.get());
  if (it == buffers_.end()) {
    Fail(
        absl::StrCat(name_, ": buffer '", b ? b->name : "?", "' is not a parameter or allocation"));
    return nullptr;
  }
  return &it->second;
}

llvm::Value* KernelCodeGen::Cast(llvm::Value* v, DataType from, DataType to) {
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

llvm::Value* KernelCodeGen::MathCall(const ir::CallNode& c) {
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
      return b_.CreateSelect(over, llvm::Constant::getNullValue(t), b_.CreateShl(args[0], amount));
    }
    if (c.dtype.is_uint()) {
      return b_.CreateSelect(over, llvm::Constant::getNullValue(t), b_.CreateLShr(args[0], amount));
    }
    return b_.CreateAShr(args[0], amount);
  }
  if (c.op == "dot4_u8i8") {
    if (c.dtype.element_of() != DataType::Int(32) || args[1]->getType() != args[0]->getType() ||
        args[0]->getType() != t) {
      Fail(
          absl::StrCat(name_, ": dot4_u8i8 takes and gives int32 words, not ", c.dtype.ToString()));
      return nullptr;
    }
    return Dot4(nullptr, args[0], args[1], c.dtype.lanes());
  }
  static const std::unordered_map<std::string, llvm::Intrinsic::ID> kIntrinsics = {
      {"exp", llvm::Intrinsic::exp},
      {"exp2", llvm::Intrinsic::exp2},
      {"log", llvm::Intrinsic::log},
      {"log2", llvm::Intrinsic::log2},
      {"sqrt", llvm::Intrinsic::sqrt},
      {"fabs", llvm::Intrinsic::fabs},
      {"floor", llvm::Intrinsic::floor},
      {"ceil", llvm::Intrinsic::ceil},
      {"round", llvm::Intrinsic::round},
      {"trunc", llvm::Intrinsic::trunc},
      {"sin", llvm::Intrinsic::sin},
      {"cos", llvm::Intrinsic::cos},
      {"pow", llvm::Intrinsic::pow},
      {"fma", llvm::Intrinsic::fma},
      {"nearbyint", llvm::Intrinsic::roundeven}};
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

llvm::Value* KernelCodeGen::Expr(const PrimExpr& e) {
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
    for (int i = 0; i < r->lanes; ++i) lanes.push_back(llvm::ConstantInt::get(base->getType(), i));
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

Int8Dot Int8DotFor(const std::vector<std::string>& features) {
  auto has = [&](const char* f) {
    return std::find(features.begin(), features.end(), f) != features.end();
  };
  if (has("avx512_vnni") && has("avx512vl")) return Int8Dot::kVnni;
  if (has("i8mm")) return Int8Dot::kArmI8mm;
  if (has("asimddp")) return Int8Dot::kArmDotprod;
  return Int8Dot::kPortable;
}

llvm::Value* KernelCodeGen::Dot4InPieces(
    llvm::Value* acc, llvm::Value* a, llvm::Value* b, int lanes, int piece,
    llvm::function_ref<llvm::Value*(llvm::Value*, llvm::Value*, llvm::Value*)> one) {
  if (acc == nullptr) acc = llvm::Constant::getNullValue(a->getType());
  if (piece == lanes) return one(acc, a, b);
  std::vector<llvm::Value*> parts;
  for (int at = 0; at < lanes; at += piece) {
    std::vector<int> mask(piece);
    std::iota(mask.begin(), mask.end(), at);
    parts.push_back(one(b_.CreateShuffleVector(acc, mask), b_.CreateShuffleVector(a, mask),
                        b_.CreateShuffleVector(b, mask)));
  }
  while (parts.size() > 1) {  // concatenate pairwise
    std::vector<llvm::Value*> joined;
    for (size_t i = 0; i < parts.size(); i += 2) {
      const int n = llvm::cast<llvm::FixedVectorType>(parts[i]->getType())->getNumElements();
      std::vector<int> mask(2 * n);
      std::iota(mask.begin(), mask.end(), 0);
      joined.push_back(b_.CreateShuffleVector(parts[i], parts[i + 1], mask));
    }
    parts = std::move(joined);
  }
  return parts[0];
}

llvm::Value* KernelCodeGen::Dot4(llvm::Value* acc, llvm::Value* a, llvm::Value* b, int lanes) {
  const bool arm = int8_dot_ == Int8Dot::kArmI8mm || int8_dot_ == Int8Dot::kArmDotprod;
  if (arm && lanes % 4 == 0 && (lanes & (lanes - 1)) == 0) {
    // usdot, or udot of the weights offset to uint8 less 128 x the activations' sums: both
    // exact, on 128-bit pieces of four lanes.
    llvm::Type* words = llvm::FixedVectorType::get(i32_, 4);
    llvm::Type* bytes = llvm::FixedVectorType::get(i8_, 16);
    const bool i8mm = int8_dot_ == Int8Dot::kArmI8mm;
    llvm::Function* dot = llvm::Intrinsic::getDeclaration(
        module_, i8mm ? llvm::Intrinsic::aarch64_neon_usdot : llvm::Intrinsic::aarch64_neon_udot,
        {words, bytes});
    llvm::Value* offset = llvm::ConstantInt::get(bytes, 0x80);
    return Dot4InPieces(acc, a, b, lanes, 4, [&](llvm::Value* s, llvm::Value* x, llvm::Value* y) {
      x = b_.CreateBitCast(x, bytes);
      y = b_.CreateBitCast(y, bytes);
      if (i8mm) return static_cast<llvm::Value*>(b_.CreateCall(dot, {s, x, y}));
      llvm::Value* shifted = b_.CreateCall(dot, {s, x, b_.CreateXor(y, offset)});
      return b_.CreateSub(shifted,
                          b_.CreateCall(dot, {llvm::Constant::getNullValue(words), x, offset}));
    });
  }
  if (int8_dot_ == Int8Dot::kVnni && (lanes == 4 || lanes == 8 || lanes % 16 == 0)) {
    // vpdpbusd: 16 (512-bit), 8 or 4 lanes each; wider vectors in pieces of 16.
    const int piece = std::min(lanes, 16);
    const llvm::Intrinsic::ID id = piece == 16  ? llvm::Intrinsic::x86_avx512_vpdpbusd_512
                                   : piece == 8 ? llvm::Intrinsic::x86_avx512_vpdpbusd_256
                                                : llvm::Intrinsic::x86_avx512_vpdpbusd_128;
    llvm::Function* f = llvm::Intrinsic::getDeclaration(module_, id);
    return Dot4InPieces(acc, a, b, lanes, piece,
                        [&](llvm::Value* s, llvm::Value* x, llvm::Value* y) {
                          return static_cast<llvm::Value*>(b_.CreateCall(f, {s, x, y}));
                        });
  }
  // Any other target: the bytes widened to int32, multiplied, and each word's four summed
  // (LLVM forms pmaddwd, sdot or udot from this where it can).
  llvm::Type* bytes = llvm::FixedVectorType::get(i8_, 4 * lanes);
  llvm::Type* wide = llvm::FixedVectorType::get(i32_, 4 * lanes);
  llvm::Value* products =
      b_.CreateMul(b_.CreateZExt(b_.CreateBitCast(a, bytes), wide),
                   b_.CreateSExt(b_.CreateBitCast(b, bytes), wide), "", false, true);
  llvm::Value* sum = nullptr;
  for (int k = 0; k < 4; ++k) {
    std::vector<int> mask(lanes);
    for (int i = 0; i < lanes; ++i) mask[i] = 4 * i + k;
    llvm::Value* part = b_.CreateShuffleVector(products, mask);
    sum = sum ? b_.CreateAdd(sum, part) : part;
  }
  if (lanes == 1) sum = b_.CreateExtractElement(sum, uint64_t{0});
  return acc ? b_.CreateAdd(acc, sum) : sum;
}

namespace {

// acc + dot4_u8i8(a, b): the accumulating form of the instruction.
const ir::CallNode* AsDot4(const PrimExpr& e) {
  const auto* c = e.as<ir::CallNode>();
  return c != nullptr && c->op == "dot4_u8i8" && c->args.size() == 2 ? c : nullptr;
}

}  // namespace

llvm::Value* KernelCodeGen::BinaryOp(const BinaryNode& n) {
  if (n.kind() == NodeKind::kAdd && n.a->dtype.element_of() == DataType::Int(32)) {
    const ir::CallNode* dot = AsDot4(n.b);
    const PrimExpr* acc_expr = &n.a;
    if (dot == nullptr) {
      dot = AsDot4(n.a);
      acc_expr = &n.b;
    }
    if (dot != nullptr && dot->dtype == n.a->dtype && dot->args[0]->dtype == dot->dtype &&
        dot->args[1]->dtype == dot->dtype) {
      llvm::Value* acc = Expr(*acc_expr);
      llvm::Value* x = acc ? Expr(dot->args[0]) : nullptr;
      llvm::Value* y = x ? Expr(dot->args[1]) : nullptr;
      return y ? Dot4(acc, x, y, dot->dtype.lanes()) : nullptr;
    }
  }
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

}  // namespace kiln::codegen::kernel
