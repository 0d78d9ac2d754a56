// kiln: the command-line client. Exit status 0 on success, 1 on a user error (one line on
// stderr), 2 on a usage error — the contract of docs/ARCHITECTURE.md and DESIGN §8.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "client/output_check.h"
#include "client/quantize_command.h"
#include "client/remote_commands.h"
#include "client/tune_command.h"
#include "compiler/backend/build.h"
#include "compiler/backend/codegen_passes.h"
#include "compiler/build_info.h"
#include "compiler/frontend/load_module.h"
#include "compiler/frontend/onnx/onnx_importer.h"
#include "compiler/relax/block_builder.h"
#include "compiler/relax/well_formed.h"
#include "compiler/script/printer.h"
#include "compiler/target/cpu_policy.h"
#include "compiler/tir/schedule/trace.h"
#include "compiler/tune/apply.h"
#include "compiler/tune/database.h"
#include "nlohmann/json.hpp"
#include "runtime/artifact.h"
#include "runtime/kernel_profile.h"
#include "runtime/npy.h"
#include "runtime/support/large_stack.h"
#include "runtime/time_evaluator.h"

namespace {

constexpr int kExitUserError = 1;
constexpr int kExitUsage = 2;

int PrintLocalVersions() {
  std::vector<std::pair<std::string, std::string>> versions = kiln::ComponentVersions();
  versions.insert(versions.begin() + 1, {"grpc", grpc::Version()});
  for (const auto& [name, version] : versions) {
    std::printf("%-9s %s\n", name.c_str(), version.c_str());
  }
  // What an untuned compile for this machine shapes its kernels by.
  const kiln::target::CpuTarget& host = kiln::backend::HostCpuTarget();
  std::printf("%-9s %s\n", "cpu", host.ToString().c_str());
  std::printf("%-9s %s\n", "kernels", kiln::target::PolicyFor(host).ToString().c_str());
  std::printf("%-9s %zu operator types, opsets 1-18\n", "onnx",
              kiln::frontend::SupportedOnnxOps().size());
  return 0;
}

// One line naming the file: parse errors already start with `path:line:col:` (the source line
// and caret that follow are for `kiln check`'s report). `whole`: every line, as a failed compile
// lists each well-formedness violation.
std::string Reason(const std::string& path, const absl::Status& status, bool whole = false) {
  std::string message(status.message());
  if (!whole) message = message.substr(0, message.find('\n'));
  return absl::StartsWith(message, path + ":") ? message : path + ": " + message;
}

// kiln print FILE: the normalized module as text.
int PrintModule(const std::string& path) {
  absl::StatusOr<kiln::ir::IRModule> mod = kiln::frontend::ParseModuleFile(path);
  if (mod.ok()) mod = kiln::ir::relax::NormalizeModule(*mod);
  if (!mod.ok()) {
    std::fprintf(stderr, "kiln: %s\n", Reason(path, mod.status()).c_str());
    return kExitUserError;
  }
  std::printf("%s", kiln::script::PrintScript(*mod).c_str());
  return 0;
}

// kiln schedule apply FILE --trace TRACE: the module with the trace replayed onto the function it
// names, marked scheduled (the default schedule leaves it alone), as TVMScript.
int ApplySchedule(const std::string& path, const std::string& trace_path,
                  const std::string& output) {
  absl::StatusOr<kiln::ir::IRModule> mod = kiln::frontend::ParseModuleFile(path);
  if (!mod.ok()) {
    std::fprintf(stderr, "kiln: %s\n", Reason(path, mod.status()).c_str());
    return kExitUserError;
  }
  std::ifstream in(trace_path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "kiln: %s: cannot open the file\n", trace_path.c_str());
    return kExitUserError;
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  absl::StatusOr<kiln::v1::TraceProto> trace = absl::EndsWith(trace_path, ".json")
                                                   ? kiln::tir::TraceFromJson(bytes.str())
                                                   : kiln::tir::TraceFromBytes(bytes.str());
  absl::StatusOr<kiln::tir::Schedule> sch =
      trace.ok() ? kiln::tir::ReplayTrace(*mod, *trace) : trace.status();
  if (!sch.ok()) {
    std::fprintf(stderr, "kiln: %s: %s\n", trace_path.c_str(),
                 std::string(sch.status().message()).c_str());
    return kExitUserError;
  }
  kiln::ir::IRModuleBuilder builder(sch->mod());
  builder.Update(sch->mod()->GetGlobalVar(sch->func_name()),
                 kiln::ir::WithFuncAttr(sch->func(), "tir.is_scheduled", kiln::ir::Bool(true)));
  std::string text = kiln::script::PrintScript(builder.Build());
  if (output.empty()) {
    std::printf("%s", text.c_str());
    return 0;
  }
  std::ofstream out(output, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) {
    std::fprintf(stderr, "kiln: %s: cannot write\n", output.c_str());
    return kExitUserError;
  }
  return 0;
}

// kiln check FILE: every well-formedness violation, then StructInfo errors; exit 1 if any.
int CheckModule(const std::string& path) {
  absl::StatusOr<kiln::ir::IRModule> mod = kiln::frontend::ParseModuleFile(path);
  if (!mod.ok()) {
    // A parse error: the located message with the offending line, then the one-line summary.
    std::printf("%s\n", std::string(mod.status().message()).c_str());
    std::fprintf(stderr, "kiln: %s\n", Reason(path, mod.status()).c_str());
    return kExitUserError;
  }
  // Structure first (without normal form: the input need not be normalized yet).
  kiln::ir::relax::WellFormedOptions options;
  options.check_normal_form = false;
  int errors = 0;
  for (const auto& v : kiln::ir::relax::FindWellFormedViolations(*mod, options)) {
    std::printf("%s: %s\n", path.c_str(), v.ToString().c_str());
    ++errors;
  }
  if (errors == 0) {
    absl::StatusOr<kiln::ir::IRModule> normalized = kiln::ir::relax::NormalizeModule(*mod);
    if (!normalized.ok()) {
      std::printf("%s: [StructInfo] %s\n", path.c_str(),
                  std::string(normalized.status().message()).c_str());
      ++errors;
    }
  }
  if (errors > 0) {
    std::fprintf(stderr, "kiln: %s: %d error%s\n", path.c_str(), errors, errors == 1 ? "" : "s");
    return kExitUserError;
  }
  std::printf("%s: ok (%zu functions)\n", path.c_str(), (*mod)->functions.size());
  return 0;
}

absl::StatusOr<std::string> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open the file"));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

absl::Status WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return absl::PermissionDeniedError(absl::StrCat(path, ": cannot write the file"));
  return absl::OkStatus();
}

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "kiln: %s\n", std::string(status.message()).c_str());
  return kExitUserError;
}

