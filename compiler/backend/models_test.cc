// Whole models in TVMScript (an MLP with a symbolic batch, a small CNN with a residual, a
// transformer encoder block), weights as parameters, compiled and run through the VM against
// references composed of plain C++ loops.
#include <cmath>
#include <functional>

#include "absl/strings/str_cat.h"
#include "compiler/backend/build.h"
#include "compiler/backend/testing/model_test_util.h"
#include "compiler/script/script_parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/vm/vm.h"

namespace kiln::backend {
namespace {

using testing::Array;
using testing::Broadcast;
using testing::CompileAndRun;
using testing::Conv2dRef;
using testing::ExpectClose;
using testing::FromTensor;
using testing::Map;
using testing::Module;
using testing::Random;
using testing::ToTensor;
using testing::Zeros;

using runtime::Tensor;
using runtime::Value;

// ---- Whole models in TVMScript, weights as parameters, against composed references ----

// y[r, o] = sum_k x[r, k] * w[k, o] + b[o] over the rows of x (any leading shape).
Array DenseRef(const Array& x, const Array& w, const Array& b) {
  int64_t K = w.shape[0], O = w.shape[1], rows = x.size() / K;
  std::vector<int64_t> shape = x.shape;
  shape.back() = O;
  Array y = Zeros(shape);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < O; ++o) {
      double s = b.data[o];
      for (int64_t k = 0; k < K; ++k) s += x.data[r * K + k] * w.data[k * O + o];
      y.data[r * O + o] = s;
    }
  return y;
}

Array LayerNormRef(const Array& x, const Array& g, const Array& b) {
  int64_t D = x.shape.back();
  Array y = x;
  for (int64_t r = 0; r < x.size() / D; ++r) {
    double m = 0, v = 0;
    for (int64_t k = 0; k < D; ++k) m += x.data[r * D + k] / D;
    for (int64_t k = 0; k < D; ++k) v += (x.data[r * D + k] - m) * (x.data[r * D + k] - m) / D;
    for (int64_t k = 0; k < D; ++k)
      y.data[r * D + k] = (x.data[r * D + k] - m) / std::sqrt(v + 1e-5) * g.data[k] + b.data[k];
  }
  return y;
}

Array Add(const Array& a, const Array& b) {
  return Broadcast(a, b, [](double p, double q) { return p + q; });
}

TEST(ModelsTest, TwoLayerMlpWithSymbolicBatch) {
  std::string text = Module(
      "x: R.Tensor((\"n\", 32), dtype=\"float32\"), w1: R.Tensor((32, 64), dtype=\"float32\"), "
      "b1: R.Tensor((64,), dtype=\"float32\"), w2: R.Tensor((64, 10), dtype=\"float32\"), "
      "b2: R.Tensor((10,), dtype=\"float32\")",
      "            h = R.matmul(x, w1)\n            h1 = R.add(h, b1)\n"
      "            a = R.nn.relu(h1)\n            o = R.matmul(a, w2)\n"
      "            y = R.add(o, b2)\n",
      "y");
  Array w1 = Random({32, 64}, 50, -0.3, 0.3), b1 = Random({64}, 51);
  Array w2 = Random({64, 10}, 52, -0.3, 0.3), b2 = Random({10}, 53);
  for (int64_t n : {1, 4, 7}) {
    SCOPED_TRACE(n);
    Array x = Random({n, 32}, 54);
    Array want =
        DenseRef(Map(DenseRef(x, w1, b1), [](double v) { return std::max(v, 0.0); }), w2, b2);
    absl::StatusOr<Value> out =
        CompileAndRun(text, {ToTensor(x), ToTensor(w1), ToTensor(b1), ToTensor(w2), ToTensor(b2)});
    ASSERT_TRUE(out.ok()) << out.status();
    ExpectClose(FromTensor(*out->as_tensor()), want);
  }
}

// conv -> bn -> relu -> max_pool -> residual block (conv -> bn -> relu, + skip) -> global
// average pool -> flatten -> linear.
TEST(ModelsTest, SmallCnnWithResidual) {
  const char* text = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 3, 16, 16), dtype="float32"),
             w1: R.Tensor((8, 3, 3, 3), dtype="float32"), g1: R.Tensor((8,), dtype="float32"),
             be1: R.Tensor((8,), dtype="float32"), m1: R.Tensor((8,), dtype="float32"),
             v1: R.Tensor((8,), dtype="float32"),
             w2: R.Tensor((8, 8, 3, 3), dtype="float32"), g2: R.Tensor((8,), dtype="float32"),
             be2: R.Tensor((8,), dtype="float32"), m2: R.Tensor((8,), dtype="float32"),
             v2: R.Tensor((8,), dtype="float32"),
             fw: R.Tensor((10, 8), dtype="float32"), fb: R.Tensor((10,), dtype="float32")):
        with R.dataflow():
            c1 = R.nn.conv2d(x, w1, padding=[1, 1])
            t1 = R.nn.batch_norm(c1, g1, be1, m1, v1, axis=1, epsilon=1e-5)
            n1 = t1[0]
            r1 = R.nn.relu(n1)
            p1 = R.nn.max_pool2d(r1, pool_size=[2, 2], strides=[2, 2])
            c2 = R.nn.conv2d(p1, w2, padding=[1, 1])
            t2 = R.nn.batch_norm(c2, g2, be2, m2, v2, axis=1, epsilon=1e-5)
            n2 = t2[0]
            r2 = R.nn.relu(n2)
            s = R.add(r2, p1)
            gp = R.nn.adaptive_avg_pool2d(s, output_size=[1, 1])
            f = R.flatten(gp)
            e = R.expand_dims(f, axis=[0])
            y = R.nn.linear(e, fw, fb)
            R.output(y)
        return y
)";
  Array x = Random({1, 3, 16, 16}, 60);
  Array w1 = Random({8, 3, 3, 3}, 61, -0.5, 0.5), w2 = Random({8, 8, 3, 3}, 62, -0.3, 0.3);
  Array g1 = Random({8}, 63, 0.5, 1.5), be1 = Random({8}, 64), m1 = Random({8}, 65);
  Array v1 = Random({8}, 66, 0.5, 2), g2 = Random({8}, 67, 0.5, 1.5), be2 = Random({8}, 68);
  Array m2 = Random({8}, 69), v2 = Random({8}, 70, 0.5, 2);
  Array fw = Random({10, 8}, 71), fb = Random({10}, 72);
  auto bn_relu = [](Array a, const Array& g, const Array& b, const Array& m, const Array& v) {
    for (int64_t i = 0; i < a.size(); ++i) {
      int64_t c = a.Unravel(i)[1];
      double y = (a.data[i] - m.data[c]) / std::sqrt(v.data[c] + 1e-5) * g.data[c] + b.data[c];
      a.data[i] = std::max(y, 0.0);
    }
    return a;
  };
  Array r1 = bn_relu(Conv2dRef(x, w1, 1, 1, 1, 1), g1, be1, m1, v1);
  Array p1 = Zeros({1, 8, 8, 8});
  for (int64_t i = 0; i < p1.size(); ++i) {
    std::vector<int64_t> o = p1.Unravel(i);
    double mx = -1e30;
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b) mx = std::max(mx, r1.at({0, o[1], 2 * o[2] + a, 2 * o[3] + b}));
    p1.data[i] = mx;
  }
  Array s = Add(bn_relu(Conv2dRef(p1, w2, 1, 1, 1, 1), g2, be2, m2, v2), p1);
  Array gp = Zeros({1, 8});
  for (int64_t i = 0; i < s.size(); ++i) gp.data[s.Unravel(i)[1]] += s.data[i] / 64;
  Array fwt = Zeros({8, 10});
  for (int64_t o = 0; o < 10; ++o)
    for (int64_t k = 0; k < 8; ++k) fwt.at({k, o}) = fw.at({o, k});
  Array want = DenseRef(gp, fwt, fb);
  // Static memory planning reuses storage across the intermediates: the planned peak is below
  // their sum (the largest are the 8 x 16 x 16 activations, 8 KB each).
  absl::StatusOr<ir::IRModule> mod = script::ParseScript(text, "cnn.py");
  ASSERT_TRUE(mod.ok()) << mod.status();
  // Without fusion every operator's result is a tensor to plan; fusion leaves fewer (see below).
  BuildOptions unfused;
  unfused.fuse = false;
  absl::StatusOr<BuiltModule> built = Build(*mod, "llvm", unfused);
  ASSERT_TRUE(built.ok()) << built.status();
  const ir::relax::PlannedMemory& planned = built->memory.at("main");
  EXPECT_GE(planned.tensors, 8);
  EXPECT_GE(planned.storage_bytes, 8 * 16 * 16 * 4);  // at least the largest one
  EXPECT_LT(planned.storage_bytes, planned.tensor_bytes);
  RecordProperty("planned_storage_bytes", std::to_string(planned.storage_bytes));
  RecordProperty("planned_tensor_bytes", std::to_string(planned.tensor_bytes));
  std::printf("CNN memory plan: %lld tensors, %lld bytes planned, %lld bytes without reuse\n",
              static_cast<long long>(planned.tensors),
              static_cast<long long>(planned.storage_bytes),
              static_cast<long long>(planned.tensor_bytes));
  absl::StatusOr<Value> out =
      CompileAndRun(text, {ToTensor(x), ToTensor(w1), ToTensor(g1), ToTensor(be1), ToTensor(m1),
                           ToTensor(v1), ToTensor(w2), ToTensor(g2), ToTensor(be2), ToTensor(m2),
                           ToTensor(v2), ToTensor(fw), ToTensor(fb)});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectClose(FromTensor(*out->as_tensor()), want);
}

