#include "runtime/kernel_profile.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runtime/time_evaluator.h"

namespace kiln::runtime {
absl::Status ProfileKernels(const vm::VirtualMachine& vm, const std::string& function,
                            const std::vector<Value>& args,
                            const kiln::v1::ArtifactManifest& manifest, int repeat,
                            kiln::v1::ProfileResult* out) {
  repeat = std::max(1, repeat);
  std::map<std::string, std::vector<double>> per_call;  // kernel -> its seconds in each call
  std::map<std::string, int> calls;                     // kernel -> calls per function call
  std::vector<double> totals, coverage;
  for (int r = 0; r < repeat; ++r) {
    vm::KernelCallTimes times;
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<Value> result = vm.Invoke(function, args, &times);
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    if (!result.ok()) return result.status();
    totals.push_back(took.count());
    double in_kernels = 0;
    for (const auto& [name, seconds] : times.seconds) {
      double sum = 0;
      for (double s : seconds) sum += s;
      per_call[name].push_back(sum);
      calls[name] = static_cast<int>(seconds.size());
      in_kernels += sum;
    }
    coverage.push_back(took.count() > 0 ? in_kernels / took.count() : 0);
  }
  std::map<std::string, const kiln::v1::KernelInfo*> info;
  for (const kiln::v1::KernelInfo& k : manifest.kernels()) info[k.name()] = &k;
  const double total = Median(totals);
  out->set_instrumented_median_seconds(total);
  out->clear_instrumented_seconds();
  for (double t : totals) out->add_instrumented_seconds(t);
  // Per call, then the median: a preempted call must not make the kernels look like less.
  out->set_kernel_coverage(Median(coverage));
  out->clear_kernels();
  for (const auto& [name, seconds] : per_call) {
    kiln::v1::KernelProfile* k = out->add_kernels();
    k->set_name(name);
    k->set_calls(calls[name]);
    k->set_median_seconds(Median(seconds));
    k->set_share(total > 0 ? k->median_seconds() / total : 0);
    for (double s : seconds) k->add_seconds(s);
    if (auto it = info.find(name); it != info.end()) {
      for (const std::string& op : it->second->fused_ops()) k->add_fused_ops(op);
      k->set_flops(it->second->flops() * k->calls());
      if (k->median_seconds() > 0) k->set_gflops_per_second(k->flops() / k->median_seconds() / 1e9);
    }
  }
  std::sort(out->mutable_kernels()->begin(), out->mutable_kernels()->end(),
            [](const kiln::v1::KernelProfile& a, const kiln::v1::KernelProfile& b) {
              return a.median_seconds() > b.median_seconds();
            });
  return absl::OkStatus();
}

bool IsInt8Kernel(const kiln::v1::KernelProfile& kernel) {
  for (const std::string& op : kernel.fused_ops()) {
    if (absl::StartsWith(op, "relax.qnn.")) return true;
  }
  return false;
}

std::string FormatKernelProfile(const kiln::v1::ProfileResult& p) {
  std::string text = absl::StrFormat("%-40s %5s %11s %6s %9s %5s  %s\n", "kernel", "calls",
                                     "median us", "share", "GFLOP/s", "arith", "operators");
  int int8_kernels = 0;
  double int8_share = 0;
  for (const kiln::v1::KernelProfile& k : p.kernels()) {
    std::string rate =
        k.flops() > 0 ? absl::StrFormat("%9.2f", k.gflops_per_second()) : "        -";
    const bool int8 = IsInt8Kernel(k);
    int8_kernels += int8;
    if (int8) int8_share += k.share();
    absl::StrAppend(&text,
                    absl::StrFormat("%-40s %5d %11.2f %5.1f%% %s %5s  %s\n", k.name(), k.calls(),
                                    k.median_seconds() * 1e6, k.share() * 100, rate,
                                    int8 ? "int8" : "float", absl::StrJoin(k.fused_ops(), " ")));
  }
  if (int8_kernels > 0) {
    // An int8 kernel's rate counts its int8 operations (a dot4_u8i8 as eight).
    absl::StrAppend(&text, absl::StrFormat("int8 kernels: %d of %d, %.1f%% of each call; their "
                                           "GFLOP/s count int8 operations\n",
                                           int8_kernels, p.kernels_size(), int8_share * 100));
  }
  absl::StrAppend(
      &text, absl::StrFormat("kernels: %.1f%% of %.2f us per call; the rest is the VM "
                             "(allocation, shape checks, calls)\n",
                             p.kernel_coverage() * 100, p.instrumented_median_seconds() * 1e6));
  return text;
}

}  // namespace kiln::runtime
