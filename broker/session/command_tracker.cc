// CommandTracker: OSC 133 marks -> per-command output ranges and exit codes.
#include "broker/session/command_tracker.h"

#include <utility>
#include <vector>

namespace termbridge::session {

CommandTracker::CommandTracker(std::shared_ptr<Terminal> terminal, bool integrated,
                               FinishedCallback on_finished)
    : terminal_(std::move(terminal)),
      integrated_(integrated),
      on_finished_(std::move(on_finished)) {
  subscription_ = terminal_->Subscribe([this] { OnOutput(); });
  OnOutput();  // output (or an exit) that arrived before the subscription
}

CommandTracker::~CommandTracker() { terminal_->Unsubscribe(subscription_); }

bool CommandTracker::WaitReady(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return ready_; };
  return mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
}

void CommandTracker::Begin(const std::string& session_id) {
  absl::MutexLock lock(&mu_);
  CommandState state;
  state.write_offset = terminal_->end_offset();
  state.output_start = state.write_offset;
  commands_[session_id] = state;
  order_[next_sequence_++] = session_id;
}

std::optional<CommandState> CommandTracker::Get(const std::string& session_id) const {
  absl::MutexLock lock(&mu_);
  auto it = commands_.find(session_id);
  if (it == commands_.end()) return std::nullopt;
  return it->second;
}

bool CommandTracker::WaitFinished(const std::string& session_id, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = commands_.find(session_id);
    return it == commands_.end() || it->second.finished;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&done), timeout);
}

bool CommandTracker::Busy() const {
  absl::MutexLock lock(&mu_);
  return !order_.empty();
}

bool CommandTracker::ForeignCommandRunning() const {
  absl::MutexLock lock(&mu_);
  return ready_ && !at_prompt_ && order_.empty() && terminal_->exit_state().running;
}

std::optional<std::string> CommandTracker::CurrentSession() const {
  absl::MutexLock lock(&mu_);
  if (order_.empty()) return std::nullopt;
  return order_.begin()->second;
}

std::optional<int> CommandTracker::LastExitCode() const {
  absl::MutexLock lock(&mu_);
  return last_exit_code_;
}

void CommandTracker::Finish(const std::string& session_id, CommandState* state) {
  state->finished = true;
  finished_queue_.emplace_back(session_id, *state);
}

void CommandTracker::OnOutput() {
  ExitState exit = terminal_->exit_state();  // before reading: then the reads are complete
  std::vector<std::pair<std::string, CommandState>> finished;
  {
    absl::MutexLock lock(&mu_);
    for (const ShellMark& mark : terminal_->MarksSince(&next_mark_)) {
      if (mark.kind == ShellMark::kCommandStart) ready_ = at_prompt_ = true;
      if (mark.kind == ShellMark::kOutputStart) {
        at_prompt_ = false;
        output_seen_ = true;
      }
      if (mark.kind == ShellMark::kCommandEnd) {
        at_prompt_ = true;  // the shell is back
        // A prompt after an empty line repeats the last status: only a
        // command that ran (a C mark, or one sent) sets it.
        if ((output_seen_ || !order_.empty()) && mark.exit_code) last_exit_code_ = mark.exit_code;
        output_seen_ = false;
      }
      if (order_.empty()) continue;
      const std::string& session_id = order_.begin()->second;
      CommandState& state = commands_[session_id];
      if (mark.offset < state.write_offset) continue;  // a mark from before it was sent
      if (mark.kind == ShellMark::kOutputStart && state.completion.empty()) {
        state.output_start = mark.end_offset;
        state.completion = "osc133";
      } else if (mark.kind == ShellMark::kCommandEnd) {
        if (state.completion.empty()) {
          // No C mark: skip the echoed command line (the heuristic).
          OutputSlice echoed =
              terminal_->Read(state.write_offset, mark.offset - state.write_offset);
          size_t newline = echoed.data.find('\n');
          if (newline != std::string::npos) state.output_start = echoed.start + newline + 1;
          state.completion = integrated_ ? "osc133" : "heuristic";
        }
        state.end_offset = mark.offset;
        state.exit_code = mark.exit_code.value_or(-1);
        Finish(session_id, &state);
        order_.erase(order_.begin());
      }
    }
    if (!exit.running) {
      ready_ = true;
      for (const auto& [sequence, session_id] : order_) {
        CommandState& state = commands_[session_id];
        state.end_offset = terminal_->end_offset();
        state.exit_code = exit.exit_code;
        state.term_signal = exit.term_signal;
        state.completion = "process_exit";
        Finish(session_id, &state);
      }
      order_.clear();
    }
    finished.swap(finished_queue_);
  }
  if (on_finished_) {
    for (const auto& [session_id, state] : finished) on_finished_(session_id, state);
  }
}

}  // namespace termbridge::session
