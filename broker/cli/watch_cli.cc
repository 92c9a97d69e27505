// termbridge watch: a person following every terminal over the operator
// socket. It attaches to each terminal as it opens (an operator Attach
// stream each, so the broker counts it as a viewer), prints their output
// line by line under each terminal's id, and every request that waits for a
// person. When the broker goes away it redials (reconnect.h), lists again
// and follows each terminal from where it stopped, unless --reconnect=false.
#include <poll.h>

#include <atomic>
#include <csignal>
#include <map>
#include <memory>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "broker/cli/attach_frames.h"
#include "broker/cli/cli_common.h"
#include "broker/cli/output_text.h"
#include "broker/cli/reconnect.h"
#include "broker/cli/terminal_io.h"
#include "common/text/visible.h"
#include "common/thread/named_thread.h"

namespace termbridge::cli {
namespace {

using nlohmann::json;

// Prints the output of every followed terminal to one stream, a line at a
// time under each terminal's id with control sequences removed (or, with
// --json, as JSON lines of the raw bytes).
class WatchPrinter {
 public:
  WatchPrinter(bool json, std::ostream& out) : json_(json), out_(out) {}

  void Opened(const v1::SessionInfo& terminal) {
    std::lock_guard<std::mutex> lock(mu_);
    if (json_) {
      json j = SessionJson(terminal);
      j["type"] = "opened";
      out_ << Dump(j) << std::endl;
      return;
    }
    std::string text =
        absl::StrCat("termbridge > watching terminal ", text::Visible(terminal.name()), " (",
                     terminal.terminal_id(), ")");
    if (!terminal.agent_id().empty()) {
      absl::StrAppend(&text, " of agent ", text::Visible(terminal.agent_id()));
    }
    if (!terminal.person().empty()) {
      absl::StrAppend(&text, " opened by ", text::Visible(terminal.person()));
    }
    out_ << prefixer_.Line(terminal.terminal_id(), text) << std::flush;
  }

  void Frame(const std::string& terminal_id, const v1::AttachServerFrame& frame) {
    std::lock_guard<std::mutex> lock(mu_);
    if (json_) {
      PrintJson(terminal_id, frame);
    } else if (frame.has_output()) {
      out_ << prefixer_.Add(terminal_id, strippers_[terminal_id].Add(frame.output().data()));
    } else if (frame.has_gap()) {
      out_ << prefixer_.Line(
          terminal_id,
          absl::StrCat("termbridge > ", frame.gap().to() - frame.gap().from(), " bytes skipped"));
    } else if (frame.has_notice()) {
      out_ << prefixer_.Line(terminal_id, "termbridge > " + frame.notice().text());
    } else if (frame.has_exited()) {
      out_ << prefixer_.Line(terminal_id, "termbridge > " + ExitText(terminal_id, frame.exited()));
    }
    out_.flush();
  }

  // A request waiting for a person: a line naming it, with the terminal's
  // bell unless --bell=false (docs/operating.md, "When a request waits").
  void ApprovalRequested(const v1::Approval& approval, bool bell) {
    std::lock_guard<std::mutex> lock(mu_);
    if (json_) {
      out_ << Dump({{"type", "approval_requested"},
                    {"approval_id", approval.approval_id()},
                    {"kind", approval.kind()},
                    {"command", approval.command()},
                    {"agent_id", approval.agent_id()},
                    {"terminal_id", approval.terminal_id()}})
           << std::endl;
      return;
    }
    std::string where = approval.terminal_id().empty() ? "a new terminal" : approval.terminal_id();
    out_ << prefixer_.Line(where,
                           absl::StrCat("termbridge > approval needed (", approval.approval_id(),
                                        "): ", text::Visible(approval.command()), "  [agent ",
                                        approval.agent_id(), "]  termbridge approvals approve ",
                                        approval.approval_id()))
         << (bell ? "\a" : "") << std::flush;
  }

