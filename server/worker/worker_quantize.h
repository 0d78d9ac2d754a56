// The quantize side of kiln-worker (worker.proto's QuantizeWork): calibrates the float model and
// evaluates the QDQ model it writes, both compiled and run in this process (compiler/quantize),
// then builds the QDQ model for the job's target as a compile would. The worker's only outputs
// are the frames it sends: a worker killed at any stage leaves nothing behind for kilnd to serve.
#ifndef KILN_SERVER_WORKER_WORKER_QUANTIZE_H_
#define KILN_SERVER_WORKER_WORKER_QUANTIZE_H_

#include <functional>
#include <string>

#include "server/worker.pb.h"

namespace kiln::server {

// `on_stage` is called as each stage begins ("calibrating on 32 inputs").
QuantizeOutcome QuantizeInWorker(const QuantizeWork& work,
                                 const std::function<void(const std::string&)>& on_stage);

}  // namespace kiln::server

#endif  // KILN_SERVER_WORKER_WORKER_QUANTIZE_H_
