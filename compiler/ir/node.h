// The node system shared by TIR and Relax.
//
// Nodes are immutable once built and reference-counted intrusively; `Ref<T>` is the cheap handle
// (one pointer). Every node lists its fields exactly once, in `VisitFields`, and that one list
// drives structural equality, structural hashing and the debug printer, so adding a field to a
// node cannot silently leave it out of the cache key.
//
// Dynamic type checks use the node's `NodeKind`, not RTTI: `ref.as<AddNode>()` is a compare and a
// static_cast.
#ifndef KILN_COMPILER_IR_NODE_H_
#define KILN_COMPILER_IR_NODE_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "compiler/ir/data_type.h"

namespace kiln::ir {

// Every node kind, grouped so that each category is a contiguous range. The groups are used by
// the dispatchers of the visitors; names double as the kinds' printed names.
// clang-format off
#define KILN_TIR_EXPR_KINDS(X) \
  X(IntImm) \
  X(FloatImm) \
  X(StringImm) \
  X(Var) \
  X(Cast) \
  X(Add) \
  X(Sub) \
  X(Mul) \
  X(Div) \
  X(Mod) \
  X(FloorDiv) \
  X(FloorMod) \
  X(Min) \
  X(Max) \
  X(EQ) \
  X(NE) \
  X(LT) \
  X(LE) \
  X(GT) \
  X(GE) \
  X(And) \
  X(Or) \
  X(Not) \
  X(Select) \
  X(BufferLoad) \
  X(Ramp) \
  X(Broadcast) \
  X(Let) \
  X(Call)

#define KILN_TIR_STMT_KINDS(X) \
  X(LetStmt) \
  X(AttrStmt) \
  X(AssertStmt) \
  X(BufferStore) \
  X(Allocate) \
  X(For) \
  X(While) \
  X(IfThenElse) \
  X(SeqStmt) \
  X(Evaluate) \
  X(Block) \
  X(BlockRealize)

#define KILN_TIR_OTHER_KINDS(X) \
  X(Range) \
  X(Buffer) \
  X(IterVar) \
  X(BufferRegion) \
  X(MatchBufferRegion) \
  X(PrimFunc)

#define KILN_STRUCT_INFO_KINDS(X) \
  X(ObjectStructInfo) \
  X(PrimStructInfo) \
  X(ShapeStructInfo) \
  X(TensorStructInfo) \
  X(TupleStructInfo) \
  X(FuncStructInfo)

#define KILN_RELAX_EXPR_KINDS(X) \
  X(Constant) \
  X(RelaxVar) \
  X(DataflowVar) \
  X(GlobalVar) \
  X(Tuple) \
  X(SeqExpr) \
  X(PrimValue) \
  X(RelaxStringImm) \
  X(DataTypeImm) \
  X(Function) \
  X(If) \
  X(ExternFunc) \
  X(RelaxCall) \
  X(ShapeExpr) \
  X(TupleGetItem) \
  X(Op)

#define KILN_RELAX_OTHER_KINDS(X) \
  X(VarBinding) \
  X(MatchCast) \
  X(BindingBlock) \
  X(DataflowBlock)

#define KILN_MISC_KINDS(X) \
  X(Array) \
  X(DictAttr) \
  X(IRModule)

#define KILN_ALL_NODE_KINDS(X) \
  KILN_TIR_EXPR_KINDS(X) \
  KILN_TIR_STMT_KINDS(X) \
  KILN_TIR_OTHER_KINDS(X) \
  KILN_STRUCT_INFO_KINDS(X) \
  KILN_RELAX_EXPR_KINDS(X) \
  KILN_RELAX_OTHER_KINDS(X) \
  KILN_MISC_KINDS(X)
// clang-format on

enum class NodeKind : uint16_t {
#define KILN_KIND_ENUM(Name) k##Name,
  KILN_ALL_NODE_KINDS(KILN_KIND_ENUM)
#undef KILN_KIND_ENUM
      kNumKinds
};

// "Add", "TensorStructInfo", ...
const char* NodeKindName(NodeKind kind);

class FieldVisitor;
class Object;

// Deletes a node whose last reference went away. Deleting a node releases its fields, which may
// delete them in turn: a chain of a million nodes (a long `a + b + ...`, a deep nest) would
// recurse a million frames deep. Deletions that start while another is running are queued and
// run one after another by the outermost call, so node destruction never recurses.
void DeleteNode(const Object* node);

// How deep Kiln nests IR: expressions, statements and syntax deeper than this are refused by the
// front ends with an error naming where. Every walk over IR may recurse once per level, and
// compiling runs on a thread with kCompilerStackBytes of stack (runtime/support/large_stack.h), so
// the two are chosen together: the stress tests (tests/stress_test.cc) compile at this depth.
inline constexpr int kMaxNestingDepth = 20000;

// The most dimensions a tensor or buffer may have (NumPy's and PyTorch's limit too). Scheduling
// and lowering do work per pair of loops in a nest: a rank of 10^4 would cost minutes.
inline constexpr int kMaxTensorRank = 64;

class Object {
 public:
  explicit Object(NodeKind kind) : kind_(kind) {}
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;
  virtual ~Object() = default;

