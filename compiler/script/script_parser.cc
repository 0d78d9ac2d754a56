#include "compiler/script/script_parser.h"

#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "compiler/ir/structural.h"
#include "compiler/relax/op_registry.h"
#include "compiler/relax/struct_info.h"
#include "compiler/script/metadata.h"
#include "compiler/script/parser_builder.h"
#include "compiler/script/python_parser.h"
#include "compiler/script/script_common.h"
#include "runtime/support/large_stack.h"

namespace kiln::script {
namespace parser {

std::string Dotted(const PyExpr* e) {
  if (e == nullptr) return "";
  if (e->kind == K::kName) return e->text;
  if (e->kind == K::kAttribute && !e->args.empty()) {
    std::string base = Dotted(e->args[0].get());
    return base.empty() ? "" : absl::StrCat(base, ".", e->text);
  }
  return "";
}
std::string CalleeName(const PyExpr& e) {
  return e.kind == K::kCall && !e.args.empty() ? Dotted(e.args[0].get()) : "";
}
const PyExpr* Keyword(const PyExpr& call, const char* key) {
  for (const auto& [k, v] : call.keywords) {
    if (k == key) return v.get();
  }
  return nullptr;
}
bool IsBareLiteral(const PyExpr& e) { return e.kind == K::kInt || e.kind == K::kFloat; }

absl::StatusOr<IRModule> Builder::Module(const PyBody& file) {
  const PyStmt* cls = nullptr;
  for (const PyStmtPtr& s : file) {
    if (s->kind == PyStmt::Kind::kClass) {
      if (cls != nullptr) return src_.Error(s->pos, "only one module class is supported");
      cls = s.get();
      continue;
    }
    if (s->kind == PyStmt::Kind::kAssign && s->target && s->target->kind == K::kName &&
        s->target->text == "metadata") {
      const PyExpr& call = *s->value;
      if (CalleeName(call) != "tvm.ir.load_json" || call.args.size() != 2 ||
          call.args[1]->kind != K::kString) {
        return src_.Error(s->value->pos, "expected metadata = tvm.ir.load_json(\"\"\"...\"\"\")");
      }
      absl::StatusOr<std::vector<relax::Expr>> constants = ParseTvmMetadata(call.args[1]->text);
      if (!constants.ok()) return src_.Error(call.args[1]->pos, constants.status().message());
      metadata_ = *std::move(constants);
      has_metadata_ = true;
      continue;
    }
    return src_.Error(s->pos, "expected an @I.ir_module class");
  }
  if (cls == nullptr) return src_.Error({1, 1}, "no @I.ir_module class in the input");
  bool decorated = false;
  for (const PyExprPtr& d : cls->decorators) decorated |= Dotted(d.get()) == "I.ir_module";
  if (!decorated) return src_.Error(cls->pos, "the module class needs the @I.ir_module decorator");
  // Every function name first, so that cls.f resolves in any order.
  for (const PyStmtPtr& s : cls->body) {
    if (s->kind == PyStmt::Kind::kFunction) {
      if (globals_.count(s->name) > 0)
        return src_.Error(s->pos, absl::StrCat("function '", s->name, "' is defined twice"));
      globals_[s->name] = relax::MakeGlobalVar(s->name);
    }
  }
  IRModuleBuilder builder;
  for (const PyStmtPtr& s : cls->body) {
    if (s->kind == PyStmt::Kind::kPass) continue;
    if (s->kind == PyStmt::Kind::kExpr && CalleeName(*s->value) == "I.module_attrs") {
      if (s->value->args.size() != 2) return src_.Error(s->pos, "I.module_attrs takes one dict");
      Attrs attrs = AttrDict(*s->value->args[1]);
      for (auto& [k, v] : attrs) builder.SetAttr(k, v);
      if (!ok()) return error_;
      continue;
    }
    if (s->kind != PyStmt::Kind::kFunction) {
      return src_.Error(s->pos, "expected a function definition or I.module_attrs in the module");
    }
    ObjectRef func = Function(*s);
    if (!ok()) return error_;
    absl::Status added = builder.Add(globals_.at(s->name), func);
    if (!added.ok()) return src_.Error(s->pos, added.message());
  }
  return builder.Build();
}

ObjectRef Builder::Lookup(const std::string& name) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto found = it->find(name);
    if (found != it->end()) return found->second;
  }
  return nullptr;
}

