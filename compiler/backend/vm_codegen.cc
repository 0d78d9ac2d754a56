#include "compiler/backend/vm_codegen.h"

#include <cstring>
#include <set>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/relax_expr.h"
#include "compiler/ir/tir_expr.h"
#include "compiler/ir/tir_functor.h"
#include "compiler/relax/transform/transform.h"
#include "runtime/vm/builtins.h"
#include "runtime/vm/exec_builder.h"

namespace kiln::backend {
namespace {

namespace relax = ir::relax;
using runtime::Value;
using runtime::vm::Arg;
using runtime::vm::ExecBuilder;

// Generates one Relax function into the builder.
class FunctionCodegen {
 public:
  FunctionCodegen(ExecBuilder* b, std::string name,
                  std::vector<std::pair<std::string, ir::PrimFunc>>* shape_funcs,
                  const std::set<std::string>* kernels)
      : b_(*b), name_(std::move(name)), shape_funcs_(*shape_funcs), kernels_(*kernels) {}

  absl::Status Generate(const relax::FunctionNode& f) {
    std::vector<std::string> params;
    for (const relax::Var& p : f.params) params.push_back(p->name_hint);
    b_.BeginFunction(name_, params);
    for (size_t i = 0; i < f.params.size(); ++i)
      vars_[f.params[i].get()] = Arg::Register(static_cast<int64_t>(i));
    heap_ = b_.NewRegister();
    // The heap size is known only at the end: CodegenVM patches it into this instruction.
    heap_instruction_ = static_cast<size_t>(b_.Here());
    b_.EmitCall(heap_, "vm.builtin.alloc_shape_heap", {Arg::Immediate(0)});
    for (size_t i = 0; i < f.params.size(); ++i) {
      absl::Status s =
          CheckValue(Arg::Register(static_cast<int64_t>(i)), f.params[i]->struct_info(),
                     absl::StrCat("argument '", f.params[i]->name_hint, "' of '", name_, "'"));
      if (!s.ok()) return s;
    }
    absl::StatusOr<Arg> result = Expr(f.body);
    if (!result.ok()) return result.status();
    b_.EmitRet(InRegister(*result));
    b_.EndFunction();
    return absl::OkStatus();
  }
  int64_t heap_slots() const { return num_slots_; }
  size_t heap_instruction() const { return heap_instruction_; }

 private:
  absl::Status Error(const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat("VM codegen of '", name_, "'",
                                                   binding_.empty() ? "" : ", binding '", binding_,
                                                   binding_.empty() ? "" : "'", ": ", what));
  }

  int64_t InRegister(const Arg& a) {
    if (a.kind == Arg::Kind::kRegister) return a.value;
    int64_t r = b_.NewRegister();
    b_.EmitCall(r, "vm.builtin.copy", {a});
    return r;
  }
  Arg StringConstant(const std::string& s) { return Arg::Constant(b_.AddConstant(Value(s))); }

  // One (code, value) pair per dimension for match_shape: a constant must match, a variable
  // seen for the first time is stored, a known one must match; other expressions pass.
  std::vector<Arg> MatchCodes(const std::vector<ir::PrimExpr>& dims) {
    std::vector<Arg> codes;
    for (const ir::PrimExpr& d : dims) {
      if (const int64_t* c = ir::AsConstInt(d)) {
        codes.push_back(Arg::Immediate(0));
        codes.push_back(Arg::Immediate(*c));
      } else if (const auto* v = d.as<ir::VarNode>()) {
        auto it = slots_.find(v);
        if (it == slots_.end()) {
          int64_t slot = num_slots_++;
          slots_[v] = slot;
          codes.push_back(Arg::Immediate(1));
          codes.push_back(Arg::Immediate(slot));
        } else {
          codes.push_back(Arg::Immediate(2));
          codes.push_back(Arg::Immediate(it->second));
        }
      } else if (AllBound(d)) {  // computed from known variables: must match
        absl::StatusOr<int64_t> slot = ComputedSlot(d);
        codes.push_back(Arg::Immediate(slot.ok() ? 2 : 3));
        codes.push_back(Arg::Immediate(slot.ok() ? *slot : 0));
      } else {
        codes.push_back(Arg::Immediate(3));
        codes.push_back(Arg::Immediate(0));
      }
    }
    return codes;
  }

