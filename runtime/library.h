// Kernel libraries: shared objects produced by the compiler, loaded straight from memory
// (memfd_create + dlopen of /proc/self/fd/N) so that no file is written to disk, and their
// kernels called with runtime::Values through the C ABI of kernel_abi.h.
#ifndef KILN_RUNTIME_LIBRARY_H_
#define KILN_RUNTIME_LIBRARY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/kernel_abi.h"
#include "runtime/thread_pool.h"
#include "runtime/value.h"

namespace kiln::runtime {

class KernelLibrary : public std::enable_shared_from_this<KernelLibrary> {
 public:
  // Loads an ELF shared object from `bytes`. Garbage, a wrong architecture or an ABI version
  // mismatch give InvalidArgument naming `name`.
  static absl::StatusOr<std::shared_ptr<KernelLibrary>> LoadFromMemory(absl::string_view bytes,
                                                                       const std::string& name);
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;

  const std::string& name() const { return name_; }
  // The kernel exported as `symbol`; NotFound otherwise.
  absl::StatusOr<KilnKernelFn> Lookup(absl::string_view symbol) const;
  // The kernel as a runtime::Function that keeps this library alive. Parallel loops run on
  // `pool` (null: serially).
  absl::StatusOr<Function> GetFunction(absl::string_view symbol, std::shared_ptr<ThreadPool> pool);

 private:
  KernelLibrary(void* handle, int fd, std::string name)
      : handle_(handle), fd_(fd), name_(std::move(name)) {}
  void* handle_;
  int fd_;  // the memfd it was loaded from, open while it is loaded
  std::string name_;
};

// Calls `kernel` with `args` (ints, floats, tensors); a nonzero return becomes an error carrying
// the kernel's message, prefixed with `what`.
absl::Status CallKernel(KilnKernelFn kernel, absl::Span<const Value> args, ThreadPool* pool,
                        absl::string_view what);
// The same with the arguments where they are (the VM's registers and constants), uncopied.
absl::Status CallKernel(KilnKernelFn kernel, absl::Span<const Value* const> args, ThreadPool* pool,
                        absl::string_view what);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_LIBRARY_H_