  void Problem(const std::string& terminal_id, const std::string& text) {
    std::lock_guard<std::mutex> lock(mu_);
    if (json_) {
      out_ << Dump({{"type", "error"}, {"terminal_id", terminal_id}, {"text", text}}) << std::endl;
    } else {
      out_ << prefixer_.Line(terminal_id, "termbridge > " + text) << std::flush;
    }
  }

 private:
  void PrintJson(const std::string& terminal_id, const v1::AttachServerFrame& frame) {
    if (!frame.has_output()) {
      out_ << Dump(FrameJson(terminal_id, frame)) << "\n";
      return;
    }
    Utf8Carry::Text text = utf8_[terminal_id].Add(frame.output().offset(), frame.output().data());
    if (text.text.empty()) return;
    out_ << Dump({{"type", "output"},
                  {"terminal_id", terminal_id},
                  {"offset", text.offset},
                  {"data", text.text}})
         << "\n";
  }

  const bool json_;
  std::ostream& out_;
  std::mutex mu_;
  LinePrefixer prefixer_;
  std::map<std::string, EscapeStripper> strippers_;  // per terminal: sequences span chunks
  std::map<std::string, Utf8Carry> utf8_;
};

// One terminal that watch follows: an Attach stream on its own thread, from
// `offset` (-1: replay the ring).
class Follower {
 public:
  Follower(std::shared_ptr<v1::TerminalOperator::Stub> stub, std::string terminal_id,
           int64_t offset, const CliOptions& options, WatchPrinter* printer)
      : cursor_(offset),
        thread_("tb-watch-follow",
                [this, stub = std::move(stub), id = std::move(terminal_id), &options, printer] {
                  Run(stub.get(), id, options, printer);
                  ended_ = true;
                }) {}
  ~Follower() { End(); }
  // Cancels the stream and joins the thread.
  void End() {
    context_.TryCancel();
    thread_.Join();
  }
  // The terminal's stream has ended: destroying this only joins the thread.
  bool ended() const { return ended_; }
  // The stream brought the terminal's exit: nothing more to follow.
  bool exited() const { return exited_; }
  // Where a new stream would continue: after the last byte printed.
  int64_t cursor() const { return cursor_; }

 private:
  void Run(v1::TerminalOperator::Stub* stub, const std::string& terminal_id,
           const CliOptions& options, WatchPrinter* printer) {
    std::unique_ptr<AttachStream> stream = stub->Attach(&context_);
    stream->Write(ResumeFrame(terminal_id, cursor_, "watch"));
    stream->WritesDone();  // the broker keeps streaming until the terminal exits
    v1::AttachServerFrame frame;
    while (stream->Read(&frame)) {
      cursor_ = CursorAfter(frame, cursor_);
      if (frame.has_exited()) exited_ = true;
      printer->Frame(terminal_id, frame);
    }
    grpc::Status status = stream->Finish();
    // With --reconnect, watch says once that the broker went away and
    // follows the terminal again when it is back.
    const bool quiet = options.reconnect && BrokerWentAway(status);
    if (!status.ok() && status.error_code() != grpc::StatusCode::CANCELLED && !quiet) {
      printer->Problem(terminal_id, "stopped watching: " + status.error_message());
    }
  }

  grpc::ClientContext context_;  // declared before thread_: the thread uses it
  std::atomic<int64_t> cursor_;
  std::atomic<bool> exited_{false};
  std::atomic<bool> ended_{false};
  thread::NamedThread thread_;
};

// `termbridge watch`: follows WatchTerminals on a thread and attaches to
// every running terminal, until a signal, or the broker ends the stream
// (with --reconnect, only a refusal: when the broker goes away watch
// redials, lists again and follows each terminal from where it stopped).
class WatchSession {
 public:
  WatchSession(const CliOptions& options, std::ostream& out, std::ostream& err)
      : options_(options),
        err_(err),
        printer_(options.json, out),
        signals_({SIGINT, SIGTERM, SIGHUP}) {}

