// A cluster's shared state in PostgreSQL (through libpq): jobs, devices and artifacts — their
// index and their bytes — in one database that every kilnd instance opens. DIR holds only this
// instance's local copies of artifact bytes (least recently used evicted past a bound), each
// verified by its digest before it is served and fetched again from the database when missing
// or corrupt.
//
// The schema is versioned (kiln_schema_migrations) and migrated at open under an advisory lock,
// so instances starting at once apply each migration exactly once. Job rows go through a write
// queue that one thread commits in batches on a connection of its own (one transaction, one WAL
// flush for every state change queued meanwhile); AwaitSaved waits for a row's commit. A batch
// the database could not take (unreachable) stays queued and is written once it is back, unless
// a newer row of the same job replaced it. Everything else is synchronous, on a few connections
// taken in turn; a broken connection is reset on its next call.
//
// Every instance on the database is active and shares the work (ClusterStore): each unfinished
// job is held by one instance under a lease it renews, and the jobs of an instance that died are
// claimed by the others once its leases run out (`SELECT ... FOR UPDATE SKIP LOCKED`).
#ifndef KILN_SERVER_POSTGRES_STORE_H_
#define KILN_SERVER_POSTGRES_STORE_H_

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "compiler/tune/postgres_connection.h"
#include "server/cluster_store.h"
#include "server/store.h"

namespace kiln::server {

class PostgresStore final : public Store, public ClusterStore {
 public:
  struct OpenOptions {
    std::string instance;      // empty: host:pid:random
    int64_t lease_ms = 10000;  // how long a held job outlives its instance's last renewal
    // This instance's copies of artifacts under DIR, least recently used evicted beyond it
    // (0: unbounded). The database keeps every artifact regardless.
    int64_t local_copies_max_bytes = int64_t{1} << 30;
  };
  // `url`: a libpq connection string ("postgresql://kiln@127.0.0.1:5432/kiln" or "host=...").
  static absl::StatusOr<std::unique_ptr<PostgresStore>> Open(const std::string& url,
                                                             const std::string& dir,
                                                             const OpenOptions& options);
  static absl::StatusOr<std::unique_ptr<PostgresStore>> Open(const std::string& url,
                                                             const std::string& dir) {
    return Open(url, dir, OpenOptions());
  }
  ~PostgresStore() override;

  uint64_t SaveJob(const v1::Job& job) override;
  absl::Status AwaitSaved(uint64_t ticket) override;
  bool Saved(uint64_t ticket) override;
  absl::StatusOr<std::optional<v1::Job>> GetJob(const std::string& id) override;
  absl::StatusOr<std::vector<v1::Job>> LoadJobs(int limit) override;
  absl::Status PutDevice(const v1::Device& device) override;
  absl::StatusOr<std::vector<v1::Device>> LoadDevices() override;
  absl::Status PutArtifact(const std::string& digest, const std::string& cache_key,
                           const std::string& bytes, const std::string& module) override;
  absl::StatusOr<std::string> ReadArtifact(const std::string& digest) override;
  absl::StatusOr<std::string> ReadModule(const std::string& digest) override;
  absl::StatusOr<std::optional<ArtifactRecord>> FindArtifact(const std::string& digest) override;
  absl::StatusOr<std::vector<std::string>> FindByCacheKey(const std::string& cache_key) override;
  void TouchArtifact(const std::string& digest) override;
  absl::StatusOr<int64_t> TotalArtifactBytes() override;
  int64_t DatabaseBytes() const override;
  absl::Status DeleteJobs(const std::vector<std::string>& ids) override;
  absl::StatusOr<int> EvictTo(
      int64_t max_bytes, const std::string& keep,
      const std::function<bool(const std::string& digest)>& evictable = nullptr) override;
  absl::Status DropArtifact(const std::string& digest) override;
  absl::Status PutJobInput(const std::string& id, const std::string& input) override;
  absl::StatusOr<std::optional<std::string>> GetJobInput(const std::string& id) override;
  absl::Status DeleteJobInputs(const std::vector<std::string>& ids) override;
  // Unavailable while the database cannot be reached.
  absl::Status Ping() override;
  ClusterStore* cluster() override { return this; }

