// What this binary's compiler is built from: Kiln's compiler version and the versions of the
// libraries the compiler links. The server (GetServerInfo) and the CLI (`kiln version`) add the
// gRPC version they link.
#ifndef KILN_COMPILER_BUILD_INFO_H_
#define KILN_COMPILER_BUILD_INFO_H_

#include <string>
#include <utility>
#include <vector>

namespace kiln {

// (component, version) pairs in a fixed order: kiln, protobuf, llvm, abseil.
std::vector<std::pair<std::string, std::string>> ComponentVersions();

}  // namespace kiln

#endif  // KILN_COMPILER_BUILD_INFO_H_
