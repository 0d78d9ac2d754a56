#include "compiler/wire/ir_proto.h"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "proto/kiln/v1/ir.pb.h"

namespace kiln::wire {
namespace {

using ir::Attrs;
using ir::DataType;
using ir::FieldVisitor;
using ir::Make;
using ir::NodeKind;
using ir::Object;
using ir::ObjectRef;
using ir::PrimExpr;
using ir::Ref;
using ir::Stmt;

// ---- Encoding ----------------------------------------------------------------------------------

// The name hint a node carries outside its structural fields.
const std::string* NameOf(const Object& node) {
  if (ir::VarNode::Classof(node.kind())) return &static_cast<const ir::VarNode&>(node).name;
  if (ir::relax::VarNode::Classof(node.kind())) {
    return &static_cast<const ir::relax::VarNode&>(node).name_hint;
  }
  if (ir::BufferNode::Classof(node.kind())) return &static_cast<const ir::BufferNode&>(node).name;
  return nullptr;
}

class Encoder {
 public:
  explicit Encoder(v1::IRModuleProto* out) : out_(out) {}

  // Writes `root` and everything it reaches, children first, without recursion.
  uint64_t Encode(const Object* root) {
    std::vector<std::pair<const Object*, bool>> stack = {{root, false}};
    while (!stack.empty()) {
      auto [node, expanded] = stack.back();
      stack.pop_back();
      if (node == nullptr || index_.count(node) > 0) continue;
      std::vector<FieldVisitor::Field> fields = ir::FieldsOf(*node);
      if (expanded) {
        Write(*node, fields);
        continue;
      }
      stack.push_back({node, true});
      for (const FieldVisitor::Field& f : fields) {
        for (const Object* child : Children(f)) {
          if (child != nullptr && index_.count(child) == 0) stack.push_back({child, false});
        }
      }
    }
    return Ref(root);
  }

 private:
  static std::vector<const Object*> Children(const FieldVisitor::Field& f) {
    switch (f.type) {
      case FieldVisitor::Type::kObject:
        return {f.object};
      case FieldVisitor::Type::kObjectList:
        return f.objects;
      case FieldVisitor::Type::kAttrs: {
        std::vector<const Object*> out;
        for (const auto& [key, value] : *f.attrs) out.push_back(value.get());
        return out;
      }
      default:
        return {};
    }
  }

  uint64_t Ref(const Object* node) const { return node == nullptr ? 0 : index_.at(node) + 1; }

  void Write(const Object& node, const std::vector<FieldVisitor::Field>& fields) {
    v1::IRNodeProto* proto = out_->add_nodes();
    proto->set_kind(ir::NodeKindName(node.kind()));
    if (const std::string* name = NameOf(node)) proto->set_name(*name);
    for (const FieldVisitor::Field& f : fields) {
      v1::IRFieldProto* field = proto->add_fields();
      switch (f.type) {
        case FieldVisitor::Type::kObject:
          field->set_ref(Ref(f.object));
          break;
        case FieldVisitor::Type::kObjectList: {
          v1::IRRefList* refs = field->mutable_refs();
          for (const Object* o : f.objects) refs->add_refs(Ref(o));
          break;
        }
        case FieldVisitor::Type::kInt:
          field->set_int_value(f.int_value);
          break;
        case FieldVisitor::Type::kDouble:
          field->set_float_value(f.double_value);
          break;
        case FieldVisitor::Type::kBool:
          field->set_bool_value(f.int_value != 0);
          break;
        case FieldVisitor::Type::kString:
          field->set_bytes_value(*f.string_value);
          break;
        case FieldVisitor::Type::kDataType: {
          v1::IRDataType* dtype = field->mutable_dtype();
          dtype->set_code(static_cast<uint32_t>(f.dtype.code()));
          dtype->set_bits(f.dtype.bits());
          dtype->set_lanes(f.dtype.lanes());
          break;
        }
        case FieldVisitor::Type::kAttrs: {
          v1::IRAttrs* attrs = field->mutable_attrs();
          for (const auto& [key, value] : *f.attrs) {
            v1::IRAttr* attr = attrs->add_entries();
            attr->set_key(key);
            attr->set_value(Ref(value.get()));
          }
          break;
        }
      }
    }
    index_.emplace(&node, static_cast<uint64_t>(out_->nodes_size() - 1));
  }

