// The Attach bidi stream: live output of one terminal from a resume offset,
// with input, resize and signals flowing back. The ring buffer is the
// attachment's queue: each reactor reads it from its own cursor with one
// write in flight, so a slow reader falls behind (and later gets a Gap
// frame) instead of stalling the PTY or the other attachments.
#include "broker/service/attach_reactor.h"

#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "broker/core/input_readers.h"
#include "broker/service/broker_service.h"
#include "broker/service/wire.h"
#include "common/contract/errors.h"
#include "spdlog/spdlog.h"

namespace termbridge::broker {
namespace {

// Up to 1 MiB per Output frame: a reader that fell behind catches up in few
// large frames (clients accept up to 4 MiB, gRPC's default).
constexpr size_t kBatchBytes = 1 << 20;
constexpr size_t kMinUnannouncedFrame = 256 * 1024;

bool AllowedSignal(int signo) {
  switch (signo) {
    case SIGINT:
    case SIGQUIT:
    case SIGTERM:
    case SIGHUP:
    case SIGKILL:
    case SIGTSTP:
    case SIGCONT:
    case SIGWINCH:
      return true;
    default:
      return false;
  }
}

class AttachReactor final
    : public grpc::ServerBidiReactor<v1::AttachClientFrame, v1::AttachServerFrame> {
 public:
  AttachReactor(std::unique_ptr<BrokerService::CallScope> scope,
                grpc::CallbackServerContext* context, core::TerminalRegistry* registry,
                const ServiceOptions& options, absl::Status auth, AttachRole role)
      : scope_(std::move(scope)),
        context_(context),
        registry_(registry),
        options_(options),
        role_(std::move(role)) {
    if (!auth.ok()) {
      Finish(grpc::Status(grpc::StatusCode::UNAUTHENTICATED, std::string(auth.message())));
      return;
    }
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    // Not ok: the client half-closed (keep streaming output until exit), or
    // the call is gone, which OnCancel ends.
    if (!ok) return;
    absl::Status status = terminal_ ? HandleFrame() : HandleResume();
    if (!status.ok()) {
      FinishWith(ToGrpcStatus(*context_, status));
      return;
    }
    StartRead(&in_);
  }

  void OnWriteDone(bool ok) override {
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      if (!ok) {
        finish_pending_ = true;
        pending_status_ = grpc::Status(grpc::StatusCode::CANCELLED, "write failed");
      }
    }
    Pump();
  }

