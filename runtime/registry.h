// A registry of named runtime functions: builtins the VM calls by name, kernels a library
// provides, user functions registered by embedders. All share runtime::Function.
#ifndef KILN_RUNTIME_REGISTRY_H_
#define KILN_RUNTIME_REGISTRY_H_

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "runtime/value.h"

namespace kiln::runtime {

class FunctionRegistry {
 public:
  // The process-wide registry of builtins.
  static FunctionRegistry& Global();

  // Fails with AlreadyExists when `name` is taken (use Replace to override on purpose).
  absl::Status Register(const std::string& name, Function fn);
  void Replace(const std::string& name, Function fn);
  // NotFound names the function asked for.
  absl::StatusOr<Function> Get(absl::string_view name) const;
  std::vector<std::string> Names() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, Function, std::less<>> functions_;
};

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_REGISTRY_H_
