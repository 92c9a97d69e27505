// termbridge attach <terminal> and termbridge watch: a person watching
// terminals over the operator socket. Each is an operator Attach stream, so
// the broker counts it as a viewer and lets commands run in that terminal.
// attach mirrors one terminal into the person's own terminal (raw mode,
// resizes, typing, a detach key, a key that closes the terminal); watch
// follows every terminal, attaching to each new one, and prints their output
// line by line under each terminal's id. Both work without a TTY (pipes,
// tests): then nothing is put in raw mode and stdin is sent as it comes.
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <map>
#include <memory>
#include <mutex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "broker/cli/attach_keys.h"
#include "broker/cli/cli_common.h"
#include "broker/cli/output_text.h"
#include "broker/cli/terminal_io.h"
#include "common/text/visible.h"
#include "common/thread/named_thread.h"

namespace termbridge::cli {
namespace {

using nlohmann::json;
using AttachStream = grpc::ClientReaderWriter<v1::AttachClientFrame, v1::AttachServerFrame>;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// "terminal t_1 exited (0)" or "terminal t_1 was killed (signal 9)".
std::string ExitText(const std::string& terminal_id, const v1::ExitInfo& exit) {
  if (exit.has_signal()) {
    return absl::StrCat("terminal ", terminal_id, " was killed (signal ", exit.signal(), ")");
  }
  return absl::StrCat("terminal ", terminal_id, " exited (",
                      exit.has_exit_code() ? exit.exit_code() : -1, ")");
}

// The JSON line for a frame other than output.
json FrameJson(const std::string& terminal_id, const v1::AttachServerFrame& frame) {
  json j = {{"terminal_id", terminal_id}};
  switch (frame.frame_case()) {
    case v1::AttachServerFrame::kGap:
      j["type"] = "gap";
      j["from"] = frame.gap().from();
      j["to"] = frame.gap().to();
      break;
    case v1::AttachServerFrame::kNotice:
      j["type"] = "notice";
      j["text"] = frame.notice().text();
      break;
    case v1::AttachServerFrame::kExited:
      j["type"] = "exited";
      j["exit"] = ExitJson(frame.exited());
      break;
    default:
      j["type"] = "unknown";
  }
  return j;
}

v1::AttachClientFrame ResumeFrame(const std::string& terminal_id, int64_t offset,
                                  const std::string& viewer) {
  v1::AttachClientFrame frame;
  v1::AttachClientFrame::Resume* resume = frame.mutable_resume();
  resume->set_terminal_id(terminal_id);
  if (offset < 0) {
    resume->set_from_start(true);
  } else {
    resume->set_offset(static_cast<uint64_t>(offset));
  }
  resume->set_viewer(viewer);
  return frame;
}

// ---------------------------------------------------------------- attach

constexpr int kAttachSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGTSTP, SIGCONT};

// One `termbridge attach`: a reader thread prints server frames while the
// calling thread polls stdin and the signal pipe and sends client frames.
class AttachSession {
 public:
  AttachSession(std::string terminal_id, const CliOptions& options, KeyFilter keys,
                std::ostream& out, std::ostream& err)
      : terminal_id_(std::move(terminal_id)),
        options_(options),
        keys_(keys),
        out_(out),
        err_(err),
        signals_(std::vector<int>(std::begin(kAttachSignals), std::end(kAttachSignals))),
        raw_(STDIN_FILENO) {}

  int Run() {
    stub_ = Connect(options_);
    stream_ = stub_->Attach(&context_);
    Send(ResumeFrame(terminal_id_, options_.offset,
                     options_.viewer.empty() ? "attach" : options_.viewer));
    SendWindowSize();
    thread::NamedThread reader("tb-attach-read", [this] { ReadFrames(); });
    int signo = Loop();
    if (!stream_ended_) context_.TryCancel();
    reader.Join();
    grpc::Status status = stream_->Finish();
    raw_.Restore();
    return Outcome(signo, status);
  }

 private:
  enum : int { kDetached = -1, kStreamEnded = -2 };

