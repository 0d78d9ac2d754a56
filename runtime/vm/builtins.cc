#include "runtime/vm/builtins.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::runtime::vm {
namespace {

using Args = absl::Span<const Value>;

absl::Status Bad(absl::string_view builtin, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("vm.builtin.", builtin, ": ", what));
}

absl::StatusOr<int64_t> IntArg(Args args, size_t i, absl::string_view builtin) {
  if (i >= args.size() || !args[i].as_int())
    return Bad(builtin, absl::StrCat("argument ", i, " must be an int"));
  return *args[i].as_int();
}

// The arguments themselves, not copies: these run on every call of a model.
absl::StatusOr<const std::string*> StringArg(Args args, size_t i, absl::string_view builtin) {
  if (i >= args.size() || !args[i].as_string())
    return Bad(builtin, absl::StrCat("argument ", i, " must be a string"));
  return args[i].as_string();
}

absl::StatusOr<const Tensor*> TensorArg(Args args, size_t i, absl::string_view builtin) {
  if (i >= args.size() || !args[i].as_tensor())
    return Bad(builtin, absl::StrCat("argument ", i, " must be a tensor"));
  return args[i].as_tensor();
}

// The shape heap: an int64 tensor of one dimension.
absl::StatusOr<int64_t*> HeapArg(Args args, size_t i, absl::string_view builtin, int64_t* size) {
  absl::StatusOr<const Tensor*> heap = TensorArg(args, i, builtin);
  if (!heap.ok()) return heap.status();
  DLDataType d = (*heap)->dtype();
  if (d.code != kDLInt || d.bits != 64 || (*heap)->ndim() != 1)
    return Bad(builtin, "the shape heap must be a 1-D int64 tensor");
  *size = (*heap)->shape()[0];
  return static_cast<int64_t*>((*heap)->data());
}

std::string ShapeText(absl::Span<const int64_t> dims) {
  return absl::StrCat("(", absl::StrJoin(dims, ", "), ")");
}

// Registers one builtin; all names are distinct, so registration cannot fail.
void Add(FunctionRegistry* r, const std::string& name, Function fn) {
  r->Replace("vm.builtin." + name, std::move(fn));
}

void AddAllocation(FunctionRegistry* r) {
  // alloc_storage(bytes) -> a uint8 tensor that alloc_tensor carves views from.
  Add(r, "alloc_storage", [](Args args) -> absl::StatusOr<Value> {
    absl::StatusOr<int64_t> bytes = IntArg(args, 0, "alloc_storage");
    if (!bytes.ok()) return bytes.status();
    absl::StatusOr<Tensor> t = Tensor::Empty({*bytes}, DLDataType{kDLUInt, 8, 1});
    if (!t.ok()) return t.status();
    return Value(*t);
  });
  // alloc_tensor(storage, byte_offset, shape, dtype) -> a view of the storage.
  Add(r, "alloc_tensor", [](Args args) -> absl::StatusOr<Value> {
    absl::StatusOr<const Tensor*> storage = TensorArg(args, 0, "alloc_tensor");
    absl::StatusOr<int64_t> offset = IntArg(args, 1, "alloc_tensor");
    absl::StatusOr<const std::string*> dtype_name = StringArg(args, 3, "alloc_tensor");
    if (!storage.ok()) return storage.status();
    if (!offset.ok()) return offset.status();
    if (!dtype_name.ok()) return dtype_name.status();
    if (args.size() < 3 || !args[2].as_shape())
      return Bad("alloc_tensor", "argument 2 must be a shape");
    absl::StatusOr<DLDataType> dtype = ParseDataType(**dtype_name);
    if (!dtype.ok()) return dtype.status();
    if (*offset < 0) return Bad("alloc_tensor", "a negative offset");
    absl::StatusOr<Tensor> t = (*storage)->View(*offset, *args[2].as_shape(), *dtype);
    if (!t.ok()) return t.status();
    return Value(*t);
  });
  // empty(shape, dtype) -> a fresh tensor (unplanned allocation).
  Add(r, "empty", [](Args args) -> absl::StatusOr<Value> {
    absl::StatusOr<const std::string*> dtype_name = StringArg(args, 1, "empty");
    if (!dtype_name.ok()) return dtype_name.status();
    if (args.empty() || !args[0].as_shape()) return Bad("empty", "argument 0 must be a shape");
    absl::StatusOr<DLDataType> dtype = ParseDataType(**dtype_name);
    if (!dtype.ok()) return dtype.status();
    absl::StatusOr<Tensor> t = Tensor::Empty(*args[0].as_shape(), *dtype);
    if (!t.ok()) return t.status();
    return Value(*t);
  });
  // alloc_shape_heap(slots) -> the int64 tensor holding the values of shape variables.
  Add(r, "alloc_shape_heap", [](Args args) -> absl::StatusOr<Value> {
    absl::StatusOr<int64_t> slots = IntArg(args, 0, "alloc_shape_heap");
    if (!slots.ok()) return slots.status();
    absl::StatusOr<Tensor> t = Tensor::Empty({*slots}, DLDataType{kDLInt, 64, 1});
    if (!t.ok()) return t.status();
    return Value(*t);
  });
}

