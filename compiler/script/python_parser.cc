#include "compiler/script/python_parser.h"

#include <cerrno>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "compiler/ir/node.h"
#include "compiler/script/python_lexer.h"
#include "runtime/support/status_macros.h"

namespace kiln::script {

Source::Source(std::string filename, std::string text)
    : filename_(std::move(filename)), text_(std::move(text)) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
  }
}

absl::Status Source::Error(Pos pos, absl::string_view message) const {
  std::string where = absl::StrCat(filename_, ":", pos.line, ":", pos.col, ": ", message);
  if (pos.line >= 1 && pos.line <= static_cast<int>(line_starts_.size())) {
    size_t start = line_starts_[pos.line - 1];
    size_t end = text_.find('\n', start);
    std::string line =
        text_.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (line.size() > 200) line = line.substr(0, 200) + "...";
    absl::StrAppend(&where, "\n    ", line, "\n    ",
                    std::string(std::max(0, std::min(pos.col - 1, 200)), ' '), "^");
  }
  return absl::InvalidArgumentError(where);
}

namespace {

// Nesting of expressions and blocks, whether the parser recursed to build it (parentheses,
// calls, blocks, elif) or not (a left-associative `a + b + c + ...`).
constexpr int kMaxDepth = ir::kMaxNestingDepth;

absl::Status TooDeep(const Source& source, Pos pos) {
  return source.Error(pos, absl::StrCat("nesting is too deep (more than ", kMaxDepth,
                                        " levels of expressions and blocks)"));
}

// The parser recurses once per bracket or block, but builds `a + b + c + ...` in a loop: this walk
// (iterative, as it must not recurse itself) finds the deepest point of the whole tree.
absl::Status CheckNesting(const Source& source, const PyBody* body, const PyExpr* expr) {
  struct Item {
    const PyStmt* stmt;
    const PyExpr* expr;
    int depth;
  };
  std::vector<Item> work;
  auto push_body = [&work](const PyBody& b, int depth) {
    for (const PyStmtPtr& s : b) {
      if (s) work.push_back({s.get(), nullptr, depth});
    }
  };
  if (body != nullptr) push_body(*body, 1);
  if (expr != nullptr) work.push_back({nullptr, expr, 1});
  while (!work.empty()) {
    Item item = work.back();
    work.pop_back();
    int next = item.depth + 1;
    if (item.stmt != nullptr) {
      const PyStmt& s = *item.stmt;
      if (item.depth > kMaxDepth) return TooDeep(source, s.pos);
      for (const PyExpr* e :
           {s.target.get(), s.annotation.get(), s.value.get(), s.message.get(), s.returns.get()}) {
        if (e != nullptr) work.push_back({nullptr, e, next});
      }
      for (const PyParam& p : s.params) {
        if (p.annotation) work.push_back({nullptr, p.annotation.get(), next});
      }
      for (const PyExprPtr& d : s.decorators) {
        if (d) work.push_back({nullptr, d.get(), next});
      }
      push_body(s.body, next);
      push_body(s.orelse, next);
      continue;
    }
    const PyExpr& e = *item.expr;
    if (item.depth > kMaxDepth) return TooDeep(source, e.pos);
    for (const PyExprPtr& a : e.args) {
      if (a) work.push_back({nullptr, a.get(), next});
    }
    for (const auto& [key, value] : e.keywords) {
      if (value) work.push_back({nullptr, value.get(), next});
    }
  }
  return absl::OkStatus();
}

class Parser {
 public:
  Parser(const Source& source, std::vector<Token> tokens)
      : source_(source), tokens_(std::move(tokens)) {}

  absl::StatusOr<PyBody> File() {
    PyBody body;
    while (!At(Token::Kind::kEnd)) {
      if (Accept(Token::Kind::kNewline)) continue;
      if (AtName("from") || AtName("import")) {
        while (!At(Token::Kind::kNewline) && !At(Token::Kind::kEnd)) ++i_;
        continue;
      }
      PyStmtPtr s = Statement();
      if (!ok()) return error_;
      body.push_back(std::move(s));
    }
    KILN_RETURN_IF_ERROR(CheckNesting(source_, &body, nullptr));
    return body;
  }

