// Canonical request routing for termbridge-agent.
#include "agent/lane/router.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_join.h"
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
  // Only a person types the answer (docs/CONTRACT.md, 'Secret prompts').
  if (exit.running() && exit.secret_prompt()) result["secret_prompt"] = true;
  return result;
}

OutputPiece PieceOf(const v1::Output& output) {
  return {output.text(), output.start(), output.next_cursor(), output.gap_bytes(), output.more()};
}

// A screen is one snapshot: it is returned whole, never shaped.
ShapedSlice Unshaped(const v1::Output& output) {
  OutputPiece piece = PieceOf(output);
  ShapedSlice slice;
  slice.text = std::move(piece.text);
  slice.start = piece.start;
  slice.next = piece.next;
  slice.gap_bytes = piece.gap_bytes;
  slice.more = piece.more;
  return slice;
}

// The interactive lane's reads after the first one (output_budget.h): the
// same target and format, from a cursor or the tail, without a wait.
PieceReader BrokerReader(bridge::BrokerClient& client, const contract::CanonicalRequest& request,
                         const std::string& session_id, const std::string& terminal_id) {
  return [&client, &request, session_id, terminal_id](
             std::optional<uint64_t> cursor, size_t max_bytes) -> absl::StatusOr<OutputPiece> {
    v1::ReadOutputRequest call;
    SetCorrelation(request, call.mutable_correlation());
    call.set_session_id(session_id);
    call.set_terminal_id(terminal_id);
    call.set_format(FormatOf(request));
    call.set_max_bytes(static_cast<uint32_t>(max_bytes));
    if (cursor) {
      call.set_cursor(*cursor);
    } else {
      call.set_tail(true);
    }
    absl::StatusOr<v1::ReadOutputResponse> reply = client.ReadOutput(std::move(call));
    if (!reply.ok()) return reply.status();
    return PieceOf(reply->output());
  };
}

nlohmann::json OutputJson(const ShapedSlice& slice, const v1::Output& output,
                          nlohmann::json result) {
  AddShapedJson(slice, "stdout", "omitted_bytes", "tail", &result);
  result["stderr"] = "";  // a PTY merges both streams into stdout
  result["cursor"] = slice.next;
  result["output_start"] = slice.start;
  result["gap_bytes"] = slice.gap_bytes;
  result["more"] = slice.more;
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
  if (approval.grant_expires_at_unix_ms() > 0) {
    out["grant_expires_at_unix_ms"] = approval.grant_expires_at_unix_ms();
  }
  result["approval"] = std::move(out);
  result["authorization"] = approval.state();
  return result;
}

// The terminal's name and lock, as every surface shows them.
nlohmann::json TerminalJson(const std::string& name, const std::string& lock,
                            nlohmann::json result) {
  if (!name.empty()) result["terminal_name"] = name;
  if (!lock.empty()) result["lock"] = lock;
  return result;
}

}  // namespace

Router::Router(RouterOptions options, absl::StatusOr<bridge::BridgeConfig> bridge_config)
    : options_(options),
      bridge_status_(bridge_config.status()),
      headless_(HeadlessLane::Options{}),
      local_policy_(options.local_policy_file) {
  if (absl::Status loaded = local_policy_.Load(); !loaded.ok()) {
    spdlog::error("event=local_policy_invalid {}", loaded.ToString());
  }
  if (bridge_config.ok()) client_ = std::make_unique<bridge::BrokerClient>(*bridge_config);
}

int Router::WaitBudgetMs(std::optional<int64_t> requested) const {
  int64_t wait = requested.value_or(options_.default_wait_ms);
  // The call's own wait, not the request timeout, bounds it: the broker call
  // gets this wait plus the request timeout (agent/bridge/broker_client.h).
  return static_cast<int>(std::clamp<int64_t>(wait, 0, kMaxWaitMs));
}