DataType Builder::ParseDType(const PyExpr& e) {
  if (e.kind != K::kString)
    return Fail<DataType>(e.pos, "expected a dtype string such as \"float32\"");
  absl::StatusOr<DataType> dtype = DataType::Parse(e.text);
  if (!dtype.ok()) return Fail<DataType>(e.pos, absl::StrCat("unknown dtype \"", e.text, "\""));
  return *dtype;
}

PrimExpr Builder::IntLiteral(const PyExpr& e, DataType dtype) {
  if (dtype.is_bool()) {
    if (e.int_value != 0 && e.int_value != 1)
      return Fail<PrimExpr>(e.pos, "a bool literal must be 0 or 1");
    return IntImm(dtype, e.int_value);
  }
  int bits = dtype.bits();
  if (bits < 64) {
    int64_t lo = dtype.is_int() ? -(int64_t{1} << (bits - 1)) : 0;
    int64_t hi = dtype.is_int() ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
    if (e.int_value < lo || e.int_value > hi) {
      return Fail<PrimExpr>(
          e.pos, absl::StrCat("literal ", e.int_value, " does not fit ", dtype.ToString()));
    }
  }
  return IntImm(dtype, e.int_value);
}

// `T.float32(0.5)`, `T.int64(3)`, `T.bool(True)`, `T.float32("inf")`; a non-literal is a cast.
PrimExpr Builder::TypedLiteral(const PyExpr& call, DataType dtype) {
  if (call.args.size() != 2 || !call.keywords.empty()) {
    return Fail<PrimExpr>(call.pos, absl::StrCat("T.", dtype.ToString(), " takes one value"));
  }
  const PyExpr& v = *call.args[1];
  if (v.kind == K::kBool)
    return dtype.is_bool() ? IntImm(dtype, v.int_value)
                           : Fail<PrimExpr>(v.pos, "True/False need T.bool");
  if (v.kind == K::kInt) {
    if (dtype.is_float()) return FloatImm(dtype, static_cast<double>(v.int_value));
    return IntLiteral(v, dtype);
  }
  if (v.kind == K::kFloat) {
    if (!dtype.is_float())
      return Fail<PrimExpr>(v.pos, absl::StrCat("a float literal for ", dtype.ToString()));
    return FloatImm(dtype, v.float_value);
  }
  if (v.kind == K::kString && dtype.is_float()) {
    double value = v.text == "inf"    ? HUGE_VAL
                   : v.text == "-inf" ? -HUGE_VAL
                   : v.text == "nan"  ? NAN
                                      : 0;
    if (value == 0) return Fail<PrimExpr>(v.pos, "expected \"inf\", \"-inf\" or \"nan\"");
    return FloatImm(dtype, value);
  }
  PrimExpr value = Expr(v, DataType());
  return value ? Cast(dtype, value) : nullptr;
}

ObjectRef Builder::AttrValue(const PyExpr& e) {
  switch (e.kind) {
    case K::kString:
      return Make<StringImmNode>(e.text);
    case K::kList:
    case K::kTuple: {
      std::vector<ObjectRef> items;
      for (const PyExprPtr& item : e.args) items.push_back(AttrValue(*item));
      return Make<ArrayNode>(std::move(items));
    }
    case K::kNone:
      return nullptr;
    case K::kDict:
      return Make<DictAttrNode>(AttrDict(e));
    default:
      return Expr(e, DataType());
  }
}

Attrs Builder::AttrDict(const PyExpr& e) {
  Attrs attrs;
  if (e.kind != K::kDict) return Fail<Attrs>(e.pos, "expected a dict of attributes");
  for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
    if (e.args[i]->kind != K::kString)
      return Fail<Attrs>(e.args[i]->pos, "attribute keys are strings");
    // A function's exported name: checked here, where the text can say where it went wrong.
    if (e.args[i]->text == "global_symbol" && e.args[i + 1]->kind != K::kString)
      return Fail<Attrs>(e.args[i + 1]->pos, "global_symbol must be a string");
    attrs = WithAttr(std::move(attrs), e.args[i]->text, AttrValue(*e.args[i + 1]));
  }
  return attrs;
}

