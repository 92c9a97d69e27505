// Terminal: a PtyProcess plus the reader thread that moves its output into a
// RingBuffer. The reader also reaps the child (told by a pidfd), drains
// what the child wrote before it exited, and then records the exit state, so
// "exited" always means "all of its output is readable". Then it ends what
// the process left running and frees the ring, the PTY and the descriptors
// (Release), so a closed terminal costs a small record, not a PTY and a ring.
#include "broker/session/terminal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "broker/session/clean_text.h"
#include "common/text/visible.h"
#include "spdlog/spdlog.h"

namespace termbridge::session {
namespace {

constexpr int kReapPollMs = 50;
constexpr size_t kReadChunk = 64 * 1024;
// Subscribers (attachments) are told about new output in bursts, not per
// read: once 256 KiB are waiting, once the PTY has been quiet for 1 ms, or
// 8 ms after the first unannounced byte, whichever comes first. A fast
// producer then goes out in large frames (fewer wake-ups for every thread
// on the way to the viewer), still at over 100 updates a second, and an
// idle prompt in about a millisecond. (Readers that wait on WaitForOutput
// are woken at once.)
constexpr size_t kNotifyBytes = 256 * 1024;
constexpr int kNotifyQuietMs = 1;
constexpr absl::Duration kNotifyMaxDelay = absl::Milliseconds(8);

}  // namespace

absl::StatusOr<std::unique_ptr<Terminal>> Terminal::Start(std::string id,
                                                          const SpawnOptions& options,
                                                          size_t ring_bytes, ShellChannel channel,
                                                          std::shared_ptr<OutputArchive> archive,
                                                          const ProcessSpawner& spawner) {
  // The ring first: when it cannot be had, no process is started.
  auto ring = std::make_unique<RingBuffer>(ring_bytes);
  if (!ring->ok()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot reserve ", ring_bytes, " bytes for the terminal's output ring"));
  }
  int wake[2];
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    return absl::InternalError("pipe2 failed for terminal wake pipe");
  }
  int ack_fd = -1;
  if (!channel.ack_fifo.empty()) {
    // Read-write, so opening never blocks and the shell's open finds a writer.
    ack_fd = open(channel.ack_fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (ack_fd < 0) {
      int err = errno;
      close(wake[0]);
      close(wake[1]);
      return absl::ErrnoToStatus(err, absl::StrCat("open ", channel.ack_fifo));
    }
  }
  SpawnOptions spawn = options;
  if (spawn.containment_id.empty()) spawn.containment_id = id;
  absl::StatusOr<std::unique_ptr<TerminalProcess>> process =
      spawner ? spawner(spawn) : PtyProcess::Spawn(spawn);
  if (process.ok() && *process == nullptr)
    process = absl::InternalError("the spawner gave no process");
  if (!process.ok()) {
    close(wake[0]);
    close(wake[1]);
    if (ack_fd >= 0) close(ack_fd);
    return process.status();
  }
  auto terminal = std::unique_ptr<Terminal>(
      new Terminal(std::move(id), std::move(process).value(), std::move(ring)));
  {
    absl::MutexLock lock(&terminal->wake_mu_);
    terminal->wake_fds_[0] = wake[0];
    terminal->wake_fds_[1] = wake[1];
  }
  if (!channel.mark_secret.empty()) {
    terminal->filter_ = std::make_unique<MarkFilter>(channel.mark_secret);
    terminal->input_gated_ = true;
  }
  terminal->ack_fd_ = ack_fd;
  terminal->can_discard_ = ack_fd >= 0;
  terminal->archive_ = std::move(archive);
  terminal->on_discarded_ = std::move(channel.on_discarded);
  {
    absl::MutexLock lock(&terminal->join_mu_);
    terminal->reader_ =
        thread::NamedThread("tb-pty-reader", [t = terminal.get()] { t->ReaderLoop(); });
  }
  return terminal;
}

Terminal::Terminal(std::string id, std::unique_ptr<TerminalProcess> process,
                   std::unique_ptr<RingBuffer> ring)
    : id_(std::move(id)),
      pid_(process->pid()),
      process_(std::move(process)),
      ring_capacity_(ring->capacity()),
      ring_(std::move(ring)) {}

Terminal::~Terminal() {
  Close().IgnoreError();
  Wake();
  JoinReader();
  // Only when the reader never got to release them.
  absl::MutexLock lock(&wake_mu_);
  for (int fd : wake_fds_) {
    if (fd >= 0) close(fd);
  }
  if (ack_fd_ >= 0) close(ack_fd_);
}

void Terminal::ForgetOutput() {
  absl::MutexLock lock(&mu_);
  if (!drained_ || ring_) return;
  tail_start_ += tail_.size();
  std::string().swap(tail_);
  marks_dropped_ += marks_.size();
  std::vector<ShellMark>().swap(marks_);
  std::vector<TerminalNotice>().swap(notices_);
}

void Terminal::Wake() {
  absl::MutexLock lock(&wake_mu_);
  if (wake_fds_[1] >= 0) (void)!write(wake_fds_[1], "x", 1);
}

void Terminal::JoinReader() {
  absl::MutexLock lock(&join_mu_);
  if (reader_.id() != std::this_thread::get_id()) reader_.Join();
}

void Terminal::Release() {
  process_->EndContained();
  {
    absl::MutexLock input_lock(&input_mu_);  // writers use the master under it
    absl::MutexLock lock(&mu_);
    OutputSlice tail = ring_->Tail(ring_->capacity());
    tail_start_ = tail.start;
    tail_ = std::move(tail.data);
    tail_.shrink_to_fit();
    ring_.reset();
    if (marks_.size() > kClosedMarks) {
      const size_t drop = marks_.size() - kClosedMarks;
      marks_.erase(marks_.begin(), marks_.begin() + static_cast<ptrdiff_t>(drop));
      marks_dropped_ += drop;
    }
    marks_.shrink_to_fit();
    process_->CloseMaster();
  }
  filter_.reset();
  std::string().swap(filtered_);
  if (ack_fd_ >= 0) close(ack_fd_);
  ack_fd_ = -1;
  absl::MutexLock lock(&wake_mu_);
  for (int& fd : wake_fds_) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
}

void Terminal::ReaderLoop() {
  const int master = process_->master_fd();
  int wake_fd;
  {
    absl::MutexLock lock(&wake_mu_);
    wake_fd = wake_fds_[0];
  }
  bool master_open = true;
  std::string chunk(kReadChunk, '\0');
  size_t unannounced = 0;  // bytes appended since the last Notify
  absl::Time first_unannounced;
  auto announce = [&] {
    if (unannounced == 0) return;
    unannounced = 0;
    Notify();
  };
  // Reads everything available now. Returns false once the master reports EOF/EIO.
  auto drain = [&]() -> bool {
    for (;;) {
      ssize_t n = read(master, chunk.data(), chunk.size());
      if (n > 0) {
        AppendOutput(std::string_view(chunk.data(), static_cast<size_t>(n)));
        if (unannounced == 0) first_unannounced = absl::Now();
        unannounced += static_cast<size_t>(n);
        if (unannounced >= kNotifyBytes || absl::Now() - first_unannounced >= kNotifyMaxDelay) {
          announce();
        }
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      return false;  // EIO: no process holds the slave open any more
    }
  };
  // The child's exit is an event to poll (a pidfd), so the loop need not
  // call waitpid after every read of output. Kernels before 5.3 have no
  // pidfd: then it tries to reap on every pass.
  const int exit_fd = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
  for (;;) {
    const bool input_waiting = input_waiting_.load();
    struct pollfd fds[3] = {
        {wake_fd, POLLIN, 0},
        {exit_fd, POLLIN, 0},  // ignored by poll while exit_fd is -1
        {master, static_cast<short>(POLLIN | (input_waiting ? POLLOUT : 0)), 0}};
    int r = poll(fds, master_open ? 3 : 2, unannounced > 0 ? kNotifyQuietMs : kReapPollMs);
    if (master_open && r > 0 && (fds[2].revents & POLLOUT)) FlushPendingInput();
    if (r == 0) announce();  // quiet: tell subscribers what arrived
    if (r > 0 && (fds[0].revents & POLLIN)) {
      char buf[64];
      while (read(wake_fd, buf, sizeof buf) > 0) {
      }
    }
    if (master_open && r > 0 && fds[2].revents != 0) master_open = drain();
    if (master_open && (r == 0 || fds[2].revents != 0)) WatchSecretPrompt();
    bool reaped = false;
    if (exit_fd < 0 || r == 0 || fds[1].revents != 0) {
      absl::MutexLock lock(&mu_);
      reaped = process_->TryReap();
    }
    if (!reaped) {
      if (unannounced > 0 && absl::Now() - first_unannounced >= kNotifyMaxDelay) announce();
      continue;
    }
    if (master_open) drain();
    if (filter_) {
      std::string held = filter_->Flush();  // a partial mark at the very end is output
      {
        absl::MutexLock lock(&mu_);
        ring_->Append(held);
      }
      if (archive_) archive_->Append(held);
    }
    unannounced = 0;  // the exit notification below covers it
    DropPendingInput();
    if (exit_fd >= 0) close(exit_fd);
    // Before "exited" is told: once it is, nothing the terminal started runs.
    Release();
    {
      absl::MutexLock lock(&mu_);
      exit_.running = false;
      exit_.exit_code = process_->exit_code();
      exit_.term_signal = process_->term_signal();
      exit_.exited_at = absl::Now();
      drained_ = true;
    }
    if (archive_) archive_->Finish(process_->exit_code(), process_->term_signal());
    DropPendingInput();  // after exit_ says so: no WriteInput queues behind this
    Notify();
    return;
  }
}

void Terminal::AppendOutput(std::string_view raw) {
  std::vector<ShellMark> marks;
  std::string_view out = raw;
  if (filter_ && !filter_->Feed(raw, &filtered_, &marks)) out = filtered_;
  // The shell prints its D mark from its own hook, holding the ack FIFO open,
  // with the sequence number one past the last D taken. A D from anything else (a
  // program that learned the secret) is ignored: it stays output.
  if (can_discard_) {
    marks.erase(
        std::remove_if(marks.begin(), marks.end(),
                       [this](const ShellMark& m) {
                         if (m.kind != ShellMark::kCommandEnd) return false;
                         if (!m.seq || *m.seq != last_end_seq_ + 1 || !ShellHoldsAckFifo()) {
                           spdlog::warn("event=mark_ignored terminal_id={} kind=D", id_);
                           return true;
                         }
                         last_end_seq_ = *m.seq;
                         return false;
                       }),
        marks.end());
  }
  // Readers wait on the ring, never on the disk: the archive is appended
  // outside the lock, after the ring, which drops bytes of earlier appends
  // only, so the archive has those first. A chunk larger than the whole ring
  // would drop its own first bytes before the archive had them (a reader
  // then would find them nowhere): the archive takes such a chunk first.
  const bool archive_first = archive_ && out.size() > ring_capacity_;
  if (archive_first) archive_->Append(out);
  {
    absl::MutexLock lock(&mu_);
    const uint64_t base = ring_->end_offset();
    ring_->Append(out);
    for (ShellMark& mark : marks) {
      mark.offset += base;
      mark.end_offset += base;
      marks_.push_back(mark);
    }
    if (marks_.size() > kKeptMarks) {
      const size_t drop = marks_.size() - kKeptMarks;
      marks_.erase(marks_.begin(), marks_.begin() + static_cast<ptrdiff_t>(drop));
      marks_dropped_ += drop;
    }
  }
  if (archive_ && !archive_first) archive_->Append(out);
  for (const ShellMark& mark : marks) {
    if (mark.kind == ShellMark::kCommandEnd) CommandEnded(mark);
  }
}

bool Terminal::ShellHoldsAckFifo() const {
  struct stat fifo;
  if (fstat(ack_fd_, &fifo) != 0) return false;
  char dir_path[64];
  snprintf(dir_path, sizeof dir_path, "/proc/%d/fd", static_cast<int>(pid_));
  DIR* dir = opendir(dir_path);
  if (dir == nullptr) return false;
  bool held = false;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    struct stat st;
    if (fstatat(dirfd(dir), entry->d_name, &st, 0) == 0 && st.st_ino == fifo.st_ino &&
        st.st_dev == fifo.st_dev) {
      held = true;
      break;
    }
  }
  closedir(dir);
  return held;
}

// Bytes waiting in the PTY for the program, then discarded. The slave side
// holds what the line discipline buffered; the master cannot flush that.
static size_t DiscardSlaveInput(int master_fd) {
  char name[128];
  if (ptsname_r(master_fd, name, sizeof name) != 0) return 0;
  int slave = open(name, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (slave < 0) return 0;
  int queued = 0;
  if (ioctl(slave, TIOCINQ, &queued) != 0) queued = 0;
  tcflush(slave, TCIFLUSH);
  close(slave);
  return queued > 0 ? static_cast<size_t>(queued) : 0;
}

void Terminal::CommandEnded(const ShellMark& mark) {
  size_t discarded = 0;
  {
    absl::MutexLock lock(&input_mu_);
    agent_input_open_ = false;
    if (can_discard_) {
      discarded = ClearPendingLocked() + DiscardSlaveInput(process_->master_fd());
    }
  }
  if (ack_fd_ >= 0 && mark.seq) {
    char stale[256];  // acks the shell never read: gone, so none is taken for a later one
    while (read(ack_fd_, stale, sizeof stale) > 0) {
    }
    // "<seq> nl": the output left text on the cursor's line, and the shell
    // prints a newline before its prompt (clean_text.h, EndsMidLine).
    constexpr uint64_t kTailBytes = 512;
    const uint64_t from = mark.offset > kTailBytes ? mark.offset - kTailBytes : 0;
    const OutputSlice tail = ReadHeld(from, static_cast<size_t>(mark.offset - from));
    std::string line = absl::StrCat(*mark.seq, EndsMidLine(tail.data) ? " nl" : "", "\n");
    (void)!write(ack_fd_, line.data(), line.size());
  }
  if (discarded == 0) return;
  spdlog::info("event=input_discarded terminal_id={} bytes={}", id_, discarded);
  PostNotice(absl::StrCat("discarded ", discarded,
                          " bytes of input the command did not read (leftover input never "
                          "becomes a command)"));
  if (on_discarded_) on_discarded_(discarded);
}

std::vector<ShellMark> Terminal::MarksSince(uint64_t* next) const {
  absl::MutexLock lock(&mu_);
  std::vector<ShellMark> out;
  uint64_t index = std::max(*next, marks_dropped_);
  for (; index < marks_dropped_ + marks_.size(); ++index) {
    out.push_back(marks_[static_cast<size_t>(index - marks_dropped_)]);
  }
  *next = index;
  return out;
}

void Terminal::OpenAgentInput() {
  absl::MutexLock lock(&input_mu_);
  agent_input_open_ = can_discard_;
}

// True while the shell itself owns the terminal with its line editor on (the
// tty out of canonical mode): it is at a prompt, whatever anyone believes.
static bool ShellLineEditorReading(int master_fd, pid_t shell) {
  struct termios modes;
  if (tcgetpgrp(master_fd) != shell) return false;
  if (tcgetattr(master_fd, &modes) != 0) return true;  // cannot tell: assume the worst
  return (modes.c_lflag & ICANON) == 0;
}

// True when the PTY's settings say a program reads a line without echo: a
// secret prompt. Unknown settings (the master closed) are not one.
static bool SecretModes(int master_fd) {
  struct termios modes;
  if (master_fd < 0 || tcgetattr(master_fd, &modes) != 0) return false;
  return (modes.c_lflag & ECHO) == 0 && (modes.c_lflag & ICANON) != 0;
}

constexpr char kSecretRefused[] =
    "a program in this terminal is asking for a secret (terminal echo is off): only a person "
    "types it, at the terminal";

absl::Status Terminal::AgentMayWriteLocked(uint64_t holder_generation) const {
  if (holder_generation_.load() != holder_generation) {
    return absl::AbortedError("the terminal changed hands");
  }
  if (lock() == LockMode::kUserOnly) return absl::CancelledError("the terminal is user_only");
  if (SecretModes(process_->master_fd())) return absl::PermissionDeniedError(kSecretRefused);
  return absl::OkStatus();
}

absl::Status Terminal::WriteCommandTrigger(std::string_view trigger, uint64_t holder_generation) {
  absl::MutexLock lock(&input_mu_);
  if (absl::Status may = AgentMayWriteLocked(holder_generation); !may.ok()) return may;
  return WriteInputLocked(trigger);
}

// A secret line ends with Enter or a key that acts on it (interrupt, end of
// file, suspend, quit): then it goes to the program, or nowhere.
static bool EndsSecretLine(std::string_view bytes) {
  return bytes.find_first_of(std::string_view("\r\n\x03\x04\x1a\x1c", 6)) != std::string_view::npos;
}

static void Wipe(std::string* secret) {
  explicit_bzero(secret->data(), secret->size());
  secret->clear();
}

std::string Terminal::SecretPromptNotice() const {
  std::vector<std::string> programs = ForegroundPrograms();
  return absl::StrCat(
      "waiting for a person to type a secret", programs.empty() ? "" : " for ",
      absl::StrJoin(programs, ", "),
      ": terminal echo is off; agent input is refused until it is answered. Type it only if you "
      "trust the program asking (an agent's command may be the one asking)");
}

absl::Status Terminal::WriteAgentInput(std::string_view bytes, uint64_t holder_generation) {
  absl::MutexLock lock(&input_mu_);
  if (absl::Status may = AgentMayWriteLocked(holder_generation); !may.ok()) return may;
  if (input_gated_) {
    if (agent_input_open_ && ShellLineEditorReading(process_->master_fd(), pid_)) {
      return absl::UnavailableError(
          "the shell's line editor is reading this terminal: input would be typed at its "
          "prompt; send commands with execute");
    }
    if (!agent_input_open_) {
      return absl::UnavailableError(
          can_discard_ ? "no command the agent sent is running in this terminal: input would "
                         "reach the shell's prompt; send commands with execute"
                       : "this shell cannot discard input a program leaves unread, so agents "
                         "send it only commands (execute), not input");
    }
  }
  absl::Status written = WriteInputLocked(bytes);
  if (written.ok()) {
    agent_wrote_last_ = true;
    if (!pending_input_.empty()) pending_from_agent_ = true;
  }
  return written;
}

std::vector<std::string> Terminal::ForegroundPrograms() const {
  {
    absl::MutexLock lock(&mu_);
    if (!exit_.running) return {};
  }
  return process_->ForegroundPrograms();
}

std::vector<std::string> Terminal::DetachedPrograms() const {
  {
    absl::MutexLock lock(&mu_);
    if (!exit_.running) return {};
  }
  return process_->DetachedPrograms();
}

void Terminal::Notify() {
  absl::MutexLock lock(&subscribers_mu_);
  for (auto& [handle, fn] : subscribers_) fn();
}

OutputSlice Terminal::ReadHeld(uint64_t cursor, size_t max_bytes) const {
  absl::MutexLock lock(&mu_);
  if (ring_) return ring_->Read(cursor, max_bytes);
  // The kept tail, read as the ring would be.
  OutputSlice out = PlanRead(cursor, tail_start_, tail_start_ + tail_.size(), max_bytes);
  out.data = tail_.substr(static_cast<size_t>(out.start - tail_start_),
                          static_cast<size_t>(out.next - out.start));
  return out;
}

OutputSlice Terminal::Read(uint64_t cursor, size_t max_bytes) const {
  OutputSlice held = ReadHeld(cursor, max_bytes);
  if (held.gap == 0 || !archive_) return held;
  // Older than what memory holds: the archive's answer, unless it holds
  // nothing before the ring's start (a hole from a failed write reaching
  // into it). A zero-byte read (where is the cursor, is there a gap?) gets
  // no bytes from either: the archive's start and gap are its answer.
  OutputSlice archived = archive_->Read(cursor, max_bytes);
  const bool answered = !archived.data.empty() || max_bytes == 0;
  if (answered && archived.start < held.start) return archived;
  return held;
}

OutputSlice Terminal::Tail(size_t max_bytes) const {
  uint64_t start, end;
  {
    absl::MutexLock lock(&mu_);
    if (ring_) return ring_->Tail(max_bytes);
    start = tail_start_;
    end = tail_start_ + tail_.size();
  }
  // With an archive, the tail is there even after the kept one was dropped.
  const uint64_t from = archive_ ? 0 : start;
  max_bytes = std::min(max_bytes, ring_capacity_);
  return Read(end - std::min<uint64_t>(end - from, max_bytes), max_bytes);
}

uint64_t Terminal::end_offset() const {
  absl::MutexLock lock(&mu_);
  return ring_ ? ring_->end_offset() : tail_start_ + tail_.size();
}

size_t Terminal::ring_resident() const {
  absl::MutexLock lock(&mu_);
  return ring_ ? ring_->resident() : tail_.size();
}

bool Terminal::WaitForOutput(uint64_t cursor, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto ready = [this, cursor]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const uint64_t end = ring_ ? ring_->end_offset() : tail_start_ + tail_.size();
    return drained_ || end > cursor;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
}

bool Terminal::WaitForExit(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(&drained_), timeout);
}

void Terminal::AddViewer() {
  absl::MutexLock lock(&mu_);
  ++viewers_;
}

void Terminal::RemoveViewer() {
  absl::MutexLock lock(&mu_);
  if (viewers_ > 0) --viewers_;
}

int Terminal::viewers() const {
  absl::MutexLock lock(&mu_);
  return viewers_;
}

bool Terminal::WaitForViewer(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto watched = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return viewers_ > 0; };
  return mu_.AwaitWithTimeout(absl::Condition(&watched), timeout);
}

