// ONNX operators whose shapes, axes, sizes or positions only the run knows (a graph input here;
// in exported models, Shape -> Gather -> Concat), and operators with semantics of their own
// (integer division, training-mode batch norm, optimizers, float16): imported, compiled for this
// machine and run against values computed here. Values that break a check stop the run with an
// error naming it, never a kernel reading past its input.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "compiler/backend/build.h"
#include "compiler/backend/testing/model_test_util.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/frontend/onnx/testing/onnx_builder.h"
#include "gtest/gtest.h"
#include "runtime/thread_pool.h"
#include "runtime/vm/vm.h"

namespace kiln::frontend {
namespace {

// Reshape, Expand, Unsqueeze and Squeeze by shapes and axes computed at run time (a graph input
// here; in exported models, Shape -> Gather -> Concat): the right result for values that hold, and
// an error naming the check, never a kernel reading past its input, for values that do not.
TEST(OnnxRunTimeOps, ShapesComputedAtRunTime) {
  using backend::testing::Array;
  using backend::testing::FromTensor;
  using backend::testing::Random;
  using backend::testing::ToTensor;
  testing::GraphBuilder reshape(14);
  reshape.Input("x", onnx::TensorProto::FLOAT, {2, 6})
      .Input("s", onnx::TensorProto::INT64, {3})
      .Output("y", onnx::TensorProto::FLOAT)
      .Node("Reshape", {"x", "s"}, {"y"});
  absl::StatusOr<ir::IRModule> mod = ImportOnnx(reshape.Serialize(), "reshape.onnx");
  ASSERT_TRUE(mod.ok()) << mod.status();
  const Array x = Random({2, 6}, 41);
  auto run = [&](const ir::IRModule& m, const Array& in, std::vector<double> shape) {
    Array s = backend::testing::Zeros({static_cast<int64_t>(shape.size())});
    s.data = std::move(shape);
    return backend::testing::CompileModuleAndRun(
        m, {runtime::Value(ToTensor(in)), runtime::Value(ToTensor(s, "int64"))});
  };
  // 0 copies the input's dimension 0, -1 takes what is left: (2, 3, 2), the same elements.
  absl::StatusOr<runtime::Value> y = run(*mod, x, {0, 3, -1});
  ASSERT_TRUE(y.ok()) << y.status();
  Array got = FromTensor(*y->as_tensor());
  EXPECT_EQ(got.shape, (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(got.data, x.data);
  // 5 x 2 x 1 holds 10 elements, not 12; (-2, -6, 1) holds 12 with negative dimensions.
  for (std::vector<double> bad : {std::vector<double>{5, -1, 1}, {-2, -6, 1}}) {
    absl::StatusOr<runtime::Value> refused = run(*mod, x, bad);
    ASSERT_FALSE(refused.ok()) << bad[0];
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
  }
  // Expand of (3, 1) to (2, 1, 4): (2, 3, 4).
  testing::GraphBuilder expand(13);
  expand.Input("x", onnx::TensorProto::FLOAT, {3, 1})
      .Input("s", onnx::TensorProto::INT64, {3})
      .Output("y", onnx::TensorProto::FLOAT)
      .Node("Expand", {"x", "s"}, {"y"});
  mod = ImportOnnx(expand.Serialize(), "expand.onnx");
  ASSERT_TRUE(mod.ok()) << mod.status();
  const Array column = Random({3, 1}, 42);
  y = run(*mod, column, {2, 1, 4});
  ASSERT_TRUE(y.ok()) << y.status();
  got = FromTensor(*y->as_tensor());
  ASSERT_EQ(got.shape, (std::vector<int64_t>{2, 3, 4}));
  for (int64_t i = 0; i < got.size(); ++i) EXPECT_EQ(got.data[i], column.data[(i / 4) % 3]) << i;
  EXPECT_FALSE(run(*mod, column, {2, 5, 4}).ok());  // 3 does not broadcast to 5
  // Unsqueeze of (2, 3) by axes (0, -1): (1, 2, 3, 1); Squeeze of (1, 3, 1) by (0, -1): (3).
  // Repeated axes, axes out of range and squeezing a dimension that is not 1 are refused.
  for (bool squeeze : {false, true}) {
    testing::GraphBuilder g(13);
    g.Input("x", onnx::TensorProto::FLOAT,
            squeeze ? std::vector<int64_t>{1, 3, 1} : std::vector<int64_t>{2, 3})
        .Input("s", onnx::TensorProto::INT64, {2})
        .Output("y", onnx::TensorProto::FLOAT)
        .Node(squeeze ? "Squeeze" : "Unsqueeze", {"x", "s"}, {"y"});
    mod = ImportOnnx(g.Serialize(), "axes.onnx");
    ASSERT_TRUE(mod.ok()) << mod.status();
    const Array in =
        Random(squeeze ? std::vector<int64_t>{1, 3, 1} : std::vector<int64_t>{2, 3}, 43);
    y = run(*mod, in, {0, -1});
    ASSERT_TRUE(y.ok()) << y.status();
    got = FromTensor(*y->as_tensor());
    const std::vector<int64_t> want =
        squeeze ? std::vector<int64_t>{3} : std::vector<int64_t>{1, 2, 3, 1};
    EXPECT_EQ(got.shape, want);
    EXPECT_EQ(got.data, in.data);
    EXPECT_FALSE(run(*mod, in, {1, 1}).ok()) << squeeze;  // repeated
    EXPECT_FALSE(run(*mod, in, {0, 7}).ok()) << squeeze;  // out of range
    if (squeeze) {
      EXPECT_FALSE(run(*mod, in, {0, 1}).ok());  // dimension 1 is 3
    }
  }
  // Tile of (2, 3) by (2, 1): (4, 3); a negative repeat is refused.
  testing::GraphBuilder tile(13);
  tile.Input("x", onnx::TensorProto::FLOAT, {2, 3})
      .Input("s", onnx::TensorProto::INT64, {2})
      .Output("y", onnx::TensorProto::FLOAT)
      .Node("Tile", {"x", "s"}, {"y"});
  mod = ImportOnnx(tile.Serialize(), "tile.onnx");
  ASSERT_TRUE(mod.ok()) << mod.status();
  const Array small = Random({2, 3}, 44);
  y = run(*mod, small, {2, 1});
  ASSERT_TRUE(y.ok()) << y.status();
  got = FromTensor(*y->as_tensor());
  ASSERT_EQ(got.shape, (std::vector<int64_t>{4, 3}));
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(got.data[i], small.data[i % 6]) << i;
  EXPECT_FALSE(run(*mod, small, {-1, 1}).ok());
}

// Slice by starts, ends, axes and steps all computed at run time: x[1:3, ::-2] of a (4, 5)
// tensor; a zero step and a repeated axis are refused. Split by sizes computed at run time.
TEST(OnnxRunTimeOps, SliceAndSplitComputedAtRunTime) {
  using backend::testing::Array;
  testing::GraphBuilder g(13);
  g.Input("x", onnx::TensorProto::FLOAT, {4, 5});
  for (const char* name : {"starts", "ends", "axes", "steps"})
    g.Input(name, onnx::TensorProto::INT64, {2});
  g.Output("y", onnx::TensorProto::FLOAT)
      .Node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
  absl::StatusOr<ir::IRModule> mod = ImportOnnx(g.Serialize(), "slice.onnx");
  ASSERT_TRUE(mod.ok()) << mod.status();
  const Array x = backend::testing::Random({4, 5}, 45);
  auto vec = [](std::vector<double> v) {
    Array a = backend::testing::Zeros({static_cast<int64_t>(v.size())});
    a.data = std::move(v);
    return runtime::Value(backend::testing::ToTensor(a, "int64"));
  };
  auto run = [&](std::vector<double> starts, std::vector<double> ends, std::vector<double> axes,
                 std::vector<double> steps) {
    return backend::testing::CompileModuleAndRun(
        *mod, {runtime::Value(backend::testing::ToTensor(x)), vec(starts), vec(ends), vec(axes),
               vec(steps)});
  };
  // Rows 1 and 2; columns 4, 2, 0 (from the end, stepping back by 2; -100 clamps to -1).
  absl::StatusOr<runtime::Value> y = run({1, -1}, {3, -100}, {0, 1}, {1, -2});
  ASSERT_TRUE(y.ok()) << y.status();
  const Array got = backend::testing::FromTensor(*y->as_tensor());
  ASSERT_EQ(got.shape, (std::vector<int64_t>{2, 3}));
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 3; ++c) EXPECT_EQ(got.data[r * 3 + c], x.data[(r + 1) * 5 + 4 - 2 * c]);
  }
  EXPECT_FALSE(run({0, 0}, {4, 5}, {0, 1}, {1, 0}).ok());   // a zero step
  EXPECT_FALSE(run({0, 0}, {4, 5}, {1, -1}, {1, 1}).ok());  // axis 1 twice

  // Split of the 5 columns into parts of sizes computed at run time: 2 and 3; sizes that do not
  // add up to 5, or are negative, are refused.
  testing::GraphBuilder split(13);
  split.Input("x", onnx::TensorProto::FLOAT, {4, 5})
      .Input("s", onnx::TensorProto::INT64, {2})
      .Output("a", onnx::TensorProto::FLOAT)
      .Output("b", onnx::TensorProto::FLOAT)
      .Node("Split", {"x", "s"}, {"a", "b"}, {testing::AttrInt("axis", 1)});
  mod = ImportOnnx(split.Serialize(), "split.onnx");
  ASSERT_TRUE(mod.ok()) << mod.status();
  auto run_split = [&](std::vector<double> sizes) {
    return backend::testing::CompileModuleAndRun(
        *mod, {runtime::Value(backend::testing::ToTensor(x)), vec(std::move(sizes))});
  };
  y = run_split({2, 3});
  ASSERT_TRUE(y.ok()) << y.status();
  const runtime::Tuple* parts = y->as_tuple();
  ASSERT_NE(parts, nullptr);
  ASSERT_EQ(parts->size(), 2u);
  const Array second = backend::testing::FromTensor(*(*parts)[1].as_tensor());
  ASSERT_EQ(second.shape, (std::vector<int64_t>{4, 3}));
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 3; ++c) EXPECT_EQ(second.data[r * 3 + c], x.data[r * 5 + 2 + c]);
  }
  EXPECT_FALSE(run_split({2, 2}).ok());
  EXPECT_FALSE(run_split({6, -1}).ok());
}

