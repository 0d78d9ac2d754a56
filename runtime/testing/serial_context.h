// A KilnContext for calling kernels directly through the C ABI in tests (with hand-made
// DLTensors the runtime's Tensor cannot express): it keeps the first error message and runs
// parallel loops serially.
#ifndef KILN_RUNTIME_TESTING_SERIAL_CONTEXT_H_
#define KILN_RUNTIME_TESTING_SERIAL_CONTEXT_H_

#include <string>

#include "runtime/kernel_abi.h"

namespace kiln::runtime::testing {

struct SerialContext {
  KilnContext ctx;  // first member: the callbacks cast back to SerialContext
  std::string error;

  SerialContext() {
    ctx.set_error = [](KilnContext* c, const char* message) {
      auto* self = reinterpret_cast<SerialContext*>(c);
      if (self->error.empty()) self->error = message;
    };
    ctx.parallel_for = [](KilnContext*, int64_t n, KilnParallelTask task, void* closure) {
      for (int64_t i = 0; i < n; ++i) {
        if (int32_t rc = task(i, n, closure); rc != 0) return rc;
      }
      return 0;
    };
    ctx.runtime = nullptr;
  }
  // Calls `kernel`, forgetting any earlier error first.
  int32_t Call(KilnKernelFn kernel, const KilnValue* args, const int32_t* kinds, int32_t n) {
    error.clear();
    return kernel(args, kinds, n, &ctx);
  }
};

}  // namespace kiln::runtime::testing

#endif  // KILN_RUNTIME_TESTING_SERIAL_CONTEXT_H_
