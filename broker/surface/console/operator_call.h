// One unary operator RPC in flight from the console, on gRPC's callback API
// with a deadline, so a slow broker never blocks the console's I/O thread.
// It is listed in the console's live set of calls (Stop cancels it and
// waits for it) and keeps itself alive until its completion has run.
#ifndef TERMBRIDGE_BROKER_SURFACE_CONSOLE_OPERATOR_CALL_H_
#define TERMBRIDGE_BROKER_SURFACE_CONSOLE_OPERATOR_CALL_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string_view>
#include <utility>

#include "broker/surface/console/console_context.h"

namespace termbridge::console {

inline constexpr auto kOperatorCallDeadline = std::chrono::seconds(10);

template <typename Request, typename Response>
class OperatorCall final : public Stoppable,
                           public std::enable_shared_from_this<OperatorCall<Request, Response>> {
 public:
  // Starts the RPC on the stub (stub->async()->Method(context, request,
  // response, done)).
  using Method = std::function<void(v1::TerminalOperator::Stub*, grpc::ClientContext*,
                                    const Request*, Response*, std::function<void(grpc::Status)>)>;
  // Runs once, on a gRPC thread (or the caller's, when the console is
  // stopping: UNAVAILABLE). `detail` is the serialized ErrorDetail or "".
  using Done = std::function<void(const grpc::Status& status, const Response& response,
                                  std::string_view detail)>;

  explicit OperatorCall(ConsoleContext* context, Request request = Request())
      : context_(context), request_(std::move(request)) {}

  void Start(const Method& method, Done done) {
    done_ = std::move(done);
    live_id_ = context_->calls.Add(this->weak_from_this());
    if (live_id_ == 0) {
      done_(grpc::Status(grpc::StatusCode::UNAVAILABLE, "console stopping"), response_, "");
      return;
    }
    client_context_.set_deadline(std::chrono::system_clock::now() + kOperatorCallDeadline);
    method(context_->stub.get(), &client_context_, &request_, &response_,
           [self = this->shared_from_this()](grpc::Status status) {
             self->done_(status, self->response_, ErrorDetailOf(self->client_context_));
             self->context_->calls.Remove(self->live_id_);
           });
  }

  void Shutdown() override { client_context_.TryCancel(); }

 private:
  ConsoleContext* const context_;
  const Request request_;
  Response response_;
  Done done_;
  grpc::ClientContext client_context_;
  uint64_t live_id_ = 0;
};

}  // namespace termbridge::console

#endif  // TERMBRIDGE_BROKER_SURFACE_CONSOLE_OPERATOR_CALL_H_