// ReduceSum over axes computed at run time, without keepdims: (2, 3, 4) over axes (0, -1) is
// (3); a repeated axis is refused.
TEST(OnnxRunTimeOps, ReduceSumOverAxesComputedAtRunTime) {
  using backend::testing::Array;
  testing::GraphBuilder g(13);
  g.Input("x", onnx::TensorProto::FLOAT, {2, 3, 4})
      .Input("axes", onnx::TensorProto::INT64, {2})
      .Output("y", onnx::TensorProto::FLOAT)
      .Node("ReduceSum", {"x", "axes"}, {"y"}, {testing::AttrInt("keepdims", 0)});
  absl::StatusOr<ir::IRModule> mod = ImportOnnx(g.Serialize(), "reduce.onnx");
  ASSERT_TRUE(mod.ok()) << mod.status();
  const Array x = backend::testing::Random({2, 3, 4}, 46);
  auto run = [&](std::vector<double> axes) {
    Array a = backend::testing::Zeros({2});
    a.data = std::move(axes);
    return backend::testing::CompileModuleAndRun(
        *mod, {runtime::Value(backend::testing::ToTensor(x)),
               runtime::Value(backend::testing::ToTensor(a, "int64"))});
  };
  absl::StatusOr<runtime::Value> y = run({0, -1});
  ASSERT_TRUE(y.ok()) << y.status();
  const Array got = backend::testing::FromTensor(*y->as_tensor());
  ASSERT_EQ(got.shape, (std::vector<int64_t>{3}));
  for (int j = 0; j < 3; ++j) {
    double want = 0;
    for (int i = 0; i < 2; ++i) {
      for (int l = 0; l < 4; ++l) want += x.data[i * 12 + j * 4 + l];
    }
    EXPECT_NEAR(got.data[j], want, 1e-5) << j;
  }
  EXPECT_FALSE(run({2, -1}).ok());  // axis 2 twice
}

