#include "compiler/quantize/quantize.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "compiler/backend/testing/model_test_util.h"
#include "compiler/frontend/load_module.h"
#include "compiler/frontend/onnx/testing/onnx_builder.h"
#include "compiler/quantize/calibration.h"
#include "compiler/quantize/qdq_graph.h"
#include "compiler/relax/transform/transform.h"
#include "compiler/script/printer.h"
#include "compiler/target/cpu_policy.h"
#include "gtest/gtest.h"
#include "runtime/npy.h"

namespace kiln::quantize {
namespace {

namespace fs = std::filesystem;
using frontend::testing::AttrInt;
using frontend::testing::FloatTensor;
using frontend::testing::GraphBuilder;
using runtime::Tensor;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string ReadModel(const std::string& name) { return ReadFile("tests/models/" + name); }

Tensor RandomTensor(const std::vector<int64_t>& shape, uint32_t seed) {
  Tensor t = *Tensor::Empty(shape, DLDataType{kDLFloat, 32, 1});
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  float* v = static_cast<float*>(t.data());
  for (int64_t i = 0; i < t.NumElements(); ++i) v[i] = dist(rng);
  return t;
}

std::vector<Sample> RandomSamples(const std::vector<int64_t>& shape, int n, uint32_t seed) {
  std::vector<Sample> s;
  for (int i = 0; i < n; ++i)
    s.push_back({"random " + std::to_string(i), {RandomTensor(shape, seed + i)}});
  return s;
}

std::vector<float> Random(size_t n, uint32_t seed, float scale = 0.5f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

int CountOps(const onnx::ModelProto& m, const std::string& op) {
  int n = 0;
  for (const onnx::NodeProto& node : m.graph().node()) n += node.op_type() == op;
  return n;
}

TEST(CalibrationTest, ParamsCoverTheRangeAndHoldZeroExactly) {
  ActivationParams p = ParamsForRange(-1.0f, 3.0f);
  EXPECT_FLOAT_EQ(p.scale, 4.0f / 255);
  EXPECT_EQ(p.zero_point, 64);  // round(1 / (4/255)) = round(63.75)
  ActivationParams relu = ParamsForRange(0.0f, 6.0f);
  EXPECT_EQ(relu.zero_point, 0);
  EXPECT_FLOAT_EQ(relu.scale, 6.0f / 255);
  ActivationParams positive = ParamsForRange(2.0f, 5.0f);  // widened to hold 0
  EXPECT_EQ(positive.zero_point, 0);
  EXPECT_FLOAT_EQ(positive.scale, 5.0f / 255);
  ActivationParams zeros = ParamsForRange(0.0f, 0.0f);
  EXPECT_EQ(zeros.scale, 1.0f);
  EXPECT_EQ(zeros.zero_point, 0);
}

TEST(CalibrationTest, PercentileAndEntropyClipARareOutlier) {
  std::vector<float> v = Random(100000, 7, 1.0f);
  v[123] = 100.0f;  // one outlier a min-max range would stretch to
  RangeObserver o;
  o.ObserveRange(v.data(), static_cast<int64_t>(v.size()));
  o.ObserveHistogram(v.data(), static_cast<int64_t>(v.size()));
  EXPECT_FLOAT_EQ(o.Choose(CalibrationMethod::kMinMax).second, 100.0f);
  const float pct = o.Choose(CalibrationMethod::kPercentile, 99.9).second;
  EXPECT_GT(pct, 3.0f);  // a unit normal's 99.9th percentile of |x| is 3.29
  EXPECT_LT(pct, 3.6f);
  const float entropy = o.Choose(CalibrationMethod::kEntropy).second;
  EXPECT_GT(entropy, 2.0f);
  EXPECT_LT(entropy, 20.0f);
  EXPECT_GE(o.Choose(CalibrationMethod::kEntropy).first, o.min());
}

TEST(CalibrationTest, SqnrOfKnownNoise) {
  const float ref[4] = {1, -1, 1, -1};
  const float got[4] = {1.1f, -0.9f, 0.9f, -1.1f};
  SqnrAccumulator acc;
  acc.Add(ref, got, 4);
  EXPECT_NEAR(acc.Db(), 20.0, 1e-3);  // signal 4, noise 0.04
  SqnrAccumulator same;
  same.Add(ref, ref, 4);
  EXPECT_TRUE(std::isinf(same.Db()));
  EXPECT_TRUE(ParseCalibrationMethod("minmax").ok());
  EXPECT_EQ(ParseCalibrationMethod("kl").status().code(), absl::StatusCode::kInvalidArgument);
}

// x -> Conv(w, b) -> BatchNormalization -> Relu -> y
GraphBuilder ConvBnRelu() {
  GraphBuilder b(13);
  b.Input("x", onnx::TensorProto::FLOAT, {1, 3, 8, 8});
  b.Init(FloatTensor("w", {4, 3, 3, 3}, Random(108, 1)));
  b.Init(FloatTensor("b", {4}, Random(4, 2)));
  b.Init(FloatTensor("gamma", {4}, {1.5f, 0.5f, 2.0f, 1.0f}));
  b.Init(FloatTensor("beta", {4}, {0.1f, -0.2f, 0.3f, 0.0f}));
  b.Init(FloatTensor("mean", {4}, {0.2f, -0.1f, 0.0f, 0.5f}));
  b.Init(FloatTensor("var", {4}, {1.0f, 4.0f, 0.25f, 2.0f}));
  b.Node("Conv", {"x", "w", "b"}, {"c"}, {AttrInt("group", 1)});
  b.Node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"n"});
  b.Node("Relu", {"n"}, {"y"});
  b.Output("y", onnx::TensorProto::FLOAT);
  return b;
}

TEST(QdqGraphTest, BatchNormFoldsIntoTheConvBeforeIt) {
  onnx::ModelProto m = ConvBnRelu().model();
  ASSERT_EQ(*FoldBatchNorms(m), 1);
  EXPECT_EQ(CountOps(m, "BatchNormalization"), 0);
  EXPECT_EQ(m.graph().initializer_size(), 2);  // the folded weight and bias; statistics gone
  // The folded model computes what the original does: quantize's evaluation of an untouched
  // (all layers kept in float) model compares the two runs.
  std::vector<Sample> samples = RandomSamples({1, 3, 8, 8}, 4, 11);
  QuantizeOptions keep_all;
  keep_all.keep_float = {"Conv_1"};  // GraphBuilder names nodes OP_INDEX
  absl::StatusOr<QuantizedModel> q =
      QuantizeOnnxModel(ConvBnRelu().Serialize(), "conv_bn", samples, {}, keep_all);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->report.folded_batch_norms, 1);
  ASSERT_EQ(q->report.outputs.size(), 1u);
  EXPECT_LT(q->report.outputs[0].max_abs_error, 1e-4);
  EXPECT_GT(q->report.outputs[0].sqnr_db, 80);
}

