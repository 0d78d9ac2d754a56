#include "runtime/agent/confine.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::runtime {
namespace {

std::string Errno(const char* what) { return absl::StrCat(what, ": ", std::strerror(errno)); }

bool WriteProcFile(const char* path, const std::string& text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

// Whether this process is in the machine's first user namespace, where root is root; elsewhere
// (a container's or Bazel's sandbox's) "root" may be an unprivileged user outside, with only
// itself mapped.
bool InInitialUserNamespace() {
  int fd = open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  char map[256] = {0};
  ssize_t n = read(fd, map, sizeof(map) - 1);
  close(fd);
  unsigned long inside = 1, outside = 1, count = 0;  // NOLINT: sscanf's types
  return n > 0 && std::sscanf(map, "%lu %lu %lu", &inside, &outside, &count) == 3 && inside == 0 &&
         outside == 0 && count == 4294967295UL;
}

// Every capability gone — effective, permitted, inheritable, ambient and the bounding set — so
// that a uid 0 without a user to become can no longer override permissions, look into the
// agent's memory or mounts, or take the capabilities back.
bool DropCapabilities() {
  for (int cap = 0; cap <= 63; ++cap) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) return false;
  }
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  struct __user_cap_header_struct header {};
  header.version = _LINUX_CAPABILITY_VERSION_3;
  struct __user_cap_data_struct data[2] = {};
  return syscall(SYS_capset, &header, data) == 0;
}

// /dev/null over each file of `paths` that exists, in a private mount namespace.
int HideFiles(const v1::TaskConfinement& c) {
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return -1;
  int hidden = 0;
  for (const std::string& path : c.hidden_paths()) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (mount("/dev/null", path.c_str(), nullptr, MS_BIND, nullptr) != 0) return -1;
    ++hidden;
  }
  return hidden;
}

// Refuses with EPERM what a kernel library never needs: the network (every socket family, and
// io_uring, which opens sockets of its own), other processes' memory, and undoing the mounts
// and namespaces above. Other architectures' system calls (i386 on x86-64) kill the process.
absl::Status InstallFilter() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return absl::InternalError("seccomp_init failed");
  static const char* const kRefused[] = {"socket",
                                         "socketpair",
                                         "ptrace",
                                         "process_vm_readv",
                                         "process_vm_writev",
                                         "mount",
                                         "umount2",
                                         "unshare",
                                         "setns",
                                         "pivot_root",
                                         "chroot",
                                         "bpf",
                                         "keyctl",
                                         "add_key",
                                         "request_key",
                                         "io_uring_setup",
                                         "perf_event_open",
                                         "open_by_handle_at"};
  int rc = 0;
  for (const char* name : kRefused) {
    const int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture
    rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
    if (rc != 0) break;
  }
  if (rc == 0) rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc != 0) {
    return absl::InternalError(absl::StrCat("seccomp filter: ", std::strerror(-rc)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::TaskConfinement> PlanConfinement(const std::string& task_user,
                                                    const std::vector<std::string>& hidden_paths,
                                                    bool emulated) {
  v1::TaskConfinement c;
  for (const std::string& p : hidden_paths) {
    if (!p.empty()) c.add_hidden_paths(p);
  }
  c.set_seccomp_optional(emulated);
  if (geteuid() != 0) return c;
  struct passwd* pw = getpwnam(task_user.c_str());
  if (pw == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--task-user: no user '", task_user, "' on this machine"));
  }
  if (pw->pw_uid == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--task-user: '", task_user, "' is root; tasks must run unprivileged"));
  }
  c.set_uid(pw->pw_uid);
  c.set_gid(pw->pw_gid);
  return c;
}

absl::StatusOr<std::string> ConfineTaskChild(const v1::TaskConfinement& c) {
  std::vector<std::string> applied;
  if (geteuid() == 0) {
    if (c.uid() == 0) return absl::FailedPreconditionError("no unprivileged user for the task");
    // As root: the secrets hidden in a private mount namespace, then the user dropped.
    if (unshare(CLONE_NEWNS) == 0) {
      const int hidden = HideFiles(c);
      if (hidden < 0) return absl::InternalError(Errno("hiding the agent's files"));
      applied.push_back(absl::StrCat("mount namespace (", hidden, " files hidden)"));
    }
    if (setgroups(0, nullptr) == 0 && setgid(c.gid()) == 0 && setuid(c.uid()) == 0) {
      if (getuid() != c.uid() || geteuid() != c.uid() || setuid(0) == 0) {
        return absl::InternalError("the task user did not stick");
      }
      applied.push_back(absl::StrCat("uid ", c.uid()));
    } else if (InInitialUserNamespace()) {
      return absl::InternalError(Errno("dropping to the task user"));
    } else {
      // Root of a user namespace that maps no other user (a container, a sandbox): the files
      // stay hidden above, and root keeps no capability to reach them another way.
      if (!DropCapabilities()) return absl::InternalError(Errno("dropping capabilities"));
      applied.push_back("uid 0 of a user namespace, every capability dropped");
    }
  } else {
    // Not root: a user namespace mapping this user to itself, where the kernel gives one.
    const uid_t uid = getuid();
    const gid_t gid = getgid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0) {
      if (!WriteProcFile("/proc/self/setgroups", "deny") ||
          !WriteProcFile("/proc/self/uid_map", absl::StrCat(uid, " ", uid, " 1\n")) ||
          !WriteProcFile("/proc/self/gid_map", absl::StrCat(gid, " ", gid, " 1\n"))) {
        return absl::InternalError(Errno("mapping the user namespace"));
      }
      const int hidden = HideFiles(c);
      if (hidden < 0) return absl::InternalError(Errno("hiding the agent's files"));
      applied.push_back(absl::StrCat("user and mount namespace (", hidden, " files hidden)"));
    } else {
      applied.push_back(absl::StrCat("no namespace (", std::strerror(errno), ")"));
    }
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return absl::InternalError(Errno("PR_SET_NO_NEW_PRIVS"));
  }
  applied.push_back("no_new_privs");
  if (absl::Status s = InstallFilter(); !s.ok()) {
    if (!c.seccomp_optional()) return s;
    applied.push_back(absl::StrCat("no seccomp filter under emulation (", s.message(), ")"));
  } else {
    applied.push_back("seccomp");
  }
  return absl::StrJoin(applied, ", ");
}

}  // namespace kiln::runtime
