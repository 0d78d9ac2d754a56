#include "runtime/library.h"

#include <dlfcn.h>
#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"

namespace kiln::runtime {
namespace {

constexpr size_t kInlineKernelArgs = 16;

struct CallState {
  KilnContext ctx;
  std::string error;
  ThreadPool* pool;
};

void SetError(KilnContext* ctx, const char* message) {
  auto* state = reinterpret_cast<CallState*>(ctx);  // ctx is the first member
  if (state->error.empty()) state->error = message != nullptr ? message : "(no message)";
}

int32_t ParallelFor(KilnContext* ctx, int64_t num_tasks, KilnParallelTask task, void* closure) {
  auto* state = reinterpret_cast<CallState*>(ctx);
  if (state->pool == nullptr) {
    int32_t first = 0;
    for (int64_t i = 0; i < num_tasks; ++i) {
      int32_t rc = task(i, num_tasks, closure);
      if (rc != 0 && first == 0) first = rc;
    }
    return first;
  }
  return state->pool->ParallelFor(num_tasks,
                                  [&](int64_t i) { return task(i, num_tasks, closure); });
}

bool WriteAll(int fd, absl::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// The checks dlopen does not make before mapping: a truncated or inconsistent file would fault
// inside the loader (SIGBUS past the end of the mapping) instead of failing.
absl::Status ValidateElf(absl::string_view bytes, const std::string& name) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("kernel library '", name, "': ", why));
  };
  if (bytes.size() < sizeof(Elf64_Ehdr) || std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) {
    return bad("not an ELF file");
  }
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof(eh));
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return bad("not a 64-bit little-endian ELF file");
  if (eh.e_type != ET_DYN) return bad("not a shared library");
#if defined(__x86_64__)
  constexpr uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
  constexpr uint16_t kHostMachine = EM_AARCH64;
#else
  constexpr uint16_t kHostMachine = EM_NONE;
#endif
  if (kHostMachine != EM_NONE && eh.e_machine != kHostMachine) {
    return bad(
        absl::StrCat("built for machine type ", eh.e_machine, ", not this host's ", kHostMachine));
  }
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0) return bad("no program headers");
  if (eh.e_phoff > bytes.size() || (bytes.size() - eh.e_phoff) / sizeof(Elf64_Phdr) < eh.e_phnum) {
    return bad("program headers lie past the end of the file");
  }
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, bytes.data() + eh.e_phoff + i * sizeof(Elf64_Phdr), sizeof(ph));
    if (ph.p_offset > bytes.size() || ph.p_filesz > bytes.size() - ph.p_offset) {
      return bad("a segment lies past the end of the file (truncated?)");
    }
    if (ph.p_type == PT_LOAD && ph.p_memsz < ph.p_filesz)
      return bad("a malformed loadable segment");
  }
  if (eh.e_shoff != 0 &&
      (eh.e_shoff > bytes.size() ||
       (bytes.size() - eh.e_shoff) / std::max<uint16_t>(eh.e_shentsize, 1) < eh.e_shnum)) {
    return bad("section headers lie past the end of the file (truncated?)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<KernelLibrary>> KernelLibrary::LoadFromMemory(
    absl::string_view bytes, const std::string& name) {
  absl::Status valid = ValidateElf(bytes, name);
  if (!valid.ok()) return valid;
  int fd = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0)
    return absl::InternalError(absl::StrCat("memfd_create failed: ", std::strerror(errno)));
  if (!WriteAll(fd, bytes)) {
    close(fd);
    return absl::InternalError(
        absl::StrCat("writing kernel library '", name, "' to memory failed"));
  }
  std::string path = absl::StrCat("/proc/self/fd/", fd);
  // The descriptor stays open as long as the library is loaded: dlopen knows a library by its
  // path, and a second memfd reusing this number would otherwise get this library back.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    close(fd);
    const char* why = dlerror();
    return absl::InvalidArgumentError(absl::StrCat("cannot load kernel library '", name,
                                                   "': ", why != nullptr ? why : "dlopen failed"));
  }
  std::shared_ptr<KernelLibrary> lib(new KernelLibrary(handle, fd, name));
  const auto* version = static_cast<const int32_t*>(dlsym(handle, "kiln_abi_version"));
  if (version == nullptr || *version != KILN_KERNEL_ABI_VERSION) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel library '", name, "' ",
        version == nullptr ? "does not export kiln_abi_version"
                           : absl::StrCat("has ABI version ", *version, "; this runtime speaks ",
                                          KILN_KERNEL_ABI_VERSION)));
  }
  return lib;
}