  bool AllBound(const ir::PrimExpr& e) const {
    bool bound = true;
    ir::PostOrderVisit(e, [&](const ir::PrimExpr& x) {
      if (const auto* v = x.as<ir::VarNode>(); v != nullptr && !slots_.count(v)) bound = false;
    });
    return bound;
  }

  // The heap slot of `e`, an integer expression of bound shape variables, computed into the heap
  // here by a generated shape function: H[slot] = e(H[slot of each variable]). Emitted at every
  // use (it is idempotent), so a value computed on one branch is never read on another.
  absl::StatusOr<int64_t> ComputedSlot(const ir::PrimExpr& e) {
    if (!AllBound(e)) {
      return Error(absl::StrCat("the shape dimension '", ir::DebugPrint(e),
                                "' uses a shape variable that is not bound"));
    }
    std::string key = ir::DebugPrint(e);
    auto it = computed_.find(key);
    if (it == computed_.end()) {
      int64_t slot = num_slots_++;
      std::string fn = absl::StrCat("vm_shape_func_", name_, "_", computed_.size());
      ir::DataType i64 = ir::DataType::Int(64);
      ir::Buffer heap = ir::MakeBuffer("heap", i64, {ir::MakeSizeVar("heap_size")});
      ir::PrimExpr value = ir::Substitute(e, [&](const ir::Var& v) -> ir::PrimExpr {
        ir::PrimExpr load = ir::Make<ir::BufferLoadNode>(
            i64, heap, std::vector<ir::PrimExpr>{ir::IntImm(i64, slots_.at(v.get()))});
        return v->dtype == i64 ? load : ir::Cast(v->dtype, load);
      });
      if (value->dtype != i64) value = ir::Cast(i64, value);
      auto* f = new ir::PrimFuncNode();
      ir::PrimFunc func(f);
      ir::Var handle = ir::MakeVar("heap", ir::DataType::Handle());
      f->params = {handle};
      f->buffer_map = {{handle, heap}};
      f->body = ir::Make<ir::BufferStoreNode>(heap, value,
                                              std::vector<ir::PrimExpr>{ir::IntImm(i64, slot)});
      shape_funcs_.emplace_back(fn, func);
      it = computed_.emplace(key, std::make_pair(slot, fn)).first;
    }
    b_.EmitCall(runtime::vm::kDiscard, it->second.second, {Arg::Register(heap_)});
    return it->second.first;
  }

  // An integer expression of bound shape variables as an argument: an immediate when constant,
  // else read from the shape heap at run time.
  absl::StatusOr<Arg> IntValue(const ir::PrimExpr& e) {
    if (const int64_t* c = ir::AsConstInt(e)) return Arg::Immediate(*c);
    int64_t slot = 0;
    if (const auto* v = e.as<ir::VarNode>(); v && slots_.count(v)) {
      slot = slots_.at(v);
    } else {
      absl::StatusOr<int64_t> computed = ComputedSlot(e);
      if (!computed.ok()) return computed.status();
      slot = *computed;
    }
    int64_t r = b_.NewRegister();
    b_.EmitCall(r, "vm.builtin.shape_heap_get", {Arg::Register(heap_), Arg::Immediate(slot)});
    return Arg::Register(r);
  }

  // A shape value from dimensions that are constants or bound shape variables.
  absl::StatusOr<Arg> MakeShape(const std::vector<ir::PrimExpr>& dims) {
    std::vector<int64_t> constant;  // a shape known now is a constant, not built per call
    for (const ir::PrimExpr& d : dims) {
      const int64_t* c = ir::AsConstInt(d);
      if (c == nullptr) break;
      constant.push_back(*c);
    }
    if (constant.size() == dims.size()) return Arg::Constant(b_.AddConstant(Value(constant)));
    std::vector<Arg> args = {Arg::Register(heap_)};
    for (const ir::PrimExpr& d : dims) {
      if (const int64_t* c = ir::AsConstInt(d)) {
        args.push_back(Arg::Immediate(0));
        args.push_back(Arg::Immediate(*c));
      } else if (const auto* v = d.as<ir::VarNode>(); v && slots_.count(v)) {
        args.push_back(Arg::Immediate(1));
        args.push_back(Arg::Immediate(slots_.at(v)));
      } else {
        absl::StatusOr<int64_t> slot = ComputedSlot(d);
        if (!slot.ok()) return slot.status();
        args.push_back(Arg::Immediate(1));
        args.push_back(Arg::Immediate(*slot));
      }
    }
    int64_t r = b_.NewRegister();
    b_.EmitCall(r, "vm.builtin.make_shape", std::move(args));
    return Arg::Register(r);
  }

