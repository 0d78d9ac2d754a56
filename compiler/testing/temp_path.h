// A fresh file path under the test's temporary directory (TEST_TMPDIR, else /tmp): whatever a
// previous run left there is removed first.
#ifndef KILN_COMPILER_TESTING_TEMP_PATH_H_
#define KILN_COMPILER_TESTING_TEMP_PATH_H_

#include <cstdio>
#include <cstdlib>
#include <string>

namespace kiln::testing {

inline std::string FreshTempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
  std::remove(path.c_str());
  return path;
}

}  // namespace kiln::testing

#endif  // KILN_COMPILER_TESTING_TEMP_PATH_H_