TEST(QdqGraphTest, PlanQuantizesEveryConvAndGemmOfTinyResnet) {
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(ReadModel("tiny_resnet.onnx")));
  absl::StatusOr<QuantizationPlan> plan = PlanQuantization(m, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  int convs = CountOps(m, "Conv"), gemms = CountOps(m, "Gemm");
  EXPECT_EQ(static_cast<int>(plan->layers.size()), convs + gemms);
  EXPECT_TRUE(plan->float_layers.empty());
  // Each layer's output is taken after its ReLU where one follows.
  int after_relu = 0;
  for (const QuantizedLayer& l : plan->layers)
    after_relu += l.output.find("Relu") != std::string::npos;
  EXPECT_GT(after_relu, 0);

  absl::StatusOr<QuantizationPlan> bad = PlanQuantization(m, {"/no/such/Conv"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("/no/such/Conv"), std::string::npos);
}

class TinyResnetQuantizeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = ReadModel("tiny_resnet.onnx");
    calibration_ = RandomSamples({1, 3, 32, 32}, 16, 100);
    eval_ = RandomSamples({1, 3, 32, 32}, 16, 1000);
  }
  std::string model_;
  std::vector<Sample> calibration_, eval_;
};

TEST_F(TinyResnetQuantizeTest, WritesAStandardQdqModelThatKeepsTheAccuracy) {
  absl::StatusOr<QuantizedModel> q =
      QuantizeOnnxModel(model_, "tiny_resnet", calibration_, eval_, QuantizeOptions{});
  ASSERT_TRUE(q.ok()) << q.status();
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(q->qdq_model));
  // Weights are int8 constants, one scale per output channel; activations uint8 pairs.
  int int8_weights = 0;
  for (const onnx::TensorProto& t : m.graph().initializer())
    int8_weights += t.data_type() == onnx::TensorProto::INT8 && t.dims_size() >= 2;
  const QuantizeReport& r = q->report;
  EXPECT_EQ(int8_weights, static_cast<int>(r.layers.size()));
  EXPECT_EQ(CountOps(m, "QuantizeLinear"), r.quantized_activations);
  EXPECT_GE(CountOps(m, "DequantizeLinear"), r.quantized_activations + int8_weights);
  for (const onnx::TensorProto& t : m.graph().initializer())
    EXPECT_NE(t.data_type() == onnx::TensorProto::FLOAT && t.dims_size() == 4, true) << t.name();

  EXPECT_TRUE(r.held_out);
  EXPECT_EQ(r.calibration_inputs, 16);
  EXPECT_EQ(r.eval_inputs, 16);
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_GT(r.outputs[0].sqnr_db, 25) << "output SQNR";
  EXPECT_GT(r.outputs[0].max_abs_error, 0);  // quantized: not the float model
  EXPECT_EQ(r.outputs[0].top1_total, 16);
  EXPECT_GE(r.outputs[0].top1_agree, 14);
  ASSERT_FALSE(r.layers.empty());
  for (const LayerAccuracy& l : r.layers) {
    EXPECT_GT(l.sqnr_db, 20) << l.name;
    EXPECT_TRUE(std::isfinite(l.sqnr_db)) << l.name;
  }
}