// Pad by amounts computed at run time, in its three modes, on [1, 2, 3] padded by 2 before
// and 1 after; negative pads are refused.
TEST(OnnxRunTimeOps, PadComputedAtRunTime) {
  using backend::testing::Array;
  for (const char* mode : {"constant", "edge", "reflect"}) {
    testing::GraphBuilder g(13);
    onnx::AttributeProto mode_attr;
    mode_attr.set_name("mode");
    mode_attr.set_type(onnx::AttributeProto::STRING);
    mode_attr.set_s(mode);
    g.Input("x", onnx::TensorProto::FLOAT, {3})
        .Input("p", onnx::TensorProto::INT64, {2})
        .Output("y", onnx::TensorProto::FLOAT)
        .Node("Pad", {"x", "p"}, {"y"}, {mode_attr});
    absl::StatusOr<ir::IRModule> mod = ImportOnnx(g.Serialize(), "pad.onnx");
    ASSERT_TRUE(mod.ok()) << mod.status();
    Array x = backend::testing::Zeros({3});
    x.data = {1, 2, 3};
    auto run = [&](std::vector<double> pads) {
      Array p = backend::testing::Zeros({2});
      p.data = std::move(pads);
      return backend::testing::CompileModuleAndRun(
          *mod, {runtime::Value(backend::testing::ToTensor(x)),
                 runtime::Value(backend::testing::ToTensor(p, "int64"))});
    };
    absl::StatusOr<runtime::Value> y = run({2, 1});
    ASSERT_TRUE(y.ok()) << mode << ": " << y.status();
    const std::vector<double> want =
        std::string(mode) == "constant" ? std::vector<double>{0, 0, 1, 2, 3, 0}
        : std::string(mode) == "edge"   ? std::vector<double>{1, 1, 1, 2, 3, 3}
                                        : std::vector<double>{3, 2, 1, 2, 3, 2};
    EXPECT_EQ(backend::testing::FromTensor(*y->as_tensor()).data, want) << mode;
    EXPECT_FALSE(run({-1, 1}).ok()) << mode;
  }
}

// Swin-T's window padding: (7 - H % 7) % 7 from the input's shape, into Pad, then a Slice of the
// padded tensor. The Mods of known integers fold, so the padding and every shape after it are
// constants (the Mod stayed an unevaluated floor_mod, Pad's output got a symbolic extent and the
// Slice was refused: "axis 2 must have a static extent").
TEST(OnnxRunTimeOps, APaddingComputedFromAShapeIsAConstant) {
  using backend::testing::Array;
  testing::GraphBuilder g(13);
  g.Input("x", onnx::TensorProto::FLOAT, {1, 2, 10})
      .Output("y", onnx::TensorProto::FLOAT)
      .Init(testing::IntTensor("two", {1}, {2}))
      .Init(testing::IntTensor("seven", {}, {7}))
      .Init(testing::IntTensor("zeros", {5}, {0, 0, 0, 0, 0}))
      .Init(testing::IntTensor("start", {1}, {1}))
      .Init(testing::IntTensor("end", {1}, {12}))
      .Init(testing::IntTensor("axis", {1}, {2}))
      .Node("Shape", {"x"}, {"shape"})
      .Node("Gather", {"shape", "two"}, {"h"})
      .Node("Mod", {"h", "seven"}, {"r"})
      .Node("Sub", {"seven", "r"}, {"missing"})
      .Node("Mod", {"missing", "seven"}, {"pad"})
      .Node("Concat", {"zeros", "pad"}, {"pads"}, {testing::AttrInt("axis", 0)})
      .Node("Pad", {"x", "pads"}, {"padded"})
      .Node("Slice", {"padded", "start", "end", "axis"}, {"y"});
  absl::StatusOr<ir::IRModule> mod = ImportOnnx(g.Serialize(), "swin_padding.onnx");
  ASSERT_TRUE(mod.ok()) << mod.status();
  Array x = backend::testing::Random({1, 2, 10}, 7);
  absl::StatusOr<runtime::Value> y =
      backend::testing::CompileModuleAndRun(*mod, {runtime::Value(backend::testing::ToTensor(x))});
  ASSERT_TRUE(y.ok()) << y.status();
  // Padded to 14 (4 zeros at the end), then columns 1 .. 11.
  Array got = backend::testing::FromTensor(*y->as_tensor());
  EXPECT_EQ(got.shape, (std::vector<int64_t>{1, 2, 11}));
  for (int row = 0; row < 2; ++row) {
    for (int col = 0; col < 11; ++col) {
      const int src = col + 1;
      const double want = src < 10 ? x.data[row * 10 + src] : 0.0;
      EXPECT_EQ(got.data[row * 11 + col], want) << row << ", " << col;
    }
  }
}

// Slices of an axis whose extent only the run knows (a decoder's sequence, a padded window):
// constant bounds, clamped against the extent at run time; one artifact for every extent.
TEST(OnnxRunTimeOps, SlicesOfASymbolicExtent) {
  using backend::testing::Array;
  constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
  struct Case {
    int64_t start, end, step;
  };
  for (const Case& c :
       {Case{1, kEnd, 1}, Case{-2, kEnd, 1}, Case{0, -1, 2}, Case{-1, -kEnd, -1}, Case{2, 4, 1}}) {
    testing::GraphBuilder g(13);
    g.Input("x", onnx::TensorProto::FLOAT, {-1, 3}, {"N"})
        .Output("y", onnx::TensorProto::FLOAT)
        .Init(testing::IntTensor("starts", {1}, {c.start}))
        .Init(testing::IntTensor("ends", {1}, {c.end}))
        .Init(testing::IntTensor("axes", {1}, {0}))
        .Init(testing::IntTensor("steps", {1}, {c.step}))
        .Node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
    absl::StatusOr<ir::IRModule> mod = ImportOnnx(g.Serialize(), "slice.onnx");
    ASSERT_TRUE(mod.ok()) << mod.status();
    for (int64_t n : {5, 3, 1}) {
      Array x = backend::testing::Random({n, 3}, static_cast<uint64_t>(n));
      absl::StatusOr<runtime::Value> y = backend::testing::CompileModuleAndRun(
          *mod, {runtime::Value(backend::testing::ToTensor(x))});
      ASSERT_TRUE(y.ok()) << c.start << ":" << c.end << ":" << c.step << " at " << n << ": "
                          << y.status();
      // NumPy's x[start:end:step] along the rows.
      auto norm = [&](int64_t v, int64_t lo, int64_t hi) {
        if (v < 0) v += n;
        return std::min(std::max(v, lo), hi);
      };
      std::vector<double> want;
      if (c.step > 0) {
        for (int64_t r = norm(c.start, 0, n); r < norm(c.end, 0, n); r += c.step) {
          for (int k = 0; k < 3; ++k) want.push_back(x.data[r * 3 + k]);
        }
      } else {
        const int64_t last = c.end <= -n ? -1 : norm(c.end, -1, n - 1);
        for (int64_t r = norm(c.start, -1, n - 1); r > last; r += c.step) {
          for (int k = 0; k < 3; ++k) want.push_back(x.data[r * 3 + k]);
        }
      }
      Array got = backend::testing::FromTensor(*y->as_tensor());
      EXPECT_EQ(got.shape, (std::vector<int64_t>{static_cast<int64_t>(want.size() / 3), 3}))
          << c.start << ":" << c.end << ":" << c.step << " at " << n;
      EXPECT_EQ(got.data, want) << c.start << ":" << c.end << ":" << c.step << " at " << n;
    }
  }
}

