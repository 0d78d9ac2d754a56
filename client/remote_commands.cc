#include "client/remote_commands.h"

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/kiln_client.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"
#include "runtime/agent/tensor_value.h"
#include "runtime/kernel_profile.h"
#include "runtime/npy.h"

namespace kiln::client {
namespace {

// `--device` names a device by key ("board") or by attributes ("arch=aarch64,features~neon").
void NameDevice(const std::string& device, std::string* key, std::string* selector) {
  *(device.find_first_of("=~") == std::string::npos ? key : selector) = device;
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "kiln: %s\n", message.substr(0, message.find('\n')).c_str());
  return 1;
}

int Fail(const absl::Status& status) { return Fail(std::string(status.message())); }

absl::StatusOr<std::unique_ptr<KilnClient>> Connect(const RemoteFlags& flags) {
  runtime::ChannelOptions options = flags.channel;
  if (!flags.token_file.empty()) {
    absl::StatusOr<std::string> token = runtime::ReadTokenFile(flags.token_file);
    if (!token.ok()) return token.status();
    options.token = *token;
  }
  return KilnClient::Connect(options);
}

std::string StateName(v1::JobState state) {
  std::string name = v1::JobState_Name(state);
  return absl::AsciiStrToLower(name.substr(name.rfind('_') + 1));
}

std::string KindName(v1::JobKind kind) {
  std::string name = v1::JobKind_Name(kind);
  return absl::AsciiStrToLower(name.substr(name.rfind('_') + 1));
}

std::string ToJson(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(m, &out, options).ok()) return "{}";
  return out;
}

std::string LocalTime(int64_t unix_ms) {
  if (unix_ms == 0) return "-";
  std::time_t t = unix_ms / 1000;
  std::tm local;
  localtime_r(&t, &local);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &local);
  return text;
}

// Progress on stderr: one line per event, with the time since the watch began.
KilnClient::EventFn Progress(bool quiet) {
  auto start = std::chrono::steady_clock::now();
  return [start, quiet](const v1::JobEvent& e) {
    if (quiet || e.message().empty()) return;
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "[%6.2fs] %s %-9s %s\n", t, e.job_id().c_str(),
                 StateName(e.state()).c_str(), e.message().c_str());
  };
}

// Follows a submitted job to its end; 0 when it succeeded.
absl::StatusOr<v1::Job> Follow(KilnClient& client, const v1::SubmitResponse& submitted,
                               bool quiet) {
  absl::StatusOr<v1::Job> job = client.Wait(submitted.job().id(), Progress(quiet));
  if (!job.ok()) return job.status();
  if (job->state() != v1::JOB_STATE_SUCCEEDED) {
    return absl::AbortedError(
        absl::StrCat("job ", job->id(), " ", StateName(job->state()), ": ", job->reason()));
  }
  return job;
}

absl::Status WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return absl::PermissionDeniedError(absl::StrCat(path, ": cannot write the file"));
  return absl::OkStatus();
}

}  // namespace

int RemoteInfo(const RemoteFlags& flags, int timeout_seconds) {
  absl::StatusOr<std::unique_ptr<KilnClient>> client = Connect(flags);
  if (!client.ok()) return Fail(client.status());
  absl::StatusOr<v1::ServerInfo> info = (*client)->ServerInfo(timeout_seconds);
  if (!info.ok()) {
    return Fail(absl::StrCat("server ", flags.channel.address, ": ", info.status().message()));
  }
  if (flags.json) {
    std::printf("%s\n", ToJson(*info).c_str());
    return 0;
  }
  std::printf("server    %s\n", flags.channel.address.c_str());
  std::printf("host      %s\n", info->host_target_triple().c_str());
  for (const auto& component : info->components()) {
    std::printf("%-9s %s\n", component.name().c_str(), component.version().c_str());
  }
  return 0;
}