  absl::StatusOr<PyExprPtr> SingleExpr() {
    PyExprPtr e = Expr();
    if (ok() && !At(Token::Kind::kEnd)) Fail(Peek().pos, "unexpected text after the expression");
    if (!ok()) return error_;
    KILN_RETURN_IF_ERROR(CheckNesting(source_, nullptr, e.get()));
    return e;
  }

 private:
  // ---- Token helpers ----
  const Token& Peek(int ahead = 0) const {
    size_t j = std::min(i_ + ahead, tokens_.size() - 1);
    return tokens_[j];
  }
  bool At(Token::Kind k) const { return Peek().kind == k; }
  bool AtOp(const char* op) const {
    const Token& t = Peek();
    return t.kind == Token::Kind::kOp && t.op == OpCode(op);
  }
  bool AtName(const char* name) const { return At(Token::Kind::kName) && Peek().text == name; }
  bool Accept(Token::Kind k) {
    if (!At(k)) return false;
    ++i_;
    return true;
  }
  bool AcceptOp(const char* op) {
    if (!AtOp(op)) return false;
    ++i_;
    return true;
  }
  bool AcceptName(const char* name) {
    if (!AtName(name)) return false;
    ++i_;
    return true;
  }
  bool ok() const { return error_.ok(); }
  void Fail(Pos pos, absl::string_view message) {
    if (ok()) error_ = source_.Error(pos, message);
    i_ = tokens_.size() - 1;  // stop consuming
  }
  static std::string Describe(const Token& t) {
    switch (t.kind) {
      case Token::Kind::kNewline:
        return "end of line";
      case Token::Kind::kIndent:
        return "an indented block";
      case Token::Kind::kDedent:
        return "the end of a block";
      case Token::Kind::kEnd:
        return "end of input";
      case Token::Kind::kString:
        return "a string";
      default:
        return absl::StrCat("'", t.text, "'");
    }
  }
  // After an item inside brackets: a separator or the closing bracket must follow. When the
  // input has moved past the line that opened the bracket, blame the unclosed bracket.
  void ExpectSeparator(const char* close, Pos open) {
    if (AcceptOp(",") || AtOp(close)) return;
    const Token& t = Peek();
    if (t.kind == Token::Kind::kEnd || t.pos.line > open.line) {
      std::string opener = std::string(1, close[0] == ')' ? '(' : close[0] == ']' ? '[' : '{');
      Fail(open, absl::StrCat("'", opener, "' was never closed"));
      return;
    }
    Fail(t.pos, absl::StrCat("expected ',' or '", close, "', found ", Describe(t)));
  }

  void ExpectOp(const char* op) {
    if (!AcceptOp(op))
      Fail(Peek().pos, absl::StrCat("expected '", op, "', found ", Describe(Peek())));
  }
  std::string ExpectName(const char* what) {
    if (!At(Token::Kind::kName)) {
      Fail(Peek().pos, absl::StrCat("expected ", what, ", found ", Describe(Peek())));
      return "";
    }
    return tokens_[i_++].text;
  }
  void ExpectNewline() {
    if (!Accept(Token::Kind::kNewline) && !At(Token::Kind::kEnd)) {
      Fail(Peek().pos, absl::StrCat("expected end of line, found ", Describe(Peek())));
    }
  }
  bool Enter(Pos pos) {
    if (++depth_ > kMaxDepth) {
      FailTooDeep(pos);
      return false;
    }
    return true;
  }
  void FailTooDeep(Pos pos) {
    if (ok()) error_ = TooDeep(source_, pos);
    i_ = tokens_.size() - 1;  // stop consuming
  }

  static PyExprPtr Node(PyExpr::Kind kind, Pos pos, std::string text = "") {
    auto e = std::make_unique<PyExpr>();
    e->kind = kind;
    e->pos = pos;
    e->text = std::move(text);
    return e;
  }

  // ---- Statements ----
  PyStmtPtr NewStmt(PyStmt::Kind kind, Pos pos) {
    auto s = std::make_unique<PyStmt>();
    s->kind = kind;
    s->pos = pos;
    return s;
  }

