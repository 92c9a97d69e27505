// The person's own terminal while `termbridge attach` or `watch` runs: raw
// mode that is always restored, signals turned into bytes on a pipe so one
// poll loop handles keys, resizes and interrupts, and the window size.
#ifndef TERMBRIDGE_BROKER_CLI_TERMINAL_IO_H_
#define TERMBRIDGE_BROKER_CLI_TERMINAL_IO_H_

#include <signal.h>
#include <termios.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace termbridge::cli {

// Puts `fd` into raw mode when it is a TTY (no echo, no line editing, no
// signals from keys: Ctrl-C is a byte for the remote program) and restores
// the saved settings on Restore() or destruction. Does nothing on a non-TTY.
class RawMode {
 public:
  explicit RawMode(int fd);
  ~RawMode();
  RawMode(const RawMode&) = delete;
  RawMode& operator=(const RawMode&) = delete;

  bool active() const { return active_; }
  // Returns the terminal to its saved settings. Idempotent.
  void Restore();
  // Enters raw mode again after Restore() (for example after SIGCONT).
  void Reenter();

 private:
  int fd_;
  bool is_tty_ = false;
  bool active_ = false;
  termios saved_{};
};

// Delivers the listed signals as bytes on a pipe (one byte per signal: its
// number) for a poll loop, and restores the previous handlers when
// destroyed. Only one SignalPipe may exist at a time in a process.
class SignalPipe {
 public:
  explicit SignalPipe(std::vector<int> signals);
  ~SignalPipe();
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;

  // The read end, for poll(2).
  int fd() const { return read_fd_; }
  // Returns the next pending signal number, 0 for a Wake(), or -1 when
  // nothing is pending. Never blocks.
  int Take();
  // Wakes the poll loop from another thread (Take() returns 0).
  void Wake();
  // Lets `signo` take its default action (stop, for SIGTSTP) and reinstalls
  // the handler once the process continues.
  void RaiseDefault(int signo);

 private:
  int read_fd_ = -1;
  int write_fd_ = -1;
  std::vector<int> signals_;
  std::vector<struct sigaction> previous_;
};

struct WindowSize {
  uint16_t cols = 0;
  uint16_t rows = 0;
};

// The size of the first of stdin and stdout that is a TTY, if any.
std::optional<WindowSize> TerminalWindowSize();

}  // namespace termbridge::cli

#endif  // TERMBRIDGE_BROKER_CLI_TERMINAL_IO_H_
