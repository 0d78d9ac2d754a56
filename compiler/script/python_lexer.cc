#include "compiler/script/python_lexer.h"

#include <cerrno>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/support/status_macros.h"

namespace kiln::script {
namespace {

class Lexer {
 public:
  Lexer(const Source& source, absl::string_view text, Pos origin, bool single_expression)
      : source_(source),
        text_(text),
        line_(origin.line),
        col_(origin.col),
        single_expression_(single_expression) {}

  absl::StatusOr<std::vector<Token>> Run() {
    indents_.push_back(0);
    bool at_line_start = !single_expression_;
    while (pos_ < text_.size()) {
      if (at_line_start) {
        at_line_start = false;
        absl::Status s = HandleIndentation();
        if (!s.ok()) return s;
        continue;
      }
      char c = text_[pos_];
      if (c == '\n') {
        if (depth_ == 0 && !single_expression_) Emit(Token::Kind::kNewline, "\n");
        Advance(1);
        at_line_start = depth_ == 0 && !single_expression_;
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
        Advance(1);
        continue;
      }
      if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') Advance(1);
        continue;
      }
      if (c == '\\' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n') {
        Advance(2);
        continue;
      }
      absl::Status s;
      if (IsNameStart(c)) {
        s = LexName();
      } else if (IsDigit(c) || (c == '.' && pos_ + 1 < text_.size() && IsDigit(text_[pos_ + 1]))) {
        s = LexNumber();
      } else if (c == '"' || c == '\'') {
        s = LexString();
      } else {
        s = LexOperator();
      }
      if (!s.ok()) return s;
    }
    if (!single_expression_) {
      if (!tokens_.empty() && tokens_.back().kind != Token::Kind::kNewline) {
        Emit(Token::Kind::kNewline, "\n");
      }
      while (indents_.size() > 1) {
        indents_.pop_back();
        Emit(Token::Kind::kDedent, "");
      }
    }
    Emit(Token::Kind::kEnd, "");
    return std::move(tokens_);
  }

 private:
  static bool IsNameStart(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  }
  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }

  // The character at `at` for a message, whole: 'é' (U+00E9) for a UTF-8 sequence, byte 0xC3
  // for a byte that starts none — never half a character, which would make the message
  // invalid UTF-8 and unsendable.
  std::string DescribeCharacter(size_t at) const {
    const auto byte = static_cast<unsigned char>(text_[at]);
    if (byte == 0) return "'\\0'";
    if (byte >= 0x20 && byte < 0x7f) return absl::StrCat("'", std::string(1, text_[at]), "'");
    size_t length = byte >= 0xf0 && byte < 0xf8 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc2 ? 2 : 0;
    if (byte >= 0xf8) length = 0;
    uint32_t code = length == 4 ? byte & 0x07u : length == 3 ? byte & 0x0fu : byte & 0x1fu;
    for (size_t i = 1; i < length; ++i) {
      const auto next = at + i < text_.size() ? static_cast<unsigned char>(text_[at + i]) : 0;
      if ((next & 0xc0) != 0x80) length = 0;
      if (length == 0) break;
      code = (code << 6) | (next & 0x3fu);
    }
    if (length == 0) return absl::StrFormat("byte 0x%02X (not UTF-8)", byte);
    return absl::StrFormat("'%s' (U+%04X)", std::string(text_.substr(at, length)), code);
  }

  void Advance(size_t n) {
    for (size_t i = 0; i < n && pos_ < text_.size(); ++i, ++pos_) {
      if (text_[pos_] == '\n') {
        ++line_;
        col_ = 1;
      } else {
        ++col_;
      }
    }
  }
  Pos Here() const { return {line_, col_}; }
  void Emit(Token::Kind kind, std::string text, Pos at = {}) {
    Token t;
    t.kind = kind;
    t.pos = at.line == 0 ? Here() : at;
    if (kind == Token::Kind::kOp) t.op = OpCode(text.c_str());
    t.text = std::move(text);
    tokens_.push_back(std::move(t));
  }

