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
// A tuple nested `depth` levels around x, then taken apart again: `t[0][0]...[0]`.
std::string RelaxNestedTupleAccess(int depth);
// A chain of `count` Relax functions, each calling the next; the last returns its argument.
std::string RelaxCallChain(int count);
// A module of `count` PrimFuncs, each `B[i] = A[i] + k`.
std::string TirManyFunctions(int count);
// A PrimFunc with one block of `axes` block axes, each `T.axis.spatial(1, 0)`.
std::string TirBlockAxes(int axes);
// A PrimFunc whose store is guarded by `A[i] < 0 or A[i] < 1 or ...`, `terms` comparisons.
std::string TirOrChain(int terms);

// ---- Protobuf IR (serialized IRModuleProto) ----
// main returns a PrimValue whose expression is `levels` Adds, each using the one before twice:
// a few hundred bytes that stand for 2^levels nodes.
std::string SharedDagProto(int levels);
// main returns a PrimValue of `x + 1 + 1 + ...`, `depth` nodes deep.
std::string ChainProto(int depth);
// A PrimFunc storing A[0] + 1 with the 1 an int32: operands that do not agree.
std::string MixedTypeAddProto();
// main returns a tuple of `width` distinct PrimValues.
std::string FlatTupleProto(int width);

// ---- ONNX ----
// A model of a hundred bytes: y = Range(0, elements, 1) in int64.
std::string HugeRangeOnnx(int64_t elements);
// y = Relu(x) where x has `rank` dimensions of 1.
std::string HighRankOnnx(int rank);
// y = SequenceAt(SequenceConstruct(x, x, ... `elements` times), 0).
std::string WideSequenceOnnx(int elements);
// `nodes` nodes y_k = Add(x, c_k), each a graph output.
std::string WideGraphOnnx(int nodes);
// A symbolic dimension d0 + d1 + 1 (from Shape), squared `times` times, into ConstantOfShape.
std::string SquaredDimensionOnnx(int times);
// Known integers [1024, 1] + [1, 1024] + [1024, 1, 1]: a billion elements if computed while
// importing.
std::string BroadcastBlowupOnnx();

}  // namespace kiln::testing

#endif  // KILN_TESTS_HOSTILE_INPUTS_H_