// A decoder's positions and causal mask from its sequence length, a symbolic dimension used as
// data: Range(0, S) has extent S (so it lines up with the input), and the mask compares
// positions. One artifact for every length.
TEST(OnnxRunTimeOps, PositionsAndACausalMaskFromTheSequenceLength) {
  using backend::testing::Array;
  testing::GraphBuilder g(13);
  g.Input("x", onnx::TensorProto::FLOAT, {-1, -1}, {"S", "S"})
      .Output("y", onnx::TensorProto::FLOAT)
      .Init(testing::IntTensor("zero", {}, {0}))
      .Init(testing::IntTensor("one", {}, {1}))
      .Init(testing::IntTensor("axis0", {1}, {0}))
      .Init(testing::IntTensor("axis1", {1}, {1}))
      .Init(testing::FloatTensor("big", {}, {-1000.0f}))
      .Init(testing::FloatTensor("nothing", {}, {0.0f}))
      .Node("Shape", {"x"}, {"shape"})
      .Node("Gather", {"shape", "zero"}, {"s"})
      .Node("Range", {"zero", "s", "one"}, {"pos"})
      .Node("Unsqueeze", {"pos", "axis1"}, {"rows"})
      .Node("Unsqueeze", {"pos", "axis0"}, {"cols"})
      .Node("Less", {"rows", "cols"}, {"future"})
      .Node("Where", {"future", "big", "nothing"}, {"mask"})
      .Node("Cast", {"rows"}, {"rows_f"}, {testing::AttrInt("to", onnx::TensorProto::FLOAT)})
      .Node("Add", {"x", "mask"}, {"masked"})
      .Node("Add", {"masked", "rows_f"}, {"y"});
  absl::StatusOr<ir::IRModule> mod = ImportOnnx(g.Serialize(), "causal.onnx");
  ASSERT_TRUE(mod.ok()) << mod.status();
  for (int64_t s : {4, 1, 6}) {
    Array x = backend::testing::Random({s, s}, static_cast<uint64_t>(s));
    absl::StatusOr<runtime::Value> y = backend::testing::CompileModuleAndRun(
        *mod, {runtime::Value(backend::testing::ToTensor(x))});
    ASSERT_TRUE(y.ok()) << "S = " << s << ": " << y.status();
    Array got = backend::testing::FromTensor(*y->as_tensor());
    ASSERT_EQ(got.shape, (std::vector<int64_t>{s, s}));
    for (int64_t r = 0; r < s; ++r) {
      for (int64_t c = 0; c < s; ++c) {
        const double want =
            static_cast<double>(static_cast<float>(static_cast<float>(x.data[r * s + c]) +
                                                   (r < c ? -1000.0f : 0.0f))) +
            static_cast<double>(r);
        EXPECT_FLOAT_EQ(got.data[r * s + c], want) << "S = " << s << " at " << r << ", " << c;
      }
    }
  }
}

// With a cache: the new tokens' positions are Range(past, past + S), past and S both symbolic
// (the cache's length and the input's), and their extent is S.
TEST(OnnxRunTimeOps, PositionsAfterACacheOfSymbolicLength) {
  using backend::testing::Array;
  testing::GraphBuilder g(13);
  g.Input("x", onnx::TensorProto::FLOAT, {-1}, {"S"})
      .Input("past_key", onnx::TensorProto::FLOAT, {-1, 2}, {"P"})
      .Output("y", onnx::TensorProto::FLOAT)
      .Init(testing::IntTensor("zero", {}, {0}))
      .Init(testing::IntTensor("one", {}, {1}))
      .Node("Shape", {"x"}, {"xs"})
      .Node("Gather", {"xs", "zero"}, {"s"})
      .Node("Shape", {"past_key"}, {"ps"})
      .Node("Gather", {"ps", "zero"}, {"past"})
      .Node("Add", {"past", "s"}, {"end"})
      .Node("Range", {"past", "end", "one"}, {"pos"})
      .Node("Cast", {"pos"}, {"pos_f"}, {testing::AttrInt("to", onnx::TensorProto::FLOAT)})
      .Node("Add", {"x", "pos_f"}, {"y"});
  absl::StatusOr<ir::IRModule> mod = ImportOnnx(g.Serialize(), "cached_positions.onnx");
  ASSERT_TRUE(mod.ok()) << mod.status();
  for (auto [s, p] : {std::pair<int64_t, int64_t>{3, 5}, {1, 0}, {4, 1}}) {
    Array x = backend::testing::Random({s}, 3);
    Array past = backend::testing::Random({p, 2}, 4);
    absl::StatusOr<runtime::Value> y = backend::testing::CompileModuleAndRun(
        *mod, {runtime::Value(backend::testing::ToTensor(x)),
               runtime::Value(backend::testing::ToTensor(past))});
    ASSERT_TRUE(y.ok()) << "S = " << s << ", past = " << p << ": " << y.status();
    Array got = backend::testing::FromTensor(*y->as_tensor());
    ASSERT_EQ(got.shape, (std::vector<int64_t>{s}));
    for (int64_t k = 0; k < s; ++k) {
      EXPECT_FLOAT_EQ(got.data[k], static_cast<float>(x.data[k]) + static_cast<float>(p + k));
    }
  }
}

