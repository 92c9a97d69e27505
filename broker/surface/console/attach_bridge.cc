// One console tab's live terminal: WebSocket <-> operator Attach stream,
// paced by the page's acks (see attach_bridge.h). Locks guard only the
// bridge's own state and are never held across a call into gRPC that can
// run a reaction (RemoveHold, TryCancel).
#include "broker/surface/console/attach_bridge.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace termbridge::console {

AttachBridge::AttachBridge(ConsoleContext* context, std::weak_ptr<WsSession> ws,
                           AttachTarget target)
    : context_(context), ws_(std::move(ws)), target_(std::move(target)) {}

void AttachBridge::OnOpen() {
  live_id_ = context_->calls.Add(weak_from_this());
  if (live_id_ == 0) {
    if (auto ws = ws_.lock()) ws->CloseAfterSend(true, "console stopping");
    return;
  }
  v1::AttachClientFrame resume;
  resume.mutable_resume()->set_terminal_id(target_.terminal_id);
  resume.mutable_resume()->set_offset(target_.offset);
  resume.mutable_resume()->set_from_start(target_.from_start);
  resume.mutable_resume()->set_viewer("console");
  const v1::AttachClientFrame* first = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) {  // Stop came first
      context_->calls.Remove(live_id_);
      return;
    }
    self_ = shared_from_this();
    // Binding creates the call without running reactions; the hold is taken
    // before any other thread can see started_ and release it.
    context_->stub->async()->Attach(&client_context_, this);
    AddHold();  // write_hold_
    started_ = true;
    write_hold_ = true;
    writing_ = true;
    writes_.push_back(std::move(resume));
    first = &writes_.front();
  }
  StartWrite(first);
  StartRead(&in_);
  StartCall();
  spdlog::info("event=console_attach terminal_id={} offset={} from_start={}", target_.terminal_id,
               target_.offset, target_.from_start);
}

void AttachBridge::OnText(std::string_view text) {
  absl::StatusOr<PageMessage> message = ParsePageMessage(text);
  if (!message.ok()) {
    SendToPage(Dump({{"type", "error"}, {"message", std::string(message.status().message())}}));
    return;
  }
  v1::AttachClientFrame frame;
  switch (message->kind) {
    case PageMessage::Kind::kAck: {
      absl::Status error;
      bool resume = false;
      {
        absl::MutexLock lock(&mu_);
        resume = flow_.OnAck(message->bytes, &error) && pause_hold_ && !cancelled_;
        if (resume) pause_hold_ = false;
      }
      if (!error.ok())
        spdlog::debug("event=console_bad_ack error=\"{}\"", std::string(error.message()));
      if (resume) {
        StartRead(&in_);
        RemoveHold();  // pause_hold_: the read now keeps the call alive
      }
      return;
    }
    case PageMessage::Kind::kResize:
      frame.mutable_resize()->set_cols(message->cols);
      frame.mutable_resize()->set_rows(message->rows);
      break;
    case PageMessage::Kind::kSignal:
      frame.set_signal(message->signal);
      break;
  }
  QueueWrite(std::move(frame));
}

void AttachBridge::OnBinary(std::string_view data) {
  // A paste goes in whole or not at all: dropping chunks from its middle
  // would type something nobody wrote.
  const size_t chunks = (data.size() + kInputChunkBytes - 1) / kInputChunkBytes;
  size_t room = 0;
  {
    absl::MutexLock lock(&mu_);
    room = kMaxQueuedFrames - std::min(kMaxQueuedFrames, writes_.size());
  }
  if (chunks > room) {
    spdlog::warn("event=console_input_refused terminal_id={} bytes={} reason=queue_full",
                 target_.terminal_id, data.size());
    SendToPage(Dump({{"type", "error"},
                     {"message", absl::StrCat("input of ", data.size(),
                                              " bytes refused: the program has not read ",
                                              "what was typed before; nothing of it was sent")}}));
    return;
  }
  for (size_t at = 0; at < data.size(); at += kInputChunkBytes) {
    v1::AttachClientFrame frame;
    frame.set_input(std::string(data.substr(at, kInputChunkBytes)));
    QueueWrite(std::move(frame));
  }
}

