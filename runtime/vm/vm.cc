#include "runtime/vm/vm.h"

#include <chrono>
#include <cstring>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "runtime/vm/builtins.h"

namespace kiln::runtime::vm {
namespace {

// Deep enough for any compiled model, shallow enough that a runaway recursion in a bad
// executable ends in an error rather than a stack overflow.
constexpr int kMaxCallDepth = 256;

enum ClosureBuiltin : uint8_t { kNone = 0, kMake = 1, kInvoke = 2 };

// Where an instrumented Invoke on this thread collects kernel times (null: not instrumented).
// Per thread, since one VM serves many Invokes at once.
thread_local KernelCallTimes* t_kernel_times = nullptr;

// An If condition: an integer, or a one-element tensor of integers, bools or floats.
absl::StatusOr<bool> Truth(const Value& v) {
  if (const auto* i = v.as_int()) return *i != 0;
  if (const auto* t = v.as_tensor(); t && t->NumElements() == 1) {
    DLDataType d = t->dtype();
    const void* p = t->data();
    if (d.code == kDLFloat && d.bits == 32) return *static_cast<const float*>(p) != 0;
    if (d.code == kDLFloat && d.bits == 64) return *static_cast<const double*>(p) != 0;
    if (d.code == kDLInt || d.code == kDLUInt) {
      int64_t x = 0;
      std::memcpy(&x, p, std::min<size_t>(DataTypeBytes(d), sizeof(x)));
      return x != 0;
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "an if condition must be an int or a one-element tensor, not a ", v.kind_name()));
}

}  // namespace

absl::Status VirtualMachine::InstructionError(const FunctionInfo& f, int64_t pc,
                                              const Instruction& in,
                                              const absl::Status& status) const {
  return absl::Status(status.code(),
                      absl::StrCat("in '", f.name, "' at instruction ", pc - f.start, " (",
                                   exec_->functions[in.func].name, "): ", status.message()));
}

absl::StatusOr<std::unique_ptr<VirtualMachine>> VirtualMachine::Create(
    std::shared_ptr<const Executable> exec, std::shared_ptr<KernelLibrary> kernels,
    std::shared_ptr<ThreadPool> pool, const FunctionRegistry* user) {
  absl::Status valid = exec->Validate();
  if (!valid.ok()) return valid;
  std::unique_ptr<VirtualMachine> vm(new VirtualMachine());
  vm->exec_ = exec;
  vm->kernels_ = kernels;
  vm->packed_.resize(exec->functions.size());
  vm->is_closure_builtin_.resize(exec->functions.size(), kNone);
  vm->is_kernel_.resize(exec->functions.size(), 0);
  vm->kernel_fn_.resize(exec->functions.size(), nullptr);
  vm->kernel_what_.resize(exec->functions.size());
  vm->pool_ = pool;
  int64_t alloc_tensor = -1;  // the builtin's index, unless a kernel or user function shadows it
  for (size_t i = 0; i < exec->functions.size(); ++i) {
    const FunctionInfo& f = exec->functions[i];
    vm->index_.emplace(f.name, static_cast<int64_t>(i));
    if (f.kind == FunctionInfo::Kind::kBytecode) continue;
    if (f.name == kMakeClosure || f.name == kInvokeClosure) {
      vm->is_closure_builtin_[i] = f.name == kMakeClosure ? kMake : kInvoke;
      continue;
    }
    if (kernels) {
      if (absl::StatusOr<KilnKernelFn> fn = kernels->Lookup(f.name); fn.ok()) {
        vm->is_kernel_[i] = 1;
        vm->kernel_fn_[i] = *fn;
        vm->kernel_what_[i] = absl::StrCat(kernels->name(), ":", f.name);
        continue;
      }
    }
    if (user) {
      if (absl::StatusOr<Function> u = user->Get(f.name); u.ok()) {
        vm->packed_[i] = std::move(*u);
        continue;
      }
    }
    absl::StatusOr<Function> b = Builtins().Get(f.name);
    if (!b.ok()) {
      return absl::NotFoundError(absl::StrCat(
          "the VM executable calls '", f.name,
          "', which is neither a kernel of the library, a registered function nor a builtin"));
    }
    vm->packed_[i] = std::move(*b);
    if (f.name == "vm.builtin.alloc_tensor") alloc_tensor = static_cast<int64_t>(i);
  }
  vm->view_dtype_.resize(exec->code.size(), DLDataType{0, 0, 0});
  for (size_t pc = 0; pc < exec->code.size(); ++pc) {
    const Instruction& in = exec->code[pc];
    if (in.op != Instruction::Op::kCall || in.func != alloc_tensor || in.args.size() != 4) continue;
    const std::vector<Arg>& a = in.args;
    if (a[0].kind != Arg::Kind::kRegister || a[1].kind != Arg::Kind::kImmediate ||
        a[2].kind != Arg::Kind::kConstant || a[3].kind != Arg::Kind::kConstant ||
        exec->constants[a[2].value].as_shape() == nullptr) {
      continue;
    }
    const std::string* dtype = exec->constants[a[3].value].as_string();
    if (dtype == nullptr) continue;
    if (absl::StatusOr<DLDataType> d = ParseDataType(*dtype); d.ok() && d->bits != 0) {
      vm->view_dtype_[pc] = *d;
    }
  }
  return vm;
}

absl::StatusOr<int64_t> VirtualMachine::Index(absl::string_view name) const {
  auto it = index_.find(std::string_view(name.data(), name.size()));
  if (it == index_.end())
    return absl::NotFoundError(absl::StrCat("the executable has no function '", name, "'"));
  return it->second;
}

absl::StatusOr<Value> VirtualMachine::Invoke(absl::string_view name,
                                             absl::Span<const Value> args) const {
  absl::StatusOr<int64_t> func = Index(name);
  if (!func.ok()) return func.status();
  return Call(*func, args, 0);
}

absl::StatusOr<Value> VirtualMachine::Invoke(absl::string_view name, absl::Span<const Value> args,
                                             KernelCallTimes* times) const {
  KernelCallTimes* outer = t_kernel_times;
  t_kernel_times = times;
  absl::StatusOr<Value> result = Invoke(name, args);
  t_kernel_times = outer;
  return result;
}

absl::StatusOr<Value> VirtualMachine::Call(int64_t func, absl::Span<const Value> args,
                                           int depth) const {
  if (exec_->functions[func].kind == FunctionInfo::Kind::kBytecode) return Run(func, args, depth);
  switch (is_closure_builtin_[func]) {
    case kMake: {
      const Closure* base = args.empty() ? nullptr : args[0].as_closure();
      if (base == nullptr) return absl::InvalidArgumentError("make_closure takes a function first");
      auto c = std::make_shared<Closure>(*base);
      c->captured.insert(c->captured.end(), args.begin() + 1, args.end());
      return Value(std::shared_ptr<const Closure>(std::move(c)));
    }
    case kInvoke: {
      const Closure* c = args.empty() ? nullptr : args[0].as_closure();
      if (c == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("invoke_closure takes a closure first, not a ",
                         args.empty() ? "nothing" : args[0].kind_name()));
      }
      return CallClosure(*c, args.subspan(1), depth);
    }
    default:
      if (is_kernel_[func]) {
        absl::InlinedVector<const Value*, 16> pointers(args.size());
        for (size_t i = 0; i < args.size(); ++i) pointers[i] = &args[i];
        absl::Status status = RunKernel(func, pointers);
        if (!status.ok()) return status;
        return Value();
      }
      return packed_[func](args);
  }
}