std::string_view LockModeName(LockMode mode) {
  switch (mode) {
    case LockMode::kUserOnly:
      return "user_only";
    case LockMode::kAgentOnly:
      return "agent_only";
    case LockMode::kShared:
      break;
  }
  return "shared";
}

bool ParseLockMode(std::string_view name, LockMode* mode) {
  for (LockMode m : {LockMode::kShared, LockMode::kUserOnly, LockMode::kAgentOnly}) {
    if (name == LockModeName(m)) {
      *mode = m;
      return true;
    }
  }
  return false;
}

LockMode Terminal::lock() const {
  absl::MutexLock lock(&mu_);
  return lock_;
}

void Terminal::SetLock(LockMode mode) {
  absl::MutexLock input(&input_mu_);  // no agent write straddles the change
  {
    absl::MutexLock lock(&mu_);
    lock_ = mode;
  }
  if (mode == LockMode::kUserOnly) DropAgentInputLocked("the terminal became user_only");
}

void Terminal::ChangeHolder() {
  absl::MutexLock input(&input_mu_);  // no agent write straddles the change
  holder_generation_.fetch_add(1);
  DropAgentInputLocked("the terminal changed hands");
}

void Terminal::DropAgentInputLocked(std::string_view why) {
  size_t dropped = 0;
  if (pending_from_agent_) dropped += ClearPendingLocked();
  if (agent_wrote_last_) {  // what the PTY holds unread ends with the agent's bytes
    dropped += DiscardSlaveInput(process_->master_fd());
    agent_wrote_last_ = false;
  }
  if (dropped > 0) {
    spdlog::warn("event=input_dropped terminal_id={} bytes={} reason=\"{}\"", id_, dropped, why);
  }
}