// kiln compile FILE --target T -o OUT.kiln [--dump-after PASS ... [--dump-dir DIR]]
// [--time-passes] [--verify-passes]
int Compile(const std::string& path, const std::string& target, const std::string& output,
            kiln::backend::BuildOptions options, const std::string& dump_dir, bool time_passes,
            const std::string& tuning_db, const kiln::frontend::LoadOptions& load_options) {
  if (!tuning_db.empty()) {
    absl::StatusOr<std::unique_ptr<kiln::tune::TuningDatabase>> db =
        kiln::tune::TuningDatabase::Open(tuning_db);
    if (!db.ok()) return Fail(db.status());
    options.schedule_passes.push_back(kiln::tune::ApplyTuningRecordsPass(
        std::shared_ptr<const kiln::tune::TuningDatabase>(std::move(*db)), target,
        [](const std::string& w) { std::fprintf(stderr, "kiln: warning: %s\n", w.c_str()); }));
  }
  kiln::pass::PassTimer timer;
  if (time_passes) options.timer = &timer;
  if (absl::Status s = kiln::backend::CheckDumpAfter(options); !s.ok()) return Fail(s);
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  Clock::time_point step = Clock::now();
  absl::StatusOr<kiln::ir::IRModule> mod = kiln::frontend::ParseModuleFile(path, load_options);
  if (!mod.ok()) return Fail(absl::InvalidArgumentError(Reason(path, mod.status())));
  timer.Record("Import", seconds_since(step));
  // Dumps go to stderr, or to DIR/NN_PASS.py (NN the pass's position) with --dump-dir.
  int dumps = 0;
  absl::Status dump_status;
  options.dump = [&](const std::string& pass, const std::string& text) {
    ++dumps;
    if (dump_dir.empty()) {
      std::fprintf(stderr, "# ---- after %s ----\n%s\n", pass.c_str(), text.c_str());
      return;
    }
    char name[32];
    std::snprintf(name, sizeof(name), "%02d_", dumps);
    std::string file = absl::StrCat(dump_dir, "/", name, pass,
                                    kiln::backend::DumpsNonScript(pass) ? ".txt" : ".py");
    if (absl::Status s = WriteBytes(file, text); !s.ok() && dump_status.ok()) dump_status = s;
  };
  step = Clock::now();
  double recorded = 0;
  for (const auto& entry : timer.entries()) recorded += entry.seconds;
  absl::StatusOr<std::string> artifact = kiln::backend::BuildArtifact(*mod, target, options);
  // What BuildArtifact spent outside its passes and steps: the artifact's packing and digest.
  double inside = -recorded;
  for (const auto& entry : timer.entries()) inside += entry.seconds;
  timer.Record("Package", seconds_since(step) - inside);
  if (!dump_status.ok()) return Fail(dump_status);
  if (!artifact.ok()) {
    return Fail(absl::InvalidArgumentError(Reason(path, artifact.status(), /*whole=*/true)));
  }
  step = Clock::now();
  absl::Status written = WriteBytes(output, *artifact);
  if (!written.ok()) return Fail(written);
  timer.Record("Write", seconds_since(step));
  // The times go to stderr, so that they never mix with a dump on stdout or the summary.
  if (time_passes) std::fprintf(stderr, "%s", timer.Report().c_str());
  absl::StatusOr<kiln::v1::ArtifactManifest> manifest =
      kiln::runtime::ReadArtifactManifest(*artifact);
  if (!manifest.ok()) return Fail(manifest.status());
  std::printf("%s: %zu bytes, target %s, digest %s\n", output.c_str(), artifact->size(),
              target.c_str(), manifest->digest().substr(0, 16).c_str());
  if (!tuning_db.empty()) {
    std::printf("  tuned kernels: %d%s%s\n", manifest->tuned_kernels_size(),
                manifest->tuned_kernels_size() ? " (" : "",
                manifest->tuned_kernels_size()
                    ? (absl::StrJoin(manifest->tuned_kernels(), ", ") + ")").c_str()
                    : "");
  }
  for (const kiln::v1::EntryFunction& fn : manifest->functions()) {
    if (fn.planned_tensor_bytes() == 0) continue;
    std::printf("  %s: planned memory %lld bytes (%lld bytes of intermediates without reuse)\n",
                fn.name().c_str(), static_cast<long long>(fn.planned_storage_bytes()),
                static_cast<long long>(fn.planned_tensor_bytes()));
  }
  return 0;
}

