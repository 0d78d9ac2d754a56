// The TVMScript printer: IR to text that the parser reads back exactly. One class whose state
// (the output, names, declared variables, the metadata section) every part shares, defined over
// three files along the dialects, as TVM's printer is: printer.cc (the module, lines, literals,
// attributes), tir_printer.cc (TIR expressions, buffers, regions, statements, PrimFuncs),
// relax_printer.cc (StructInfo, expressions, bindings, functions). Internal to compiler/script.
#ifndef KILN_COMPILER_SCRIPT_PRINTER_IMPL_H_
#define KILN_COMPILER_SCRIPT_PRINTER_IMPL_H_

#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/ir/module.h"
#include "compiler/ir/relax_expr.h"
#include "compiler/ir/tir_stmt.h"

namespace kiln::script::printer {

using namespace ir;  // NOLINT: the printer touches every node type; internal header
namespace relax = ir::relax;

// A string literal with Python escapes.
std::string Quote(const std::string& s);
bool IsLiteral(const PrimExpr& e);

// Names for variables, buffers and functions: unique within a function, never a keyword.
class Namer {
 public:
  Namer() {
    for (const char* r :
         {"T",        "R",     "I",      "cls",    "metadata", "Module", "_",     "range",
          "True",     "False", "None",   "and",    "or",       "not",    "if",    "else",
          "elif",     "for",   "in",     "while",  "with",     "as",     "def",   "class",
          "return",   "pass",  "assert", "lambda", "import",   "from",   "is",    "del",
          "global",   "yield", "try",    "except", "finally",  "raise",  "break", "continue",
          "nonlocal", "async", "await"}) {
      used_.insert(r);
    }
  }
  const std::string& Name(const Object* node, const std::string& hint) {
    auto it = names_.find(node);
    if (it != names_.end()) return it->second;
    std::string base = Sanitize(hint);
    std::string name = base;
    // Suffixes go on from the last one given to this base: 10^5 variables called "x" take
    // linear time.
    for (int& i = next_suffix_[base]; used_.count(name) > 0;) name = absl::StrCat(base, "_", ++i);
    used_.insert(name);
    return names_[node] = name;
  }
  bool Has(const Object* node) const { return names_.count(node) > 0; }

 private:
  static std::string Sanitize(const std::string& hint) {
    std::string s;
    for (char c : hint) {
      bool ok =
          (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
      s += ok ? c : '_';
    }
    if (s.empty() || (s[0] >= '0' && s[0] <= '9')) s = "v" + s;
    return s;
  }
  std::unordered_map<const Object*, std::string> names_;
  std::set<std::string> used_;
  std::map<std::string, int> next_suffix_;
};

// Operator precedence, for parentheses.
enum Prec {
  kPrecOr = 1,
  kPrecAnd = 2,
  kPrecNot = 3,
  kPrecCmp = 4,
  kPrecAdd = 5,
  kPrecMul = 6,
  kPrecAtom = 10
};
int Precedence(NodeKind k);
// The infix operator of a binary node, or null when it prints as a call. A float Div is `/`;
// an integer one prints as T.Div (Python's `/` is not truncating).
const char* InfixOp(NodeKind k, DataType dtype);

class Printer {
 public:
  std::string Print(const IRModule& mod);

 private:
  void Line(int indent, const std::string& text);

  // ---- Literals and attributes ----
  std::string Lit(const PrimExpr& e, DataType hint);
  std::string AttrValue(const ObjectRef& v);
  std::string AttrDict(const Attrs& attrs);

  // ---- TIR expressions ----
  std::string Expr(const PrimExpr& e, DataType hint = DataType(), int min_prec = 0);
  std::string Exprs(const std::vector<PrimExpr>& es, DataType hint = DataType());
  std::string VarName(const ir::VarNode* v) { return namer_.Name(v, v->name); }
  std::string ExprInner(const PrimExpr& e, DataType hint, int* prec);
  bool PrintsBare(const PrimExpr& lit, DataType hint);
  std::string Typed(const PrimExpr& lit);

  // ---- Buffers and regions ----
  std::string BufferName(const Buffer& b) { return b ? namer_.Name(b.get(), b->name) : "None"; }
  std::string BufferArgs(const BufferNode& b);
  std::string Region(const BufferRegion& r);
  // `min` for a unit range, else `min:min + extent` (folded when both are constants).
  std::string RangeText(const Range& range, bool point_ok);
  std::string StartText(const Range& range);
  std::string StopText(const Range& range);
  static bool IsZero(const PrimExpr& e);

  // ---- TIR statements ----
  void PrintPrimFunc(const std::string& name, const PrimFuncNode& f, int indent);
  // Declares (`n = T.int64()`) the variables used but not bound by the function itself.
  void DeclareFreeVars(const PrimFuncNode& f, std::unordered_set<const Object*> defined,
                       int indent);
  // Prints a statement; a SeqStmt prints as its elements, one per line.
  void StmtList(const Stmt& s, int indent);
  void PrintStmt(const Stmt& s, int indent, bool last);
  static bool IsGridLoop(const Stmt& s);
  void PrintFor(const Stmt& s, int indent);
  void PrintBlock(const BlockRealizeNode& r, int indent);
  // Whether iter var `i` prints in a T.axis.remap, as TVM prints it: a spatial or reduce iter var
  // bound to an enclosing loop's variable over that loop's exact range.
  bool IsRemapped(const BlockRealizeNode& r, size_t i) const;
  // Removes global_symbol when it equals the function's name; true if the function is private.
  static bool PopGlobalSymbol(Attrs* attrs, const std::string& name);

  // ---- Relax ----
  std::string RVar(const relax::VarNode* v) { return namer_.Name(v, v->name_hint); }
  // StructInfo; in a signature, symbolic dimensions are quoted ("n * 4").
  std::string SInfo(const relax::StructInfo& s, bool signature);
  std::string RExprs(const std::vector<relax::Expr>& es);
  std::string SInfoArgs(const std::vector<relax::StructInfo>& sinfos);
  std::string RExpr(const relax::Expr& e);
  static std::string OpName(const std::string& name);
  std::string CallText(const relax::CallNode& c);
  // Constants beyond this many elements go to the metadata section, as TVM prints them.
  static constexpr int64_t kMaxInlineElements = 16;
  std::string ConstantText(const relax::ConstantNode& c);
  // The shape variables a Relax function mentions, in first-appearance order.
  void CollectShapeVars(const relax::FunctionNode& f, std::vector<const ir::VarNode*>* out);
  void PrintRelaxFunction(const std::string& name, const relax::FunctionNode& f, int indent,
                          bool global);
  static bool UsesGlobals(const relax::FunctionNode& f);
  // Prints a SeqExpr's blocks, then `return body` (result_var null) or `result = body`.
  void PrintBody(const relax::Expr& e, int indent, const relax::Binding* result);
  std::string BindingLhs(const relax::Binding& b);
  void PrintBinding(const relax::Binding& b, int indent);

  std::string out_;
  std::vector<const relax::ConstantNode*> metadata_;
  std::unordered_map<const relax::ConstantNode*, size_t> metadata_index_;
  Namer namer_;
  std::unordered_set<const Object*> declared_;
  // The loops around the statement being printed, by loop variable.
  std::unordered_map<const ir::VarNode*, const ForNode*> enclosing_loops_;
};

}  // namespace kiln::script::printer

#endif  // KILN_COMPILER_SCRIPT_PRINTER_IMPL_H_