void Terminal::PostNotice(std::string text) {
  constexpr size_t kKeepNotices = 64;
  // Notices quote what agents sent (commands, reasons); a viewer prints them
  // on a terminal, where control characters would act instead of show.
  std::string shown = text::Visible(text);
  {
    absl::MutexLock lock(&mu_);
    notices_.push_back({++notice_seq_, std::move(shown)});
    if (notices_.size() > kKeepNotices) notices_.erase(notices_.begin());
  }
  Notify();
}

std::vector<TerminalNotice> Terminal::NoticesAfter(uint64_t seq) const {
  absl::MutexLock lock(&mu_);
  std::vector<TerminalNotice> out;
  for (const TerminalNotice& notice : notices_) {
    if (notice.seq > seq) out.push_back(notice);
  }
  return out;
}

uint64_t Terminal::notice_seq() const {
  absl::MutexLock lock(&mu_);
  return notice_seq_;
}

ExitState Terminal::exit_state() const {
  absl::MutexLock lock(&mu_);
  return exit_;
}

absl::Status Terminal::WriteInput(std::string_view bytes) {
  absl::MutexLock lock(&input_mu_);
  agent_wrote_last_ = false;
  const int master = process_->master_fd();
  if (held_secret_.empty() && !SecretModes(master)) return WriteInputLocked(bytes);
  if (held_secret_.empty()) held_for_ = master >= 0 ? tcgetpgrp(master) : -1;
  held_secret_.append(bytes);
  if (!EndsSecretLine(held_secret_)) return absl::OkStatus();
  // The whole line, to the program that asked, if it still asks.
  absl::Status written = absl::OkStatus();
  const bool still_asked = SecretModes(master) && tcgetpgrp(master) == held_for_;
  if (still_asked) written = WriteInputLocked(held_secret_);
  Wipe(&held_secret_);
  if (!still_asked) {
    spdlog::warn("event=secret_dropped terminal_id={} reason=\"the prompt changed\"", id_);
    PostNotice(
        "what you typed was not sent: the secret prompt changed before the line ended (echo "
        "came back on, or another program took the terminal)");
  }
  return written;
}