  // The client went away (closed its tab, exited, lost the connection) or the
  // deadline passed. Finish now: a stream nobody reads must not keep counting
  // as a viewer (commands would run unwatched) or hold up the broker's drain.
  void OnCancel() override {
    FinishWith(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
  }

  void OnDone() override {
    if (subscription_ != 0) terminal_->Unsubscribe(subscription_);
    if (viewing_) {
      terminal_->RemoveViewer();
      spdlog::info("event=viewer_detached terminal_id={} viewer={}", terminal_->id(), role_.viewer);
    }
    delete this;
  }

 private:
  absl::Status HandleResume() {
    if (in_.frame_case() != v1::AttachClientFrame::kResume) {
      return contract::MakeError(contract::ErrorCode::kInvalidPayload,
                                 "the first Attach frame must be resume", {{"field", "resume"}});
    }
    // A person may attach to any terminal; an agent only to its own (another
    // agent's terminals are not found).
    absl::StatusOr<core::SessionRecord> record =
        registry_->FindTerminal(in_.resume().terminal_id(), role_.person ? "" : role_.agent_id);
    if (!record.ok()) return record.status();
    const uint64_t end = record->terminal->end_offset();
    if (!in_.resume().from_start() && in_.resume().offset() > end) {
      // Not an offset this terminal has produced: resuming there would skip
      // output silently when the stream reached it.
      return contract::MakeError(
          contract::ErrorCode::kInvalidPayload,
          "resume offset is past the end of the terminal's output",
          {{"field", "resume.offset"}, {"offset", in_.resume().offset()}, {"end_offset", end}});
    }
    terminal_ = record->terminal;
    holder_generation_ = record->holder_generation;  // read with the holder it goes with
    const uint64_t resume_at = in_.resume().from_start() ? 0 : in_.resume().offset();
    {
      absl::MutexLock lock(&mu_);
      cursor_ = resume_at;
    }
    if (role_.person) {
      viewing_ = true;
      role_.viewer = in_.resume().viewer().empty() ? "attach" : in_.resume().viewer();
      absl::MutexLock lock(&mu_);
      // A person sees the notices posted from now on (and the lock mode).
      notice_cursor_ = terminal_->notice_seq();
      // Which terminal this is, by the name people know it by.
      std::vector<std::string> opening = {
          absl::StrCat("terminal ", record->terminal_name, " (", record->terminal_id, ")",
                       !record->agent_id.empty() ? " of agent " + record->agent_id : "",
                       !record->person.empty() ? " opened by " + record->person : "")};
      if (terminal_->lock() != session::LockMode::kShared) {
        opening.push_back(
            absl::StrCat("lock ", std::string(session::LockModeName(terminal_->lock()))));
      }
      // A prompt already waiting was announced before this viewer came.
      if (terminal_->secret_prompt()) opening.push_back(terminal_->SecretPromptNotice());
      pending_notice_ = absl::StrJoin(opening, "; ");
    }
    if (viewing_) terminal_->AddViewer();
    spdlog::info("event=attach terminal_id={} offset={} role={} viewer={}", terminal_->id(),
                 resume_at, role_.person ? "operator" : "agent", role_.viewer);
    subscription_ = terminal_->Subscribe([this] {
      {
        absl::MutexLock lock(&mu_);
        announced_ = true;
      }
      Pump();
    });
    Pump();
    return absl::OkStatus();
  }

  // An agent's stream ends when its terminal changes hands: it was the
  // agent's only while handed to it (docs/CONTRACT.md, "A person's terminals").
  bool HandedAway() const {
    return !role_.person && terminal_->holder_generation() != holder_generation_;
  }

  absl::Status HandleFrame() {
    if (HandedAway()) return HandedAwayError();
    switch (in_.frame_case()) {
      case v1::AttachClientFrame::kInput:
        return HandleInput(in_.input());
      case v1::AttachClientFrame::kResize: {
        const uint32_t cols = in_.resize().cols(), rows = in_.resize().rows();
        absl::Status resized = terminal_->Resize(cols, rows);
        if (absl::IsInvalidArgument(resized)) {  // Terminal::Resize's bounds
          return contract::MakeError(contract::ErrorCode::kInvalidPayload,
                                     std::string(resized.message()),
                                     {{"field", "resize"}, {"cols", cols}, {"rows", rows}});
        }
        return InputOutcome(resized, 0);
      }
      case v1::AttachClientFrame::kSignal:
        if (!AllowedSignal(in_.signal())) {
          return contract::MakeError(contract::ErrorCode::kInvalidPayload, "signal not allowed",
                                     {{"field", "signal"}, {"value", in_.signal()}});
        }
        if (absl::Status refused = CheckAgentSignal(in_.signal()); !refused.ok()) return refused;
        return terminal_->Interrupt(in_.signal());
      case v1::AttachClientFrame::kStdinClose:
        // End of input is the terminal's EOF character, typed: the same
        // lock, checks and audit as any other input, but no policy check of
        // its text: it forms no command line.
        return HandleInput("\x04", /*end_of_input=*/true);
      default:
        return absl::OkStatus();  // a repeated resume or an empty frame: ignored
    }
  }

  // Input bytes from the stream's peer: bounded, held to the terminal's lock,
  // checked (an agent's) and audited before they reach the PTY.
  absl::Status HandleInput(std::string_view bytes, bool end_of_input = false) {
    if (bytes.size() > options_.max_input_bytes) {
      core::AuditAfterTheFact(options_.audit, audit::kInputRefused,
                              {{"terminal_id", terminal_->id()},
                               {"bytes", bytes.size()},
                               {"reason", "max_input_bytes"}});
      return contract::MakeError(
          contract::ErrorCode::kInvalidPayload, "input chunk exceeds the broker's limit",
          {{"field", "input"}, {"limit", "max_input_bytes"}, {"value", options_.max_input_bytes}});
    }
    if (role_.person && terminal_->lock() == session::LockMode::kAgentOnly) {
      // The person's keystrokes are dropped, not queued; the stream goes on.
      core::AuditAfterTheFact(options_.audit, audit::kInputRefused,
                              {{"terminal_id", terminal_->id()},
                               {"bytes", bytes.size()},
                               {"role", "operator"},
                               {"surface", role_.viewer},
                               {"reason", "lock agent_only"}});
      terminal_->PostNotice(
          absl::StrCat("typing ignored (", bytes.size(), " bytes): the terminal is agent_only"));
      return absl::OkStatus();
    }
    if (absl::Status allowed = CheckAgentInput(bytes, end_of_input); !allowed.ok()) return allowed;
    if (absl::Status s = core::Audit(options_.audit, audit::kInputAccepted,
                                     {{"terminal_id", terminal_->id()},
                                      {"bytes", bytes.size()},
                                      {"role", role_.person ? "operator" : "agent"},
                                      {"surface", role_.person ? role_.viewer : "attach"}});
        !s.ok()) {
      return s;
    }
    if (role_.person) return InputOutcome(terminal_->WriteInput(bytes), bytes.size());
    // The audit write takes time: a terminal handed away or locked user_only
    // meanwhile takes none of this agent's input (the terminal checks as it
    // writes).
    const absl::Status written = terminal_->WriteAgentInput(bytes, holder_generation_);
    if (absl::IsAborted(written) || absl::IsCancelled(written)) {
      core::AuditAfterTheFact(
          options_.audit, audit::kInputRefused,
          {{"terminal_id", terminal_->id()},
           {"bytes", bytes.size()},
           {"role", "agent"},
           {"reason", absl::IsAborted(written) ? "handed_over" : "lock user_only"}});
      if (absl::IsAborted(written)) return HandedAwayError();
    }
    return InputOutcome(written, bytes.size());
  }

  // What this agent's line or bytes would meet in this terminal now: who
  // reads it, whose command runs (TerminalRegistry::PlanCommand).
  core::CommandTarget PlanHere() const {
    core::ExecuteRequest probe;
    probe.agent_id = role_.agent_id;
    probe.terminal_id = terminal_->id();
    return registry_->PlanCommand(probe);
  }

  // An agent signals only the agent's own command in a terminal it may type
  // into: not under user_only, and not a person's command.
  absl::Status CheckAgentSignal(int signo) {
    if (role_.person) return absl::OkStatus();
    std::string reason;
    if (terminal_->lock() == session::LockMode::kUserOnly) {
      reason = "lock user_only";
    } else {
      const core::CommandTarget target = PlanHere();
      if (target.foreign) return HandedAwayError();
      if (target.person_command) reason = "person_command_running";
    }
    if (reason.empty()) return absl::OkStatus();
    core::AuditAfterTheFact(options_.audit, audit::kInputRefused,
                            {{"terminal_id", terminal_->id()},
                             {"signal", signo},
                             {"role", "agent"},
                             {"reason", reason}});
    return contract::MakeError(
        contract::ErrorCode::kDeclined,
        reason == "lock user_only" ? "the terminal is user_only: a person holds it"
                                   : "a person's command is running in this terminal",
        {{"terminal_id", terminal_->id()}, {"signal", signo}, {"reason", reason}});
  }

  absl::Status InputOutcome(const absl::Status& status, size_t bytes) {
    return core::TerminalInputError(status, terminal_->id(), bytes);
  }

  // No byte from an agent reaches a PTY without passing policy: input that
  // policy does not allow outright is refused here (it can go through
  // execute, where a person can approve it). A person's input is theirs.
  // `end_of_input` (stdin_close's EOF character) passes every check but the
  // policy's judgement of text.
  absl::Status CheckAgentInput(std::string_view bytes, bool end_of_input) {
    if (role_.person) return absl::OkStatus();
    if (terminal_->lock() == session::LockMode::kUserOnly) {
      core::AuditAfterTheFact(options_.audit, audit::kInputRefused,
                              {{"terminal_id", terminal_->id()},
                               {"bytes", bytes.size()},
                               {"role", "agent"},
                               {"reason", "lock user_only"}});
      terminal_->PostNotice(absl::StrCat("agent input refused (", bytes.size(),
                                         " bytes): the terminal is user_only"));
      return contract::MakeError(contract::ErrorCode::kDeclined,
                                 "the terminal is user_only: a person holds its input",
                                 {{"terminal_id", terminal_->id()}, {"lock", "user_only"}});
    }
    if (terminal_->secret_prompt()) {
      // Terminal::WriteAgentInput refuses it too, against the settings at
      // the moment of writing; this keeps the audit from saying "accepted".
      core::AuditAfterTheFact(options_.audit, audit::kInputRefused,
                              {{"terminal_id", terminal_->id()},
                               {"bytes", bytes.size()},
                               {"role", "agent"},
                               {"reason", "secret_prompt"}});
      return core::TerminalInputError(absl::PermissionDeniedError("secret prompt"), terminal_->id(),
                                      bytes.size());
    }
    // What will read the input: the terminal's foreground programs, or, while
    // a command has not yet taken the terminal, the programs of that command.
    const core::CommandTarget target = PlanHere();
    if (target.foreign) return HandedAwayError();  // no longer this agent's terminal
    if (target.input && !target.readers_known) {
      core::AuditAfterTheFact(options_.audit, audit::kInputRefused,
                              {{"terminal_id", terminal_->id()},
                               {"bytes", bytes.size()},
                               {"role", "agent"},
                               {"reason", "input_reader_unknown"}});
      return contract::MakeError(
          contract::ErrorCode::kDeclined,
          "what will read the input in this terminal cannot be known now (only the shell "
          "holds it, or its command runs words known only at run time): send it with "
          "execute, where a person can approve it",
          {{"terminal_id", terminal_->id()}, {"reason", "input_reader_unknown"}});
    }
    if (std::optional<std::string> reader =
            core::CommandReader(target.input ? target.readers : terminal_->ForegroundPrograms())) {
      // What a pager, editor or REPL reads becomes commands: a person decides.
      core::AuditAfterTheFact(options_.audit, audit::kInputRefused,
                              {{"terminal_id", terminal_->id()},
                               {"bytes", bytes.size()},
                               {"role", "agent"},
                               {"reason", "input_reader"},
                               {"program", *reader}});
      terminal_->PostNotice(absl::StrCat("agent input refused (", bytes.size(),
                                         " bytes): ", *reader, " runs commands from its input"));
      return contract::MakeError(
          contract::ErrorCode::kDeclined,
          absl::StrCat(*reader,
                       " runs commands from its input, so input to it needs a person: "
                       "send it with execute, where a person can approve it"),
          {{"terminal_id", terminal_->id()}, {"program", *reader}, {"reason", "input_reader"}});
    }
    if (options_.policy == nullptr || end_of_input) return absl::OkStatus();
    policy::Decision decision = options_.policy->Current()->Check(bytes);
    if (decision.action == policy::Action::kAllow) return absl::OkStatus();
    core::AuditAfterTheFact(options_.audit, audit::kInputRefused,
                            {{"terminal_id", terminal_->id()},
                             {"bytes", bytes.size()},
                             {"reason", "policy"},
                             {"decision", decision.ToJson()}});
    terminal_->PostNotice(
        absl::StrCat("agent input refused (", bytes.size(), " bytes): ", decision.reason));
    if (decision.action == policy::Action::kDeny) {
      return contract::MakeError(contract::ErrorCode::kBlockedDestructive, decision.reason,
                                 {{"rule", decision.rule_id}, {"command", decision.command}});
    }
    return contract::MakeError(
        contract::ErrorCode::kDeclined,
        "policy does not allow this input without approval; send it with execute, where a "
        "person can approve it",
        {{"rule", decision.rule_id}, {"reason", decision.reason}});
  }

  void FinishWith(grpc::Status status) {
    {
      absl::MutexLock lock(&mu_);
      finish_pending_ = true;
      pending_status_ = std::move(status);
    }
    Pump();
  }

  // Starts the next write if none is in flight. Called from gRPC threads and
  // from the terminal's reader thread. Decides under the lock, then calls into
  // gRPC without it.
  void Pump() {
    enum Step { kNothing = 0, kWrite = 1, kFinish = 2 };
    int step = kNothing;
    grpc::Status status;
    {
      absl::MutexLock lock(&mu_);
      if (writing_ || finished_) return;
      if (finish_pending_) {
        finished_ = true;
        step = kFinish;
        status = pending_status_;
      } else if (terminal_) {
        step = NextFrame(&status);
        if (step == kWrite) writing_ = true;
        if (step == kFinish) finished_ = true;
      }
    }
    if (step == kWrite) StartWrite(&out_);
    if (step == kFinish) Finish(status);
  }

  // Builds the next server frame into out_. Returns what Pump should do.
  int NextFrame(grpc::Status* status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    session::ExitState state = terminal_->exit_state();  // before reading: see FillReadResult
    out_.Clear();
    if (HandedAway()) {
      *status = ToGrpcStatus(*context_, HandedAwayError());
      return 2;
    }
    if (role_.person) {
      if (!pending_notice_.empty()) {
        out_.mutable_notice()->set_text(std::move(pending_notice_));
        pending_notice_.clear();
        return 1;
      }
      std::vector<session::TerminalNotice> notices = terminal_->NoticesAfter(notice_cursor_);
      if (!notices.empty()) {
        notice_cursor_ = notices.front().seq;
        out_.mutable_notice()->set_text(notices.front().text);
        return 1;
      }
    }
    session::OutputSlice slice = terminal_->Read(cursor_, kBatchBytes);
    if (slice.gap > 0) {
      out_.mutable_gap()->set_from(cursor_);
      out_.mutable_gap()->set_to(slice.start);
      cursor_ = slice.start;
    } else if (!slice.data.empty()) {
      // Hold back a small frame only at the live end, where the next output
      // announces itself; a short read from the recording (a segment ends)
      // is followed by more that is already there, and no announcement.
      if (!announced_ && state.running && slice.data.size() < kMinUnannouncedFrame &&
          slice.next >= terminal_->end_offset()) {
        return 0;
      }
      announced_ = false;
      out_.mutable_output()->set_offset(slice.start);
      out_.mutable_output()->set_data(std::move(slice.data));
      cursor_ = slice.next;
    } else if (!state.running && !exit_sent_) {
      FillExit(state, out_.mutable_exited());
      exit_sent_ = true;
    } else if (exit_sent_) {
      *status = grpc::Status::OK;
      return 2;
    } else {
      return 0;  // nothing new: the subscription calls back on the next output
    }
    return 1;
  }

  absl::Status HandedAwayError() const {
    return contract::MakeError(contract::ErrorCode::kNotFound,
                               "this terminal was handed to someone else; it is not this "
                               "agent's any more",
                               {{"terminal_id", terminal_->id()}});
  }

  // Declared first so it is destroyed last: the stream counts as in flight
  // until the reactor is gone.
  std::unique_ptr<BrokerService::CallScope> scope_;
  grpc::CallbackServerContext* const context_;
  core::TerminalRegistry* const registry_;
  const ServiceOptions& options_;
  // The terminal's holder generation when the stream began (set before the
  // subscription starts the pump).
  uint64_t holder_generation_ = 0;
  AttachRole role_;
  bool viewing_ = false;  // counted as a viewer of terminal_
  v1::AttachClientFrame in_;
  std::shared_ptr<session::Terminal> terminal_;  // set once by the first read
  int subscription_ = 0;

  absl::Mutex mu_;
  v1::AttachServerFrame out_ ABSL_GUARDED_BY(mu_);
  uint64_t cursor_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t notice_cursor_ ABSL_GUARDED_BY(mu_) = 0;  // last notice sent (person role)
  std::string pending_notice_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  // The terminal announced output since the last Output frame (or the stream
  // just resumed): send what there is. Otherwise, after a write, only a
  // frame of kMinUnannouncedFrame or more goes out at once.
  bool announced_ ABSL_GUARDED_BY(mu_) = true;
  bool exit_sent_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_pending_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status pending_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

grpc::ServerBidiReactor<v1::AttachClientFrame, v1::AttachServerFrame>* NewAttachReactor(
    std::unique_ptr<BrokerService::CallScope> scope, grpc::CallbackServerContext* context,
    core::TerminalRegistry* registry, const ServiceOptions& options, absl::Status auth,
    AttachRole role) {
  return new AttachReactor(std::move(scope), context, registry, options, std::move(auth),
                           std::move(role));
}

grpc::ServerBidiReactor<v1::AttachClientFrame, v1::AttachServerFrame>* BrokerService::Attach(
    grpc::CallbackServerContext* context) {
  auto scope = std::make_unique<CallScope>(this);
  absl::StatusOr<std::string> identity = Authenticate(*context, "Attach");
  AttachRole role;
  if (identity.ok()) {
    role.agent_id = *identity;
    scope->Bind(*identity, context);
    // A revocation between Authenticate and Bind ended no call: look again.
    if (absl::StatusOr<std::string> again = Identify(*context); !again.ok()) {
      identity = again.status();
    }
  }
  return NewAttachReactor(std::move(scope), context, registry_, options_, identity.status(),
                          std::move(role));
}

}  // namespace termbridge::broker
