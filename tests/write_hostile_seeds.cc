// Writes a fuzzing seed for each class of hostile input (tests/hostile_inputs.h) at a size that
// fits the fuzzers' inputs, so that libFuzzer mutates from deep, long, wide and shared shapes and
// not only from ordinary modules: tools/fuzz.sh adds them to each target's corpus.
//   write_hostile_seeds parser|onnx|ir_proto DIR
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tests/hostile_inputs.h"

namespace {

using Seeds = std::map<std::string, std::string>;

Seeds ParserSeeds() {
  using namespace kiln::testing;
  return {{"hostile_tir_sum_chain.py", TirSumChain(64)},
          {"hostile_tir_elif_chain.py", TirElifChain(32)},
          {"hostile_relax_nested_calls.py", RelaxNestedCalls(32)},
          {"hostile_relax_parentheses.py", RelaxParentheses(64)},
          {"hostile_relax_bindings.py", RelaxBindings(64)},
          {"hostile_relax_flat_tuple.py", RelaxFlatTuple(128)},
          {"hostile_relax_nested_tuple_access.py", RelaxNestedTupleAccess(32)},
          {"hostile_relax_call_chain.py", RelaxCallChain(32)},
          {"hostile_tir_many_functions.py", TirManyFunctions(16)},
          {"hostile_tir_block_axes.py", TirBlockAxes(64)},
          {"hostile_tir_or_chain.py", TirOrChain(64)}};
}

Seeds OnnxSeeds() {
  using namespace kiln::testing;
  return {{"hostile_huge_range.onnx", HugeRangeOnnx(int64_t{1} << 40)},
          {"hostile_high_rank.onnx", HighRankOnnx(80)},
          {"hostile_wide_sequence.onnx", WideSequenceOnnx(256)},
          {"hostile_wide_graph.onnx", WideGraphOnnx(64)},
          {"hostile_squared_dimension.onnx", SquaredDimensionOnnx(12)},
          {"hostile_broadcast_blowup.onnx", BroadcastBlowupOnnx()}};
}

Seeds IrProtoSeeds() {
  using namespace kiln::testing;
  return {{"hostile_shared_dag.pb", SharedDagProto(24)},
          {"hostile_chain.pb", ChainProto(128)},
          {"hostile_mixed_type_add.pb", MixedTypeAddProto()},
          {"hostile_flat_tuple.pb", FlatTupleProto(256)}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: write_hostile_seeds parser|onnx|ir_proto DIR\n");
    return 2;
  }
  const std::string kind = argv[1];
  const Seeds seeds = kind == "parser"     ? ParserSeeds()
                      : kind == "onnx"     ? OnnxSeeds()
                      : kind == "ir_proto" ? IrProtoSeeds()
                                           : Seeds();
  if (seeds.empty()) {
    std::fprintf(stderr, "write_hostile_seeds: unknown kind '%s'\n", kind.c_str());
    return 2;
  }
  for (const auto& [name, bytes] : seeds) {
    const std::string path = std::string(argv[2]) + "/" + name;
    std::ofstream out(path, std::ios::binary);
    out << bytes;
    if (!out.good()) {
      std::fprintf(stderr, "write_hostile_seeds: cannot write %s\n", path.c_str());
      return 1;
    }
  }
  return 0;
}