TEST_F(TinyResnetQuantizeTest, AKeptLayerStaysFloatAndLosesNothingOfItsOwn) {
  QuantizeOptions all;
  absl::StatusOr<QuantizedModel> q =
      QuantizeOnnxModel(model_, "tiny_resnet", calibration_, eval_, all);
  ASSERT_TRUE(q.ok()) << q.status();
  const std::string last = q->report.layers.back().name;
  QuantizeOptions keep;
  keep.keep_float = {last};
  absl::StatusOr<QuantizedModel> kept =
      QuantizeOnnxModel(model_, "tiny_resnet", calibration_, eval_, keep);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->report.float_layers, std::vector<std::string>{last});
  EXPECT_EQ(kept->report.layers.size(), q->report.layers.size() - 1);
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(kept->qdq_model));
  for (const onnx::NodeProto& n : m.graph().node()) {
    if (n.name() != last) continue;
    for (const std::string& in : n.input())
      EXPECT_EQ(in.find("_dequantized"), std::string::npos) << in;
  }
}

TEST_F(TinyResnetQuantizeTest, EntropyAndPercentileCalibrationRun) {
  for (CalibrationMethod method : {CalibrationMethod::kPercentile, CalibrationMethod::kEntropy}) {
    QuantizeOptions o;
    o.method = method;
    absl::StatusOr<QuantizedModel> q =
        QuantizeOnnxModel(model_, "tiny_resnet", calibration_, {}, o);
    ASSERT_TRUE(q.ok()) << q.status();
    EXPECT_FALSE(q->report.held_out);
    EXPECT_GT(q->report.outputs[0].sqnr_db, 25) << CalibrationMethodName(method);
  }
}

TEST_F(TinyResnetQuantizeTest, BadInputsAreRefusedNamingThem) {
  std::vector<Sample> wrong_shape = RandomSamples({1, 3, 16, 16}, 1, 5);
  absl::StatusOr<QuantizedModel> q =
      QuantizeOnnxModel(model_, "tiny_resnet", wrong_shape, {}, QuantizeOptions{});
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(q.status().message().find("[1, 3, 16, 16]"), std::string::npos) << q.status();
  EXPECT_NE(q.status().message().find("random 0"), std::string::npos) << q.status();

  Sample ints{"ints.npy", {*Tensor::Empty({1, 3, 32, 32}, DLDataType{kDLInt, 64, 1})}};
  q = QuantizeOnnxModel(model_, "tiny_resnet", calibration_, {ints}, QuantizeOptions{});
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("int64"), std::string::npos) << q.status();
  EXPECT_NE(q.status().message().find("ints.npy"), std::string::npos) << q.status();

  q = QuantizeOnnxModel("garbage", "garbage.onnx", calibration_, {}, QuantizeOptions{});
  EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
  q = QuantizeOnnxModel(model_, "tiny_resnet", {}, {}, QuantizeOptions{});
  EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
}