absl::Status VirtualMachine::RunKernel(int64_t func, absl::Span<const Value* const> args) const {
  if (t_kernel_times == nullptr) {
    return CallKernel(kernel_fn_[func], args, pool_.get(), kernel_what_[func]);
  }
  auto start = std::chrono::steady_clock::now();
  absl::Status status = CallKernel(kernel_fn_[func], args, pool_.get(), kernel_what_[func]);
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  t_kernel_times->seconds[exec_->functions[func].name].push_back(took.count());
  return status;
}

absl::StatusOr<Value> VirtualMachine::CallClosure(const Closure& c, absl::Span<const Value> args,
                                                  int depth) const {
  absl::StatusOr<int64_t> func = Index(c.function);
  if (!func.ok()) return func.status();
  if (c.captured.empty()) return Call(*func, args, depth);
  std::vector<Value> all = c.captured;
  all.insert(all.end(), args.begin(), args.end());
  return Call(*func, all, depth);
}

absl::Status VirtualMachine::CallKernelInFrame(const Instruction& in,
                                               const std::vector<Value>& regs) const {
  absl::InlinedVector<const Value*, 16> args(in.args.size());
  absl::InlinedVector<Value, 16> immediates(in.args.size());  // where pointers to them can live
  for (size_t i = 0; i < in.args.size(); ++i) {
    const Arg& a = in.args[i];
    switch (a.kind) {
      case Arg::Kind::kRegister:
        args[i] = &regs[a.value];
        break;
      case Arg::Kind::kConstant:
        args[i] = &exec_->constants[a.value];
        break;
      case Arg::Kind::kImmediate:
        immediates[i] = Value(a.value);
        args[i] = &immediates[i];
        break;
      case Arg::Kind::kFunction:  // a closure: CallKernel names it as what kernels do not take
        immediates[i] =
            Value(std::make_shared<const Closure>(Closure{exec_->functions[a.value].name, {}}));
        args[i] = &immediates[i];
        break;
    }
  }
  return RunKernel(in.func, args);
}

