// What runs inside the child process kiln-agent forks for each task: load the artifact, build
// the arguments, then time the function (profile) or call it once (inference). A kernel that
// crashes or hangs here takes down only this child.
#ifndef KILN_RUNTIME_AGENT_TASK_RUNNER_H_
#define KILN_RUNTIME_AGENT_TASK_RUNNER_H_

#include <string>
#include <vector>

#include "proto/kiln/v1/agent.pb.h"

namespace kiln::runtime {

// Never fails: an error is a TaskResult with ok = false and the reason. `artifact` is the bytes
// of task.artifact_path(), read before the child confined itself; they are loaded only where
// they carry a signature by one of task.trusted_keys_pem().
v1::TaskResult RunLocalTask(const v1::LocalTask& task, const std::string& artifact);

// Median, mean, min, max and standard deviation of per-call seconds.
void Summarize(const std::vector<double>& seconds_per_call, v1::ProfileResult* out);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_AGENT_TASK_RUNNER_H_