// The QDQ model tools/quantize_goldens.sh wrote with `kiln quantize`, compiled by Kiln, against
// ONNX Runtime on the same model: its reference execution and its int8 path.
TEST(QdqModelTest, KilnRunsTheQdqModelAsOnnxRuntimeDoes) {
  const std::string dir = "compiler/quantize/testdata/";
  absl::StatusOr<ir::IRModule> mod = frontend::LoadModule(
      frontend::SourceForm::kOnnx, ReadFile(dir + "tiny_resnet_int8.onnx"), "tiny_resnet_int8");
  ASSERT_TRUE(mod.ok()) << mod.status();
  // Every convolution's QDQ pattern became one int8 kernel (the Gemm stays float).
  onnx::ModelProto qdq;
  ASSERT_TRUE(qdq.ParseFromString(ReadFile(dir + "tiny_resnet_int8.onnx")));
  const std::string text = script::PrintScript(*mod);
  int qconvs = 0;
  for (size_t at = text.find("R.qnn.conv2d_int8("); at != std::string::npos;
       at = text.find("R.qnn.conv2d_int8(", at + 1)) {
    ++qconvs;
  }
  EXPECT_EQ(qconvs, CountOps(qdq, "Conv"));
  EXPECT_GT(qconvs, 0);
  // For a target without an int8 dot product they become float32 arithmetic, none left.
  absl::StatusOr<ir::IRModule> fallback =
      ir::relax::FallbackInt8Ops(*mod, target::PolicyFor(target::Avx2Haswell()));
  ASSERT_TRUE(fallback.ok()) << fallback.status();
  EXPECT_EQ(script::PrintScript(*fallback).find("R.qnn."), std::string::npos);
  absl::StatusOr<ir::IRModule> kept =
      ir::relax::FallbackInt8Ops(*mod, target::PolicyFor(target::Avx512Znver4()));
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_NE(script::PrintScript(*kept).find("R.qnn.conv2d_int8("), std::string::npos);
  for (int k = 0; k < 2; ++k) {
    const std::string stem = dir + "tiny_resnet_int8.";
    absl::StatusOr<Tensor> input =
        runtime::ReadNpy(ReadFile(stem + "input_" + std::to_string(k) + ".npy"), "input");
    ASSERT_TRUE(input.ok()) << input.status();
    // This machine's CPU (the int8 kernels where it has VNNI), and Haswell, which has no int8
    // dot product: FallbackInt8Ops gives it float32 convolutions (its code runs here too).
    for (const char* target : {"llvm", "llvm -mcpu=haswell"}) {
      SCOPED_TRACE(target);
      absl::StatusOr<runtime::Value> out =
          backend::testing::CompileModuleAndRun(*mod, {*input}, {}, target);
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_NE(out->as_tensor(), nullptr);
      const backend::testing::Array got = backend::testing::FromTensor(*out->as_tensor());
      for (const char* kind : {"output_", "optimized_output_"}) {
        absl::StatusOr<Tensor> want =
            runtime::ReadNpy(ReadFile(stem + kind + std::to_string(k) + ".npy"), kind);
        ASSERT_TRUE(want.ok()) << want.status();
        SCOPED_TRACE(kind);
        backend::testing::ExpectClose(got, backend::testing::FromTensor(*want), 1e-5);
      }
    }
  }
}

