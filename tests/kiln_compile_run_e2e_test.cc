// End to end through the kiln binary: compile TVM's legalized MLP and an ONNX CNN to .kiln
// artifacts, run them on their reference inputs (.npy in, .npy out) and compare with PyTorch's
// outputs; bench with random inputs and as JSON; and the exit-status contract for bad inputs.
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/npy.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string kiln_binary;  // argv[1]

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Result {
  int rc;
  std::string out, err;
};

Result Kiln(const std::string& args) {
  std::string dir = std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp";
  std::string cmd = kiln_binary + " " + args + " >" + dir + "/out.txt 2>" + dir + "/err.txt";
  int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ReadFile(dir + "/out.txt"),
          ReadFile(dir + "/err.txt")};
}

std::string Tmp(const std::string& name) {
  return std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") + "/" + name;
}

// The float32 .npy at `path` equals the reference within 1e-4, relative and absolute.
void ExpectMatchesReference(const std::string& path, const std::string& reference) {
  auto got = kiln::runtime::ReadNpy(ReadFile(path), path);
  auto want = kiln::runtime::ReadNpy(ReadFile(reference), reference);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ(got->NumElements(), want->NumElements());
  for (int64_t i = 0; i < want->NumElements(); ++i) {
    float w = static_cast<const float*>(want->data())[i];
    EXPECT_NEAR(static_cast<const float*>(got->data())[i], w, 1e-4 * (1 + std::abs(w))) << i;
  }
}

TEST(KilnCompileRunTest, MlpCompilesRunsAndMatchesTheReference) {
  // TVM's import of the ONNX MLP, with high-level operators: Kiln legalizes them itself.
  Result c =
      Kiln("compile compiler/script/testdata/tvm_mlp.py --target llvm -o " + Tmp("mlp.kiln"));
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_THAT(c.out, HasSubstr("mlp.kiln"));
  Result r = Kiln("run " + Tmp("mlp.kiln") +
                  " --input input=runtime/testdata/mlp_dynamic_batch.input.npy --output-dir " +
                  Tmp("out"));
  ASSERT_EQ(r.rc, 0) << r.err;
  ExpectMatchesReference(Tmp("out/output.npy"), "runtime/testdata/mlp_dynamic_batch.output.npy");

  Result b = Kiln("bench " + Tmp("mlp.kiln") + " --repeat 3 --min-repeat-ms 1");
  ASSERT_EQ(b.rc, 0) << b.err;
  EXPECT_THAT(b.out, HasSubstr("median us"));
  Result j = Kiln("bench " + Tmp("mlp.kiln") + " --repeat 4 --json");
  ASSERT_EQ(j.rc, 0) << j.err;
  EXPECT_THAT(j.out, HasSubstr("\"seconds_per_call\""));
  EXPECT_THAT(j.out, HasSubstr("\"repeat\": 4"));
}

TEST(KilnCompileRunTest, BadInputsAreOneLineErrors) {
  ASSERT_EQ(Kiln("compile compiler/script/testdata/tvm_mlp_legalized.py -o " + Tmp("m.kiln")).rc,
            0);
  // An input of the wrong shape names the parameter and the dimension.
  Result wrong =
      Kiln("run " + Tmp("m.kiln") +
           " --input input=runtime/testdata/mlp_dynamic_batch.output.npy --output-dir " + Tmp("o"));
  EXPECT_EQ(wrong.rc, 1);
  EXPECT_THAT(wrong.err, HasSubstr("argument 'input' of 'main': dimension 1 is 8, expected 64"));
  // A corrupt artifact.
  std::string bytes = ReadFile(Tmp("m.kiln"));
  bytes[bytes.size() - 100] ^= 0x11;
  std::ofstream(Tmp("bad.kiln"), std::ios::binary) << bytes;
  Result corrupt = Kiln("bench " + Tmp("bad.kiln"));
  EXPECT_EQ(corrupt.rc, 1);
  EXPECT_THAT(corrupt.err, HasSubstr("bad.kiln"));
  // An operator that cannot be lowered (a tensor of unknown shape), and usage errors.
  std::ofstream(Tmp("unknown.py")) << R"(
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(dtype="float32", ndim=2)):
        y = R.exp(x)
        return y
)";
  Result unknown = Kiln("compile " + Tmp("unknown.py") + " -o " + Tmp("x.kiln"));
  EXPECT_EQ(unknown.rc, 1);
  EXPECT_THAT(unknown.err, HasSubstr("in function 'main', binding 'y': relax.exp tensor argument 0 "
                                     "needs a known shape and dtype"));
  EXPECT_EQ(Kiln("run " + Tmp("m.kiln")).rc, 2);  // --output-dir is required
}

