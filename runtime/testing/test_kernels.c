/* Hand-written kernels in the Kiln C ABI, to test loading, calling, errors and parallel launch
 * independently of the compiler. */
#include <stdint.h>
#include <stdio.h>

#include "runtime/kernel_abi.h"

const int32_t kiln_abi_version = KILN_KERNEL_ABI_VERSION;

static int check_vector(const KilnValue* args, const int32_t* kinds, int i, KilnContext* ctx) {
  char message[128];
  if (kinds[i] != KILN_ARG_TENSOR) {
    snprintf(message, sizeof(message), "argument %d must be a tensor", i);
    ctx->set_error(ctx, message);
    return 1;
  }
  const DLTensor* t = args[i].v_tensor;
  if (t->ndim != 1 || t->dtype.code != kDLFloat || t->dtype.bits != 32 || t->dtype.lanes != 1) {
    snprintf(message, sizeof(message), "argument %d must be a 1-D float32 tensor", i);
    ctx->set_error(ctx, message);
    return 1;
  }
  return 0;
}

typedef struct {
  const float* a;
  const float* b;
  float* c;
  int64_t n;
} AddClosure;

static int32_t add_task(int64_t task, int64_t num_tasks, void* closure) {
  const AddClosure* s = (const AddClosure*)closure;
  int64_t chunk = (s->n + num_tasks - 1) / num_tasks;
  int64_t begin = task * chunk;
  int64_t end = begin + chunk < s->n ? begin + chunk : s->n;
  for (int64_t i = begin; i < end; ++i) s->c[i] = s->a[i] + s->b[i];
  return 0;
}

/* c = a + b over 1-D float32 tensors, in parallel chunks. */
int32_t add_f32(const KilnValue* args, const int32_t* kinds, int32_t num_args, KilnContext* ctx) {
  if (num_args != 3) {
    ctx->set_error(ctx, "add_f32 takes 3 arguments");
    return 1;
  }
  for (int i = 0; i < 3; ++i) {
    if (check_vector(args, kinds, i, ctx) != 0) return 1;
  }
  int64_t n = args[0].v_tensor->shape[0];
  if (args[1].v_tensor->shape[0] != n || args[2].v_tensor->shape[0] != n) {
    ctx->set_error(ctx, "add_f32: the tensors differ in length");
    return 1;
  }
  AddClosure closure = {(const float*)args[0].v_tensor->data, (const float*)args[1].v_tensor->data,
                        (float*)args[2].v_tensor->data, n};
  return ctx->parallel_for(ctx, 8, add_task, &closure);
}

static int32_t count_task(int64_t task, int64_t num_tasks, void* closure) {
  (void)num_tasks;
  int64_t* counts = (int64_t*)closure;
  __atomic_fetch_add(&counts[task], 1, __ATOMIC_RELAXED);
  return task == 13 ? 7 : 0; /* task 13 reports failure code 7 */
}

/* Runs args[1] parallel tasks that each bump counts[task] of an int64 tensor. */
int32_t count_tasks(const KilnValue* args, const int32_t* kinds, int32_t num_args,
                    KilnContext* ctx) {
  if (num_args != 2 || kinds[0] != KILN_ARG_TENSOR || kinds[1] != KILN_ARG_INT) {
    ctx->set_error(ctx, "count_tasks takes (int64 tensor, int)");
    return 1;
  }
  return ctx->parallel_for(ctx, args[1].v_int64, count_task, args[0].v_tensor->data);
}

int32_t always_fails(const KilnValue* args, const int32_t* kinds, int32_t num_args,
                     KilnContext* ctx) {
  (void)args;
  (void)kinds;
  (void)num_args;
  ctx->set_error(ctx, "this kernel always fails");
  return 1;
}
