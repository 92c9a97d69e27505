// TerminalProcess: what a Terminal needs of the program it runs: the PTY's
// master side, signals, the window size and the exit. PtyProcess is the real
// one (a program on a fresh pseudo-terminal); tests of the registry and the
// gate use a fake (broker/session/testing/fake_process.h) that plays the
// program on a PTY pair without starting any process.
#ifndef TERMBRIDGE_BROKER_SESSION_TERMINAL_PROCESS_H_
#define TERMBRIDGE_BROKER_SESSION_TERMINAL_PROCESS_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace termbridge::session {

struct SpawnOptions;

class TerminalProcess {
 public:
  virtual ~TerminalProcess() = default;

  // The program's pid (a fake's is -1: nothing to wait for or signal).
  virtual pid_t pid() const = 0;
  // The PTY's master, non-blocking; -1 after CloseMaster. The Terminal's
  // reader thread polls it: EIO (or POLLHUP) once no one holds the slave.
  virtual int master_fd() const = 0;
  virtual void CloseMaster() = 0;
  // Ends every process started in the terminal; returns how many it signalled.
  virtual int EndContained() = 0;
  // Writes what the master takes now; FailedPrecondition once the program exited.
  virtual absl::StatusOr<size_t> WriteSome(std::string_view bytes) = 0;
  virtual absl::Status Resize(unsigned short cols, unsigned short rows) = 0;
  virtual std::pair<unsigned short, unsigned short> Size() const = 0;
  virtual absl::Status SignalGroup(int signo) = 0;
  virtual void SignalSession(int signo) const = 0;
  virtual absl::Status SignalForeground(int signo) = 0;
  virtual std::vector<std::string> ForegroundPrograms() const = 0;
  // Programs of the terminal's processes that left its session (setsid): no
  // job control keeps them from reading the terminal.
  virtual std::vector<std::string> DetachedPrograms() const { return {}; }
  // True once the program has ended and was reaped; then exit_code() (>= 0
  // when it exited) or term_signal() (> 0 when killed) is set.
  virtual bool TryReap() = 0;
  virtual bool reaped() const = 0;
  virtual int exit_code() const = 0;
  virtual int term_signal() const = 0;
};

// Starts a terminal's program. Empty: PtyProcess::Spawn.
using ProcessSpawner =
    std::function<absl::StatusOr<std::unique_ptr<TerminalProcess>>(const SpawnOptions&)>;

}  // namespace termbridge::session

#endif  // TERMBRIDGE_BROKER_SESSION_TERMINAL_PROCESS_H_