// MatMulInteger of uint8 rows by a constant int8 matrix is one int8 kernel, whatever the rank of
// its data (the leading dimensions flattened): exact against the integers written out.
TEST(QdqModelTest, MatMulIntegerOfAConstantInt8MatrixIsExact) {
  const int k = 10, n = 12;
  std::mt19937 rng(4);
  std::vector<int64_t> w(k * n);
  for (int64_t& v : w) v = static_cast<int8_t>(rng());
  onnx::TensorProto wt;
  wt.set_name("w");
  wt.set_data_type(onnx::TensorProto::INT8);
  wt.add_dims(k);
  wt.add_dims(n);
  for (int64_t v : w) wt.add_int32_data(static_cast<int32_t>(v));
  onnx::TensorProto zp;
  zp.set_name("zp");
  zp.set_data_type(onnx::TensorProto::UINT8);
  zp.add_int32_data(7);
  GraphBuilder b(13);
  b.Input("x", onnx::TensorProto::UINT8, {2, 3, k});
  b.Init(wt).Init(zp);
  b.Node("MatMulInteger", {"x", "w", "zp"}, {"y"});
  b.Output("y", onnx::TensorProto::INT32);
  absl::StatusOr<ir::IRModule> mod =
      frontend::LoadModule(frontend::SourceForm::kOnnx, b.Serialize(), "matmul_integer");
  ASSERT_TRUE(mod.ok()) << mod.status();
  EXPECT_NE(script::PrintScript(*mod).find("R.qnn.dense_int8("), std::string::npos);
  Tensor x = *Tensor::Empty({2, 3, k}, DLDataType{kDLUInt, 8, 1});
  auto* xv = static_cast<uint8_t*>(x.data());
  for (int64_t i = 0; i < x.NumElements(); ++i) xv[i] = static_cast<uint8_t>(rng());
  absl::StatusOr<runtime::Value> out = backend::testing::CompileModuleAndRun(*mod, {x});
  ASSERT_TRUE(out.ok()) << out.status();
  const Tensor* y = out->as_tensor();
  ASSERT_NE(y, nullptr);
  ASSERT_EQ(std::vector<int64_t>(y->shape().begin(), y->shape().end()),
            (std::vector<int64_t>{2, 3, n}));
  const auto* got = static_cast<const int32_t*>(y->data());
  for (int row = 0; row < 6; ++row)
    for (int c = 0; c < n; ++c) {
      int64_t want = 0;
      for (int r = 0; r < k; ++r) want += (int64_t{xv[row * k + r]} - 7) * w[r * n + c];
      ASSERT_EQ(got[row * n + c], want) << row << " " << c;
    }
}

// QDQ fusion reads only what a node has: a DequantizeLinear without its scale, a Conv without
// outputs are the importer's errors to report, not reads past the end.
TEST(QdqModelTest, MalformedQdqNodesAreErrorsNotCrashes) {
  GraphBuilder b(13);
  b.Input("xq", onnx::TensorProto::UINT8, {1, 4, 4, 4});
  b.Init(FloatTensor("w", {4, 4, 1, 1}, Random(16, 3)));
  b.Node("DequantizeLinear", {"xq"}, {"x"});
  b.Node("Conv", {"x", "w"}, {"y"});
  b.Node("QuantizeLinear", {"y"}, {"yq"});
  b.Output("yq", onnx::TensorProto::UINT8);
  absl::StatusOr<ir::IRModule> mod =
      frontend::LoadModule(frontend::SourceForm::kOnnx, b.Serialize(), "malformed");
  EXPECT_FALSE(mod.ok());
  onnx::ModelProto m = b.model();
  m.mutable_graph()->mutable_node(1)->clear_output();  // a Conv with no output
  std::string bytes;
  ASSERT_TRUE(m.SerializeToString(&bytes));
  mod = frontend::LoadModule(frontend::SourceForm::kOnnx, bytes, "malformed");
  EXPECT_FALSE(mod.ok());
  // The quantizer refuses such a layer too, naming it.
  absl::StatusOr<QuantizationPlan> plan = PlanQuantization(m, {});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("Conv"), std::string::npos) << plan.status();
}