int RemoteCompile(const RemoteFlags& flags, const std::string& path, const std::string& target,
                  const std::string& device, const std::string& output,
                  const v1::CompileOptions& options) {
  absl::StatusOr<std::unique_ptr<KilnClient>> client = Connect(flags);
  if (!client.ok()) return Fail(client.status());
  v1::SubmitCompileRequest request;
  absl::StatusOr<v1::ModuleSource> source = ModuleSourceFromFile(path);
  if (!source.ok()) return Fail(source.status());
  *request.mutable_module() = std::move(*source);
  request.set_target(target);
  if (!device.empty())
    NameDevice(device, request.mutable_device_key(), request.mutable_device_selector());
  *request.mutable_options() = options;
  request.set_deadline_ms(flags.deadline_s * 1000);
  absl::StatusOr<v1::SubmitResponse> submitted = (*client)->SubmitCompile(request);
  if (!submitted.ok()) return Fail(submitted.status());
  absl::StatusOr<v1::Job> job = Follow(**client, *submitted, flags.json);
  if (!job.ok()) return Fail(job.status());
  absl::StatusOr<std::string> bytes = (*client)->DownloadArtifact(job->artifact_digest());
  if (!bytes.ok()) return Fail(bytes.status());
  if (absl::Status s = WriteFile(output, *bytes); !s.ok()) return Fail(s);
  if (flags.json) {
    std::printf("%s\n", ToJson(*job).c_str());
    return 0;
  }
  std::printf("%s: %zu bytes, target %s%s, digest %s (job %s%s)\n", output.c_str(), bytes->size(),
              job->target().c_str(),
              job->device_key().empty() ? "" : (" for device " + job->device_key()).c_str(),
              job->artifact_digest().substr(0, 16).c_str(), job->id().c_str(),
              job->cache_hit() ? ", cache hit" : "");
  return 0;
}

int RemoteBench(const RemoteFlags& flags, const std::string& artifact, const std::string& device,
                const v1::ProfileOptions& options) {
  absl::StatusOr<std::unique_ptr<KilnClient>> client = Connect(flags);
  if (!client.ok()) return Fail(client.status());
  absl::StatusOr<std::string> bytes = runtime::ReadTextFile(artifact);
  if (!bytes.ok()) return Fail(bytes.status());
  v1::SubmitProfileRequest request;
  request.mutable_artifact()->set_artifact(*bytes);
  NameDevice(device, request.mutable_device_key(), request.mutable_device_selector());
  *request.mutable_options() = options;
  request.set_deadline_ms(flags.deadline_s * 1000);
  absl::StatusOr<v1::SubmitResponse> submitted = (*client)->SubmitProfile(request);
  if (!submitted.ok()) return Fail(submitted.status());
  absl::StatusOr<v1::Job> job = Follow(**client, *submitted, flags.json);
  if (!job.ok()) return Fail(job.status());
  const v1::ProfileResult& p = job->profile();
  if (flags.json) {
    std::printf("%s\n", ToJson(*job).c_str());
    return 0;
  }
  std::printf("%-12s %-10s %-9s %7s %7s %11s %11s %11s %11s %11s\n", "function", "device", "agent",
              "number", "repeat", "median us", "mean us", "min us", "max us", "stddev us");
  std::printf("%-12s %-10s %-9s %7d %7d %11.2f %11.2f %11.2f %11.2f %11.2f\n", p.function().c_str(),
              job->device_key().c_str(), job->agent_id().c_str(), p.number(),
              p.seconds_per_call_size(), p.median_seconds() * 1e6, p.mean_seconds() * 1e6,
              p.min_seconds() * 1e6, p.max_seconds() * 1e6, p.stddev_seconds() * 1e6);
  if (p.emulated()) {
    std::printf(
        "(emulated: the device's CPU is emulated by qemu-user; these times are not a "
        "board's)\n");
  }
  return 0;
}

