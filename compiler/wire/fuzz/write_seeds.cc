// Writes the seed corpus of the IR proto decoder's fuzzer into DIR: the example modules, each
// serialized (Relax, TIR of every node kind, a matmul, a chain of calls).
//   write_seeds DIR
#include <cstdio>
#include <fstream>
#include <string>

#include "compiler/ir/testing/examples.h"
#include "compiler/relax/block_builder.h"
#include "compiler/wire/ir_proto.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_seeds DIR\n");
    return 2;
  }
  using namespace kiln::ir;  // NOLINT: a small tool
  auto with_prim_func = [](const std::string& name, PrimFunc f) {
    IRModuleBuilder b;
    (void)b.Add(relax::MakeGlobalVar(name), f);
    return b.Build();
  };
  const std::pair<const char*, IRModule> modules[] = {
      {"small_relax.pb", testing::SmallRelaxModule()},
      {"small_relax_normalized.pb", *relax::NormalizeModule(testing::SmallRelaxModule())},
      {"matmul.pb", with_prim_func("matmul", testing::MatmulPrimFunc(8, 8, 8))},
      {"every_tir_kind.pb", with_prim_func("f", testing::EveryTirKindPrimFunc())},
      {"chain.pb", testing::ChainModule(8)},
  };
  for (const auto& [name, mod] : modules) {
    std::ofstream out(std::string(argv[1]) + "/" + name, std::ios::binary);
    out << kiln::wire::SerializeModule(mod);
    if (!out) {
      std::fprintf(stderr, "write_seeds: cannot write %s/%s\n", argv[1], name);
      return 1;
    }
  }
  return 0;
}
