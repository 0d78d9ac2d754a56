// Writes every per-operator case to DIR as NAME.onnx and NAME.input_K.npy, for
// tools/onnx_goldens.sh to run through ONNX Runtime.
#include <cstdio>
#include <fstream>

#include "compiler/frontend/onnx/testing/op_cases.h"
#include "runtime/npy.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_op_cases DIR\n");
    return 2;
  }
  std::string dir = argv[1];
  for (const kiln::frontend::testing::OpCase& c : kiln::frontend::testing::AllOpCases()) {
    std::ofstream(dir + "/" + c.name + ".onnx", std::ios::binary) << c.graph.Serialize();
    for (size_t k = 0; k < c.inputs.size(); ++k) {
      absl::StatusOr<std::string> npy = kiln::runtime::WriteNpy(c.inputs[k]);
      if (!npy.ok()) {
        std::fprintf(stderr, "%s: %s\n", c.name.c_str(), npy.status().ToString().c_str());
        return 1;
      }
      std::ofstream(dir + "/" + c.name + ".input_" + std::to_string(k) + ".npy", std::ios::binary)
          << *npy;
    }
  }
  return 0;
}
