// Canonical request routing for termbridge-agent.
#include "agent/lane/router.h"

#include <algorithm>

#include "common/contract/errors.h"
#include "common/contract/response.h"
#include "spdlog/spdlog.h"

namespace termbridge::lane {
namespace {

using contract::Action;
using contract::ErrorCode;
using contract::MakeError;

void SetCorrelation(const contract::CanonicalRequest& request, v1::Correlation* out) {
  out->set_request_id(request.correlation.request_id);
  out->set_trace_id(request.correlation.trace_id);
  out->set_client_request_id(request.correlation.client_request_id);
}

v1::OutputFormat FormatOf(const contract::CanonicalRequest& request) {
  if (request.output_format == "raw") return v1::OUTPUT_FORMAT_RAW;
  if (request.output_format == "screen") return v1::OUTPUT_FORMAT_SCREEN;
  return v1::OUTPUT_FORMAT_CLEAN;
}

nlohmann::json ExitJson(const v1::ExitInfo& exit, nlohmann::json result) {
  result["running"] = exit.running();
  result["exit_code"] = exit.has_exit_code() ? nlohmann::json(exit.exit_code()) : nullptr;
  result["signal"] = exit.has_signal() ? nlohmann::json(exit.signal()) : nullptr;
  if (!exit.running() && exit.exited_at_unix_ms() > 0) {
    result["exited_at_unix_ms"] = exit.exited_at_unix_ms();
  }
  if (!exit.closed_reason().empty()) result["closed_reason"] = exit.closed_reason();
  if (!exit.completion().empty()) result["completion"] = exit.completion();
  return result;
}

nlohmann::json OutputJson(const v1::Output& output, nlohmann::json result) {
  result["stdout"] = output.text();
  result["stderr"] = "";  // a PTY merges both streams into stdout
  result["cursor"] = output.next_cursor();
  result["output_start"] = output.start();
  result["gap_bytes"] = output.gap_bytes();
  result["more"] = output.more();
  if (output.has_screen()) {
    const v1::Screen& screen = output.screen();
    result["screen"] = {{"cols", screen.cols()},
                        {"rows", screen.rows()},
                        {"cursor_row", screen.cursor_row()},
                        {"cursor_col", screen.cursor_col()},
                        {"alternate_screen", screen.alternate_screen()}};
  }
  return result;
}

// Where the command stands with the host policy and the approval queue.
nlohmann::json ApprovalJson(const v1::ApprovalState& approval, nlohmann::json result) {
  if (approval.state().empty()) return result;
  nlohmann::json out = {{"state", approval.state()}};
  auto add = [&out](const char* key, const std::string& value) {
    if (!value.empty()) out[key] = value;
  };
  add("approval_id", approval.approval_id());
  add("rule", approval.rule());
  add("reason", approval.reason());
  add("decided_by", approval.decided_by());
  add("surface", approval.surface());
  add("note", approval.note());
  add("scope", approval.scope());
  result["approval"] = std::move(out);
  result["authorization"] = approval.state();
  return result;
}

}  // namespace

Router::Router(RouterOptions options, absl::StatusOr<bridge::BridgeConfig> bridge_config)
    : options_(options), bridge_status_(bridge_config.status()) {
  if (bridge_config.ok()) client_ = std::make_unique<bridge::BrokerClient>(*bridge_config);
}

int Router::WaitBudgetMs(std::optional<int64_t> requested) const {
  int64_t wait = requested.value_or(options_.default_wait_ms);
  // Leave a quarter of the request timeout for the reply itself, so a long
  // wait returns "running" instead of turning into a false PM_TERM_TIMEOUT.
  int64_t cap = static_cast<int64_t>(client_->config().request_timeout_ms) * 3 / 4;
  return static_cast<int>(std::clamp<int64_t>(wait, 0, cap));
}

RouterResult Router::Handle(const nlohmann::json& arguments) {
  absl::StatusOr<contract::CanonicalRequest> request =
      contract::Normalize(arguments, options_.phase);
  if (!request.ok()) {
    return {contract::ErrorResponseForArguments(arguments, contract::FromStatus(request.status())),
            true};
  }
  std::string status = "completed";
  std::string session_id;
  std::string terminal_id;
  absl::StatusOr<nlohmann::json> result = absl::InternalError("unrouted");
  if (request->mode == contract::Mode::kHeadless && request->action != Action::kList) {
    result = MakeError(ErrorCode::kInvalidMode,
                       "the headless lane is not available in this agent yet; use interactive",
                       {{"allowed_modes", {"interactive"}}});
  } else if (!bridge_status_.ok()) {
    result = bridge_status_;  // configuration error: fail closed
  } else {
    result = Interactive(*request, &status, &session_id, &terminal_id);
  }
  if (!result.ok()) {
    contract::PmTermError error = contract::FromStatus(result.status());
    spdlog::warn("event=call_failed action={} code={} trace_id={} message=\"{}\"",
                 contract::ActionName(request->action), contract::CodeName(error.code),
                 request->correlation.trace_id, error.message);
    return {contract::ErrorResponse(*request, error), true};
  }
  return {contract::SuccessResponse(*request, status, session_id, terminal_id, *result), false};
}

absl::StatusOr<nlohmann::json> Router::Interactive(const contract::CanonicalRequest& request,
                                                   std::string* status, std::string* session_id,
                                                   std::string* terminal_id) {
  nlohmann::json result = nlohmann::json::object();
  switch (request.action) {
    case Action::kExecute: {
      v1::ExecuteRequest call;
      SetCorrelation(request, call.mutable_correlation());
      call.set_command(request.command.value_or(""));
      for (const auto& arg : request.args) call.add_args(arg);
      call.set_cwd(request.cwd);
      for (const auto& [key, value] : request.env) (*call.mutable_env())[key] = value;
      call.set_terminal_id(request.terminal_id);
      call.set_open_only(request.intent == contract::Intent::kOpenOnly);
      call.set_wait_ms(WaitBudgetMs(request.timeout_ms));
      call.set_format(FormatOf(request));
      if (request.max_bytes) call.set_max_bytes(static_cast<uint32_t>(*request.max_bytes));
      absl::StatusOr<v1::ExecuteResponse> reply = client_->Execute(std::move(call));
      if (!reply.ok()) return reply.status();
      *session_id = reply->session_id();
      *terminal_id = reply->terminal_id();
      *status = reply->exit().running() ? "accepted" : "completed";
      result["authorization"] = "allowed";
      result = ApprovalJson(reply->approval(), std::move(result));
      result = OutputJson(reply->output(), ExitJson(reply->exit(), std::move(result)));
      return result;
    }
    case Action::kReadOutput: {
      v1::ReadOutputRequest call;
      SetCorrelation(request, call.mutable_correlation());
      call.set_session_id(request.session_id);
      call.set_terminal_id(request.terminal_id);
      if (request.cursor) call.set_cursor(*request.cursor);
      call.set_wait_ms(WaitBudgetMs(request.wait_ms.value_or(0)));
      call.set_format(FormatOf(request));
      if (request.max_bytes) call.set_max_bytes(static_cast<uint32_t>(*request.max_bytes));
      absl::StatusOr<v1::ReadOutputResponse> reply = client_->ReadOutput(std::move(call));
      if (!reply.ok()) return reply.status();
      *session_id = reply->session_id();
      *terminal_id = reply->terminal_id();
      result = ApprovalJson(reply->approval(), std::move(result));
      return OutputJson(reply->output(), ExitJson(reply->exit(), std::move(result)));
    }
    case Action::kTerminate: {
      v1::TerminateRequest call;
      SetCorrelation(request, call.mutable_correlation());
      call.set_session_id(request.session_id);
      call.set_terminal_id(request.terminal_id);
      absl::StatusOr<v1::TerminateResponse> reply = client_->Terminate(std::move(call));
      if (!reply.ok()) return reply.status();
      *session_id = reply->session_id();
      *terminal_id = reply->terminal_id();
      return ExitJson(reply->exit(), std::move(result));
    }
    case Action::kList: {
      v1::ListRequest call;
      SetCorrelation(request, call.mutable_correlation());
      absl::StatusOr<v1::ListResponse> reply = client_->List(std::move(call));
      if (!reply.ok()) return reply.status();
      nlohmann::json items = nlohmann::json::array();
      for (const v1::SessionInfo& info : reply->sessions()) {
        nlohmann::json item = {{"session_id", info.session_id()},
                               {"terminal_id", info.terminal_id()},
                               {"mode", "interactive"},
                               {"adapter", "broker"},
                               {"command", info.command()},
                               {"cwd", info.cwd()},
                               {"started_at_unix_ms", info.started_at_unix_ms()},
                               {"output_bytes", info.output_bytes()}};
        items.push_back(ExitJson(info.exit(), std::move(item)));
      }
      result["items"] = std::move(items);
      return result;
    }
  }
  return MakeError(ErrorCode::kInternal, "unknown action");
}

}  // namespace termbridge::lane
