// The canonical success payload (docs/CONTRACT.md, 'Results') and the
// deterministic error payload with its mandatory fallback section ('Errors').
#include "common/contract/response.h"

#include <optional>
#include <string>
#include <utility>

#include "common/contract/aliases.h"

namespace termbridge::contract {
namespace {

using nlohmann::json;

// Optional strings are JSON null when absent, as legacy_action is in 2.2.
json OrNull(const std::string& text) { return text.empty() ? json(nullptr) : json(text); }

// What an error payload needs to know about the request; built from a
// normalized request or, before normalization, from the raw arguments.
struct RequestView {
  std::string action;               // canonical name, or the unknown name as sent
  std::optional<Action> canonical;  // unset when the action is unknown
  std::optional<Mode> mode;
  bool alias_applied = false;
  std::string legacy_action;
  Correlation correlation;
  std::string deprecation_warning;
};

json CorrelationJson(Correlation correlation) {
  // The payload always carries ids, even for a request that never got them.
  if (correlation.request_id.empty()) correlation.request_id = NewId("req_");
  if (correlation.trace_id.empty()) correlation.trace_id = NewId("trace_");
  return {{"request_id", correlation.request_id},
          {"trace_id", correlation.trace_id},
          {"client_request_id", OrNull(correlation.client_request_id)}};
}

json ResolvedJson(const RequestView& view) {
  return {{"canonical_action",
           view.canonical ? json(std::string(ActionName(*view.canonical))) : json(nullptr)},
          {"alias_applied", view.alias_applied},
          {"legacy_action", OrNull(view.legacy_action)},
          {"mode", view.mode ? json(std::string(ModeName(*view.mode))) : json(nullptr)}};
}

// docs/CONTRACT.md, 'Errors': the strategy depends only on the code. The spec
// row describes an execute request; for a follow-up action (read_output,
// terminate, list) a retriable failure is retried as that same action and no
// mode is recommended, because the identity's owner decides the lane. A
// headless execute that timed out is pointed at the interactive lane. Only
// idempotent actions (read_output, list) may be retried automatically.
// The code's fallback message, unless the details say something more exact
// happened: a refusal that no person made must not read "the person declined".
std::string UserMessage(const ErrorSpec& spec, ErrorCode code, const json& details) {
  auto text = [&](const char* key) {
    auto it = details.find(key);
    return it != details.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (code == ErrorCode::kDeclined) {
    if (text("reason") == "pending_approval") {
      return "This terminal has a command waiting for a person's approval; nobody declined "
             "anything. Wait for that decision (read_output on its session), or run the command "
             "without a target to get a terminal of its own.";
    }
    if (text("reason") == "secret_prompt") {
      return "A program in this terminal is asking for a secret (a password or passphrase) with "
             "terminal echo off: only a person types it. Ask the person to answer it at the "
             "terminal, then read_output on the session to go on.";
    }
    if (text("lock") == "user_only") {
      return "A person holds this terminal's input (lock user_only); nobody declined the "
             "command, it was not run. Run it without a target to get a terminal of your own.";
    }
    if (!text("reason").empty() && text("decided_by").empty()) {
      return "The command was refused by the broker, not by a person: " + text("reason") +
             ". See error.message.";
    }
  }
  if (code == ErrorCode::kInvalidPayload && !text("limit").empty()) {
    return "A limit was reached (error.details.limit names it). Wait for pending requests to be "
           "decided, or send a smaller request.";
  }
  return std::string(spec.user_message);
}

json FallbackJson(const RequestView& view, ErrorCode code, const json& details) {
  const ErrorSpec& spec = Spec(code);
  std::string next_action(spec.next_action);
  std::string recommended_mode(spec.recommended_mode);
  std::string user_message(UserMessage(spec, code, details));
  bool follow_up = view.canonical && *view.canonical != Action::kExecute;
  if (spec.retriable && follow_up) {
    next_action = std::string(ActionName(*view.canonical));
    recommended_mode.clear();
  }
  if (code == ErrorCode::kTimeout && !follow_up && view.mode == Mode::kHeadless) {
    recommended_mode = "interactive";
    user_message = "The headless run timed out. You can retry now or run in interactive mode.";
  }
  bool idempotent = view.canonical == Action::kReadOutput || view.canonical == Action::kList;
  return {{"strategy", std::string(spec.strategy)},
          {"next_action", next_action},
          {"recommended_mode", OrNull(recommended_mode)},
          {"user_message", user_message},
          {"can_auto_retry", spec.retriable && idempotent && code != ErrorCode::kDeclined}};
}

json ErrorJson(const RequestView& view, const PmTermError& error, const std::string& trace_id) {
  const ErrorSpec& spec = Spec(error.code);
  json details = error.details.is_object() ? error.details : json::object();
  // docs/CONTRACT.md, 'Errors': INTERNAL carries trace-linked diagnostics.
  if (error.code == ErrorCode::kInternal && !details.contains("trace_id")) {
    details["trace_id"] = trace_id;
  }
  if (!view.deprecation_warning.empty() && !details.contains("deprecation_warning")) {
    details["deprecation_warning"] = view.deprecation_warning;
  }
  return {{"code", std::string(spec.name)},
          {"category", std::string(spec.category)},
          {"message", error.message},
          {"retriable", spec.retriable},
          {"details", std::move(details)}};
}

json BuildError(const RequestView& view, const PmTermError& error) {
  json correlation = CorrelationJson(view.correlation);
  std::string trace_id = correlation["trace_id"].get<std::string>();
  return {{"success", false},
          {"action", view.action},
          {"status", "failed"},
          {"correlation", std::move(correlation)},
          {"resolved", ResolvedJson(view)},
          {"error", ErrorJson(view, error, trace_id)},
          {"fallback", FallbackJson(view, error.code,
                                    error.details.is_object() ? error.details : json::object())}};
}

RequestView ViewOf(const CanonicalRequest& request) {
  RequestView view;
  view.action = std::string(ActionName(request.action));
  view.canonical = request.action;
  view.mode = request.mode;
  view.alias_applied = request.alias_applied;
  view.legacy_action = request.legacy_action;
  view.correlation = request.correlation;
  view.deprecation_warning = request.deprecation_warning;
  return view;
}

// A string member of `object`, or "" when it is missing or not a string.
std::string StringAt(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

const json& ObjectAt(const json& object, const char* key) {
  static const json* const kEmpty = new json(json::object());
  if (!object.is_object()) return *kEmpty;
  auto it = object.find(key);
  return it != object.end() && it->is_object() ? *it : *kEmpty;
}

}  // namespace

json SuccessResponse(const CanonicalRequest& request, std::string_view status,
                     const std::string& session_id, const std::string& terminal_id, json result) {
  if (result.is_null()) result = json::object();
  if (!request.deprecation_warning.empty() && result.is_object()) {
    // Keep a warning the lane set (e.g. authorization) and add ours after it.
    std::string warning = StringAt(result, "warning");
    result["warning"] = warning.empty() ? request.deprecation_warning
                                        : warning + "; " + request.deprecation_warning;
  }
  return {{"success", true},
          {"action", std::string(ActionName(request.action))},
          {"status", std::string(status)},
          {"correlation", CorrelationJson(request.correlation)},
          {"resolved", ResolvedJson(ViewOf(request))},
          {"identity", {{"session_id", OrNull(session_id)}, {"terminal_id", OrNull(terminal_id)}}},
          {"result", std::move(result)},
          {"error", nullptr}};
}

json ErrorResponse(const CanonicalRequest& request, const PmTermError& error) {
  return BuildError(ViewOf(request), error);
}

// Before normalization only what parses is used. A known alias is reported
// under its canonical action (so `action` stays within the contract's enum) with
// legacy_action set; it counts as applied unless the failure is the alias
// itself being rejected (INVALID_ACTION, phase C). An unknown action is
// reported as sent, a missing or non-string one as "unknown".
json ErrorResponseForArguments(const json& arguments, const PmTermError& error) {
  RequestView view;
  std::string sent = StringAt(arguments, "action");
  std::string legacy = StringAt(ObjectAt(arguments, "compat"), "legacy_action");
  if (std::optional<Action> action = internal::ParseAction(sent); action) {
    view.canonical = action;
  } else if (const internal::AliasRule* rule = internal::FindAlias(sent); rule != nullptr) {
    view.canonical = rule->action;
    legacy = sent;
  }
  view.action =
      view.canonical ? std::string(ActionName(*view.canonical)) : (sent.empty() ? "unknown" : sent);
  if (const internal::AliasRule* rule = internal::FindAlias(legacy);
      rule != nullptr && view.canonical == rule->action) {
    view.legacy_action = legacy;
    view.alias_applied = rule->is_alias && error.code != ErrorCode::kInvalidAction;
  }
  view.mode = internal::ParseMode(StringAt(ObjectAt(arguments, "invocation"), "mode"));
  const json& correlation = ObjectAt(arguments, "correlation");
  view.correlation.request_id = StringAt(correlation, "request_id");
  view.correlation.trace_id = StringAt(correlation, "trace_id");
  view.correlation.client_request_id = StringAt(correlation, "client_request_id");
  return BuildError(view, error);
}

}  // namespace termbridge::contract
