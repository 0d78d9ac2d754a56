#include "compiler/ir/tir_stmt.h"

namespace kiln::ir {

void RangeNode::VisitFields(FieldVisitor& v) const {
  v.Visit("min", min);
  v.Visit("extent", extent);
}
Range MakeRange(PrimExpr min, PrimExpr extent) {
  return Make<RangeNode>(std::move(min), std::move(extent));
}

// The data variable and the shape variables of a buffer are defined where the buffer first
// appears (a parameter's buffer_map entry, alloc_buffers, match_buffers).
void BufferNode::VisitFields(FieldVisitor& v) const {
  v.VisitDef("data", data);
  v.Visit("dtype", dtype);
  v.Visit("shape", shape);
  v.Visit("strides", strides);
  v.Visit("elem_offset", elem_offset);
  v.Visit("scope", scope);
  v.Visit("data_alignment", data_alignment);
}

Buffer MakeBuffer(std::string name, DataType dtype, std::vector<PrimExpr> shape,
                  std::string scope) {
  auto* node = new BufferNode();
  node->data = MakeVar(name + "_data", DataType::Handle());
  node->name = std::move(name);
  node->dtype = dtype;
  node->shape = std::move(shape);
  node->elem_offset = IntImm(DataType::Int(64), 0);
  node->scope = std::move(scope);
  return Buffer(node);
}

Buffer WithShape(const Buffer& buffer, std::vector<PrimExpr> shape) {
  auto* node = new BufferNode();
  node->name = buffer->name;
  node->data = buffer->data;
  node->dtype = buffer->dtype;
  node->shape = std::move(shape);
  node->elem_offset = buffer->elem_offset;
  node->scope = buffer->scope;
  node->data_alignment = buffer->data_alignment;
  return Buffer(node);
}

const char* IterKindName(IterKind kind) {
  switch (kind) {
    case IterKind::kSpatial:
      return "spatial";
    case IterKind::kReduce:
      return "reduce";
    case IterKind::kOpaque:
      return "opaque";
    case IterKind::kThreadIndex:
      return "thread";
  }
  return "?";
}

void IterVarNode::VisitFields(FieldVisitor& v) const {
  v.Visit("dom", dom);
  v.VisitDef("var", var);
  v.Visit("iter_kind", static_cast<int>(iter_kind));
  v.Visit("thread_tag", thread_tag);
}

void BufferRegionNode::VisitFields(FieldVisitor& v) const {
  v.Visit("buffer", buffer);
  v.Visit("region", region);
}

BufferRegion FullRegion(const Buffer& buffer) {
  std::vector<Range> region;
  for (const PrimExpr& dim : buffer->shape) region.push_back(MakeRange(IntImm(dim->dtype, 0), dim));
  return Make<BufferRegionNode>(buffer, std::move(region));
}

void MatchBufferRegionNode::VisitFields(FieldVisitor& v) const {
  v.Visit("source", source);
  v.VisitDef("buffer", buffer);
}

void LetStmtNode::VisitFields(FieldVisitor& v) const {
  v.Visit("value", value);
  v.VisitDef("var", var);
  v.Visit("body", body);
}
void AttrStmtNode::VisitFields(FieldVisitor& v) const {
  v.Visit("node", node);
  v.Visit("key", key);
  v.Visit("value", value);
  v.Visit("body", body);
}
void AssertStmtNode::VisitFields(FieldVisitor& v) const {
  v.Visit("condition", condition);
  v.Visit("message", message);
  v.Visit("body", body);
}
void BufferStoreNode::VisitFields(FieldVisitor& v) const {
  v.Visit("buffer", buffer);
  v.Visit("value", value);
  v.Visit("indices", indices);
}
void AllocateNode::VisitFields(FieldVisitor& v) const {
  v.VisitDef("buffer", buffer);
  v.Visit("body", body);
}

const char* ForKindName(ForKind kind) {
  switch (kind) {
    case ForKind::kSerial:
      return "serial";
    case ForKind::kParallel:
      return "parallel";
    case ForKind::kVectorized:
      return "vectorized";
    case ForKind::kUnrolled:
      return "unroll";
    case ForKind::kThreadBinding:
      return "thread_binding";
  }
  return "?";
}

void ForNode::VisitFields(FieldVisitor& v) const {
  v.Visit("min", min);
  v.Visit("extent", extent);
  v.VisitDef("loop_var", loop_var);
  v.Visit("for_kind", static_cast<int>(for_kind));
  v.Visit("thread_tag", thread_tag);
  v.Visit("annotations", annotations);
  v.Visit("body", body);
}

Stmt MakeFor(Var loop_var, PrimExpr min, PrimExpr extent, ForKind kind, Stmt body,
             Attrs annotations) {
  auto* node = new ForNode();
  node->loop_var = std::move(loop_var);
  node->min = std::move(min);
  node->extent = std::move(extent);
  node->for_kind = kind;
  node->body = std::move(body);
  node->annotations = std::move(annotations);
  return Stmt(node);
}

void WhileNode::VisitFields(FieldVisitor& v) const {
  v.Visit("condition", condition);
  v.Visit("body", body);
}
void IfThenElseNode::VisitFields(FieldVisitor& v) const {
  v.Visit("condition", condition);
  v.Visit("then_case", then_case);
  v.Visit("else_case", else_case);
}
void SeqStmtNode::VisitFields(FieldVisitor& v) const { v.Visit("seq", seq); }
void EvaluateNode::VisitFields(FieldVisitor& v) const { v.Visit("value", value); }

void BlockNode::VisitFields(FieldVisitor& v) const {
  v.Visit("name", name);
  v.VisitDef("iter_vars", iter_vars);
  v.VisitDef("alloc_buffers", alloc_buffers);
  v.Visit("match_buffers", match_buffers);
  v.Visit("reads", reads);
  v.Visit("writes", writes);
  v.Visit("init", init);
  v.Visit("body", body);
  v.Visit("annotations", annotations);
}

void BlockRealizeNode::VisitFields(FieldVisitor& v) const {
  v.Visit("iter_values", iter_values);
  v.Visit("predicate", predicate);
  v.Visit("block", block);
}

void PrimFuncNode::VisitFields(FieldVisitor& v) const {
  v.VisitDef("params", params);
  std::vector<Buffer> buffers;
  std::vector<Var> keys;
  for (const auto& [param, buffer] : buffer_map) {
    keys.push_back(param);
    buffers.push_back(buffer);
  }
  v.Visit("buffer_map_params", keys);
  v.VisitDef("buffer_map_buffers", buffers);
  v.Visit("attrs", attrs);
  v.Visit("body", body);
}

Buffer PrimFuncNode::BufferOf(const Var& param) const {
  for (const auto& [p, buffer] : buffer_map) {
    if (p == param) return buffer;
  }
  return nullptr;
}

Stmt Seq(std::vector<Stmt> stmts) {
  if (stmts.size() == 1) return stmts[0];
  return Make<SeqStmtNode>(std::move(stmts));
}

BlockNode* CopyBlock(const BlockNode& b) {
  auto* copy = new BlockNode();
  copy->name = b.name;
  copy->iter_vars = b.iter_vars;
  copy->reads = b.reads;
  copy->writes = b.writes;
  copy->alloc_buffers = b.alloc_buffers;
  copy->match_buffers = b.match_buffers;
  copy->init = b.init;
  copy->body = b.body;
  copy->annotations = b.annotations;
  return copy;
}

PrimFunc WithBody(const PrimFunc& f, Stmt body) {
  if (body == f->body) return f;
  auto* node = new PrimFuncNode();
  node->params = f->params;
  node->buffer_map = f->buffer_map;
  node->attrs = f->attrs;
  node->body = std::move(body);
  return PrimFunc(node);
}

PrimFunc WithFuncAttr(const PrimFunc& f, std::string key, ObjectRef value) {
  auto* node = new PrimFuncNode();
  node->params = f->params;
  node->buffer_map = f->buffer_map;
  node->attrs = WithAttr(f->attrs, std::move(key), std::move(value));
  node->body = f->body;
  return PrimFunc(node);
}

}  // namespace kiln::ir