std::optional<Value> VirtualMachine::ViewInFrame(const Instruction& in, DLDataType dtype,
                                                 const std::vector<Value>& regs) const {
  const Tensor* storage = regs[in.args[0].value].as_tensor();
  int64_t offset = in.args[1].value;
  if (storage == nullptr || offset < 0) return std::nullopt;
  absl::StatusOr<Tensor> view =
      storage->View(offset, *exec_->constants[in.args[2].value].as_shape(), dtype);
  if (!view.ok()) return std::nullopt;
  return Value(*std::move(view));
}

absl::StatusOr<Value> VirtualMachine::Run(int64_t func, absl::Span<const Value> args,
                                          int depth) const {
  const FunctionInfo& f = exec_->functions[func];
  if (depth > kMaxCallDepth) {
    return absl::ResourceExhaustedError(
        absl::StrCat("VM call depth exceeds ", kMaxCallDepth, " in '", f.name, "'"));
  }
  if (static_cast<int64_t>(args.size()) != f.num_args) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", f.name, "' takes ", f.num_args, " arguments, got ", args.size()));
  }
  std::vector<Value> regs(f.num_registers);
  std::copy(args.begin(), args.end(), regs.begin());
  std::vector<Value> call_args;
  const std::vector<Instruction>& code = exec_->code;
  int64_t pc = f.start;
  while (true) {
    const Instruction& in = code[pc];
    switch (in.op) {
      case Instruction::Op::kCall: {
        if (is_kernel_[in.func]) {
          absl::Status status = CallKernelInFrame(in, regs);
          if (!status.ok()) return InstructionError(f, pc, in, status);
          if (in.dst != kDiscard) regs[in.dst] = Value();
          ++pc;
          break;
        }
        if (view_dtype_[pc].bits != 0) {
          if (std::optional<Value> view = ViewInFrame(in, view_dtype_[pc], regs)) {
            if (in.dst != kDiscard) regs[in.dst] = *std::move(view);
            ++pc;
            break;
          }
        }
        call_args.clear();
        for (const Arg& a : in.args) {
          switch (a.kind) {
            case Arg::Kind::kRegister:
              call_args.push_back(regs[a.value]);
              break;
            case Arg::Kind::kImmediate:
              call_args.emplace_back(a.value);
              break;
            case Arg::Kind::kConstant:
              call_args.push_back(exec_->constants[a.value]);
              break;
            case Arg::Kind::kFunction:
              call_args.emplace_back(
                  std::make_shared<const Closure>(Closure{exec_->functions[a.value].name, {}}));
              break;
          }
        }
        absl::StatusOr<Value> result = Call(in.func, call_args, depth + 1);
        if (!result.ok()) return InstructionError(f, pc, in, result.status());
        if (in.dst != kDiscard) regs[in.dst] = std::move(*result);
        ++pc;
        break;
      }
      case Instruction::Op::kRet:
        return std::move(regs[in.result]);
      case Instruction::Op::kGoto:
        pc += in.offset;
        break;
      case Instruction::Op::kIf: {
        absl::StatusOr<bool> cond = Truth(regs[in.cond]);
        if (!cond.ok()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "in '", f.name, "' at instruction ", pc - f.start, ": ", cond.status().message()));
        }
        pc += *cond ? 1 : in.offset;
        break;
      }
    }
  }
}

}  // namespace kiln::runtime::vm
