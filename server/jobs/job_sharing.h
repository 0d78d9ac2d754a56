// What differs between one kilnd and several sharing one database: where a job that is not held
// here is found, which jobs this instance runs itself, and what it hands over. The job manager
// asks this interface instead of branching on the mode; SoloSharing is one kilnd (nothing is
// elsewhere), ClusterSync (cluster_sync.h) a cluster's instance.
#ifndef KILN_SERVER_JOBS_JOB_SHARING_H_
#define KILN_SERVER_JOBS_JOB_SHARING_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "proto/kiln/v1/jobs.pb.h"
#include "server/jobs/agent_dispatcher.h"

namespace kiln::server {

class JobSharing : public AgentObserver {
 public:
  // This instance's name in its jobs' rows; empty for one kilnd.
  virtual std::string instance() const = 0;
  // Whether a restart resumes the unfinished jobs it finds (one kilnd) rather than leaving them
  // to whichever instance claims them.
  virtual bool ResumesUnfinished() const = 0;
  // Starts and stops the background synchronization, if any.
  virtual void Start() = 0;
  virtual void Stop() = 0;

  // Whether this instance runs `job` itself; else it is held only until its input is saved,
  // then released for an instance that can.
  virtual bool RunsHere(const v1::Job& job) = 0;
  // Hands over a job held here, whose input is saved, to whichever instance claims it.
  virtual void Release(const v1::Job& job) = 0;
  // When the store refused `job`'s row because another instance took its idempotency key a
  // moment earlier: that instance's job (and `job` is handed over).
  virtual std::optional<v1::Job> TakenElsewhere(const v1::Job& job) = 0;
  // Hands every unfinished job back (a draining instance); returns how many.
  virtual int HandBackAll() = 0;
  virtual void WorkerFree() = 0;

  // Jobs not held here.
  virtual std::optional<v1::Job> FindIdempotent(const std::string& client,
                                                const std::string& key) = 0;
  // Every instance's jobs; nullopt when only this instance's are known.
  virtual std::optional<std::vector<v1::Job>> List(v1::JobState state, const std::string& client,
                                                   int limit) = 0;
  virtual bool ClientHasArtifact(const std::string& client, const std::string& digest) = 0;
  virtual absl::StatusOr<std::vector<v1::JobEvent>> Events(const std::string& id) = 0;
  virtual absl::StatusOr<v1::Job> Cancel(const std::string& id, const std::string& why) = 0;
  // Whether an unfinished job held elsewhere can be watched (through the database).
  virtual bool FollowsElsewhere() const = 0;
  // Every instance's devices; nullopt when only this instance's are known.
  virtual std::optional<std::vector<v1::Device>> Devices() = 0;
};

// One kilnd: every job is here or nowhere.
class SoloSharing : public JobSharing {
 public:
  std::string instance() const override { return ""; }
  bool ResumesUnfinished() const override { return true; }
  void Start() override {}
  void Stop() override {}
  bool RunsHere(const v1::Job&) override { return true; }
  void Release(const v1::Job&) override {}
  std::optional<v1::Job> TakenElsewhere(const v1::Job&) override { return std::nullopt; }
  int HandBackAll() override { return 0; }
  void WorkerFree() override {}
  void AgentJoined(const std::string&, const std::string&) override {}
  void AgentLeft(const std::string&) override {}
  void AgentIdle() override {}
  std::optional<v1::Job> FindIdempotent(const std::string&, const std::string&) override {
    return std::nullopt;
  }
  std::optional<std::vector<v1::Job>> List(v1::JobState, const std::string&, int) override {
    return std::nullopt;
  }
  bool ClientHasArtifact(const std::string&, const std::string&) override { return false; }
  absl::StatusOr<std::vector<v1::JobEvent>> Events(const std::string& id) override {
    return absl::NotFoundError(absl::StrCat("no job '", id, "'"));
  }
  absl::StatusOr<v1::Job> Cancel(const std::string& id, const std::string&) override {
    return absl::NotFoundError(absl::StrCat("no job '", id, "'"));
  }
  bool FollowsElsewhere() const override { return false; }
  std::optional<std::vector<v1::Device>> Devices() override { return std::nullopt; }
};

}  // namespace kiln::server

#endif  // KILN_SERVER_JOBS_JOB_SHARING_H_
