#include "compiler/build_info.h"

#include <google/protobuf/stubs/common.h>

#include "absl/base/config.h"
#include "absl/strings/str_cat.h"
#include "compiler/codegen/llvm_target.h"
#include "compiler/version.h"

namespace kiln {

std::vector<std::pair<std::string, std::string>> ComponentVersions() {
  return {
      {"kiln", CompilerIdentity()},
      {"protobuf", google::protobuf::internal::VersionString(GOOGLE_PROTOBUF_VERSION)},
      {"llvm", codegen::LlvmVersion()},
      {"abseil", absl::StrCat("lts_", ABSL_LTS_RELEASE_VERSION, ".", ABSL_LTS_RELEASE_PATCH_LEVEL)},
  };
}

}  // namespace kiln