  // Returns kDetached, kStreamEnded or the signal that ended the attach.
  int Loop() {
    bool stdin_open = true;
    for (;;) {
      pollfd fds[2] = {{signals_.fd(), POLLIN, 0}, {stdin_open ? STDIN_FILENO : -1, POLLIN, 0}};
      if (poll(fds, 2, -1) < 0) continue;  // EINTR: the handler wrote to the pipe
      if (fds[0].revents != 0) {
        if (int result = HandleSignals(); result != 0) return result;
      }
      if (fds[1].revents != 0) {
        KeyAction action = ForwardStdin(&stdin_open);
        if (action == KeyAction::kDetach) return kDetached;
        if (action == KeyAction::kClose) CloseTerminal();
        if (action == KeyAction::kLockUser) SetLock("user_only");
        if (action == KeyAction::kLockAgent) SetLock("agent_only");
        if (action == KeyAction::kLockShared) SetLock("shared");
      }
    }
  }

  // Drains the signal pipe. Returns 0 to keep going.
  int HandleSignals() {
    for (int signo = signals_.Take(); signo >= 0; signo = signals_.Take()) {
      if (signo == 0) return kStreamEnded;
      if (signo == SIGWINCH) {
        SendWindowSize();
      } else if (signo == SIGTSTP) {
        raw_.Restore();
        signals_.RaiseDefault(SIGTSTP);  // stopped here until SIGCONT
      } else if (signo == SIGCONT) {
        raw_.Reenter();
        SendWindowSize();
      } else {
        return signo;
      }
    }
    return 0;
  }

  // Reads what the person typed (or what a pipe holds) and sends it as input.
  KeyAction ForwardStdin(bool* stdin_open) {
    char buffer[4096];
    ssize_t n = read(STDIN_FILENO, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) return KeyAction::kNone;
    if (n <= 0) {
      *stdin_open = false;  // end of a pipe: keep watching until exit or a signal
      return raw_.active() ? KeyAction::kDetach : KeyAction::kNone;  // a TTY hung up
    }
    std::string input;
    KeyAction action = KeyAction::kNone;
    if (raw_.active()) {
      action = keys_.Feed(std::string_view(buffer, n), &input);
    } else {
      input.assign(buffer, n);  // a pipe's bytes are data, never keys
    }
    if (!input.empty()) {
      v1::AttachClientFrame frame;
      frame.set_input(std::move(input));
      Send(frame);
    }
    return action;
  }

  void CloseTerminal() {
    Notice(absl::StrCat("closing terminal ", terminal_id_));
    grpc::ClientContext context;
    SetDeadline(&context, options_);
    v1::CloseTerminalRequest request;
    request.set_terminal_id(terminal_id_);
    v1::CloseTerminalResponse response;
    grpc::Status status = stub_->CloseTerminal(&context, request, &response);
    if (!status.ok()) Notice(absl::StrCat("could not close: ", status.error_message()));
    // On success the stream brings the exit, then ends.
  }

  // The broker confirms with a notice to every viewer, this one included.
  void SetLock(const std::string& mode) {
    grpc::ClientContext context;
    SetDeadline(&context, options_);
    v1::SetLockRequest request;
    request.set_terminal_id(terminal_id_);
    request.set_mode(mode);
    request.set_surface("attach");
    v1::SetLockResponse response;
    grpc::Status status = stub_->SetLock(&context, request, &response);
    if (!status.ok()) Notice(absl::StrCat("could not set the lock: ", status.error_message()));
  }

  void SendWindowSize() {
    std::optional<WindowSize> size = TerminalWindowSize();
    if (!size) return;
    v1::AttachClientFrame frame;
    frame.mutable_resize()->set_cols(size->cols);
    frame.mutable_resize()->set_rows(size->rows);
    Send(frame);
  }

  void Send(const v1::AttachClientFrame& frame) {
    if (!write_failed_) write_failed_ = !stream_->Write(frame);  // the reader sees why
  }

  // The reader thread: prints every frame until the stream ends.
  void ReadFrames() {
    v1::AttachServerFrame frame;
    while (stream_->Read(&frame)) Print(frame);
    stream_ended_ = true;
    signals_.Wake();
  }

  void Print(const v1::AttachServerFrame& frame) {
    std::lock_guard<std::mutex> lock(out_mu_);
    if (frame.has_exited()) exit_seen_ = true;
    if (options_.json) {
      PrintJson(frame);
    } else if (frame.has_output()) {
      out_ << frame.output().data();
    } else if (frame.has_gap()) {
      NoticeLocked(absl::StrCat(frame.gap().to() - frame.gap().from(),
                                " bytes skipped: they left the terminal's buffer"));
    } else if (frame.has_notice()) {
      NoticeLocked(frame.notice().text());
    } else if (frame.has_exited()) {
      NoticeLocked(ExitText(terminal_id_, frame.exited()));
    }
    out_.flush();
  }