// Holding input_mu_ throughout is what makes this one step: Release closes
// the master only under input_mu_, so the program cannot be released between
// the exit check (a fast path) and the write; and WriteSome checks the master
// itself under its own lock, so a write after the release is refused there.
absl::Status Terminal::WriteInputLocked(std::string_view bytes) {
  {
    absl::MutexLock lock(&mu_);
    if (!exit_.running) return absl::FailedPreconditionError("the terminal's process has exited");
  }
  if (!pending_input_.empty()) {
    // Behind bytes that still wait: keep the order, and the bound.
    if (pending_input_.size() + bytes.size() > kMaxPendingInput) {
      return absl::DeadlineExceededError(
          absl::StrCat("the program has not read its input: ", pending_input_.size(),
                       " bytes still wait for it; these ", bytes.size(), " bytes were not sent"));
    }
  } else {
    absl::StatusOr<size_t> written = process_->WriteSome(bytes);
    if (!written.ok()) return written.status();
    bytes.remove_prefix(*written);
    if (bytes.empty()) return absl::OkStatus();
  }
  pending_input_.append(bytes);
  input_waiting_.store(true);
  Wake();  // the reader polls for room (POLLOUT) now
  return absl::OkStatus();
}

void Terminal::FlushPendingInput() {
  absl::MutexLock lock(&input_mu_);
  if (pending_input_.empty()) return;
  if (pending_from_agent_ && SecretModes(process_->master_fd())) {
    // What waits may be an agent's: it must not become the secret.
    spdlog::warn("event=input_dropped terminal_id={} bytes={} reason=\"secret prompt\"", id_,
                 ClearPendingLocked());
    return;
  }
  absl::StatusOr<size_t> written = process_->WriteSome(pending_input_);
  if (!written.ok()) {
    spdlog::warn("event=input_dropped terminal_id={} bytes={} reason=\"{}\"", id_,
                 pending_input_.size(), std::string(written.status().message()));
    pending_input_.clear();
  } else {
    pending_input_.erase(0, *written);
  }
  if (pending_input_.empty()) pending_from_agent_ = false;
  input_waiting_.store(!pending_input_.empty());
}

