// TensorIR statements, buffers, blocks and PrimFuncs (seeds/tensorir_rfc.txt).
#ifndef KILN_COMPILER_IR_TIR_STMT_H_
#define KILN_COMPILER_IR_TIR_STMT_H_

#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/tir_expr.h"

namespace kiln::ir {

// [min, min + extent).
class RangeNode : public Object {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kRange; }
  RangeNode(PrimExpr min, PrimExpr extent)
      : Object(NodeKind::kRange), min(std::move(min)), extent(std::move(extent)) {}
  void VisitFields(FieldVisitor& v) const override;
  PrimExpr min, extent;
};
using Range = Ref<RangeNode>;
Range MakeRange(PrimExpr min, PrimExpr extent);

enum class IterKind : int { kSpatial = 0, kReduce = 1, kOpaque = 2, kThreadIndex = 3 };
const char* IterKindName(IterKind kind);

// A block iteration variable: its domain and role.
class IterVarNode : public Object {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kIterVar; }
  IterVarNode(Var var, Range dom, IterKind iter_kind, std::string thread_tag = "")
      : Object(NodeKind::kIterVar),
        var(std::move(var)),
        dom(std::move(dom)),
        iter_kind(iter_kind),
        thread_tag(std::move(thread_tag)) {}
  void VisitFields(FieldVisitor& v) const override;
  Var var;
  Range dom;
  IterKind iter_kind;
  std::string thread_tag;
};
using IterVar = Ref<IterVarNode>;

class BufferRegionNode : public Object {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kBufferRegion; }
  BufferRegionNode(Buffer buffer, std::vector<Range> region)
      : Object(NodeKind::kBufferRegion), buffer(std::move(buffer)), region(std::move(region)) {}
  void VisitFields(FieldVisitor& v) const override;
  Buffer buffer;
  std::vector<Range> region;
};
using BufferRegion = Ref<BufferRegionNode>;
// The whole of `buffer`.
BufferRegion FullRegion(const Buffer& buffer);

// A buffer declared inside a block as a view of a region of an outer buffer.
class MatchBufferRegionNode : public Object {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kMatchBufferRegion; }
  MatchBufferRegionNode(Buffer buffer, BufferRegion source)
      : Object(NodeKind::kMatchBufferRegion),
        buffer(std::move(buffer)),
        source(std::move(source)) {}
  void VisitFields(FieldVisitor& v) const override;
  Buffer buffer;
  BufferRegion source;
};
using MatchBufferRegion = Ref<MatchBufferRegionNode>;

class StmtNode : public Object {
 public:
  static bool Classof(NodeKind k) {
    return k >= NodeKind::kLetStmt && k <= NodeKind::kBlockRealize;
  }
  using Object::Object;
};
using Stmt = Ref<StmtNode>;

class LetStmtNode : public StmtNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kLetStmt; }
  LetStmtNode(Var var, PrimExpr value, Stmt body)
      : StmtNode(NodeKind::kLetStmt),
        var(std::move(var)),
        value(std::move(value)),
        body(std::move(body)) {}
  void VisitFields(FieldVisitor& v) const override;
  Var var;
  PrimExpr value;
  Stmt body;
};

// A key/value annotation on a statement ("pragma_*", thread extents, ...).
class AttrStmtNode : public StmtNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kAttrStmt; }
  AttrStmtNode(ObjectRef node, std::string key, PrimExpr value, Stmt body)
      : StmtNode(NodeKind::kAttrStmt),
        node(std::move(node)),
        key(std::move(key)),
        value(std::move(value)),
        body(std::move(body)) {}
  void VisitFields(FieldVisitor& v) const override;
  ObjectRef node;
  std::string key;
  PrimExpr value;
  Stmt body;
};

class AssertStmtNode : public StmtNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kAssertStmt; }
  AssertStmtNode(PrimExpr condition, std::string message, Stmt body)
      : StmtNode(NodeKind::kAssertStmt),
        condition(std::move(condition)),
        message(std::move(message)),
        body(std::move(body)) {}
  void VisitFields(FieldVisitor& v) const override;
  PrimExpr condition;
  std::string message;
  Stmt body;
};

class BufferStoreNode : public StmtNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kBufferStore; }
  BufferStoreNode(Buffer buffer, PrimExpr value, std::vector<PrimExpr> indices)
      : StmtNode(NodeKind::kBufferStore),
        buffer(std::move(buffer)),
        value(std::move(value)),
        indices(std::move(indices)) {}
  void VisitFields(FieldVisitor& v) const override;
  Buffer buffer;
  PrimExpr value;
  std::vector<PrimExpr> indices;
};

// Allocates storage for `buffer` (its data var) around `body`.
class AllocateNode : public StmtNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kAllocate; }
  AllocateNode(Buffer buffer, Stmt body)
      : StmtNode(NodeKind::kAllocate), buffer(std::move(buffer)), body(std::move(body)) {}
  void VisitFields(FieldVisitor& v) const override;
  Buffer buffer;
  Stmt body;
};

