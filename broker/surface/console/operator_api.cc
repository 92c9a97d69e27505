// Unary operator RPCs behind the console's JSON API (see operator_api.h).
// Each call runs on gRPC's callback API with a deadline, so a slow broker
// never blocks the console's I/O thread.
#include "broker/surface/console/operator_api.h"

#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "absl/time/clock.h"
#include "broker/surface/console/history_api.h"
#include "broker/surface/console/messages.h"
#include "broker/surface/console/operator_call.h"
#include "broker/surface/console/recording_api.h"
#include "spdlog/spdlog.h"

namespace termbridge::console {
namespace {

using nlohmann::json;
using Stub = v1::TerminalOperator::Stub;

std::string ErrorBody(const json& status) { return Dump({{"error", status}}); }

// One unary call whose answer becomes the reply: `to_json` of the response,
// or the error with the HTTP status matching its code.
template <typename Request, typename Response>
void Call(ConsoleContext* context, Request request,
          typename OperatorCall<Request, Response>::Method method, json (*to_json)(const Response&),
          ApiReply reply) {
  auto call = std::make_shared<OperatorCall<Request, Response>>(context, std::move(request));
  call->Start(method,
              [to_json, reply = std::move(reply)](
                  const grpc::Status& status, const Response& response, std::string_view detail) {
                if (status.ok()) {
                  reply(200, Dump(to_json(response)));
                  return;
                }
                spdlog::info("event=console_api_failed status={} message=\"{}\"",
                             static_cast<int>(status.error_code()), status.error_message());
                reply(HttpStatusFor(status.error_code()), ErrorBody(StatusJson(status, detail)));
              });
}

json RecordingsJson(const v1::ListRecordingsResponse& response) {
  json list = json::array();
  for (const v1::RecordingInfo& r : response.recordings()) {
    list.push_back({{"terminal_id", r.terminal_id()},
                    {"agent_id", r.agent_id()},
                    {"cwd", r.cwd()},
                    {"state", r.state()},
                    {"opened_at_unix_ms", r.opened_at_unix_ms()},
                    {"finished_at_unix_ms", r.finished_at_unix_ms()},
                    {"exit_code", r.exit_code()},
                    {"signal", r.signal()},
                    {"end_offset", r.end_offset()},
                    {"stored_bytes", r.stored_bytes()}});
  }
  return {{"recordings", std::move(list)}, {"total_bytes", response.total_bytes()}};
}

json SessionsJson(const v1::ListResponse& response) {
  json sessions = json::array();
  for (const auto& info : response.sessions()) sessions.push_back(SessionInfoJson(info));
  json terminals = json::array();
  for (const auto& info : response.terminals()) terminals.push_back(SessionInfoJson(info));
  // The page shows paths under the person's home as ~/... (the broker runs
  // as that person).
  const char* home = std::getenv("HOME");
  return {{"sessions", std::move(sessions)},
          {"terminals", std::move(terminals)},
          {"home", home != nullptr ? home : ""}};
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

json LockJson(const v1::SetLockResponse& response) { return {{"mode", response.mode()}}; }

json OpenedJson(const v1::OpenTerminalResponse& response) {
  return {{"terminal", SessionInfoJson(response.terminal())}};
}

json ChangedJson(const v1::TerminalChangeResponse& response) {
  return {{"terminal", SessionInfoJson(response.terminal())}};
}

// Agents a person can hand a terminal to: not revoked ones.
json AgentsJson(const v1::ListAgentsResponse& response) {
  json agents = json::array();
  for (const v1::AgentInfo& a : response.agents()) {
    if (a.revoked()) continue;
    agents.push_back({{"name", a.name()},
                      {"source", a.source()},
                      {"last_seen_unix_ms", a.last_seen_unix_ms()},
                      {"open_calls", a.open_calls()}});
  }
  return {{"agents", std::move(agents)}};
}

json GrantsJson(const v1::ListGrantsResponse& response) {
  json grants = json::array();
  for (const v1::Grant& g : response.grants()) {
    grants.push_back({{"kind", g.kind()},
                      {"command", g.command()},
                      {"terminal_id", g.terminal_id()},
                      {"agent_id", g.agent_id()},
                      {"granted_by", g.granted_by()},
                      {"surface", g.surface()},
                      {"granted_at_unix_ms", g.granted_at_unix_ms()},
                      {"expires_at_unix_ms", g.expires_at_unix_ms()},
                      {"rule_id", g.rule_id()}});
  }
  return {{"grants", std::move(grants)}};
}

void BadRequest(const absl::Status& status, const ApiReply& reply) {
  reply(400,
        ErrorBody({{"status", "INVALID_ARGUMENT"}, {"message", std::string(status.message())}}));
}

}  // namespace

bool IsApiRoute(std::string_view method, std::string_view path) {
  if (method == "GET") {
    return path == "/api/terminals" || path == "/api/approvals" || path == "/api/policy" ||
           path == "/api/recordings" || path == "/api/agents" || path == "/api/grants" ||
           IsRecordingPath(path) || IsHistoryPath(path);
  }
  if (method == "POST") {
    return path == "/api/approvals/decide" || path == "/api/terminals/close" ||
           path == "/api/terminals/lock" || path == "/api/terminals/open" ||
           path == "/api/terminals/rename" || path == "/api/terminals/hand";
  }
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
  } else if (method == "GET" && path == "/api/recordings") {
    Call<v1::ListRecordingsRequest, v1::ListRecordingsResponse>(
        context, v1::ListRecordingsRequest(),
        [](Stub* stub, auto* c, auto* req, auto* resp, auto done) {
          stub->async()->ListRecordings(c, req, resp, std::move(done));
        },
        &RecordingsJson, std::move(reply));
  } else if (method == "GET" && IsRecordingPath(path)) {
    HandleRecording(context, path, query, std::move(reply));
  } else if (method == "GET" && path == "/api/agents") {
    Call<v1::ListAgentsRequest, v1::ListAgentsResponse>(
        context, v1::ListAgentsRequest(),
        [](Stub* stub, auto* c, auto* req, auto* resp, auto done) {
          stub->async()->ListAgents(c, req, resp, std::move(done));
        },
        &AgentsJson, std::move(reply));
  } else if (method == "GET" && path == "/api/grants") {
    Call<v1::ListGrantsRequest, v1::ListGrantsResponse>(
        context, v1::ListGrantsRequest(),
        [](Stub* stub, auto* c, auto* req, auto* resp, auto done) {
          stub->async()->ListGrants(c, req, resp, std::move(done));
        },
        &GrantsJson, std::move(reply));
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
  } else if (method == "POST" && path == "/api/terminals/lock") {
    absl::StatusOr<v1::SetLockRequest> request = ParseSetLock(body);
    if (!request.ok()) return BadRequest(request.status(), reply);
    spdlog::info("event=console_lock terminal_id={} mode={}", request->terminal_id(),
                 request->mode());
    Call<v1::SetLockRequest, v1::SetLockResponse>(
        context, *std::move(request),
        [](Stub* stub, auto* c, auto* req, auto* resp, auto done) {
          stub->async()->SetLock(c, req, resp, std::move(done));
        },
        &LockJson, std::move(reply));
  } else if (method == "POST" && path == "/api/terminals/open") {
    absl::StatusOr<v1::OpenTerminalRequest> request = ParseOpenTerminal(body);
    if (!request.ok()) return BadRequest(request.status(), reply);
    spdlog::info("event=console_open_terminal cwd=\"{}\"", request->cwd());
    Call<v1::OpenTerminalRequest, v1::OpenTerminalResponse>(
        context, *std::move(request),
        [](Stub* stub, auto* c, auto* req, auto* resp, auto done) {
          stub->async()->OpenTerminal(c, req, resp, std::move(done));
        },
        &OpenedJson, std::move(reply));
  } else if (method == "POST" && path == "/api/terminals/rename") {
    absl::StatusOr<v1::RenameTerminalRequest> request = ParseRenameTerminal(body);
    if (!request.ok()) return BadRequest(request.status(), reply);
    spdlog::info("event=console_rename terminal_id={}", request->terminal_id());
    Call<v1::RenameTerminalRequest, v1::TerminalChangeResponse>(
        context, *std::move(request),
        [](Stub* stub, auto* c, auto* req, auto* resp, auto done) {
          stub->async()->RenameTerminal(c, req, resp, std::move(done));
        },
        &ChangedJson, std::move(reply));
  } else if (method == "POST" && path == "/api/terminals/hand") {
    absl::StatusOr<v1::HandOverTerminalRequest> request = ParseHandOver(body);
    if (!request.ok()) return BadRequest(request.status(), reply);
    spdlog::info("event=console_hand terminal_id={} agent_id=\"{}\"", request->terminal_id(),
                 request->agent_id());
    Call<v1::HandOverTerminalRequest, v1::TerminalChangeResponse>(
        context, *std::move(request),
        [](Stub* stub, auto* c, auto* req, auto* resp, auto done) {
          stub->async()->HandOverTerminal(c, req, resp, std::move(done));
        },
        &ChangedJson, std::move(reply));
  } else if (method == "GET" && IsHistoryPath(path)) {
    absl::StatusOr<HistoryRequest> request = ParseHistoryRequest(path, query, absl::Now());
    if (!request.ok()) return BadRequest(request.status(), reply);
    HandleHistory(context, *std::move(request), std::move(reply));
  } else {
    reply(404, ErrorBody({{"status", "NOT_FOUND"}, {"message", "no such API route"}}));
  }
}

}  // namespace termbridge::console