// Resize by scales or sizes that only the run knows, against the same resize with constants;
// sizes that would change N or C, or empty the image, stop the run. Upsample (opset 9) alike.
TEST(OnnxRunTimeOps, ResizeComputedAtRunTime) {
  using backend::testing::Array;
  using backend::testing::FromTensor;
  using backend::testing::ToTensor;
  Array x = backend::testing::Zeros({1, 1, 2, 3});
  x.data = {1, 2, 3, 4, 5, 6};
  auto vector = [](std::vector<double> v, const char* dtype) {
    Array a = backend::testing::Zeros({static_cast<int64_t>(v.size())});
    a.data = std::move(v);
    return runtime::Value(ToTensor(a, dtype));
  };
  auto run_graph = [&](testing::GraphBuilder& g, std::vector<runtime::Value> inputs) {
    absl::StatusOr<ir::IRModule> mod = ImportOnnx(g.Serialize(), "resize.onnx");
    EXPECT_TRUE(mod.ok()) << mod.status();
    if (!mod.ok()) return absl::StatusOr<runtime::Value>(mod.status());
    inputs.insert(inputs.begin(), runtime::Value(ToTensor(x)));
    return backend::testing::CompileModuleAndRun(*mod, inputs);
  };
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    SCOPED_TRACE(mode);
    const std::vector<double> scales = {1, 1, 1.5, 0.7};
    // The reference: the same scales as a constant.
    testing::GraphBuilder fixed(13);
    fixed.Input("x", onnx::TensorProto::FLOAT, {1, 1, 2, 3})
        .Output("y", onnx::TensorProto::FLOAT)
        .Init(testing::FloatTensor("s", {4}, {1, 1, 1.5f, 0.7f}))
        .Node("Resize", {"x", "", "s"}, {"y"}, {testing::AttrString("mode", mode)});
    absl::StatusOr<runtime::Value> want = run_graph(fixed, {});
    ASSERT_TRUE(want.ok()) << want.status();
    testing::GraphBuilder by_scales(13);
    by_scales.Input("x", onnx::TensorProto::FLOAT, {1, 1, 2, 3})
        .Input("s", onnx::TensorProto::FLOAT, {4})
        .Output("y", onnx::TensorProto::FLOAT)
        .Node("Resize", {"x", "", "s"}, {"y"}, {testing::AttrString("mode", mode)});
    absl::StatusOr<runtime::Value> got = run_graph(by_scales, {vector(scales, "float32")});
    ASSERT_TRUE(got.ok()) << got.status();
    Array w = FromTensor(*want->as_tensor()), g = FromTensor(*got->as_tensor());
    EXPECT_EQ(g.shape, (std::vector<int64_t>{1, 1, 3, 2}));
    ASSERT_EQ(g.data.size(), w.data.size());
    for (size_t i = 0; i < w.data.size(); ++i) EXPECT_NEAR(g.data[i], w.data[i], 1e-5) << i;
    // By sizes: the same output size, scales taken as output / input.
    testing::GraphBuilder by_sizes(13);
    by_sizes.Input("x", onnx::TensorProto::FLOAT, {1, 1, 2, 3})
        .Input("n", onnx::TensorProto::INT64, {4})
        .Output("y", onnx::TensorProto::FLOAT)
        .Node("Resize", {"x", "", "", "n"}, {"y"}, {testing::AttrString("mode", mode)});
    absl::StatusOr<runtime::Value> sized = run_graph(by_sizes, {vector({1, 1, 4, 6}, "int64")});
    ASSERT_TRUE(sized.ok()) << sized.status();
    EXPECT_EQ(FromTensor(*sized->as_tensor()).shape, (std::vector<int64_t>{1, 1, 4, 6}));
    EXPECT_FALSE(run_graph(by_sizes, {vector({1, 2, 4, 6}, "int64")}).ok());  // C changed
    EXPECT_FALSE(run_graph(by_sizes, {vector({1, 1, 0, 6}, "int64")}).ok());  // empty
  }
  testing::GraphBuilder upsample(9);
  upsample.Input("x", onnx::TensorProto::FLOAT, {1, 1, 2, 3})
      .Input("s", onnx::TensorProto::FLOAT, {4})
      .Output("y", onnx::TensorProto::FLOAT)
      .Node("Upsample", {"x", "s"}, {"y"});
  absl::StatusOr<runtime::Value> up = run_graph(upsample, {vector({1, 1, 2, 2}, "float32")});
  ASSERT_TRUE(up.ok()) << up.status();
  EXPECT_EQ(FromTensor(*up->as_tensor()).data,
            (std::vector<double>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3,  //
                                 4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6}));
}

// Integer Div of run-time tensors truncates toward zero, as ONNX says (not floor division), and a
// zero divisor gives 0 instead of a trap.
TEST(OnnxRunTimeOps, IntegerDivTruncates) {
  using backend::testing::Array;
  testing::GraphBuilder g(14);
  g.Input("a", onnx::TensorProto::INT32, {4})
      .Input("b", onnx::TensorProto::INT32, {4})
      .Output("y", onnx::TensorProto::INT32)
      .Node("Div", {"a", "b"}, {"y"});
  absl::StatusOr<ir::IRModule> mod = ImportOnnx(g.Serialize(), "div.onnx");
  ASSERT_TRUE(mod.ok()) << mod.status();
  Array a = backend::testing::Zeros({4}), b = backend::testing::Zeros({4});
  a.data = {-7, 7, -7, 5};
  b.data = {2, -2, -2, 0};
  absl::StatusOr<runtime::Value> y = backend::testing::CompileModuleAndRun(
      *mod, {runtime::Value(backend::testing::ToTensor(a, "int32")),
             runtime::Value(backend::testing::ToTensor(b, "int32"))});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(backend::testing::FromTensor(*y->as_tensor()).data,
            (std::vector<double>{-3, -3, 3, 0}));
}

