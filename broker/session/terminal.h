// Terminal is one live PTY owned by the broker: the process, a reader thread
// that moves its output into a RingBuffer, and its exit state. It knows
// nothing about gRPC; callers read by cursor, wait for data or exit, and
// subscribe to be told (cheaply, from the reader thread) that data arrived.
// Once its process has exited, a terminal frees what it held: the PTY and
// every descriptor, the ring (what it held is kept as an exact-size copy,
// which the owner may drop: ForgetOutput), and every process started in it
// (PtyProcess::EndContained); what remains is a record: exit state, that
// output, notices, the last marks.
#ifndef TERMBRIDGE_BROKER_SESSION_TERMINAL_H_
#define TERMBRIDGE_BROKER_SESSION_TERMINAL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "broker/session/mark_filter.h"
#include "broker/session/output_archive.h"
#include "broker/session/pty_process.h"
#include "broker/session/ring_buffer.h"
#include "broker/session/shell_integration.h"
#include "broker/session/terminal_process.h"
#include "common/thread/named_thread.h"

namespace termbridge::session {

struct ExitState {
  bool running = true;
  int exit_code = -1;   // >= 0 when the process exited normally
  int term_signal = 0;  // > 0 when a signal ended it
  absl::Time exited_at = absl::InfinitePast();
};

// Whose input a terminal accepts (docs/security.md; `termbridge lock`): both, only the person's
// (attach, console, window), or only the agent's.
enum class LockMode { kShared, kUserOnly, kAgentOnly };
std::string_view LockModeName(LockMode mode);  // "shared", "user_only", "agent_only"
bool ParseLockMode(std::string_view name, LockMode* mode);

// A line for the people watching a terminal ("approval needed: ...").
struct TerminalNotice {
  uint64_t seq = 0;  // 1, 2, 3, ... per terminal
  std::string text;
};

// What an integrated shell shares with its terminal besides its output (see
// shell_integration.h). Empty: a plain program, nothing is filtered or gated.
struct ShellChannel {
  // Marks signed with this secret are taken out of the output as events
  // (MarksSince), the secret removed; unsigned marks stay ordinary output.
  std::string mark_secret;
  // After each signed D mark the terminal discards input the command left
  // unread and writes the mark's sequence number here, which the shell waits
  // for before it reads again. Empty: the shell cannot wait (plain sh), so
  // agent input is never accepted (WriteAgentInput).
  std::string ack_fifo;
  // Told (on the reader thread) how many bytes were discarded, when any were.
  std::function<void(size_t)> on_discarded;
};

class Terminal {
 public:
  // Spawns the process and starts the reader thread. With an `archive`
  // (a recording), every byte of output is appended to it too, and reads
  // older than the ring come from it.
  // A `spawner` starts the program instead of PtyProcess::Spawn (tests: a
  // fake program, broker/session/testing/fake_process.h).
  static absl::StatusOr<std::unique_ptr<Terminal>> Start(
      std::string id, const SpawnOptions& options, size_t ring_bytes, ShellChannel channel = {},
      std::shared_ptr<OutputArchive> archive = nullptr, const ProcessSpawner& spawner = nullptr);
  // Closes the terminal (see Close) and joins the reader thread.
  ~Terminal();

  const std::string& id() const { return id_; }
  pid_t pid() const { return pid_; }

  // After exit, only the last kClosedMarks signed marks are kept.
  static constexpr size_t kClosedMarks = 64;
  // From the ring, or for offsets it no longer holds, from the archive: only
  // what neither holds is a gap.
  OutputSlice Read(uint64_t cursor, size_t max_bytes) const;
  // The last max_bytes (at most a ring's worth).
  OutputSlice Tail(size_t max_bytes) const;
  uint64_t end_offset() const;
  // Memory the output ring holds now (it grows page by page up to its
  // capacity); after exit, the bytes of output kept.
  size_t ring_resident() const;

