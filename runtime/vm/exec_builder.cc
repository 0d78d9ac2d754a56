#include "runtime/vm/exec_builder.h"

namespace kiln::runtime::vm {

int64_t ExecBuilder::Function(const std::string& name) {
  auto [it, inserted] = index_.emplace(name, static_cast<int64_t>(exec_.functions.size()));
  if (inserted) {
    FunctionInfo f;
    f.name = name;
    exec_.functions.push_back(std::move(f));
  }
  return it->second;
}

int64_t ExecBuilder::AddConstant(Value v) {
  exec_.constants.push_back(std::move(v));
  return static_cast<int64_t>(exec_.constants.size()) - 1;
}

void ExecBuilder::BeginFunction(const std::string& name, std::vector<std::string> params) {
  current_ = Function(name);
  FunctionInfo& f = exec_.functions[current_];
  f.kind = FunctionInfo::Kind::kBytecode;
  f.start = static_cast<int64_t>(exec_.code.size());
  f.num_args = static_cast<int64_t>(params.size());
  f.num_registers = f.num_args;
  f.param_names = std::move(params);
}

int64_t ExecBuilder::NewRegister() { return exec_.functions[current_].num_registers++; }

void ExecBuilder::EmitCall(int64_t dst, const std::string& callee, std::vector<Arg> args) {
  Instruction in;
  in.op = Instruction::Op::kCall;
  in.dst = dst;
  in.func = Function(callee);
  in.args = std::move(args);
  exec_.code.push_back(std::move(in));
}

void ExecBuilder::EmitRet(int64_t reg) {
  Instruction in;
  in.op = Instruction::Op::kRet;
  in.result = reg;
  exec_.code.push_back(std::move(in));
}

int64_t ExecBuilder::EmitGoto() {
  Instruction in;
  in.op = Instruction::Op::kGoto;
  exec_.code.push_back(std::move(in));
  return static_cast<int64_t>(exec_.code.size()) - 1;
}

int64_t ExecBuilder::EmitIf(int64_t cond) {
  Instruction in;
  in.op = Instruction::Op::kIf;
  in.cond = cond;
  exec_.code.push_back(std::move(in));
  return static_cast<int64_t>(exec_.code.size()) - 1;
}

void ExecBuilder::SetJumpTarget(int64_t instruction) { SetJumpTarget(instruction, Here()); }

void ExecBuilder::SetJumpTarget(int64_t instruction, int64_t target) {
  exec_.code[instruction].offset = target - instruction;
}

void ExecBuilder::EndFunction() {
  exec_.functions[current_].end = static_cast<int64_t>(exec_.code.size());
  current_ = -1;
}

absl::StatusOr<Executable> ExecBuilder::Build() {
  absl::Status valid = exec_.Validate();
  if (!valid.ok()) return valid;
  return exec_;
}

}  // namespace kiln::runtime::vm
