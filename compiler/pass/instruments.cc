#include "compiler/pass/instruments.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kiln::pass {

void PassTimer::BeforePass(const PassInfo& /*pass*/, const ir::IRModule& /*mod*/) {
  start_ = std::chrono::steady_clock::now();
}

absl::Status PassTimer::AfterPass(const PassInfo& pass, const ir::IRModule& /*mod*/) {
  Record(pass.name,
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  return absl::OkStatus();
}

void PassTimer::Record(std::string step, double seconds) {
  entries_.push_back({std::move(step), seconds});
}

std::string PassTimer::Report() const {
  double total = 0;
  for (const Entry& e : entries_) total += e.seconds;
  std::string out = absl::StrFormat("%-28s %12s %7s\n", "pass", "seconds", "share");
  for (const Entry& e : entries_) {
    absl::StrAppendFormat(&out, "%-28s %12.6f %6.1f%%\n", e.pass, e.seconds,
                          total > 0 ? 100 * e.seconds / total : 0.0);
  }
  absl::StrAppendFormat(&out, "%-28s %12.6f\n", "total", total);
  return out;
}

bool DumpWanted(const std::vector<std::string>& after, const std::string& pass) {
  for (const std::string& d : after) {
    if (d == "all" || d == pass) return true;
  }
  return false;
}

absl::Status PassDumper::AfterPass(const PassInfo& pass, const ir::IRModule& mod) {
  if (!DumpWanted(after_, pass.name)) return absl::OkStatus();
  sink_(pass.name, pass.dump_text ? pass.dump_text(mod) : print_(mod));
  return absl::OkStatus();
}

}  // namespace kiln::pass