// BatchNormalization in training mode: normalized by the batch's statistics (over N and the
// spatial axes), the running mean and variance updated with the momentum.
TEST(OnnxRunTimeOps, BatchNormTrainingMode) {
  using backend::testing::Array;
  using backend::testing::FromTensor;
  using backend::testing::ToTensor;
  testing::GraphBuilder g(15);
  g.Input("x", onnx::TensorProto::FLOAT, {2, 2, 1, 2})
      .Output("y", onnx::TensorProto::FLOAT)
      .Output("m", onnx::TensorProto::FLOAT)
      .Output("v", onnx::TensorProto::FLOAT)
      .Init(testing::FloatTensor("scale", {2}, {1, 2}))
      .Init(testing::FloatTensor("bias", {2}, {0, 1}))
      .Init(testing::FloatTensor("mean", {2}, {0.5, -0.5}))
      .Init(testing::FloatTensor("var", {2}, {1, 4}))
      .Node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y", "m", "v"},
            {testing::AttrInt("training_mode", 1), testing::AttrFloat("momentum", 0.8f),
             testing::AttrFloat("epsilon", 1e-5f)});
  absl::StatusOr<ir::IRModule> mod = ImportOnnx(g.Serialize(), "bn.onnx");
  ASSERT_TRUE(mod.ok()) << mod.status();
  Array x = backend::testing::Zeros({2, 2, 1, 2});
  x.data = {1, 3, 10, 20, 5, 7, 30, 40};  // channel 0: 1 3 5 7; channel 1: 10 20 30 40
  absl::StatusOr<runtime::Value> out =
      backend::testing::CompileModuleAndRun(*mod, {runtime::Value(ToTensor(x))});
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<runtime::Value>& fields = *out->as_tuple();
  ASSERT_EQ(fields.size(), 3u);
  const double batch_mean[2] = {4, 25}, batch_var[2] = {5, 125};  // population variance
  const double scale[2] = {1, 2}, bias[2] = {0, 1}, mean[2] = {0.5, -0.5}, var[2] = {1, 4};
  std::vector<double> y = FromTensor(*fields[0].as_tensor()).data;
  for (size_t i = 0; i < y.size(); ++i) {
    const int c = static_cast<int>(i / 2) % 2;
    EXPECT_NEAR(y[i],
                (x.data[i] - batch_mean[c]) / std::sqrt(batch_var[c] + 1e-5) * scale[c] + bias[c],
                1e-4)
        << i;
  }
  std::vector<double> m = FromTensor(*fields[1].as_tensor()).data;
  std::vector<double> v = FromTensor(*fields[2].as_tensor()).data;
  for (int c = 0; c < 2; ++c) {
    EXPECT_NEAR(m[c], mean[c] * 0.8 + batch_mean[c] * 0.2, 1e-4);
    EXPECT_NEAR(v[c], var[c] * 0.8 + batch_var[c] * 0.2, 1e-3);
  }
}

// TopK with K known only at run time: ties go to the lower index, smallest first when
// largest=0, and a K past the axis stops the run.
TEST(OnnxRunTimeOps, TopKComputedAtRunTime) {
  using backend::testing::Array;
  using backend::testing::FromTensor;
  using backend::testing::ToTensor;
  for (int largest : {1, 0}) {
    testing::GraphBuilder g(11);
    g.Input("x", onnx::TensorProto::FLOAT, {1, 4})
        .Input("k", onnx::TensorProto::INT64, {1})
        .Output("values", onnx::TensorProto::FLOAT)
        .Output("indices", onnx::TensorProto::INT64)
        .Node("TopK", {"x", "k"}, {"values", "indices"}, {testing::AttrInt("largest", largest)});
    absl::StatusOr<ir::IRModule> mod = ImportOnnx(g.Serialize(), "topk.onnx");
    ASSERT_TRUE(mod.ok()) << mod.status();
    Array x = backend::testing::Zeros({1, 4});
    x.data = {3, 1, 3, 2};
    auto run = [&](double k) {
      Array kk = backend::testing::Zeros({1});
      kk.data = {k};
      return backend::testing::CompileModuleAndRun(
          *mod, {runtime::Value(ToTensor(x)), runtime::Value(ToTensor(kk, "int64"))});
    };
    absl::StatusOr<runtime::Value> out = run(3);
    ASSERT_TRUE(out.ok()) << out.status();
    const std::vector<runtime::Value>& fields = *out->as_tuple();
    EXPECT_EQ(FromTensor(*fields[0].as_tensor()).data,
              largest ? std::vector<double>({3, 3, 2}) : std::vector<double>({1, 2, 3}));
    EXPECT_EQ(FromTensor(*fields[1].as_tensor()).data,
              largest ? std::vector<double>({0, 2, 3}) : std::vector<double>({1, 3, 0}));
    EXPECT_FALSE(run(5).ok());
  }
}

// Sequences: built, inserted into and read at positions known only at run time (a position out
// of range stops the run), stacked, and split with their count known.
TEST(OnnxRunTimeOps, SequencesWithPositionsComputedAtRunTime) {
  using backend::testing::Array;
  using backend::testing::FromTensor;
  using backend::testing::ToTensor;
  testing::GraphBuilder g(12);
  g.Input("a", onnx::TensorProto::FLOAT, {2})
      .Input("b", onnx::TensorProto::FLOAT, {2})
      .Input("c", onnx::TensorProto::FLOAT, {2})
      .Input("insert_at", onnx::TensorProto::INT64, {})
      .Input("read_at", onnx::TensorProto::INT64, {})
      .Output("picked", onnx::TensorProto::FLOAT)
      .Output("stacked", onnx::TensorProto::FLOAT)
      .Output("count", onnx::TensorProto::INT64)
      .Node("SequenceConstruct", {"a", "b"}, {"s1"})
      .Node("SequenceInsert", {"s1", "c", "insert_at"}, {"s2"})
      .Node("SequenceAt", {"s2", "read_at"}, {"picked"})
      .Node("ConcatFromSequence", {"s2"}, {"stacked"},
            {testing::AttrInt("axis", 0), testing::AttrInt("new_axis", 1)})
      .Node("SplitToSequence", {"stacked"}, {"rows"},
            {testing::AttrInt("axis", 1), testing::AttrInt("keepdims", 0)})
      .Node("SequenceLength", {"rows"}, {"count"});
  absl::StatusOr<ir::IRModule> mod = ImportOnnx(g.Serialize(), "sequence.onnx");
  ASSERT_TRUE(mod.ok()) << mod.status();
  auto vec = [](std::vector<double> v) {
    Array a = backend::testing::Zeros({2});
    a.data = std::move(v);
    return runtime::Value(ToTensor(a));
  };
  auto scalar = [](double v) {
    Array a = backend::testing::Zeros({});
    a.data = {v};
    return runtime::Value(ToTensor(a, "int64"));
  };
  auto run = [&](double insert_at, double read_at) {
    return backend::testing::CompileModuleAndRun(
        *mod, {vec({1, 2}), vec({3, 4}), vec({5, 6}), scalar(insert_at), scalar(read_at)});
  };
  // c inserted at -1 (before the last, as Python's list.insert): the sequence is a, c, b.
  absl::StatusOr<runtime::Value> out = run(-1, 1);
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<runtime::Value>& fields = *out->as_tuple();
  EXPECT_EQ(FromTensor(*fields[0].as_tensor()).data, (std::vector<double>{5, 6}));
  EXPECT_EQ(FromTensor(*fields[1].as_tensor()).data, (std::vector<double>{1, 2, 5, 6, 3, 4}));
  EXPECT_EQ(FromTensor(*fields[2].as_tensor()).data, (std::vector<double>{2}));
  EXPECT_FALSE(run(3, 0).ok());  // inserting past the end
  EXPECT_FALSE(run(0, 3).ok());  // reading past the end
}

