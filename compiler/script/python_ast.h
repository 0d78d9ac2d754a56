// The Python subset TVMScript is written in, as a small syntax tree: what the lexer and parser
// (python_parser.h) produce and the IR builders (script_parser.cc) consume. It knows nothing of
// TVM; positions are kept on every node for error messages.
#ifndef KILN_COMPILER_SCRIPT_PYTHON_AST_H_
#define KILN_COMPILER_SCRIPT_PYTHON_AST_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kiln::script {

struct Pos {
  int line = 0;  // 1-based
  int col = 0;   // 1-based
};

struct PyExpr;
using PyExprPtr = std::unique_ptr<PyExpr>;

struct PyExpr {
  enum class Kind {
    kName,       // text
    kAttribute,  // args[0].text
    kCall,       // args[0](args[1..], keywords)
    kSubscript,  // args[0][args[1..]]
    kSlice,      // args[0]:args[1] (either may be null)
    kTuple,      // (args...)
    kList,       // [args...]
    kDict,       // {args[0]: args[1], ...}
    kInt,        // int_value
    kFloat,      // float_value
    kString,     // text
    kBool,       // int_value
    kNone,
    kBinOp,    // args[0] text args[1]: + - * / // % **
    kUnaryOp,  // text args[0]: - + not
    kCompare,  // args[0] text args[1]: == != < <= > >=
    kBoolOp,   // args[0] text args[1]: and or
  };
  Kind kind;
  Pos pos;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0;
  std::vector<PyExprPtr> args;
  std::vector<std::pair<std::string, PyExprPtr>> keywords;
  bool parenthesized = false;  // written inside (...): `(a, b)` vs `a, b` both are tuples
  // Of operator chains the parser builds without recursing (`a + b + c`, `x.f(a)[0].g`): how many
  // levels deep this node is at least, so that a chain too deep is refused while it grows.
  int chain_depth = 1;

  PyExpr() = default;
  PyExpr(const PyExpr&) = delete;
  PyExpr& operator=(const PyExpr&) = delete;
  // Frees the subtree without recursing: the parser builds `a + b + c + ...` a million deep
  // before it can tell that is too deep.
  ~PyExpr() {
    std::vector<PyExprPtr> pending;
    auto take_children = [&pending](PyExpr& e) {
      for (PyExprPtr& a : e.args) pending.push_back(std::move(a));
      for (auto& [key, value] : e.keywords) pending.push_back(std::move(value));
      e.args.clear();
      e.keywords.clear();
    };
    take_children(*this);
    while (!pending.empty()) {
      PyExprPtr next = std::move(pending.back());
      pending.pop_back();
      if (next) take_children(*next);
    }
  }
};

struct PyStmt;
using PyStmtPtr = std::unique_ptr<PyStmt>;
using PyBody = std::vector<PyStmtPtr>;

struct PyParam {
  Pos pos;
  std::string name;
  PyExprPtr annotation;  // may be null
};

struct PyStmt {
  enum class Kind {
    kExpr,    // value
    kAssign,  // target [: annotation] = value
    kReturn,  // value (may be null)
    kPass,
    kAssert,    // value, message
    kFor,       // for target in value: body
    kWhile,     // while value: body
    kWith,      // with value [as target]: body
    kIf,        // if value: body else: orelse
    kFunction,  // decorators def name(params) -> returns: body
    kClass,     // decorators class name: body
  };
  Kind kind;
  Pos pos;
  std::string name;
  PyExprPtr target;
  PyExprPtr annotation;
  PyExprPtr value;
  PyExprPtr message;
  PyExprPtr returns;
  std::vector<PyParam> params;
  std::vector<PyExprPtr> decorators;
  PyBody body;
  PyBody orelse;
};

}  // namespace kiln::script

#endif  // KILN_COMPILER_SCRIPT_PYTHON_AST_H_
