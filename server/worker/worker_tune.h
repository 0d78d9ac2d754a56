// The tune side of kiln-worker (worker.proto's TuneWork): extracts the model's tasks, searches
// each one's design space (compiler/tune), builds candidates in this process's children, and
// has kilnd time every batch on the job's agents. Every measurement goes to the service's tuning
// database as it arrives, so a killed worker loses at most the batch in flight.
#ifndef KILN_SERVER_WORKER_WORKER_TUNE_H_
#define KILN_SERVER_WORKER_WORKER_TUNE_H_

#include "absl/status/statusor.h"
#include "compiler/ir/module.h"
#include "server/worker.pb.h"

namespace kiln::server {

// Tunes `mod` as `work` says, talking to kilnd over stdin/stdout (MeasureBatch, TuneProgress).
TuneOutcome TuneInWorker(const TuneWork& work, const ir::IRModule& mod);

}  // namespace kiln::server

#endif  // KILN_SERVER_WORKER_WORKER_TUNE_H_
