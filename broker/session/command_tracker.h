// CommandTracker follows the commands sent into one persistent shell. It
// subscribes to the terminal, takes the signed OSC 133 marks the integrated
// shell prints (see shell_integration.h and mark_filter.h; a program's
// unsigned marks are output, never events) and turns them into per-command state:
// where the command's output starts and ends in the terminal's stream, and
// its exit code. Without a C mark (plain sh) the output start is found by the
// echo-line heuristic and the state says so; when the shell itself exits,
// unfinished commands end with the shell's exit status.
#ifndef TERMBRIDGE_BROKER_SESSION_COMMAND_TRACKER_H_
#define TERMBRIDGE_BROKER_SESSION_COMMAND_TRACKER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "broker/session/shell_integration.h"
#include "broker/session/terminal.h"

namespace termbridge::session {

struct CommandState {
  uint64_t write_offset = 0;           // the terminal's offset when the command was sent
  uint64_t output_start = 0;           // first byte of its output
  std::optional<uint64_t> end_offset;  // one past its last byte, once finished
  bool finished = false;
  int exit_code = -1;   // >= 0 when known
  int term_signal = 0;  // > 0 when the shell itself was killed
  // "osc133": marks from shell integration; "heuristic": the end came from a
  // mark but the output start was guessed; "process_exit": the shell ended.
  std::string completion;
};

class CommandTracker {
 public:
  using FinishedCallback = std::function<void(const std::string& session_id, const CommandState&)>;

  // Subscribes to `terminal`. `integrated` says the shell prints C marks.
  // `on_finished` runs once per command, on the terminal's reader thread.
  CommandTracker(std::shared_ptr<Terminal> terminal, bool integrated,
                 FinishedCallback on_finished = nullptr);
  ~CommandTracker();
  CommandTracker(const CommandTracker&) = delete;
  CommandTracker& operator=(const CommandTracker&) = delete;

  // Waits until the shell has drawn its first prompt (or exited). Returns
  // false on timeout.
  bool WaitReady(absl::Duration timeout) const;
  // Registers a command that is about to be written at the current end of the
  // terminal's output. Call before writing it.
  void Begin(const std::string& session_id);
  std::optional<CommandState> Get(const std::string& session_id) const;
  // Waits until the command finished. Returns false on timeout.
  bool WaitFinished(const std::string& session_id, absl::Duration timeout) const;
  // True while a command sent here has not finished.
  bool Busy() const;
  // True while a command this tracker was not given runs (a person typed it
  // at the prompt): the shell is past a C mark with no D or prompt since.
  bool ForeignCommandRunning() const;
  // The oldest command that has not finished, if any.
  std::optional<std::string> CurrentSession() const;
  // The exit code of the latest command that ran in the terminal, an
  // agent's or a person's (from the shell's end marks); none before the
  // first, or when the shell did not say.
  std::optional<int> LastExitCode() const;

 private:
  void OnOutput();
  void Finish(const std::string& session_id, CommandState* state)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<Terminal> terminal_;
  const bool integrated_;
  const FinishedCallback on_finished_;
  mutable absl::Mutex mu_;
  uint64_t next_mark_ ABSL_GUARDED_BY(mu_) = 0;  // Terminal::MarksSince cursor
  bool ready_ ABSL_GUARDED_BY(mu_) = false;
  bool at_prompt_ ABSL_GUARDED_BY(mu_) = false;    // a B or D mark with no C since
  bool output_seen_ ABSL_GUARDED_BY(mu_) = false;  // a C mark since the last D
  std::optional<int> last_exit_code_ ABSL_GUARDED_BY(mu_);
  // In the order they were sent; commands finish in that order.
  std::map<uint64_t, std::string> order_ ABSL_GUARDED_BY(mu_);  // sequence -> session_id
  std::map<std::string, CommandState> commands_ ABSL_GUARDED_BY(mu_);
  uint64_t next_sequence_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::pair<std::string, CommandState>> finished_queue_ ABSL_GUARDED_BY(mu_);
  int subscription_ = 0;
};

}  // namespace termbridge::session

#endif  // TERMBRIDGE_BROKER_SESSION_COMMAND_TRACKER_H_
