// The fuzz target of the protobuf-IR decoder. Any bytes must decode or fail with a message; a
// module that decodes must hash, print, survive the round trip (encoded again, it decodes to a
// structurally equal module) and normalize or fail cleanly. A violation traps.
//
// The custom mutator knows the node table: besides libFuzzer's byte mutations it deepens a node
// (k copies of it chained in front of it, k up to a few thousand) and shares one (a reference
// re-pointed to an earlier node of the same kind), which reach the nests and DAGs clients can
// send far sooner than byte flips do.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>

#include "compiler/ir/printer.h"
#include "compiler/ir/structural.h"
#include "compiler/relax/block_builder.h"
#include "compiler/wire/ir_proto.h"
#include "proto/kiln/v1/ir.pb.h"
#include "runtime/support/large_stack.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using kiln::v1::IRFieldProto;
using kiln::v1::IRModuleProto;
using kiln::v1::IRNodeProto;

int DecodeAndWalk(const uint8_t* data, size_t size) {
  absl::StatusOr<kiln::ir::IRModule> mod =
      kiln::wire::DeserializeModule(absl::string_view(reinterpret_cast<const char*>(data), size));
  if (!mod.ok()) {
    if (mod.status().message().empty()) __builtin_trap();
    return 0;
  }
  (void)kiln::ir::StructuralHash(*mod);
  (void)kiln::ir::DebugPrint(*mod);
  absl::StatusOr<kiln::ir::IRModule> again =
      kiln::wire::DeserializeModule(kiln::wire::SerializeModule(*mod));
  if (!again.ok() || !kiln::ir::StructuralEqual(*mod, *again)) __builtin_trap();
  absl::StatusOr<kiln::ir::IRModule> normalized = kiln::ir::relax::NormalizeModule(*mod);
  if (!normalized.ok() && normalized.status().message().empty()) __builtin_trap();
  return 0;
}

// Adds `by` to every reference of `node` that names node `from` (0-based) or a later one.
void ShiftRefs(IRNodeProto* node, uint64_t from, uint64_t by) {
  auto shift = [&](uint64_t ref) { return ref != 0 && ref - 1 >= from ? ref + by : ref; };
  for (IRFieldProto& f : *node->mutable_fields()) {
    if (f.has_ref()) f.set_ref(shift(f.ref()));
    if (f.has_refs()) {
      for (uint64_t& r : *f.mutable_refs()->mutable_refs()) r = shift(r);
    }
    if (f.has_attrs()) {
      for (auto& a : *f.mutable_attrs()->mutable_entries()) a.set_value(shift(a.value()));
    }
  }
}

// Node `i`'s field `f` refers to node r: k copies of node i go in front of it, the first still
// referring to r and each later one (and node i) to the copy before.
bool Deepen(IRModuleProto* p, std::mt19937* rng) {
  if (p->nodes_size() < 2) return false;
  int i = static_cast<int>((*rng)() % p->nodes_size());
  const IRNodeProto& node = p->nodes(i);
  std::vector<int> ref_fields;
  for (int f = 0; f < node.fields_size(); ++f) {
    if (node.fields(f).has_ref() && node.fields(f).ref() != 0) ref_fields.push_back(f);
  }
  if (ref_fields.empty()) return false;
  int f = ref_fields[(*rng)() % ref_fields.size()];
  uint64_t k = 1 + (*rng)() % ((*rng)() % 8 == 0 ? 30000 : 64);
  IRModuleProto out;
  out.set_schema_version(p->schema_version());
  for (int n = 0; n < i; ++n) *out.add_nodes() = p->nodes(n);
  IRNodeProto copy = node;
  for (uint64_t c = 0; c < k; ++c) {
    IRNodeProto* added = out.add_nodes();
    *added = copy;
    if (c > 0) added->mutable_fields(f)->set_ref(static_cast<uint64_t>(i) + c);  // the one before
  }
  for (int n = i; n < p->nodes_size(); ++n) {
    IRNodeProto* moved = out.add_nodes();
    *moved = p->nodes(n);
    ShiftRefs(moved, static_cast<uint64_t>(i), k);
    if (n == i) moved->mutable_fields(f)->set_ref(static_cast<uint64_t>(i) + k);  // the last copy
  }
  out.set_root(p->root() != 0 && p->root() - 1 >= static_cast<uint64_t>(i) ? p->root() + k
                                                                           : p->root());
  *p = std::move(out);
  return true;
}

// A reference re-pointed to an earlier node of the kind it named: sharing where there was none.
bool Share(IRModuleProto* p, std::mt19937* rng) {
  if (p->nodes_size() < 3) return false;
  int i = 1 + static_cast<int>((*rng)() % (p->nodes_size() - 1));
  IRNodeProto* node = p->mutable_nodes(i);
  for (IRFieldProto& f : *node->mutable_fields()) {
    // Only references the decoder would accept: to an earlier node.
    if (!f.has_ref() || f.ref() == 0 || f.ref() > static_cast<uint64_t>(i)) continue;
    const std::string& kind = p->nodes(static_cast<int>(f.ref() - 1)).kind();
    for (int tries = 0; tries < 8; ++tries) {
      int other = static_cast<int>((*rng)() % i);
      if (p->nodes(other).kind() == kind) {
        f.set_ref(static_cast<uint64_t>(other) + 1);
        return true;
      }
    }
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1 << 20)) return 0;
  // As in kiln-worker: walks over a module nested up to the limit need the compiler's stack.
  return kiln::runtime::RunWithStack(kiln::runtime::kCompilerStackBytes,
                                     [&] { return DecodeAndWalk(data, size); });
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  std::mt19937 rng(seed);
  IRModuleProto p;
  if (rng() % 3 != 0 && p.ParseFromArray(data, static_cast<int>(size))) {
    bool changed = rng() % 2 == 0 ? Deepen(&p, &rng) : Share(&p, &rng);
    std::string bytes = p.SerializeAsString();
    if (changed && bytes.size() <= max_size) {
      std::memcpy(data, bytes.data(), bytes.size());
      return bytes.size();
    }
  }
  return LLVMFuzzerMutate(data, size, max_size);
}
