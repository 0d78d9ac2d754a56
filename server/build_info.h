// What this binary is built from: Kiln's compiler version and the versions of the libraries it
// links. Served by GetServerInfo and printed by `kiln version`.
#ifndef KILN_SERVER_BUILD_INFO_H_
#define KILN_SERVER_BUILD_INFO_H_

#include <string>
#include <utility>
#include <vector>

namespace kiln::server {

// (component, version) pairs in a fixed order: kiln, grpc, protobuf, llvm, abseil.
std::vector<std::pair<std::string, std::string>> ComponentVersions();

}  // namespace kiln::server

#endif  // KILN_SERVER_BUILD_INFO_H_