  PyBody Suite() {
    PyBody body;
    ExpectOp(":");
    if (!ok()) return body;
    if (!Accept(Token::Kind::kNewline)) {  // `if x: y` on one line
      body.push_back(Simple());
      return body;
    }
    if (!Accept(Token::Kind::kIndent)) {
      Fail(Peek().pos, "expected an indented block");
      return body;
    }
    while (ok() && !Accept(Token::Kind::kDedent) && !At(Token::Kind::kEnd)) {
      if (Accept(Token::Kind::kNewline)) continue;
      body.push_back(Statement());
    }
    return body;
  }

  PyStmtPtr Statement() {
    Pos pos = Peek().pos;
    if (!Enter(pos)) return nullptr;
    PyStmtPtr s = StatementInner();
    --depth_;
    return s;
  }

  PyStmtPtr StatementInner() {
    Pos pos = Peek().pos;
    if (AtOp("@") || AtName("def") || AtName("class")) return Definition();
    if (AcceptName("for")) {
      PyStmtPtr s = NewStmt(PyStmt::Kind::kFor, pos);
      s->target = TargetList();
      if (!AcceptName("in")) Fail(Peek().pos, "expected 'in'");
      s->value = Expr();
      s->body = Suite();
      return s;
    }
    if (AcceptName("while")) {
      PyStmtPtr s = NewStmt(PyStmt::Kind::kWhile, pos);
      s->value = Expr();
      s->body = Suite();
      return s;
    }
    if (AcceptName("with")) {
      PyStmtPtr s = NewStmt(PyStmt::Kind::kWith, pos);
      s->value = Expr();
      if (AcceptName("as")) s->target = TargetList();
      s->body = Suite();
      return s;
    }
    if (AcceptName("if")) return IfRest(pos);
    return Simple();
  }

  PyStmtPtr IfRest(Pos pos) {
    PyStmtPtr s = NewStmt(PyStmt::Kind::kIf, pos);
    s->value = Expr();
    s->body = Suite();
    if (!ok()) return s;
    Pos else_pos = Peek().pos;
    if (AcceptName("elif")) {
      if (!Enter(else_pos)) return s;
      s->orelse.push_back(IfRest(else_pos));
      --depth_;
    } else if (AcceptName("else")) {
      s->orelse = Suite();
    }
    return s;
  }

  PyStmtPtr Definition() {
    std::vector<PyExprPtr> decorators;
    while (AcceptOp("@")) {
      decorators.push_back(Expr());
      ExpectNewline();
      if (!ok()) return nullptr;
    }
    Pos pos = Peek().pos;
    if (AcceptName("class")) {
      PyStmtPtr s = NewStmt(PyStmt::Kind::kClass, pos);
      s->name = ExpectName("a class name");
      if (AcceptOp("(")) {
        while (ok() && !AcceptOp(")")) Expr(), AcceptOp(",");
      }
      s->decorators = std::move(decorators);
      s->body = Suite();
      return s;
    }
    if (!AcceptName("def")) {
      Fail(Peek().pos, "expected 'def' or 'class' after a decorator");
      return nullptr;
    }
    PyStmtPtr s = NewStmt(PyStmt::Kind::kFunction, pos);
    s->name = ExpectName("a function name");
    s->decorators = std::move(decorators);
    ExpectOp("(");
    while (ok() && !AcceptOp(")")) {
      PyParam p;
      p.pos = Peek().pos;
      p.name = ExpectName("a parameter name");
      if (AcceptOp(":")) p.annotation = Expr();
      s->params.push_back(std::move(p));
      if (!AcceptOp(",") && !AtOp(")")) {
        Fail(Peek().pos, absl::StrCat("expected ',' or ')', found ", Describe(Peek())));
      }
    }
    if (AcceptOp("->")) s->returns = Expr();
    s->body = Suite();
    return s;
  }

