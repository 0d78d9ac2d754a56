// Whether a new job is taken: not while kilnd drains or its store is unreachable, and within
// each client's limits (unfinished jobs, stored jobs, submissions per minute) and the store's
// size bound, past which least recently used artifacts are evicted first.
#ifndef KILN_SERVER_JOBS_ADMISSION_H_
#define KILN_SERVER_JOBS_ADMISSION_H_

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "server/store.h"

namespace kiln::server {

struct AdmissionOptions {
  int max_active_jobs_per_client = 16;
  // 0 turns each off. Submissions a client may make per minute (cache hits included: they finish
  // at once, so the unfinished-jobs limit never holds them), and jobs it may have stored.
  int max_jobs_per_minute_per_client = 600;
  int max_stored_jobs_per_client = 10000;
  int64_t job_retention_ms = 0;  // named in the stored-jobs refusal
  // The store's whole size (database and artifacts); 0: unbounded.
  int64_t store_max_bytes = 0;
};

class Admission {
 public:
  Admission(AdmissionOptions options, Store* store);

  // ResourceExhausted when `client` (with `active` unfinished and `stored` stored jobs) is over
  // a limit or the store is full; Unavailable while draining or while the store cannot be
  // reached (a job it could not save would not survive this kilnd).
  absl::Status Admit(const std::string& client, int active, int stored);
  // Whether a job of another client than the second refers to an artifact: the store's bound
  // then never evicts it on that client's behalf.
  void SetReferences(std::function<bool(const std::string&, const std::string&)> others_refer) {
    others_refer_ = std::move(others_refer);
  }
  // What readiness found of the store (server.cc asks it every second).
  void SetStoreHealth(const absl::Status& health);
  void SetDraining();
  // Whether this kilnd takes work now: not draining, its store reachable.
  bool Accepting();
  std::map<std::string, int64_t> Refusals();  // by limit: "jobs_per_minute", ...

 private:
  absl::Status RefuseLocked(const std::string& limit, std::string message);
  // OK when the store fits its bound, after evicting artifacts if need be.
  absl::Status StoreRoomLocked(int64_t now_ms, const std::string& client);

  const AdmissionOptions options_;
  Store* const store_;
  std::mutex mu_;
  absl::Status store_health_;  // the store's last answer to Ping
  bool draining_ = false;
  struct Rate {
    int64_t window_start_ms = 0;
    int count = 0;
  };
  std::map<std::string, Rate> rate_by_client_;  // submissions in the current minute
  std::map<std::string, int64_t> refusals_;
  std::function<bool(const std::string&, const std::string&)> others_refer_;
  int64_t store_checked_ms_ = 0;
  bool store_full_ = false;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_JOBS_ADMISSION_H_
