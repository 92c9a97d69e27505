// Unary operator RPCs behind the console's JSON API (see operator_api.h).
// Each call runs on gRPC's callback API with a deadline, so a slow broker
// never blocks the console's I/O thread.
#include "broker/surface/console/operator_api.h"

#include <chrono>

#include "broker/surface/console/messages.h"
#include "spdlog/spdlog.h"

namespace termbridge::console {
namespace {

using nlohmann::json;
using Stub = v1::TerminalOperator::Stub;

constexpr auto kCallDeadline = std::chrono::seconds(10);

std::string ErrorBody(const json& status) { return Dump({{"error", status}}); }

// One unary call in flight; Stop cancels it through the live set.
template <typename Request, typename Response>
class UnaryCall final : public Stoppable,
                        public std::enable_shared_from_this<UnaryCall<Request, Response>> {
 public:
  using Method = void (*)(Stub*, grpc::ClientContext*, const Request*, Response*,
                          std::function<void(grpc::Status)>);
  using ToJson = json (*)(const Response&);

  UnaryCall(ConsoleContext* context, Request request, ToJson to_json, ApiReply reply)
      : context_(context),
        request_(std::move(request)),
        to_json_(to_json),
        reply_(std::move(reply)) {}

  void Start(Method method) {
    live_id_ = context_->calls.Add(this->weak_from_this());
    if (live_id_ == 0) {
      reply_(503, ErrorBody({{"status", "UNAVAILABLE"}, {"message", "console stopping"}}));
      return;
    }
    client_context_.set_deadline(std::chrono::system_clock::now() + kCallDeadline);
    method(context_->stub.get(), &client_context_, &request_, &response_,
           [self = this->shared_from_this()](grpc::Status status) { self->Done(status); });
  }

  void Shutdown() override { client_context_.TryCancel(); }

 private:
  void Done(const grpc::Status& status) {
    if (status.ok()) {
      reply_(200, Dump(to_json_(response_)));
    } else {
      spdlog::info("event=console_api_failed status={} message=\"{}\"",
                   static_cast<int>(status.error_code()), status.error_message());
      reply_(HttpStatusFor(status.error_code()),
             ErrorBody(StatusJson(status, ErrorDetailOf(client_context_))));
    }
    context_->calls.Remove(live_id_);
  }

  ConsoleContext* const context_;
  const Request request_;
  Response response_;
  const ToJson to_json_;
  const ApiReply reply_;
  grpc::ClientContext client_context_;
  uint64_t live_id_ = 0;
};

template <typename Request, typename Response>
void Call(ConsoleContext* context, Request request,
          typename UnaryCall<Request, Response>::Method method,
          typename UnaryCall<Request, Response>::ToJson to_json, ApiReply reply) {
  auto call = std::make_shared<UnaryCall<Request, Response>>(context, std::move(request), to_json,
                                                             std::move(reply));
  call->Start(method);
}

json SessionsJson(const v1::ListResponse& response) {
  json sessions = json::array();
  for (const auto& info : response.sessions()) sessions.push_back(SessionInfoJson(info));
  return {{"sessions", std::move(sessions)}};
}

json ApprovalsJson(const v1::ListApprovalsResponse& response) {
  json approvals = json::array();
  for (const auto& approval : response.approvals()) approvals.push_back(ApprovalJson(approval));
  return {{"approvals", std::move(approvals)}};
}

json PolicyJson(const v1::GetPolicyResponse& response) {
  json policy = json::parse(response.policy_json(), nullptr, /*allow_exceptions=*/false);
  if (policy.is_discarded()) policy = response.policy_json();
  return {{"path", response.path()},
          {"policy", std::move(policy)},
          {"generation", response.generation()},
          {"last_error", response.last_error()}};
}

json DecisionJson(const v1::DecideApprovalResponse& response) {
  return {{"approval", ApprovalJson(response.approval())}};
}

json CloseJson(const v1::CloseTerminalResponse& response) {
  return {{"exit", ExitJson(response.exit())}};
}

void BadRequest(const absl::Status& status, const ApiReply& reply) {
  reply(400,
        ErrorBody({{"status", "INVALID_ARGUMENT"}, {"message", std::string(status.message())}}));
}

}  // namespace

bool IsApiRoute(std::string_view method, std::string_view path) {
  if (method == "GET") {
    return path == "/api/terminals" || path == "/api/approvals" || path == "/api/policy";
  }
  if (method == "POST") return path == "/api/approvals/decide" || path == "/api/terminals/close";
  return false;
}

void HandleApi(ConsoleContext* context, std::string_view method, std::string_view path,
               std::string_view query, std::string_view body, ApiReply reply) {
  if (method == "GET" && path == "/api/terminals") {
    Call<v1::ListRequest, v1::ListResponse>(
        context, v1::ListRequest(),
        [](Stub* stub, auto* c, auto* req, auto* resp, auto done) {
          stub->async()->ListAll(c, req, resp, std::move(done));
        },
        &SessionsJson, std::move(reply));
  } else if (method == "GET" && path == "/api/approvals") {
    v1::ListApprovalsRequest request;
    request.set_include_decided(QueryParam(query, "decided").value_or("") == "1");
    Call<v1::ListApprovalsRequest, v1::ListApprovalsResponse>(
        context, std::move(request),
        [](Stub* stub, auto* c, auto* req, auto* resp, auto done) {
          stub->async()->ListApprovals(c, req, resp, std::move(done));
        },
        &ApprovalsJson, std::move(reply));
  } else if (method == "GET" && path == "/api/policy") {
    Call<v1::GetPolicyRequest, v1::GetPolicyResponse>(
        context, v1::GetPolicyRequest(),
        [](Stub* stub, auto* c, auto* req, auto* resp, auto done) {
          stub->async()->GetPolicy(c, req, resp, std::move(done));
        },
        &PolicyJson, std::move(reply));
  } else if (method == "POST" && path == "/api/approvals/decide") {
    absl::StatusOr<v1::DecideApprovalRequest> request = ParseDecision(body);
    if (!request.ok()) return BadRequest(request.status(), reply);
    spdlog::info("event=console_decide approval_id={} decision={}", request->approval_id(),
                 request->decision());
    Call<v1::DecideApprovalRequest, v1::DecideApprovalResponse>(
        context, *std::move(request),
        [](Stub* stub, auto* c, auto* req, auto* resp, auto done) {
          stub->async()->DecideApproval(c, req, resp, std::move(done));
        },
        &DecisionJson, std::move(reply));
  } else if (method == "POST" && path == "/api/terminals/close") {
    absl::StatusOr<v1::CloseTerminalRequest> request = ParseCloseTerminal(body);
    if (!request.ok()) return BadRequest(request.status(), reply);
    spdlog::info("event=console_close terminal_id={}", request->terminal_id());
    Call<v1::CloseTerminalRequest, v1::CloseTerminalResponse>(
        context, *std::move(request),
        [](Stub* stub, auto* c, auto* req, auto* resp, auto done) {
          stub->async()->CloseTerminal(c, req, resp, std::move(done));
        },
        &CloseJson, std::move(reply));
  } else {
    reply(404, ErrorBody({{"status", "NOT_FOUND"}, {"message", "no such API route"}}));
  }
}

}  // namespace termbridge::console