  PyStmtPtr Simple() {
    Pos pos = Peek().pos;
    PyStmtPtr s;
    if (AcceptName("pass")) {
      s = NewStmt(PyStmt::Kind::kPass, pos);
    } else if (AcceptName("return")) {
      s = NewStmt(PyStmt::Kind::kReturn, pos);
      if (!At(Token::Kind::kNewline) && !At(Token::Kind::kEnd)) s->value = ExprList();
    } else if (AcceptName("assert")) {
      s = NewStmt(PyStmt::Kind::kAssert, pos);
      s->value = Expr();
      if (AcceptOp(",")) s->message = Expr();
    } else {
      PyExprPtr first = ExprList();
      if (AcceptOp(":")) {
        s = NewStmt(PyStmt::Kind::kAssign, pos);
        s->target = std::move(first);
        s->annotation = Expr();
        if (AcceptOp("=")) {
          s->value = ExprList();
        } else {
          Fail(Peek().pos, "expected '=' after the annotation");
        }
      } else if (AcceptOp("=")) {
        s = NewStmt(PyStmt::Kind::kAssign, pos);
        s->target = std::move(first);
        s->value = ExprList();
      } else {
        s = NewStmt(PyStmt::Kind::kExpr, pos);
        s->value = std::move(first);
      }
    }
    ExpectNewline();
    return s;
  }

  // ---- Expressions ----
  // `a, b` (a tuple without parentheses) or a single expression.
  PyExprPtr ExprList() {
    Pos pos = Peek().pos;
    PyExprPtr first = Expr();
    if (!AtOp(",")) return first;
    PyExprPtr tuple = Node(PyExpr::Kind::kTuple, pos);
    tuple->args.push_back(std::move(first));
    while (ok() && AcceptOp(",")) {
      if (AtOp("=") || AtOp(":") || At(Token::Kind::kNewline) || AtName("in")) break;
      tuple->args.push_back(Expr());
    }
    return tuple;
  }
  PyExprPtr TargetList() {
    Pos pos = Peek().pos;
    PyExprPtr first = Primary();
    if (!AtOp(",")) return first;
    PyExprPtr tuple = Node(PyExpr::Kind::kTuple, pos);
    tuple->args.push_back(std::move(first));
    while (ok() && AcceptOp(",")) {
      if (AtName("in") || AtOp(":") || AtOp("=")) break;
      tuple->args.push_back(Primary());
    }
    return tuple;
  }

  PyExprPtr Expr() {
    Pos pos = Peek().pos;
    if (!Enter(pos)) return Node(PyExpr::Kind::kNone, pos);
    PyExprPtr e = OrTest();
    --depth_;
    return e;
  }

  PyExprPtr Binary(PyExprPtr lhs, PyExpr::Kind kind, std::string op, PyExprPtr rhs, Pos pos) {
    PyExprPtr e = Node(kind, pos, std::move(op));
    e->chain_depth = 1 + std::max(lhs ? lhs->chain_depth : 0, rhs ? rhs->chain_depth : 0);
    if (e->chain_depth > kMaxDepth) FailTooDeep(pos);
    e->args.push_back(std::move(lhs));
    e->args.push_back(std::move(rhs));
    return e;
  }
  // `outer` takes `inner` as its first operand (an attribute, call or subscript of it).
  void Chain(PyExpr* outer, PyExprPtr inner) {
    outer->chain_depth = inner->chain_depth + 1;
    if (outer->chain_depth > kMaxDepth) FailTooDeep(outer->pos);
    outer->args.push_back(std::move(inner));
  }