// A post-norm transformer encoder block: 2-head self-attention with softmax, residual,
// layer_norm, a GELU feed-forward, residual, layer_norm.
TEST(ModelsTest, TransformerEncoderBlock) {
  const char* text = R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((8, 16), dtype="float32"),
             wq: R.Tensor((16, 16), dtype="float32"), wk: R.Tensor((16, 16), dtype="float32"),
             wv: R.Tensor((16, 16), dtype="float32"), wo: R.Tensor((16, 16), dtype="float32"),
             g1: R.Tensor((16,), dtype="float32"), b1: R.Tensor((16,), dtype="float32"),
             w1: R.Tensor((16, 32), dtype="float32"), c1: R.Tensor((32,), dtype="float32"),
             w2: R.Tensor((32, 16), dtype="float32"), c2: R.Tensor((16,), dtype="float32"),
             g2: R.Tensor((16,), dtype="float32"), b2: R.Tensor((16,), dtype="float32")):
        with R.dataflow():
            q = R.matmul(x, wq)
            k = R.matmul(x, wk)
            v = R.matmul(x, wv)
            qh = R.permute_dims(R.reshape(q, R.shape([8, 2, 8])), axes=[1, 0, 2])
            kh = R.permute_dims(R.reshape(k, R.shape([8, 2, 8])), axes=[1, 2, 0])
            vh = R.permute_dims(R.reshape(v, R.shape([8, 2, 8])), axes=[1, 0, 2])
            s = R.matmul(qh, kh)
            scaled = R.multiply(s, R.const(0.35355339059327373, "float32"))
            p = R.nn.softmax(scaled, axis=-1)
            ctx = R.matmul(p, vh)
            merged = R.reshape(R.permute_dims(ctx, axes=[1, 0, 2]), R.shape([8, 16]))
            attn = R.matmul(merged, wo)
            r1 = R.add(x, attn)
            n1 = R.nn.layer_norm(r1, g1, b1, axes=[-1], epsilon=1e-5)
            f1 = R.add(R.matmul(n1, w1), c1)
            a1 = R.nn.gelu(f1)
            f2 = R.add(R.matmul(a1, w2), c2)
            r2 = R.add(n1, f2)
            y = R.nn.layer_norm(r2, g2, b2, axes=[-1], epsilon=1e-5)
            R.output(y)
        return y
)";
  Array x = Random({8, 16}, 80);
  Array wq = Random({16, 16}, 81, -0.5, 0.5), wk = Random({16, 16}, 82, -0.5, 0.5);
  Array wv = Random({16, 16}, 83, -0.5, 0.5), wo = Random({16, 16}, 84, -0.5, 0.5);
  Array g1 = Random({16}, 85, 0.5, 1.5), b1 = Random({16}, 86), g2 = Random({16}, 87, 0.5, 1.5);
  Array b2 = Random({16}, 88), w1 = Random({16, 32}, 89, -0.5, 0.5), c1 = Random({32}, 90);
  Array w2 = Random({32, 16}, 91, -0.5, 0.5), c2 = Random({16}, 92);
  Array zero16 = Zeros({16});
  Array q = DenseRef(x, wq, zero16), k = DenseRef(x, wk, zero16), v = DenseRef(x, wv, zero16);
  Array merged = Zeros({8, 16});
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 8; ++i) {
      std::vector<double> score(8);
      double mx = -1e30, sum = 0;
      for (int j = 0; j < 8; ++j) {
        double d = 0;
        for (int e = 0; e < 8; ++e) d += q.at({i, h * 8 + e}) * k.at({j, h * 8 + e});
        score[j] = d / std::sqrt(8.0);
        mx = std::max(mx, score[j]);
      }
      for (double& sc : score) sum += (sc = std::exp(sc - mx));
      for (int e = 0; e < 8; ++e) {
        double acc = 0;
        for (int j = 0; j < 8; ++j) acc += score[j] / sum * v.at({j, h * 8 + e});
        merged.at({i, h * 8 + e}) = acc;
      }
    }
  Array n1 = LayerNormRef(Add(x, DenseRef(merged, wo, zero16)), g1, b1);
  Array a1 = Map(DenseRef(n1, w1, c1),
                 [](double t) { return 0.5 * t * (1 + std::erf(t / std::sqrt(2.0))); });
  Array want = LayerNormRef(Add(n1, DenseRef(a1, w2, c2)), g2, b2);
  absl::StatusOr<Value> out =
      CompileAndRun(text, {ToTensor(x), ToTensor(wq), ToTensor(wk), ToTensor(wv), ToTensor(wo),
                           ToTensor(g1), ToTensor(b1), ToTensor(w1), ToTensor(c1), ToTensor(w2),
                           ToTensor(c2), ToTensor(g2), ToTensor(b2)});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectClose(FromTensor(*out->as_tensor()), want);
}

}  // namespace
}  // namespace kiln::backend
