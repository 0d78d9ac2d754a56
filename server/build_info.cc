#include "server/build_info.h"

#include <google/protobuf/stubs/common.h>
#include <grpcpp/grpcpp.h>

#include "absl/base/config.h"
#include "absl/strings/str_cat.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/version.h"

namespace kiln::server {

std::vector<std::pair<std::string, std::string>> ComponentVersions() {
  return {
      {"kiln", kCompilerVersion},
      {"grpc", grpc::Version()},
      {"protobuf", google::protobuf::internal::VersionString(GOOGLE_PROTOBUF_VERSION)},
      {"llvm", codegen::LlvmVersion()},
      {"abseil", absl::StrCat("lts_", ABSL_LTS_RELEASE_VERSION, ".", ABSL_LTS_RELEASE_PATCH_LEVEL)},
  };
}

}  // namespace kiln::server