void AddShapes(FunctionRegistry* r) {
  Add(r, "make_shape", [](Args args) -> absl::StatusOr<Value> {
    int64_t size = 0;
    absl::StatusOr<int64_t*> heap = HeapArg(args, 0, "make_shape", &size);
    if (!heap.ok()) return heap.status();
    if (args.size() % 2 != 1) return Bad("make_shape", "dimensions come as (code, value) pairs");
    std::vector<int64_t> dims;
    for (size_t i = 1; i < args.size(); i += 2) {
      absl::StatusOr<int64_t> code = IntArg(args, i, "make_shape");
      absl::StatusOr<int64_t> v = IntArg(args, i + 1, "make_shape");
      if (!code.ok()) return code.status();
      if (!v.ok()) return v.status();
      if (*code == 0) {
        dims.push_back(*v);
      } else if (*code == 1 && *v >= 0 && *v < size) {
        dims.push_back((*heap)[*v]);
      } else {
        return Bad("make_shape", absl::StrCat("bad dimension code ", *code, " / slot ", *v));
      }
    }
    return Value(std::move(dims));
  });
  // shape_heap_get(heap, slot) -> the int in that slot: a symbolic value passed to a kernel or
  // used as a PrimValue.
  Add(r, "shape_heap_get", [](Args args) -> absl::StatusOr<Value> {
    int64_t size = 0;
    absl::StatusOr<int64_t*> heap = HeapArg(args, 0, "shape_heap_get", &size);
    absl::StatusOr<int64_t> slot = IntArg(args, 1, "shape_heap_get");
    if (!heap.ok()) return heap.status();
    if (!slot.ok()) return slot.status();
    if (*slot < 0 || *slot >= size)
      return Bad("shape_heap_get", absl::StrCat("heap slot ", *slot, " of ", size));
    return Value((*heap)[*slot]);
  });
  Add(r, "match_shape", [](Args args) -> absl::StatusOr<Value> {
    int64_t size = 0;
    absl::StatusOr<int64_t*> heap = HeapArg(args, 1, "match_shape", &size);
    absl::StatusOr<const std::string*> where = StringArg(args, 2, "match_shape");
    if (!heap.ok()) return heap.status();
    if (!where.ok()) return where.status();
    std::vector<int64_t> dims;
    if (const auto* t = args[0].as_tensor()) {
      dims.assign(t->shape().begin(), t->shape().end());
    } else if (const auto* s = args[0].as_shape()) {
      dims = *s;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(**where, ": expected a tensor or a shape, got a ", args[0].kind_name()));
    }
    size_t rank = (args.size() - 3) / 2;
    if (args.size() % 2 != 1 || dims.size() != rank) {
      return absl::InvalidArgumentError(
          absl::StrCat(**where, ": expected rank ", rank, ", got shape ", ShapeText(dims)));
    }
    for (size_t d = 0; d < rank; ++d) {
      absl::StatusOr<int64_t> code = IntArg(args, 3 + 2 * d, "match_shape");
      absl::StatusOr<int64_t> v = IntArg(args, 4 + 2 * d, "match_shape");
      if (!code.ok()) return code.status();
      if (!v.ok()) return v.status();
      if (*code != 0 && *code != 3 && (*v < 0 || *v >= size))
        return Bad("match_shape", absl::StrCat("heap slot ", *v, " of ", size));
      int64_t expected = 0;
      switch (*code) {
        case 0:
          expected = *v;
          break;
        case 1:
          (*heap)[*v] = dims[d];
          continue;
        case 2:
          expected = (*heap)[*v];
          break;
        case 3:
          continue;
        default:
          return Bad("match_shape", absl::StrCat("bad dimension code ", *code));
      }
      if (dims[d] != expected) {
        return absl::InvalidArgumentError(absl::StrCat(**where, ": dimension ", d, " is ", dims[d],
                                                       ", expected ", expected, " (shape ",
                                                       ShapeText(dims), ")"));
      }
    }
    return Value();
  });
  Add(r, "shape_of", [](Args args) -> absl::StatusOr<Value> {
    absl::StatusOr<const Tensor*> t = TensorArg(args, 0, "shape_of");
    if (!t.ok()) return t.status();
    return Value(std::vector<int64_t>((*t)->shape().begin(), (*t)->shape().end()));
  });
  // shape_to_tensor(shape): the dimensions as an int64 tensor [ndim].
  Add(r, "shape_to_tensor", [](Args args) -> absl::StatusOr<Value> {
    const std::vector<int64_t>* dims = args.empty() ? nullptr : args[0].as_shape();
    if (dims == nullptr) return Bad("shape_to_tensor", "argument 0 must be a shape");
    absl::StatusOr<Tensor> t =
        Tensor::Empty({static_cast<int64_t>(dims->size())}, DLDataType{kDLInt, 64, 1});
    if (!t.ok()) return t.status();
    std::copy(dims->begin(), dims->end(), static_cast<int64_t*>(t->data()));
    return Value(std::move(*t));
  });
  // tensor_to_shape(1-D integer tensor): its values as a shape (what match_cast then binds).
  Add(r, "tensor_to_shape", [](Args args) -> absl::StatusOr<Value> {
    absl::StatusOr<const Tensor*> arg = TensorArg(args, 0, "tensor_to_shape");
    if (!arg.ok()) return arg.status();
    const Tensor* t = *arg;
    const DLDataType dt = t->dtype();
    if (t->ndim() != 1 || dt.code != kDLInt || dt.lanes != 1 || (dt.bits != 64 && dt.bits != 32))
      return Bad("tensor_to_shape", absl::StrCat("expected a 1-D int64 or int32 tensor, got ",
                                                 DataTypeToString(dt), " ", ShapeText(t->shape())));
    std::vector<int64_t> dims(static_cast<size_t>(t->shape()[0]));
    for (size_t k = 0; k < dims.size(); ++k) {
      dims[k] = dt.bits == 64 ? static_cast<const int64_t*>(t->data())[k]
                              : static_cast<const int32_t*>(t->data())[k];
    }
    return Value(std::move(dims));
  });
  // check_tensor_info(value, ndim or -1, dtype or "", where)
  Add(r, "check_tensor_info", [](Args args) -> absl::StatusOr<Value> {
    absl::StatusOr<int64_t> ndim = IntArg(args, 1, "check_tensor_info");
    absl::StatusOr<const std::string*> dtype = StringArg(args, 2, "check_tensor_info");
    absl::StatusOr<const std::string*> where = StringArg(args, 3, "check_tensor_info");
    if (!ndim.ok()) return ndim.status();
    if (!dtype.ok()) return dtype.status();
    if (!where.ok()) return where.status();
    const Tensor* t = args[0].as_tensor();
    if (t == nullptr)
      return absl::InvalidArgumentError(
          absl::StrCat(**where, ": expected a tensor, got a ", args[0].kind_name()));
    if (*ndim >= 0 && t->ndim() != *ndim)
      return absl::InvalidArgumentError(
          absl::StrCat(**where, ": expected rank ", *ndim, ", got shape ", ShapeText(t->shape())));
    if (!(*dtype)->empty()) {
      absl::StatusOr<DLDataType> want = ParseDataType(**dtype);
      const DLDataType got = t->dtype();
      if (!want.ok() || want->code != got.code || want->bits != got.bits ||
          want->lanes != got.lanes) {
        return absl::InvalidArgumentError(
            absl::StrCat(**where, ": expected dtype ", **dtype, ", got ", DataTypeToString(got)));
      }
    }
    return Value();
  });
  // check_shape_info(value, ndim or -1, where)
  Add(r, "check_shape_info", [](Args args) -> absl::StatusOr<Value> {
    absl::StatusOr<int64_t> ndim = IntArg(args, 1, "check_shape_info");
    absl::StatusOr<const std::string*> where = StringArg(args, 2, "check_shape_info");
    if (!ndim.ok()) return ndim.status();
    if (!where.ok()) return where.status();
    const auto* s = args[0].as_shape();
    if (s == nullptr)
      return absl::InvalidArgumentError(
          absl::StrCat(**where, ": expected a shape, got a ", args[0].kind_name()));
    if (*ndim >= 0 && static_cast<int64_t>(s->size()) != *ndim)
      return absl::InvalidArgumentError(
          absl::StrCat(**where, ": expected ", *ndim, " dimensions, got ", ShapeText(*s)));
    return Value();
  });
}