  v1::IRModuleProto* out_;
  std::unordered_map<const Object*, uint64_t> index_;
};

// ---- Decoding ----------------------------------------------------------------------------------

const std::unordered_map<std::string, NodeKind>& KindsByName() {
  static const auto* kinds = [] {
    auto* map = new std::unordered_map<std::string, NodeKind>();
    for (int k = 0; k < static_cast<int>(NodeKind::kNumKinds); ++k) {
      map->emplace(ir::NodeKindName(static_cast<NodeKind>(k)), static_cast<NodeKind>(k));
    }
    return map;
  }();
  return *kinds;
}

// A node table may share a node among many users, and so describe in a few dozen nodes a tree
// that has more nodes than atoms in the universe. Kiln's IR is trees to its walks (the printer,
// the TIR passes, code generation visit every use): a module is refused when a node stands for
// more than this many nodes once its shared sub-expressions are written out. Variables, buffers,
// functions and operators are shared by identity, as in the text form: they count once.
constexpr uint64_t kMaxExpandedNodes = uint64_t{1} << 24;

struct Extent {
  int depth = 1;          // nesting: 1 + the deepest node it refers to
  uint64_t expanded = 1;  // nodes when written out; kMaxExpandedNodes + 1 for "too many"
};

bool SharedByIdentity(NodeKind kind) {
  switch (kind) {
    case NodeKind::kVar:
    case NodeKind::kBuffer:
    case NodeKind::kRelaxVar:
    case NodeKind::kDataflowVar:
    case NodeKind::kGlobalVar:
    case NodeKind::kOp:
      return true;
    default:
      return false;
  }
}

// Reads one node's fields in order, checking types; the first problem is kept in `error`, after
// which every read returns a default.
class FieldReader {
 public:
  FieldReader(const v1::IRNodeProto& node, size_t index, const std::vector<ObjectRef>& decoded,
              const std::vector<Extent>& extents)
      : node_(node), index_(index), decoded_(decoded), extents_(extents) {}

  // The deepest and the sum of the expanded sizes of the nodes the fields read so far refer to.
  int child_depth() const { return child_depth_; }
  uint64_t child_expanded() const { return child_expanded_; }

  bool AtEnd() const { return next_ >= node_.fields_size(); }
  bool ok() const { return error_.empty(); }

  template <typename T>
  Ref<T> Obj(const char* what, bool optional = false) {
    const v1::IRFieldProto* f = Next(v1::IRFieldProto::kRef, what);
    return f == nullptr ? Ref<T>() : Resolve<T>(f->ref(), what, optional);
  }
  template <typename T>
  std::vector<Ref<T>> Objs(const char* what) {
    std::vector<Ref<T>> out;
    const v1::IRFieldProto* f = Next(v1::IRFieldProto::kRefs, what);
    if (f == nullptr) return out;
    for (uint64_t ref : f->refs().refs()) {
      out.push_back(Resolve<T>(ref, what, false));
      if (!ok()) break;
    }
    return out;
  }
  int64_t Int(const char* what) {
    const v1::IRFieldProto* f = Next(v1::IRFieldProto::kIntValue, what);
    return f == nullptr ? 0 : f->int_value();
  }
  int64_t IntIn(const char* what, int64_t min, int64_t max) {
    int64_t v = Int(what);
    if (ok() && (v < min || v > max)) Fail(absl::StrCat(what, " ", v, " is out of range"));
    return v;
  }
  double Double(const char* what) {
    const v1::IRFieldProto* f = Next(v1::IRFieldProto::kFloatValue, what);
    return f == nullptr ? 0 : f->float_value();
  }
  bool Bool(const char* what) {
    const v1::IRFieldProto* f = Next(v1::IRFieldProto::kBoolValue, what);
    return f != nullptr && f->bool_value();
  }
  std::string Str(const char* what) {
    const v1::IRFieldProto* f = Next(v1::IRFieldProto::kBytesValue, what);
    return f == nullptr ? std::string() : f->bytes_value();
  }
  DataType DType(const char* what) {
    const v1::IRFieldProto* f = Next(v1::IRFieldProto::kDtype, what);
    if (f == nullptr) return DataType();
    const v1::IRDataType& d = f->dtype();
    if (d.code() > static_cast<uint32_t>(DataType::Code::kBFloat) || d.bits() > 255 ||
        d.lanes() > 65535) {
      Fail(absl::StrCat(what, ": invalid dtype (code ", d.code(), ", bits ", d.bits(), ", lanes ",
                        d.lanes(), ")"));
      return DataType();
    }
    return DataType(static_cast<DataType::Code>(d.code()), static_cast<int>(d.bits()),
                    static_cast<int>(d.lanes()));
  }
  Attrs AttrsField(const char* what) {
    Attrs out;
    const v1::IRFieldProto* f = Next(v1::IRFieldProto::kAttrs, what);
    if (f == nullptr) return out;
    for (const v1::IRAttr& a : f->attrs().entries()) {
      ObjectRef value = Resolve<Object>(a.value(), what, false);
      if (!ok()) break;
      out = ir::WithAttr(std::move(out), a.key(), value);
    }
    return out;
  }

