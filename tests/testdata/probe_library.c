// What a hostile tenant uploads as an artifact's kernel library: its constructor runs when the
// library is loaded, before any kernel is called. It tries to read the agent's token file (named
// on the agent's command line, its parent's /proc/PID/cmdline), to open a network socket and to
// read the agent's memory, reports each attempt on stderr and exits 3. The task's error carries
// that line: the test reads what the constructor could reach.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const char* Attempt(int ok_result, int err) { return ok_result ? "REACHED" : strerror(err); }

__attribute__((constructor)) static void Probe(void) {
  char path[64];
  char cmdline[8192];
  char token_path[4096] = "";
  snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)getppid());
  int fd = open(path, O_RDONLY);
  ssize_t n = fd >= 0 ? read(fd, cmdline, sizeof(cmdline) - 1) : -1;
  if (fd >= 0) close(fd);
  for (ssize_t i = 0; n > 0 && i < n;) {
    const char* arg = cmdline + i;
    size_t len = strlen(arg);
    if (strcmp(arg, "--token") == 0 && i + (ssize_t)len + 1 < n) {
      snprintf(token_path, sizeof(token_path), "%s", arg + len + 1);
    }
    i += (ssize_t)len + 1;
  }
  char token[256];
  int token_fd = token_path[0] ? open(token_path, O_RDONLY) : -1;
  int token_errno = token_path[0] ? errno : ENOENT;
  ssize_t token_bytes = token_fd >= 0 ? read(token_fd, token, sizeof(token)) : -1;
  if (token_fd >= 0 && token_bytes <= 0) token_errno = ENODATA;  // hidden: /dev/null
  int sock = socket(AF_INET, SOCK_STREAM, 0);
  int sock_errno = errno;
  snprintf(path, sizeof(path), "/proc/%d/mem", (int)getppid());
  int mem = open(path, O_RDONLY);
  int mem_errno = errno;
  fprintf(stderr, "kiln-probe: token %s (%s), socket %s, agent memory %s\n",
          Attempt(token_bytes > 0, token_errno), token_path[0] ? "named" : "not named",
          Attempt(sock >= 0, sock_errno), Attempt(mem >= 0, mem_errno));
  fflush(stderr);
  _exit(3);
}