  int Run() {
    absl::StatusOr<std::shared_ptr<v1::TerminalOperator::Stub>> stub =
        DialOperator(options_, absl::Milliseconds(options_.timeout_ms), stop_);
    if (!stub.ok()) {
      return Fail(grpc::Status(grpc::StatusCode::UNAVAILABLE, std::string(stub.status().message())),
                  options_, err_);
    }
    {
      absl::MutexLock lock(&mu_);
      stub_ = *std::move(stub);
      generation_ = 1;
    }
    thread::NamedThread events("tb-watch-events", [this] { FollowEvents(); });
    thread::NamedThread approvals("tb-watch-approvals", [this] { FollowApprovals(); });
    int signo = WaitForEnd();
    stop_.Notify();
    {
      absl::MutexLock lock(&mu_);
      if (events_context_) events_context_->TryCancel();
      if (approvals_context_) approvals_context_->TryCancel();
    }
    events.Join();
    approvals.Join();
    {
      absl::MutexLock lock(&mu_);
      followers_.clear();  // cancels and joins each
    }
    if (signo != 0) return 0;  // interrupted: the normal way to stop watching
    return status_.ok() ? 0 : Fail(status_, options_, err_);
  }

 private:
  // A terminal watch has followed: its follower while one runs; once that
  // ended, whether the terminal exited, else where to continue.
  struct Followed {
    std::unique_ptr<Follower> follower;
    bool exited = false;
    int64_t resume_at = -1;
  };

  // Returns the signal that stopped watch, or 0 when the event stream ended.
  int WaitForEnd() {
    for (;;) {
      pollfd fd = {signals_.fd(), POLLIN, 0};
      if (poll(&fd, 1, -1) < 0) continue;
      if (int signo = signals_.Take(); signo >= 0) return signo;
    }
  }

  // One WatchTerminals stream after another (see the class comment), then
  // wakes the loop.
  void FollowEvents() {
    ReconnectBackoff backoff;
    for (;;) {
      bool got_events = false;
      grpc::Status status = WatchOnce(&got_events);
      if (stop_.HasBeenNotified()) break;
      if (!options_.reconnect || !BrokerWentAway(status)) {
        status_ = status;
        break;
      }
      if (got_events) backoff.Reset();
      err_ << "termbridge > " << kBrokerGoneText << " (Ctrl-C stops)" << std::endl;
      SuspendFollowers();
      if (!Redial(&backoff)) break;
      err_ << "termbridge > reconnected to the broker" << std::endl;
    }
    signals_.Wake();
  }

  grpc::Status WatchOnce(bool* got_events) {
    std::shared_ptr<v1::TerminalOperator::Stub> stub;
    grpc::ClientContext* context = nullptr;
    {
      absl::MutexLock lock(&mu_);
      stub = stub_;
      events_context_ = std::make_unique<grpc::ClientContext>();
      context = events_context_.get();
      if (stop_.HasBeenNotified()) context->TryCancel();
    }
    auto reader = stub->WatchTerminals(context, v1::WatchTerminalsRequest());
    v1::TerminalEvent event;
    int open = 0;
    while (reader->Read(&event)) {
      *got_events = true;
      if (event.kind() == "snapshot_done") {
        err_ << "termbridge > watching every terminal (" << open << " open); Ctrl-C stops"
             << std::endl;
      } else if (event.kind() == "opened" && Follow(stub, event.terminal())) {
        ++open;
      }
    }
    return reader->Finish();
  }

  // Dials until the broker answers, then lets the approvals thread go on
  // too. False once watch stops.
  bool Redial(ReconnectBackoff* backoff) {
    for (;;) {
      if (stop_.WaitForNotificationWithTimeout(backoff->Next())) return false;
      absl::StatusOr<std::shared_ptr<v1::TerminalOperator::Stub>> stub =
          DialOperator(options_, ReconnectBackoff::kMax, stop_);
      if (stub.ok()) {
        absl::MutexLock lock(&mu_);
        stub_ = *std::move(stub);
        ++generation_;
        connected_.SignalAll();
        return true;
      }
      if (stop_.HasBeenNotified()) return false;
    }
  }

