// IRModules to and from the protobuf schema of proto/kiln/v1/ir.proto.
//
// Encoding is driven by each node's VisitFields, so it covers every node kind and field the
// structural hash sees. Decoding validates everything — kinds, field types and counts, node
// references, dtype codes, constant sizes — and reports the first problem with the node index
// and kind; garbage never crashes it.
#ifndef KILN_COMPILER_WIRE_IR_PROTO_H_
#define KILN_COMPILER_WIRE_IR_PROTO_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "compiler/ir/module.h"

namespace kiln::v1 {
class IRModuleProto;
}

namespace kiln::wire {

// Bumped whenever the meaning of the node table changes (a node kind's field list, say).
inline constexpr uint32_t kIrSchemaVersion = 1;

void ModuleToProto(const ir::IRModule& mod, v1::IRModuleProto* out);
absl::StatusOr<ir::IRModule> ModuleFromProto(const v1::IRModuleProto& proto);

// The serialized IRModuleProto, and back; garbage bytes give InvalidArgument.
std::string SerializeModule(const ir::IRModule& mod);
absl::StatusOr<ir::IRModule> DeserializeModule(absl::string_view bytes);

}  // namespace kiln::wire

#endif  // KILN_COMPILER_WIRE_IR_PROTO_H_