  // Run-time checks of `value` against `sinfo`, binding shape variables on first sight.
  absl::Status CheckValue(const Arg& value, const relax::StructInfo& sinfo,
                          const std::string& where) {
    if (!sinfo) return absl::OkStatus();
    if (const auto* t = sinfo.as<relax::TensorStructInfoNode>()) {
      std::string dtype = t->dtype.is_void() ? "" : t->dtype.ToString();
      b_.EmitCall(runtime::vm::kDiscard, "vm.builtin.check_tensor_info",
                  {value, Arg::Immediate(t->ndim), StringConstant(dtype), StringConstant(where)});
      if (const std::vector<ir::PrimExpr>* dims = t->dims()) {
        std::vector<Arg> args = {value, Arg::Register(heap_), StringConstant(where)};
        for (const Arg& a : MatchCodes(*dims)) args.push_back(a);
        b_.EmitCall(runtime::vm::kDiscard, "vm.builtin.match_shape", std::move(args));
      }
      return absl::OkStatus();
    }
    if (const auto* s = sinfo.as<relax::ShapeStructInfoNode>()) {
      b_.EmitCall(runtime::vm::kDiscard, "vm.builtin.check_shape_info",
                  {value, Arg::Immediate(s->ndim), StringConstant(where)});
      if (s->values) {
        std::vector<Arg> args = {value, Arg::Register(heap_), StringConstant(where)};
        for (const Arg& a : MatchCodes(*s->values)) args.push_back(a);
        b_.EmitCall(runtime::vm::kDiscard, "vm.builtin.match_shape", std::move(args));
      }
      return absl::OkStatus();
    }
    if (const auto* tup = sinfo.as<relax::TupleStructInfoNode>()) {
      int64_t reg = InRegister(value);
      b_.EmitCall(runtime::vm::kDiscard, "vm.builtin.check_tuple_info",
                  {Arg::Register(reg), Arg::Immediate(static_cast<int64_t>(tup->fields.size())),
                   StringConstant(where)});
      for (size_t i = 0; i < tup->fields.size(); ++i) {
        int64_t field = b_.NewRegister();
        b_.EmitCall(field, "vm.builtin.tuple_getitem",
                    {Arg::Register(reg), Arg::Immediate(static_cast<int64_t>(i))});
        absl::Status st =
            CheckValue(Arg::Register(field), tup->fields[i], absl::StrCat(where, " field ", i));
        if (!st.ok()) return st;
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Arg> Constant(const relax::ConstantNode& c) {
    absl::StatusOr<DLDataType> dtype = runtime::ParseDataType(c.dtype.ToString());
    if (!dtype.ok()) return dtype.status();
    absl::StatusOr<runtime::Tensor> t = runtime::Tensor::Empty(c.shape, *dtype);
    if (!t.ok()) return t.status();
    if (!c.bytes || c.bytes->size() != t->NumBytes())
      return Error("a constant whose data does not match its shape");
    std::memcpy(t->data(), c.bytes->data(), t->NumBytes());
    return Arg::Constant(b_.AddConstant(Value(*t)));
  }

  absl::StatusOr<std::vector<Arg>> Args(const std::vector<relax::Expr>& exprs) {
    std::vector<Arg> out;
    for (const relax::Expr& e : exprs) {
      absl::StatusOr<Arg> a = Expr(e);
      if (!a.ok()) return a.status();
      out.push_back(*a);
    }
    return out;
  }

  // The arguments of call_tir / call_dps_packed: a tuple literal or a single value.
  absl::StatusOr<std::vector<Arg>> PackedArgs(const relax::Expr& e) {
    if (const auto* t = e.as<relax::TupleNode>()) return Args(t->fields);
    absl::StatusOr<Arg> a = Expr(e);
    if (!a.ok()) return a.status();
    return std::vector<Arg>{*a};
  }

  // Destination-passing calls: outputs allocated here, passed after the inputs.
  absl::StatusOr<Arg> CallDestinationPassing(const std::string& callee,
                                             const relax::CallNode& call) {
    if (call.args.size() < 2 || call.sinfo_args.empty())
      return Error("call_tir takes a callee, arguments and an output StructInfo");
    absl::StatusOr<std::vector<Arg>> args = PackedArgs(call.args[1]);
    if (!args.ok()) return args.status();
    std::vector<relax::StructInfo> outs = {call.sinfo_args[0]};
    bool tuple_out = false;
    if (const auto* t = call.sinfo_args[0].as<relax::TupleStructInfoNode>()) {
      outs = t->fields;
      tuple_out = true;
    }
    std::vector<Arg> out_regs;
    for (const relax::StructInfo& o : outs) {
      const auto* t = o.as<relax::TensorStructInfoNode>();
      if (t == nullptr || t->dims() == nullptr || t->dtype.is_void())
        return Error("call_tir outputs need a known shape and dtype");
      absl::StatusOr<Arg> shape = MakeShape(*t->dims());
      if (!shape.ok()) return shape.status();
      int64_t r = b_.NewRegister();
      b_.EmitCall(r, "vm.builtin.empty", {*shape, StringConstant(t->dtype.ToString())});
      out_regs.push_back(Arg::Register(r));
      args->push_back(Arg::Register(r));
    }
    if (call.args.size() > 2) {  // tir_vars
      const auto* shape = call.args[2].as<relax::ShapeExprNode>();
      if (shape == nullptr) return Error("call_tir's tir_vars must be a shape literal");
      for (const ir::PrimExpr& v : shape->values) {
        absl::StatusOr<Arg> value = IntValue(v);
        if (!value.ok()) return value.status();
        args->push_back(*value);
      }
    }
    b_.EmitCall(runtime::vm::kDiscard, callee, std::move(*args));
    if (!tuple_out) return out_regs[0];
    int64_t r = b_.NewRegister();
    b_.EmitCall(r, "vm.builtin.make_tuple", out_regs);
    return Arg::Register(r);
  }

  absl::StatusOr<Arg> Call(const relax::CallNode& call) {
    auto emit = [&](const std::string& callee, const std::vector<relax::Expr>& exprs,
                    size_t skip) -> absl::StatusOr<Arg> {
      std::vector<relax::Expr> rest(exprs.begin() + static_cast<long>(skip), exprs.end());
      absl::StatusOr<std::vector<Arg>> args = Args(rest);
      if (!args.ok()) return args.status();
      int64_t r = b_.NewRegister();
      b_.EmitCall(r, callee, std::move(*args));
      return Arg::Register(r);
    };
    if (const auto* g = call.op.as<relax::GlobalVarNode>()) {
      // A kernel's trailing shape argument is its size parameters (call_tir's tir_vars), each
      // passed as an int.
      const relax::ShapeExprNode* sizes = kernels_.count(g->name_hint) > 0 && !call.args.empty()
                                              ? call.args.back().as<relax::ShapeExprNode>()
                                              : nullptr;
      if (sizes == nullptr) return emit(g->name_hint, call.args, 0);
      absl::StatusOr<std::vector<Arg>> args =
          Args(std::vector<relax::Expr>(call.args.begin(), call.args.end() - 1));
      if (!args.ok()) return args.status();
      for (const ir::PrimExpr& v : sizes->values) {
        absl::StatusOr<Arg> value = IntValue(v);
        if (!value.ok()) return value.status();
        args->push_back(*value);
      }
      int64_t r = b_.NewRegister();
      b_.EmitCall(r, g->name_hint, std::move(*args));
      return Arg::Register(r);
    }
    if (const auto* ext = call.op.as<relax::ExternFuncNode>())
      return emit(ext->global_symbol, call.args, 0);
    if (call.op.as<relax::VarNode>()) {
      std::vector<relax::Expr> all = {call.op};
      all.insert(all.end(), call.args.begin(), call.args.end());
      return emit(runtime::vm::kInvokeClosure, all, 0);
    }
    const auto* op = call.op.as<relax::OpNode>();
    if (op == nullptr) return Error("a call of something that is not a function");
    const std::string& name = op->name;
    if (name == "relax.call_tir") {
      const auto* g = call.args.empty() ? nullptr : call.args[0].as<relax::GlobalVarNode>();
      if (g == nullptr) return Error("call_tir's callee must be a PrimFunc of the module");
      return CallDestinationPassing(g->name_hint, call);
    }
    if (name == "relax.call_dps_packed") {
      const auto* ext = call.args.empty() ? nullptr : call.args[0].as<relax::ExternFuncNode>();
      if (ext == nullptr) return Error("call_dps_packed's callee must be an external function");
      return CallDestinationPassing(ext->global_symbol, call);
    }
    if (name == "relax.call_pure_packed") {
      const auto* ext = call.args.empty() ? nullptr : call.args[0].as<relax::ExternFuncNode>();
      if (ext == nullptr) return Error("call_pure_packed's callee must be an external function");
      return emit(ext->global_symbol, call.args, 1);
    }
    if (name == "relax.builtin.alloc_tensor" || name == "relax.memory.alloc_tensor") {
      // (shape, dtype, device) on its own, or (storage, offset, shape, dtype) in a storage.
      const bool view = name == "relax.memory.alloc_tensor";
      const auto* shape = call.args[view ? 2 : 0].as<relax::ShapeExprNode>();
      const auto* dtype = call.args[view ? 3 : 1].as<relax::DataTypeImmNode>();
      if (shape == nullptr || dtype == nullptr) return Error(name + " needs a shape and a dtype");
      absl::StatusOr<Arg> dims = MakeShape(shape->values);
      if (!dims.ok()) return dims.status();
      int64_t r = b_.NewRegister();
      if (!view) {
        b_.EmitCall(r, "vm.builtin.empty", {*dims, StringConstant(dtype->value.ToString())});
        return Arg::Register(r);
      }
      absl::StatusOr<Arg> storage = Expr(call.args[0]);
      if (!storage.ok()) return storage.status();
      absl::StatusOr<Arg> offset = Expr(call.args[1]);
      if (!offset.ok()) return offset.status();
      b_.EmitCall(r, "vm.builtin.alloc_tensor",
                  {*storage, *offset, *dims, StringConstant(dtype->value.ToString())});
      return Arg::Register(r);
    }
    if (name == "relax.memory.alloc_storage") {
      const auto* size = call.args[0].as<relax::ShapeExprNode>();
      const int64_t* bytes =
          size != nullptr && size->values.size() == 1 ? ir::AsConstInt(size->values[0]) : nullptr;
      if (bytes == nullptr) return Error("alloc_storage needs a constant size");
      int64_t r = b_.NewRegister();
      b_.EmitCall(r, "vm.builtin.alloc_storage", {Arg::Immediate(*bytes)});
      return Arg::Register(r);
    }
    if (name == "relax.shape_of") return emit("vm.builtin.shape_of", call.args, 0);
    if (name == "relax.shape_to_tensor") return emit("vm.builtin.shape_to_tensor", call.args, 0);
    if (name == "relax.tensor_to_shape") return emit("vm.builtin.tensor_to_shape", call.args, 0);
    if (name == "relax.null_value") return emit("vm.builtin.null_value", call.args, 0);
    return Error(
        absl::StrCat("the operator '", name, "' must be legalized before VM code generation"));
  }

  absl::StatusOr<Arg> Expr(const relax::Expr& e) {
    if (const auto* v = e.as<relax::VarNode>()) {
      auto it = vars_.find(v);
      if (it == vars_.end())
        return Error(absl::StrCat("the variable '", v->name_hint, "' is unbound"));
      return it->second;
    }
    if (const auto* c = e.as<relax::ConstantNode>()) return Constant(*c);
    if (const auto* s = e.as<relax::ShapeExprNode>()) return MakeShape(s->values);
    if (const auto* p = e.as<relax::PrimValueNode>()) {
      if (const int64_t* c = ir::AsConstInt(p->value)) return Arg::Immediate(*c);
      if (const auto* f = p->value.as<ir::FloatImmNode>())
        return Arg::Constant(b_.AddConstant(Value(f->value)));
      if (p->value->dtype.is_int()) return IntValue(p->value);
      return Error(absl::StrCat("the PrimValue '", ir::DebugPrint(p->value),
                                "' is neither a constant nor an integer of shape variables"));
    }
    if (const auto* s = e.as<relax::StringImmNode>()) return StringConstant(s->value);
    if (const auto* d = e.as<relax::DataTypeImmNode>()) return StringConstant(d->value.ToString());
    if (const auto* g = e.as<relax::GlobalVarNode>())
      return Arg::Function(b_.Function(g->name_hint));
    if (const auto* t = e.as<relax::TupleNode>()) {
      absl::StatusOr<std::vector<Arg>> fields = Args(t->fields);
      if (!fields.ok()) return fields.status();
      int64_t r = b_.NewRegister();
      b_.EmitCall(r, "vm.builtin.make_tuple", std::move(*fields));
      return Arg::Register(r);
    }
    if (const auto* g = e.as<relax::TupleGetItemNode>()) {
      absl::StatusOr<Arg> tuple = Expr(g->tuple);
      if (!tuple.ok()) return tuple.status();
      int64_t r = b_.NewRegister();
      b_.EmitCall(r, "vm.builtin.tuple_getitem", {*tuple, Arg::Immediate(g->index)});
      return Arg::Register(r);
    }
    if (const auto* c = e.as<relax::CallNode>()) return Call(*c);
    if (const auto* seq = e.as<relax::SeqExprNode>()) return Seq(*seq);
    if (const auto* i = e.as<relax::IfNode>()) return If(*i);
    return Error(
        absl::StrCat("a ", ir::NodeKindName(e->kind()), " is not supported by VM codegen"));
  }

  absl::StatusOr<Arg> Seq(const relax::SeqExprNode& seq) {
    for (const relax::BindingBlock& block : seq.blocks) {
      for (const relax::Binding& binding : block->bindings) {
        binding_ = binding->var ? binding->var->name_hint : "";
        absl::StatusOr<Arg> value = Expr(binding->value);
        if (!value.ok()) return value.status();
        if (const auto* mc = binding.as<relax::MatchCastNode>()) {
          absl::Status s = CheckValue(*value, mc->struct_info,
                                      absl::StrCat("match_cast '", binding_, "' in '", name_, "'"));
          if (!s.ok()) return s;
        }
        if (binding->var) vars_[binding->var.get()] = *value;
        binding_.clear();
      }
    }
    return Expr(seq.body);
  }

  absl::StatusOr<Arg> If(const relax::IfNode& i) {
    absl::StatusOr<Arg> cond = Expr(i.cond);
    if (!cond.ok()) return cond.status();
    int64_t result = b_.NewRegister();
    int64_t branch = b_.EmitIf(InRegister(*cond));
    absl::StatusOr<Arg> t = Expr(i.true_branch);
    if (!t.ok()) return t.status();
    b_.EmitCall(result, "vm.builtin.copy", {*t});
    int64_t done = b_.EmitGoto();
    b_.SetJumpTarget(branch);
    absl::StatusOr<Arg> f = Expr(i.false_branch);
    if (!f.ok()) return f.status();
    b_.EmitCall(result, "vm.builtin.copy", {*f});
    b_.SetJumpTarget(done);
    return Arg::Register(result);
  }

  ExecBuilder& b_;
  std::string name_;
  std::string binding_;
  int64_t heap_ = 0;
  size_t heap_instruction_ = 0;
  std::unordered_map<const ir::Object*, Arg> vars_;
  std::unordered_map<const ir::VarNode*, int64_t> slots_;
  int64_t num_slots_ = 0;
  // Computed dimensions by printed expression: (heap slot, shape function).
  std::unordered_map<std::string, std::pair<int64_t, std::string>> computed_;
  std::vector<std::pair<std::string, ir::PrimFunc>>& shape_funcs_;
  const std::set<std::string>& kernels_;  // the module's PrimFuncs
};

}  // namespace

absl::StatusOr<VMCode> CodegenVM(const ir::IRModule& mod) {
  ExecBuilder builder;
  VMCode out;
  std::vector<std::pair<size_t, int64_t>> heap_sizes;
  std::set<std::string> kernels;
  for (const auto& [name, entry] : mod->functions) {
    if (entry.second.as<ir::PrimFuncNode>()) kernels.insert(name);
  }
  for (const auto& [name, entry] : mod->functions) {
    const auto* f = entry.second.as<relax::FunctionNode>();
    if (f == nullptr) continue;
    FunctionCodegen gen(&builder, name, &out.shape_funcs, &kernels);
    absl::Status s = gen.Generate(*f);
    if (!s.ok()) return s;
    heap_sizes.emplace_back(gen.heap_instruction(), gen.heap_slots());
    ir::relax::PlannedMemory planned = ir::relax::PlannedMemoryOf(*f);
    if (planned.tensors > 0) out.memory[name] = planned;
  }
  absl::StatusOr<runtime::vm::Executable> exec = builder.Build();
  if (!exec.ok()) return exec.status();
  for (const auto& [instruction, slots] : heap_sizes)
    exec->code[instruction].args[0] = Arg::Immediate(std::max<int64_t>(slots, 1));
  out.executable = std::move(*exec);
  return out;
}

}  // namespace kiln::backend