std::optional<uint32_t> Router::InteractiveBudget(const contract::CanonicalRequest& request) {
  if (request.output_format == "screen") return std::nullopt;
  const uint32_t budget = OutputBudget(request.max_bytes, std::numeric_limits<uint32_t>::max());
  if (budget <= kMaxOutputBudget) return budget;
  // Past the broker's default read bound, its own bound (from the handshake) decides.
  absl::StatusOr<v1::HandshakeResponse> handshake =
      client_->Handshake(request.correlation.trace_id);
  uint32_t max = kMaxOutputBudget;
  if (handshake.ok() && handshake->limits().max_read_bytes() > 0) {
    max = handshake->limits().max_read_bytes();
  }
  return std::min(budget, max);
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
  bool headless = request->action != Action::kList &&
                  (request->mode == contract::Mode::kHeadless ||
                   (!request->session_id.empty() && headless_.Owns(request->session_id)));
  if (headless) {
    result = Headless(*request, &status, &session_id);
  } else if (request->action == Action::kList) {
    result = MergedList(*request);
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
      call.set_terminal_name(request.terminal_name);
      call.set_wait_ms(WaitBudgetMs(request.timeout_ms));
      call.set_format(FormatOf(request));
      const std::optional<uint32_t> budget = InteractiveBudget(request);
      const bool tail = request.tail.value_or(true);
      if (budget) {
        call.set_max_bytes(static_cast<uint32_t>(FirstReadBytes(*budget, tail)));
      } else if (request.max_bytes) {
        call.set_max_bytes(static_cast<uint32_t>(*request.max_bytes));
      }
      absl::StatusOr<v1::ExecuteResponse> reply = client_->Execute(std::move(call));
      if (!reply.ok()) return reply.status();
      *session_id = reply->session_id();
      *terminal_id = reply->terminal_id();
      *status = reply->exit().running() ? "accepted" : "completed";
      result["authorization"] = "allowed";
      result = TerminalJson(reply->terminal_name(), reply->lock(), std::move(result));
      result = ApprovalJson(reply->approval(), std::move(result));
      ShapedSlice output =
          budget && tail
              ? CompleteToBudget(
                    PieceOf(reply->output()), *budget,
                    BrokerReader(*client_, request, reply->session_id(),
                                 reply->session_id().empty() ? reply->terminal_id() : ""))
              : Unshaped(reply->output());
      return OutputJson(output, reply->output(), ExitJson(reply->exit(), std::move(result)));
    }
    case Action::kReadOutput: {
      v1::ReadOutputRequest call;
      SetCorrelation(request, call.mutable_correlation());
      call.set_session_id(request.session_id);
      call.set_terminal_id(request.terminal_id);
      if (request.cursor) call.set_cursor(*request.cursor);
      call.set_wait_ms(WaitBudgetMs(request.wait_ms.value_or(0)));
      call.set_format(FormatOf(request));
      call.set_until(request.until);
      call.set_match(request.match);
      if (request.idle_ms) call.set_idle_ms(static_cast<uint32_t>(*request.idle_ms));
      const std::optional<uint32_t> budget = InteractiveBudget(request);
      const bool tail = request.tail.value_or(true);
      if (budget) {
        call.set_max_bytes(static_cast<uint32_t>(FirstReadBytes(*budget, tail)));
      } else if (request.max_bytes) {
        call.set_max_bytes(static_cast<uint32_t>(*request.max_bytes));
      }
      absl::StatusOr<v1::ReadOutputResponse> reply = client_->ReadOutput(std::move(call));
      if (!reply.ok()) return reply.status();
      *session_id = reply->session_id();
      *terminal_id = reply->terminal_id();
      result = ApprovalJson(reply->approval(), std::move(result));
      result = TerminalJson(reply->terminal_name(), reply->lock(), std::move(result));
      if (!reply->wait_result().empty()) result["wait_result"] = reply->wait_result();
      ShapedSlice output =
          budget && tail ? CompleteToBudget(PieceOf(reply->output()), *budget,
                                            BrokerReader(*client_, request, request.session_id,
                                                         request.terminal_id))
                         : Unshaped(reply->output());
      return OutputJson(output, reply->output(), ExitJson(reply->exit(), std::move(result)));
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
      // Its terminals, those a person handed it included (docs/CONTRACT.md,
      // "Terminal names").
      nlohmann::json terminals = nlohmann::json::array();
      for (const v1::SessionInfo& info : reply->terminals()) {
        nlohmann::json item = {{"terminal_id", info.terminal_id()},
                               {"terminal_name", info.name()},
                               {"lock", info.lock().empty() ? "shared" : info.lock()},
                               {"cwd", info.cwd()},
                               {"running", info.exit().running()}};
        if (!info.person().empty()) item["handed_over_by"] = info.person();
        if (info.has_last_exit_code()) item["last_exit_code"] = info.last_exit_code();
        if (info.secret_prompt()) item["secret_prompt"] = true;
        terminals.push_back(std::move(item));
      }
      result["terminals"] = std::move(terminals);
      return result;
    }
  }
  return MakeError(ErrorCode::kInternal, "unknown action");
}