// The training domain's optimizers (a model importing only that domain), one step each, against
// ONNX's formulas computed here in double: Adagrad over two tensors, Nesterov momentum, and Adam
// with its bias correction (T = 2) and a post-update decay.
TEST(OnnxRunTimeOps, TrainingOptimizers) {
  using backend::testing::Array;
  using backend::testing::FromTensor;
  using backend::testing::ToTensor;
  auto tensor = [](std::vector<double> v) {
    Array a = backend::testing::Zeros({static_cast<int64_t>(v.size())});
    a.data = std::move(v);
    return runtime::Value(ToTensor(a));
  };
  auto scalar = [](double v, const char* dtype) {
    Array a = backend::testing::Zeros({});
    a.data = {v};
    return runtime::Value(ToTensor(a, dtype));
  };
  // One node of the training domain over R, T and `tensors` float [2] inputs.
  auto run = [&](const std::string& op, const std::vector<std::string>& tensors, int outputs,
                 const std::vector<onnx::AttributeProto>& attrs, double r, double t,
                 const std::vector<std::vector<double>>& values) {
    testing::GraphBuilder g(17);
    g.Input("R", onnx::TensorProto::FLOAT, {}).Input("T", onnx::TensorProto::INT64, {});
    for (const std::string& name : tensors) g.Input(name, onnx::TensorProto::FLOAT, {2});
    std::vector<std::string> inputs = {"R", "T"}, outs;
    inputs.insert(inputs.end(), tensors.begin(), tensors.end());
    for (int k = 0; k < outputs; ++k) {
      outs.push_back(absl::StrCat("out", k));
      g.Output(outs.back(), onnx::TensorProto::FLOAT);
    }
    g.Node(op, inputs, outs, attrs);
    onnx::ModelProto model = g.model();
    model.mutable_graph()->mutable_node(0)->set_domain("ai.onnx.preview.training");
    model.clear_opset_import();
    onnx::OperatorSetIdProto* training = model.add_opset_import();
    training->set_domain("ai.onnx.preview.training");
    training->set_version(1);
    absl::StatusOr<ir::IRModule> mod = ImportOnnx(model.SerializeAsString(), "train.onnx");
    EXPECT_TRUE(mod.ok()) << mod.status();
    std::vector<runtime::Value> args = {scalar(r, "float32"), scalar(t, "int64")};
    for (const std::vector<double>& v : values) args.push_back(tensor(v));
    absl::StatusOr<runtime::Value> out = mod.ok()
                                             ? backend::testing::CompileModuleAndRun(*mod, args)
                                             : absl::StatusOr<runtime::Value>(mod.status());
    EXPECT_TRUE(out.ok()) << out.status();
    std::vector<std::vector<double>> results;
    if (!out.ok()) return results;
    for (const runtime::Value& field : *out->as_tuple()) {
      results.push_back(FromTensor(*field.as_tensor()).data);
    }
    return results;
  };
  auto expect_near = [](const std::vector<double>& got, const std::vector<double>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
  };
  {  // Adagrad over two tensors: outputs X1', X2', H1', H2'.
    const double r = 0.1, t = 3, decay = 0.1, eps = 1e-6, norm = 0.01;
    std::vector<std::vector<double>> x = {{1, 2}, {-1, 0.5}}, g = {{0.1, -0.2}, {0.3, 0.4}},
                                     h = {{0.5, 1}, {2, 0.25}};
    std::vector<std::vector<double>> out =
        run("Adagrad", {"X1", "X2", "G1", "G2", "H1", "H2"}, 4,
            {testing::AttrFloat("decay_factor", decay), testing::AttrFloat("epsilon", eps),
             testing::AttrFloat("norm_coefficient", norm)},
            r, t, {x[0], x[1], g[0], g[1], h[0], h[1]});
    ASSERT_EQ(out.size(), 4u);
    for (int k = 0; k < 2; ++k) {
      std::vector<double> x_new, h_new;
      for (int i = 0; i < 2; ++i) {
        const double reg = norm * x[k][i] + g[k][i], hn = h[k][i] + reg * reg;
        h_new.push_back(hn);
        x_new.push_back(x[k][i] - r / (1 + t * decay) * reg / (std::sqrt(hn) + eps));
      }
      expect_near(out[k], x_new);
      expect_near(out[2 + k], h_new);
    }
  }
  {  // Nesterov momentum at T = 0: beta does not apply yet.
    const double r = 0.1, alpha = 0.9, beta = 0.5, norm = 0.0;
    std::vector<double> x = {1, 2}, g = {0.5, -1}, v = {0.2, 0.1};
    std::vector<std::vector<double>> out =
        run("Momentum", {"X", "G", "V"}, 2,
            {testing::AttrFloat("alpha", alpha), testing::AttrFloat("beta", beta),
             testing::AttrFloat("norm_coefficient", norm), testing::AttrString("mode", "nesterov")},
            r, 0, {x, g, v});
    ASSERT_EQ(out.size(), 2u);
    std::vector<double> x_new, v_new;
    for (int i = 0; i < 2; ++i) {
      const double vn = alpha * v[i] + 1.0 * g[i];
      v_new.push_back(vn);
      x_new.push_back(x[i] - r * (g[i] + alpha * vn));
    }
    expect_near(out[0], x_new);
    expect_near(out[1], v_new);
  }
  {  // Adam at T = 2 with norm_coefficient_post.
    const double r = 0.1, t = 2, alpha = 0.9, beta = 0.99, eps = 1e-3, norm = 0.01, post = 0.1;
    std::vector<double> x = {1, -2}, g = {0.3, 0.2}, v = {0.1, -0.1}, h = {0.05, 0.02};
    std::vector<std::vector<double>> out =
        run("Adam", {"X", "G", "V", "H"}, 3,
            {testing::AttrFloat("alpha", alpha), testing::AttrFloat("beta", beta),
             testing::AttrFloat("epsilon", eps), testing::AttrFloat("norm_coefficient", norm),
             testing::AttrFloat("norm_coefficient_post", post)},
            r, t, {x, g, v, h});
    ASSERT_EQ(out.size(), 3u);
    std::vector<double> x_new, v_new, h_new;
    const double rate = r * std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t));
    for (int i = 0; i < 2; ++i) {
      const double reg = norm * x[i] + g[i];
      const double vn = alpha * v[i] + (1 - alpha) * reg, hn = beta * h[i] + (1 - beta) * reg * reg;
      v_new.push_back(vn);
      h_new.push_back(hn);
      x_new.push_back((1 - post) * (x[i] - rate * vn / (std::sqrt(hn) + eps)));
    }
    expect_near(out[0], x_new);
    expect_near(out[1], v_new);
    expect_near(out[2], h_new);
  }
}