  // Every pending request and each new one, as a line (and a bell); with
  // --reconnect, again on each new connection.
  void FollowApprovals() {
    for (uint64_t seen = 0;;) {
      std::shared_ptr<v1::TerminalOperator::Stub> stub;
      grpc::ClientContext* context = nullptr;
      {
        absl::MutexLock lock(&mu_);
        // Stop() notifies stop_ without the lock: look again every 100 ms.
        while (generation_ <= seen && !stop_.HasBeenNotified()) {
          connected_.WaitWithTimeout(&mu_, absl::Milliseconds(100));
        }
        if (stop_.HasBeenNotified()) return;
        seen = generation_;
        stub = stub_;
        approvals_context_ = std::make_unique<grpc::ClientContext>();
        context = approvals_context_.get();
      }
      auto reader = stub->WatchApprovals(context, v1::ListApprovalsRequest());
      v1::ApprovalEvent event;
      while (reader->Read(&event)) {
        if (event.kind() == "requested") {
          printer_.ApprovalRequested(event.approval(), options_.bell);
        }
      }
      reader->Finish();  // its end is the event stream's business
      if (!options_.reconnect) return;
    }
  }

  // Before a new connection: every follower is ended (its stream went with
  // the old one) and remembers where its terminal stopped.
  void SuspendFollowers() {
    absl::MutexLock lock(&mu_);
    for (auto& [id, followed] : followers_) EndFollower(followed);
  }

  // Ends the follower (cancels, joins) and keeps what a new one needs.
  void EndFollower(Followed& followed) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!followed.follower) return;
    followed.follower->End();
    followed.exited = followed.follower->exited();
    followed.resume_at = followed.follower->cursor();
    followed.follower.reset();
  }

  // Attaches to a terminal not yet followed, or again, from where it
  // stopped, to one whose stream went with an earlier connection. Returns
  // whether it follows it now.
  bool Follow(const std::shared_ptr<v1::TerminalOperator::Stub>& stub,
              const v1::SessionInfo& terminal) {
    absl::MutexLock lock(&mu_);
    for (auto& [id, followed] : followers_) {
      if (followed.follower && followed.follower->ended()) EndFollower(followed);
    }
    auto [it, inserted] = followers_.try_emplace(terminal.terminal_id());
    Followed& followed = it->second;
    if (!inserted && (followed.follower || followed.exited)) return false;
    if (inserted) printer_.Opened(terminal);
    followed.follower = std::make_unique<Follower>(stub, terminal.terminal_id(), followed.resume_at,
                                                   options_, &printer_);
    return true;
  }

  const CliOptions& options_;
  std::ostream& err_;
  WatchPrinter printer_;
  SignalPipe signals_;
  absl::Notification stop_;  // watch ends: no more attempts
  absl::Mutex mu_;
  std::shared_ptr<v1::TerminalOperator::Stub> stub_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;  // connections made so far
  absl::CondVar connected_;                       // generation_ grew
  std::unique_ptr<grpc::ClientContext> events_context_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<grpc::ClientContext> approvals_context_ ABSL_GUARDED_BY(mu_);
  grpc::Status status_;  // written by the events thread before it wakes the loop
  // Every terminal followed so far (never followed twice from the start).
  std::map<std::string, Followed> followers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

int Watch(const std::vector<std::string>& args, const CliOptions& options, std::ostream& out,
          std::ostream& err) {
  if (args.size() != 1) {
    err << "usage: termbridge watch [--reconnect=false] [--json]\n";
    return 2;
  }
  WatchSession session(options, out, err);
  return session.Run();
}

}  // namespace termbridge::cli
