// run_kernel LIBRARY.so KERNEL BUFFER.npy...: calls one kernel of a kernel library on tensors read
// from .npy files and writes each tensor back to its file afterwards. Tests build it for aarch64
// and run it under qemu-aarch64, so that code compiled for a board computes its numbers for real.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/library.h"
#include "runtime/npy.h"

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "run_kernel: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kiln::runtime;
  if (argc < 3) return Fail("usage: run_kernel LIBRARY.so KERNEL BUFFER.npy...");
  auto read = [](const char* path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    return bytes.str();
  };
  absl::StatusOr<std::shared_ptr<KernelLibrary>> lib =
      KernelLibrary::LoadFromMemory(read(argv[1]), argv[1]);
  if (!lib.ok()) return Fail(std::string(lib.status().message()));
  absl::StatusOr<Function> kernel = (*lib)->GetFunction(argv[2], std::make_shared<ThreadPool>(2));
  if (!kernel.ok()) return Fail(std::string(kernel.status().message()));
  std::vector<Tensor> tensors;
  for (int i = 3; i < argc; ++i) {
    absl::StatusOr<Tensor> t = ReadNpy(read(argv[i]), argv[i]);
    if (!t.ok()) return Fail(std::string(t.status().message()));
    tensors.push_back(*t);
  }
  std::vector<Value> args(tensors.begin(), tensors.end());
  absl::StatusOr<Value> ran = (*kernel)(args);
  if (!ran.ok()) return Fail(std::string(ran.status().message()));
  for (int i = 3; i < argc; ++i) {
    absl::StatusOr<std::string> bytes = WriteNpy(tensors[i - 3]);
    if (!bytes.ok()) return Fail(std::string(bytes.status().message()));
    std::ofstream out(argv[i], std::ios::binary | std::ios::trunc);
    out << *bytes;
    if (!out) return Fail(std::string("cannot write ") + argv[i]);
  }
  return 0;
}
