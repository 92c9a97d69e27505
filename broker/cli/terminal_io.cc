// Raw mode, the signal pipe and the window size of the person's terminal.
#include "broker/cli/terminal_io.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace termbridge::cli {
namespace {

// The write end of the live SignalPipe, for the handler.
std::atomic<int> g_signal_write_fd{-1};

void OnSignal(int signo) {
  int saved_errno = errno;
  int fd = g_signal_write_fd.load();
  if (fd >= 0) {
    unsigned char byte = static_cast<unsigned char>(signo);
    // A full pipe drops the byte: enough of the same signals are queued.
    [[maybe_unused]] ssize_t n = write(fd, &byte, 1);
  }
  errno = saved_errno;
}

void InstallHandler(int signo, struct sigaction* previous) {
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(signo, &action, previous);
}

}  // namespace

RawMode::RawMode(int fd) : fd_(fd) {
  is_tty_ = isatty(fd_) == 1 && tcgetattr(fd_, &saved_) == 0;
  Reenter();
}

RawMode::~RawMode() { Restore(); }

void RawMode::Restore() {
  if (!active_) return;
  tcsetattr(fd_, TCSAFLUSH, &saved_);
  active_ = false;
}

void RawMode::Reenter() {
  if (!is_tty_ || active_) return;
  termios raw = saved_;
  cfmakeraw(&raw);
  raw.c_cc[VMIN] = 1;
  raw.c_cc[VTIME] = 0;
  active_ = tcsetattr(fd_, TCSAFLUSH, &raw) == 0;
}

SignalPipe::SignalPipe(std::vector<int> signals) : signals_(std::move(signals)) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
    read_fd_ = fds[0];
    write_fd_ = fds[1];
  }
  g_signal_write_fd.store(write_fd_);
  previous_.resize(signals_.size());
  for (size_t i = 0; i < signals_.size(); ++i) InstallHandler(signals_[i], &previous_[i]);
}

SignalPipe::~SignalPipe() {
  for (size_t i = 0; i < signals_.size(); ++i) sigaction(signals_[i], &previous_[i], nullptr);
  g_signal_write_fd.store(-1);
  if (read_fd_ >= 0) close(read_fd_);
  if (write_fd_ >= 0) close(write_fd_);
}

int SignalPipe::Take() {
  unsigned char byte = 0;
  ssize_t n = read(read_fd_, &byte, 1);
  return n == 1 ? byte : -1;
}

void SignalPipe::Wake() {
  unsigned char byte = 0;
  [[maybe_unused]] ssize_t n = write(write_fd_, &byte, 1);
}

void SignalPipe::RaiseDefault(int signo) {
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  sigaction(signo, &action, nullptr);
  raise(signo);  // returns once the process is continued
  InstallHandler(signo, nullptr);
}

std::optional<WindowSize> TerminalWindowSize() {
  for (int fd : {STDIN_FILENO, STDOUT_FILENO}) {
    winsize size{};
    if (isatty(fd) == 1 && ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) {
      return WindowSize{size.ws_col, size.ws_row};
    }
  }
  return std::nullopt;
}

}  // namespace termbridge::cli