  void PrintJson(const v1::AttachServerFrame& frame) {
    if (!frame.has_output()) {
      out_ << Dump(FrameJson(terminal_id_, frame)) << "\n";
      return;
    }
    Utf8Carry::Text text = utf8_.Add(frame.output().offset(), frame.output().data());
    if (text.text.empty()) return;
    out_ << Dump({{"type", "output"},
                  {"terminal_id", terminal_id_},
                  {"offset", text.offset},
                  {"data", text.text}})
         << "\n";
  }

  void Notice(const std::string& text) {
    std::lock_guard<std::mutex> lock(out_mu_);
    if (options_.json) {
      out_ << Dump({{"type", "local_notice"}, {"terminal_id", terminal_id_}, {"text", text}})
           << "\n";
    } else {
      NoticeLocked(text);
    }
    out_.flush();
  }

  // An approval notice rings the terminal's bell unless --bell=false.
  void NoticeLocked(const std::string& text) {
    const bool ring = options_.bell && absl::StartsWith(text, "approval needed");
    out_ << "\r\ntermbridge > " << text << "\r\n" << (ring ? "\a" : "");
  }

  int Outcome(int signo, const grpc::Status& status) {
    if (signo == kStreamEnded || exit_seen_) {
      if (!status.ok() && !exit_seen_) return Fail(status, options_, err_);
      return 0;
    }
    if (signo == kDetached) {
      Notice(absl::StrCat("detached from ", terminal_id_, "; it keeps running"));
      return 0;
    }
    return 128 + signo;
  }

  const std::string terminal_id_;
  const CliOptions& options_;
  KeyFilter keys_;
  std::ostream& out_;
  std::ostream& err_;
  SignalPipe signals_;  // before raw_: raw mode is restored before the handlers go
  RawMode raw_;
  std::unique_ptr<v1::TerminalOperator::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<AttachStream> stream_;
  bool write_failed_ = false;
  std::atomic<bool> stream_ended_{false};
  std::mutex out_mu_;
  bool exit_seen_ = false;  // guarded by out_mu_ until the reader is joined
  Utf8Carry utf8_;
};

// ---------------------------------------------------------------- watch

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
    std::string text = absl::StrCat("termbridge > watching terminal ", terminal.terminal_id());
    if (!terminal.agent_id().empty()) absl::StrAppend(&text, " of agent ", terminal.agent_id());
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

// One terminal that watch follows: an Attach stream on its own thread.
class Follower {
 public:
  Follower(v1::TerminalOperator::Stub* stub, std::string terminal_id, WatchPrinter* printer)
      : thread_("tb-watch-follow", [this, stub, id = std::move(terminal_id), printer] {
          Run(stub, id, printer);
          ended_ = true;
        }) {}
  ~Follower() {
    context_.TryCancel();
    thread_.Join();
  }
  // The terminal's stream has ended: destroying this only joins the thread.
  bool ended() const { return ended_; }

 private:
  void Run(v1::TerminalOperator::Stub* stub, const std::string& terminal_id,
           WatchPrinter* printer) {
    std::unique_ptr<AttachStream> stream = stub->Attach(&context_);
    stream->Write(ResumeFrame(terminal_id, -1, "watch"));
    stream->WritesDone();  // the broker keeps streaming until the terminal exits
    v1::AttachServerFrame frame;
    while (stream->Read(&frame)) printer->Frame(terminal_id, frame);
    grpc::Status status = stream->Finish();
    if (!status.ok() && status.error_code() != grpc::StatusCode::CANCELLED) {
      printer->Problem(terminal_id, "stopped watching: " + status.error_message());
    }
  }

  grpc::ClientContext context_;  // declared before thread_: the thread uses it
  std::atomic<bool> ended_{false};
  thread::NamedThread thread_;
};

// `termbridge watch`: follows WatchTerminals on a thread and attaches to
// every running terminal, until a signal or the broker ends the stream.
class WatchSession {
 public:
  WatchSession(const CliOptions& options, std::ostream& out, std::ostream& err)
      : options_(options),
        err_(err),
        printer_(options.json, out),
        signals_({SIGINT, SIGTERM, SIGHUP}) {}