void Terminal::WatchSecretPrompt() {
  bool secret;
  size_t discarded = 0;
  bool dropped_held = false;
  bool announce = false;
  {
    absl::MutexLock lock(&input_mu_);  // keeps the master open (Release)
    secret = SecretModes(process_->master_fd());
    if (secret_prompt_.exchange(secret) == secret) return;
    if (secret && agent_wrote_last_) {
      // What an agent sent and the program has not read must not become the secret.
      discarded = DiscardSlaveInput(process_->master_fd());
      agent_wrote_last_ = false;
    }
    if (!secret && !held_secret_.empty()) {
      Wipe(&held_secret_);  // the prompt went away before the line ended
      dropped_held = true;
    }
    // One notice per prompt, not one per toggle of a program flipping echo.
    if (secret && absl::Now() - last_secret_notice_ >= absl::Seconds(2)) {
      last_secret_notice_ = absl::Now();
      announce = true;
    }
  }
  if (discarded > 0) {
    spdlog::info("event=input_discarded terminal_id={} bytes={} reason=\"secret prompt\"", id_,
                 discarded);
    PostNotice(absl::StrCat("discarded ", discarded,
                            " bytes an agent sent that the program had not read: they are not "
                            "the secret"));
  }
  if (dropped_held) {
    PostNotice("what you typed was not sent: the secret prompt went away before the line ended");
  }
  if (announce) {
    PostNotice(SecretPromptNotice());
  } else {
    Notify();  // surfaces that show the state read it again
  }
}

