// The `kiln` commands that talk to a kilnd (`--server ADDR`): remote compile, bench (a profile
// job on an agent) and run (an inference job), and jobs / watch / cancel / devices / artifact
// get / info, tune. Each returns the process exit status: 0, or 1 with a one-line reason on stderr.
#ifndef KILN_CLIENT_REMOTE_COMMANDS_H_
#define KILN_CLIENT_REMOTE_COMMANDS_H_

#include <string>
#include <vector>

#include "proto/kiln/v1/jobs.pb.h"
#include "runtime/agent/channel.h"

namespace kiln::client {

struct RemoteFlags {
  runtime::ChannelOptions channel;
  std::string token_file;
  bool json = false;
  int64_t deadline_s = 0;  // 0: the server's default
};

int RemoteInfo(const RemoteFlags& flags, int timeout_seconds);
// `device` (optional), here and below: a device key, or attributes ("arch=aarch64,min_cores=4").
// A compile for a device gets the device's target unless `target` is set.
int RemoteCompile(const RemoteFlags& flags, const std::string& path, const std::string& target,
                  const std::string& device, const std::string& output,
                  const v1::CompileOptions& options);
int RemoteBench(const RemoteFlags& flags, const std::string& artifact, const std::string& device,
                const v1::ProfileOptions& options);
int RemoteRun(const RemoteFlags& flags, const std::string& artifact, const std::string& device,
              const std::string& function, const std::vector<std::string>& inputs,
              const std::string& output_dir);
int RemoteJobs(const RemoteFlags& flags, const std::string& state, int limit);
int RemoteWatch(const RemoteFlags& flags, const std::string& job_id);
int RemoteCancel(const RemoteFlags& flags, const std::string& job_id, const std::string& reason);
int RemoteDevices(const RemoteFlags& flags);
// A tune job: the search and the builds in a kilnd worker, the measurements on the agents of
// `device`, the records in the service's tuning database. A progress line while it runs, then
// PrintTuneResult's table.
int RemoteTune(const RemoteFlags& flags, const std::string& model, const std::string& target,
               const std::string& device, int trials, int max_trials_per_task, uint64_t seed,
               double budget_s);
// A tune's table per task and its curve (or, with `json`, the same as JSON): what `kiln tune`
// prints, in process or through kilnd.
void PrintTuneResult(const v1::TuneResult& result, bool json);
// A quantize job: submitted, followed (each stage on stderr), and its QDQ ONNX model downloaded
// into `*model` (checked against its SHA-256), and its artifact into `*artifact` when not null.
// The job as it ended; a failed or cancelled job is an error with its reason.
absl::StatusOr<v1::Job> RemoteQuantize(const RemoteFlags& flags,
                                       const v1::SubmitQuantizeRequest& request,
                                       const std::string& device, std::string* model,
                                       std::string* artifact);
int RemoteArtifactGet(const RemoteFlags& flags, const std::string& digest,
                      const std::string& output);

}  // namespace kiln::client

#endif  // KILN_CLIENT_REMOTE_COMMANDS_H_
