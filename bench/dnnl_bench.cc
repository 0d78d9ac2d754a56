// oneDNN, the kernel peer: times each problem of a kernel-family manifest
// (bench/make_kernel_families.py) with oneDNN's own choice of layouts (format_tag::any, weights
// reordered once beforehand, as a framework integrating it does), bias and ReLU fused, one
// primitive call per iteration. Prints a JSON line {"isa"} naming the instruction set oneDNN
// uses, then one {"name", "seconds"} per problem.
// The ISA oneDNN may use is held by the environment (ONEDNN_MAX_CPU_ISA=AVX2), its threads by
// OMP_NUM_THREADS.
//
// usage: dnnl_bench MANIFEST.json [MIN_SECONDS]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "nlohmann/json.hpp"
#include "oneapi/dnnl/dnnl.hpp"

namespace {

using dnnl::memory;
using Dims = memory::dims;

// The median of repeats of `calls` calls each, lasting at least `min_seconds` in all.
template <typename Fn>
double MedianSeconds(Fn&& run, double min_seconds) {
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < 3; ++i) run();  // warm-up
  int calls = 1;
  for (;;) {
    auto start = Clock::now();
    for (int i = 0; i < calls; ++i) run();
    double s = std::chrono::duration<double>(Clock::now() - start).count();
    if (s > min_seconds / 10 || calls > (1 << 20)) break;
    calls *= 2;
  }
  std::vector<double> repeats;
  for (int r = 0; r < 10; ++r) {
    auto start = Clock::now();
    for (int i = 0; i < calls; ++i) run();
    repeats.push_back(std::chrono::duration<double>(Clock::now() - start).count() / calls);
  }
  std::sort(repeats.begin(), repeats.end());
  return repeats[repeats.size() / 2];
}

// A memory for `desc`, filled with a small constant (its values do not change the timing).
memory Filled(const memory::desc& desc, const dnnl::engine& engine) {
  memory m(desc, engine);
  auto* p = static_cast<float*>(m.get_data_handle());
  std::fill(p, p + desc.get_size() / sizeof(float), 0.01f);
  return m;
}

// The median seconds of one call of `primitive` (a convolution or a matmul: source, weights,
// bias, destination).
double TimePrimitive(const dnnl::primitive& primitive, const memory& src, const memory& weights,
                     const memory& bias, const memory& dst, dnnl::stream& stream,
                     double min_seconds) {
  const std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, dst}};
  return MedianSeconds(
      [&] {
        primitive.execute(stream, args);
        stream.wait();
      },
      min_seconds);
}

dnnl::primitive_attr WithRelu() {
  dnnl::post_ops ops;
  ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  return attr;
}

double TimeConv(const nlohmann::json& p, const dnnl::engine& engine, dnnl::stream& stream,
                double min_seconds) {
  const Dims src_dims = p["input"].get<Dims>();
  const Dims dst_dims = p["output"].get<Dims>();
  const size_t spatial = src_dims.size() - 2;
  const int64_t k = p["kernel"], s = p["stride"], pad = p["padding"], d = p["dilation"];
  const int64_t groups = p["groups"], cin = src_dims[1], cout = p["out_channels"];
  Dims wei_dims = groups > 1 ? Dims{groups, cout / groups, cin / groups} : Dims{cout, cin};
  for (size_t i = 0; i < spatial; ++i) wei_dims.push_back(k);
  const Dims strides(spatial, s), dilation(spatial, d - 1), padding(spatial, pad);
  auto any = [](const Dims& dims) {
    return memory::desc(dims, memory::data_type::f32, memory::format_tag::any);
  };
  const memory::desc bias_md({cout}, memory::data_type::f32, memory::format_tag::x);
  dnnl::convolution_forward::desc desc(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any(src_dims),
      any(wei_dims), bias_md, any(dst_dims), strides, dilation, padding, padding);
  dnnl::convolution_forward::primitive_desc pd(desc, WithRelu(), engine);
  memory src = Filled(pd.src_desc(), engine), wei = Filled(pd.weights_desc(), engine);
  memory bias = Filled(pd.bias_desc(), engine), dst(pd.dst_desc(), engine);
  return TimePrimitive(dnnl::convolution_forward(pd), src, wei, bias, dst, stream, min_seconds);
}

double TimeMatmul(const nlohmann::json& p, const dnnl::engine& engine, dnnl::stream& stream,
                  double min_seconds) {
  const int64_t m = p["m"], k = p["k"], n = p["n"];
  const memory::desc src_md({m, k}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc wei_md({k, n}, memory::data_type::f32, memory::format_tag::any);
  const memory::desc bias_md({1, n}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc dst_md({m, n}, memory::data_type::f32, memory::format_tag::ab);
  dnnl::matmul::desc desc(src_md, wei_md, bias_md, dst_md);
  dnnl::matmul::primitive_desc pd(desc, engine);
  memory src = Filled(src_md, engine), wei = Filled(pd.weights_desc(), engine);
  memory bias = Filled(bias_md, engine), dst(dst_md, engine);
  return TimePrimitive(dnnl::matmul(pd), src, wei, bias, dst, stream, min_seconds);
}

const char* IsaName(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41:
      return "SSE4.1";
    case dnnl::cpu_isa::avx:
      return "AVX";
    case dnnl::cpu_isa::avx2:
      return "AVX2";
    case dnnl::cpu_isa::avx2_vnni:
      return "AVX2 VNNI";
    case dnnl::cpu_isa::avx512_core:
      return "AVX-512";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "AVX-512 VNNI";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "AVX-512 BF16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "AVX-512 AMX";
    default:
      return "other";
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: dnnl_bench MANIFEST.json [MIN_SECONDS]\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  nlohmann::json manifest = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!manifest.is_array()) {
    std::fprintf(stderr, "dnnl_bench: %s is not a kernel-family manifest\n", argv[1]);
    return 1;
  }
  const double min_seconds = argc > 2 ? std::atof(argv[2]) : 0.5;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  std::printf("%s\n",
              nlohmann::json({{"isa", IsaName(dnnl::get_effective_cpu_isa())}}).dump().c_str());
  dnnl::stream stream(engine);
  for (const nlohmann::json& p : manifest) {
    double seconds = 0;
    try {
      seconds = p["kind"] == "conv" ? TimeConv(p, engine, stream, min_seconds)
                                    : TimeMatmul(p, engine, stream, min_seconds);
    } catch (const dnnl::error& e) {
      std::fprintf(stderr, "dnnl_bench: %s: %s\n", p["name"].get<std::string>().c_str(), e.what());
      continue;
    }
    nlohmann::json out = {{"name", p["name"]}, {"seconds", seconds}};
    std::printf("%s\n", out.dump().c_str());
  }
  return 0;
}