  PyExprPtr OrTest() {
    PyExprPtr e = AndTest();
    while (ok() && AtName("or")) {
      Pos pos = Peek().pos;
      ++i_;
      e = Binary(std::move(e), PyExpr::Kind::kBoolOp, "or", AndTest(), pos);
    }
    return e;
  }
  PyExprPtr AndTest() {
    PyExprPtr e = NotTest();
    while (ok() && AtName("and")) {
      Pos pos = Peek().pos;
      ++i_;
      e = Binary(std::move(e), PyExpr::Kind::kBoolOp, "and", NotTest(), pos);
    }
    return e;
  }
  PyExprPtr NotTest() {
    Pos pos = Peek().pos;
    if (AcceptName("not")) {
      if (!Enter(pos)) return Node(PyExpr::Kind::kNone, pos);
      PyExprPtr e = Node(PyExpr::Kind::kUnaryOp, pos, "not");
      e->args.push_back(NotTest());
      --depth_;
      return e;
    }
    return Comparison();
  }
  PyExprPtr Comparison() {
    PyExprPtr e = Arith();
    static const char* kOps[] = {"==", "!=", "<=", ">=", "<", ">"};
    for (const char* op : kOps) {
      if (AtOp(op)) {
        Pos pos = Peek().pos;
        ++i_;
        e = Binary(std::move(e), PyExpr::Kind::kCompare, op, Arith(), pos);
        for (const char* again : kOps) {
          if (AtOp(again))
            Fail(Peek().pos, "chained comparisons are not supported; add parentheses");
        }
        break;
      }
    }
    return e;
  }
  PyExprPtr Arith() {
    PyExprPtr e = Term();
    while (ok() && (AtOp("+") || AtOp("-"))) {
      Pos pos = Peek().pos;
      std::string op = tokens_[i_++].text;
      e = Binary(std::move(e), PyExpr::Kind::kBinOp, op, Term(), pos);
    }
    return e;
  }
  PyExprPtr Term() {
    PyExprPtr e = Factor();
    while (ok() && (AtOp("*") || AtOp("/") || AtOp("//") || AtOp("%"))) {
      Pos pos = Peek().pos;
      std::string op = tokens_[i_++].text;
      e = Binary(std::move(e), PyExpr::Kind::kBinOp, op, Factor(), pos);
    }
    return e;
  }
  PyExprPtr Factor() {
    Pos pos = Peek().pos;
    if (AtOp("-") || AtOp("+")) {
      std::string op = tokens_[i_++].text;
      if (!Enter(pos)) return Node(PyExpr::Kind::kNone, pos);
      PyExprPtr operand = Factor();
      --depth_;
      // Fold signs into numeric literals: -1 is a literal, not an operation.
      if (operand && op == "-" && operand->kind == PyExpr::Kind::kInt && !operand->parenthesized) {
        operand->int_value = -operand->int_value;
        operand->pos = pos;
        return operand;
      }
      if (operand && op == "-" && operand->kind == PyExpr::Kind::kFloat &&
          !operand->parenthesized) {
        operand->float_value = -operand->float_value;
        operand->pos = pos;
        return operand;
      }
      PyExprPtr e = Node(PyExpr::Kind::kUnaryOp, pos, op);
      e->args.push_back(std::move(operand));
      return e;
    }
    PyExprPtr base = Primary();
    if (ok() && AtOp("**")) {
      Pos op_pos = Peek().pos;
      ++i_;
      if (!Enter(op_pos)) return base;
      PyExprPtr e = Binary(std::move(base), PyExpr::Kind::kBinOp, "**", Factor(), op_pos);
      --depth_;
      return e;
    }
    return base;
  }

  PyExprPtr Primary() {
    PyExprPtr e = Atom();
    while (ok()) {
      if (AcceptOp(".")) {
        PyExprPtr attr = Node(PyExpr::Kind::kAttribute, e->pos, ExpectName("an attribute name"));
        Chain(attr.get(), std::move(e));
        e = std::move(attr);
      } else if (AtOp("(")) {
        Pos open = Peek().pos;
        ++i_;
        PyExprPtr call = Node(PyExpr::Kind::kCall, e->pos);
        Chain(call.get(), std::move(e));
        Arguments(call.get(), open);
        e = std::move(call);
      } else if (AtOp("[")) {
        Pos open = Peek().pos;
        ++i_;
        PyExprPtr sub = Node(PyExpr::Kind::kSubscript, e->pos);
        Chain(sub.get(), std::move(e));
        while (ok() && !AcceptOp("]")) {
          sub->args.push_back(SliceOrExpr());
          ExpectSeparator("]", open);
        }
        // `B[()]`, a zero-dimensional buffer's element: no indices.
        if (sub->args.size() == 2 && sub->args[1] && sub->args[1]->kind == PyExpr::Kind::kTuple &&
            sub->args[1]->args.empty()) {
          sub->args.pop_back();
        }
        e = std::move(sub);
      } else {
        break;
      }
    }
    return e;
  }

