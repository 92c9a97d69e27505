// Normalization of tool arguments into the canonical request (docs/CONTRACT.md,
// 'Tools and the canonical request'). The steps run in a fixed order, so the
// same input always fails with the same code and field: action and alias,
// sections and field types, alias transforms, defaults, then the coupling
// rules ('Fields').
#include "common/contract/request.h"

#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <utility>

#include "absl/random/random.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/contract/aliases.h"
#include "common/contract/errors.h"

namespace termbridge::contract {
namespace {

using internal::AliasRule;
using nlohmann::json;

// ---- errors ---------------------------------------------------------------

// INVALID_PAYLOAD naming the offending field: "<field> <reason>".
absl::Status PayloadError(const std::string& field, const std::string& reason,
                          json extra = json::object()) {
  extra["field"] = field;
  extra["reason"] = reason;
  return MakeError(ErrorCode::kInvalidPayload, field + " " + reason, std::move(extra));
}

std::string Quote(std::string_view text) { return "\"" + std::string(text) + "\""; }

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

absl::Status UnknownAction(const std::string& name, const std::string& field,
                           DeprecationPhase phase) {
  json details = {
      {"field", field},
      {"action", name},
      {"allowed_actions", internal::CanonicalActionNames()},
      {"hint", "use one of the canonical actions: execute, read_output, terminate, list"}};
  if (phase != DeprecationPhase::kC) details["legacy_aliases"] = internal::AliasMap();
  // A case slip ("Execute") gets a pointer to the name that would have worked.
  std::string lower = Lower(name);
  if (lower != name && (internal::ParseAction(lower) || internal::FindAlias(lower))) {
    details["did_you_mean"] = lower;
  }
  return MakeError(
      ErrorCode::kInvalidAction,
      "unknown action " + Quote(name) + "; use one of execute, read_output, terminate, list",
      std::move(details));
}

absl::Status RejectedAlias(const AliasRule& rule, const std::string& field) {
  json details = {{"field", field},
                  {"legacy_action", std::string(rule.legacy_action)},
                  {"canonical_action", std::string(ActionName(rule.action))},
                  {"hint", std::string(rule.hint)},
                  {"migration", internal::MigrationExample(rule)},
                  {"deprecation_phase", "C"},
                  {"allowed_actions", internal::CanonicalActionNames()}};
  return MakeError(ErrorCode::kInvalidAction,
                   "legacy action " + Quote(rule.legacy_action) + " is no longer accepted; " +
                       std::string(rule.hint),
                   std::move(details));
}

std::string DeprecationWarning(const AliasRule& rule) {
  return "legacy action " + Quote(rule.legacy_action) +
         " is deprecated and will be rejected in a future release; " + std::string(rule.hint);
}

// ---- typed field access ---------------------------------------------------

// The member `key` of `object`, or null when `object` is null, the member is
// missing or it is JSON null (null means absent everywhere in the contract).
const json* Member(const json* object, const char* key) {
  if (object == nullptr || !object->is_object()) return nullptr;
  auto it = object->find(key);
  if (it == object->end() || it->is_null()) return nullptr;
  return &*it;
}

std::string Path(const std::string& prefix, const char* key) {
  return prefix.empty() ? std::string(key) : prefix + "." + key;
}

// A nested section ("invocation", "runtime", ...): null when absent.
absl::StatusOr<const json*> Section(const json& arguments, const char* key) {
  const json* section = Member(&arguments, key);
  if (section != nullptr && !section->is_object()) {
    return PayloadError(key, "must be an object");
  }
  return section;
}

absl::Status CheckText(const std::string& text, const std::string& path) {
  if (text.find('\0') != std::string::npos) return PayloadError(path, "must not contain NUL bytes");
  return absl::OkStatus();
}

absl::Status ReadString(const json* object, const char* key, const std::string& prefix,
                        std::optional<std::string>* out) {
  const json* value = Member(object, key);
  if (value == nullptr) return absl::OkStatus();
  std::string path = Path(prefix, key);
  if (!value->is_string()) return PayloadError(path, "must be a string");
  std::string text = value->get<std::string>();
  if (absl::Status status = CheckText(text, path); !status.ok()) return status;
  *out = std::move(text);
  return absl::OkStatus();
}

// max_bytes and idle_ms travel to the broker as uint32: a larger value is
// refused here rather than wrapped (2^32 would become 0).
constexpr int64_t kMaxUint32 = std::numeric_limits<uint32_t>::max();

absl::Status ReadInt(const json* object, const char* key, const std::string& prefix,
                     int64_t minimum, std::optional<int64_t>* out,
                     int64_t maximum = std::numeric_limits<int64_t>::max()) {
  const json* value = Member(object, key);
  if (value == nullptr) return absl::OkStatus();
  std::string path = Path(prefix, key);
  if (!value->is_number_integer() ||
      (value->is_number_unsigned() &&
       value->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) {
    return PayloadError(path, "must be an integer", {{"minimum", minimum}});
  }
  int64_t number = value->get<int64_t>();
  if (number < minimum) {
    return PayloadError(path, "must be at least " + std::to_string(minimum),
                        {{"minimum", minimum}});
  }
  if (number > maximum) {
    return PayloadError(path, "must be at most " + std::to_string(maximum),
                        {{"minimum", minimum}, {"maximum", maximum}});
  }
  *out = number;
  return absl::OkStatus();
}

absl::Status ReadCursor(const json& arguments, std::optional<uint64_t>* out) {
  const json* value = Member(&arguments, "cursor");
  if (value == nullptr) return absl::OkStatus();
  if (!value->is_number_integer() || (!value->is_number_unsigned() && value->get<int64_t>() < 0)) {
    return PayloadError("cursor", "must be a non-negative integer");
  }
  *out = value->get<uint64_t>();
  return absl::OkStatus();
}

absl::Status ReadArgs(const json* object, const std::string& prefix,
                      std::optional<std::vector<std::string>>* out) {
  const json* value = Member(object, "args");
  if (value == nullptr) return absl::OkStatus();
  std::string path = Path(prefix, "args");
  if (!value->is_array()) return PayloadError(path, "must be an array of strings");
  std::vector<std::string> args;
  for (size_t i = 0; i < value->size(); ++i) {
    std::string item_path = path + "[" + std::to_string(i) + "]";
    if (!(*value)[i].is_string()) return PayloadError(item_path, "must be a string");
    args.push_back((*value)[i].get<std::string>());
    if (absl::Status status = CheckText(args.back(), item_path); !status.ok()) return status;
  }
  *out = std::move(args);
  return absl::OkStatus();
}

absl::Status ReadEnv(const json* object, const std::string& prefix,
                     std::optional<std::map<std::string, std::string>>* out) {
  const json* value = Member(object, "env");
  if (value == nullptr) return absl::OkStatus();
  std::string path = Path(prefix, "env");
  if (!value->is_object()) return PayloadError(path, "must be an object of strings");
  std::map<std::string, std::string> env;
  for (const auto& [name, item] : value->items()) {
    std::string item_path = path + "." + name;
    // A name with '=' or NUL cannot be represented in an environment block.
    if (name.empty() || name.find('=') != std::string::npos ||
        name.find('\0') != std::string::npos) {
      return PayloadError(item_path, "is not a valid environment variable name");
    }
    if (!item.is_string()) return PayloadError(item_path, "must be a string");
    env[name] = item.get<std::string>();
    if (absl::Status status = CheckText(env[name], item_path); !status.ok()) return status;
  }
  *out = std::move(env);
  return absl::OkStatus();
}

// The flat legacy shape repeats some nested fields at the top level. Both may
// be sent; if they disagree the request is ambiguous and rejected.
template <typename T>
absl::Status Merge(std::optional<T> nested, std::optional<T> flat, const std::string& nested_path,
                   const std::string& flat_path, std::optional<T>* out) {
  if (nested && flat && *nested != *flat) {
    return PayloadError(flat_path, "conflicts with " + nested_path + "; send only one of them",
                        {{"conflicts_with", nested_path}});
  }
  *out = nested ? std::move(nested) : std::move(flat);
  return absl::OkStatus();
}

bool HasContent(const json* value) {
  if (value == nullptr || value->is_null()) return false;
  if (value->is_string()) return !value->get<std::string>().empty();
  if (value->is_object() || value->is_array()) {
    for (const json& item : *value) {
      if (!value->is_object() || HasContent(&item)) return true;
    }
    return false;
  }
  return true;
}

bool IsBlank(const std::string& text) {
  for (char c : text) {
    if (!std::isspace(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// ---- steps ------------------------------------------------------------------

// Resolves `action` and compat.legacy_action. Returns the alias row applied
// (null for a canonical action with no legacy_action).
absl::StatusOr<const AliasRule*> ResolveAction(const json& arguments, DeprecationPhase phase,
                                               CanonicalRequest* request) {
  const json* action = Member(&arguments, "action");
  json allowed = {{"allowed_actions", internal::CanonicalActionNames()}};
  if (action == nullptr || (action->is_string() && action->get<std::string>().empty())) {
    return PayloadError("action", "is required", allowed);
  }
  if (!action->is_string()) return PayloadError("action", "must be a string", allowed);
  std::string name = action->get<std::string>();

  absl::StatusOr<const json*> compat = Section(arguments, "compat");
  if (!compat.ok()) return compat.status();
  std::optional<std::string> legacy;
  std::optional<std::string> surface;
  if (absl::Status s = ReadString(*compat, "legacy_action", "compat", &legacy); !s.ok()) return s;
  if (absl::Status s = ReadString(*compat, "caller_surface", "compat", &surface); !s.ok()) return s;
  request->caller_surface = surface.value_or("");
  if (legacy && legacy->empty()) legacy.reset();

  const AliasRule* rule = nullptr;
  std::string rule_field = "action";
  if (std::optional<Action> canonical = internal::ParseAction(name); canonical) {
    request->action = *canonical;
  } else if (const AliasRule* alias = internal::FindAlias(name); alias != nullptr) {
    rule = alias;
    request->action = alias->action;
  } else {
    return UnknownAction(name, "action", phase);
  }
  if (legacy) {
    const AliasRule* legacy_rule = internal::FindAlias(*legacy);
    if (legacy_rule == nullptr) return UnknownAction(*legacy, "compat.legacy_action", phase);
    if (legacy_rule->action != request->action || (rule != nullptr && rule != legacy_rule)) {
      return PayloadError("compat.legacy_action",
                          "(" + Quote(*legacy) + ") does not match action " + Quote(name),
                          {{"canonical_action", std::string(ActionName(legacy_rule->action))}});
    }
    if (rule == nullptr) rule_field = "compat.legacy_action";
    rule = legacy_rule;
  }
  if (rule == nullptr) return rule;

  request->legacy_action = std::string(rule->legacy_action);
  request->alias_applied = rule->is_alias;
  if (rule->is_alias && phase == DeprecationPhase::kC) return RejectedAlias(*rule, rule_field);
  if (rule->is_alias && phase == DeprecationPhase::kB) {
    request->deprecation_warning = DeprecationWarning(*rule);
  }
  return rule;
}

absl::Status ReadCorrelation(const json& arguments, CanonicalRequest* request) {
  absl::StatusOr<const json*> section = Section(arguments, "correlation");
  if (!section.ok()) return section.status();
  std::optional<std::string> request_id, trace_id, client_request_id;
  for (auto [key, out] :
       {std::make_pair("request_id", &request_id), std::make_pair("trace_id", &trace_id),
        std::make_pair("client_request_id", &client_request_id)}) {
    if (absl::Status s = ReadString(*section, key, "correlation", out); !s.ok()) return s;
  }
  // docs/CONTRACT.md, 'Fields': request_id is generated when absent, trace_id is
  // generated once and then never changed. An empty string counts as absent.
  Correlation& correlation = request->correlation;
  correlation.request_id = request_id && !request_id->empty() ? *request_id : NewId("req_");
  correlation.trace_id = trace_id && !trace_id->empty() ? *trace_id : NewId("trace_");
  correlation.client_request_id = client_request_id.value_or("");
  return absl::OkStatus();
}

absl::Status ReadInvocation(const json& arguments, CanonicalRequest* request) {
  absl::StatusOr<const json*> section = Section(arguments, "invocation");
  if (!section.ok()) return section.status();
  std::optional<std::string> mode, intent;
  if (absl::Status s = ReadString(*section, "mode", "invocation", &mode); !s.ok()) return s;
  if (absl::Status s = ReadString(*section, "intent", "invocation", &intent); !s.ok()) return s;
  if (mode) {
    request->mode = internal::ParseMode(*mode);
    if (!request->mode) {
      return MakeError(
          ErrorCode::kInvalidMode,
          "unsupported invocation.mode " + Quote(*mode) + "; use \"interactive\" or \"headless\"",
          {{"field", "invocation.mode"},
           {"mode", *mode},
           {"allowed_modes", {"interactive", "headless"}}});
    }
  }
  if (intent) {
    request->intent = internal::ParseIntent(*intent);
    if (!request->intent) {
      return PayloadError("invocation.intent", "must be \"open_only\" or \"execute_command\"",
                          {{"allowed_intents", {"open_only", "execute_command"}}});
    }
  }
  return absl::OkStatus();
}

absl::Status ReadRuntime(const json& arguments, CanonicalRequest* request) {
  absl::StatusOr<const json*> section = Section(arguments, "runtime");
  if (!section.ok()) return section.status();
  std::optional<std::string> workspace, flat_workspace, cwd, flat_cwd, adapter;
  std::optional<int64_t> timeout, flat_timeout;
  for (auto [key, out] : {std::make_pair("workspace_id", &workspace), std::make_pair("cwd", &cwd),
                          std::make_pair("adapter_override", &adapter)}) {
    if (absl::Status s = ReadString(*section, key, "runtime", out); !s.ok()) return s;
  }
  if (absl::Status s = ReadInt(*section, "timeout_ms", "runtime", 1, &timeout); !s.ok()) return s;
  if (absl::Status s = ReadString(&arguments, "workspace_id", "", &flat_workspace); !s.ok()) {
    return s;
  }
  if (absl::Status s = ReadString(&arguments, "cwd", "", &flat_cwd); !s.ok()) return s;
  // The legacy server's `timeout` was in milliseconds, like runtime.timeout_ms.
  if (absl::Status s = ReadInt(&arguments, "timeout", "", 1, &flat_timeout); !s.ok()) return s;

  std::optional<std::string> merged;
  if (absl::Status s =
          Merge(workspace, flat_workspace, "runtime.workspace_id", "workspace_id", &merged);
      !s.ok()) {
    return s;
  }
  request->workspace_id = merged.value_or("");
  bool cwd_is_flat = !cwd && flat_cwd;
  if (absl::Status s = Merge(cwd, flat_cwd, "runtime.cwd", "cwd", &merged); !s.ok()) return s;
  request->cwd = merged.value_or("");
  // The command runs on another machine than the caller (the host, or a
  // container), so a relative cwd has no meaning there: require absolute.
  if (!request->cwd.empty() && request->cwd.front() != '/') {
    return PayloadError(cwd_is_flat ? "cwd" : "runtime.cwd", "must be an absolute path");
  }
  if (absl::Status s =
          Merge(timeout, flat_timeout, "runtime.timeout_ms", "timeout", &request->timeout_ms);
      !s.ok()) {
    return s;
  }
  request->adapter_override = adapter.value_or("");
  return absl::OkStatus();
}

absl::Status ReadExecution(const json& arguments, CanonicalRequest* request) {
  absl::StatusOr<const json*> section = Section(arguments, "execution");
  if (!section.ok()) return section.status();
  std::optional<std::string> command, flat_command;
  std::optional<std::vector<std::string>> args, flat_args;
  std::optional<std::map<std::string, std::string>> env, flat_env;
  if (absl::Status s = ReadString(*section, "command", "execution", &command); !s.ok()) return s;
  if (absl::Status s = ReadArgs(*section, "execution", &args); !s.ok()) return s;
  if (absl::Status s = ReadEnv(*section, "execution", &env); !s.ok()) return s;
  std::optional<std::string> terminal_name;
  if (absl::Status s = ReadString(*section, "terminal_name", "execution", &terminal_name);
      !s.ok()) {
    return s;
  }
  if (terminal_name && terminal_name->size() > 256) {
    return PayloadError("execution.terminal_name", "must be at most 256 bytes",
                        {{"limit", "terminal_name_bytes"}, {"value", 256}});
  }
  request->terminal_name = terminal_name.value_or("");
  if (absl::Status s = ReadString(&arguments, "command", "", &flat_command); !s.ok()) return s;
  if (absl::Status s = ReadArgs(&arguments, "", &flat_args); !s.ok()) return s;
  if (absl::Status s = ReadEnv(&arguments, "", &flat_env); !s.ok()) return s;

  if (absl::Status s =
          Merge(command, flat_command, "execution.command", "command", &request->command);
      !s.ok()) {
    return s;
  }
  std::optional<std::vector<std::string>> merged_args;
  if (absl::Status s = Merge(args, flat_args, "execution.args", "args", &merged_args); !s.ok()) {
    return s;
  }
  request->args = merged_args.value_or(std::vector<std::string>{});
  std::optional<std::map<std::string, std::string>> merged_env;
  if (absl::Status s = Merge(env, flat_env, "execution.env", "env", &merged_env); !s.ok()) {
    return s;
  }
  request->env = merged_env.value_or(std::map<std::string, std::string>{});
  return absl::OkStatus();
}

absl::Status ReadTarget(const json& arguments, CanonicalRequest* request) {
  absl::StatusOr<const json*> section = Section(arguments, "target");
  if (!section.ok()) return section.status();
  for (auto [key, out] : {std::make_pair("session_id", &request->session_id),
                          std::make_pair("terminal_id", &request->terminal_id)}) {
    std::optional<std::string> nested, flat, merged;
    if (absl::Status s = ReadString(*section, key, "target", &nested); !s.ok()) return s;
    if (absl::Status s = ReadString(&arguments, key, "", &flat); !s.ok()) return s;
    if (nested && nested->empty()) nested.reset();
    if (flat && flat->empty()) flat.reset();
    if (absl::Status s = Merge(nested, flat, Path("target", key), key, &merged); !s.ok()) return s;
    *out = merged.value_or("");
  }
  return absl::OkStatus();
}

absl::Status ReadReadOptions(const json& arguments, CanonicalRequest* request) {
  if (absl::Status s = ReadCursor(arguments, &request->cursor); !s.ok()) return s;
  if (absl::Status s = ReadInt(&arguments, "max_bytes", "", 0, &request->max_bytes, kMaxUint32);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ReadInt(&arguments, "wait_ms", "", 0, &request->wait_ms); !s.ok()) return s;
  std::optional<std::string> format;
  if (absl::Status s = ReadString(&arguments, "format", "", &format); !s.ok()) return s;
  if (format && *format != "clean" && *format != "raw" && *format != "screen") {
    return PayloadError("format", "must be \"clean\", \"raw\" or \"screen\"",
                        {{"allowed_formats", {"clean", "raw", "screen"}}});
  }
  request->output_format = format.value_or("");
  std::optional<std::string> until;
  if (absl::Status s = ReadString(&arguments, "until", "", &until); !s.ok()) return s;
  if (until && *until != "output" && *until != "exit" && *until != "idle" && *until != "match") {
    return PayloadError("until", "must be \"output\", \"exit\", \"idle\" or \"match\"",
                        {{"allowed", {"output", "exit", "idle", "match"}}});
  }
  request->until = until.value_or("");
  std::optional<std::string> match;
  if (absl::Status s = ReadString(&arguments, "match", "", &match); !s.ok()) return s;
  request->match = match.value_or("");
  if (request->until == "match" && request->match.empty()) {
    return PayloadError("match", "until \"match\" needs a non-empty match regex", {});
  }
  if (absl::Status s = ReadInt(&arguments, "idle_ms", "", 1, &request->idle_ms, kMaxUint32);
      !s.ok())
    return s;
  if (const json* tail = Member(&arguments, "tail"); tail != nullptr) {
    if (!tail->is_boolean()) return PayloadError("tail", "must be true or false", {});
    request->tail = tail->get<bool>();
  }
  if (const json* text = Member(&arguments, "text_output"); text != nullptr) {
    if (!text->is_boolean()) return PayloadError("text_output", "must be true or false", {});
    request->text_output = text->get<bool>();
  }
  return absl::OkStatus();
}

// The transform each alias imposes (docs/CONTRACT.md, 'Flat legacy shape and
// aliases'). An explicit field that contradicts it is rejected rather than
// silently overridden.
absl::Status ApplyAlias(const AliasRule& rule, CanonicalRequest* request) {
  std::string alias = Quote(rule.legacy_action);
  if (rule.mode) {
    if (request->mode && *request->mode != *rule.mode) {
      return PayloadError("invocation.mode",
                          "must be " + Quote(ModeName(*rule.mode)) + " for legacy action " + alias,
                          {{"legacy_action", std::string(rule.legacy_action)},
                           {"allowed_modes", {std::string(ModeName(*rule.mode))}}});
    }
    request->mode = rule.mode;
  }
  if (rule.intent) {
    if (request->intent && *request->intent != *rule.intent) {
      return PayloadError(
          "invocation.intent",
          "must be " + Quote(IntentName(*rule.intent)) + " for legacy action " + alias,
          {{"legacy_action", std::string(rule.legacy_action)},
           {"allowed_intents", {std::string(IntentName(*rule.intent))}}});
    }
    request->intent = rule.intent;
  }
  if (rule.requires_terminal_id && request->terminal_id.empty()) {
    return PayloadError("target.terminal_id", "is required for legacy action " + alias,
                        {{"legacy_action", std::string(rule.legacy_action)}});
  }
  return absl::OkStatus();
}

// Defaults (docs/CONTRACT.md, 'Fields'): interactive is the default mode for
// terminal operations (headless is explicit only). The intent is inferred only
// when unambiguous: a command means execute_command.
absl::Status ApplyExecuteDefaults(CanonicalRequest* request) {
  if (!request->mode) request->mode = Mode::kInteractive;
  if (!request->intent) {
    if (!request->command) {
      return PayloadError("invocation.intent",
                          "is required for execute: use \"execute_command\" with "
                          "execution.command, or \"open_only\" to open a terminal",
                          {{"allowed_intents", {"open_only", "execute_command"}}});
    }
    request->intent = Intent::kExecuteCommand;
  }
  return absl::OkStatus();
}

// docs/CONTRACT.md, 'Fields': action + field coupling and mode constraints.
absl::Status ValidateExecute(CanonicalRequest* request) {
  if (request->intent == Intent::kExecuteCommand) {
    if (!request->command) {
      return PayloadError("execution.command",
                          "is required when invocation.intent is \"execute_command\"");
    }
    if (IsBlank(*request->command)) {
      return PayloadError("execution.command", "must not be empty");
    }
  } else {
    if (request->command && !request->command->empty()) {
      return PayloadError("execution.command",
                          "must be absent when invocation.intent is \"open_only\"");
    }
    request->command.reset();
    if (!request->args.empty()) {
      return PayloadError("execution.args",
                          "must be absent when invocation.intent is \"open_only\"");
    }
  }
  if (request->mode == Mode::kHeadless) {
    if (!request->terminal_id.empty()) {
      return PayloadError("target.terminal_id",
                          "is not allowed for a headless execute; terminals are interactive",
                          {{"allowed_modes", {"interactive"}}});
    }
    if (request->intent == Intent::kOpenOnly) {
      return PayloadError("invocation.intent",
                          "\"open_only\" requires invocation.mode \"interactive\"",
                          {{"allowed_modes", {"interactive"}}});
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateList(const json& arguments) {
  // Forbidden means "carries a value": an empty object or array is tolerated.
  for (const char* key : {"execution", "command", "args", "env"}) {
    if (HasContent(Member(&arguments, key))) {
      return PayloadError(key, "is not allowed for action \"list\"");
    }
  }
  for (const char* key : {"target", "session_id", "terminal_id"}) {
    if (HasContent(Member(&arguments, key))) {
      return PayloadError(key, "is not allowed for action \"list\"");
    }
  }
  return absl::OkStatus();
}

absl::Status Validate(const json& arguments, CanonicalRequest* request) {
  switch (request->action) {
    case Action::kExecute:
      return ValidateExecute(request);
    case Action::kReadOutput:
    case Action::kTerminate:
      if (request->session_id.empty() && request->terminal_id.empty()) {
        return PayloadError("target",
                            "must carry target.session_id or target.terminal_id for action " +
                                Quote(ActionName(request->action)),
                            {{"one_of", {"target.session_id", "target.terminal_id"}}});
      }
      return absl::OkStatus();
    case Action::kList:
      return ValidateList(arguments);
  }
  return absl::OkStatus();
}

// ---- ids --------------------------------------------------------------------

constexpr char kCrockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

// Monotonic ULID state: within one millisecond (or if the clock steps back)
// the 80-bit random part is incremented, so ids from one process sort in the
// order they were made. A forked child reseeds so it never repeats its parent.
struct UlidState {
  std::mutex mu;
  pid_t pid = 0;
  uint64_t last_ms = 0;
  uint64_t random_hi = 0;  // top 16 of the 80 random bits
  uint64_t random_lo = 0;  // low 64 random bits
  absl::BitGen gen;
};

uint64_t FiveBits(uint64_t hi, uint64_t lo, int offset) {
  if (offset >= 64) return (hi >> (offset - 64)) & 31;
  if (offset + 5 <= 64) return (lo >> offset) & 31;
  return ((lo >> offset) | (hi << (64 - offset))) & 31;
}

}  // namespace

std::string NewId(std::string_view prefix) {
  static UlidState* state = new UlidState;  // never destroyed: ids may be made at exit
  uint64_t ms = static_cast<uint64_t>(absl::ToUnixMillis(absl::Now())) & ((1ULL << 48) - 1);
  uint64_t hi, lo;
  {
    std::lock_guard<std::mutex> lock(state->mu);
    if (pid_t pid = getpid(); pid != state->pid) {
      state->pid = pid;
      state->last_ms = 0;
      state->gen = absl::BitGen();
    }
    if (ms > state->last_ms) {
      state->last_ms = ms;
      state->random_hi = absl::Uniform<uint64_t>(state->gen, 0, 1ULL << 16);
      state->random_lo = absl::Uniform<uint64_t>(absl::IntervalClosed, state->gen, 0,
                                                 std::numeric_limits<uint64_t>::max());
    } else if (++state->random_lo == 0) {
      state->random_hi = (state->random_hi + 1) & 0xFFFF;
      if (state->random_hi == 0) ++state->last_ms;  // 2^80 ids in one ms: borrow the next
    }
    hi = (state->last_ms << 16) | state->random_hi;
    lo = state->random_lo;
  }
  std::string id(prefix);
  for (int i = 25; i >= 0; --i) id.push_back(kCrockford[FiveBits(hi, lo, i * 5)]);
  return id;
}

absl::StatusOr<CanonicalRequest> Normalize(const nlohmann::json& arguments,
                                           DeprecationPhase phase) {
  if (!arguments.is_object()) return PayloadError("arguments", "must be a JSON object");
  CanonicalRequest request;
  absl::StatusOr<const AliasRule*> rule = ResolveAction(arguments, phase, &request);
  if (!rule.ok()) return rule.status();
  for (auto step :
       {ReadCorrelation, ReadInvocation, ReadRuntime, ReadExecution, ReadTarget, ReadReadOptions}) {
    if (absl::Status status = step(arguments, &request); !status.ok()) return status;
  }
  if (*rule != nullptr) {
    if (absl::Status status = ApplyAlias(**rule, &request); !status.ok()) return status;
  }
  if (request.action == Action::kExecute) {
    if (absl::Status status = ApplyExecuteDefaults(&request); !status.ok()) return status;
  }
  if (absl::Status status = Validate(arguments, &request); !status.ok()) return status;
  return request;
}

}  // namespace termbridge::contract