  void Fail(const std::string& message) {
    if (error_.empty()) error_ = message;
  }
  absl::Status Finish() {
    if (ok() && !AtEnd()) {
      Fail(absl::StrCat(node_.fields_size() - next_, " unexpected extra fields"));
    }
    if (ok()) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("IR proto node ", index_, " (", node_.kind(), "): ", error_));
  }

 private:
  const v1::IRFieldProto* Next(v1::IRFieldProto::ValueCase expected, const char* what) {
    if (!ok()) return nullptr;
    if (AtEnd()) {
      Fail(absl::StrCat("missing field '", what, "'"));
      return nullptr;
    }
    const v1::IRFieldProto& f = node_.fields(next_++);
    if (f.value_case() != expected) {
      Fail(absl::StrCat("field '", what, "' has the wrong type"));
      return nullptr;
    }
    return &f;
  }

  template <typename T>
  Ref<T> Resolve(uint64_t ref, const char* what, bool optional) {
    if (ref == 0) {
      if (!optional) Fail(absl::StrCat("field '", what, "' is required"));
      return Ref<T>();
    }
    if (ref > index_) {  // only earlier nodes
      Fail(absl::StrCat("field '", what, "' refers to node ", ref - 1, ", which is not earlier"));
      return Ref<T>();
    }
    const ObjectRef& node = decoded_[ref - 1];
    const Extent& extent = extents_[ref - 1];
    child_depth_ = std::max(child_depth_, extent.depth);
    child_expanded_ = std::min(child_expanded_ + extent.expanded, kMaxExpandedNodes + 1);
    if constexpr (std::is_same_v<T, Object>) {
      return node;
    } else {
      if (!node.as<T>()) {
        Fail(absl::StrCat("field '", what, "' refers to a ", ir::NodeKindName(node->kind()),
                          " (node ", ref - 1, "), which is not allowed there"));
        return Ref<T>();
      }
      return node.as_ref<T>();
    }
  }

