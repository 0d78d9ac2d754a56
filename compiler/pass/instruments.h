// The instruments a PassContext runs around every pass that know no dialect: timing (`kiln
// compile --time-passes`) and dumping (`--dump-after`, through a printer the caller gives). The
// verifiers are the dialects' own: relax/well_formed_verifier.h, tir/verify/tir_verifier.h.
#ifndef KILN_COMPILER_PASS_INSTRUMENTS_H_
#define KILN_COMPILER_PASS_INSTRUMENTS_H_

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "compiler/pass/pass.h"

namespace kiln::pass {

// Wall time of each pass, in the order they ran.
class PassTimer : public PassInstrument {
 public:
  struct Entry {
    std::string pass;
    double seconds = 0;
  };
  void BeforePass(const PassInfo& pass, const ir::IRModule& mod) override;
  absl::Status AfterPass(const PassInfo& pass, const ir::IRModule& mod) override;
  // Also records a step that is not a pass (VM code generation, LLVM, linking).
  void Record(std::string step, double seconds);

  const std::vector<Entry>& entries() const { return entries_; }
  // A table: one line a pass with seconds and share of the total, then the total.
  std::string Report() const;

 private:
  std::chrono::steady_clock::time_point start_;
  std::vector<Entry> entries_;
};

// Whether `after` (pass names, or "all") asks for `pass`.
bool DumpWanted(const std::vector<std::string>& after, const std::string& pass);

// Prints the module after the passes named (or "all") with `print` and hands the text to `sink`.
class PassDumper : public PassInstrument {
 public:
  using Printer = std::function<std::string(const ir::IRModule&)>;
  using Sink = std::function<void(const std::string& pass, const std::string& text)>;
  PassDumper(std::vector<std::string> after, Printer print, Sink sink)
      : after_(std::move(after)), print_(std::move(print)), sink_(std::move(sink)) {}
  absl::Status AfterPass(const PassInfo& pass, const ir::IRModule& mod) override;

 private:
  std::vector<std::string> after_;
  Printer print_;
  Sink sink_;
};

}  // namespace kiln::pass

#endif  // KILN_COMPILER_PASS_INSTRUMENTS_H_