void Terminal::DropPendingInput() {
  absl::MutexLock lock(&input_mu_);
  if (size_t dropped = ClearPendingLocked(); dropped > 0) {
    spdlog::warn(
        "event=input_dropped terminal_id={} bytes={} reason=\"the program exited before "
        "reading it\"",
        id_, dropped);
  }
}

size_t Terminal::ClearPendingLocked() {
  const size_t bytes = pending_input_.size();
  pending_input_.clear();
  pending_from_agent_ = false;
  input_waiting_.store(false);
  return bytes;
}

absl::Status Terminal::Resize(uint32_t cols, uint32_t rows) {
  if (cols < 1 || rows < 1 || cols > kMaxSide || rows > kMaxSide) {
    return absl::InvalidArgumentError(
        absl::StrCat("cols and rows must be between 1 and ", kMaxSide));
  }
  const auto side = [](uint32_t n) { return static_cast<unsigned short>(n); };  // <= kMaxSide
  {
    absl::MutexLock lock(&mu_);
    if (!exit_.running) return absl::FailedPreconditionError("the terminal's process has exited");
    last_size_ = {side(cols), side(rows)};
    if (absl::Status s = process_->Resize(side(cols), side(rows)); !s.ok()) return s;
  }
  if (archive_) archive_->Resized(cols, rows);
  return absl::OkStatus();
}