  const v1::IRNodeProto& node_;
  size_t index_;
  const std::vector<ObjectRef>& decoded_;
  const std::vector<Extent>& extents_;
  int next_ = 0;
  std::string error_;
  int child_depth_ = 0;
  uint64_t child_expanded_ = 0;
};

using ir::BlockNode;
using ir::Buffer;
using ir::PrimExprNode;
using ir::StmtNode;
namespace relax = ir::relax;

ObjectRef DecodeTir(NodeKind kind, const std::string& name, FieldReader& r) {
  switch (kind) {
    case NodeKind::kIntImm: {
      DataType dtype = r.DType("dtype");
      int64_t value = r.Int("value");
      if (r.ok() && !dtype.is_integral()) r.Fail("an IntImm must have an integer dtype");
      return Make<ir::IntImmNode>(dtype, value);
    }
    case NodeKind::kFloatImm: {
      DataType dtype = r.DType("dtype");
      double value = r.Double("value");
      if (r.ok() && !dtype.is_float()) r.Fail("a FloatImm must have a float dtype");
      return Make<ir::FloatImmNode>(dtype, value);
    }
    case NodeKind::kStringImm:
      return Make<ir::StringImmNode>(r.Str("value"));
    case NodeKind::kVar: {
      DataType dtype = r.DType("dtype");
      bool is_size_var = r.Bool("is_size_var");
      return Make<ir::VarNode>(name, dtype, is_size_var);
    }
    case NodeKind::kCast: {
      DataType dtype = r.DType("dtype");
      PrimExpr value = r.Obj<PrimExprNode>("value");
      return Make<ir::CastNode>(dtype, value);
    }
    case NodeKind::kAdd:
    case NodeKind::kSub:
    case NodeKind::kMul:
    case NodeKind::kDiv:
    case NodeKind::kMod:
    case NodeKind::kFloorDiv:
    case NodeKind::kFloorMod:
    case NodeKind::kMin:
    case NodeKind::kMax:
    case NodeKind::kEQ:
    case NodeKind::kNE:
    case NodeKind::kLT:
    case NodeKind::kLE:
    case NodeKind::kGT:
    case NodeKind::kGE:
    case NodeKind::kAnd:
    case NodeKind::kOr: {
      DataType dtype = r.DType("dtype");
      PrimExpr a = r.Obj<PrimExprNode>("a");
      PrimExpr b = r.Obj<PrimExprNode>("b");
      return Make<ir::BinaryNode>(kind, dtype, a, b);
    }
    case NodeKind::kNot: {
      PrimExpr a = r.Obj<PrimExprNode>("a");
      return r.ok() ? ObjectRef(Make<ir::NotNode>(a)) : ObjectRef();
    }
    case NodeKind::kSelect: {
      PrimExpr c = r.Obj<PrimExprNode>("condition");
      PrimExpr t = r.Obj<PrimExprNode>("true_value");
      PrimExpr f = r.Obj<PrimExprNode>("false_value");
      return r.ok() ? ObjectRef(Make<ir::SelectNode>(c, t, f)) : ObjectRef();
    }
    case NodeKind::kBufferLoad: {
      DataType dtype = r.DType("dtype");
      Buffer buffer = r.Obj<ir::BufferNode>("buffer");
      std::vector<PrimExpr> indices = r.Objs<PrimExprNode>("indices");
      return Make<ir::BufferLoadNode>(dtype, buffer, indices);
    }
    case NodeKind::kRamp: {
      PrimExpr base = r.Obj<PrimExprNode>("base");
      PrimExpr stride = r.Obj<PrimExprNode>("stride");
      int lanes = static_cast<int>(r.IntIn("lanes", 1, 65535));
      return r.ok() ? ObjectRef(Make<ir::RampNode>(base, stride, lanes)) : ObjectRef();
    }
    case NodeKind::kBroadcast: {
      PrimExpr value = r.Obj<PrimExprNode>("value");
      int lanes = static_cast<int>(r.IntIn("lanes", 1, 65535));
      return r.ok() ? ObjectRef(Make<ir::BroadcastNode>(value, lanes)) : ObjectRef();
    }
    case NodeKind::kLet: {
      PrimExpr value = r.Obj<PrimExprNode>("value");
      ir::Var var = r.Obj<ir::VarNode>("var");
      PrimExpr body = r.Obj<PrimExprNode>("body");
      return r.ok() ? ObjectRef(Make<ir::LetNode>(var, value, body)) : ObjectRef();
    }
    case NodeKind::kCall: {
      DataType dtype = r.DType("dtype");
      std::string op = r.Str("op");
      std::vector<PrimExpr> args = r.Objs<PrimExprNode>("args");
      return Make<ir::CallNode>(dtype, op, args);
    }
    case NodeKind::kLetStmt: {
      PrimExpr value = r.Obj<PrimExprNode>("value");
      ir::Var var = r.Obj<ir::VarNode>("var");
      Stmt body = r.Obj<StmtNode>("body");
      return Make<ir::LetStmtNode>(var, value, body);
    }
    case NodeKind::kAttrStmt: {
      ObjectRef node = r.Obj<Object>("node", /*optional=*/true);
      std::string key = r.Str("key");
      PrimExpr value = r.Obj<PrimExprNode>("value");
      Stmt body = r.Obj<StmtNode>("body");
      return Make<ir::AttrStmtNode>(node, key, value, body);
    }
    case NodeKind::kAssertStmt: {
      PrimExpr condition = r.Obj<PrimExprNode>("condition");
      std::string message = r.Str("message");
      Stmt body = r.Obj<StmtNode>("body");
      return Make<ir::AssertStmtNode>(condition, message, body);
    }
    case NodeKind::kBufferStore: {
      Buffer buffer = r.Obj<ir::BufferNode>("buffer");
      PrimExpr value = r.Obj<PrimExprNode>("value");
      std::vector<PrimExpr> indices = r.Objs<PrimExprNode>("indices");
      return Make<ir::BufferStoreNode>(buffer, value, indices);
    }
    case NodeKind::kAllocate: {
      Buffer buffer = r.Obj<ir::BufferNode>("buffer");
      Stmt body = r.Obj<StmtNode>("body");
      return Make<ir::AllocateNode>(buffer, body);
    }
    case NodeKind::kFor: {
      auto* f = new ir::ForNode();
      Stmt owner(f);  // owns `f` whatever happens next
      f->min = r.Obj<PrimExprNode>("min");
      f->extent = r.Obj<PrimExprNode>("extent");
      f->loop_var = r.Obj<ir::VarNode>("loop_var");
      f->for_kind = static_cast<ir::ForKind>(r.IntIn("for_kind", 0, 4));
      f->thread_tag = r.Str("thread_tag");
      f->annotations = r.AttrsField("annotations");
      f->body = r.Obj<StmtNode>("body");
      return owner;
    }
    case NodeKind::kWhile: {
      PrimExpr condition = r.Obj<PrimExprNode>("condition");
      Stmt body = r.Obj<StmtNode>("body");
      return Make<ir::WhileNode>(condition, body);
    }
    case NodeKind::kIfThenElse: {
      PrimExpr condition = r.Obj<PrimExprNode>("condition");
      Stmt then_case = r.Obj<StmtNode>("then_case");
      Stmt else_case = r.Obj<StmtNode>("else_case", /*optional=*/true);
      return Make<ir::IfThenElseNode>(condition, then_case, else_case);
    }
    case NodeKind::kSeqStmt:
      return Make<ir::SeqStmtNode>(r.Objs<StmtNode>("seq"));
    case NodeKind::kEvaluate:
      return Make<ir::EvaluateNode>(r.Obj<PrimExprNode>("value"));
    case NodeKind::kBlock: {
      auto* b = new BlockNode();
      Stmt owner(b);
      b->name = r.Str("name");
      b->iter_vars = r.Objs<ir::IterVarNode>("iter_vars");
      b->alloc_buffers = r.Objs<ir::BufferNode>("alloc_buffers");
      b->match_buffers = r.Objs<ir::MatchBufferRegionNode>("match_buffers");
      b->reads = r.Objs<ir::BufferRegionNode>("reads");
      b->writes = r.Objs<ir::BufferRegionNode>("writes");
      b->init = r.Obj<StmtNode>("init", /*optional=*/true);
      b->body = r.Obj<StmtNode>("body");
      b->annotations = r.AttrsField("annotations");
      return owner;
    }
    case NodeKind::kBlockRealize: {
      std::vector<PrimExpr> values = r.Objs<PrimExprNode>("iter_values");
      PrimExpr predicate = r.Obj<PrimExprNode>("predicate");
      ir::Block block = r.Obj<BlockNode>("block");
      if (r.ok() && values.size() != block->iter_vars.size()) {
        r.Fail("the number of iter_values differs from the block's iter_vars");
      }
      return Make<ir::BlockRealizeNode>(values, predicate, block);
    }
    case NodeKind::kRange: {
      PrimExpr min = r.Obj<PrimExprNode>("min");
      PrimExpr extent = r.Obj<PrimExprNode>("extent");
      return Make<ir::RangeNode>(min, extent);
    }
    case NodeKind::kBuffer: {
      auto* b = new ir::BufferNode();
      Buffer owner(b);
      b->name = name;
      b->data = r.Obj<ir::VarNode>("data");
      b->dtype = r.DType("dtype");
      b->shape = r.Objs<PrimExprNode>("shape");
      b->strides = r.Objs<PrimExprNode>("strides");
      b->elem_offset = r.Obj<PrimExprNode>("elem_offset", /*optional=*/true);
      b->scope = r.Str("scope");
      b->data_alignment = r.IntIn("data_alignment", 1, 1 << 20);
      return owner;
    }
    case NodeKind::kIterVar: {
      ir::Range dom = r.Obj<ir::RangeNode>("dom");
      ir::Var var = r.Obj<ir::VarNode>("var");
      auto iter_kind = static_cast<ir::IterKind>(r.IntIn("iter_kind", 0, 3));
      std::string tag = r.Str("thread_tag");
      return Make<ir::IterVarNode>(var, dom, iter_kind, tag);
    }
    case NodeKind::kBufferRegion: {
      Buffer buffer = r.Obj<ir::BufferNode>("buffer");
      std::vector<ir::Range> region = r.Objs<ir::RangeNode>("region");
      return Make<ir::BufferRegionNode>(buffer, region);
    }
    case NodeKind::kMatchBufferRegion: {
      ir::BufferRegion source = r.Obj<ir::BufferRegionNode>("source");
      Buffer buffer = r.Obj<ir::BufferNode>("buffer");
      return Make<ir::MatchBufferRegionNode>(buffer, source);
    }
    case NodeKind::kPrimFunc: {
      auto* f = new ir::PrimFuncNode();
      ir::PrimFunc owner(f);
      f->params = r.Objs<ir::VarNode>("params");
      std::vector<ir::Var> keys = r.Objs<ir::VarNode>("buffer_map_params");
      std::vector<Buffer> buffers = r.Objs<ir::BufferNode>("buffer_map_buffers");
      if (r.ok() && keys.size() != buffers.size()) r.Fail("buffer_map keys and buffers differ");
      for (size_t i = 0; i < keys.size() && i < buffers.size(); ++i) {
        f->buffer_map.emplace_back(keys[i], buffers[i]);
      }
      f->attrs = r.AttrsField("attrs");
      f->body = r.Obj<StmtNode>("body");
      return owner;
    }
    default:
      return nullptr;
  }
}

// Checks a constant's shape and byte count; fills `shape`.
void DecodeConstantShape(FieldReader& r, DataType dtype, std::vector<int64_t>* shape,
                         const std::string& bytes) {
  if (!r.ok()) return;
  if (dtype.is_void() || dtype.lanes() != 1) {
    r.Fail("a Constant needs a scalar dtype");
    return;
  }
  uint64_t count = 1;
  for (int64_t d : *shape) {
    if (d < 0 || (d > 0 && count > std::numeric_limits<uint64_t>::max() / 64 / d)) {
      r.Fail("a Constant dimension is negative or too large");
      return;
    }
    count *= static_cast<uint64_t>(d);
  }
  if (count * dtype.bytes() != bytes.size()) {
    r.Fail(absl::StrCat("a Constant of ", count, " ", dtype.ToString(), " elements needs ",
                        count * dtype.bytes(), " bytes, got ", bytes.size()));
  }
}

ObjectRef DecodeRelax(NodeKind kind, const std::string& name, FieldReader& r) {
  using relax::StructInfo;
  using relax::StructInfoNode;
  switch (kind) {
    case NodeKind::kObjectStructInfo:
      return relax::ObjectSInfo();
    case NodeKind::kPrimStructInfo: {
      DataType dtype = r.DType("dtype");
      PrimExpr value = r.Obj<PrimExprNode>("value", /*optional=*/true);
      return relax::PrimSInfo(dtype, value);
    }
    case NodeKind::kShapeStructInfo: {
      int ndim = static_cast<int>(r.IntIn("ndim", -1, 1 << 16));
      std::optional<std::vector<PrimExpr>> values;
      if (r.Bool("has_values")) values = r.Objs<PrimExprNode>("values");
      return Make<relax::ShapeStructInfoNode>(ndim, std::move(values));
    }
    case NodeKind::kTensorStructInfo: {
      relax::Expr shape = r.Obj<relax::ExprNode>("shape", /*optional=*/true);
      DataType dtype = r.DType("dtype");
      int ndim = static_cast<int>(r.IntIn("ndim", -1, 1 << 16));
      return Make<relax::TensorStructInfoNode>(shape, dtype, ndim);
    }
    case NodeKind::kTupleStructInfo:
      return relax::TupleSInfo(r.Objs<StructInfoNode>("fields"));
    case NodeKind::kFuncStructInfo: {
      std::optional<std::vector<StructInfo>> params;
      if (r.Bool("has_params")) params = r.Objs<StructInfoNode>("params");
      StructInfo ret = r.Obj<StructInfoNode>("ret", /*optional=*/true);
      bool purity = r.Bool("purity");
      std::string derive = r.Str("derive_func");
      return Make<relax::FuncStructInfoNode>(std::move(params), ret, purity, derive);
    }
    case NodeKind::kConstant: {
      DataType dtype = r.DType("dtype");
      int64_t ndim = r.IntIn("ndim", 0, 64);
      std::vector<int64_t> shape;
      for (int64_t i = 0; i < ndim && r.ok(); ++i) shape.push_back(r.Int("dim"));
      std::string bytes = r.Str("bytes");
      DecodeConstantShape(r, dtype, &shape, bytes);
      return relax::MakeConstant(dtype, std::move(shape), std::move(bytes));
    }
    case NodeKind::kRelaxVar:
      return relax::MakeVar(name, r.Obj<StructInfoNode>("struct_info", /*optional=*/true));
    case NodeKind::kDataflowVar:
      return relax::MakeDataflowVar(name, r.Obj<StructInfoNode>("struct_info", /*optional=*/true));
    case NodeKind::kGlobalVar:
      return relax::MakeGlobalVar(r.Str("name_hint"));
    case NodeKind::kTuple:
      return relax::MakeTuple(r.Objs<relax::ExprNode>("fields"));
    case NodeKind::kSeqExpr: {
      std::vector<relax::BindingBlock> blocks = r.Objs<relax::BindingBlockNode>("blocks");
      relax::Expr body = r.Obj<relax::ExprNode>("body");
      return relax::MakeSeq(std::move(blocks), body);
    }
    case NodeKind::kPrimValue:
      return Make<relax::PrimValueNode>(r.Obj<PrimExprNode>("value"));
    case NodeKind::kRelaxStringImm:
      return Make<relax::StringImmNode>(r.Str("value"));
    case NodeKind::kDataTypeImm:
      return Make<relax::DataTypeImmNode>(r.DType("value"));
    case NodeKind::kFunction: {
      std::vector<relax::Var> params = r.Objs<relax::VarNode>("params");
      StructInfo ret = r.Obj<StructInfoNode>("ret_struct_info", /*optional=*/true);
      bool is_pure = r.Bool("is_pure");
      Attrs attrs = r.AttrsField("attrs");
      relax::Expr body = r.Obj<relax::ExprNode>("body");
      return relax::MakeFunction(std::move(params), body, ret, is_pure, std::move(attrs));
    }
    case NodeKind::kIf: {
      relax::Expr cond = r.Obj<relax::ExprNode>("cond");
      relax::Expr t = r.Obj<relax::ExprNode>("true_branch");
      relax::Expr f = r.Obj<relax::ExprNode>("false_branch");
      return Make<relax::IfNode>(cond, t, f);
    }
    case NodeKind::kExternFunc:
      return Make<relax::ExternFuncNode>(r.Str("global_symbol"));
    case NodeKind::kRelaxCall: {
      relax::Expr op = r.Obj<relax::ExprNode>("op");
      std::vector<relax::Expr> args = r.Objs<relax::ExprNode>("args");
      Attrs attrs = r.AttrsField("attrs");
      std::vector<StructInfo> sinfo_args = r.Objs<StructInfoNode>("sinfo_args");
      return relax::MakeCall(op, std::move(args), std::move(sinfo_args), std::move(attrs));
    }
    case NodeKind::kShapeExpr:
      return relax::MakeShape(r.Objs<PrimExprNode>("values"));
    case NodeKind::kTupleGetItem: {
      relax::Expr tuple = r.Obj<relax::ExprNode>("tuple");
      int index = static_cast<int>(r.IntIn("index", 0, std::numeric_limits<int32_t>::max()));
      return Make<relax::TupleGetItemNode>(tuple, index);
    }
    case NodeKind::kOp: {
      std::string op_name = r.Str("name");
      if (r.ok() && op_name.empty()) r.Fail("an Op without a name");
      return relax::GetOp(op_name);
    }
    case NodeKind::kVarBinding: {
      relax::Var var = r.Obj<relax::VarNode>("var");
      relax::Expr value = r.Obj<relax::ExprNode>("value");
      return relax::MakeBinding(var, value);
    }
    case NodeKind::kMatchCast: {
      relax::Expr value = r.Obj<relax::ExprNode>("value");
      StructInfo sinfo = r.Obj<StructInfoNode>("struct_info");
      relax::Var var = r.Obj<relax::VarNode>("var", /*optional=*/true);
      return relax::MakeMatchCast(var, value, sinfo);
    }
    case NodeKind::kBindingBlock:
      return relax::MakeBlock(r.Objs<relax::BindingNode>("bindings"));
    case NodeKind::kDataflowBlock:
      return relax::MakeDataflowBlock(r.Objs<relax::BindingNode>("bindings"));
    default:
      return nullptr;
  }
}

absl::StatusOr<ObjectRef> DecodeNode(const v1::IRNodeProto& node, size_t index,
                                     const std::vector<ObjectRef>& decoded,
                                     std::vector<Extent>& extents) {
  auto it = KindsByName().find(node.kind());
  if (it == KindsByName().end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("IR proto node ", index, ": unknown node kind '", node.kind(), "'"));
  }
  NodeKind kind = it->second;
  FieldReader r(node, index, decoded, extents);
  ObjectRef out;
  if (kind == NodeKind::kArray) {
    out = Make<ir::ArrayNode>(r.Objs<Object>("items"));
  } else if (kind == NodeKind::kDictAttr) {
    out = Make<ir::DictAttrNode>(r.AttrsField("entries"));
  } else if (kind == NodeKind::kIRModule) {
    ir::IRModuleBuilder builder;
    Attrs attrs = r.AttrsField("attrs");
    for (const auto& [key, value] : attrs) builder.SetAttr(key, value);
    while (r.ok() && !r.AtEnd()) {
      relax::GlobalVar gv = r.Obj<relax::GlobalVarNode>("global");
      ObjectRef func = r.Obj<Object>("function");
      if (!r.ok()) break;
      absl::Status added = builder.Add(gv, func);
      if (!added.ok()) r.Fail(std::string(added.message()));
    }
    out = builder.Build();
  } else if (kind <= NodeKind::kPrimFunc) {
    out = DecodeTir(kind, node.name(), r);
  } else {
    out = DecodeRelax(kind, node.name(), r);
  }
  absl::Status status = r.Finish();
  if (!status.ok()) return status;
  if (!out) {
    return absl::InvalidArgumentError(
        absl::StrCat("IR proto node ", index, " (", node.kind(), "): cannot be decoded"));
  }
  Extent extent;
  extent.depth = r.child_depth() + 1;
  extent.expanded = SharedByIdentity(kind) ? 1 : r.child_expanded() + 1;
  if (extent.depth > ir::kMaxNestingDepth) {
    return absl::InvalidArgumentError(absl::StrCat("IR proto node ", index, " (", node.kind(),
                                                   "): nested more than ", ir::kMaxNestingDepth,
                                                   " levels deep"));
  }
  if (extent.expanded > kMaxExpandedNodes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "IR proto node ", index, " (", node.kind(), "): stands for more than ", kMaxExpandedNodes,
        " nodes once the sub-expressions it shares are written out"));
  }
  extents.push_back(extent);
  return out;
}

}  // namespace