// The arguments of `entry`: NAME=X.npy files, or random values from the signature when none
// are given and `random_ok`.
absl::StatusOr<std::vector<kiln::runtime::Value>> Inputs(const kiln::v1::EntryFunction& entry,
                                                         const std::vector<std::string>& specs,
                                                         bool random_ok) {
  std::map<std::string, std::string> files;
  for (const std::string& spec : specs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos)
      return absl::InvalidArgumentError(absl::StrCat("--input ", spec, ": expected NAME=FILE.npy"));
    files[spec.substr(0, eq)] = spec.substr(eq + 1);
  }
  std::vector<kiln::runtime::Value> args;
  for (const auto& p : entry.params()) {
    auto it = files.find(p.name());
    if (it != files.end()) {
      absl::StatusOr<std::string> bytes = ReadBytes(it->second);
      if (!bytes.ok()) return bytes.status();
      absl::StatusOr<kiln::runtime::Tensor> t = kiln::runtime::ReadNpy(*bytes, it->second);
      if (!t.ok()) return t.status();
      args.emplace_back(*t);
      files.erase(it);
      continue;
    }
    if (!random_ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("no --input for parameter '", p.name(), "' of '", entry.name(), "'"));
    }
    absl::StatusOr<kiln::runtime::Tensor> t = kiln::runtime::RandomArgument(p, args.size());
    if (!t.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(t.status().message(), " (--input ", p.name(), "=FILE.npy)"));
    }
    args.emplace_back(*t);
  }
  if (!files.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", entry.name(), "' has no parameter '", files.begin()->first, "'"));
  }
  return args;
}

// Threads for parallel kernels (0: one per core).
int threads_flag = 0;

absl::StatusOr<kiln::runtime::LoadedArtifact> Load(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadBytes(path);
  if (!bytes.ok()) return bytes.status();
  int threads = threads_flag > 0 ? threads_flag : kiln::runtime::ThreadPool::DefaultThreads();
  absl::StatusOr<kiln::runtime::LoadedArtifact> loaded =
      kiln::runtime::LoadArtifact(*bytes, std::make_shared<kiln::runtime::ThreadPool>(threads));
  if (!loaded.ok()) {
    return absl::Status(loaded.status().code(),
                        absl::StrCat(path, ": ", loaded.status().message()));
  }
  return loaded;
}

// A loaded artifact and the arguments for one of its functions.
struct Prepared {
  kiln::runtime::LoadedArtifact loaded;
  std::vector<kiln::runtime::Value> args;
};

absl::StatusOr<Prepared> Prepare(const std::string& path, const std::string& function,
                                 const std::vector<std::string>& inputs, bool random_ok) {
  absl::StatusOr<kiln::runtime::LoadedArtifact> loaded = Load(path);
  if (!loaded.ok()) return loaded.status();
  const kiln::v1::EntryFunction* entry =
      kiln::runtime::FindEntryFunction(loaded->manifest, function);
  if (entry == nullptr)
    return absl::NotFoundError(absl::StrCat(path, " has no function '", function, "'"));
  absl::StatusOr<std::vector<kiln::runtime::Value>> args = Inputs(*entry, inputs, random_ok);
  if (!args.ok()) return args.status();
  return Prepared{std::move(*loaded), std::move(*args)};
}