enum class ForKind : int {
  kSerial = 0,
  kParallel = 1,
  kVectorized = 2,
  kUnrolled = 3,
  kThreadBinding = 4
};
const char* ForKindName(ForKind kind);

class ForNode : public StmtNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kFor; }
  ForNode() : StmtNode(NodeKind::kFor) {}
  void VisitFields(FieldVisitor& v) const override;
  Var loop_var;
  PrimExpr min, extent;
  ForKind for_kind = ForKind::kSerial;
  std::string thread_tag;  // for kThreadBinding: "threadIdx.x", "blockIdx.x", ...
  Stmt body;
  Attrs annotations;
};
Stmt MakeFor(Var loop_var, PrimExpr min, PrimExpr extent, ForKind kind, Stmt body,
             Attrs annotations = {});

class WhileNode : public StmtNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kWhile; }
  WhileNode(PrimExpr condition, Stmt body)
      : StmtNode(NodeKind::kWhile), condition(std::move(condition)), body(std::move(body)) {}
  void VisitFields(FieldVisitor& v) const override;
  PrimExpr condition;
  Stmt body;
};

class IfThenElseNode : public StmtNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kIfThenElse; }
  IfThenElseNode(PrimExpr condition, Stmt then_case, Stmt else_case)
      : StmtNode(NodeKind::kIfThenElse),
        condition(std::move(condition)),
        then_case(std::move(then_case)),
        else_case(std::move(else_case)) {}
  void VisitFields(FieldVisitor& v) const override;
  PrimExpr condition;
  Stmt then_case;
  Stmt else_case;  // may be null
};

class SeqStmtNode : public StmtNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kSeqStmt; }
  explicit SeqStmtNode(std::vector<Stmt> seq) : StmtNode(NodeKind::kSeqStmt), seq(std::move(seq)) {}
  void VisitFields(FieldVisitor& v) const override;
  std::vector<Stmt> seq;
};

class EvaluateNode : public StmtNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kEvaluate; }
  explicit EvaluateNode(PrimExpr value) : StmtNode(NodeKind::kEvaluate), value(std::move(value)) {}
  void VisitFields(FieldVisitor& v) const override;
  PrimExpr value;
};

// The unit of scheduling: iteration variables with domains, the regions read and written, an
// optional reduction init, buffers allocated or matched inside, and the body.
class BlockNode : public StmtNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kBlock; }
  BlockNode() : StmtNode(NodeKind::kBlock) {}
  void VisitFields(FieldVisitor& v) const override;
  std::string name;
  std::vector<IterVar> iter_vars;
  std::vector<BufferRegion> reads;
  std::vector<BufferRegion> writes;
  std::vector<Buffer> alloc_buffers;
  std::vector<MatchBufferRegion> match_buffers;
  Stmt init;  // may be null
  Stmt body;
  Attrs annotations;
};
using Block = Ref<BlockNode>;

// Executes `block` with its iteration variables bound to `iter_values` when `predicate` holds.
class BlockRealizeNode : public StmtNode {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kBlockRealize; }
  BlockRealizeNode(std::vector<PrimExpr> iter_values, PrimExpr predicate, Block block)
      : StmtNode(NodeKind::kBlockRealize),
        iter_values(std::move(iter_values)),
        predicate(std::move(predicate)),
        block(std::move(block)) {}
  void VisitFields(FieldVisitor& v) const override;
  std::vector<PrimExpr> iter_values;
  PrimExpr predicate;
  Block block;
};

// A TIR function: parameters (handles or scalars), the buffers bound to handle parameters, the
// body and attributes ("global_symbol", "tir.noalias", ...).
class PrimFuncNode : public Object {
 public:
  static bool Classof(NodeKind k) { return k == NodeKind::kPrimFunc; }
  PrimFuncNode() : Object(NodeKind::kPrimFunc) {}
  void VisitFields(FieldVisitor& v) const override;
  std::vector<Var> params;
  std::vector<std::pair<Var, Buffer>> buffer_map;  // in parameter order
  Stmt body;
  Attrs attrs;
  // The buffer bound to `param`, or null.
  Buffer BufferOf(const Var& param) const;
};
using PrimFunc = Ref<PrimFuncNode>;

Stmt Seq(std::vector<Stmt> stmts);

// A new block node with `b`'s fields, for the caller to change and then own (wrap in a Block):
// the way a pass edits one field of a block.
BlockNode* CopyBlock(const BlockNode& b);

// `f` with its body replaced (the same node when `body` is unchanged): what a pass returns.
PrimFunc WithBody(const PrimFunc& f, Stmt body);
// `f` with the attribute `key` set (added or replaced).
PrimFunc WithFuncAttr(const PrimFunc& f, std::string key, ObjectRef value);

}  // namespace kiln::ir

#endif  // KILN_COMPILER_IR_TIR_STMT_H_