  int Run() {
    stub_ = Connect(options_);
    thread::NamedThread events("tb-watch-events", [this] { FollowEvents(); });
    thread::NamedThread approvals("tb-watch-approvals", [this] { FollowApprovals(); });
    int signo = WaitForEnd();
    context_.TryCancel();
    approvals_context_.TryCancel();
    events.Join();
    approvals.Join();
    {
      std::lock_guard<std::mutex> lock(mu_);
      followers_.clear();  // cancels and joins each
    }
    if (signo != 0) return 0;  // interrupted: the normal way to stop watching
    return status_.ok() ? 0 : Fail(status_, options_, err_);
  }

 private:
  // Returns the signal that stopped watch, or 0 when the event stream ended.
  int WaitForEnd() {
    for (;;) {
      pollfd fd = {signals_.fd(), POLLIN, 0};
      if (poll(&fd, 1, -1) < 0) continue;
      if (int signo = signals_.Take(); signo >= 0) return signo;
    }
  }

  void FollowEvents() {
    auto reader = stub_->WatchTerminals(&context_, v1::WatchTerminalsRequest());
    v1::TerminalEvent event;
    int open = 0;
    while (reader->Read(&event)) {
      if (event.kind() == "snapshot_done") {
        err_ << "termbridge > watching every terminal (" << open << " open); Ctrl-C stops"
             << std::endl;
      } else if (event.kind() == "opened" && Follow(event.terminal())) {
        ++open;
      }
    }
    status_ = reader->Finish();
    signals_.Wake();
  }

  // Every pending request and each new one, as a line (and a bell).
  void FollowApprovals() {
    auto reader = stub_->WatchApprovals(&approvals_context_, v1::ListApprovalsRequest());
    v1::ApprovalEvent event;
    while (reader->Read(&event)) {
      if (event.kind() == "requested") printer_.ApprovalRequested(event.approval(), options_.bell);
    }
    reader->Finish();  // its end is the event stream's business
  }

  // Attaches to a terminal not yet followed. Returns whether it is new.
  bool Follow(const v1::SessionInfo& terminal) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, follower] : followers_) {
      if (follower && follower->ended()) follower.reset();  // joins its thread
    }
    if (!followers_.emplace(terminal.terminal_id(), nullptr).second) return false;
    printer_.Opened(terminal);
    followers_[terminal.terminal_id()] =
        std::make_unique<Follower>(stub_.get(), terminal.terminal_id(), &printer_);
    return true;
  }

  const CliOptions& options_;
  std::ostream& err_;
  WatchPrinter printer_;
  SignalPipe signals_;
  std::unique_ptr<v1::TerminalOperator::Stub> stub_;
  grpc::ClientContext context_;
  grpc::ClientContext approvals_context_;
  grpc::Status status_;  // written by the events thread before it wakes the loop
  std::mutex mu_;
  // Every terminal followed so far (never followed twice); null once its
  // follower ended and was joined.
  std::map<std::string, std::unique_ptr<Follower>> followers_;
};

constexpr char kAttachUsage[] =
    "usage: termbridge attach [--offset N] [--detach-key KEY] [--command-key KEY] "
    "[--viewer attach|window] [--json] <terminal>\n"
    "keys: the detach key (Ctrl-]) detaches; the command key (Ctrl-\\) then k closes the "
    "terminal, d detaches, u / a / s set the lock to user_only / agent_only / shared, and "
    "the command key twice sends it";

}  // namespace

int Attach(const std::vector<std::string>& args, const CliOptions& options, std::ostream& out,
           std::ostream& err) {
  if (args.size() != 2) {
    err << kAttachUsage << "\n";
    return 2;
  }
  std::optional<int> detach = ParseKey(options.detach_key);
  std::optional<int> command = ParseKey(options.command_key);
  if (!detach || !command) {
    err << "termbridge: a key is ^X, ctrl-X, one character or none (got --detach-key '"
        << options.detach_key << "', --command-key '" << options.command_key << "')\n";
    return 2;
  }
  AttachSession session(args[1], options, KeyFilter(*detach, *command), out, err);
  return session.Run();
}

int Watch(const std::vector<std::string>& args, const CliOptions& options, std::ostream& out,
          std::ostream& err) {
  if (args.size() != 1) {
    err << "usage: termbridge watch [--json]\n";
    return 2;
  }
  WatchSession session(options, out, err);
  return session.Run();
}

}  // namespace termbridge::cli