  // Blocks until output beyond `cursor` exists, the process has ended and all
  // its output is in the ring, or `timeout` passes. Returns true unless it timed out.
  bool WaitForOutput(uint64_t cursor, absl::Duration timeout) const;
  // Blocks until the process has ended and its output is drained. Returns false on timeout.
  bool WaitForExit(absl::Duration timeout) const;
  ExitState exit_state() const;

  // Hands `bytes` to the program: what the PTY takes now is written at once,
  // the rest is written by the reader thread as the program reads, in order,
  // so a caller never blocks on a program that does not read. While bytes
  // still wait, a chunk that would make them more than kMaxPendingInput is
  // refused whole (DeadlineExceeded, nothing of it sent). FailedPrecondition
  // once the program has exited.
  static constexpr size_t kMaxPendingInput = 1 << 20;
  // A person's input. At a secret prompt (secret_prompt) it is held in the
  // broker until the line ends (Enter, or ^C ^D ^Z ^\), then written only if
  // the same process group still reads it with echo off; otherwise it is
  // wiped and dropped with a notice. So a program killed mid-entry, or echo
  // turned back on by another process, leaves nothing of it in the terminal.
  absl::Status WriteInput(std::string_view bytes);
  // Input from an agent that held the terminal at `holder_generation`
  // (holder_generation()). Refused, nothing written, when the terminal has
  // changed hands since (Aborted) or a person locked it user_only
  // (Cancelled): checked in the same step as the write, so no hand-over or
  // lock lands between the check and the bytes. Where a shell channel is
  // set, it is taken only between OpenAgentInput (a command the agent sent
  // is about to run) and that command's D mark, and only when the shell
  // waits for leftover input to be discarded: otherwise Unavailable and
  // nothing is written, so input never reaches the shell's prompt as a
  // command. Else as WriteInput.
  absl::Status WriteAgentInput(std::string_view bytes, uint64_t holder_generation);
  void OpenAgentInput();
  // True while the terminal's program reads a line with terminal echo off
  // (canonical input with ECHO clear, read from the PTY's settings: the
  // password prompts of sudo, ssh, gpg, passwd or `read -s`). Agent input is
  // refused then (PermissionDenied from WriteAgentInput, checked against the
  // settings at the moment of writing), and agent input still waiting for
  // the program is dropped: only a person types a secret. The reader thread
  // posts a notice when a prompt like that appears (docs/security.md,
  // 'Secrets only a person types').
  bool secret_prompt() const { return secret_prompt_.load(); }
  // What viewers are told about the prompt, naming the programs reading it.
  std::string SecretPromptNotice() const;
  // Writes the persistent shell's command trigger, unless a secret prompt is
  // up (PermissionDenied): the keys must never become part of a password.
  // Refused as WriteAgentInput refuses an agent that no longer holds it.
  absl::Status WriteCommandTrigger(std::string_view trigger, uint64_t holder_generation);
  // False when agent input is never delivered (a shell that cannot discard
  // what a program leaves unread).
  bool takes_agent_input() const { return !input_gated_ || can_discard_; }
  // The signed marks seen since index `*next` (0 at first), in stream order;
  // advances `*next`. Older marks than the last kKeptMarks are gone.
  static constexpr size_t kKeptMarks = 4096;
  std::vector<ShellMark> MarksSince(uint64_t* next) const;
  // Names (executable basenames) of the processes in the terminal's
  // foreground process group; empty when it cannot tell or has exited.
  std::vector<std::string> ForegroundPrograms() const;
  // Names of its processes that left its session (setsid), which can read
  // it without job control; empty when it has exited.
  std::vector<std::string> DetachedPrograms() const;
  // InvalidArgument unless both sides are in 1..kMaxSide: a huge screen makes
  // every snapshot allocate cols x rows cells. Takes the wire's width, so a
  // side too large for the PTY is refused rather than wrapped.
  static constexpr unsigned kMaxSide = 1000;
  absl::Status Resize(uint32_t cols, uint32_t rows);
  // The window size as {cols, rows}.
  std::pair<unsigned short, unsigned short> Size() const;
  // SIGINT (or another signal) to the foreground process group.
  absl::Status Interrupt(int signo);
  // Kills the whole process group: SIGHUP, then SIGTERM, then SIGKILL, waiting
  // up to `grace` after each; then every process started in the terminal,
  // also those that left its session (PtyProcess::EndContained). Returns
  // once the child is reaped and the reader thread joined. Idempotent.
  absl::Status Close(absl::Duration grace = absl::Milliseconds(500));

