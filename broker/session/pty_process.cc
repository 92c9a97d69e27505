// PtyProcess: a program on a fresh PTY, started with posix_spawn and the
// hygiene tmux's spawn.c applies after its fork: handlers reset, inherited
// fds closed, an empty signal mask, its own session with the PTY as its
// controlling terminal. posix_spawn reports a failed exec or chdir as an
// errno, so a missing program is an error, not a process that exits 127.
// With a Warden, the spawn holds its lock until the pid is registered (its
// scans never reap a terminal's first process) and the child is moved into
// the terminal's Containment at once.
#include "broker/session/pty_process.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace termbridge::session {
namespace {

// PATH when neither the broker nor the given environment has one.
constexpr char kDefaultPath[] = "/usr/local/bin:/usr/bin:/bin";
// Runs the spawn gate (see Spawn).
const std::string kGateShell = "/bin/sh";

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
  env.push_back(absl::StrCat("PATH=", path ? path : kDefaultPath));
  const char* home = getenv("HOME");
  if (home) env.push_back(absl::StrCat("HOME=", home));
  env.push_back("TERM=xterm-256color");
  const char* lang = getenv("LANG");
  env.push_back(absl::StrCat("LANG=", lang ? lang : "C.UTF-8"));
  return env;
}

// The file to exec for `program`, looked up as execvp does but in the
// child's PATH (from its environment), since posix_spawnp would search the
// broker's. A name with a '/' is used as it is.
absl::StatusOr<std::string> ResolveProgram(const std::string& program,
                                           const std::vector<std::string>& env) {
  if (program.find('/') != std::string::npos) return program;
  std::string path = kDefaultPath;
  for (const std::string& e : env) {
    if (absl::StartsWith(e, "PATH=")) path = e.substr(5);
  }
  int err = ENOENT;
  for (absl::string_view dir : absl::StrSplit(path, ':')) {
    std::string candidate = absl::StrCat(dir.empty() ? "." : std::string(dir), "/", program);
    struct stat st;
    if (stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    err = EACCES;  // found but not executable: execvp reports EACCES, keep looking
  }
  return ErrnoStatus(absl::StrCat("cannot start '", program, "'"), err);
}

// posix_spawn's attributes and file actions, destroyed on every path out.
struct SpawnPlan {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  SpawnPlan() {
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
  }
  ~SpawnPlan() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<PtyProcess>> PtyProcess::Spawn(const SpawnOptions& options) {
  if (options.argv.empty() || options.argv[0].empty()) {
    return absl::InvalidArgumentError("spawn: empty argv");
  }
  std::vector<char*> argv;
  for (const auto& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_strings;
  if (options.env.empty()) {
    env_strings = DefaultEnvironment();
  } else {
    for (const auto& [k, v] : options.env) env_strings.push_back(absl::StrCat(k, "=", v));
  }
  std::unique_ptr<Containment> containment;
  if (options.warden != nullptr) {
    // Every process of the terminal carries its id: a restarted broker, and
    // one without cgroups, find them by it (containment.h).
    const std::string marker = absl::StrCat(kTerminalIdVariable, "=");
    if (std::none_of(env_strings.begin(), env_strings.end(),
                     [&](const std::string& e) { return absl::StartsWith(e, marker); })) {
      env_strings.push_back(absl::StrCat(marker, options.containment_id));
    }
    containment = options.warden->Contain(options.containment_id);
  }
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  absl::StatusOr<std::string> program = ResolveProgram(options.argv[0], env_strings);
  if (!program.ok()) return program.status();

  // The master stays here; the child opens the slave by name as its stdin
  // after setsid, which makes the PTY its controlling terminal.
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
  if (master < 0) return ErrnoStatus("posix_openpt", errno);
  char slave[128];
  if (grantpt(master) != 0 || unlockpt(master) != 0 ||
      ptsname_r(master, slave, sizeof slave) != 0) {
    int e = errno;
    close(master);
    return ErrnoStatus("preparing the pty", e);
  }
  struct winsize ws;
  memset(&ws, 0, sizeof ws);
  ws.ws_col = options.cols;
  ws.ws_row = options.rows;
  ioctl(master, TIOCSWINSZ, &ws);

  // The child shares the broker's memory until it execs (glibc clones with
  // CLONE_VM | CLONE_VFORK), so starting a terminal costs the same however
  // large the broker has grown: fork copied its page tables and left every
  // page copy-on-write, so the broker then took a page fault on each page
  // it wrote next. The child starts in a new session with every signal at
  // its default and none blocked, and keeps no fd above stderr.
  SpawnPlan plan;
  sigset_t signals;
  sigfillset(&signals);
  posix_spawnattr_setsigdefault(&plan.attr, &signals);
  sigemptyset(&signals);
  posix_spawnattr_setsigmask(&plan.attr, &signals);
  posix_spawnattr_setflags(&plan.attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  posix_spawn_file_actions_addopen(&plan.actions, 0, slave, O_RDWR, 0);
  posix_spawn_file_actions_adddup2(&plan.actions, 0, 1);
  posix_spawn_file_actions_adddup2(&plan.actions, 0, 2);
  // With a cgroup, the child must be in it before it can fork: posix_spawn
  // cannot start it there (glibc 2.36 has no posix_spawnattr_setcgroup_np),
  // so it starts as a gate, `sh` waiting for one line on fd 3, which the
  // broker writes once the pid is in the group; the gate then execs the
  // program (same pid, argv[0] its resolved path).
  int gate[2] = {-1, -1};
  std::vector<std::string> gated;
  const std::string* exec_path = &*program;
  if (containment && !containment->cgroup().empty()) {
    if (pipe2(gate, O_CLOEXEC) != 0) {
      int e = errno;
      close(master);
      return ErrnoStatus("pipe2 for the spawn gate", e);
    }
    posix_spawn_file_actions_adddup2(&plan.actions, gate[0], 3);
    gated = {"sh", "-c", "read -r _ <&3 || exit 126; exec \"$@\" 3<&-", "sh", *program};
    for (size_t i = 1; i < options.argv.size(); ++i) gated.push_back(options.argv[i]);
    argv.clear();
    for (auto& a : gated) argv.push_back(a.data());
    argv.push_back(nullptr);
    exec_path = &kGateShell;
  }
  posix_spawn_file_actions_addclosefrom_np(&plan.actions, gate[0] >= 0 ? 4 : 3);
  if (!options.cwd.empty())
    posix_spawn_file_actions_addchdir_np(&plan.actions, options.cwd.c_str());
  pid_t pid = -1;
  int err;
  if (options.warden != nullptr) {
    absl::MutexLock lock(&options.warden->spawn_mu());
    err =
        posix_spawn(&pid, exec_path->c_str(), &plan.actions, &plan.attr, argv.data(), envp.data());
    if (err == 0) options.warden->AddLeader(pid);
  } else {
    err =
        posix_spawn(&pid, exec_path->c_str(), &plan.actions, &plan.attr, argv.data(), envp.data());
  }
  if (gate[0] >= 0) close(gate[0]);
  if (err != 0) {
    close(master);
    if (gate[1] >= 0) close(gate[1]);
    return ErrnoStatus(absl::StrCat("cannot start '", options.argv[0], "'",
                                    options.cwd.empty() ? "" : absl::StrCat(" in ", options.cwd)),
                       err);
  }
  // A group that cannot take it leaves the scans (containment.h).
  if (containment) containment->Adopt(pid).IgnoreError();
  if (gate[1] >= 0) {
    (void)!write(gate[1], "\n", 1);  // the pipe is empty: one byte always fits
    close(gate[1]);
  }
  auto process = std::unique_ptr<PtyProcess>(new PtyProcess(pid, master));
  process->warden_ = options.warden;
  process->containment_ = std::move(containment);
  return process;
}

PtyProcess::~PtyProcess() {
  if (!reaped_) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    int status;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    if (warden_ != nullptr) warden_->RemoveLeader(pid_);
  }
  containment_.reset();  // ends whatever the terminal left running
  CloseMaster();
}

void PtyProcess::CloseMaster() {
  absl::MutexLock lock(&master_mu_);
  if (master_fd_ >= 0) close(master_fd_);
  master_fd_ = -1;
}

int PtyProcess::EndContained() {
  if (containment_) return containment_->EndAll();
  SignalSession(SIGKILL);
  return 0;
}

absl::StatusOr<size_t> PtyProcess::WriteSome(std::string_view bytes) {
  absl::ReaderMutexLock lock(&master_mu_);
  if (master_fd_ < 0) return absl::FailedPreconditionError("the terminal's program has exited");
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
  absl::ReaderMutexLock lock(&master_mu_);
  if (master_fd_ < 0) return absl::FailedPreconditionError("the terminal's program has exited");
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
  absl::ReaderMutexLock lock(&master_mu_);
  if (master_fd_ < 0 || ioctl(master_fd_, TIOCGWINSZ, &ws) != 0) return {80, 24};
  return {ws.ws_col, ws.ws_row};
}

absl::Status PtyProcess::SignalGroup(int signo) {
  if (reaped_) return absl::FailedPreconditionError("process already exited");
  if (kill(-pid_, signo) != 0 && kill(pid_, signo) != 0) return ErrnoStatus("kill", errno);
  return absl::OkStatus();
}

absl::Status PtyProcess::SignalForeground(int signo) {
  if (reaped_) return absl::FailedPreconditionError("process already exited");
  absl::ReaderMutexLock lock(&master_mu_);
  if (master_fd_ < 0) return absl::FailedPreconditionError("process already exited");
  pid_t pgrp = tcgetpgrp(master_fd_);
  if (pgrp <= 0) pgrp = pid_;
  if (kill(-pgrp, signo) != 0) return ErrnoStatus("kill", errno);
  return absl::OkStatus();
}

namespace {

// Calls fn(pid, pgrp, session) for every process /proc lists.
void ForEachProcess(const std::function<void(pid_t pid, int pgrp, int session)>& fn) {
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
    fn(static_cast<pid_t>(pid), pgrp, session);
  }
  closedir(dir);
}

// The basename of the file `pid` runs; "" when it is gone (or a zombie,
// which reads nothing). When the file cannot be read (a process that made
// itself non-dumpable), "(unknown <comm>)": its comm is whatever it chose,
// so it is not taken as the program's name (input_readers.h counts it as a
// reader).
std::string ProgramOf(pid_t pid) {
  char path[64], target[PATH_MAX];
  snprintf(path, sizeof path, "/proc/%d/exe", static_cast<int>(pid));
  ssize_t n = readlink(path, target, sizeof target - 1);
  if (n > 0) {
    std::string exe(target, static_cast<size_t>(n));
    if (absl::EndsWith(exe, " (deleted)")) exe.resize(exe.size() - 10);
    size_t slash = exe.rfind('/');
    return slash == std::string::npos ? exe : exe.substr(slash + 1);
  }
  if (errno != EACCES && errno != EPERM) return "";  // gone, or a zombie (no exe)
  snprintf(path, sizeof path, "/proc/%d/comm", static_cast<int>(pid));
  FILE* f = fopen(path, "r");
  if (f == nullptr) return "";
  char comm[64] = {0};
  size_t got = fread(comm, 1, sizeof comm - 1, f);
  fclose(f);
  std::string out(comm, got);
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return absl::StrCat("(unknown ", out, ")");
}

// /proc/<pid>/cmdline (NUL-separated arguments), or "" if unreadable.
std::string CmdlineOf(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/cmdline", static_cast<int>(pid));
  FILE* f = fopen(path, "r");
  if (f == nullptr) return "";
  std::string out;
  char buf[1024];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0 && out.size() < 65536) out.append(buf, n);
  fclose(f);
  return out;
}

}  // namespace

void PtyProcess::SignalSession(int signo) const {
  ForEachProcess([this, signo](pid_t pid, int, int session) {
    if (session == pid_) kill(pid, signo);
  });
}

std::vector<std::string> PtyProcess::ForegroundPrograms() const {
  pid_t pgrp;
  {
    absl::ReaderMutexLock lock(&master_mu_);
    pgrp = master_fd_ < 0 ? -1 : tcgetpgrp(master_fd_);
  }
  if (pgrp <= 0) return {};
  const std::string shell_cmdline = CmdlineOf(pid_);
  std::vector<std::string> out;
  ForEachProcess([this, &out, pgrp, &shell_cmdline](pid_t pid, int group, int) {
    // The terminal's own shell in the foreground runs a builtin (read):
    // its input is data. At its prompt, agent input is refused elsewhere.
    // A fork of it (a job between fork and exec, a subshell) carries its
    // exact command line: the program it is about to become counts, not it.
    if (group != pgrp || pid == pid_) return;
    if (!shell_cmdline.empty() && CmdlineOf(pid) == shell_cmdline) return;
    std::string name = ProgramOf(pid);
    if (!name.empty()) out.push_back(std::move(name));
  });
  return out;
}

std::vector<std::string> PtyProcess::DetachedPrograms() const {
  // The shell leads the terminal's session. Its members (the containment's,
  // which holds the shell's descendants and follows processes that left;
  // else the shell's descendants) in another session read the terminal if
  // they hold it open. One /proc table serves both.
  const std::vector<ProcStat> table = ListProcesses();
  std::set<pid_t> members;
  if (containment_ != nullptr) {
    for (pid_t pid : containment_->Members(table)) members.insert(pid);
  } else {
    members.insert(pid_);
    for (bool grew = true; grew;) {
      grew = false;
      for (const ProcStat& p : table) {
        if (members.count(p.ppid) > 0 && members.insert(p.pid).second) grew = true;
      }
    }
  }
  std::vector<std::string> out;
  for (const ProcStat& p : table) {
    if (p.pid == pid_ || p.session == pid_ || members.count(p.pid) == 0) continue;
    std::string name = ProgramOf(p.pid);
    if (!name.empty()) out.push_back(std::move(name));
  }
  return out;
}

bool PtyProcess::TryReap() {
  if (reaped_) return true;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r != pid_) return false;
  reaped_ = true;
  if (warden_ != nullptr) warden_->RemoveLeader(pid_);
  if (WIFEXITED(status)) exit_code_ = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) term_signal_ = WTERMSIG(status);
  return true;
}

}  // namespace termbridge::session
