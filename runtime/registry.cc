#include "runtime/registry.h"

#include "absl/strings/str_cat.h"

namespace kiln::runtime {

const char* Value::kind_name() const {
  static const char* kNames[] = {"none",   "int",   "float", "tensor",
                                 "string", "shape", "tuple", "closure"};
  return kNames[v_.index()];
}

FunctionRegistry& FunctionRegistry::Global() {
  static auto* registry = new FunctionRegistry();
  return *registry;
}

absl::Status FunctionRegistry::Register(const std::string& name, Function fn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!functions_.emplace(name, std::move(fn)).second) {
    return absl::AlreadyExistsError(absl::StrCat("function '", name, "' is already registered"));
  }
  return absl::OkStatus();
}

void FunctionRegistry::Replace(const std::string& name, Function fn) {
  std::lock_guard<std::mutex> lock(mu_);
  functions_[name] = std::move(fn);
}

absl::StatusOr<Function> FunctionRegistry::Get(absl::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = functions_.find(std::string_view(name.data(), name.size()));
  if (it == functions_.end()) {
    return absl::NotFoundError(absl::StrCat("no function '", name, "' is registered"));
  }
  return it->second;
}

std::vector<std::string> FunctionRegistry::Names() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> names;
  for (const auto& [name, fn] : functions_) names.push_back(name);
  return names;
}

}  // namespace kiln::runtime