  // Once it has exited: drops the output, marks and notices it kept, so what
  // remains is a few hundred bytes (for a terminal its owner forgets, or
  // past the owner's budget for closed terminals). Reads then report a gap.
  void ForgetOutput();

  // `on_change` runs on the reader thread after new output is appended and
  // once after exit. It must not block or call back into this Terminal while
  // holding its own locks. Returns a handle for Unsubscribe.
  int Subscribe(std::function<void()> on_change);
  void Unsubscribe(int handle);

  // People watching the terminal (a window, a console tab, attach or watch).
  // Commands are written into the PTY only while it has at least one viewer.
  void AddViewer();
  void RemoveViewer();
  int viewers() const;
  // Blocks until the terminal has a viewer or `timeout` passes. Returns true
  // when it has one.
  bool WaitForViewer(absl::Duration timeout) const;

  LockMode lock() const;
  void SetLock(LockMode mode);
  // Moves on each time a person's terminal changes hands (handed to an agent
  // or taken back): what an agent opened on it before (an Attach stream)
  // ends (broker/service/attach_reactor.cc), and agent input still waiting
  // for the program is dropped. SetLock(kUserOnly) drops that input too.
  uint64_t holder_generation() const { return holder_generation_.load(); }
  void ChangeHolder();

  // Notices for viewers: posted lines are kept (the last 64) and
  // subscribers are told, like for output. NoticesAfter returns those with
  // seq > `seq`; notice_seq() is the last one posted (0: none yet).
  void PostNotice(std::string text);
  std::vector<TerminalNotice> NoticesAfter(uint64_t seq) const;
  uint64_t notice_seq() const;