  NodeKind kind() const { return kind_; }

  // Lists every field of the node, in a fixed order, to `v`. Fields that introduce a variable
  // (a loop variable, a let, a parameter) are reported with VisitDef so that structural equality
  // can map bound variables instead of comparing them by identity.
  virtual void VisitFields(FieldVisitor& v) const = 0;

  // Whether more than one handle holds this node: only such a node can be met twice in a walk
  // (a DAG's shared sub-expression), so only such nodes are worth memoizing.
  bool HasSeveralOwners() const { return ref_count_.load(std::memory_order_relaxed) > 1; }

 private:
  template <typename T>
  friend class Ref;
  const NodeKind kind_;
  mutable std::atomic<int32_t> ref_count_{0};
};

// An owning, nullable handle to an immutable node.
template <typename T>
class Ref {
 public:
  Ref() = default;
  Ref(std::nullptr_t) {}  // NOLINT: allow `return nullptr;`
  explicit Ref(const T* node) : node_(node) { IncRef(); }
  Ref(const Ref& other) : node_(other.node_) { IncRef(); }
  Ref(Ref&& other) noexcept : node_(other.node_) { other.node_ = nullptr; }
  template <typename U, typename = std::enable_if_t<std::is_base_of_v<T, U>>>
  Ref(const Ref<U>& other) : node_(other.get()) {  // NOLINT: upcasts are implicit
    IncRef();
  }
  Ref& operator=(Ref other) noexcept {
    std::swap(node_, other.node_);
    return *this;
  }
  ~Ref() { DecRef(); }

  const T* get() const { return node_; }
  const T* operator->() const { return node_; }
  const T& operator*() const { return *node_; }
  bool defined() const { return node_ != nullptr; }
  explicit operator bool() const { return node_ != nullptr; }

  // Downcast by kind: null if the node is not a U.
  template <typename U>
  const U* as() const {
    return node_ != nullptr && U::Classof(node_->kind()) ? static_cast<const U*>(node_) : nullptr;
  }
  template <typename U>
  Ref<U> as_ref() const {
    return Ref<U>(as<U>());
  }

  // Identity, not structure: use StructuralEqual for the latter.
  bool same_as(const Ref<Object>& other) const { return node_ == other.get(); }
  friend bool operator==(const Ref& a, const Ref& b) { return a.node_ == b.node_; }
  friend bool operator!=(const Ref& a, const Ref& b) { return a.node_ != b.node_; }

