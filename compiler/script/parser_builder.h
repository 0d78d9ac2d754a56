// The TVMScript builder: Python syntax trees (python_ast.h) to IR. One class whose state (scopes,
// the first error, module globals, TVM metadata) every part shares, defined over three files
// along the dialects, as TVM's parser is: script_parser.cc (the module, errors, scopes, literals,
// attributes, function dispatch), tir_parser.cc (TIR expressions, buffers, statements,
// PrimFuncs), relax_parser.cc (StructInfo, expressions, calls, constants, functions, bindings).
// Internal to compiler/script.
#ifndef KILN_COMPILER_SCRIPT_PARSER_BUILDER_H_
#define KILN_COMPILER_SCRIPT_PARSER_BUILDER_H_

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "compiler/ir/module.h"
#include "compiler/ir/relax_expr.h"
#include "compiler/ir/tir_stmt.h"
#include "compiler/script/python_ast.h"
#include "compiler/script/python_parser.h"
#include "compiler/script/script_common.h"

namespace kiln::script::parser {

using namespace ir;  // NOLINT: the builder constructs every node type; internal header
namespace relax = ir::relax;
using K = PyExpr::Kind;

// "T.axis.spatial" for an Attribute chain over a Name; "" otherwise.
std::string Dotted(const PyExpr* e);
std::string CalleeName(const PyExpr& e);
const PyExpr* Keyword(const PyExpr& call, const char* key);
bool IsBareLiteral(const PyExpr& e);

class Builder {
 public:
  explicit Builder(const Source& source) : src_(source) {}
  absl::StatusOr<IRModule> Module(const PyBody& file);

 private:
  // ---- Errors ----
  bool ok() const { return error_.ok(); }
  template <typename T = ObjectRef>
  T Fail(Pos pos, absl::string_view message) {
    if (ok()) error_ = src_.Error(pos, message);
    return T();
  }

  // ---- Scopes: names to Vars, Buffers, Relax vars ----
  void Push() { scopes_.emplace_back(); }
  void Pop() { scopes_.pop_back(); }
  void Define(const std::string& name, ObjectRef value) { scopes_.back()[name] = std::move(value); }
  ObjectRef Lookup(const std::string& name) const;

  // ---- Literals and attributes ----
  DataType ParseDType(const PyExpr& e);
  PrimExpr IntLiteral(const PyExpr& e, DataType dtype);
  // `T.float32(0.5)`, `T.int64(3)`, `T.bool(True)`, `T.float32("inf")`; a non-literal is a cast.
  PrimExpr TypedLiteral(const PyExpr& call, DataType dtype);
  ObjectRef AttrValue(const PyExpr& e);
  Attrs AttrDict(const PyExpr& e);

  // ---- TIR expressions ----
  // `hint`: the dtype a bare literal here takes (void: the defaults).
  PrimExpr Expr(const PyExpr& e, DataType hint);
  PrimExpr NameExpr(const PyExpr& e);
  PrimExpr BinaryExpr(const PyExpr& e, DataType hint);
  PrimExpr LoadExpr(const PyExpr& e);
  Buffer BufferRef(const PyExpr& e);
  std::vector<PrimExpr> Args(const PyExpr& call, size_t first = 1);
  bool Arity(const PyExpr& call, size_t n, const std::string& name);
  PrimExpr CallExpr(const PyExpr& e, DataType hint);
  // `stop - start`, written back as the extent it was printed from: `start:start + e` gives e.
  PrimExpr Extent(const PrimExpr& start, const PrimExpr& stop);
  // A loop bound or axis domain: a scalar integer expression (bool is uint1 and not an index).
  PrimExpr IndexExpr(const PyExpr& e, DataType want);
  // (start, stop) from `a:b` or `T.serial(a, b)`: a bare literal start takes the stop's dtype.
  bool StartStop(const PyExpr& a, const PyExpr& b, PrimExpr* start, PrimExpr* stop);
  Range RangeFromTo(const PyExpr& a, const PyExpr& b);
  BufferRegion Region(const PyExpr& e);

  // ---- Buffers ----
  std::vector<PrimExpr> ShapeTuple(const PyExpr& e);
  // (shape, dtype="float32", strides=, elem_offset=, scope=, align=) starting at args[first].
  Buffer MakeBufferFrom(const std::string& name, const PyExpr& call, size_t first);
  bool IndexCount(const Buffer& buffer, size_t count, const PyExpr& at);
  ObjectRef ArgumentAttr(const PyExpr& e);

  // ---- TIR statements ----
  Stmt Seq(std::vector<Stmt> stmts);
  Stmt Stmts(const PyBody& body, size_t begin = 0);
  DataType AnnotationDType(const PyExpr& e);
  Stmt Statement(const PyStmt& s);
  Stmt For(const PyStmt& s);
  Stmt With(const PyStmt& s);
  Stmt Block(const PyStmt& s);
  // `n = T.int64()` / `T.int64(is_size_var=True)` / `n, m = T.int64(), T.int64()` in a
  // function's header; Declarations defines those at the top of `body`.
  bool IsDeclaration(const PyStmt& s);
  void Declare(const PyStmt& s);
  size_t Declarations(const PyBody& body);
  // Decorator flags: @T.prim_func / @R.function(private=True, pure=False).
  bool Decorated(const PyStmt& def, const char* name, bool* is_private, bool* is_pure);
  ObjectRef Function(const PyStmt& def);
  Attrs WithSymbol(Attrs attrs, const std::string& name, bool is_private);
  ObjectRef PrimFunction(const PyStmt& def, bool is_private);

  // ---- Relax ----
  relax::StructInfo SInfo(const PyExpr& e, bool signature);
  relax::StructInfo SInfoArgs(const PyExpr& e);
  relax::Expr RExpr(const PyExpr& e);
  // metadata["relax.expr.Constant"][i]
  relax::Expr MetadataConstant(const PyExpr& e);
  relax::Expr RCall(const PyExpr& e);
  // R.const(data, "dtype"[, shape=(...)]): nested lists, a scalar, or a hex string of raw bytes.
  relax::Expr Const(const PyExpr& e);
  bool Elements(const PyExpr& e, DataType dtype, size_t depth, std::vector<int64_t>* shape,
                std::string* bytes);
  // A Relax function. `global`: a module function (global_symbol rules apply).
  ObjectRef RelaxFunction(const PyStmt& def, bool is_private, bool is_pure, bool global);
  // Statements [begin, end) as a SeqExpr. The last is `return x` (result_name null) or an
  // assignment to `*result_name` (If branches; its annotation is stored in *result_sinfo).
  struct BranchResult {
    std::string name;
    relax::StructInfo sinfo;
    Pos pos;
  };
  relax::Expr RBody(const PyBody& body, size_t begin, Pos where, BranchResult* result);
  relax::BindingBlock Dataflow(const PyStmt& s);
  relax::Var NewVar(const std::string& name, relax::StructInfo sinfo);
  relax::Binding RStatement(const PyStmt& s);

  const Source& src_;
  absl::Status error_;
  std::map<std::string, relax::GlobalVar> globals_;
  std::vector<std::unordered_map<std::string, ObjectRef>> scopes_;
  std::unordered_map<const Object*, Range> loop_extents_;
  std::vector<ir::Var>* auto_shape_vars_ = nullptr;
  bool in_dataflow_ = false;
  std::vector<relax::Expr> metadata_;  // metadata["relax.expr.Constant"]
  bool has_metadata_ = false;
};

}  // namespace kiln::script::parser

#endif  // KILN_COMPILER_SCRIPT_PARSER_BUILDER_H_