  // At the start of a logical line: measure indentation; skip blank and comment-only lines.
  absl::Status HandleIndentation() {
    int width = 0;
    size_t p = pos_;
    while (true) {
      width = 0;
      p = pos_;
      while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t')) {
        width = text_[p] == '\t' ? (width / 8 + 1) * 8 : width + 1;
        ++p;
      }
      bool blank = p >= text_.size() || text_[p] == '\n' || text_[p] == '#' || text_[p] == '\r';
      if (!blank) break;
      // Blank or comment-only: no tokens, and its indentation does not count.
      while (pos_ < text_.size() && text_[pos_] != '\n') Advance(1);
      if (pos_ >= text_.size()) return absl::OkStatus();
      Advance(1);
    }
    Advance(p - pos_);
    if (width > indents_.back()) {
      indents_.push_back(width);
      Emit(Token::Kind::kIndent, "");
    } else {
      while (width < indents_.back()) {
        indents_.pop_back();
        Emit(Token::Kind::kDedent, "");
      }
      if (width != indents_.back()) {
        return source_.Error(Here(), "unindent does not match any outer indentation level");
      }
    }
    return absl::OkStatus();
  }

  absl::Status LexName() {
    Pos at = Here();
    size_t start = pos_;
    while (pos_ < text_.size() && (IsNameStart(text_[pos_]) || IsDigit(text_[pos_]))) Advance(1);
    std::string name(text_.substr(start, pos_ - start));
    // String prefixes: r"..." and b"..." (raw strings keep backslashes).
    if ((name == "r" || name == "b") && pos_ < text_.size() &&
        (text_[pos_] == '"' || text_[pos_] == '\'')) {
      return LexString(name == "r", at);
    }
    Emit(Token::Kind::kName, std::move(name), at);
    return absl::OkStatus();
  }

  absl::Status LexNumber() {
    Pos at = Here();
    size_t start = pos_;
    bool is_float = false;
    if (text_[pos_] == '0' && pos_ + 1 < text_.size() &&
        (text_[pos_ + 1] == 'x' || text_[pos_ + 1] == 'X')) {
      Advance(2);
      while (pos_ < text_.size() && std::isxdigit(static_cast<unsigned char>(text_[pos_]))) {
        Advance(1);
      }
    } else {
      while (pos_ < text_.size() && (IsDigit(text_[pos_]) || text_[pos_] == '_')) Advance(1);
      if (pos_ < text_.size() && text_[pos_] == '.') {
        is_float = true;
        Advance(1);
        while (pos_ < text_.size() && IsDigit(text_[pos_])) Advance(1);
      }
      if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
        is_float = true;
        Advance(1);
        if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) Advance(1);
        if (pos_ >= text_.size() || !IsDigit(text_[pos_])) {
          return source_.Error(Here(), "malformed number: missing exponent digits");
        }
        while (pos_ < text_.size() && IsDigit(text_[pos_])) Advance(1);
      }
    }
    std::string spelling;
    for (char c : text_.substr(start, pos_ - start)) {
      if (c != '_') spelling += c;
    }
    if (pos_ < text_.size() && IsNameStart(text_[pos_])) {
      return source_.Error(Here(), "malformed number");
    }
    Token t;
    t.pos = at;
    t.text = spelling;
    errno = 0;
    if (is_float) {
      t.kind = Token::Kind::kFloat;
      t.float_value = std::strtod(spelling.c_str(), nullptr);
    } else {
      t.kind = Token::Kind::kInt;
      unsigned long long v = std::strtoull(spelling.c_str(), nullptr, 0);
      if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX)) {
        return source_.Error(at, absl::StrCat("integer literal ", spelling, " is too large"));
      }
      t.int_value = static_cast<int64_t>(v);
    }
    tokens_.push_back(std::move(t));
    return absl::OkStatus();
  }

  absl::Status LexString(bool raw = false, Pos at = {}) {
    if (at.line == 0) at = Here();
    char quote = text_[pos_];
    bool triple = pos_ + 2 < text_.size() && text_[pos_ + 1] == quote && text_[pos_ + 2] == quote;
    Advance(triple ? 3 : 1);
    std::string value;
    while (true) {
      if (pos_ >= text_.size()) return source_.Error(at, "unterminated string literal");
      char c = text_[pos_];
      if (c == quote && (!triple || (pos_ + 2 < text_.size() && text_[pos_ + 1] == quote &&
                                     text_[pos_ + 2] == quote))) {
        Advance(triple ? 3 : 1);
        break;
      }
      if (c == '\n' && !triple) return source_.Error(at, "unterminated string literal");
      if (c == '\\' && !raw && pos_ + 1 < text_.size()) {
        char e = text_[pos_ + 1];
        Advance(2);
        switch (e) {
          case 'n':
            value += '\n';
            break;
          case 't':
            value += '\t';
            break;
          case 'r':
            value += '\r';
            break;
          case '0':
            value += '\0';
            break;
          case '\n':
            break;  // line continuation inside a string
          case 'x': {
            if (pos_ + 1 >= text_.size() ||
                !std::isxdigit(static_cast<unsigned char>(text_[pos_])) ||
                !std::isxdigit(static_cast<unsigned char>(text_[pos_ + 1]))) {
              return source_.Error(Here(), "malformed \\x escape");
            }
            value += static_cast<char>(
                std::strtol(std::string(text_.substr(pos_, 2)).c_str(), nullptr, 16));
            Advance(2);
            break;
          }
          default:
            value += e;
            break;  // \\ \" \' and the rest literally
        }
        continue;
      }
      value += c;
      Advance(1);
    }
    Emit(Token::Kind::kString, std::move(value), at);
    return absl::OkStatus();
  }

  absl::Status LexOperator() {
    static const char* kTwo[] = {"**", "//", "==", "!=", "<=", ">=", "->"};
    Pos at = Here();
    for (const char* op : kTwo) {
      if (text_.substr(pos_, 2) == op) {
        Advance(2);
        Emit(Token::Kind::kOp, op, at);
        return absl::OkStatus();
      }
    }
    char c = text_[pos_];
    static const std::string kOne = "+-*/%<>=()[]{},:.@";
    if (kOne.find(c) == std::string::npos) {
      return source_.Error(at, absl::StrCat("unexpected character ", DescribeCharacter(pos_)));
    }
    if (c == '(' || c == '[' || c == '{') ++depth_;
    if ((c == ')' || c == ']' || c == '}') && depth_ > 0) --depth_;
    Advance(1);
    Emit(Token::Kind::kOp, std::string(1, c), at);
    return absl::OkStatus();
  }

  const Source& source_;
  absl::string_view text_;
  size_t pos_ = 0;
  int line_, col_;
  bool single_expression_;
  int depth_ = 0;
  std::vector<int> indents_;
  std::vector<Token> tokens_;
};

}  // namespace

absl::StatusOr<std::vector<Token>> Lex(const Source& source, absl::string_view text, Pos origin,
                                       bool single_expression) {
  return Lexer(source, text, origin, single_expression).Run();
}

}  // namespace kiln::script