// DequantizeLinear -> MaxPool -> QuantizeLinear at one scale and zero point is the MaxPool of the
// uint8 data (a ResNet's, after its first convolution): no float in the kernel, the same bytes
// as the float arithmetic, padding included.
TEST(QdqModelTest, AMaxPoolBetweenTheSameQuantizationRunsOnTheBytes) {
  auto graph = [](float out_scale) {
    GraphBuilder b(13);
    b.Input("xq", onnx::TensorProto::UINT8, {1, 3, 9, 9});
    b.Init(FloatTensor("s", {}, {0.05f})).Init(FloatTensor("s2", {}, {out_scale}));
    b.Init(frontend::testing::Uint8Tensor("zp", {}, {17}));
    b.Node("DequantizeLinear", {"xq", "s", "zp"}, {"x"});
    b.Node("MaxPool", {"x"}, {"y"},
           {frontend::testing::AttrInts("kernel_shape", {3, 3}),
            frontend::testing::AttrInts("strides", {2, 2}),
            frontend::testing::AttrInts("pads", {1, 1, 1, 1})});
    b.Node("QuantizeLinear", {"y", out_scale == 0.05f ? "s" : "s2", "zp"}, {"yq"});
    b.Output("yq", onnx::TensorProto::UINT8);
    return b.Serialize();
  };
  Tensor x = *Tensor::Empty({1, 3, 9, 9}, DLDataType{kDLUInt, 8, 1});
  std::mt19937 rng(4);
  for (int64_t i = 0; i < x.NumElements(); ++i)
    static_cast<uint8_t*>(x.data())[i] = static_cast<uint8_t>(rng());
  for (float out_scale : {0.05f, 0.07f}) {
    absl::StatusOr<ir::IRModule> mod =
        frontend::LoadModule(frontend::SourceForm::kOnnx, graph(out_scale), "pool");
    ASSERT_TRUE(mod.ok()) << mod.status();
    const std::string text = script::PrintScript(*mod);
    // Fused only at the same scale: then the pool reads the bytes (the unread dequantize goes
    // with dead code elimination).
    EXPECT_EQ(text.find("R.nn.max_pool2d(xq") != std::string::npos, out_scale == 0.05f) << text;
    absl::StatusOr<runtime::Value> out = backend::testing::CompileModuleAndRun(*mod, {x});
    ASSERT_TRUE(out.ok()) << out.status();
    const auto* got = static_cast<const uint8_t*>(out->as_tensor()->data());
    const auto* xv = static_cast<const uint8_t*>(x.data());
    for (int c = 0; c < 3; ++c)
      for (int r = 0; r < 5; ++r)
        for (int q = 0; q < 5; ++q) {
          float best = -INFINITY;
          for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) {
              const int h = r * 2 + i - 1, w = q * 2 + j - 1;
              if (h < 0 || h >= 9 || w < 0 || w >= 9) continue;
              best = std::max(best, (static_cast<float>(xv[(c * 9 + h) * 9 + w]) - 17) * 0.05f);
            }
          const float want = std::clamp(std::nearbyint(best / out_scale) + 17, 0.0f, 255.0f);
          ASSERT_EQ(got[(c * 5 + r) * 5 + q], want) << out_scale << " " << c << " " << r;
        }
  }
}

TEST(ReadSamplesTest, FoldersOfNpyFiles) {
  const fs::path dir = fs::path(::testing::TempDir()) / "samples";
  fs::remove_all(dir);
  fs::create_directories(dir);
  EXPECT_EQ(ReadSamples(dir.string(), {"x"}).status().code(), absl::StatusCode::kInvalidArgument);
  for (int i = 0; i < 3; ++i) {
    std::ofstream(dir / ("s" + std::to_string(i) + ".npy"), std::ios::binary)
        << *runtime::WriteNpy(RandomTensor({2, 2}, i));
  }
  std::ofstream(dir / "README.txt") << "not a sample";
  absl::StatusOr<std::vector<Sample>> s = ReadSamples(dir.string(), {"x"});
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->size(), 3u);
  EXPECT_NE((*s)[0].source.find("s0.npy"), std::string::npos);

  // Two inputs: a folder per sample; one missing a file is named.
  fs::create_directories(dir / "pair0");
  std::ofstream(dir / "pair0" / "a.npy", std::ios::binary)
      << *runtime::WriteNpy(RandomTensor({2}, 1));
  absl::StatusOr<std::vector<Sample>> pairs = ReadSamples(dir.string(), {"a", "b"});
  ASSERT_FALSE(pairs.ok());
  EXPECT_NE(pairs.status().message().find("b.npy"), std::string::npos) << pairs.status();
  std::ofstream(dir / "pair0" / "b.npy", std::ios::binary)
      << *runtime::WriteNpy(RandomTensor({2}, 2));
  pairs = ReadSamples(dir.string(), {"a", "b"});
  ASSERT_TRUE(pairs.ok()) << pairs.status();
  EXPECT_EQ((*pairs)[0].inputs.size(), 2u);

  std::ofstream(dir / "s9.npy", std::ios::binary) << "garbage";
  EXPECT_EQ(ReadSamples(dir.string(), {"x"}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kiln::quantize