// Writes `v` as DIR/NAME.npy, tuples as NAME_0.npy, NAME_1.npy, ...
absl::Status WriteOutputs(const kiln::runtime::Value& v, const std::string& dir,
                          const std::string& name, std::vector<std::string>* written) {
  if (const auto* t = v.as_tensor()) {
    absl::StatusOr<std::string> bytes = kiln::runtime::WriteNpy(*t);
    if (!bytes.ok()) return bytes.status();
    std::string path = dir + "/" + name + ".npy";
    absl::Status s = WriteBytes(path, *bytes);
    if (s.ok()) written->push_back(path);
    return s;
  }
  if (const auto* tuple = v.as_tuple()) {
    for (size_t i = 0; i < tuple->size(); ++i) {
      absl::Status s = WriteOutputs((*tuple)[i], dir, absl::StrCat(name, "_", i), written);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }
  return absl::UnimplementedError(
      absl::StrCat("an output of kind ", v.kind_name(), " cannot be written as .npy"));
}

// kiln run OUT.kiln --input NAME=X.npy ... --output-dir DIR [--function F]
// (--expect NAME=REF.npy compares afterwards: client/output_check.h)
int Run(const std::string& path, const std::vector<std::string>& inputs,
        const std::string& output_dir, const std::string& function) {
  absl::StatusOr<Prepared> call = Prepare(path, function, inputs, /*random_ok=*/false);
  if (!call.ok()) return Fail(call.status());
  absl::StatusOr<kiln::runtime::Value> out = call->loaded.vm->Invoke(function, call->args);
  if (!out.ok()) return Fail(out.status());
  std::error_code ec;
  std::filesystem::create_directories(output_dir, ec);
  std::vector<std::string> written;
  absl::Status s = WriteOutputs(*out, output_dir, "output", &written);
  if (!s.ok()) return Fail(s);
  for (const std::string& w : written) std::printf("%s\n", w.c_str());
  return 0;
}

// `kiln tune --budget`: "3m", "90s", "1h30m" (absl::ParseDuration), or a bare number of seconds.
absl::StatusOr<double> ParseBudget(const std::string& text) {
  double seconds = 0;
  absl::Duration d;
  if (!absl::SimpleAtod(text, &seconds)) {
    if (!absl::ParseDuration(text, &d)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", text, "': not a duration (90s, 3m, 1h30m, or seconds)"));
    }
    seconds = absl::ToDoubleSeconds(d);
  }
  if (!(seconds > 0) || !std::isfinite(seconds)) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "': must be more than 0 s"));
  }
  return seconds;
}

// kiln bench OUT.kiln [--input NAME=X.npy ...] [--number N] [--repeat R] [--min-repeat-ms M]
// [--json]: every repeat's mean seconds per call.
int Bench(const std::string& path, const std::vector<std::string>& inputs,
          const std::string& function, const kiln::runtime::TimeEvaluatorOptions& options,
          bool json, bool per_kernel) {
  absl::StatusOr<Prepared> call = Prepare(path, function, inputs, /*random_ok=*/true);
  if (!call.ok()) return Fail(call.status());
  const kiln::runtime::vm::VirtualMachine& vm = *call->loaded.vm;
  const std::vector<kiln::runtime::Value>& args = call->args;
  absl::StatusOr<std::vector<double>> times =
      kiln::runtime::TimeFunction([&]() { return vm.Invoke(function, args).status(); }, options);
  if (!times.ok()) return Fail(times.status());
  std::vector<double> sorted = *times;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted[sorted.size() / 2];
  kiln::v1::ProfileResult kernels;
  if (per_kernel) {
    absl::Status profiled = kiln::runtime::ProfileKernels(vm, function, args, call->loaded.manifest,
                                                          options.repeat, &kernels);
    if (!profiled.ok()) return Fail(profiled);
  }
  if (json) {
    nlohmann::json j;
    j["artifact"] = path;
    j["function"] = function;
    j["number"] = options.number;
    j["repeat"] = options.repeat;
    j["seconds_per_call"] = *times;
    j["median_seconds"] = median;
    j["min_seconds"] = sorted.front();
    if (per_kernel) {
      j["instrumented_median_seconds"] = kernels.instrumented_median_seconds();
      j["instrumented_seconds"] = std::vector<double>(kernels.instrumented_seconds().begin(),
                                                      kernels.instrumented_seconds().end());
      j["kernel_coverage"] = kernels.kernel_coverage();
      nlohmann::json list = nlohmann::json::array();
      for (const kiln::v1::KernelProfile& k : kernels.kernels()) {
        list.push_back(
            {{"name", k.name()},
             {"fused_ops", std::vector<std::string>(k.fused_ops().begin(), k.fused_ops().end())},
             {"calls", k.calls()},
             {"median_seconds", k.median_seconds()},
             {"share", k.share()},
             {"flops", k.flops()},
             {"gflops_per_second", k.gflops_per_second()},
             {"seconds", std::vector<double>(k.seconds().begin(), k.seconds().end())}});
      }
      j["kernels"] = list;
    }
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("%-12s %12s %12s %12s\n", "function", "median us", "min us", "max us");
  std::printf("%-12s %12.2f %12.2f %12.2f\n", function.c_str(), median * 1e6, sorted.front() * 1e6,
              sorted.back() * 1e6);
  if (per_kernel) std::printf("\n%s", kiln::runtime::FormatKernelProfile(kernels).c_str());
  return 0;
}

}  // namespace