PolicyInForce Router::HeadlessPolicy(const std::string& trace_id) {
  if (client_) {
    v1::AgentPolicyRequest call;
    call.mutable_correlation()->set_trace_id(trace_id);
    absl::StatusOr<v1::GetPolicyResponse> reply = client_->GetPolicy(std::move(call));
    if (reply.ok() && !reply->policy_json().empty()) {
      nlohmann::json json = nlohmann::json::parse(reply->policy_json(), nullptr, false);
      absl::StatusOr<policy::Policy> parsed = policy::Policy::FromJson(json);
      if (parsed.ok()) {
        return {std::make_shared<const policy::Policy>(*std::move(parsed)), "broker", ""};
      }
      spdlog::error("event=policy_snapshot_invalid {}", parsed.status().ToString());
    }
  }
  // The file's policy, or the built-in one when the file is missing or no
  // version of it was valid: then the source says so, and why.
  std::string why_default;
  PolicyInForce in_force{local_policy_.Current(&why_default), "local_file", ""};
  if (!why_default.empty()) {
    in_force.source = "builtin";
    if (!local_policy_.path().empty()) in_force.source_reason = why_default;
  }
  return in_force;
}

namespace {

// `policy` is null for reads and kills: only an execute was judged.
nlohmann::json HeadlessJson(const HeadlessView& view, const PolicyInForce* policy) {
  nlohmann::json result = {
      {"lane", "headless"},
      {"adapter", "headless_process"},
      {"argv", view.argv},
      {"running", view.running},
      {"exit_code", view.exit_code ? nlohmann::json(*view.exit_code) : nullptr},
      {"signal", view.signal ? nlohmann::json(*view.signal) : nullptr},
      {"cursor", view.out.next},
      {"output_start", view.out.start},
      {"more", view.out.more},
      {"stderr_cursor", view.err.next},
      {"gap_bytes", view.out.gap_bytes + view.err.gap_bytes}};
  AddShapedJson(view.out, "stdout", "omitted_bytes", "tail", &result);
  AddShapedJson(view.err, "stderr", "stderr_omitted_bytes", "stderr_tail", &result);
  if (!view.running) result["exited_at_unix_ms"] = view.exited_at_unix_ms;
  if (policy != nullptr) {
    result["authorization"] = "allowed";
    result["policy"] = {{"source", policy->source},
                        {"rule", view.decision.rule_id},
                        {"reason", view.decision.reason}};
    if (!policy->source_reason.empty()) result["policy"]["source_reason"] = policy->source_reason;
  }
  return result;
}

}  // namespace

