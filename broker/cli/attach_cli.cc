// termbridge attach <terminal>: a person watching one terminal over the
// operator socket, as an operator Attach stream, so the broker counts it as
// a viewer and lets commands run in that terminal. It mirrors the terminal
// into the person's own terminal (raw mode, resizes, typing, a detach key, a
// key that closes the terminal). It works without a TTY (pipes, tests): then
// nothing is put in raw mode and stdin is sent as it comes. When the broker
// goes away it redials (reconnect.h) and resumes at the offset it had
// reached, unless --reconnect=false.
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <memory>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "broker/cli/attach_frames.h"
#include "broker/cli/attach_keys.h"
#include "broker/cli/cli_common.h"
#include "broker/cli/output_text.h"
#include "broker/cli/reconnect.h"
#include "broker/cli/terminal_io.h"
#include "common/text/utf8.h"
#include "common/thread/named_thread.h"

namespace termbridge::cli {
namespace {

// ---------------------------------------------------------------- attach

constexpr int kAttachSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGTSTP, SIGCONT};
constexpr size_t kMaxTitleBytes = 200;

// One `termbridge attach`: a reader thread holds the Attach stream (and, when
// the broker goes away, redials and resumes from the offset it had reached)
// while the calling thread polls stdin and the signal pipe and sends client
// frames.
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
        raw_(STDIN_FILENO),
        cursor_(options.offset),
        title_(!options.json && isatty(STDOUT_FILENO) == 1) {}

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
    }
    thread::NamedThread reader("tb-attach-read", [this] { Follow(); });
    thread::NamedThread info("tb-attach-info", [this] { FollowInfo(); });
    int signo = Loop();
    Stop();
    reader.Join();
    info.Join();
    if (titled_) {
      std::lock_guard<std::mutex> lock(out_mu_);
      out_ << "\x1b[23;2t" << std::flush;  // the window's own title back
    }
    raw_.Restore();
    return Outcome(signo);
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
        bool interrupted = false;
        KeyAction action = ForwardStdin(&stdin_open, &interrupted);
        if (interrupted) return SIGINT;
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

  // Reads what the person typed (or what a pipe holds) and sends it as
  // input. While the broker is away the input goes nowhere, and Ctrl-C
  // (a byte in raw mode) sets `interrupted`: there is no program to take it.
  KeyAction ForwardStdin(bool* stdin_open, bool* interrupted) {
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
      if (!Connected()) {
        *interrupted = raw_.active() && input.find('\x03') != std::string::npos;
        if (!*interrupted && !told_dropped_) Notice("not connected to the broker: typing dropped");
        told_dropped_ = true;
        return action;
      }
      told_dropped_ = false;
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
    grpc::Status status = CurrentStub()->CloseTerminal(&context, request, &response);
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
    grpc::Status status = CurrentStub()->SetLock(&context, request, &response);
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

  // Writes to the current stream; nothing while there is none. Holding mu_
  // keeps the reader from finishing the stream during the write.
  void Send(const v1::AttachClientFrame& frame) {
    absl::MutexLock lock(&mu_);
    if (stream_ == nullptr || write_failed_) return;
    write_failed_ = !stream_->Write(frame);  // the reader sees why
  }

  bool Connected() {
    absl::MutexLock lock(&mu_);
    return stream_ != nullptr && !write_failed_;
  }

  std::shared_ptr<v1::TerminalOperator::Stub> CurrentStub() {
    absl::MutexLock lock(&mu_);
    return stub_;
  }

  // Ends the reader: no new attempt, the stream in flight cancelled.
  void Stop() {
    stop_.Notify();
    absl::MutexLock lock(&mu_);
    if (context_) context_->TryCancel();
    if (info_context_) info_context_->TryCancel();
  }

  // The terminal's name, holder, state, lock, last exit code and cwd
  // (WatchTerminals, again after the broker comes back): said once when
  // attached, then kept in the window's title (on a TTY: the native window
  // runs attach; the title before is restored at the end); with --json, a
  // "terminal" line at each change.
  void FollowInfo() {
    ReconnectBackoff backoff;
    while (!stop_.HasBeenNotified()) {
      std::shared_ptr<v1::TerminalOperator::Stub> stub;
      grpc::ClientContext* context = nullptr;
      {
        absl::MutexLock lock(&mu_);
        stub = stub_;
        info_context_ = std::make_unique<grpc::ClientContext>();
        context = info_context_.get();
        if (stop_.HasBeenNotified()) context->TryCancel();
      }
      auto reader = stub->WatchTerminals(context, v1::WatchTerminalsRequest());
      v1::TerminalEvent event;
      while (reader->Read(&event)) {
        const v1::SessionInfo& t = event.terminal();
        if (t.terminal_id() != terminal_id_ || !t.session_id().empty()) continue;
        if (event.kind() == "closed") continue;  // the attach stream says how it ended
        ShowInfo(t);
        backoff.Reset();
      }
      reader->Finish();
      if (stop_.WaitForNotificationWithTimeout(backoff.Next())) break;
    }
  }

  void ShowInfo(const v1::SessionInfo& t) {
    const std::string line = TerminalStatusLine(t);
    std::lock_guard<std::mutex> lock(out_mu_);
    if (line == shown_line_) return;
    const bool first = shown_line_.empty();
    shown_line_ = line;
    if (options_.json) {
      out_ << Dump({{"type", "terminal"},
                    {"terminal_id", terminal_id_},
                    {"terminal", SessionJson(t)}})
           << "\n";
    } else {
      if (first) NoticeLocked(absl::StrCat("terminal ", line));
      if (title_) {
        if (!titled_) out_ << "\x1b[22;2t";  // keeps the window's title (xterm's title stack)
        titled_ = true;
        // Agent text in `line` is made visible: no control byte ends the
        // title early. The id last, always whole.
        out_ << "\x1b]2;termbridge: "
             << text::CutAtCharBoundary(line, kMaxTitleBytes - terminal_id_.size()) << " | "
             << terminal_id_ << "\a";
      }
    }
    out_.flush();
  }

  // The reader thread: one stream after another until the terminal exits,
  // the broker refuses, the attach stops, or (without --reconnect) the
  // broker goes away. Then wakes the loop.
  void Follow() {
    ReconnectBackoff backoff;
    bool reconnected = false;
    for (;;) {
      bool got_frames = false;
      grpc::Status status = StreamOnce(&got_frames);
      if (stop_.HasBeenNotified() || ExitSeen()) break;
      if (!options_.reconnect || !BrokerWentAway(status)) {
        // After a broker restart the terminal is not there: it ended with
        // the broker that ran it (docs/operating.md, "Viewers reconnect").
        gone_ = reconnected && status.error_code() == grpc::StatusCode::NOT_FOUND;
        end_status_ = status;
        break;
      }
      if (got_frames) backoff.Reset();
      Notice(absl::StrCat(kBrokerGoneText, " (Ctrl-C stops)"));
      if (!Redial(&backoff)) break;
      reconnected = true;
      Notice(cursor_ < 0 ? std::string("reconnected")
                         : absl::StrCat("reconnected; resuming at byte ", cursor_));
    }
    signals_.Wake();
  }

  // Dials until the broker answers. False once the attach stops.
  bool Redial(ReconnectBackoff* backoff) {
    for (;;) {
      if (stop_.WaitForNotificationWithTimeout(backoff->Next())) return false;
      absl::StatusOr<std::shared_ptr<v1::TerminalOperator::Stub>> stub =
          DialOperator(options_, ReconnectBackoff::kMax, stop_);
      if (stub.ok()) {
        absl::MutexLock lock(&mu_);
        stub_ = *std::move(stub);
        return true;
      }
      if (stop_.HasBeenNotified()) return false;
    }
  }

  // One Attach stream from cursor_: resume, window size, every frame
  // printed. Returns how it ended.
  grpc::Status StreamOnce(bool* got_frames) {
    AttachStream* stream = nullptr;
    {
      absl::MutexLock lock(&mu_);
      context_ = std::make_unique<grpc::ClientContext>();
      if (stop_.HasBeenNotified()) context_->TryCancel();
      stream_ = stub_->Attach(context_.get());
      stream = stream_.get();
      write_failed_ = false;
    }
    Send(ResumeFrame(terminal_id_, cursor_, options_.viewer.empty() ? "attach" : options_.viewer));
    SendWindowSize();
    v1::AttachServerFrame frame;
    while (stream->Read(&frame)) {
      *got_frames = true;
      cursor_ = CursorAfter(frame, cursor_);
      Print(frame);
    }
    absl::MutexLock lock(&mu_);
    grpc::Status status = stream_->Finish();
    stream_.reset();
    return status;
  }

  bool ExitSeen() {
    std::lock_guard<std::mutex> lock(out_mu_);
    return exit_seen_;
  }

  void Print(const v1::AttachServerFrame& frame) {
    std::lock_guard<std::mutex> lock(out_mu_);
    if (frame.has_exited()) exit_seen_ = true;
    if (options_.json) {
      PrintJson(frame);
    } else if (frame.has_output()) {
      // While attach keeps the title, the output does not set it.
      out_ << (title_ ? guard_.Add(frame.output().data()) : frame.output().data());
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

  // After the reader is joined.
  int Outcome(int signo) {
    if (signo == kStreamEnded || exit_seen_) {
      if (gone_) {
        err_ << "termbridge: terminal " << terminal_id_
             << " is gone: the broker restarted, and terminals end with the broker that ran "
                "them; its recording: termbridge replay "
             << terminal_id_ << "\n";
        return 1;
      }
      if (!end_status_.ok() && !exit_seen_) return Fail(end_status_, options_, err_);
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
  bool told_dropped_ = false;  // the main thread's: typing dropped was said in this outage
  absl::Notification stop_;    // the attach ends: no more attempts
  absl::Mutex mu_;
  std::shared_ptr<v1::TerminalOperator::Stub> stub_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<grpc::ClientContext> context_ ABSL_GUARDED_BY(mu_);  // of stream_
  std::unique_ptr<grpc::ClientContext> info_context_
      ABSL_GUARDED_BY(mu_);                                    // of FollowInfo's stream
  std::unique_ptr<AttachStream> stream_ ABSL_GUARDED_BY(mu_);  // null between attempts
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;
  // The reader thread's alone until it is joined: where the next attempt
  // resumes (the offset after the last byte received; -1: replay the ring),
  // and how the last one ended.
  int64_t cursor_;
  grpc::Status end_status_;
  bool gone_ = false;
  std::mutex out_mu_;
  bool exit_seen_ = false;  // guarded by out_mu_ until the reader is joined
  const bool title_;        // stdout is a TTY (and not --json): the info goes in its title
  // Guarded by out_mu_ until the info thread is joined: the last line shown,
  // and whether a title was set (and the window's own is to be restored).
  std::string shown_line_;
  bool titled_ = false;
  OutputGuard guard_;  // out_mu_'s: what would act on the person's terminal dropped (title_ only)
  Utf8Carry utf8_;
};

constexpr char kAttachUsage[] =
    "usage: termbridge attach [--offset N] [--detach-key KEY] [--command-key KEY] "
    "[--viewer attach|window] [--reconnect=false] [--json] <terminal>\n"
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

}  // namespace termbridge::cli
