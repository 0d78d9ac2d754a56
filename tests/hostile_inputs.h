// Deterministic generators of hostile and extreme modules, for the stress tests, the service's
// hostile-input test and the front-end benchmark: deep and long syntax, node tables whose sharing
// expands exponentially, and small models that ask for huge constants. Nothing is stored: each
// input is made at its size when a test wants it.
#ifndef KILN_TESTS_HOSTILE_INPUTS_H_
#define KILN_TESTS_HOSTILE_INPUTS_H_

#include <cstdint>
#include <string>

namespace kiln::testing {

// ---- TVMScript ----
// A PrimFunc whose one store is `B[i] = A[i] + A[i] + ...` with `terms` terms (left-nested).
std::string TirSumChain(int terms);
// A PrimFunc with an if / elif * `branches` / else chain.
std::string TirElifChain(int branches);
// A Relax function whose one binding is `R.add(R.add(... R.add(x, x) ..., x), x)`.
std::string RelaxNestedCalls(int depth);
// A Relax function binding `(((...x...)))`, `depth` parentheses deep.
std::string RelaxParentheses(int depth);
// A Relax dataflow block of `count` bindings, each adding x to the one before.
std::string RelaxBindings(int count);
// A Relax function returning a tuple of `width` references to x.
std::string RelaxFlatTuple(int width);

// ---- Protobuf IR (serialized IRModuleProto) ----
// main returns a PrimValue whose expression is `levels` Adds, each using the one before twice:
// a few hundred bytes that stand for 2^levels nodes.
std::string SharedDagProto(int levels);
// main returns a PrimValue of `x + 1 + 1 + ...`, `depth` nodes deep.
std::string ChainProto(int depth);
// main returns a tuple of `width` distinct PrimValues.
std::string FlatTupleProto(int width);

// ---- ONNX ----
// A model of a hundred bytes: y = Range(0, elements, 1) in int64.
std::string HugeRangeOnnx(int64_t elements);
// Known integers [1024, 1] + [1, 1024] + [1024, 1, 1]: a billion elements if computed while
// importing.
std::string BroadcastBlowupOnnx();

}  // namespace kiln::testing

#endif  // KILN_TESTS_HOSTILE_INPUTS_H_
