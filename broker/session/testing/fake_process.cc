// FakeProgram and FakeSpawner (fake_process.h): a PTY pair from openpty, the
// master handed to the Terminal, the slave kept by the test.
#include "broker/session/testing/fake_process.h"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"

namespace termbridge::session::testing {
namespace {

void SetFlags(int fd, int flags) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | flags); }

// The slave as a program that reads bytes as they come sees it: no echo, no
// line editing, no signals from input; output keeps ONLCR like a terminal's.
void ProgramModes(int slave) {
  struct termios modes;
  if (tcgetattr(slave, &modes) != 0) return;
  modes.c_lflag &= ~(ECHO | ICANON | ISIG | IEXTEN);
  modes.c_iflag &= ~(ICRNL | IXON | INLCR);
  modes.c_oflag |= OPOST | ONLCR;
  modes.c_cc[VMIN] = 0;
  modes.c_cc[VTIME] = 0;
  tcsetattr(slave, TCSANOW, &modes);
}

}  // namespace

// The Terminal's side: the PTY master and the program's fate.
class FakeProcess : public TerminalProcess {
 public:
  explicit FakeProcess(std::shared_ptr<FakeProgram> program)
      : program_(std::move(program)), master_fd_(program_->master_fd_) {}
  ~FakeProcess() override {
    if (!program_->ended()) program_->EndBySignal(SIGKILL);
    CloseMaster();
  }

  pid_t pid() const override { return -1; }
  int master_fd() const override { return master_fd_; }
  void CloseMaster() override {
    if (master_fd_ >= 0) close(master_fd_);
    master_fd_ = -1;
  }
  int EndContained() override {
    if (program_->ended()) return 0;
    program_->EndBySignal(SIGKILL);
    return 1;
  }
  absl::StatusOr<size_t> WriteSome(std::string_view bytes) override {
    if (program_->ended() || master_fd_ < 0) {
      return absl::FailedPreconditionError("the program has exited");
    }
    ssize_t n = write(master_fd_, bytes.data(), bytes.size());
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
    return absl::ErrnoToStatus(errno, "write to the fake's PTY");
  }
  absl::Status Resize(unsigned short cols, unsigned short rows) override {
    struct winsize size = {rows, cols, 0, 0};
    if (master_fd_ < 0 || ioctl(master_fd_, TIOCSWINSZ, &size) != 0) {
      return absl::FailedPreconditionError("no PTY to resize");
    }
    return absl::OkStatus();
  }
  std::pair<unsigned short, unsigned short> Size() const override {
    struct winsize size = {};
    if (master_fd_ < 0 || ioctl(master_fd_, TIOCGWINSZ, &size) != 0) return {0, 0};
    return {size.ws_col, size.ws_row};
  }
  absl::Status SignalGroup(int signo) override {
    program_->Signal(signo);
    return absl::OkStatus();
  }
  void SignalSession(int signo) const override { program_->Signal(signo); }
  absl::Status SignalForeground(int signo) override {
    program_->Signal(signo);
    return absl::OkStatus();
  }
  std::vector<std::string> ForegroundPrograms() const override {
    absl::MutexLock lock(&program_->mu_);
    return program_->foreground_;
  }
  bool TryReap() override {
    absl::MutexLock lock(&program_->mu_);
    reaped_ = program_->ended_;
    exit_code_ = program_->exit_code_;
    term_signal_ = program_->term_signal_;
    return reaped_;
  }
  bool reaped() const override { return reaped_; }
  int exit_code() const override { return exit_code_; }
  int term_signal() const override { return term_signal_; }

 private:
  std::shared_ptr<FakeProgram> program_;
  int master_fd_;
  bool reaped_ = false;
  int exit_code_ = -1;
  int term_signal_ = 0;
};

FakeProgram::FakeProgram(SpawnOptions spawn) : spawn_(std::move(spawn)) {
  struct winsize size = {spawn_.rows, spawn_.cols, 0, 0};
  int master = -1;
  int slave = -1;
  if (openpty(&master, &slave, nullptr, nullptr, &size) == 0) {
    SetFlags(master, O_NONBLOCK);
    SetFlags(slave, O_NONBLOCK);
    fcntl(master, F_SETFD, FD_CLOEXEC);
    fcntl(slave, F_SETFD, FD_CLOEXEC);
    ProgramModes(slave);
  }
  master_fd_ = master;
  absl::MutexLock lock(&mu_);
  slave_fd_ = slave;
}

FakeProgram::~FakeProgram() {
  absl::MutexLock lock(&mu_);
  if (slave_fd_ >= 0) close(slave_fd_);
}

std::string FakeProgram::Env(std::string_view name) const {
  for (const auto& [key, value] : spawn_.env) {
    if (key == name) return value;
  }
  return "";
}

