// Malformed TVMScript: each input fails with the expected `file:line:col: message`, and the
// message shows the offending line with a caret.
#include <string>

#include "absl/strings/str_split.h"
#include "compiler/script/script_parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kiln::script {
namespace {

using ::testing::HasSubstr;

struct ErrorCase {
  const char* name;
  std::string text;
  const char* where;    // "line:col"
  const char* message;  // a substring of the message
};

// A module header, so that cases can start at line 3.
std::string Repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

std::string Module(const std::string& body) { return "@I.ir_module\nclass Module:\n" + body; }
std::string Prim(const std::string& body) {
  return Module("    @T.prim_func\n    def f(A: T.Buffer((8,), \"float32\")):\n" + body);
}
std::string Rfunc(const std::string& body) {
  return Module("    @R.function\n    def main(x: R.Tensor((8,), dtype=\"float32\")):\n" + body);
}

class ScriptErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ScriptErrorTest, ReportsLocationAndMessage) {
  const ErrorCase& c = GetParam();
  absl::StatusOr<ir::IRModule> mod = ParseScript(c.text, "bad.py");
  ASSERT_FALSE(mod.ok()) << c.name << " parsed";
  std::string message(mod.status().message());
  EXPECT_EQ(mod.status().code(), absl::StatusCode::kInvalidArgument);
  std::string first_line = message.substr(0, message.find('\n'));
  EXPECT_THAT(first_line, HasSubstr(absl::StrCat("bad.py:", c.where, ": "))) << message;
  EXPECT_THAT(first_line, HasSubstr(c.message)) << message;
  // The offending line is quoted, with a caret under the column.
  std::vector<std::string> lines = absl::StrSplit(message, '\n');
  ASSERT_GE(lines.size(), 3u) << message;
  EXPECT_NE(lines[2].find('^'), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, ScriptErrorTest,
    ::testing::Values(
        ErrorCase{"unterminated_string", "x = \"abc\n", "1:5", "unterminated string literal"},
        ErrorCase{"bad_unindent", "if a:\n        b\n    c\n", "3:5", "unindent does not match"},
        ErrorCase{"bad_character", "x = 1 $ 2\n", "1:7", "unexpected character '$'"},
        // Issue 52, finding 6: half of 'é' made the message invalid UTF-8, and the job INTERNAL.
        ErrorCase{"non_ascii_character", "x = 1 + \xc3\xa9\n", "1:9",
                  "unexpected character '\xc3\xa9' (U+00E9)"},
        ErrorCase{"stray_byte", "x = 1 + \xa9\n", "1:9",
                  "unexpected character byte 0xA9 (not UTF-8)"},
        ErrorCase{"missing_colon", "def f()\n    pass\n", "1:8", "expected ':'"},
        ErrorCase{"missing_paren", "x = f(1, 2\ny = 3\n", "1:6", "'(' was never closed"},
        ErrorCase{"bad_separator", "x = f(1 2)\n", "1:9", "expected ',' or ')', found '2'"},
        ErrorCase{"bad_exponent", "x = 1e+\n", "1:8", "missing exponent digits"},
        ErrorCase{"huge_integer", "x = 99999999999999999999\n", "1:5", "is too large"},
        ErrorCase{"chained_compare", "x = a < b < c\n", "1:11", "chained comparisons"},
        ErrorCase{"keyword_then_positional", "x = f(a=1, 2)\n", "1:12",
                  "positional argument follows"},
        // Parentheses make the parser recurse; an operator chain grows in a loop: both are
        // refused at the first level past ir::kMaxNestingDepth (20,000), where it is.
        ErrorCase{"too_deep",
                  "x = " + std::string(25000, '(') + "1" + std::string(25000, ')') + "\n",
                  "1:20004", "nesting is too deep"},
        ErrorCase{"too_long_chain", "x = a" + Repeat(" + a", 30000) + "\n", "1:80003",
                  "nesting is too deep"},
        ErrorCase{"too_long_call_chain", "x = f" + Repeat("(1)", 30000) + "\n", "1:5",
                  "nesting is too deep"},
        ErrorCase{"too_long_elif", "if a:\n    pass\n" + Repeat("elif a:\n    pass\n", 30000),
                  "39999:6", "nesting is too deep"},
        ErrorCase{"no_module", "x = 1\n", "1:1", "expected an @I.ir_module class"},
        ErrorCase{"undecorated_class", "class Module:\n    pass\n", "1:1",
                  "needs the @I.ir_module decorator"},
        ErrorCase{"undecorated_function", Module("    def f():\n        pass\n"), "3:5",
                  "needs @T.prim_func or @R.function"},
        ErrorCase{"duplicate_function",
                  Module("    @R.function\n    def f():\n        return x\n    @R.function\n    "
                         "def f():\n        return x\n"),
                  "7:5", "'f' is defined twice"},
        ErrorCase{
            "unknown_dtype",
            Module(
                "    @T.prim_func\n    def f(A: T.Buffer((8,), \"float33\")):\n        A[0] = 1\n"),
            "4:29", "unknown dtype \"float33\""},
        ErrorCase{"undefined_name", Prim("        A[i] = T.float32(0)\n"), "5:11",
                  "undefined name 'i'"},
        ErrorCase{"unknown_tir_function", Prim("        A[0] = T.frobnicate(1)\n"), "5:16",
                  "unknown TIR function 'T.frobnicate'"},
        ErrorCase{
            "dtype_mismatch",
            Prim("        for i in range(8):\n            A[i + T.int64(1)] = T.float32(0)\n"),
            "6:17", "different dtypes (int32 and int64)"},
        ErrorCase{"literal_overflow", Prim("        A[T.int8(300)] = T.float32(0)\n"), "5:18",
                  "does not fit int8"},
        ErrorCase{"grid_arity",
                  Prim("        for i, j in T.grid(8):\n            A[i] = T.float32(0)\n"), "5:21",
                  "T.grid has 1 extents for 2 loop variables"},
        ErrorCase{
            "bool_loop_extent",
            Prim("        for i, j in T.grid(8, 12 >= 8):\n            A[i] = T.float32(0)\n"),
            "5:34", "a loop bound or axis domain must be an integer, got bool"},
        ErrorCase{
            "float_loop_bound",
            Prim("        for i in T.serial(T.float32(0), 8):\n            A[i] = T.float32(0)\n"),
            "5:27", "must be an integer, got float32"},
        ErrorCase{"unknown_loop_kind",
                  Prim("        for i in T.sequential(8):\n            A[i] = T.float32(0)\n"),
                  "5:18", "expected range, T.grid"},
        ErrorCase{"remap_non_loop",
                  Prim("        for i in range(8):\n            with T.block(\"b\"):\n             "
                       "   vi = T.axis.remap(\"S\", [A])\n"
                       "                A[vi] = T.float32(0)\n"),
                  "7:41", "'A' is not a TIR variable"},
        ErrorCase{"store_to_scalar", Prim("        x = T.float32(0)\n"), "5:9",
                  "expected a buffer store"},
        // TVM's implicit root block: its buffers come in the header, before the loops.
        ErrorCase{"root_buffer_undefined_size",
                  Prim("        T.func_attr({\"tir.noalias\": T.bool(True)})\n"
                       "        # with T.block(\"root\"):\n"
                       "        pad = T.alloc_buffer((m, 10))\n"
                       "        A[0] = pad[0, 0]\n"),
                  "7:31", "undefined name 'm'"},
        ErrorCase{"root_buffer_after_the_loops",
                  Prim("        for i in range(8):\n            A[i] = T.float32(0)\n"
                       "        pad = T.alloc_buffer((8,))\n"),
                  "7:9", "expected a buffer store"},
        ErrorCase{"declaration_of_a_non_type",
                  Prim("        n, m = T.int64(), T.frobnicate()\n        A[0] = T.float32(0)\n"),
                  "5:9", "expected a buffer store"},
        ErrorCase{"zero_dim_index_of_a_vector", Prim("        A[()] = T.float32(0)\n"), "5:9",
                  "A has 1 dimensions"},
        ErrorCase{"effect_statement_unknown_op",
                  Rfunc("        R.frobnicate(x)\n        return x\n"), "5:9",
                  "unknown operator 'R.frobnicate'"},
        ErrorCase{"unknown_operator", Rfunc("        y = R.frobnicate(x)\n        return y\n"),
                  "5:13", "unknown operator 'R.frobnicate'"},
        ErrorCase{"unknown_global", Rfunc("        y = cls.nowhere(x)\n        return y\n"), "5:13",
                  "no function 'nowhere' in the module"},
        ErrorCase{"output_not_last",
                  Rfunc("        with R.dataflow():\n            R.output(y)\n            y = "
                        "R.exp(x)\n        return y\n"),
                  "6:13", "R.output must end the dataflow block"},
        ErrorCase{"if_without_else", Rfunc("        if x:\n            y = x\n        return y\n"),
                  "5:9", "needs an else branch"},
        ErrorCase{"branches_differ",
                  Rfunc("        if x:\n            y = x\n        else:\n            z = x\n      "
                        "  return y\n"),
                  "8:13", "both branches must assign the same variable"},
        ErrorCase{"no_return", Rfunc("        y = R.exp(x)\n"), "4:5",
                  "the function has no return"},
        ErrorCase{
            "ragged_constant",
            Rfunc("        c = R.const([[1.0, 2.0], [3.0]], \"float32\")\n        return c\n"),
            "5:34", "ragged constant"},
        ErrorCase{"tuple_index_not_literal",
                  Rfunc("        t = (x, x)\n        y = t[x]\n        return y\n"), "6:13",
                  "a tuple index must be an integer literal"},
        ErrorCase{"quoted_dim_in_body",
                  Rfunc("        y: R.Tensor((\"n\",), dtype=\"float32\") = x\n        return y\n"),
                  "5:22", "a quoted dimension is only allowed in a signature"},
        ErrorCase{"bad_signature_dim",
                  Module("    @R.function\n    def main(x: R.Tensor((\"n +\",), "
                         "dtype=\"float32\")):\n        return x\n"),
                  "4:31", "expected an expression"},
        // TVM's printed forms, each with a deliberate error.
        ErrorCase{"remap_unknown_kind",
                  Prim("        for i in range(8):\n            with T.block(\"b\"):\n             "
                       "   vi = T.axis.remap(\"X\", [i])\n"
                       "                A[vi] = T.float32(0)\n"),
                  "7:35", "kind 'X' is neither S (spatial) nor R (reduce)"},
        ErrorCase{"spatial_without_value",
                  Prim("        for i in range(8):\n            with T.block(\"b\"):\n             "
                       "   vi = T.axis.spatial(8)\n"
                       "                A[vi] = T.float32(0)\n"),
                  "7:17", "use: v = T.axis.spatial(dom, value)"},
        ErrorCase{"init_with_arguments",
                  Prim("        for i in range(8):\n            with T.block(\"b\"):\n             "
                       "   vi = T.axis.reduce(8, i)\n                with T.init(1):\n"
                       "                    A[0] = T.float32(0)\n"
                       "                A[0] = A[0] + T.float32(1)\n"),
                  "8:22", "T.init takes 0 arguments"},
        ErrorCase{"reads_of_a_variable",
                  Prim("        for i in range(8):\n            with T.block(\"b\"):\n             "
                       "   vi = T.axis.spatial(8, i)\n                T.reads(vi)\n"
                       "                A[vi] = T.float32(0)\n"),
                  "8:25", "expected a buffer region"},
        ErrorCase{"block_attr_not_a_dict",
                  Prim("        for i in range(8):\n            with T.block(\"b\"):\n             "
                       "   vi = T.axis.spatial(8, i)\n                T.block_attr(\"rule\")\n"
                       "                A[vi] = T.float32(0)\n"),
                  "8:30", "expected a dict of attributes"},
        ErrorCase{"math_intrinsic_arity", Prim("        A[0] = T.exp(A[0], A[1])\n"), "5:16",
                  "T.exp takes 1 argument"},
        ErrorCase{"if_then_else_arity", Prim("        A[0] = T.if_then_else(A[0] < A[1], A[0])\n"),
                  "5:16", "T.if_then_else takes 3 arguments"},
        ErrorCase{"cast_to_unknown_dtype", Prim("        A[0] = T.Cast(\"int99\", A[1])\n"), "5:23",
                  "unknown dtype \"int99\""},
        ErrorCase{
            "global_symbol_not_a_string",
            Prim("        T.func_attr({\"global_symbol\": 3})\n        A[0] = T.float32(0)\n"),
            "5:39", "global_symbol must be a string"},
        ErrorCase{"prim_value_of_a_string",
                  Rfunc("        p = R.prim_value(\"one\")\n        return x\n"), "5:26",
                  "R.prim_value holds a number, not a string"},
        ErrorCase{"tuple_get_item_index",
                  Rfunc("        t = (x, x)\n        y = R.TupleGetItem(t, x)\n        return y\n"),
                  "6:31", "R.TupleGetItem: the index must be a non-negative integer literal"},
        ErrorCase{"shape_not_a_list", Rfunc("        s = R.shape(8)\n        return x\n"), "5:13",
                  "use: R.shape([d0, d1, ...])"},
        ErrorCase{"call_tir_without_out_sinfo",
                  Rfunc("        y = R.call_tir(cls.f, (x,))\n        return y\n"), "5:13",
                  "use: R.call_tir(func, (args...), out_sinfo=...)"},
        ErrorCase{"call_dps_packed_name",
                  Rfunc("        y = R.call_dps_packed(f, (x,), out_sinfo=R.Tensor((8,), "
                        "dtype=\"float32\"))\n        return y\n"),
                  "5:13", "R.call_dps_packed: argument 1 must be a string"},
        ErrorCase{"func_attr_not_a_dict", Rfunc("        R.func_attr(3)\n        return x\n"),
                  "5:21", "expected a dict of attributes"},
        ErrorCase{"module_attrs_not_a_dict",
                  "@I.ir_module\nclass Module:\n    I.module_attrs(\"llvm\")\n", "3:20",
                  "expected a dict of attributes"},
        ErrorCase{
            "metadata_index_out_of_range",
            "metadata = tvm.ir.load_json(\"\"\"{\"root\": 1, \"nodes\": [{\"type_key\": \"\"}, "
            "{\"type_key\": \"Map\", \"keys\": [], \"data\": []}], \"b64ndarrays\": [], "
            "\"attrs\": {\"tvm_version\": \"0.20.0\"}}\"\"\")\n" +
                Rfunc("        y = R.add(x, metadata[\"relax.expr.Constant\"][0])\n"
                      "        return y\n"),
            "6:54", "out of range"},
        ErrorCase{"match_cast_nested",
                  Rfunc("        y = R.exp(R.match_cast(x, R.Tensor((8,), dtype=\"float32\")))\n   "
                        "     return y\n"),
                  "5:19", "R.match_cast must be the whole right-hand side"}),
    [](const ::testing::TestParamInfo<ErrorCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace kiln::script