absl::StatusOr<nlohmann::json> Router::Headless(const contract::CanonicalRequest& request,
                                                std::string* status, std::string* session_id) {
  switch (request.action) {
    case Action::kExecute: {
      HeadlessRun run;
      run.argv.push_back(request.command.value_or(""));
      for (const std::string& arg : request.args) run.argv.push_back(arg);
      run.cwd = request.cwd;
      run.env = request.env;
      run.wait = absl::Milliseconds(WaitBudgetMs(request.timeout_ms));
      run.budget = OutputBudget(request.max_bytes);
      run.tail = request.tail.value_or(true);
      PolicyInForce policy = HeadlessPolicy(request.correlation.trace_id);
      absl::StatusOr<HeadlessView> view = headless_.Run(run, *policy.policy);
      if (!view.ok()) return view.status();
      *session_id = view->session_id;
      *status = view->running ? "accepted" : "completed";
      return HeadlessJson(*view, &policy);
    }
    case Action::kReadOutput: {
      uint64_t cursor = request.cursor.value_or(0);
      absl::StatusOr<HeadlessView> view =
          headless_.Read(request.session_id, cursor, 0, OutputBudget(request.max_bytes),
                         absl::Milliseconds(WaitBudgetMs(request.wait_ms.value_or(0))),
                         request.tail.value_or(true));
      if (!view.ok()) return view.status();
      *session_id = view->session_id;
      return HeadlessJson(*view, nullptr);
    }
    case Action::kTerminate: {
      absl::StatusOr<HeadlessView> view =
          headless_.Kill(request.session_id, OutputBudget(request.max_bytes));
      if (!view.ok()) return view.status();
      *session_id = view->session_id;
      return HeadlessJson(*view, nullptr);
    }
    case Action::kList:
      break;
  }
  return MakeError(ErrorCode::kInvalidMode, "this action has no headless form",
                   {{"allowed_modes", {"interactive"}}});
}

absl::StatusOr<nlohmann::json> Router::MergedList(const contract::CanonicalRequest& request) {
  // An explicit interactive list fails closed like any interactive call; a
  // list across both lanes reports an unreachable lane in `lanes` instead.
  if (request.mode == contract::Mode::kInteractive) {
    if (!bridge_status_.ok()) return bridge_status_;
    std::string ignored_status, ignored_session, ignored_terminal;
    absl::StatusOr<nlohmann::json> interactive =
        Interactive(request, &ignored_status, &ignored_session, &ignored_terminal);
    if (!interactive.ok()) return interactive.status();
    (*interactive)["lanes"] = {{"interactive", {{"available", true}, {"adapter", "broker"}}}};
    return interactive;
  }
  nlohmann::json result = nlohmann::json::object();
  nlohmann::json items = nlohmann::json::array();
  nlohmann::json lanes = nlohmann::json::object();
  if (request.mode != contract::Mode::kHeadless) {
    if (!bridge_status_.ok()) {
      lanes["interactive"] = {{"available", false},
                              {"error", std::string(bridge_status_.message())}};
    } else {
      std::string ignored_status, ignored_session, ignored_terminal;
      contract::CanonicalRequest list = request;
      absl::StatusOr<nlohmann::json> interactive =
          Interactive(list, &ignored_status, &ignored_session, &ignored_terminal);
      if (interactive.ok()) {
        for (auto& item : (*interactive)["items"]) items.push_back(item);
        result["terminals"] = (*interactive)["terminals"];
        lanes["interactive"] = {{"available", true}, {"adapter", "broker"}};
      } else {
        lanes["interactive"] = {
            {"available", false},
            {"error", contract::CodeName(contract::FromStatus(interactive.status()).code)}};
      }
    }
  }
  if (request.mode != contract::Mode::kInteractive) {
    for (const HeadlessView& view : headless_.List()) {
      items.push_back({{"session_id", view.session_id},
                       {"terminal_id", ""},
                       {"mode", "headless"},
                       {"adapter", "headless_process"},
                       {"command", absl::StrJoin(view.argv, " ")},
                       {"running", view.running},
                       {"exit_code", view.exit_code ? nlohmann::json(*view.exit_code) : nullptr}});
    }
    lanes["headless"] = {{"available", true}, {"adapter", "headless_process"}};
  }
  result["items"] = std::move(items);
  result["lanes"] = std::move(lanes);
  return result;
}