int KilnMain(int argc, char** argv) {
  CLI::App app{"kiln: compile, run and benchmark ML models with Kiln"};
  app.require_subcommand(1);

  CLI::App* version = app.add_subcommand("version", "print the versions this client links");
  kiln::client::RemoteFlags remote;
  // The flags of every command that talks to kilnd; `required` when it only works remotely.
  auto add_remote = [&](CLI::App* cmd, bool required) {
    CLI::Option* server =
        cmd->add_option("--server", remote.channel.address, "kilnd address, host:port");
    if (required) server->required();
    cmd->add_option("--token", remote.token_file, "file holding a client token");
    cmd->add_option("--tls-ca", remote.channel.tls_ca, "PEM of the CA that signed kilnd")
        ->check(CLI::ExistingFile);
    cmd->add_option("--tls-cert", remote.channel.tls_cert, "PEM client certificate (mutual TLS)")
        ->check(CLI::ExistingFile);
    cmd->add_option("--tls-key", remote.channel.tls_key, "PEM client key (mutual TLS)")
        ->check(CLI::ExistingFile);
    cmd->add_option("--deadline-s", remote.deadline_s, "job deadline (default: the server's)")
        ->check(CLI::NonNegativeNumber);
  };
  CLI::App* info = app.add_subcommand("info", "print what a kilnd server runs");
  int timeout_seconds = 10;
  add_remote(info, true);
  info->add_option("--timeout", timeout_seconds, "seconds to wait for the server")
      ->check(CLI::PositiveNumber);
  info->add_flag("--json", remote.json, "as JSON");

  std::string file;
  CLI::App* print = app.add_subcommand("print", "parse a module and print it normalized");
  print->add_option("FILE", file, "TVMScript (.py), protobuf IR (.pb) or ONNX (.onnx)")->required();
  CLI::App* check =
      app.add_subcommand("check", "report every well-formedness and StructInfo error");
  check->add_option("FILE", file, "TVMScript (.py), protobuf IR (.pb) or ONNX (.onnx)")->required();

  std::string target = "llvm", output, output_dir, function = "main", trace_file;
  CLI::App* schedule = app.add_subcommand("schedule", "schedule TensorIR functions");
  CLI::App* schedule_apply =
      schedule->add_subcommand("apply", "replay a schedule trace onto a module's PrimFunc");
  schedule_apply->add_option("FILE", file, "TVMScript (.py) or protobuf IR (.pb)")->required();
  schedule_apply->add_option("--trace", trace_file, "the trace: JSON (.json) or protobuf")
      ->required();
  schedule_apply->add_option("-o,--output", output, "the TVMScript to write (default: stdout)");
  schedule->require_subcommand(1);
  std::vector<std::string> inputs;
  CLI::App* compile = app.add_subcommand("compile", "compile a module into a .kiln artifact");
  compile->add_option("FILE", file, "TVMScript (.py), protobuf IR (.pb) or ONNX (.onnx)")
      ->required();
  compile->add_option("--target", target, "TVM-style target, e.g. llvm");
  compile->add_option("-o,--output", output, "the .kiln file to write")->required();
  kiln::backend::BuildOptions build_options;
  std::string dump_dir;
  bool no_fuse = false, no_fold = false, no_tuning = false;
  compile->add_option("--dump-after", build_options.dump_after,
                      "print the module after this pass (repeatable; 'all' for every pass)");
  compile->add_option("--dump-dir", dump_dir, "write dumps to DIR/NN_PASS.py instead of stderr")
      ->check(CLI::ExistingDirectory);
  compile->add_flag("--no-fuse", no_fuse, "one kernel per operator (skip FuseOps)");
  compile->add_flag("--no-fold", no_fold, "skip FoldConstant");
  compile->add_flag("--no-tuning", no_tuning,
                    "with --server: default schedules only, not the service's tuning records");
  std::string compile_device;
  compile->add_option("--device", compile_device,
                      "with --server: compile for this device (a key, or attributes such as "
                      "arch=aarch64,features~neon,min_cores=4): its target unless --target");
  int64_t max_constant_mb = 64, max_folded_mb = 256;
  compile
      ->add_option("--max-constant-mb", max_constant_mb,
                   "largest constant computed at compile time (ONNX import, FoldConstant)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  compile->add_option("--max-folded-mb", max_folded_mb, "constant data FoldConstant may add in all")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  bool time_passes = false, verify_passes = false;
  compile->add_flag("--time-passes", time_passes,
                    "print each pass's and code generation step's wall time to stderr");
  compile->add_flag("--verify-passes", verify_passes,
                    "check well-formedness after every pass (always on in debug builds)");
  std::string tuning_db;
  compile
      ->add_option("--tuning-db", tuning_db,
                   "apply the best records of this tuning database (kiln tune)")
      ->check(CLI::ExistingFile);
  add_remote(compile, false);
  kiln::client::TuneFlags tune_flags;
  CLI::App* tune = app.add_subcommand("tune", "auto-tune a model's kernels into a tuning database");
  tune->add_option("MODEL", tune_flags.model, "TVMScript (.py), protobuf IR (.pb) or ONNX (.onnx)")
      ->required();
  tune->add_option("--target", tune_flags.target, "TVM-style target (default llvm)");
  tune->add_option("--tuning-db", tune_flags.database,
                   "the SQLite tuning database (created); not with --server, which keeps its own");
  tune->add_option("--trials", tune_flags.trials, "candidates to measure in all (default 64)")
      ->check(CLI::PositiveNumber);
  tune->add_option("--max-trials-per-task", tune_flags.max_trials_per_task,
                   "at most this many per kernel (default: no limit)")
      ->check(CLI::NonNegativeNumber);
  tune->add_option("--seed", tune_flags.seed, "the search's seed (default 1)");
  tune->add_option("--timeout-s", tune_flags.timeout_s,
                   "per candidate: a run past it is killed and recorded as failed (default 20)")
      ->check(CLI::PositiveNumber);
  tune->add_option("--threads", tune_flags.threads, "threads the kernels run on (default 1)")
      ->check(CLI::PositiveNumber);
  tune->add_flag("--random-search", tune_flags.random_search,
                 "propose random candidates (no cost model): the baseline");
  tune->add_flag("--json", tune_flags.json, "print the report as JSON");
  tune->add_option("--curve-svg", tune_flags.curve_svg, "write the tuning curve as an SVG plot");
  std::string tune_budget;
  tune->add_option("--budget", tune_budget,
                   "time the search may take (90s, 3m, 1h30m; a bare number is seconds): it "
                   "returns what it has when the time runs out; without --trials, as many as fit");
  bool from_scratch = false;
  tune->add_flag("--from-scratch", from_scratch,
                 "neither Kiln's shipped cost model nor the records of a kernel's family (the "
                 "baseline)");
  bool no_model_check = false;
  tune->add_flag("--no-model-check", no_model_check,
                 "skip timing the whole model untuned and tuned at the end");
  std::string device;
  tune->add_option("--device", device,
                   "with --server: the device whose agents measure the candidates (a key or "
                   "attributes); its target unless --target");
  add_remote(tune, false);
  kiln::client::QuantizeFlags quantize_flags;
  CLI::App* quantize = app.add_subcommand(
      "quantize", "int8 post-training quantization of an ONNX model, with its accuracy per layer");
  quantize->add_option("MODEL", quantize_flags.model, "a float ONNX model (.onnx)")
      ->required()
      ->check(CLI::ExistingFile);
  quantize
      ->add_option("--calibration", quantize_flags.calibration,
                   "a folder of inputs: X.npy each (one model input) or a folder each "
                   "holding INPUT_NAME.npy")
      ->required()
      ->check(CLI::ExistingDirectory);
  quantize
      ->add_option("--eval", quantize_flags.eval,
                   "held-out inputs, as --calibration, the accuracy is measured on "
                   "(default: the calibration inputs)")
      ->check(CLI::ExistingDirectory);
  quantize->add_option("-o,--output", quantize_flags.output, "the int8 QDQ model (.onnx)")
      ->required();
  quantize->add_option("--artifact", quantize_flags.artifact,
                       "also compile the QDQ model into this .kiln artifact (for --target)");
  quantize->add_option("--target", quantize_flags.target, "TVM-style target (default llvm)");
  quantize->add_option("--method", quantize_flags.method,
                       "activation ranges: minmax (default), percentile or entropy");
  quantize
      ->add_option("--percentile", quantize_flags.percentile,
                   "for --method percentile: the |x| percentile kept (default 99.99)")
      ->check(CLI::Range(50.0, 100.0));
  quantize->add_option("--keep-float", quantize_flags.keep_float,
                       "a layer (ONNX node name) to leave in float; repeatable");
  quantize->add_option("--report", quantize_flags.report, "write the accuracy report as JSON");
  quantize
      ->add_option("--threads", quantize_flags.threads,
                   "threads the calibration runs use (default 1)")
      ->check(CLI::PositiveNumber);
  quantize->add_option("--device", quantize_flags.device,
                       "with --server: compile the QDQ model for this device (a key or "
                       "attributes); its target unless --target");
  add_remote(quantize, false);
  CLI::App* run = app.add_subcommand("run", "run a function of a .kiln artifact on .npy inputs");
  run->add_option("ARTIFACT", file, "a .kiln file")->required();
  run->add_option("--input", inputs, "NAME=X.npy, one per parameter");
  run->add_option("--output-dir", output_dir, "where the outputs go as .npy")->required();
  run->add_option("--function", function, "the function to run");
  run->add_option("--threads", threads_flag, "threads for kernels (default: one per core)")
      ->check(CLI::NonNegativeNumber);
  add_remote(run, false);
  run->add_option(
      "--device", device,
      "with --server: the device to run on (a key, or attributes such as arch=aarch64)");
  std::vector<std::string> expects;
  double tolerance = 1e-4;
  run->add_option("--expect", expects,
                  "NAME=REF.npy: compare output NAME with a reference; exit 1 if they differ");
  run->add_option("--tolerance", tolerance, "for --expect: |out - ref| <= T * (1 + |ref|)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  kiln::runtime::TimeEvaluatorOptions timing;
  timing.repeat = 10;
  timing.min_repeat_ms = 100;
  bool json = false;
  CLI::App* bench = app.add_subcommand("bench", "time a function of a .kiln artifact");
  bench->add_option("ARTIFACT", file, "a .kiln file")->required();
  bench->add_option("--input", inputs, "NAME=X.npy (random from the signature when absent)");
  bench->add_option("--function", function, "the function to time");
  bench->add_option("--number", timing.number, "calls per measurement")->check(CLI::PositiveNumber);
  bench->add_option("--repeat", timing.repeat, "measurements")->check(CLI::PositiveNumber);
  bench->add_option("--min-repeat-ms", timing.min_repeat_ms, "grow number to reach this")
      ->check(CLI::NonNegativeNumber);
  bench->add_flag("--json", json, "every repeat as JSON");
  bool per_kernel = false;
  bench->add_flag("--per-kernel", per_kernel,
                  "also time each kernel (--repeat instrumented calls): its share, FLOP rate and "
                  "the operators fused into it");
  bench->add_option("--threads", threads_flag, "threads for kernels (default: one per core)")
      ->check(CLI::NonNegativeNumber);
  add_remote(bench, false);
  bench->add_option("--device", device,
                    "with --server: the device to time on (a key, or attributes such as "
                    "arch=aarch64)");
  bench->add_option("--warmup", timing.warmup, "untimed calls first")
      ->check(CLI::NonNegativeNumber);
  bench->add_option("--cooldown-ms", timing.cooldown_ms, "pause between repeats")
      ->check(CLI::NonNegativeNumber);

  CLI::App* jobs = app.add_subcommand("jobs", "list a kilnd's jobs, newest first");
  add_remote(jobs, true);
  std::string state;
  int limit = 50;
  jobs->add_option("--state", state, "only jobs in this state");
  jobs->add_option("--limit", limit, "at most this many")->check(CLI::PositiveNumber);
  jobs->add_flag("--json", remote.json, "as JSON");
  std::string job_id, reason;
  CLI::App* watch = app.add_subcommand("watch", "follow a job until it ends");
  add_remote(watch, true);
  watch->add_option("JOB", job_id, "job id")->required();
  watch->add_flag("--json", remote.json, "events as JSON");
  CLI::App* cancel = app.add_subcommand("cancel", "cancel a queued or running job");
  add_remote(cancel, true);
  cancel->add_option("JOB", job_id, "job id")->required();
  cancel->add_option("--reason", reason, "recorded on the job");
  CLI::App* devices = app.add_subcommand("devices", "list the devices agents registered");
  add_remote(devices, true);
  devices->add_flag("--json", remote.json, "as JSON");
  CLI::App* artifact = app.add_subcommand("artifact", "artifacts in a kilnd's store");
  artifact->require_subcommand(1);
  CLI::App* records =
      app.add_subcommand("tuning-records", "list, export or import a tuning database's records");
  records->require_subcommand(1);
  std::string records_db;
  CLI::App* records_list = records->add_subcommand("list", "each workload: records and best");
  CLI::App* records_export = records->add_subcommand("export", "every record as JSON lines");
  CLI::App* records_import = records->add_subcommand("import", "add records from JSON lines");
  CLI::App* records_publish = records->add_subcommand(
      "publish", "make a tenant's records every tenant's (kilnd applies a tenant's to its own)");
  std::string records_owner;
  records_publish->add_option("--owner", records_owner, "the tenant (its principal's name)")
      ->required();
  for (CLI::App* sub : {records_list, records_export, records_import, records_publish}) {
    sub->add_option("--tuning-db", records_db,
                    "the SQLite tuning database (a kilnd store's is STORE/tuning.db)")
        ->required();
  }
  CLI::App* records_train = records->add_subcommand(
      "train-model", "train the tuner's cost model on the records of databases (XGBoost JSON)");
  std::vector<std::string> train_dbs;
  records_train->add_option("--tuning-db", train_dbs, "a SQLite tuning database (repeatable)")
      ->required()
      ->check(CLI::ExistingFile);
  records_train->add_option("-o,--output", output, "the model file to write")->required();
  records_export->add_option("-o,--output", output, "the file to write (default: stdout)");
  records_import->add_option("FILE", file, "JSON lines, as export writes them")
      ->required()
      ->check(CLI::ExistingFile);
  CLI::App* artifact_get = artifact->add_subcommand("get", "download an artifact by digest");
  add_remote(artifact_get, true);
  std::string digest;
  artifact_get->add_option("DIGEST", digest, "the artifact's SHA-256 digest")->required();
  artifact_get->add_option("-o,--output", output, "the .kiln file to write")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the reason and usage
    return kExitUsage;
  }

  if (*version) return PrintLocalVersions();
  bool remote_mode = !remote.channel.address.empty();
  if (*info) return kiln::client::RemoteInfo(remote, timeout_seconds);
  if (*jobs) return kiln::client::RemoteJobs(remote, state, limit);
  if (*watch) return kiln::client::RemoteWatch(remote, job_id);
  if (*cancel) return kiln::client::RemoteCancel(remote, job_id, reason);
  if (*devices) return kiln::client::RemoteDevices(remote);
  if (*artifact_get) return kiln::client::RemoteArtifactGet(remote, digest, output);
  if ((*run || *bench) && remote_mode != !device.empty()) {
    std::fprintf(stderr, "kiln: --server and --device go together\n");
    return kExitUsage;
  }
  if (*print) return PrintModule(file);
  if (*schedule_apply) return ApplySchedule(file, trace_file, output);
  if (*records_list) return kiln::client::ListTuningRecords(records_db);
  if (*records_export) return kiln::client::ExportTuningRecords(records_db, output);
  if (*records_import) return kiln::client::ImportTuningRecords(records_db, file);
  if (*records_publish) return kiln::client::PublishTuningRecords(records_db, records_owner);
  if (*records_train) return kiln::client::TrainCostModel(train_dbs, output);
  if (*check) return CheckModule(file);
  if (*compile) {
    build_options.fuse = !no_fuse;
    build_options.fold_constants = !no_fold;
    build_options.fold_limits.max_constant_bytes = max_constant_mb << 20;
    build_options.fold_limits.max_total_bytes = max_folded_mb << 20;
    build_options.verify = build_options.verify || verify_passes;
    kiln::frontend::LoadOptions load_options;
    load_options.max_constant_bytes = max_constant_mb << 20;
    if (!remote_mode && !compile_device.empty()) {
      std::fprintf(stderr, "kiln: compile --device needs --server (the devices are kilnd's)\n");
      return kExitUsage;
    }
    if (remote_mode) {
      if (!build_options.dump_after.empty() || time_passes || !tuning_db.empty() ||
          compile->count("--max-constant-mb") > 0 || compile->count("--max-folded-mb") > 0) {
        std::fprintf(stderr,
                     "kiln: --dump-after, --time-passes, --tuning-db and the constant limits "
                     "work in-process only (without --server; kilnd has its own limits)\n");
        return kExitUsage;
      }
      kiln::v1::CompileOptions options;
      options.set_no_fuse(no_fuse);
      options.set_no_fold(no_fold);
      options.set_no_tuning(no_tuning);
      return kiln::client::RemoteCompile(
          remote, file, compile->count("--target") > 0 || compile_device.empty() ? target : "",
          compile_device, output, options);
    }
    return Compile(file, target, output, build_options, dump_dir, time_passes, tuning_db,
                   load_options);
  }
  if (*quantize) {
    quantize_flags.target_given = quantize->count("--target") > 0;
    return kiln::client::QuantizeModel(quantize_flags, remote);
  }
  if (*tune) {
    if (remote_mode != !device.empty()) {
      std::fprintf(stderr, "kiln: --server and --device go together\n");
      return kExitUsage;
    }
    if (!tune_budget.empty()) {
      absl::StatusOr<double> budget = ParseBudget(tune_budget);
      if (!budget.ok()) {
        std::fprintf(stderr, "kiln: --budget %s\n", std::string(budget.status().message()).c_str());
        return kExitUsage;
      }
      tune_flags.budget_s = *budget;
      if (tune->count("--trials") == 0) tune_flags.trials = kiln::client::kUnlimitedTrials;
    }
    tune_flags.model_check = !no_model_check;
    tune_flags.from_scratch = from_scratch;
    if (remote_mode) {
      if (!tune_flags.database.empty() || tune_flags.random_search ||
          !tune_flags.curve_svg.empty() || from_scratch || no_model_check) {
        std::fprintf(stderr,
                     "kiln: --tuning-db, --random-search, --curve-svg, --from-scratch and "
                     "--no-model-check work in-process only (kilnd keeps one tuning database)\n");
        return kExitUsage;
      }
      remote.json = tune_flags.json;
      // Without --trials a budgeted tune asks for as many as the server allows (0).
      const int trials =
          tune_flags.trials == kiln::client::kUnlimitedTrials ? 0 : tune_flags.trials;
      return kiln::client::RemoteTune(
          remote, tune_flags.model, tune->count("--target") > 0 ? tune_flags.target : "", device,
          trials, tune_flags.max_trials_per_task, tune_flags.seed, tune_flags.budget_s);
    }
    if (tune_flags.database.empty()) {
      std::fprintf(stderr, "kiln: tune: --tuning-db is required (or --server and --device)\n");
      return kExitUsage;
    }
    return kiln::client::TuneModel(tune_flags);
  }
  if (*run) {
    int rc = remote_mode
                 ? kiln::client::RemoteRun(remote, file, device, function, inputs, output_dir)
                 : Run(file, inputs, output_dir, function);
    if (rc != 0 || expects.empty()) return rc;
    return kiln::client::CheckOutputs(output_dir, expects, tolerance);
  }
  if (*bench && remote_mode) {
    if (!inputs.empty()) {
      std::fprintf(stderr, "kiln: a remote bench times random inputs; drop --input\n");
      return kExitUsage;
    }
    kiln::v1::ProfileOptions profile;
    profile.set_function(function);
    profile.set_warmup(timing.warmup);
    profile.set_number(timing.number);
    profile.set_repeat(timing.repeat);
    profile.set_min_repeat_ms(timing.min_repeat_ms);
    profile.set_cooldown_ms(timing.cooldown_ms);
    profile.set_per_kernel(per_kernel);
    remote.json = json;
    return kiln::client::RemoteBench(remote, file, device, profile);
  }
  if (*bench) return Bench(file, inputs, function, timing, json, per_kernel);
  return kExitUsage;
}

// Compiling recurses once per level of the IR's nesting: the whole command runs on a thread with
// the stack the compiler is tested with (and the allocator set for a process that compiles).
int main(int argc, char** argv) {
  return kiln::runtime::RunCompilerProcess([&] { return KilnMain(argc, argv); });
}