 private:
  std::atomic<uint64_t> holder_generation_{0};
  Terminal(std::string id, std::unique_ptr<TerminalProcess> process,
           std::unique_ptr<RingBuffer> ring);
  void ReaderLoop();
  // Reader thread, once the process has exited and its output is drained:
  // ends what it left running, keeps the tail of the ring and frees the
  // rest (ring, PTY, descriptors).
  void Release();
  // Wakes the reader's poll (no-op once it has ended).
  void Wake();
  // Joins the reader thread once it has ended (not from the reader itself).
  void JoinReader();
  void Notify();
  // Read from the ring (or the tail kept after exit) alone.
  OutputSlice ReadHeld(uint64_t cursor, size_t max_bytes) const;
  absl::Status WriteInputLocked(std::string_view bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(input_mu_);
  // Reader thread: writes what it can of pending_input_ (the PTY can take more).
  void FlushPendingInput();
  // Reader thread, once the program is gone: what still waited is dropped.
  void DropPendingInput();
  // An agent's input the program has not read yet goes when the agent loses
  // the terminal's input (`why`, logged).
  void DropAgentInputLocked(std::string_view why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(input_mu_);
  // Forgets the input held back for the program; returns how many bytes.
  size_t ClearPendingLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(input_mu_);
  // Why an agent that held the terminal at `holder_generation` may not
  // write now (Aborted, Cancelled, PermissionDenied), or OK.
  absl::Status AgentMayWriteLocked(uint64_t holder_generation) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(input_mu_);
  // Reader thread: compares the PTY's settings with secret_prompt_ and posts
  // a notice when a secret prompt appears.
  void WatchSecretPrompt();
  // Reader thread: appends raw PTY bytes to the ring through the mark filter
  // and handles the marks found.
  void AppendOutput(std::string_view raw);
  // True when the shell has the ack FIFO open (it does while it prints its
  // D mark and waits for the discard).
  bool ShellHoldsAckFifo() const;
  // Reader thread, at a signed D mark: closes agent input, discards what the
  // command left unread, then tells the shell.
  void CommandEnded(const ShellMark& mark);

  const std::string id_;
  const pid_t pid_;
  std::unique_ptr<TerminalProcess> process_;  // touched under mu_ or by the reader after exit
  std::shared_ptr<OutputArchive> archive_;    // set before the reader starts, then constant
  const size_t ring_capacity_;                // Tail reads at most this much from the archive
  mutable absl::Mutex mu_;
  std::unique_ptr<RingBuffer> ring_ ABSL_GUARDED_BY(mu_);  // null once released
  // After release: the last output (ring_ is null), from offset tail_start_.
  std::string tail_ ABSL_GUARDED_BY(mu_);
  uint64_t tail_start_ ABSL_GUARDED_BY(mu_) = 0;
  ExitState exit_ ABSL_GUARDED_BY(mu_);
  bool drained_ ABSL_GUARDED_BY(mu_) = false;  // process reaped and output fully read
  int viewers_ ABSL_GUARDED_BY(mu_) = 0;
  LockMode lock_ ABSL_GUARDED_BY(mu_) = LockMode::kShared;
  std::vector<TerminalNotice> notices_ ABSL_GUARDED_BY(mu_);
  uint64_t notice_seq_ ABSL_GUARDED_BY(mu_) = 0;
  std::pair<unsigned short, unsigned short> last_size_ ABSL_GUARDED_BY(mu_) = {120, 40};
  absl::Mutex input_mu_;  // serializes writers so input chunks never interleave
  std::string pending_input_ ABSL_GUARDED_BY(input_mu_);  // accepted, not yet taken by the PTY
  bool agent_input_open_ ABSL_GUARDED_BY(input_mu_) = false;
  // Shell channel (set before the reader starts, then constant).
  bool input_gated_ = false;  // a shell channel: agent input needs OpenAgentInput
  bool can_discard_ = false;  // the shell waits on ack_fd_ after each command
  int ack_fd_ = -1;
  uint64_t last_end_seq_ = 0;  // reader thread only: the last D mark taken
  std::function<void(size_t)> on_discarded_;
  std::unique_ptr<MarkFilter> filter_;  // reader thread only
  std::string filtered_;                // reader thread only: scratch for the filter
  std::vector<ShellMark> marks_ ABSL_GUARDED_BY(mu_);
  uint64_t marks_dropped_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<bool> secret_prompt_{false};  // as the reader thread last saw the PTY's settings
  // Some of pending_input_ came from an agent (dropped at a secret prompt).
  bool pending_from_agent_ ABSL_GUARDED_BY(input_mu_) = false;
  // The last input written came from an agent: when a secret prompt appears,
  // what it left unread is discarded, so it cannot become the secret.
  bool agent_wrote_last_ ABSL_GUARDED_BY(input_mu_) = false;
  // A person's line at a secret prompt, held until it ends (WriteInput), and
  // the foreground process group that was reading when it began.
  std::string held_secret_ ABSL_GUARDED_BY(input_mu_);
  pid_t held_for_ ABSL_GUARDED_BY(input_mu_) = -1;
  absl::Time last_secret_notice_ ABSL_GUARDED_BY(input_mu_) = absl::InfinitePast();
  std::atomic<bool> input_waiting_{false};  // pending_input_ is not empty (read by the reader)
  absl::Mutex subscribers_mu_;
  std::map<int, std::function<void()>> subscribers_ ABSL_GUARDED_BY(subscribers_mu_);
  int next_handle_ ABSL_GUARDED_BY(subscribers_mu_) = 1;
  absl::Mutex wake_mu_;  // the reader closes the pipe under it when it ends
  int wake_fds_[2] ABSL_GUARDED_BY(wake_mu_) = {-1,
                                                -1};  // self-pipe: Close() wakes the reader's poll
  absl::Mutex join_mu_;
  thread::NamedThread reader_ ABSL_GUARDED_BY(join_mu_);  // "tb-pty-reader"
};

}  // namespace termbridge::session

#endif  // TERMBRIDGE_BROKER_SESSION_TERMINAL_H_
