// Einsum with one or two operands and no ellipsis or diagonals: the forms attention and linear
// layers are written in ("bhqd,bhkd->bhqk", "bij,bjk->bik", "bsd,hd->bsh", "ij->ji").
//
// Two operands become one batched matmul: letters only one side uses and the output does not
// are summed away first; the rest are grouped as batch (both sides and the output), left (A
// and the output), contracted (both sides, not the output) and right (B and the output). A is
// permuted to [batch, left, contracted] and B to [batch, contracted, right], groups of several
// letters are reshaped into one dimension, and the product is reshaped and permuted to the
// output's order.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compiler/frontend/onnx/convert_context.h"
#include "runtime/support/status_macros.h"

namespace kiln::frontend::onnx_import {
namespace {

using ir::relax::MakeShape;

// An operand during the rewrite: its expression, letters and their extents.
struct Operand {
  Expr expr;
  std::string letters;
  std::vector<PrimExpr> dims;
};

bool Has(const std::string& s, char c) { return s.find(c) != std::string::npos; }

bool SameShape(Context& ctx, const std::vector<PrimExpr>& a, const std::vector<PrimExpr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    if (!ctx.analyzer()->CanProveEqual(a[k], b[k])) return false;
  }
  return true;
}

// Sums `op` over the letters neither `other` nor `out` uses.
absl::Status SumUnused(Context& ctx, Operand& op, const std::string& other,
                       const std::string& out) {
  std::vector<int64_t> axes;
  std::string kept;
  std::vector<PrimExpr> dims;
  for (size_t k = 0; k < op.letters.size(); ++k) {
    char c = op.letters[k];
    if (!Has(other, c) && !Has(out, c)) {
      axes.push_back(static_cast<int64_t>(k));
    } else {
      kept += c;
      dims.push_back(op.dims[k]);
    }
  }
  if (axes.empty()) return absl::OkStatus();
  KILN_ASSIGN_OR_RETURN(op.expr, ctx.Call("relax.sum", {op.expr},
                                          {{"axis", IntsAttr(axes)}, {"keepdims", IntAttr(0)}}));
  op.letters = kept;
  op.dims = dims;
  return absl::OkStatus();
}

// Permutes `op` so its letters read `order`.
absl::Status PermuteTo(Context& ctx, Operand& op, const std::string& order) {
  if (op.letters == order) return absl::OkStatus();
  std::vector<int64_t> axes;
  std::vector<PrimExpr> dims;
  for (char c : order) {
    size_t k = op.letters.find(c);
    axes.push_back(static_cast<int64_t>(k));
    dims.push_back(op.dims[k]);
  }
  KILN_ASSIGN_OR_RETURN(op.expr,
                        ctx.Call("relax.permute_dims", {op.expr}, {{"axes", IntsAttr(axes)}}));
  op.letters = order;
  op.dims = dims;
  return absl::OkStatus();
}

absl::StatusOr<Expr> ReshapeIfNeeded(Context& ctx, const Expr& e, const std::vector<PrimExpr>& from,
                                     const std::vector<PrimExpr>& to) {
  if (SameShape(ctx, from, to)) return e;
  return ctx.Call("relax.reshape", {e, MakeShape(to)});
}

absl::StatusOr<Outputs> Einsum(Context& ctx) {
  std::string equation;
  for (char c : ctx.Str("equation", "")) {
    if (c != ' ') equation += c;
  }
  if (equation.find("...") != std::string::npos) return ctx.Unsupported("Einsum with an ellipsis");
  std::vector<std::string> sides = absl::StrSplit(equation, "->");
  std::vector<std::string> inputs = absl::StrSplit(sides[0], ',');
  if (sides.size() > 2 || inputs.size() != ctx.num_inputs())
    return ctx.Error(
        absl::StrCat("equation \"", equation, "\" does not match ", ctx.num_inputs(), " inputs"));
  if (inputs.size() > 2) return ctx.Unsupported("Einsum of more than two operands");
  std::string out;
  if (sides.size() == 2) {
    out = sides[1];
  } else {  // implicit output: letters used once, alphabetically
    std::string all = absl::StrJoin(inputs, "");
    for (char c : all) {
      if (std::count(all.begin(), all.end(), c) == 1) out += c;
    }
    std::sort(out.begin(), out.end());
  }
  std::map<char, PrimExpr> extent;
  std::vector<Operand> ops;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Operand op;
    KILN_ASSIGN_OR_RETURN(op.expr, ctx.Tensor(i));
    KILN_ASSIGN_OR_RETURN(op.dims, ctx.Shape(op.expr));
    op.letters = inputs[i];
    if (op.letters.size() != op.dims.size()) {
      return ctx.Error(absl::StrCat("operand ", i, " has rank ", op.dims.size(), " but \"",
                                    op.letters, "\" names ", op.letters.size(), " axes"));
    }
    for (size_t k = 0; k < op.letters.size(); ++k) {
      char c = op.letters[k];
      if (!std::isalpha(static_cast<unsigned char>(c)))
        return ctx.Error(absl::StrCat("bad subscript '", std::string(1, c), "'"));
      if (op.letters.find(c) != k) return ctx.Unsupported("Einsum with a repeated subscript");
      auto [it, fresh] = extent.emplace(c, op.dims[k]);
      if (!fresh && !ctx.analyzer()->CanProveEqual(it->second, op.dims[k])) {
        return ctx.Error(absl::StrCat("subscript '", std::string(1, c), "' has extents ",
                                      ir::DebugPrint(it->second), " and ",
                                      ir::DebugPrint(op.dims[k])));
      }
    }
    ops.push_back(std::move(op));
  }
  for (char c : out) {
    if (!extent.count(c))
      return ctx.Error(absl::StrCat("output subscript '", std::string(1, c), "' is no input's"));
  }
  if (ops.size() == 1) {
    KILN_RETURN_IF_ERROR(SumUnused(ctx, ops[0], "", out));
    KILN_RETURN_IF_ERROR(PermuteTo(ctx, ops[0], out));
    Value v;
    v.expr = ops[0].expr;
    return Outputs{std::move(v)};
  }
  Operand& a = ops[0];
  Operand& b = ops[1];
  KILN_RETURN_IF_ERROR(SumUnused(ctx, a, b.letters, out));
  KILN_RETURN_IF_ERROR(SumUnused(ctx, b, a.letters, out));
  std::string batch, left, contract, right;
  for (char c : out) {
    if (Has(a.letters, c) && Has(b.letters, c)) batch += c;
  }
  for (char c : a.letters) {
    if (Has(b.letters, c) && !Has(out, c)) contract += c;
    if (!Has(b.letters, c)) left += c;
  }
  for (char c : b.letters) {
    if (!Has(a.letters, c)) right += c;
  }
  KILN_RETURN_IF_ERROR(PermuteTo(ctx, a, batch + left + contract));
  KILN_RETURN_IF_ERROR(PermuteTo(ctx, b, batch + contract + right));
  auto product = [&](const std::string& letters) {
    PrimExpr p = ir::IntImm(DataType::Int(64), 1);
    for (char c : letters) p = p * extent[c];
    return ctx.analyzer()->Simplify(p);
  };
  std::vector<PrimExpr> batch_dims;
  for (char c : batch) batch_dims.push_back(extent[c]);
  auto with_batch = [&](std::vector<PrimExpr> tail) {
    std::vector<PrimExpr> dims = batch_dims;
    dims.insert(dims.end(), tail.begin(), tail.end());
    return dims;
  };
  KILN_ASSIGN_OR_RETURN(Expr lhs, ReshapeIfNeeded(ctx, a.expr, a.dims,
                                                  with_batch({product(left), product(contract)})));
  KILN_ASSIGN_OR_RETURN(Expr rhs, ReshapeIfNeeded(ctx, b.expr, b.dims,
                                                  with_batch({product(contract), product(right)})));
  KILN_ASSIGN_OR_RETURN(Expr y, ctx.Call("relax.matmul", {lhs, rhs}));
  Operand result;
  result.letters = batch + left + right;
  result.dims = batch_dims;
  for (char c : left + right) result.dims.push_back(extent[c]);
  KILN_ASSIGN_OR_RETURN(
      result.expr,
      ReshapeIfNeeded(ctx, y, with_batch({product(left), product(right)}), result.dims));
  KILN_RETURN_IF_ERROR(PermuteTo(ctx, result, out));
  Value v;
  v.expr = result.expr;
  return Outputs{std::move(v)};
}

}  // namespace

void RegisterEinsumConverter(ConverterTable* table) { (*table)["Einsum"] = Einsum; }

}  // namespace kiln::frontend::onnx_import