// `n = T.int64()` / `T.int64(is_size_var=True)` at the top of a function.
namespace {

// `T.int64()` / `T.int32(is_size_var=True)`: the declared dtype, or void.
DataType DeclaredDType(const PyExpr& value) {
  std::string fn = CalleeName(value);
  if (!absl::StartsWith(fn, "T.") || value.args.size() != 1) return DataType();
  absl::StatusOr<DataType> dtype = DataType::Parse(fn.substr(2));
  return dtype.ok() ? *dtype : DataType();
}

}  // namespace

bool Builder::IsDeclaration(const PyStmt& s) {
  if (s.kind != PyStmt::Kind::kAssign || s.annotation || !s.target) return false;
  if (s.target->kind == K::kName) return !DeclaredDType(*s.value).is_void();
  // TVM's printer declares several at once: `n, m = T.int64(), T.int64()`.
  if (s.target->kind != K::kTuple || s.value->kind != K::kTuple ||
      s.target->args.size() != s.value->args.size()) {
    return false;
  }
  for (size_t k = 0; k < s.target->args.size(); ++k) {
    if (s.target->args[k]->kind != K::kName || DeclaredDType(*s.value->args[k]).is_void())
      return false;
  }
  return true;
}

void Builder::Declare(const PyStmt& s) {
  auto one = [&](const PyExpr& name, const PyExpr& value) {
    DataType dtype = DeclaredDType(value);
    const PyExpr* size = Keyword(value, "is_size_var");
    bool is_size = size != nullptr && size->kind == K::kBool && size->int_value != 0;
    Define(name.text, is_size ? MakeSizeVar(name.text, dtype) : MakeVar(name.text, dtype));
  };
  if (s.target->kind == K::kName) return one(*s.target, *s.value);
  for (size_t k = 0; k < s.target->args.size(); ++k) one(*s.target->args[k], *s.value->args[k]);
}

size_t Builder::Declarations(const PyBody& body) {
  size_t i = 0;
  for (; i < body.size() && IsDeclaration(*body[i]); ++i) Declare(*body[i]);
  return i;
}

// Decorator flags: @T.prim_func / @R.function(private=True, pure=False).
bool Builder::Decorated(const PyStmt& def, const char* name, bool* is_private, bool* is_pure) {
  for (const PyExprPtr& d : def.decorators) {
    std::string dn = d->kind == K::kCall ? CalleeName(*d) : Dotted(d.get());
    if (dn != name) continue;
    if (d->kind == K::kCall) {
      for (const auto& [key, value] : d->keywords) {
        bool flag = value->kind == K::kBool && value->int_value != 0;
        if (key == "private") {
          *is_private = flag;
        } else if (key == "pure") {
          *is_pure = flag;
        } else {
          Fail(value->pos, absl::StrCat("unknown decorator argument '", key, "'"));
        }
      }
    }
    return true;
  }
  return false;
}

ObjectRef Builder::Function(const PyStmt& def) {
  bool is_private = false, is_pure = true;
  if (Decorated(def, "T.prim_func", &is_private, &is_pure)) return PrimFunction(def, is_private);
  if (Decorated(def, "R.function", &is_private, &is_pure))
    return RelaxFunction(def, is_private, is_pure, /*global=*/true);
  return Fail(def.pos, "a module function needs @T.prim_func or @R.function");
}

Attrs Builder::WithSymbol(Attrs attrs, const std::string& name, bool is_private) {
  if (is_private || GetAttr(attrs, "global_symbol")) return attrs;
  return WithAttr(std::move(attrs), "global_symbol", Make<StringImmNode>(name));
}
}  // namespace parser

absl::StatusOr<ir::IRModule> ParseScript(absl::string_view text, const std::string& filename) {
  // The parser and the builder recurse once per level of nesting, up to ir::kMaxNestingDepth.
  absl::StatusOr<ir::IRModule> result;
  runtime::RunWithStack(runtime::kCompilerStackBytes, [&] {
    Source source(filename, std::string(text));
    absl::StatusOr<PyBody> file = ParsePython(source);
    result = file.ok() ? parser::Builder(source).Module(*file) : file.status();
    return 0;
  });
  return result;
}

}  // namespace kiln::script