int RemoteRun(const RemoteFlags& flags, const std::string& artifact, const std::string& device,
              const std::string& function, const std::vector<std::string>& inputs,
              const std::string& output_dir) {
  absl::StatusOr<std::unique_ptr<KilnClient>> client = Connect(flags);
  if (!client.ok()) return Fail(client.status());
  absl::StatusOr<std::string> bytes = runtime::ReadTextFile(artifact);
  if (!bytes.ok()) return Fail(bytes.status());
  v1::SubmitInferenceRequest request;
  request.mutable_artifact()->set_artifact(*bytes);
  NameDevice(device, request.mutable_device_key(), request.mutable_device_selector());
  request.set_function(function);
  request.set_deadline_ms(flags.deadline_s * 1000);
  for (const std::string& spec : inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos) return Fail("--input " + spec + ": expected NAME=FILE.npy");
    absl::StatusOr<std::string> npy = runtime::ReadTextFile(spec.substr(eq + 1));
    if (!npy.ok()) return Fail(npy.status());
    absl::StatusOr<runtime::Tensor> t = runtime::ReadNpy(*npy, spec.substr(eq + 1));
    if (!t.ok()) return Fail(t.status());
    runtime::TensorToProto(*t, spec.substr(0, eq), request.add_inputs());
  }
  absl::StatusOr<v1::SubmitResponse> submitted = (*client)->SubmitInference(request);
  if (!submitted.ok()) return Fail(submitted.status());
  absl::StatusOr<v1::Job> job = Follow(**client, *submitted, false);
  if (!job.ok()) return Fail(job.status());
  std::vector<v1::TensorValue> outputs(job->inference().outputs().begin(),
                                       job->inference().outputs().end());
  if (job->inference().data_elsewhere()) {  // more than a job message carries: streamed
    absl::StatusOr<std::vector<v1::TensorValue>> downloaded = (*client)->DownloadOutputs(job->id());
    if (!downloaded.ok()) return Fail(downloaded.status());
    outputs = *std::move(downloaded);
  }
  std::error_code ec;
  std::filesystem::create_directories(output_dir, ec);
  for (const v1::TensorValue& out : outputs) {
    absl::StatusOr<runtime::Tensor> t = runtime::TensorFromProto(out);
    if (!t.ok()) return Fail(t.status());
    absl::StatusOr<std::string> npy = runtime::WriteNpy(*t);
    if (!npy.ok()) return Fail(npy.status());
    std::string path = absl::StrCat(output_dir, "/", out.name(), ".npy");
    if (absl::Status s = WriteFile(path, *npy); !s.ok()) return Fail(s);
    std::printf("%s\n", path.c_str());
  }
  return 0;
}

int RemoteJobs(const RemoteFlags& flags, const std::string& state, int limit) {
  absl::StatusOr<std::unique_ptr<KilnClient>> client = Connect(flags);
  if (!client.ok()) return Fail(client.status());
  v1::JobState wanted = v1::JOB_STATE_UNSPECIFIED;
  if (!state.empty() && !v1::JobState_Parse("JOB_STATE_" + absl::AsciiStrToUpper(state), &wanted)) {
    return Fail("--state " + state + ": expected queued, running, succeeded, failed or cancelled");
  }
  absl::StatusOr<v1::ListJobsResponse> page = (*client)->ListJobsPage(wanted, limit);
  if (!page.ok()) return Fail(page.status());
  if (flags.json) {
    std::printf("%s\n", ToJson(*page).c_str());
    return 0;
  }
  const auto& jobs = page->jobs();
  std::printf("%-16s %-9s %-9s %-19s %-18s %s\n", "JOB", "KIND", "STATE", "CREATED", "ARTIFACT",
              "DETAIL");
  for (const v1::Job& j : jobs) {
    std::string detail = j.reason();
    if (detail.empty() && j.kind() == v1::JOB_KIND_COMPILE) {
      detail =
          absl::StrCat(j.module_name(), " -> ", j.target(), j.cache_hit() ? " (cache hit)" : "");
    }
    if (detail.empty()) detail = absl::StrCat("on ", j.device_key(), " ", j.agent_id());
    std::printf("%-16s %-9s %-9s %-19s %-18s %s\n", j.id().c_str(), KindName(j.kind()).c_str(),
                StateName(j.state()).c_str(), LocalTime(j.created_unix_ms()).c_str(),
                j.artifact_digest().substr(0, 16).c_str(), detail.c_str());
  }
  if (page->retention_s() > 0 || page->max_finished_jobs() > 0) {
    std::printf("(finished jobs are kept %s%s)\n",
                page->retention_s() > 0 ? absl::StrCat(page->retention_s(), " s").c_str()
                                        : "without an age limit",
                page->max_finished_jobs() > 0
                    ? absl::StrCat(", the newest ", page->max_finished_jobs(), " of them").c_str()
                    : "");
  }
  return 0;
}

