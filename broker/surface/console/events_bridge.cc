// The console's events feed: two operator server streams onto one
// WebSocket (see events_bridge.h).
#include "broker/surface/console/events_bridge.h"

#include <functional>

#include "broker/surface/console/messages.h"
#include "spdlog/spdlog.h"

namespace termbridge::console {
namespace {

// One server-streaming operator call, read as fast as it arrives (events are
// small; the WebSocket's bounded queue protects against a stalled page).
// Holds itself alive from Start until OnDone.
template <typename Request, typename Event>
class EventStream final : public grpc::ClientReadReactor<Event>,
                          public Stoppable,
                          public std::enable_shared_from_this<EventStream<Request, Event>> {
 public:
  using Starter = std::function<void(v1::TerminalOperator::Stub*, grpc::ClientContext*,
                                     const Request*, grpc::ClientReadReactor<Event>*)>;
  using OnEvent = std::function<void(const Event&)>;
  using OnEnd = std::function<void(const grpc::Status&, std::string_view detail)>;

  EventStream(ConsoleContext* context, Request request, OnEvent on_event, OnEnd on_end)
      : context_(context),
        request_(std::move(request)),
        on_event_(std::move(on_event)),
        on_end_(std::move(on_end)) {}

  // Returns false (and calls nothing) when the console is stopping.
  bool Start(const Starter& starter) {
    live_id_ = context_->calls.Add(this->weak_from_this());
    if (live_id_ == 0) return false;
    self_ = this->shared_from_this();
    starter(context_->stub.get(), &client_context_, &request_, this);
    this->StartRead(&in_);
    this->StartCall();
    bool cancel = false;
    {
      absl::MutexLock lock(&mu_);
      started_ = true;
      cancel = cancel_requested_;
    }
    if (cancel) client_context_.TryCancel();
    return true;
  }

  void Shutdown() override {
    {
      absl::MutexLock lock(&mu_);
      if (!started_) {
        cancel_requested_ = true;  // Start cancels right after starting
        return;
      }
    }
    client_context_.TryCancel();
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;
    on_event_(in_);
    this->StartRead(&in_);
  }

  void OnDone(const grpc::Status& status) override {
    on_end_(status, ErrorDetailOf(client_context_));
    context_->calls.Remove(live_id_);
    auto keep = std::move(self_);  // may be the last reference
  }

 private:
  ConsoleContext* const context_;
  const Request request_;
  const OnEvent on_event_;
  const OnEnd on_end_;
  grpc::ClientContext client_context_;
  Event in_;
  std::shared_ptr<EventStream> self_;
  uint64_t live_id_ = 0;
  absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool cancel_requested_ ABSL_GUARDED_BY(mu_) = false;
};

using TerminalStream = EventStream<v1::WatchTerminalsRequest, v1::TerminalEvent>;
using ApprovalStream = EventStream<v1::ListApprovalsRequest, v1::ApprovalEvent>;

}  // namespace

EventsBridge::EventsBridge(ConsoleContext* context, std::weak_ptr<WsSession> ws)
    : context_(context), ws_(std::move(ws)) {}

void EventsBridge::OnOpen() {
  std::weak_ptr<WsSession> ws = ws_;
  std::weak_ptr<EventsBridge> weak_self = weak_from_this();
  auto ended = [weak_self](const char* name) {
    return [weak_self, name](const grpc::Status& status, std::string_view detail) {
      if (auto self = weak_self.lock()) self->StreamEnded(name, status, detail);
    };
  };
  auto terminals = std::make_shared<TerminalStream>(
      context_, v1::WatchTerminalsRequest(),
      [ws](const v1::TerminalEvent& event) {
        if (auto session = ws.lock()) session->SendText(Dump(TerminalEventJson(event)));
      },
      ended("terminals"));
  auto approvals = std::make_shared<ApprovalStream>(
      context_, v1::ListApprovalsRequest(),
      [ws](const v1::ApprovalEvent& event) {
        if (auto session = ws.lock()) session->SendText(Dump(ApprovalEventJson(event)));
      },
      ended("approvals"));
  terminals_ = terminals;
  approvals_ = approvals;
  bool ok = terminals->Start([](auto* stub, auto* context, auto* request, auto* reactor) {
    stub->async()->WatchTerminals(context, request, reactor);
  });
  ok = ok && approvals->Start([](auto* stub, auto* context, auto* request, auto* reactor) {
    stub->async()->WatchApprovals(context, request, reactor);
  });
  if (!ok) {
    terminals_->Shutdown();
    if (auto session = ws_.lock()) session->CloseAfterSend(true, "console stopping");
  }
}

void EventsBridge::OnClosed() {
  if (terminals_) terminals_->Shutdown();
  if (approvals_) approvals_->Shutdown();
}

void EventsBridge::StreamEnded(std::string_view stream, const grpc::Status& status,
                               std::string_view detail) {
  spdlog::info("event=console_events_end stream={} status={} message=\"{}\"", stream,
               static_cast<int>(status.error_code()), status.error_message());
  nlohmann::json end = StatusJson(status, detail);
  end["type"] = "end";
  end["stream"] = stream;
  auto session = ws_.lock();
  if (session) session->SendText(Dump(end));
  bool both = false;
  {
    absl::MutexLock lock(&mu_);
    both = ++ended_ == 2;
  }
  if (both && session) session->CloseAfterSend(!status.ok(), "events ended");
}

}  // namespace termbridge::console