std::pair<unsigned short, unsigned short> Terminal::Size() const {
  absl::MutexLock lock(&mu_);
  if (!exit_.running) return last_size_;
  return process_->Size();
}

absl::Status Terminal::Interrupt(int signo) {
  absl::MutexLock lock(&mu_);
  if (!exit_.running || process_->reaped()) {
    return absl::FailedPreconditionError("the terminal's process has exited");
  }
  return process_->SignalForeground(signo);
}

absl::Status Terminal::Close(absl::Duration grace) {
  for (int signo : {SIGHUP, SIGTERM, SIGKILL}) {
    {
      absl::MutexLock lock(&mu_);
      if (drained_) break;
      if (!process_->reaped()) process_->SignalGroup(signo).IgnoreError();
      // Jobs of an interactive shell live in their own process groups.
      if (signo == SIGTERM) process_->SignalSession(signo);
    }
    // Everything started in the terminal, in any session or group.
    if (signo == SIGKILL) process_->EndContained();
    Wake();
    if (WaitForExit(signo == SIGKILL ? absl::Seconds(5) : grace)) break;
  }
  if (!WaitForExit(absl::ZeroDuration())) {
    return absl::DeadlineExceededError("terminal process did not exit after SIGKILL");
  }
  // The reader ended what the shell left behind (nohup jobs, setsid daemons)
  // before it said "exited"; this only waits if it is still at it.
  process_->EndContained();
  JoinReader();
  return absl::OkStatus();
}

int Terminal::Subscribe(std::function<void()> on_change) {
  absl::MutexLock lock(&subscribers_mu_);
  int handle = next_handle_++;
  subscribers_.emplace(handle, std::move(on_change));
  return handle;
}

void Terminal::Unsubscribe(int handle) {
  absl::MutexLock lock(&subscribers_mu_);
  subscribers_.erase(handle);
}

}  // namespace termbridge::session
