// PtyProcess starts a program on a fresh pseudo-terminal with the process
// hygiene tmux's spawn.c uses: every handler reset, every fd above stderr
// closed, an empty signal mask, its own environment. The child leads its own
// session and process group, with the PTY as its controlling terminal, so
// the whole group can be signalled and job control works. Given a Warden, it
// is started inside a Containment (containment.h), so every process it
// starts, in any session, ends with it (EndContained).
#ifndef TERMBRIDGE_BROKER_SESSION_PTY_PROCESS_H_
#define TERMBRIDGE_BROKER_SESSION_PTY_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "broker/session/containment.h"
#include "broker/session/terminal_process.h"

namespace termbridge::session {

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH when it has no '/'
  std::string cwd;                // empty: inherit the broker's cwd
  // The child's complete environment ("KEY=VALUE" pairs are built from these).
  // Empty: a minimal environment (PATH, HOME, TERM=xterm-256color, LANG).
  std::vector<std::pair<std::string, std::string>> env;
  unsigned short cols = 120;
  unsigned short rows = 40;
  // Null: no containment (what the process leaves in its session is still
  // killed by EndContained, but nothing that left it).
  Warden* warden = nullptr;
  // The terminal's id: names its group and record, and is set as
  // TERMBRIDGE_TERMINAL_ID in the environment unless the env names it.
  std::string containment_id;
};

class PtyProcess : public TerminalProcess {
 public:
  // Starts the program (posix_spawn: no copy of the caller's page tables, so
  // the cost does not grow with the broker). A program that cannot be
  // executed, or a cwd that cannot be entered, is an error here, not a
  // process that exits 127.
  static absl::StatusOr<std::unique_ptr<PtyProcess>> Spawn(const SpawnOptions& options);

  // Sends SIGKILL to the process group if it was never reaped, ends every
  // contained process, and closes the master.
  ~PtyProcess() override;
  PtyProcess(const PtyProcess&) = delete;
  PtyProcess& operator=(const PtyProcess&) = delete;

  pid_t pid() const override { return pid_; }
  // -1 after CloseMaster. Whoever uses it must keep CloseMaster from running
  // meanwhile (Terminal: its reader thread, or its input lock).
  int master_fd() const override ABSL_NO_THREAD_SAFETY_ANALYSIS { return master_fd_; }
  // Closes the master: the PTY is freed once nothing else holds it. Every
  // call below that needs it then fails (FailedPrecondition) or answers
  // "unknown".
  void CloseMaster() override;
  // SIGKILL to every process started in the terminal, also those that left
  // its session (with a Warden), until none runs; reaps the orphans the
  // broker inherited. Returns how many it signalled. Idempotent.
  int EndContained() override;

  // Writes what the master takes now, without waiting; returns how many bytes
  // that was (0 when it is full). FailedPrecondition once nothing holds the
  // terminal open (the program exited).
  absl::StatusOr<size_t> WriteSome(std::string_view bytes) override;
  absl::Status Resize(unsigned short cols, unsigned short rows) override;
  // The PTY's window size as {cols, rows}.
  std::pair<unsigned short, unsigned short> Size() const override;
  // Signals the child's whole process group.
  absl::Status SignalGroup(int signo) override;
  // Signals every process still in the child's session (sid == pid()), in any
  // process group: jobs an interactive shell moved to their own groups, and
  // remnants that outlived the shell. Safe after the child was reaped: the
  // kernel does not reuse a pid while it names a live session.
  void SignalSession(int signo) const override;
  // Executable basenames of the processes in the PTY's foreground process
  // group (the programs reading the terminal's input now), the process this
  // PtyProcess started excluded; empty if unknown.
  std::vector<std::string> ForegroundPrograms() const override;
  std::vector<std::string> DetachedPrograms() const override;
  // Signals the terminal's foreground process group (tcgetpgrp on the master).
  absl::Status SignalForeground(int signo) override;

  // Non-blocking waitpid. Returns true once the child has been reaped; then
  // exit_code() (>= 0 when it exited) or term_signal() (> 0 when killed) is set.
  bool TryReap() override;
  bool reaped() const override { return reaped_; }
  int exit_code() const override { return exit_code_; }
  int term_signal() const override { return term_signal_; }

 private:
  PtyProcess(pid_t pid, int master_fd) : pid_(pid), master_fd_(master_fd) {}

  pid_t pid_;
  mutable absl::Mutex master_mu_;  // held (shared) while master_fd_ is used
  int master_fd_ ABSL_GUARDED_BY(master_mu_);
  Warden* warden_ = nullptr;
  std::unique_ptr<Containment> containment_;  // null without a Warden
  bool reaped_ = false;
  int exit_code_ = -1;
  int term_signal_ = 0;
};

}  // namespace termbridge::session

#endif  // TERMBRIDGE_BROKER_SESSION_PTY_PROCESS_H_