int RemoteWatch(const RemoteFlags& flags, const std::string& job_id) {
  absl::StatusOr<std::unique_ptr<KilnClient>> client = Connect(flags);
  if (!client.ok()) return Fail(client.status());
  absl::StatusOr<v1::Job> job = (*client)->Wait(job_id, [&](const v1::JobEvent& e) {
    if (flags.json) {
      std::printf("%s\n", ToJson(e).c_str());
    } else {
      std::printf("%s %s %-9s %s\n", LocalTime(e.unix_ms()).c_str(), e.job_id().c_str(),
                  StateName(e.state()).c_str(), e.message().c_str());
    }
    std::fflush(stdout);
  });
  if (!job.ok()) return Fail(job.status());
  if (job->state() != v1::JOB_STATE_SUCCEEDED) {
    return Fail(absl::StrCat("job ", job->id(), " ", StateName(job->state()), ": ", job->reason()));
  }
  return 0;
}

int RemoteCancel(const RemoteFlags& flags, const std::string& job_id, const std::string& reason) {
  absl::StatusOr<std::unique_ptr<KilnClient>> client = Connect(flags);
  if (!client.ok()) return Fail(client.status());
  absl::StatusOr<v1::Job> job = (*client)->Cancel(job_id, reason);
  if (!job.ok()) return Fail(job.status());
  std::printf("%s %s\n", job->id().c_str(), StateName(job->state()).c_str());
  return 0;
}

int RemoteDevices(const RemoteFlags& flags) {
  absl::StatusOr<std::unique_ptr<KilnClient>> client = Connect(flags);
  if (!client.ok()) return Fail(client.status());
  absl::StatusOr<std::vector<v1::Device>> devices = (*client)->ListDevices();
  if (!devices.ok()) return Fail(devices.status());
  if (flags.json) {
    v1::ListDevicesResponse all;
    for (const v1::Device& d : *devices) *all.add_devices() = d;
    std::printf("%s\n", ToJson(all).c_str());
    return 0;
  }
  std::printf("%-12s %-6s %-6s %-28s %5s %8s  %s\n", "DEVICE", "AGENTS", "QUEUED", "TRIPLE",
              "CORES", "MEM GiB", "CPU");
  for (const v1::Device& d : *devices) {
    const v1::DeviceAttributes& a = d.attributes();
    std::printf("%-12s %-6d %-6d %-28s %5d %8.1f  %s [%s]\n", d.key().c_str(), d.agents_connected(),
                d.tasks_queued(), a.target_triple().c_str(), a.cores(),
                static_cast<double>(a.memory_bytes()) / (1 << 30), a.cpu_model().c_str(),
                absl::StrJoin(a.cpu_features(), " ").c_str());
  }
  return 0;
}

int RemoteArtifactGet(const RemoteFlags& flags, const std::string& digest,
                      const std::string& output) {
  absl::StatusOr<std::unique_ptr<KilnClient>> client = Connect(flags);
  if (!client.ok()) return Fail(client.status());
  absl::StatusOr<std::string> bytes = (*client)->DownloadArtifact(digest);
  if (!bytes.ok()) return Fail(bytes.status());
  if (absl::Status s = WriteFile(output, *bytes); !s.ok()) return Fail(s);
  std::printf("%s: %zu bytes, digest %s\n", output.c_str(), bytes->size(),
              digest.substr(0, 16).c_str());
  return 0;
}

