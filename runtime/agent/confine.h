// What a task child gives up after it has read its input (the task, the artifact's bytes) and
// before it loads any code, so that a kernel library's constructor or a kernel cannot reach the
// agent's secrets or the network:
//
//   1. Its user: where the agent runs as root, the child becomes an unprivileged user (the
//      agent's --task-user, "nobody" by default), which cannot read the agent's 0600 token file
//      or TLS key. Where the agent is not root, a new user and mount namespace (where the kernel
//      allows) with /dev/null mounted over each of those files.
//   2. PR_SET_NO_NEW_PRIVS: no setuid program gives any of it back.
//   3. A seccomp filter (libseccomp) refusing, with EPERM, sockets of every family, ptrace and
//      reading or writing another process's memory, and namespace and mount changes.
//
// The agent itself is not dumpable (PR_SET_DUMPABLE 0), so a child of the same user cannot read
// its memory or environment through /proc either.
#ifndef KILN_RUNTIME_AGENT_CONFINE_H_
#define KILN_RUNTIME_AGENT_CONFINE_H_

#include <string>

#include "absl/status/statusor.h"
#include "proto/kiln/v1/agent.pb.h"

namespace kiln::runtime {

// The confinement the agent asks for: `task_user` where it runs as root (an error names a user
// that does not exist), and the files to hide.
absl::StatusOr<v1::TaskConfinement> PlanConfinement(const std::string& task_user,
                                                    const std::vector<std::string>& hidden_paths,
                                                    bool emulated);

// Applies `c` to this process (the task child). A step that fails is an error naming it, but
// for the namespace (where the kernel has none to give: then the hidden files stay as their
// permissions make them) and, where `c.seccomp_optional`, the filter. Returns what applied, for
// the log: "uid 65534, no_new_privs, seccomp".
absl::StatusOr<std::string> ConfineTaskChild(const v1::TaskConfinement& c);

}  // namespace kiln::runtime

#endif  // KILN_RUNTIME_AGENT_CONFINE_H_