  const std::string& instance() const override { return instance_; }
  int64_t lease_ms() const override { return lease_ms_; }
  absl::StatusOr<std::vector<ClaimedJob>> ClaimJobs(bool compiles,
                                                    const std::vector<std::string>& device_keys,
                                                    int limit) override;
  absl::StatusOr<std::optional<v1::Job>> ClaimJob(const std::string& id) override;
  absl::StatusOr<LeaseRenewal> RenewLeases() override;
  absl::Status ReleaseJobs(const std::vector<std::string>& ids) override;
  absl::Status RequestCancel(const std::string& id, const std::string& reason) override;
  absl::StatusOr<std::vector<v1::Job>> ListJobs(v1::JobState state, const std::string& client,
                                                int limit) override;
  absl::StatusOr<std::optional<v1::Job>> FindIdempotent(const std::string& client,
                                                        const std::string& key) override;
  absl::StatusOr<bool> ClientHasArtifact(const std::string& client,
                                         const std::string& digest) override;
  absl::Status PutAgentSession(const std::string& agent_id, const std::string& device_key) override;
  absl::Status DropAgentSession(const std::string& agent_id) override;
  absl::StatusOr<std::map<std::string, int>> AgentsByDevice() override;
  absl::StatusOr<std::map<std::string, int>> TasksQueuedByDevice() override;
  absl::StatusOr<std::pair<int, int>> ClientJobCounts(const std::string& client) override;
  absl::StatusOr<std::pair<std::optional<int>, int64_t>> CountSubmission(const std::string& client,
                                                                         int limit) override;

  // The schema version this binary migrates to.
  static int SchemaVersion();

 private:
  explicit PostgresStore(std::string dir) : Store(std::move(dir)) {}
  absl::Status Migrate();
  std::vector<v1::Job> ParseJobs(const tune::PgResult& r, int column) const;
  void WriterLoop();
  // This instance's copy of `digest` (its bytes, with the module's) is on disk now / was read.
  void KeptLocally(const std::string& digest, int64_t bytes);
  void UsedLocally(const std::string& digest);
  // Writes one row, fenced (only while this instance holds the job): FailedPrecondition when
  // another instance holds it, AlreadyExists when another job has its idempotency key.
  absl::Status WriteJob(const v1::Job& job);
  // Waits until every row queued so far is written (or refused).
  void Flush();

  // The next of the connections for everything but job rows, in turn.
  const tune::PgConnection* db() const { return db_[next_db_++ % db_.size()].get(); }

  std::vector<std::unique_ptr<tune::PgConnection>> db_;
  mutable std::atomic<size_t> next_db_{0};
  std::unique_ptr<tune::PgConnection> writer_db_;  // the write queue's own connection
  std::string instance_;
  int64_t lease_ms_ = 10000;

  // The local copies, under local_mu_: digest -> size and last use (a counter).
  struct LocalCopy {
    int64_t bytes = 0;
    uint64_t used = 0;
  };
  std::mutex local_mu_;
  std::map<std::string, LocalCopy> local_;
  int64_t local_bytes_ = 0;
  int64_t local_max_bytes_ = 0;
  uint64_t local_clock_ = 0;

  // The write queue, under queue_mu_.
  struct QueuedRow {
    uint64_t ticket = 0;
    v1::Job job;
  };
  std::mutex queue_mu_;
  std::condition_variable queued_, written_;
  std::map<std::string, QueuedRow> queued_jobs_;   // id -> its newest unwritten row
  std::map<std::string, const v1::Job*> writing_;  // the batch being written (WriterLoop's)
  uint64_t queued_ticket_ = 0;                     // the last ticket handed out
  uint64_t written_ticket_ = 0;              // every ticket up to this one is written or refused
  std::map<uint64_t, absl::Status> failed_;  // refused rows, by ticket (the latest 1024)
  bool stopping_ = false;
  std::thread writer_;
};

}  // namespace kiln::server

#endif  // KILN_SERVER_POSTGRES_STORE_H_