namespace {

std::string Ms(double seconds) {
  return seconds > 0 ? absl::StrFormat("%.4f", seconds * 1e3) : std::string("-");
}

nlohmann::json TuneJson(const v1::TuneResult& result) {
  nlohmann::json out;
  out["trials"] = result.trials();
  out["elapsed_s"] = result.elapsed_s();
  out["stopped"] = result.stopped();
  if (result.budget_s() > 0) {
    out["budget_s"] = result.budget_s();
    out["out_of_time"] = result.out_of_time();
  }
  out["milestones"] = nlohmann::json::array();
  for (const v1::TuneMilestone& m : result.milestones()) {
    out["milestones"].push_back(
        {{"fraction", m.fraction()}, {"trials", m.trials()}, {"elapsed_s", m.elapsed_s()}});
  }
  if (result.initial_model_pairs() > 0) {
    out["shipped_model_accuracy"] = result.initial_model_accuracy();
    out["shipped_model_pairs"] = result.initial_model_pairs();
  }
  out["winners_remeasured"] = result.winners_remeasured();
  if (result.winners_remeasured() > 0) {
    out["remeasure_median_difference"] = result.remeasure_median_difference();
  }
  if (result.projected_gain_of_doubling_s() > 0) {
    out["projected_gain_of_doubling_seconds"] = result.projected_gain_of_doubling_s();
  }
  if (result.has_model_check()) {
    const v1::TuneModelCheck& c = result.model_check();
    out["model_check"] = {{"untuned_estimated_seconds", c.untuned_estimated_seconds()},
                          {"untuned_measured_seconds", c.untuned_measured_seconds()},
                          {"tuned_estimated_seconds", c.tuned_estimated_seconds()},
                          {"tuned_measured_seconds", c.tuned_measured_seconds()},
                          {"tuned_kernels", c.tuned_kernels()},
                          {"tuned_calibrated_seconds", c.tuned_calibrated_seconds()}};
  }
  out["tasks"] = nlohmann::json::array();
  for (const v1::TuneTaskResult& t : result.tasks()) {
    nlohmann::json task = {{"name", t.name()},         {"workload_key", t.workload_key()},
                           {"weight", t.weight()},     {"trials", t.trials()},
                           {"failures", t.failures()}, {"transferred", t.transferred()}};
    if (t.default_seconds() > 0) task["default_seconds"] = t.default_seconds();
    if (t.best_seconds() > 0) {
      task["best_seconds"] = t.best_seconds();
      task["record_applied"] = t.record_applied();
    }
    if (!t.error().empty()) task["error"] = t.error();
    out["tasks"].push_back(task);
  }
  out["curve"] = nlohmann::json::array();
  for (const v1::TuneCurvePoint& p : result.curve()) {
    out["curve"].push_back({{"trials", p.trials()},
                            {"estimated_seconds", p.estimated_seconds()},
                            {"elapsed_s", p.elapsed_s()}});
  }
  return out;
}

}  // namespace