KernelLibrary::~KernelLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
  if (fd_ >= 0) close(fd_);
}

absl::StatusOr<KilnKernelFn> KernelLibrary::Lookup(absl::string_view symbol) const {
  void* fn = dlsym(handle_, std::string(symbol).c_str());
  if (fn == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("kernel library '", name_, "' has no kernel '", symbol, "'"));
  }
  return reinterpret_cast<KilnKernelFn>(fn);
}

absl::StatusOr<Function> KernelLibrary::GetFunction(absl::string_view symbol,
                                                    std::shared_ptr<ThreadPool> pool) {
  absl::StatusOr<KilnKernelFn> kernel = Lookup(symbol);
  if (!kernel.ok()) return kernel.status();
  // Keep the library loaded while the function lives.
  std::string what = absl::StrCat(name_, ":", symbol);
  KilnKernelFn fn = *kernel;
  std::shared_ptr<KernelLibrary> self = shared_from_this();
  return Function([fn, pool, what, self](absl::Span<const Value> args) -> absl::StatusOr<Value> {
    absl::Status s = CallKernel(fn, args, pool.get(), what);
    if (!s.ok()) return s;
    return Value();
  });
}

absl::Status CallKernel(KilnKernelFn kernel, absl::Span<const Value> args, ThreadPool* pool,
                        absl::string_view what) {
  absl::InlinedVector<const Value*, kInlineKernelArgs> pointers(args.size());
  for (size_t i = 0; i < args.size(); ++i) pointers[i] = &args[i];
  return CallKernel(kernel, pointers, pool, what);
}

absl::Status CallKernel(KilnKernelFn kernel, absl::Span<const Value* const> args, ThreadPool* pool,
                        absl::string_view what) {
  // On the stack for the usual few arguments (a small model calls a kernel every microsecond),
  // on the heap past them.
  std::array<KilnValue, kInlineKernelArgs> values_here{};
  std::array<int32_t, kInlineKernelArgs> kinds_here{};
  std::array<DLTensor, kInlineKernelArgs> tensors_here;  // kernels get mutable views
  std::vector<KilnValue> values_heap;
  std::vector<int32_t> kinds_heap;
  std::vector<DLTensor> tensors_heap;
  KilnValue* values = values_here.data();
  int32_t* kinds = kinds_here.data();
  DLTensor* tensors = tensors_here.data();
  if (args.size() > kInlineKernelArgs) {
    values_heap.resize(args.size());
    kinds_heap.resize(args.size());
    tensors_heap.resize(args.size());
    values = values_heap.data();
    kinds = kinds_heap.data();
    tensors = tensors_heap.data();
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const Value& a = *args[i];
    if (const int64_t* v = a.as_int()) {
      values[i].v_int64 = *v;
      kinds[i] = KILN_ARG_INT;
    } else if (const double* v = a.as_float()) {
      values[i].v_float64 = *v;
      kinds[i] = KILN_ARG_FLOAT;
    } else if (const Tensor* t = a.as_tensor(); t != nullptr && t->defined()) {
      tensors[i] = t->dl();
      values[i].v_tensor = &tensors[i];
      kinds[i] = KILN_ARG_TENSOR;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(what, ": argument ", i, " is a ",
                                                     a.kind_name(), ", which kernels do not take"));
    }
  }
  CallState state;
  state.ctx.set_error = SetError;
  state.ctx.parallel_for = ParallelFor;
  state.ctx.runtime = nullptr;
  state.pool = pool;
  int32_t rc = kernel(values, kinds, static_cast<int32_t>(args.size()), &state.ctx);
  if (rc != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": ", state.error.empty() ? absl::StrCat("failed with code ", rc) : state.error));
  }
  return absl::OkStatus();
}

}  // namespace kiln::runtime