// Range, OneHot's depth and a window's size computed at run time; a zero step, a depth of 0
// and a negative size are refused.
TEST(OnnxRunTimeOps, LengthsComputedAtRunTime) {
  using backend::testing::Array;
  using backend::testing::FromTensor;
  using backend::testing::ToTensor;
  auto scalar = [](double v) {
    Array a = backend::testing::Zeros({});
    a.data = {v};
    return runtime::Value(ToTensor(a, "int64"));
  };
  testing::GraphBuilder range(11);
  range.Input("a", onnx::TensorProto::INT64, {})
      .Input("b", onnx::TensorProto::INT64, {})
      .Input("c", onnx::TensorProto::INT64, {})
      .Output("y", onnx::TensorProto::INT64)
      .Node("Range", {"a", "b", "c"}, {"y"});
  absl::StatusOr<ir::IRModule> mod = ImportOnnx(range.Serialize(), "range.onnx");
  ASSERT_TRUE(mod.ok()) << mod.status();
  absl::StatusOr<runtime::Value> y =
      backend::testing::CompileModuleAndRun(*mod, {scalar(10), scalar(1), scalar(-4)});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(FromTensor(*y->as_tensor()).data, (std::vector<double>{10, 6, 2}));
  EXPECT_FALSE(backend::testing::CompileModuleAndRun(*mod, {scalar(0), scalar(5), scalar(0)}).ok());

  testing::GraphBuilder one_hot(11);
  Array values = backend::testing::Zeros({2});
  values.data = {0, 1};
  one_hot.Input("i", onnx::TensorProto::INT64, {3})
      .Input("d", onnx::TensorProto::INT64, {})
      .Input("v", onnx::TensorProto::FLOAT, {2})
      .Output("y", onnx::TensorProto::FLOAT)
      .Node("OneHot", {"i", "d", "v"}, {"y"});
  mod = ImportOnnx(one_hot.Serialize(), "one_hot.onnx");
  ASSERT_TRUE(mod.ok()) << mod.status();
  Array indices = backend::testing::Zeros({3});
  indices.data = {0, 2, -1};
  auto run_one_hot = [&](double depth) {
    return backend::testing::CompileModuleAndRun(
        *mod, {runtime::Value(ToTensor(indices, "int64")), scalar(depth),
               runtime::Value(ToTensor(values))});
  };
  y = run_one_hot(4);
  ASSERT_TRUE(y.ok()) << y.status();
  Array got = FromTensor(*y->as_tensor());
  EXPECT_EQ(got.shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(got.data, (std::vector<double>{1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
  EXPECT_FALSE(run_one_hot(0).ok());

  testing::GraphBuilder window(17);
  window.Input("n", onnx::TensorProto::INT64, {})
      .Output("y", onnx::TensorProto::FLOAT)
      .Node("HannWindow", {"n"}, {"y"});
  mod = ImportOnnx(window.Serialize(), "window.onnx");
  ASSERT_TRUE(mod.ok()) << mod.status();
  y = backend::testing::CompileModuleAndRun(*mod, {scalar(4)});
  ASSERT_TRUE(y.ok()) << y.status();
  got = FromTensor(*y->as_tensor());
  ASSERT_EQ(got.shape, (std::vector<int64_t>{4}));
  const double want[] = {0, 0.5, 1, 0.5};  // periodic: 0.5 - 0.5 cos(2 pi k / 4)
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(got.data[k], want[k], 1e-6) << k;
  EXPECT_FALSE(backend::testing::CompileModuleAndRun(*mod, {scalar(-3)}).ok());
}

// float16 in, through operators that make float16 constants of their own (Clip's bounds given
// as float16 bit patterns in int32_data, LeakyRelu's alpha), and out as float32.
TEST(OnnxRunTimeOps, Float16) {
  auto half = [](const std::string& name, uint16_t bits) {
    onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(onnx::TensorProto::FLOAT16);
    t.add_int32_data(bits);
    return t;
  };
  testing::GraphBuilder g(13);
  g.Input("x", onnx::TensorProto::FLOAT16, {4})
      .Output("y", onnx::TensorProto::FLOAT)
      .Init(half("low", 0xbc00))   // -1
      .Init(half("high", 0x3800))  // 0.5
      .Node("Clip", {"x", "low", "high"}, {"c"})
      .Node("LeakyRelu", {"c"}, {"l"}, {testing::AttrFloat("alpha", 0.1f)})
      .Node("Cast", {"l"}, {"y"}, {testing::AttrInt("to", onnx::TensorProto::FLOAT)});
  absl::StatusOr<ir::IRModule> mod = ImportOnnx(g.Serialize(), "half.onnx");
  ASSERT_TRUE(mod.ok()) << mod.status();
  runtime::Tensor x = *runtime::Tensor::Empty({4}, *runtime::ParseDataType("float16"));
  const uint16_t bits[] = {0x3c00, 0xc000, 0x3555, 0x7bff};  // 1, -2, 0.33325, 65504
  std::memcpy(x.data(), bits, sizeof(bits));
  absl::StatusOr<runtime::Value> y =
      backend::testing::CompileModuleAndRun(*mod, {runtime::Value(std::move(x))});
  ASSERT_TRUE(y.ok()) << y.status();
  const backend::testing::Array got = backend::testing::FromTensor(*y->as_tensor());
  // alpha is 0.1 rounded to half precision (0.0999755859375), and -1 * alpha rounds again.
  const std::vector<double> want = {0.5, -0.0999755859375, 0.333251953125, 0.5};
  ASSERT_EQ(got.size(), 4);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(got.data[i], want[i], 1e-7) << i;
}

}  // namespace
}  // namespace kiln::frontend