  void Arguments(PyExpr* call, Pos open) {
    while (ok() && !AcceptOp(")")) {
      if (At(Token::Kind::kName) && Peek(1).kind == Token::Kind::kOp && Peek(1).text == "=") {
        std::string key = tokens_[i_].text;
        i_ += 2;
        call->keywords.emplace_back(key, Expr());
      } else {
        if (!call->keywords.empty()) {
          Fail(Peek().pos, "a positional argument follows a keyword argument");
          return;
        }
        call->args.push_back(Expr());
      }
      ExpectSeparator(")", open);
    }
  }

  PyExprPtr SliceOrExpr() {
    Pos pos = Peek().pos;
    PyExprPtr start;
    if (!AtOp(":")) start = Expr();
    if (!AcceptOp(":")) return start;
    PyExprPtr slice = Node(PyExpr::Kind::kSlice, pos);
    slice->args.push_back(std::move(start));
    slice->args.push_back(AtOp(",") || AtOp("]") ? nullptr : Expr());
    return slice;
  }

  PyExprPtr Atom() {
    const Token& t = Peek();
    Pos pos = t.pos;
    switch (t.kind) {
      case Token::Kind::kName: {
        ++i_;
        if (t.text == "True" || t.text == "False") {
          PyExprPtr e = Node(PyExpr::Kind::kBool, pos);
          e->int_value = t.text == "True";
          return e;
        }
        if (t.text == "None") return Node(PyExpr::Kind::kNone, pos);
        return Node(PyExpr::Kind::kName, pos, t.text);
      }
      case Token::Kind::kInt: {
        ++i_;
        PyExprPtr e = Node(PyExpr::Kind::kInt, pos, t.text);
        e->int_value = t.int_value;
        return e;
      }
      case Token::Kind::kFloat: {
        ++i_;
        PyExprPtr e = Node(PyExpr::Kind::kFloat, pos, t.text);
        e->float_value = t.float_value;
        return e;
      }
      case Token::Kind::kString: {
        std::string value;
        while (At(Token::Kind::kString)) value += tokens_[i_++].text;  // "a" "b" concatenates
        return Node(PyExpr::Kind::kString, pos, std::move(value));
      }
      default:
        break;
    }
    if (AcceptOp("(")) {
      if (AcceptOp(")")) return Node(PyExpr::Kind::kTuple, pos);
      PyExprPtr first = Expr();
      if (AcceptOp(")")) {
        if (first) first->parenthesized = true;
        return first;
      }
      PyExprPtr tuple = Node(PyExpr::Kind::kTuple, pos);
      tuple->parenthesized = true;
      tuple->args.push_back(std::move(first));
      while (ok() && AcceptOp(",")) {
        if (AtOp(")")) break;
        tuple->args.push_back(Expr());
      }
      ExpectOp(")");
      return tuple;
    }
    if (AcceptOp("[")) {
      PyExprPtr list = Node(PyExpr::Kind::kList, pos);
      while (ok() && !AcceptOp("]")) {
        list->args.push_back(Expr());
        ExpectSeparator("]", pos);
      }
      return list;
    }
    if (AcceptOp("{")) {
      PyExprPtr dict = Node(PyExpr::Kind::kDict, pos);
      while (ok() && !AcceptOp("}")) {
        dict->args.push_back(Expr());
        ExpectOp(":");
        dict->args.push_back(Expr());
        ExpectSeparator("}", pos);
      }
      return dict;
    }
    Fail(pos, absl::StrCat("expected an expression, found ", Describe(t)));
    return Node(PyExpr::Kind::kNone, pos);
  }

  const Source& source_;
  std::vector<Token> tokens_;
  size_t i_ = 0;
  int depth_ = 0;
  absl::Status error_;
};

}  // namespace

absl::StatusOr<PyBody> ParsePython(const Source& source) {
  absl::StatusOr<std::vector<Token>> tokens = Lex(source, source.text(), {1, 1}, false);
  if (!tokens.ok()) return tokens.status();
  return Parser(source, *std::move(tokens)).File();
}

absl::StatusOr<PyExprPtr> ParsePythonExpr(const Source& source, absl::string_view text, Pos at) {
  absl::StatusOr<std::vector<Token>> tokens = Lex(source, text, at, true);
  if (!tokens.ok()) return tokens.status();
  return Parser(source, *std::move(tokens)).SingleExpr();
}

}  // namespace kiln::script