// An ONNX model exported from PyTorch, through the CLI exactly like TVMScript: print, compile,
// run on the reference input (compared with PyTorch's output), and a model that does not import.
TEST(KilnCompileRunTest, OnnxModelThroughTheCli) {
  Result p = Kiln("print tests/models/tiny_resnet.onnx");
  ASSERT_EQ(p.rc, 0) << p.err;
  EXPECT_THAT(p.out, HasSubstr("def main(input: R.Tensor((1, 3, 32, 32), dtype=\"float32\"))"));
  EXPECT_THAT(p.out, HasSubstr("R.nn.conv2d("));
  Result c = Kiln("compile tests/models/tiny_resnet.onnx --target llvm --time-passes -o " +
                  Tmp("resnet.kiln"));
  ASSERT_EQ(c.rc, 0) << c.err;
  // --time-passes: every step of a cold compile, from reading the ONNX file to writing the
  // artifact, on stderr.
  for (const char* step :
       {"Import", "LegalizeOps", "FuseOps", "LLVM", "Link", "Package", "Write", "total"}) {
    EXPECT_THAT(c.err, HasSubstr(std::string("\n") + step + " ")) << step;
  }
  Result r = Kiln("run " + Tmp("resnet.kiln") +
                  " --input input=tests/models/tiny_resnet.input.npy --output-dir " + Tmp("ro"));
  ASSERT_EQ(r.rc, 0) << r.err;
  ExpectMatchesReference(Tmp("ro/output.npy"), "tests/models/tiny_resnet.output.npy");
  // What the demo checks: --expect compares the output with PyTorch's and says by how much.
  std::string run_resnet = "run " + Tmp("resnet.kiln") +
                           " --input input=tests/models/tiny_resnet.input.npy --output-dir " +
                           Tmp("ro") + " --tolerance 1e-4 --expect output=";
  Result matches = Kiln(run_resnet + "tests/models/tiny_resnet.output.npy");
  ASSERT_EQ(matches.rc, 0) << matches.err;
  EXPECT_THAT(matches.out, HasSubstr("max abs error"));
  EXPECT_THAT(matches.out, HasSubstr(": matches"));
  // A corrupted reference (one element changed by 0.5) fails the run with the difference.
  auto reference = kiln::runtime::ReadNpy(ReadFile("tests/models/tiny_resnet.output.npy"), "ref");
  ASSERT_TRUE(reference.ok());
  static_cast<float*>(reference->data())[3] += 0.5f;
  std::ofstream(Tmp("corrupted.npy"), std::ios::binary) << *kiln::runtime::WriteNpy(*reference);
  Result differs = Kiln(run_resnet + Tmp("corrupted.npy"));
  EXPECT_EQ(differs.rc, 1);
  EXPECT_THAT(differs.out, HasSubstr("max abs error 0.5"));
  EXPECT_THAT(differs.out, HasSubstr("DIFFERS"));
  EXPECT_THAT(differs.err, HasSubstr("1 output differs from the reference"));
  // A reference of another shape is named as such.
  Result shape = Kiln(run_resnet + "tests/models/tiny_resnet.input.npy");
  EXPECT_EQ(shape.rc, 1);
  EXPECT_THAT(shape.err, HasSubstr("the reference's is [1, 3, 32, 32]"));
  // Garbage named .onnx: one line naming the file, exit status 1, no artifact.
  std::ofstream(Tmp("junk.onnx")) << "\x08\x07garbage";
  Result junk = Kiln("compile " + Tmp("junk.onnx") + " -o " + Tmp("junk.kiln"));
  EXPECT_EQ(junk.rc, 1);
  EXPECT_THAT(junk.err, HasSubstr("junk.onnx"));
  EXPECT_THAT(junk.err, HasSubstr("not an ONNX model"));
  EXPECT_TRUE(ReadFile(Tmp("junk.kiln")).empty());
}

