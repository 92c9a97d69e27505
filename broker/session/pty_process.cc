// PtyProcess: forkpty with tmux-style hygiene (see spawn.c): every signal is
// blocked across the fork, the child resets handlers, closes inherited fds,
// restores an empty mask and installs its environment before exec. An exec
// failure travels back over a close-on-exec pipe as an errno.
#include "broker/session/pty_process.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <pty.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"

extern char** environ;

namespace termbridge::session {
namespace {

absl::Status ErrnoStatus(const std::string& what, int err) {
  std::string msg = absl::StrCat(what, ": ", strerror(err));
  if (err == ENOENT || err == ENOTDIR) return absl::NotFoundError(msg);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(msg);
  if (err == ESRCH) return absl::NotFoundError(msg);
  return absl::InternalError(msg);
}

std::vector<std::string> DefaultEnvironment() {
  std::vector<std::string> env;
  const char* path = getenv("PATH");
  env.push_back(absl::StrCat("PATH=", path ? path : "/usr/local/bin:/usr/bin:/bin"));
  const char* home = getenv("HOME");
  if (home) env.push_back(absl::StrCat("HOME=", home));
  env.push_back("TERM=xterm-256color");
  const char* lang = getenv("LANG");
  env.push_back(absl::StrCat("LANG=", lang ? lang : "C.UTF-8"));
  return env;
}

// Runs in the child between fork and exec: only async-signal-safe calls.
[[noreturn]] void ExecChild(const SpawnOptions& options, char** argv, char** envp, int err_fd) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_DFL;
  sigemptyset(&sa.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    sigaction(sig, &sa, nullptr);
  }
  // Close every fd above stderr except the error pipe (close-on-exec):
  // close_range does it in two system calls; a kernel without it (before
  // 5.9) gets one close per possible fd, which costs ~25 ms at 65536.
  bool closed = err_fd > 3
                    ? syscall(SYS_close_range, 3u, static_cast<unsigned>(err_fd - 1), 0u) == 0
                    : true;
  closed = closed && syscall(SYS_close_range, static_cast<unsigned>(err_fd + 1), ~0u, 0u) == 0;
  if (!closed) {
    struct rlimit rl;
    int max_fd = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < 65536) {
      max_fd = static_cast<int>(rl.rlim_cur);
    }
    for (int fd = 3; fd < max_fd; ++fd) {
      if (fd != err_fd) close(fd);
    }
  }
  if (!options.cwd.empty() && chdir(options.cwd.c_str()) != 0) {
    int e = errno;
    (void)!write(err_fd, &e, sizeof e);
    _exit(127);
  }
  environ = envp;
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);
  execvp(argv[0], argv);
  int e = errno;
  (void)!write(err_fd, &e, sizeof e);
  _exit(127);
}

}  // namespace

absl::StatusOr<std::unique_ptr<PtyProcess>> PtyProcess::Spawn(const SpawnOptions& options) {
  if (options.argv.empty() || options.argv[0].empty()) {
    return absl::InvalidArgumentError("spawn: empty argv");
  }
  // Everything the child needs is built before the fork: no allocation after it.
  std::vector<char*> argv;
  for (const auto& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  if (options.env.empty()) {
    env_strings = DefaultEnvironment();
  } else {
    for (const auto& [k, v] : options.env) env_strings.push_back(absl::StrCat(k, "=", v));
  }
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) return ErrnoStatus("pipe2", errno);

  struct winsize ws;
  memset(&ws, 0, sizeof ws);
  ws.ws_col = options.cols;
  ws.ws_row = options.rows;

  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &old);
  int master = -1;
  pid_t pid = forkpty(&master, nullptr, nullptr, &ws);
  if (pid == 0) {
    close(err_pipe[0]);
    ExecChild(options, argv.data(), envp.data(), err_pipe[1]);
  }
  int fork_errno = errno;
  sigprocmask(SIG_SETMASK, &old, nullptr);
  close(err_pipe[1]);
  if (pid < 0) {
    close(err_pipe[0]);
    return ErrnoStatus("forkpty", fork_errno);
  }
  auto process = std::unique_ptr<PtyProcess>(new PtyProcess(pid, master));
  fcntl(master, F_SETFD, FD_CLOEXEC);
  fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK);

  int child_errno = 0;
  ssize_t n;
  do {
    n = read(err_pipe[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  close(err_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    int status = 0;
    waitpid(pid, &status, 0);
    process->reaped_ = true;
    process->exit_code_ = 127;
    return ErrnoStatus(absl::StrCat("cannot start '", options.argv[0], "'",
                                   options.cwd.empty() ? "" : absl::StrCat(" in ", options.cwd)),
                       child_errno);
  }
  return process;
}

PtyProcess::~PtyProcess() {
  if (!reaped_) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    int status;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (master_fd_ >= 0) close(master_fd_);
}

absl::StatusOr<size_t> PtyProcess::WriteSome(std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(master_fd_, bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0 && errno == EIO) {
      return absl::FailedPreconditionError("the terminal's program has exited");
    }
    return ErrnoStatus("write to terminal", errno);
  }
  return done;
}

absl::Status PtyProcess::Resize(unsigned short cols, unsigned short rows) {
  struct winsize ws;
  memset(&ws, 0, sizeof ws);
  ws.ws_col = cols;
  ws.ws_row = rows;
  if (ioctl(master_fd_, TIOCSWINSZ, &ws) != 0) return ErrnoStatus("resize", errno);
  return absl::OkStatus();
}

std::pair<unsigned short, unsigned short> PtyProcess::Size() const {
  struct winsize ws;
  memset(&ws, 0, sizeof ws);
  if (ioctl(master_fd_, TIOCGWINSZ, &ws) != 0) return {80, 24};
  return {ws.ws_col, ws.ws_row};
}

absl::Status PtyProcess::SignalGroup(int signo) {
  if (reaped_) return absl::FailedPreconditionError("process already exited");
  if (kill(-pid_, signo) != 0 && kill(pid_, signo) != 0) return ErrnoStatus("kill", errno);
  return absl::OkStatus();
}

absl::Status PtyProcess::SignalForeground(int signo) {
  if (reaped_) return absl::FailedPreconditionError("process already exited");
  pid_t pgrp = tcgetpgrp(master_fd_);
  if (pgrp <= 0) pgrp = pid_;
  if (kill(-pgrp, signo) != 0) return ErrnoStatus("kill", errno);
  return absl::OkStatus();
}

void PtyProcess::SignalSession(int signo) const {
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return;
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    long pid = strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || pid <= 1) continue;
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE* f = fopen(path, "r");
    if (f == nullptr) continue;
    char buf[512] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    // "pid (comm) state ppid pgrp session ...": comm may hold spaces or parens.
    const char* close_paren = strrchr(buf, ')');
    if (close_paren == nullptr || close_paren + 2 >= buf + n) continue;
    char state;
    int ppid, pgrp, session;
    if (sscanf(close_paren + 2, "%c %d %d %d", &state, &ppid, &pgrp, &session) != 4) continue;
    if (session == pid_) kill(static_cast<pid_t>(pid), signo);
  }
  closedir(dir);
}

bool PtyProcess::TryReap() {
  if (reaped_) return true;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r != pid_) return false;
  reaped_ = true;
  if (WIFEXITED(status)) exit_code_ = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) term_signal_ = WTERMSIG(status);
  return true;
}

}  // namespace termbridge::session