void AddTuples(FunctionRegistry* r) {
  Add(r, "make_tuple", [](Args args) -> absl::StatusOr<Value> {
    return Value::MakeTuple(Tuple(args.begin(), args.end()));
  });
  Add(r, "tuple_getitem", [](Args args) -> absl::StatusOr<Value> {
    absl::StatusOr<int64_t> index = IntArg(args, 1, "tuple_getitem");
    if (!index.ok()) return index.status();
    const Tuple* t = args[0].as_tuple();
    if (t == nullptr)
      return Bad("tuple_getitem", absl::StrCat("a ", args[0].kind_name(), " is not a tuple"));
    if (*index < 0 || *index >= static_cast<int64_t>(t->size()))
      return Bad("tuple_getitem", absl::StrCat("index ", *index, " of a ", t->size(), "-tuple"));
    return (*t)[*index];
  });
  // check_tuple_info(value, size, where)
  Add(r, "check_tuple_info", [](Args args) -> absl::StatusOr<Value> {
    absl::StatusOr<int64_t> size = IntArg(args, 1, "check_tuple_info");
    absl::StatusOr<const std::string*> where = StringArg(args, 2, "check_tuple_info");
    if (!size.ok()) return size.status();
    if (!where.ok()) return where.status();
    const Tuple* t = args[0].as_tuple();
    if (t == nullptr || static_cast<int64_t>(t->size()) != *size)
      return absl::InvalidArgumentError(absl::StrCat(
          **where, ": expected a ", *size, "-tuple, got ",
          t ? absl::StrCat("a ", t->size(), "-tuple") : absl::StrCat("a ", args[0].kind_name())));
    return Value();
  });
  Add(r, "null_value", [](Args) -> absl::StatusOr<Value> { return Value(); });
  // copy(x) -> x: moves a constant or an immediate into a register (values are shared, tensors
  // are not copied).
  Add(r, "copy", [](Args args) -> absl::StatusOr<Value> {
    if (args.size() != 1) return Bad("copy", "takes one value");
    return args[0];
  });
}

}  // namespace

const FunctionRegistry& Builtins() {
  static const FunctionRegistry* registry = [] {
    auto* r = new FunctionRegistry();
    AddAllocation(r);
    AddShapes(r);
    AddTuples(r);
    return r;
  }();
  return *registry;
}

}  // namespace kiln::runtime::vm
