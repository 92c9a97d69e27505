// A fake terminal program for unit tests of the registry, the gate and the
// terminal (broker/session/terminal_process.h): the test plays the program on
// a real PTY pair (openpty) and no process is started. What the test prints
// reaches the Terminal's reader through the PTY's line discipline (ONLCR:
// "\n" arrives as "\r\n", as from a real program); what the Terminal writes
// can be read back; Exit, or a signal that ends it, closes the slave side, so
// the reader sees EIO and reaps the fake as it would a real child.
#ifndef TERMBRIDGE_BROKER_SESSION_TESTING_FAKE_PROCESS_H_
#define TERMBRIDGE_BROKER_SESSION_TESTING_FAKE_PROCESS_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "broker/session/pty_process.h"
#include "broker/session/terminal_process.h"

namespace termbridge::session::testing {

// The test's side of one fake program. Thread-safe.
class FakeProgram {
 public:
  explicit FakeProgram(SpawnOptions spawn);
  ~FakeProgram();
  FakeProgram(const FakeProgram&) = delete;
  FakeProgram& operator=(const FakeProgram&) = delete;

  // How the terminal asked for it to be started (argv, cwd, env, size).
  const SpawnOptions& spawn() const { return spawn_; }
  // The value of `name` in the environment it was given ("" when absent).
  std::string Env(std::string_view name) const;

  // Prints as the program would; FailedPrecondition once it has ended.
  absl::Status Print(std::string_view bytes);
  // What the terminal has written to the program since the last call: waits
  // up to `timeout` until at least `at_least` bytes have come.
  std::string ReadInput(size_t at_least, absl::Duration timeout);
  // Ends the program with an exit code, or as killed by `signo`. Idempotent:
  // the first end counts.
  void Exit(int code);
  void EndBySignal(int signo);
  bool ended() const;

  // Sets the PTY's modes as the program would: echo off with canonical input
  // is how password prompts read (Terminal::secret_prompt). The fake starts
  // with both off (raw input, as a full-screen program reads).
  void SetInputModes(bool echo, bool canonical);

  // Signals the terminal sent it, in order (group, session and foreground).
  std::vector<int> signals() const;
  // Whether SIGINT ends it (default true; a program that handles it: false).
  void set_ends_on_interrupt(bool ends);
  // What ForegroundPrograms reports (default: none).
  void set_foreground(std::vector<std::string> programs);

 private:
  friend class FakeProcess;
  friend class FakeSpawner;
  void Signal(int signo);
  void EndLocked(int code, int signo) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const SpawnOptions spawn_;
  int master_fd_ = -1;  // handed to the FakeProcess, which closes it
  mutable absl::Mutex mu_;
  int slave_fd_ ABSL_GUARDED_BY(mu_) = -1;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  int exit_code_ ABSL_GUARDED_BY(mu_) = -1;
  int term_signal_ ABSL_GUARDED_BY(mu_) = 0;
  bool ends_on_interrupt_ ABSL_GUARDED_BY(mu_) = true;
  std::vector<int> signals_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> foreground_ ABSL_GUARDED_BY(mu_);
};

// Starts fake programs in place of PtyProcess::Spawn and keeps each for the
// test. Thread-safe.
class FakeSpawner {
 public:
  // The spawner to give RegistryOptions::spawner or Terminal::Start.
  ProcessSpawner spawner();
  // Run on every program as it starts, before the Terminal reads it (for
  // example: print and exit, as `echo` would).
  void OnStart(std::function<void(FakeProgram&)> script);
  // The next start fails with `status` (as an unknown program would).
  void FailNext(absl::Status status);
  // The programs started so far, oldest first.
  std::vector<std::shared_ptr<FakeProgram>> programs() const;
  // Waits up to `timeout` until `n` programs have started; the n-th, or null.
  std::shared_ptr<FakeProgram> WaitForProgram(size_t n, absl::Duration timeout) const;

 private:
  mutable absl::Mutex mu_;
  std::function<void(FakeProgram&)> script_ ABSL_GUARDED_BY(mu_);
  absl::Status fail_next_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<FakeProgram>> programs_ ABSL_GUARDED_BY(mu_);
  mutable absl::CondVar started_;  // signalled as each program starts
};

}  // namespace termbridge::session::testing

#endif  // TERMBRIDGE_BROKER_SESSION_TESTING_FAKE_PROCESS_H_