void PrintTuneResult(const v1::TuneResult& result, bool json) {
  if (json) {
    std::printf("%s\n", TuneJson(result).dump(1).c_str());
    return;
  }
  std::printf("%-40s %6s %6s %12s %12s %8s\n", "task", "weight", "trials", "default ms", "best ms",
              "speedup");
  for (const v1::TuneTaskResult& t : result.tasks()) {
    // "best" is what a compile with the database runs: no record that fails to beat the
    // untuned kernel is applied, so such a task keeps its default (and says so).
    double best = t.best_seconds();
    std::string note = t.error().empty() ? "" : "  " + t.error();
    if (t.transferred() > 0) note = absl::StrCat("  ", t.transferred(), " from its family", note);
    if (t.default_seconds() > 0 && best > 0 && !t.record_applied()) {
      note = absl::StrCat("  default kept (best record ", Ms(best), " ms)", note);
      best = t.default_seconds();
    }
    std::string speedup = "-";
    if (t.default_seconds() > 0 && best > 0) {
      speedup = absl::StrFormat("%.2fx", t.default_seconds() / best);
    }
    std::printf("%-40s %6d %6d %12s %12s %8s%s\n", t.name().c_str(), t.weight(), t.trials(),
                Ms(t.default_seconds()).c_str(), Ms(best).c_str(), speedup.c_str(), note.c_str());
  }
  if (result.curve_size() == 0) return;
  const v1::TuneCurvePoint& first = result.curve(0);
  const v1::TuneCurvePoint& last = result.curve(result.curve_size() - 1);
  std::printf("estimated model latency: %.4f ms -> %.4f ms after %d trials in %.1f s%s\n",
              first.estimated_seconds() * 1e3, last.estimated_seconds() * 1e3, result.trials(),
              result.elapsed_s(),
              result.stopped()       ? " (stopped)"
              : result.out_of_time() ? " (the time budget ran out)"
                                     : "");
  if (result.milestones_size() > 0) {
    std::string line;
    for (const v1::TuneMilestone& m : result.milestones()) {
      absl::StrAppendFormat(&line, "%s%.0f %% after %d trials (%.1f s)", line.empty() ? "" : ", ",
                            m.fraction() * 100, m.trials(), m.elapsed_s());
    }
    std::printf("of the gain: %s\n", line.c_str());
  }
  if (result.initial_model_pairs() > 0) {
    std::printf(
        "the shipped cost model ranked %.1f %% of %lld pairs of this tune's candidates as "
        "measured\n",
        result.initial_model_accuracy() * 100,
        static_cast<long long>(result.initial_model_pairs()));
  }
  if (result.winners_remeasured() > 0) {
    std::printf("winners measured twice: %d (median difference %.1f %%; the slower time counts)\n",
                result.winners_remeasured(), result.remeasure_median_difference() * 100);
  }
  if (result.projected_gain_of_doubling_s() > 0) {
    std::printf("another %d trials would take off about %.4f ms more (extrapolated)\n",
                result.trials(), result.projected_gain_of_doubling_s() * 1e3);
  }
  if (result.has_model_check()) {
    const v1::TuneModelCheck& c = result.model_check();
    auto off = [](double estimated, double measured) {
      return measured > 0 ? absl::StrFormat("%+.0f %%", (estimated / measured - 1) * 100)
                          : std::string("-");
    };
    std::printf(
        "whole model, measured: untuned %.4f ms (estimate %.4f, %s), tuned %.4f ms "
        "(estimate %.4f, %s; calibrated by the untuned model %.4f, %s; %d kernels from "
        "records): %.2fx\n",
        c.untuned_measured_seconds() * 1e3, c.untuned_estimated_seconds() * 1e3,
        off(c.untuned_estimated_seconds(), c.untuned_measured_seconds()).c_str(),
        c.tuned_measured_seconds() * 1e3, c.tuned_estimated_seconds() * 1e3,
        off(c.tuned_estimated_seconds(), c.tuned_measured_seconds()).c_str(),
        c.tuned_calibrated_seconds() * 1e3,
        off(c.tuned_calibrated_seconds(), c.tuned_measured_seconds()).c_str(), c.tuned_kernels(),
        c.tuned_measured_seconds() > 0 ? c.untuned_measured_seconds() / c.tuned_measured_seconds()
                                       : 0.0);
  }
  std::printf("curve: %s\n", TuneJson(result)["curve"].dump().c_str());
}

