#include "server/kiln_service.h"

#include "compiler/codegen/llvm_target.h"
#include "compiler/version.h"
#include "server/build_info.h"

namespace kiln::server {

grpc::Status KilnService::GetServerInfo(grpc::ServerContext* /*context*/,
                                        const kiln::v1::GetServerInfoRequest* /*request*/,
                                        kiln::v1::ServerInfo* response) {
  response->set_compiler_version(kCompilerVersion);
  response->set_host_target_triple(codegen::HostTriple());
  for (const auto& [name, version] : ComponentVersions()) {
    kiln::v1::ComponentVersion* component = response->add_components();
    component->set_name(name);
    component->set_version(version);
  }
  return grpc::Status::OK;
}

}  // namespace kiln::server
