// The Relax VM on hand-built executables: control flow, recursion, closures, tuples, planned
// storage with a real kernel library, shape checks, serialization and every kind of bad input.
#include "runtime/vm/vm.h"

#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/format/vm.pb.h"
#include "runtime/vm/builtins.h"
#include "runtime/vm/exec_builder.h"

namespace kiln::runtime::vm {
namespace {

using ::testing::HasSubstr;

// Integer helpers a user registers, as an embedder would.
const FunctionRegistry& IntFunctions() {
  static const FunctionRegistry* r = [] {
    auto* r = new FunctionRegistry();
    auto binary = [r](const std::string& name, int64_t (*op)(int64_t, int64_t)) {
      r->Replace(name, [op](absl::Span<const Value> args) -> absl::StatusOr<Value> {
        if (args.size() != 2 || !args[0].as_int() || !args[1].as_int())
          return absl::InvalidArgumentError("takes two ints");
        return Value(op(*args[0].as_int(), *args[1].as_int()));
      });
    };
    binary("test.add", [](int64_t a, int64_t b) { return a + b; });
    binary("test.sub", [](int64_t a, int64_t b) { return a - b; });
    binary("test.mul", [](int64_t a, int64_t b) { return a * b; });
    binary("test.less", [](int64_t a, int64_t b) -> int64_t { return a < b; });
    return r;
  }();
  return *r;
}

std::unique_ptr<VirtualMachine> Load(ExecBuilder& b,
                                     std::shared_ptr<KernelLibrary> kernels = nullptr) {
  absl::StatusOr<Executable> exec = b.Build();
  EXPECT_TRUE(exec.ok()) << exec.status();
  absl::StatusOr<std::unique_ptr<VirtualMachine>> vm =
      VirtualMachine::Create(std::make_shared<const Executable>(std::move(*exec)),
                             std::move(kernels), nullptr, &IntFunctions());
  EXPECT_TRUE(vm.ok()) << vm.status();
  return std::move(*vm);
}

int64_t AsInt(const absl::StatusOr<Value>& v) {
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() && v->as_int() ? *v->as_int() : -999999;
}

// main(x, y) = x * y + 3
void BuildMulAdd(ExecBuilder& b) {
  b.BeginFunction("main", {"x", "y"});
  int64_t t = b.NewRegister(), r = b.NewRegister();
  b.EmitCall(t, "test.mul", {Arg::Register(0), Arg::Register(1)});
  b.EmitCall(r, "test.add", {Arg::Register(t), Arg::Immediate(3)});
  b.EmitRet(r);
  b.EndFunction();
}

TEST(VMTest, CallsAndDisassembly) {
  ExecBuilder b;
  BuildMulAdd(b);
  auto vm = Load(b);
  EXPECT_EQ(AsInt(vm->Invoke("main", {Value(int64_t{6}), Value(int64_t{7})})), 45);
  EXPECT_EQ(vm->executable().AsText(),
            "@main(x, y): 4 registers\n"
            "  0: %2 = call test.mul(%0, %1)\n"
            "  1: %3 = call test.add(%2, 3)\n"
            "  2: ret %3\n"
            "@test.mul: packed\n"
            "@test.add: packed\n");
  EXPECT_THAT(vm->Invoke("main", {Value(int64_t{1})}).status().message(),
              HasSubstr("'main' takes 2 arguments, got 1"));
  EXPECT_THAT(vm->Invoke("nope", {}).status().message(), HasSubstr("no function 'nope'"));
  // An error inside a call names the function, the instruction and the callee.
  EXPECT_THAT(vm->Invoke("main", {Value(1.5), Value(int64_t{2})}).status().message(),
              HasSubstr("in 'main' at instruction 0 (test.mul): takes two ints"));
}

// fact(n) = n < 2 ? 1 : n * fact(n - 1): If, Goto and recursion.
TEST(VMTest, RecursionWithIfAndGoto) {
  ExecBuilder b;
  b.BeginFunction("fact", {"n"});
  int64_t small = b.NewRegister(), result = b.NewRegister(), m = b.NewRegister();
  b.EmitCall(small, "test.less", {Arg::Register(0), Arg::Immediate(2)});
  int64_t branch = b.EmitIf(small);
  b.EmitCall(result, "test.add", {Arg::Immediate(0), Arg::Immediate(1)});  // then: 1
  int64_t done = b.EmitGoto();
  b.SetJumpTarget(branch);  // else: n * fact(n - 1)
  b.EmitCall(m, "test.sub", {Arg::Register(0), Arg::Immediate(1)});
  b.EmitCall(m, "fact", {Arg::Register(m)});
  b.EmitCall(result, "test.mul", {Arg::Register(0), Arg::Register(m)});
  b.SetJumpTarget(done);
  b.EmitRet(result);
  b.EndFunction();
  auto vm = Load(b);
  EXPECT_EQ(AsInt(vm->Invoke("fact", {Value(int64_t{1})})), 1);
  EXPECT_EQ(AsInt(vm->Invoke("fact", {Value(int64_t{10})})), 3628800);
  // Runaway recursion ends in an error, not a stack overflow.
  absl::Status deep = vm->Invoke("fact", {Value(int64_t{100000})}).status();
  EXPECT_EQ(deep.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(deep.message(), HasSubstr("VM call depth exceeds"));
}

TEST(VMTest, ClosuresCaptureValues) {
  ExecBuilder b;
  b.BeginFunction("add_to", {"base", "x"});
  int64_t r = b.NewRegister();
  b.EmitCall(r, "test.add", {Arg::Register(0), Arg::Register(1)});
  b.EmitRet(r);
  b.EndFunction();
  b.BeginFunction("main", {"x"});
  int64_t c = b.NewRegister(), out = b.NewRegister();
  b.EmitCall(c, kMakeClosure, {Arg::Function(b.Function("add_to")), Arg::Immediate(10)});
  b.EmitCall(out, kInvokeClosure, {Arg::Register(c), Arg::Register(0)});
  b.EmitRet(out);
  b.EndFunction();
  auto vm = Load(b);
  EXPECT_EQ(AsInt(vm->Invoke("main", {Value(int64_t{5})})), 15);
}

TEST(VMTest, TuplesAndNull) {
  ExecBuilder b;
  b.BeginFunction("main", {"a", "b"});
  int64_t t = b.NewRegister(), second = b.NewRegister(), none = b.NewRegister();
  b.EmitCall(t, "vm.builtin.make_tuple", {Arg::Register(0), Arg::Register(1)});
  b.EmitCall(second, "vm.builtin.tuple_getitem", {Arg::Register(t), Arg::Immediate(1)});
  b.EmitCall(none, "vm.builtin.null_value", {});
  b.EmitCall(t, "vm.builtin.make_tuple", {Arg::Register(second), Arg::Register(none)});
  b.EmitRet(t);
  b.EndFunction();
  b.BeginFunction("bad_index", {"a"});
  int64_t u = b.NewRegister();
  b.EmitCall(u, "vm.builtin.make_tuple", {Arg::Register(0)});
  b.EmitCall(u, "vm.builtin.tuple_getitem", {Arg::Register(u), Arg::Immediate(3)});
  b.EmitRet(u);
  b.EndFunction();
  auto vm = Load(b);
  absl::StatusOr<Value> v = vm->Invoke("main", {Value(int64_t{1}), Value(std::string("two"))});
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_NE(v->as_tuple(), nullptr);
  ASSERT_EQ(v->as_tuple()->size(), 2u);
  EXPECT_EQ(*(*v->as_tuple())[0].as_string(), "two");
  EXPECT_TRUE((*v->as_tuple())[1].is_none());
  EXPECT_THAT(vm->Invoke("bad_index", {Value(int64_t{1})}).status().message(),
              HasSubstr("tuple_getitem: index 3 of a 1-tuple"));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// c = a + b through a real kernel library, with a and c carved from one planned storage and
// the shapes checked and computed at run time from a symbolic n.
TEST(VMTest, PlannedStorageSymbolicShapesAndAKernel) {
  absl::StatusOr<std::shared_ptr<KernelLibrary>> lib =
      KernelLibrary::LoadFromMemory(ReadFile("runtime/libtest_kernels.so"), "test_kernels");
  ASSERT_TRUE(lib.ok()) << lib.status();
  ExecBuilder b;
  int64_t where_a = b.AddConstant(Value(std::string("argument 'a' of 'main'")));
  int64_t where_b = b.AddConstant(Value(std::string("argument 'b' of 'main'")));
  int64_t f32 = b.AddConstant(Value(std::string("float32")));
  b.BeginFunction("main", {"a", "b"});
  int64_t heap = b.NewRegister(), shape = b.NewRegister(), storage = b.NewRegister(),
          c = b.NewRegister(), ignored = b.NewRegister();
  b.EmitCall(ignored, "vm.builtin.check_tensor_info",
             {Arg::Register(0), Arg::Immediate(1), Arg::Constant(f32), Arg::Constant(where_a)});
  b.EmitCall(heap, "vm.builtin.alloc_shape_heap", {Arg::Immediate(1)});
  // a: (n,) stores n; b: (n,) must agree.
  b.EmitCall(kDiscard, "vm.builtin.match_shape",
             {Arg::Register(0), Arg::Register(heap), Arg::Constant(where_a), Arg::Immediate(1),
              Arg::Immediate(0)});
  b.EmitCall(kDiscard, "vm.builtin.match_shape",
             {Arg::Register(1), Arg::Register(heap), Arg::Constant(where_b), Arg::Immediate(2),
              Arg::Immediate(0)});
  b.EmitCall(shape, "vm.builtin.make_shape",
             {Arg::Register(heap), Arg::Immediate(1), Arg::Immediate(0)});
  b.EmitCall(storage, "vm.builtin.alloc_storage", {Arg::Immediate(4096)});
  b.EmitCall(
      c, "vm.builtin.alloc_tensor",
      {Arg::Register(storage), Arg::Immediate(64), Arg::Register(shape), Arg::Constant(f32)});
  b.EmitCall(kDiscard, "add_f32", {Arg::Register(0), Arg::Register(1), Arg::Register(c)});
  b.EmitRet(c);
  b.EndFunction();
  auto vm = Load(b, *lib);
  for (int64_t n : {1, 4, 7}) {
    Tensor a = *Tensor::Empty({n}, *ParseDataType("float32"));
    Tensor bt = *Tensor::Empty({n}, *ParseDataType("float32"));
    for (int64_t i = 0; i < n; ++i) {
      static_cast<float*>(a.data())[i] = static_cast<float>(i);
      static_cast<float*>(bt.data())[i] = 0.5f;
    }
    absl::StatusOr<Value> out = vm->Invoke("main", {Value(a), Value(bt)});
    ASSERT_TRUE(out.ok()) << out.status();
    const Tensor* ct = out->as_tensor();
    ASSERT_NE(ct, nullptr);
    ASSERT_EQ(ct->shape()[0], n);
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(static_cast<const float*>(ct->data())[i], i + 0.5f);
  }
  // An instrumented Invoke times each kernel call (and only kernels: builtins are not listed);
  // a plain one leaves the times alone.
  Tensor a3 = *Tensor::Empty({3}, *ParseDataType("float32"));
  KernelCallTimes times;
  ASSERT_TRUE(vm->Invoke("main", {Value(a3), Value(a3)}, &times).ok());
  ASSERT_TRUE(vm->Invoke("main", {Value(a3), Value(a3)}, &times).ok());
  ASSERT_TRUE(vm->Invoke("main", {Value(a3), Value(a3)}).ok());
  ASSERT_EQ(times.seconds.size(), 1u);
  ASSERT_EQ(times.seconds["add_f32"].size(), 2u);
  EXPECT_GT(times.seconds["add_f32"][0], 0);
  Tensor a4 = *Tensor::Empty({4}, *ParseDataType("float32"));
  Tensor b5 = *Tensor::Empty({5}, *ParseDataType("float32"));
  EXPECT_THAT(vm->Invoke("main", {Value(a4), Value(b5)}).status().message(),
              HasSubstr("argument 'b' of 'main': dimension 0 is 5, expected 4"));
  Tensor i4 = *Tensor::Empty({4}, *ParseDataType("int32"));
  EXPECT_THAT(vm->Invoke("main", {Value(i4), Value(a4)}).status().message(),
              HasSubstr("argument 'a' of 'main': expected dtype float32, got int32"));
  Tensor m = *Tensor::Empty({2, 2}, *ParseDataType("float32"));
  EXPECT_THAT(vm->Invoke("main", {Value(m), Value(a4)}).status().message(),
              HasSubstr("argument 'a' of 'main': expected rank 1, got shape (2, 2)"));
  // A tensor that does not fit its storage is refused, not written past the end.
  Tensor big = *Tensor::Empty({2000}, *ParseDataType("float32"));
  EXPECT_THAT(vm->Invoke("main", {Value(big), Value(big)}).status().message(),
              HasSubstr("does not fit in 4096 bytes of storage"));
}

// Views of constant shape and dtype (what compiled models allocate), carved by the VM itself
// and kernels called with arguments read in place: the same results and refusals as the
// builtin's, and a scalar's empty shape survives serialization.
TEST(VMTest, ConstantShapeViewsAndKernelCallsInPlace) {
  absl::StatusOr<std::shared_ptr<KernelLibrary>> lib =
      KernelLibrary::LoadFromMemory(ReadFile("runtime/libtest_kernels.so"), "test_kernels");
  ASSERT_TRUE(lib.ok()) << lib.status();
  ExecBuilder b;
  int64_t f32 = b.AddConstant(Value(std::string("float32")));
  int64_t shape3 = b.AddConstant(Value(std::vector<int64_t>{3}));
  int64_t scalar = b.AddConstant(Value(std::vector<int64_t>{}));
  b.BeginFunction("main", {"a", "offset"});
  int64_t storage = b.NewRegister(), c = b.NewRegister(), s = b.NewRegister(), t = b.NewRegister();
  b.EmitCall(storage, "vm.builtin.alloc_storage", {Arg::Immediate(256)});
  b.EmitCall(
      c, "vm.builtin.alloc_tensor",
      {Arg::Register(storage), Arg::Immediate(128), Arg::Constant(shape3), Arg::Constant(f32)});
  b.EmitCall(
      s, "vm.builtin.alloc_tensor",
      {Arg::Register(storage), Arg::Immediate(192), Arg::Constant(scalar), Arg::Constant(f32)});
  b.EmitCall(kDiscard, "add_f32", {Arg::Register(0), Arg::Register(0), Arg::Register(c)});
  // A view past the storage's end: refused with the builtin's message.
  b.EmitCall(t, "test.less", {Arg::Immediate(0), Arg::Register(1)});
  int64_t jump = b.EmitIf(t);
  b.EmitCall(
      kDiscard, "vm.builtin.alloc_tensor",
      {Arg::Register(storage), Arg::Immediate(256), Arg::Constant(shape3), Arg::Constant(f32)});
  b.SetJumpTarget(jump);
  b.EmitCall(t, "vm.builtin.make_tuple", {Arg::Register(c), Arg::Register(s)});
  b.EmitRet(t);
  b.EndFunction();
  absl::StatusOr<Executable> built = b.Build();
  ASSERT_TRUE(built.ok()) << built.status();
  absl::StatusOr<std::string> bytes = built->Serialize();
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<Executable> exec = Executable::Deserialize(*bytes);
  ASSERT_TRUE(exec.ok()) << exec.status();
  ASSERT_NE(exec->constants[scalar].as_shape(), nullptr);
  EXPECT_TRUE(exec->constants[scalar].as_shape()->empty());
  absl::StatusOr<std::unique_ptr<VirtualMachine>> vm = VirtualMachine::Create(
      std::make_shared<const Executable>(*std::move(exec)), *lib, nullptr, &IntFunctions());
  ASSERT_TRUE(vm.ok()) << vm.status();
  Tensor a = *Tensor::Empty({3}, *ParseDataType("float32"));
  for (int i = 0; i < 3; ++i) static_cast<float*>(a.data())[i] = 1.5f * i;
  absl::StatusOr<Value> out = (*vm)->Invoke("main", {Value(a), Value(int64_t{0})});
  ASSERT_TRUE(out.ok()) << out.status();
  const Tensor* ct = out->as_tuple()->at(0).as_tensor();
  const Tensor* st = out->as_tuple()->at(1).as_tensor();
  ASSERT_TRUE(ct != nullptr && st != nullptr);
  ASSERT_EQ(ct->shape().size(), 1u);
  EXPECT_EQ(ct->shape()[0], 3);
  EXPECT_EQ(st->ndim(), 0);
  EXPECT_EQ(static_cast<const char*>(st->data()) - static_cast<const char*>(ct->data()), 64);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(static_cast<const float*>(ct->data())[i], 3.0f * i);
  EXPECT_THAT((*vm)->Invoke("main", {Value(a), Value(int64_t{5})}).status().message(),
              HasSubstr("does not fit in 256 bytes of storage"));
  // A kernel invoked by name, outside any frame, runs the same way.
  Tensor twice = *Tensor::Empty({3}, *ParseDataType("float32"));
  ASSERT_TRUE((*vm)->Invoke("add_f32", {Value(a), Value(a), Value(twice)}).ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(static_cast<const float*>(twice.data())[i], 3.0f * i);
  EXPECT_THAT(
      (*vm)->Invoke("add_f32", {Value(a), Value(int64_t{2}), Value(twice)}).status().message(),
      HasSubstr("test_kernels:add_f32"));
  // A kernel given a wrong argument names it, with where it was called.
  EXPECT_THAT((*vm)->Invoke("main", {Value(int64_t{1}), Value(int64_t{0})}).status().message(),
              HasSubstr("in 'main' at instruction 3 (add_f32): test_kernels:add_f32"));
}

TEST(VMTest, SerializationRoundTripsAndRejectsBadBytes) {
  ExecBuilder b;
  BuildMulAdd(b);
  Tensor weights = *Tensor::Empty({3}, *ParseDataType("float32"));
  for (int i = 0; i < 3; ++i) static_cast<float*>(weights.data())[i] = i * 1.5f;
  b.AddConstant(Value(weights));
  b.AddConstant(Value(std::vector<int64_t>{2, 3}));
  b.AddConstant(Value(2.5));
  absl::StatusOr<Executable> exec = b.Build();
  ASSERT_TRUE(exec.ok()) << exec.status();
  absl::StatusOr<std::string> bytes = exec->Serialize();
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<Executable> back = Executable::Deserialize(*bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->AsText(), exec->AsText());
  EXPECT_THAT(back->AsText(),
              HasSubstr("c[0] = tensor((3), float32)\nc[1] = shape(2, 3)\nc[2] = 2.5\n"));
  EXPECT_EQ(static_cast<const float*>(back->constants[0].as_tensor()->data())[2], 3.0f);
  auto vm = VirtualMachine::Create(std::make_shared<const Executable>(*back), nullptr, nullptr,
                                   &IntFunctions());
  ASSERT_TRUE(vm.ok()) << vm.status();
  EXPECT_EQ(AsInt((*vm)->Invoke("main", {Value(int64_t{2}), Value(int64_t{3})})), 9);

  EXPECT_THAT(Executable::Deserialize("\xff\xff garbage").status().message(),
              HasSubstr("not a valid VMExecutableProto"));
  kiln::v1::VMExecutableProto p;
  ASSERT_TRUE(p.ParseFromString(*bytes));
  p.set_format_version(99);
  EXPECT_THAT(Executable::Deserialize(p.SerializeAsString()).status().message(),
              HasSubstr("format version 99 is not supported"));
  p.set_format_version(kVMFormatVersion);
  p.mutable_instructions(1)->mutable_args(0)->set_value(40);  // a register past the file
  EXPECT_THAT(Executable::Deserialize(p.SerializeAsString()).status().message(),
              HasSubstr("VM function 'main': instruction 1: argument %40 is out of range"));
  p.mutable_instructions(1)->mutable_args(0)->set_value(2);
  p.mutable_constants(0)->mutable_tensor()->set_data("abc");
  EXPECT_THAT(Executable::Deserialize(p.SerializeAsString()).status().message(),
              HasSubstr("constant 0 has 3 bytes of data, its shape needs 12"));
}

TEST(VMTest, MissingFunctionsAndBadJumpsAreRefused) {
  ExecBuilder b;
  b.BeginFunction("main", {});
  int64_t r = b.NewRegister();
  b.EmitCall(r, "no.such.function", {});
  b.EmitRet(r);
  b.EndFunction();
  absl::StatusOr<Executable> exec = b.Build();
  ASSERT_TRUE(exec.ok());
  absl::StatusOr<std::unique_ptr<VirtualMachine>> vm =
      VirtualMachine::Create(std::make_shared<const Executable>(*exec), nullptr, nullptr, nullptr);
  EXPECT_EQ(vm.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(vm.status().message(), HasSubstr("calls 'no.such.function'"));

  ExecBuilder j;
  j.BeginFunction("loop", {"x"});
  int64_t g = j.EmitGoto();  // offset 0 until set: a jump to itself is refused
  (void)g;
  j.EndFunction();
  EXPECT_THAT(j.Build().status().message(),
              HasSubstr("instruction 0: jumps by 0 outside the function"));
}

}  // namespace
}  // namespace kiln::runtime::vm