 private:
  void IncRef() {
    if (node_ != nullptr) node_->ref_count_.fetch_add(1, std::memory_order_relaxed);
  }
  void DecRef() {
    if (node_ != nullptr && node_->ref_count_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      DeleteNode(node_);
    }
  }
  const T* node_ = nullptr;
};

using ObjectRef = Ref<Object>;

// Builds a node. Nodes are created mutable, filled in, then frozen behind a Ref.
template <typename T, typename... Args>
Ref<T> Make(Args&&... args) {
  return Ref<T>(new T(std::forward<Args>(args)...));
}

// Node attributes (function attrs, loop annotations, block annotations): a key-sorted list of
// (key, value) where values are IR nodes (IntImm, FloatImm, StringImm, Array, ...).
using Attrs = std::vector<std::pair<std::string, ObjectRef>>;

// A generic immutable array of nodes, for attribute values.
class ArrayNode : public Object {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kArray; }
  explicit ArrayNode(std::vector<ObjectRef> items)
      : Object(NodeKind::kArray), items(std::move(items)) {}
  void VisitFields(FieldVisitor& v) const override;
  std::vector<ObjectRef> items;
};

// A dictionary of attributes as an attribute value: TVM's nested dicts, such as
// R.func_attr({"tir_var_upper_bound": {"n": 2048}}).
class DictAttrNode : public Object {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kDictAttr; }
  explicit DictAttrNode(Attrs entries);
  void VisitFields(FieldVisitor& v) const override;
  Attrs entries;  // key-sorted
};

// The receiver of VisitFields. The implementations (equality, hashing, printing) see the fields
// as a flat list of type-erased `Field`s.
class FieldVisitor {
 public:
  enum class Type { kObject, kObjectList, kInt, kDouble, kBool, kString, kDataType, kAttrs };
  struct Field {
    const char* name = "";
    Type type = Type::kObject;
    bool defines = false;  // the field binds the variable(s) it holds
    const Object* object = nullptr;
    std::vector<const Object*> objects;
    int64_t int_value = 0;
    double double_value = 0;
    const std::string* string_value = nullptr;
    DataType dtype;
    const Attrs* attrs = nullptr;
  };

  void Visit(const char* name, const Object* node) { Push(name, Type::kObject)->object = node; }
  template <typename T>
  void Visit(const char* name, const Ref<T>& node) {
    Visit(name, static_cast<const Object*>(node.get()));
  }
  template <typename T>
  void Visit(const char* name, const std::vector<Ref<T>>& nodes) {
    Field* f = Push(name, Type::kObjectList);
    f->objects.reserve(nodes.size());
    for (const Ref<T>& n : nodes) f->objects.push_back(n.get());
  }
  template <typename T>
  void VisitDef(const char* name, const Ref<T>& node) {
    Visit(name, node);
    fields_.back().defines = true;
  }
  template <typename T>
  void VisitDef(const char* name, const std::vector<Ref<T>>& nodes) {
    Visit(name, nodes);
    fields_.back().defines = true;
  }
  void Visit(const char* name, int64_t value) { Push(name, Type::kInt)->int_value = value; }
  void Visit(const char* name, int value) { Visit(name, static_cast<int64_t>(value)); }
  void Visit(const char* name, bool value) { Push(name, Type::kBool)->int_value = value; }
  void Visit(const char* name, double value) { Push(name, Type::kDouble)->double_value = value; }
  void Visit(const char* name, const std::string& value) {
    Push(name, Type::kString)->string_value = &value;
  }
  void Visit(const char* name, DataType value) { Push(name, Type::kDataType)->dtype = value; }
  void Visit(const char* name, const Attrs& value) { Push(name, Type::kAttrs)->attrs = &value; }

  const std::vector<Field>& fields() const { return fields_; }

 private:
  Field* Push(const char* name, Type type) {
    fields_.emplace_back();
    fields_.back().name = name;
    fields_.back().type = type;
    return &fields_.back();
  }
  std::vector<Field> fields_;
};

// The fields of `node`, in order.
std::vector<FieldVisitor::Field> FieldsOf(const Object& node);

// Looks up an attribute by key; null when absent.
ObjectRef GetAttr(const Attrs& attrs, absl::string_view key);
// Returns `attrs` with `key` set to `value`, keeping keys sorted.
Attrs WithAttr(Attrs attrs, std::string key, ObjectRef value);
// Attributes sorted by key (the last of duplicate keys wins): the one order printing, hashing,
// equality and the wire format all see, however a producer listed them.
Attrs CanonicalAttrs(Attrs attrs);

}  // namespace kiln::ir

#endif  // KILN_COMPILER_IR_NODE_H_