absl::StatusOr<v1::Job> RemoteQuantize(const RemoteFlags& flags,
                                       const v1::SubmitQuantizeRequest& request,
                                       const std::string& device, std::string* model,
                                       std::string* artifact) {
  absl::StatusOr<std::unique_ptr<KilnClient>> client = Connect(flags);
  if (!client.ok()) return client.status();
  v1::SubmitQuantizeRequest submit = request;
  NameDevice(device, submit.mutable_device_key(), submit.mutable_device_selector());
  submit.set_deadline_ms(flags.deadline_s * 1000);
  absl::StatusOr<v1::SubmitResponse> submitted = (*client)->SubmitQuantize(std::move(submit));
  if (!submitted.ok()) return submitted.status();
  std::fprintf(stderr, "kiln quantize: job %s through %s\n", submitted->job().id().c_str(),
               flags.channel.address.c_str());
  absl::StatusOr<v1::Job> job = (*client)->Wait(submitted->job().id(), [](const v1::JobEvent& e) {
    std::fprintf(stderr, "[quantize] %s\n", e.message().c_str());
  });
  if (!job.ok()) return job.status();
  if (job->state() != v1::JOB_STATE_SUCCEEDED) {
    const auto code = job->error_code() != 0 ? static_cast<absl::StatusCode>(job->error_code())
                                             : absl::StatusCode::kAborted;
    return absl::Status(
        code, absl::StrCat("job ", job->id(), " ", StateName(job->state()), ": ", job->reason()));
  }
  absl::StatusOr<std::string> downloaded = (*client)->DownloadQuantizedModel(*job);
  if (!downloaded.ok()) return downloaded.status();
  *model = *std::move(downloaded);
  if (artifact != nullptr) {
    absl::StatusOr<std::string> bytes = (*client)->DownloadArtifact(job->artifact_digest());
    if (!bytes.ok()) return bytes.status();
    *artifact = *std::move(bytes);
  }
  return job;
}

int RemoteTune(const RemoteFlags& flags, const std::string& model, const std::string& target,
               const std::string& device, int trials, int max_trials_per_task, uint64_t seed,
               double budget_s) {
  absl::StatusOr<std::unique_ptr<KilnClient>> client = Connect(flags);
  if (!client.ok()) return Fail(client.status());
  v1::SubmitTuneRequest request;
  absl::StatusOr<v1::ModuleSource> source = ModuleSourceFromFile(model);
  if (!source.ok()) return Fail(source.status());
  *request.mutable_module() = std::move(*source);
  request.set_target(target);
  NameDevice(device, request.mutable_device_key(), request.mutable_device_selector());
  request.set_trials(trials);
  request.set_max_trials_per_task(max_trials_per_task);
  request.set_seed(seed);
  request.set_budget_s(budget_s);
  request.set_deadline_ms(flags.deadline_s * 1000);
  absl::StatusOr<v1::SubmitResponse> submitted = (*client)->SubmitTune(request);
  if (!submitted.ok()) return Fail(submitted.status());
  const std::string budget = budget_s > 0 ? absl::StrFormat(" within %.0f s", budget_s) : "";
  std::fprintf(stderr, "kiln tune: job %s, %s trials%s measured on device '%s' through %s\n",
               submitted->job().id().c_str(),
               trials > 0 ? std::to_string(trials).c_str() : "as many", budget.c_str(),
               device.c_str(), flags.channel.address.c_str());
  // A progress line per event that carries the tune's state; other events as `kiln watch`.
  const bool tty = isatty(STDERR_FILENO);
  absl::StatusOr<v1::Job> job = (*client)->Wait(submitted->job().id(), [&](const v1::JobEvent& e) {
    const v1::TuneResult& r = e.job().tune();
    if (flags.json) return;
    if (r.curve_size() == 0) {
      std::fprintf(stderr, "%s[tune] %s%s", tty ? "\r" : "", e.message().c_str(), tty ? "" : "\n");
      return;
    }
    std::fprintf(stderr,
                 "%s[tune] %d/%d trials, %d tasks, est. model %.4f ms (from %.4f ms), "
                 "%.1f s%s",
                 tty ? "\r" : "", r.trials(), r.budget(), r.tasks_size(),
                 r.curve(r.curve_size() - 1).estimated_seconds() * 1e3,
                 r.curve(0).estimated_seconds() * 1e3, r.elapsed_s(), tty ? "" : "\n");
  });
  if (tty && !flags.json) std::fprintf(stderr, "\n");
  if (!job.ok()) return Fail(job.status());
  if (job->state() != v1::JOB_STATE_SUCCEEDED) {
    return Fail(absl::StrCat("job ", job->id(), " ", StateName(job->state()), ": ", job->reason()));
  }
  PrintTuneResult(job->tune(), flags.json);
  return 0;
}

}  // namespace kiln::client
