#include "compiler/script/printer.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/ir/relax_functor.h"
#include "compiler/ir/tir_functor.h"
#include "compiler/script/metadata.h"
#include "compiler/script/printer_impl.h"
#include "compiler/script/script_common.h"

namespace kiln::script {
namespace printer {

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c >= 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

bool IsLiteral(const PrimExpr& e) { return e.as<IntImmNode>() || e.as<FloatImmNode>(); }

int Precedence(NodeKind k) {
  switch (k) {
    case NodeKind::kOr:
      return kPrecOr;
    case NodeKind::kAnd:
      return kPrecAnd;
    case NodeKind::kAdd:
    case NodeKind::kSub:
      return kPrecAdd;
    case NodeKind::kEQ:
    case NodeKind::kNE:
    case NodeKind::kLT:
    case NodeKind::kLE:
    case NodeKind::kGT:
    case NodeKind::kGE:
      return kPrecCmp;
    default:
      return kPrecMul;  // * / // %
  }
}

const char* InfixOp(NodeKind k, DataType dtype) {
  if (k == NodeKind::kDiv) return dtype.is_float() ? "/" : nullptr;
  return BinaryInfixSymbol(k);
}

std::string Printer::Print(const IRModule& mod) {
  Line(0, "# from tvm.script import ir as I");
  Line(0, "# from tvm.script import tir as T");
  Line(0, "# from tvm.script import relax as R");
  Line(0, "");
  Line(0, "@I.ir_module");
  Line(0, "class Module:");
  if (!mod->attrs.empty()) Line(1, absl::StrCat("I.module_attrs(", AttrDict(mod->attrs), ")"));
  bool first = true;
  for (const auto& [name, entry] : mod->functions) {
    if (!first) Line(0, "");
    first = false;
    namer_ = Namer();
    declared_.clear();
    if (const auto* f = entry.second.as<PrimFuncNode>()) {
      PrintPrimFunc(name, *f, 1);
    } else if (const auto* f = entry.second.as<relax::FunctionNode>()) {
      PrintRelaxFunction(name, *f, 1, /*global=*/true);
    }
  }
  if (metadata_.empty()) return out_;
  // The weights travel ahead of the module, in TVM's form (JSON quotes escaped as TVM does).
  std::string json = PrintTvmMetadata(metadata_);
  std::string escaped;
  for (char ch : json) {
    if (ch == '"' || ch == '\\') escaped += '\\';
    escaped += ch;
  }
  return absl::StrCat("metadata = tvm.ir.load_json(\"\"\"", escaped, "\"\"\")\n", out_);
}

void Printer::Line(int indent, const std::string& text) {
  if (!text.empty()) out_.append(static_cast<size_t>(indent) * 4, ' ');
  out_ += text;
  out_ += "\n";
}

std::string Printer::Lit(const PrimExpr& e, DataType hint) {
  if (const auto* i = e.as<IntImmNode>()) {
    if (i->dtype.is_bool()) return i->value ? "T.bool(True)" : "T.bool(False)";
    if (i->dtype == IntHint(hint)) return absl::StrCat(i->value);
    return absl::StrCat("T.", i->dtype.ToString(), "(", i->value, ")");
  }
  const auto* f = e.as<FloatImmNode>();
  if (std::isnan(f->value) || std::isinf(f->value)) {
    const char* text = std::isnan(f->value) ? "nan" : (f->value > 0 ? "inf" : "-inf");
    return absl::StrCat("T.", f->dtype.ToString(), "(\"", text, "\")");
  }
  if (f->dtype == FloatHint(hint)) return FloatRepr(f->value);
  return absl::StrCat("T.", f->dtype.ToString(), "(", FloatRepr(f->value), ")");
}

std::string Printer::AttrValue(const ObjectRef& v) {
  if (!v) return "None";
  if (const auto* s = v.as<StringImmNode>()) return Quote(s->value);
  if (v.as<IntImmNode>() || v.as<FloatImmNode>()) return Lit(v.as_ref<PrimExprNode>(), DataType());
  if (const auto* a = v.as<ArrayNode>()) {
    std::vector<std::string> items;
    for (const ObjectRef& item : a->items) items.push_back(AttrValue(item));
    return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
  }
  if (const auto* d = v.as<DictAttrNode>()) return AttrDict(d->entries);
  if (auto e = v.as_ref<PrimExprNode>()) return Expr(e);
  return "None";
}

std::string Printer::AttrDict(const Attrs& attrs) {
  std::vector<std::string> parts;
  for (const auto& [key, value] : attrs)
    parts.push_back(absl::StrCat(Quote(key), ": ", AttrValue(value)));
  return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
}
}  // namespace printer

std::string PrintScript(const ir::IRModule& mod) {
  if (!mod) return "";
  return printer::Printer().Print(mod);
}

}  // namespace kiln::script
