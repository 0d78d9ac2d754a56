// The importer's per-operator cases: one small ONNX graph per operator and attribute variant,
// written with the protobuf API, with fixed-seed inputs. Their reference outputs come from ONNX
// Runtime (tools/onnx_goldens.sh writes them to compiler/frontend/onnx/testdata/ops/).
#ifndef KILN_COMPILER_FRONTEND_ONNX_TESTING_OP_CASES_H_
#define KILN_COMPILER_FRONTEND_ONNX_TESTING_OP_CASES_H_

#include <ostream>
#include <string>
#include <vector>

#include "compiler/frontend/onnx/testing/onnx_builder.h"
#include "runtime/tensor.h"

namespace kiln::frontend::testing {

struct OpCase {
  std::string name;  // file stem: conv_groups, resize_linear_align_corners, ...
  GraphBuilder graph;
  std::vector<runtime::Tensor> inputs;  // in graph input order
};

std::vector<OpCase> AllOpCases();

// gtest prints a case by its name.
inline void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

}  // namespace kiln::frontend::testing

#endif  // KILN_COMPILER_FRONTEND_ONNX_TESTING_OP_CASES_H_
