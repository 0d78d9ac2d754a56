#include "runtime/vm/executable.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/format/vm.pb.h"

namespace kiln::runtime::vm {
namespace {

std::string ArgText(const Executable& exec, const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::kRegister:
      return absl::StrCat("%", a.value);
    case Arg::Kind::kImmediate:
      return absl::StrCat(a.value);
    case Arg::Kind::kConstant:
      return absl::StrCat("c[", a.value, "]");
    case Arg::Kind::kFunction:
      return a.value >= 0 && a.value < static_cast<int64_t>(exec.functions.size())
                 ? absl::StrCat("@", exec.functions[a.value].name)
                 : absl::StrCat("@?", a.value);
  }
  return "?";
}

std::string ConstantText(const Value& v) {
  if (const auto* t = v.as_tensor()) {
    return absl::StrCat("tensor((", absl::StrJoin(t->shape(), ", "), "), ",
                        DataTypeToString(t->dtype()), ")");
  }
  if (const auto* i = v.as_int()) return absl::StrCat(*i);
  if (const auto* f = v.as_float()) return absl::StrCat(*f);
  if (const auto* s = v.as_string()) return absl::StrCat("\"", *s, "\"");
  if (const auto* s = v.as_shape()) return absl::StrCat("shape(", absl::StrJoin(*s, ", "), ")");
  return v.kind_name();
}

absl::Status ConstantToProto(const Value& v, size_t index, kiln::v1::VMConstantProto* out) {
  if (const auto* t = v.as_tensor()) {
    auto* tp = out->mutable_tensor();
    tp->set_dtype(DataTypeToString(t->dtype()));
    for (int64_t d : t->shape()) tp->add_shape(d);
    tp->set_data(static_cast<const char*>(t->data()), t->NumBytes());
  } else if (const auto* i = v.as_int()) {
    out->set_int_value(*i);
  } else if (const auto* f = v.as_float()) {
    out->set_float_value(*f);
  } else if (const auto* s = v.as_string()) {
    out->set_string_value(*s);
  } else if (const auto* s = v.as_shape()) {
    auto* shape = out->mutable_shape();  // set even for a scalar's shape, which has no dims
    for (int64_t d : *s) shape->add_dims(d);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("constant ", index, " is a ", v.kind_name(), ", which cannot be serialized"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Value> ConstantFromProto(const kiln::v1::VMConstantProto& c, size_t index) {
  switch (c.value_case()) {
    case kiln::v1::VMConstantProto::kTensor: {
      const auto& tp = c.tensor();
      absl::StatusOr<DLDataType> dtype = ParseDataType(tp.dtype());
      if (!dtype.ok()) return dtype.status();
      std::vector<int64_t> shape(tp.shape().begin(), tp.shape().end());
      absl::StatusOr<Tensor> t = Tensor::Empty(shape, *dtype);
      if (!t.ok()) return t.status();
      if (t->NumBytes() != tp.data().size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("constant ", index, " has ", tp.data().size(),
                         " bytes of data, its shape needs ", t->NumBytes()));
      }
      std::memcpy(t->data(), tp.data().data(), tp.data().size());
      return Value(*t);
    }
    case kiln::v1::VMConstantProto::kIntValue:
      return Value(c.int_value());
    case kiln::v1::VMConstantProto::kFloatValue:
      return Value(c.float_value());
    case kiln::v1::VMConstantProto::kStringValue:
      return Value(c.string_value());
    case kiln::v1::VMConstantProto::kShape:
      return Value(std::vector<int64_t>(c.shape().dims().begin(), c.shape().dims().end()));
    default:
      return absl::InvalidArgumentError(absl::StrCat("constant ", index, " has no value"));
  }
}

}  // namespace

absl::StatusOr<int64_t> Executable::FindFunction(absl::string_view name) const {
  for (size_t i = 0; i < functions.size(); ++i) {
    if (functions[i].name == name) return static_cast<int64_t>(i);
  }
  return absl::NotFoundError(absl::StrCat("the executable has no function '", name, "'"));
}

absl::Status Executable::Validate() const {
  const int64_t num_code = static_cast<int64_t>(code.size());
  const int64_t num_functions = static_cast<int64_t>(functions.size());
  for (const FunctionInfo& f : functions) {
    auto fail = [&](const std::string& what) {
      return absl::InvalidArgumentError(absl::StrCat("VM function '", f.name, "': ", what));
    };
    if (f.num_args < 0) return fail("a negative argument count");
    if (!f.param_names.empty() && static_cast<int64_t>(f.param_names.size()) != f.num_args)
      return fail("parameter names and argument count differ");
    if (f.kind == FunctionInfo::Kind::kPacked) continue;
    if (f.start < 0 || f.end <= f.start || f.end > num_code)
      return fail(absl::StrCat("instructions [", f.start, ", ", f.end, ") are outside the code (",
                               num_code, " instructions)"));
    if (f.num_registers < f.num_args || f.num_registers > (int64_t{1} << 24))
      return fail(
          absl::StrCat("a register file of ", f.num_registers, " for ", f.num_args, " arguments"));
    const Instruction& last = code[f.end - 1];
    if (last.op != Instruction::Op::kRet && last.op != Instruction::Op::kGoto)
      return fail("the last instruction is neither ret nor goto");
    for (int64_t pc = f.start; pc < f.end; ++pc) {
      const Instruction& in = code[pc];
      auto bad = [&](const std::string& what) {
        return fail(absl::StrCat("instruction ", pc - f.start, ": ", what));
      };
      auto check_register = [&](int64_t r) { return r >= 0 && r < f.num_registers; };
      auto check_jump = [&](int64_t offset) {
        int64_t target = pc + offset;
        return target >= f.start && target < f.end;
      };
      switch (in.op) {
        case Instruction::Op::kCall:
          if (in.dst != kDiscard && !check_register(in.dst))
            return bad(absl::StrCat("writes register %", in.dst, " of ", f.num_registers));
          if (in.func < 0 || in.func >= num_functions)
            return bad(absl::StrCat("calls function ", in.func, " of ", num_functions));
          for (const Arg& a : in.args) {
            bool ok = true;
            switch (a.kind) {
              case Arg::Kind::kRegister:
                ok = check_register(a.value);
                break;
              case Arg::Kind::kImmediate:
                break;
              case Arg::Kind::kConstant:
                ok = a.value >= 0 && a.value < static_cast<int64_t>(constants.size());
                break;
              case Arg::Kind::kFunction:
                ok = a.value >= 0 && a.value < num_functions;
                break;
            }
            if (!ok) return bad(absl::StrCat("argument ", ArgText(*this, a), " is out of range"));
          }
          break;
        case Instruction::Op::kRet:
          if (!check_register(in.result))
            return bad(absl::StrCat("returns register %", in.result, " of ", f.num_registers));
          break;
        case Instruction::Op::kGoto:
          if (!check_jump(in.offset) || in.offset == 0)
            return bad(absl::StrCat("jumps by ", in.offset, " outside the function"));
          break;
        case Instruction::Op::kIf:
          if (!check_register(in.cond))
            return bad(absl::StrCat("tests register %", in.cond, " of ", f.num_registers));
          if (!check_jump(in.offset) || !check_jump(1))
            return bad(absl::StrCat("branches by ", in.offset, " outside the function"));
          break;
        default:
          return bad("an unknown opcode");
      }
    }
  }
  return absl::OkStatus();
}

namespace {

void AppendVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// A length-delimited field's tag and length.
void AppendFieldHeader(int field, size_t length, std::string* out) {
  AppendVarint(static_cast<uint64_t>(field) << 3 | 2, out);
  AppendVarint(length, out);
}

}  // namespace

// The bytes protobuf would write for the whole VMExecutableProto, with each tensor constant's data
// copied once, straight into them (not into a proto first and then into its serialization: a
// model's weights are most of the executable).
absl::StatusOr<std::string> Executable::Serialize() const {
  kiln::v1::VMExecutableProto head;  // fields 1 and 2
  head.set_format_version(kVMFormatVersion);
  for (const FunctionInfo& f : functions) {
    auto* fp = head.add_functions();
    fp->set_name(f.name);
    fp->set_kind(f.kind == FunctionInfo::Kind::kBytecode ? kiln::v1::VMFunctionProto::BYTECODE
                                                         : kiln::v1::VMFunctionProto::PACKED);
    fp->set_start(f.start);
    fp->set_end(f.end);
    fp->set_num_args(f.num_args);
    fp->set_num_registers(f.num_registers);
    for (const std::string& name : f.param_names) fp->add_param_names(name);
  }
  kiln::v1::VMExecutableProto tail;  // field 4
  for (const Instruction& in : code) {
    auto* ip = tail.add_instructions();
    ip->set_op(static_cast<kiln::v1::VMInstructionProto::Opcode>(in.op));
    ip->set_dst(in.dst);
    ip->set_func(in.func);
    ip->set_result(in.result);
    ip->set_cond(in.cond);
    ip->set_offset(in.offset);
    for (const Arg& a : in.args) {
      auto* ap = ip->add_args();
      ap->set_kind(static_cast<kiln::v1::VMArgProto::Kind>(a.kind));
      ap->set_value(a.value);
    }
  }
  // Each constant (field 3): a tensor as its dtype and shape (VMTensorProto fields 1 and 2) and
  // then its data (field 3, the last); anything else through its proto.
  constexpr int kConstantsField = 3, kTensorField = 1, kDataField = 3;
  std::vector<std::string> metas(constants.size());
  size_t data_bytes = 0;
  for (size_t i = 0; i < constants.size(); ++i) {
    kiln::v1::VMConstantProto c;
    if (const Tensor* t = constants[i].as_tensor()) {
      kiln::v1::VMTensorProto meta;
      meta.set_dtype(DataTypeToString(t->dtype()));
      for (int64_t d : t->shape()) meta.add_shape(d);
      if (!meta.SerializeToString(&metas[i])) return absl::InternalError("serializing a constant");
      data_bytes += t->NumBytes();
    } else {
      absl::Status s = ConstantToProto(constants[i], i, &c);
      if (!s.ok()) return s;
      if (!c.SerializeToString(&metas[i])) return absl::InternalError("serializing a constant");
    }
  }
  std::string bytes;
  if (!head.SerializeToString(&bytes)) return absl::InternalError("serializing the VM executable");
  bytes.reserve(bytes.size() + data_bytes + 32 * constants.size() + tail.ByteSizeLong());
  std::string header;
  for (size_t i = 0; i < constants.size(); ++i) {
    const Tensor* t = constants[i].as_tensor();
    if (t == nullptr) {
      AppendFieldHeader(kConstantsField, metas[i].size(), &bytes);
      bytes += metas[i];
      continue;
    }
    const size_t n = t->NumBytes();
    header.clear();
    AppendFieldHeader(kDataField, n, &header);
    const size_t tensor_size = metas[i].size() + header.size() + n;
    std::string outer;
    AppendFieldHeader(kTensorField, tensor_size, &outer);
    AppendFieldHeader(kConstantsField, outer.size() + tensor_size, &bytes);
    bytes += outer;
    bytes += metas[i];
    bytes += header;
    bytes.append(static_cast<const char*>(t->data()), n);
  }
  if (!tail.AppendToString(&bytes)) return absl::InternalError("serializing the VM executable");
  return bytes;
}

absl::StatusOr<Executable> Executable::Deserialize(absl::string_view bytes) {
  kiln::v1::VMExecutableProto p;
  if (!p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return absl::InvalidArgumentError("the VM executable is not a valid VMExecutableProto");
  if (p.format_version() != kVMFormatVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("VM executable format version ", p.format_version(),
                     " is not supported (this runtime reads ", kVMFormatVersion, ")"));
  }
  Executable exec;
  for (const auto& fp : p.functions()) {
    FunctionInfo f;
    f.name = fp.name();
    f.kind = fp.kind() == kiln::v1::VMFunctionProto::BYTECODE ? FunctionInfo::Kind::kBytecode
                                                              : FunctionInfo::Kind::kPacked;
    f.start = fp.start();
    f.end = fp.end();
    f.num_args = fp.num_args();
    f.num_registers = fp.num_registers();
    f.param_names.assign(fp.param_names().begin(), fp.param_names().end());
    exec.functions.push_back(std::move(f));
  }
  for (int i = 0; i < p.constants_size(); ++i) {
    absl::StatusOr<Value> v = ConstantFromProto(p.constants(i), i);
    if (!v.ok()) return v.status();
    exec.constants.push_back(std::move(*v));
  }
  for (const auto& ip : p.instructions()) {
    Instruction in;
    if (ip.op() < 0 || ip.op() > kiln::v1::VMInstructionProto::IF)
      return absl::InvalidArgumentError(absl::StrCat("unknown VM opcode ", ip.op()));
    in.op = static_cast<Instruction::Op>(ip.op());
    in.dst = ip.dst();
    in.func = ip.func();
    in.result = ip.result();
    in.cond = ip.cond();
    in.offset = ip.offset();
    for (const auto& ap : ip.args()) {
      if (ap.kind() < 0 || ap.kind() > kiln::v1::VMArgProto::FUNCTION)
        return absl::InvalidArgumentError(absl::StrCat("unknown VM argument kind ", ap.kind()));
      in.args.push_back({static_cast<Arg::Kind>(ap.kind()), ap.value()});
    }
    exec.code.push_back(std::move(in));
  }
  absl::Status valid = exec.Validate();
  if (!valid.ok()) return valid;
  return exec;
}

std::string Executable::AsText() const {
  std::string out;
  for (size_t i = 0; i < constants.size(); ++i)
    absl::StrAppend(&out, "c[", i, "] = ", ConstantText(constants[i]), "\n");
  for (const FunctionInfo& f : functions) {
    if (f.kind == FunctionInfo::Kind::kPacked) {
      absl::StrAppend(&out, "@", f.name, ": packed\n");
      continue;
    }
    absl::StrAppend(&out, "@", f.name, "(", absl::StrJoin(f.param_names, ", "),
                    "): ", f.num_registers, " registers\n");
    for (int64_t pc = f.start; pc < f.end && pc < static_cast<int64_t>(code.size()); ++pc) {
      const Instruction& in = code[pc];
      absl::StrAppend(&out, "  ", pc - f.start, ": ");
      switch (in.op) {
        case Instruction::Op::kCall: {
          std::vector<std::string> args;
          for (const Arg& a : in.args) args.push_back(ArgText(*this, a));
          std::string callee = in.func >= 0 && in.func < static_cast<int64_t>(functions.size())
                                   ? functions[in.func].name
                                   : absl::StrCat("?", in.func);
          if (in.dst != kDiscard) absl::StrAppend(&out, "%", in.dst, " = ");
          absl::StrAppend(&out, "call ", callee, "(", absl::StrJoin(args, ", "), ")\n");
          break;
        }
        case Instruction::Op::kRet:
          absl::StrAppend(&out, "ret %", in.result, "\n");
          break;
        case Instruction::Op::kGoto:
          absl::StrAppend(&out, "goto ", pc - f.start + in.offset, "\n");
          break;
        case Instruction::Op::kIf:
          absl::StrAppend(&out, "if %", in.cond, " else goto ", pc - f.start + in.offset, "\n");
          break;
      }
    }
  }
  return out;
}

}  // namespace kiln::runtime::vm
