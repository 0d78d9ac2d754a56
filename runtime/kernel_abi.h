/* The C ABI between compiled kernels and the Kiln runtime (docs/KERNEL_ABI.md).
 *
 * A kernel library is a shared object whose kernels all have the type KilnKernelFn. Arguments
 * arrive as a packed array of KilnValue with a parallel array of KilnArgKind codes; tensors are
 * DLPack DLTensors. The runtime passes a KilnContext through which the kernel reports errors
 * and launches parallel work, so a kernel library imports no symbols from the runtime. */
#ifndef KILN_RUNTIME_KERNEL_ABI_H_
#define KILN_RUNTIME_KERNEL_ABI_H_

#include <dlpack/dlpack.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any incompatible change; a library exports it as `kiln_abi_version`. */
#define KILN_KERNEL_ABI_VERSION 1

typedef enum {
  KILN_ARG_INT = 0,    /* v_int64 */
  KILN_ARG_FLOAT = 1,  /* v_float64 */
  KILN_ARG_TENSOR = 2, /* v_tensor */
  KILN_ARG_HANDLE = 3, /* v_handle: an opaque pointer */
} KilnArgKind;

typedef union {
  int64_t v_int64;
  double v_float64;
  DLTensor* v_tensor;
  void* v_handle;
} KilnValue;

typedef struct KilnContext KilnContext;

/* One task of a parallel loop: returns 0, or nonzero after ctx->set_error. */
typedef int32_t (*KilnParallelTask)(int64_t task, int64_t num_tasks, void* closure);

struct KilnContext {
  /* Records why the kernel is about to fail; the kernel then returns nonzero. */
  void (*set_error)(KilnContext* ctx, const char* message);
  /* Runs task(i, num_tasks, closure) for every i in [0, num_tasks) on the runtime's threads (the
   * caller's included) and returns when all are done: 0, or the first nonzero task result. */
  int32_t (*parallel_for)(KilnContext* ctx, int64_t num_tasks, KilnParallelTask task,
                          void* closure);
  /* Opaque to kernels. */
  void* runtime;
};

/* Returns 0 on success, nonzero after reporting an error through ctx->set_error. */
typedef int32_t (*KilnKernelFn)(const KilnValue* args, const int32_t* kinds, int32_t num_args,
                                KilnContext* ctx);

#ifdef __cplusplus
}
#endif

#endif /* KILN_RUNTIME_KERNEL_ABI_H_ */