void AttachBridge::OnClosed() { Cancel(); }

void AttachBridge::Shutdown() { Cancel(); }

void AttachBridge::Cancel() {
  bool started = false;
  bool release_write = false;
  bool release_pause = false;
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return;
    cancelled_ = true;
    started = started_;
    release_write = write_hold_;
    release_pause = pause_hold_;
    write_hold_ = pause_hold_ = false;
  }
  if (!started) return;
  client_context_.TryCancel();
  if (release_pause) RemoveHold();
  if (release_write) RemoveHold();
}

void AttachBridge::QueueWrite(v1::AttachClientFrame frame) {
  const v1::AttachClientFrame* start = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (!write_hold_ || cancelled_) return;  // the stream is ending
    if (writes_.size() >= kMaxQueuedFrames) {
      spdlog::warn("event=console_input_dropped terminal_id={} reason=queue_full",
                   target_.terminal_id);
      return;
    }
    writes_.push_back(std::move(frame));
    if (!writing_) {
      writing_ = true;
      start = &writes_.back();
    }
  }
  if (start) StartWrite(start);
}

void AttachBridge::OnWriteDone(bool ok) {
  const v1::AttachClientFrame* next = nullptr;
  bool release = false;
  {
    absl::MutexLock lock(&mu_);
    writes_.pop_front();
    writing_ = false;
    if (!ok || !write_hold_) {
      writes_.clear();
      release = write_hold_;
      write_hold_ = false;
    } else if (!writes_.empty()) {
      writing_ = true;
      next = &writes_.front();
    }
  }
  if (next) StartWrite(next);
  if (release) RemoveHold();
}

void AttachBridge::OnReadDone(bool ok) {
  if (!ok) {  // the broker ended the stream; OnDone brings the status
    bool release = false;
    {
      absl::MutexLock lock(&mu_);
      release = write_hold_;  // a write in flight keeps the call alive by itself
      write_hold_ = false;
    }
    if (release) RemoveHold();
    return;
  }
  uint64_t bytes = 0;
  if (auto ws = ws_.lock()) {
    if (in_.has_output()) {
      bytes = in_.output().data().size();
      ws->SendBinary(EncodeOutputFrame(in_.output().offset(), in_.output().data()));
    } else if (std::string text = AttachFrameText(in_); !text.empty()) {
      ws->SendText(std::move(text));
    }
  }
  bool read_next = false;
  {
    absl::MutexLock lock(&mu_);
    bool open = flow_.AfterChunk(bytes);
    if (cancelled_) {
      // Neither read nor hold: OnDone follows the cancellation.
    } else if (open) {
      read_next = true;
    } else {
      pause_hold_ = true;
      AddHold();  // inside a reaction, so OnDone cannot have run
    }
  }
  if (read_next) StartRead(&in_);
}

void AttachBridge::OnDone(const grpc::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
  }
  std::string detail = ErrorDetailOf(client_context_);
  spdlog::info("event=console_attach_end terminal_id={} status={} message=\"{}\"",
               target_.terminal_id, static_cast<int>(status.error_code()), status.error_message());
  if (auto ws = ws_.lock()) {
    nlohmann::json end = StatusJson(status, detail);
    end["type"] = "end";
    ws->SendText(Dump(end));
    ws->CloseAfterSend(!status.ok(), status.ok() ? "terminal ended" : "attach failed");
  }
  context_->calls.Remove(live_id_);
  std::shared_ptr<AttachBridge> keep = std::move(self_);  // may be the last reference
}

void AttachBridge::SendToPage(std::string text) {
  if (auto ws = ws_.lock()) ws->SendText(std::move(text));
}

}  // namespace termbridge::console