RouterResult Router::HandleHeadlessTool(const nlohmann::json& arguments) {
  std::string action = arguments.is_object() ? arguments.value("action", "") : "";
  std::string trace_id = contract::NewId("tr_");
  nlohmann::json base = {
      {"tool", "memory_terminal"}, {"action", action}, {"status", "completed"}, {"error", nullptr}};
  auto fail = [&](const absl::Status& status) {
    // The canonical error payload, fallback section included.
    nlohmann::json out =
        contract::ErrorResponseForArguments(arguments, contract::FromStatus(status));
    out["tool"] = "memory_terminal";
    return RouterResult{out, true};
  };
  if (action == "get_allowlist") {
    PolicyInForce policy = HeadlessPolicy(trace_id);
    nlohmann::json allow = nlohmann::json::array();
    for (const policy::Rule& rule : policy.policy->rules()) {
      if (rule.action != policy::Action::kAllow) continue;
      allow.push_back({{"id", rule.id},
                       {"argv", rule.argv},
                       {"regex", rule.pattern},
                       {"match", rule.kind == policy::MatchKind::kExact    ? "exact"
                                 : rule.kind == policy::MatchKind::kPrefix ? "prefix"
                                                                           : "regex"}});
    }
    nlohmann::json out = base;
    out["success"] = true;
    out["result"] = {{"source", policy.source}, {"allow", allow}, {"read_only", true}};
    if (!policy.source_reason.empty()) out["result"]["source_reason"] = policy.source_reason;
    return {out, false};
  }
  if (action == "update_allowlist") {
    const nlohmann::json* rule = arguments.contains("rule") ? &arguments["rule"] : nullptr;
    if (rule == nullptr || !rule->is_array() || rule->empty()) {
      return fail(MakeError(ErrorCode::kInvalidPayload, "rule must be a non-empty array of strings",
                            {{"field", "rule"}}));
    }
    v1::ProposeRuleRequest call;
    call.mutable_correlation()->set_trace_id(trace_id);
    for (const auto& word : *rule) {
      if (!word.is_string()) {
        return fail(MakeError(ErrorCode::kInvalidPayload, "rule must be an array of strings",
                              {{"field", "rule"}}));
      }
      call.add_argv(word.get<std::string>());
    }
    call.set_reason(arguments.value("reason", ""));
    call.set_wait_ms(static_cast<uint32_t>(WaitBudgetMs(arguments.value("wait_ms", 0))));
    if (!client_) return fail(bridge_status_);
    absl::StatusOr<v1::ProposeRuleResponse> reply = client_->ProposeRule(std::move(call));
    if (!reply.ok()) return fail(reply.status());
    nlohmann::json out = base;
    out["success"] = true;
    out["result"] = ApprovalJson(reply->approval(), {{"proposed", *rule}});
    out["result"]["note"] =
        "the agent cannot change the host policy; a person decides on the broker";
    return {out, false};
  }
  // run, read_output and kill are the canonical actions in the headless lane.
  nlohmann::json canonical = nlohmann::json::object();
  if (arguments.is_object()) canonical = arguments;
  static const std::map<std::string, std::string> kActions = {
      {"run", "execute"}, {"read_output", "read_output"}, {"kill", "terminate"}};
  auto it = kActions.find(action);
  if (it == kActions.end()) {
    return fail(MakeError(ErrorCode::kInvalidAction,
                          "memory_terminal actions are run, read_output, kill, get_allowlist "
                          "and update_allowlist",
                          {{"allowed_actions",
                            {"run", "read_output", "kill", "get_allowlist", "update_allowlist"}}}));
  }
  canonical["action"] = it->second;
  canonical["invocation"] = {{"mode", "headless"}};
  for (const char* key : {"rule", "reason"}) canonical.erase(key);
  if (action == "run" && canonical.contains("wait_ms")) {
    // run's wait is execute's runtime.timeout_ms (at least 1 ms).
    const nlohmann::json wait = canonical["wait_ms"];
    canonical.erase("wait_ms");
    if (wait.is_number_integer()) {
      canonical["runtime"] = {{"timeout_ms", std::max<int64_t>(1, wait.get<int64_t>())}};
    }
  }
  return Handle(canonical);
}

}  // namespace termbridge::lane
