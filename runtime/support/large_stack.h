// Running work on a thread with a large stack. The compiler's walks over IR recurse once per
// level of nesting, and clients may send IR nested up to ir::kMaxNestingDepth levels (a
// generated 20,000-term sum, a long elif chain): more than the 8 MiB main thread holds. The
// programs that compile what clients send (kiln-worker, the kiln CLI) run their work here.
// The stack is reserved address space, touched only as deep as the work goes.
#ifndef KILN_RUNTIME_SUPPORT_LARGE_STACK_H_
#define KILN_RUNTIME_SUPPORT_LARGE_STACK_H_

#include <cstddef>
#include <functional>

namespace kiln::runtime {

// Enough for every pass at ir::kMaxNestingDepth (tests/stress_test.cc measures it).
inline constexpr size_t kCompilerStackBytes = size_t{1} << 30;

// Runs `work` to completion on a thread with at least `stack_bytes` of stack and returns its
// result: the calling thread when its stack is that large already, else a new thread. Falls
// back to the calling thread when no such thread can be started (address space limits).
int RunWithStack(size_t stack_bytes, const std::function<int()>& work);

// The main of a program that compiles and exits (kiln-worker, the kiln CLI): `work` on the
// compiler's stack, with the allocator keeping what is freed for the next allocation instead of
// giving it back to the system — a model's weights are copied a few times on the way to its
// artifact, and each copy into fresh pages cost page faults (ResNet-18: 0.05-0.1 s of 1.1 s).
int RunCompilerProcess(const std::function<int()>& work);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_SUPPORT_LARGE_STACK_H_
