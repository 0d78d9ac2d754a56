#include "compiler/version.h"

#include <string>

#include "compiler/source_digest.h"

namespace kiln {

const char* CompilerIdentity() {
  static const std::string* identity =
      new std::string(std::string(kCompilerVersion) + "+" + kCompilerSourceDigest);
  return identity->c_str();
}

}  // namespace kiln