void ModuleToProto(const ir::IRModule& mod, v1::IRModuleProto* out) {
  out->Clear();
  out->set_schema_version(kIrSchemaVersion);
  if (!mod) return;
  out->set_root(Encoder(out).Encode(mod.get()));
}

absl::StatusOr<ir::IRModule> ModuleFromProto(const v1::IRModuleProto& proto) {
  if (proto.schema_version() != kIrSchemaVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("IR proto schema version ", proto.schema_version(),
                     " is not supported (this build reads ", kIrSchemaVersion, ")"));
  }
  std::vector<ObjectRef> decoded;
  std::vector<Extent> extents;
  decoded.reserve(proto.nodes_size());
  extents.reserve(proto.nodes_size());
  for (int i = 0; i < proto.nodes_size(); ++i) {
    absl::StatusOr<ObjectRef> node = DecodeNode(proto.nodes(i), decoded.size(), decoded, extents);
    if (!node.ok()) return node.status();
    decoded.push_back(*std::move(node));
  }
  if (proto.root() == 0 || proto.root() > decoded.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("IR proto root ", proto.root(), " does not name a node"));
  }
  const ObjectRef& root = decoded[proto.root() - 1];
  if (!root.as<ir::IRModuleNode>()) {
    return absl::InvalidArgumentError(
        absl::StrCat("IR proto root is a ", ir::NodeKindName(root->kind()), ", not an IRModule"));
  }
  return root.as_ref<ir::IRModuleNode>();
}

std::string SerializeModule(const ir::IRModule& mod) {
  v1::IRModuleProto proto;
  ModuleToProto(mod, &proto);
  return proto.SerializeAsString();
}

absl::StatusOr<ir::IRModule> DeserializeModule(absl::string_view bytes) {
  v1::IRModuleProto proto;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return absl::InvalidArgumentError("a serialized IRModuleProto over 2 GiB");
  }
  if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a serialized IRModuleProto (", bytes.size(), " bytes)"));
  }
  return ModuleFromProto(proto);
}

}  // namespace kiln::wire