absl::Status FakeProgram::Print(std::string_view bytes) {
  absl::MutexLock lock(&mu_);
  while (!bytes.empty()) {
    if (ended_ || slave_fd_ < 0) return absl::FailedPreconditionError("the program has ended");
    ssize_t n = write(slave_fd_, bytes.data(), bytes.size());
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      return absl::ErrnoToStatus(errno, "write to the fake's PTY");
    }
    // Full: the Terminal's reader drains the master; wait for room without
    // holding the lock, so the test's other calls go on.
    int fd = slave_fd_;
    mu_.Unlock();
    struct pollfd p = {fd, POLLOUT, 0};
    poll(&p, 1, 10);
    mu_.Lock();
  }
  return absl::OkStatus();
}

std::string FakeProgram::ReadInput(size_t at_least, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  std::string got;
  char buf[4096];
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (slave_fd_ < 0) return got;
      for (;;) {
        ssize_t n = read(slave_fd_, buf, sizeof buf);
        if (n <= 0) break;
        got.append(buf, static_cast<size_t>(n));
      }
    }
    if (got.size() >= at_least || absl::Now() >= deadline) return got;
    absl::SleepFor(absl::Milliseconds(2));  // polling a fake's input in a test
  }
}

void FakeProgram::EndLocked(int code, int signo) {
  if (ended_) return;
  ended_ = true;
  exit_code_ = signo > 0 ? -1 : code;
  term_signal_ = signo;
  if (slave_fd_ >= 0) close(slave_fd_);
  slave_fd_ = -1;  // the master now reads what is left, then EIO
}

void FakeProgram::Exit(int code) {
  absl::MutexLock lock(&mu_);
  EndLocked(code, 0);
}

void FakeProgram::EndBySignal(int signo) {
  absl::MutexLock lock(&mu_);
  EndLocked(-1, signo);
}

void FakeProgram::SetInputModes(bool echo, bool canonical) {
  absl::MutexLock lock(&mu_);
  struct termios modes;
  if (slave_fd_ < 0 || tcgetattr(slave_fd_, &modes) != 0) return;
  modes.c_lflag = echo ? (modes.c_lflag | ECHO) : (modes.c_lflag & ~ECHO);
  modes.c_lflag = canonical ? (modes.c_lflag | ICANON) : (modes.c_lflag & ~ICANON);
  tcsetattr(slave_fd_, TCSANOW, &modes);
}

bool FakeProgram::ended() const {
  absl::MutexLock lock(&mu_);
  return ended_;
}

std::vector<int> FakeProgram::signals() const {
  absl::MutexLock lock(&mu_);
  return signals_;
}

void FakeProgram::set_ends_on_interrupt(bool ends) {
  absl::MutexLock lock(&mu_);
  ends_on_interrupt_ = ends;
}

void FakeProgram::set_foreground(std::vector<std::string> programs) {
  absl::MutexLock lock(&mu_);
  foreground_ = std::move(programs);
}

void FakeProgram::Signal(int signo) {
  absl::MutexLock lock(&mu_);
  signals_.push_back(signo);
  switch (signo) {
    case SIGINT:
      if (ends_on_interrupt_) EndLocked(-1, signo);
      break;
    case SIGHUP:
    case SIGTERM:
    case SIGKILL:
    case SIGQUIT:
      EndLocked(-1, signo);
      break;
    default:
      break;  // SIGWINCH, SIGCONT, 0 and the like change nothing
  }
}

ProcessSpawner FakeSpawner::spawner() {
  return [this](const SpawnOptions& options) -> absl::StatusOr<std::unique_ptr<TerminalProcess>> {
    std::function<void(FakeProgram&)> script;
    {
      absl::MutexLock lock(&mu_);
      if (!fail_next_.ok()) return std::exchange(fail_next_, absl::OkStatus());
      script = script_;
    }
    auto program = std::make_shared<FakeProgram>(options);
    if (program->master_fd_ < 0) return absl::ResourceExhaustedError("openpty failed");
    auto process = std::make_unique<FakeProcess>(program);
    if (script) script(*program);
    absl::MutexLock lock(&mu_);
    programs_.push_back(std::move(program));
    started_.SignalAll();
    return process;
  };
}

void FakeSpawner::OnStart(std::function<void(FakeProgram&)> script) {
  absl::MutexLock lock(&mu_);
  script_ = std::move(script);
}

void FakeSpawner::FailNext(absl::Status status) {
  absl::MutexLock lock(&mu_);
  fail_next_ = std::move(status);
}

std::vector<std::shared_ptr<FakeProgram>> FakeSpawner::programs() const {
  absl::MutexLock lock(&mu_);
  return programs_;
}

std::shared_ptr<FakeProgram> FakeSpawner::WaitForProgram(size_t n, absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  absl::MutexLock lock(&mu_);
  while (programs_.size() < n && !started_.WaitWithDeadline(&mu_, deadline)) {
  }
  return programs_.size() >= n ? programs_[n - 1] : nullptr;
}

}  // namespace termbridge::session::testing