// Where the time goes: each kernel's share, FLOP rate and operators, adding up to the whole.
TEST(KilnCompileRunTest, PerKernelProfileCoversTheModel) {
  ASSERT_EQ(Kiln("compile tests/models/mobilenet_v2.onnx -o " + Tmp("mobilenet.kiln")).rc, 0);
  Result j = Kiln("bench " + Tmp("mobilenet.kiln") + " --per-kernel --repeat 5 --json --threads 1");
  ASSERT_EQ(j.rc, 0) << j.err;
  nlohmann::json profile = nlohmann::json::parse(j.out);
  const nlohmann::json& kernels = profile["kernels"];
  ASSERT_GT(kernels.size(), 10u);
  ASSERT_EQ(profile["instrumented_seconds"].size(), 5u);
  double previous = 1e9;
  bool conv = false;
  for (const nlohmann::json& k : kernels) {
    SCOPED_TRACE(k.dump());
    EXPECT_EQ(k["seconds"].size(), 5u);  // the raw samples
    EXPECT_GE(k["calls"].get<int>(), 1);
    EXPECT_GT(k["share"].get<double>(), 0);
    EXPECT_LE(k["median_seconds"].get<double>(), previous);  // slowest first
    previous = k["median_seconds"];
    auto ops = k["fused_ops"].get<std::vector<std::string>>();
    if (!ops.empty() && ops[0] == "relax.nn.conv2d") {
      conv = true;
      EXPECT_GT(k["flops"].get<double>(), 0);
      EXPECT_GT(k["gflops_per_second"].get<double>(), 0);
    }
  }
  EXPECT_TRUE(conv);
  // The kernels account for the model's time, within 10 % (the rest is the VM's own work), per
  // call: the raw samples give the same as the summary.
  std::vector<double> coverage;
  for (size_t r = 0; r < 5; ++r) {
    double in_kernels = 0;
    for (const nlohmann::json& k : kernels) in_kernels += k["seconds"][r].get<double>();
    coverage.push_back(in_kernels / profile["instrumented_seconds"][r].get<double>());
  }
  std::sort(coverage.begin(), coverage.end());
  EXPECT_GT(coverage[2], 0.9);
  EXPECT_LE(coverage[4], 1.0);
  // The same up to summation order (the samples are summed here in another order than kilnd's).
  EXPECT_NEAR(profile["kernel_coverage"].get<double>(), coverage[2], 1e-12);

  Result text = Kiln("bench " + Tmp("mobilenet.kiln") + " --per-kernel --repeat 2");
  ASSERT_EQ(text.rc, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("GFLOP/s arith  operators"));
  EXPECT_THAT(text.out, HasSubstr("float  relax.nn.conv2d"));
  EXPECT_THAT(text.out, Not(HasSubstr("int8 kernels:")));  // a float model
  EXPECT_THAT(text.out, HasSubstr("relax.nn.conv2d relax.add"));
  EXPECT_THAT(text.out, HasSubstr("the rest is the VM"));

  // kiln quantize's QDQ model: int8 kernels beside the float ones where this CPU has an int8 dot
  // product (AVX-512 VNNI); all float where it has none (FallbackInt8Ops).
  const std::string qdq = "compiler/quantize/testdata/tiny_resnet_int8.onnx";
  ASSERT_EQ(Kiln("compile " + qdq + " -o " + Tmp("int8.kiln")).rc, 0);
  Result int8 = Kiln("bench " + Tmp("int8.kiln") + " --per-kernel --repeat 2");
  ASSERT_EQ(int8.rc, 0) << int8.err;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::stringstream flags;
  flags << cpuinfo.rdbuf();
  const bool vnni = flags.str().find(" avx512_vnni") != std::string::npos &&
                    flags.str().find(" avx512vl") != std::string::npos;
  if (vnni) {
    EXPECT_THAT(int8.out, HasSubstr(" int8  relax.qnn.conv2d_int8"));
    EXPECT_THAT(int8.out, HasSubstr("int8 kernels: "));
  } else {
    EXPECT_THAT(int8.out, Not(HasSubstr("int8 kernels:")));
  }
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: kiln_compile_run_e2e_test PATH_TO_KILN\n");
    return 2;
  }
  kiln_binary = argv[1];
  return RUN_ALL_TESTS();
}
