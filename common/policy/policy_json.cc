// JSON forms of a policy and of a decision. The policy snapshot is what the
// broker sends the agent in the handshake: the default action, the built-in
// switches (built-ins travel as flags, their code is in both binaries) and
// every other rule. FromJson is its exact inverse and rejects anything else.
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/policy/builtin_rules.h"
#include "common/policy/policy.h"
#include "common/policy/policy_internal.h"
#include "common/policy/text.h"

namespace termbridge::policy {
namespace {

using internal::Cat;

using nlohmann::json;

json RuleToJson(const Rule& r) {
  json j = {{"id", r.id},
            {"action", ActionName(r.action)},
            {"match", internal::MatchKindName(r.kind)},
            {"writes", r.writes},
            {"write_paths", r.write_paths},
            {"reason", r.reason},
            {"origin", r.origin}};
  if (!r.options.empty()) j["options"] = r.options;
  if (!r.read_paths.empty()) j["read_paths"] = r.read_paths;
  if (r.within_workspace) j["within_workspace"] = true;
  if (!r.cwd.empty()) j["cwd"] = r.cwd;
  if (r.expires_unix_s != 0) {
    j["expires"] = FormatExpiry(r.expires_unix_s);
    // For people reading `policy show`; FromJson ignores it.
    j["expired"] = Expired(r, std::time(nullptr));
  }
  if (r.kind == MatchKind::kRegex) {
    j["pattern"] = r.pattern;
  } else {
    j["argv"] = r.argv;
  }
  return j;
}

absl::Status Bad(std::string_view what) {
  return absl::InvalidArgumentError(Cat("policy json: ", what));
}

const json* Field(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

absl::StatusOr<std::string> OptionalString(const json& j, const char* key) {
  const json* v = Field(j, key);
  if (v == nullptr) return std::string();
  if (!v->is_string()) return Bad(Cat(key, " must be a string"));
  return v->get<std::string>();
}

absl::StatusOr<std::vector<std::string>> Strings(const json& j, const char* key) {
  std::vector<std::string> out;
  const json* v = Field(j, key);
  if (v == nullptr) return out;
  if (!v->is_array()) return Bad(Cat(key, " must be an array of strings"));
  for (const json& s : *v) {
    if (!s.is_string()) return Bad(Cat(key, " must be an array of strings"));
    out.push_back(s.get<std::string>());
  }
  return out;
}

absl::StatusOr<Rule> RuleFromJson(const json& j) {
  if (!j.is_object()) return Bad("a rule must be an object");
  Rule r;
  absl::StatusOr<std::string> id = OptionalString(j, "id");
  absl::StatusOr<std::string> action = OptionalString(j, "action");
  absl::StatusOr<std::string> match = OptionalString(j, "match");
  absl::StatusOr<std::string> pattern = OptionalString(j, "pattern");
  absl::StatusOr<std::string> reason = OptionalString(j, "reason");
  absl::StatusOr<std::string> origin = OptionalString(j, "origin");
  absl::StatusOr<std::vector<std::string>> argv = Strings(j, "argv");
  for (const absl::Status& s : {id.status(), action.status(), match.status(), pattern.status(),
                                reason.status(), origin.status(), argv.status()}) {
    if (!s.ok()) return s;
  }
  std::optional<Action> a = internal::ParseAction(*action);
  if (id->empty()) return Bad("a rule needs an id");
  if (!a) return Bad(Cat("rule ", *id, ": unknown action \"", *action, "\""));
  r.id = *id;
  r.action = *a;
  if (*match == "exact" || *match == "prefix") {
    r.kind = *match == "exact" ? MatchKind::kExact : MatchKind::kPrefix;
    r.argv = *argv;
  } else if (*match == "regex") {
    r.kind = MatchKind::kRegex;
    r.pattern = *pattern;
  } else {
    return Bad(Cat("rule ", *id, ": unknown match \"", *match, "\""));
  }
  if (const json* w = Field(j, "writes"); w != nullptr) {
    if (!w->is_boolean()) return Bad(Cat("rule ", *id, ": writes must be a boolean"));
    r.writes = w->get<bool>();
  }
  absl::StatusOr<std::vector<std::string>> write_paths = Strings(j, "write_paths");
  if (!write_paths.ok()) return write_paths.status();
  r.write_paths = *std::move(write_paths);
  absl::StatusOr<std::vector<std::string>> options = Strings(j, "options");
  if (!options.ok()) return options.status();
  r.options = *std::move(options);
  absl::StatusOr<std::vector<std::string>> read_paths = Strings(j, "read_paths");
  if (!read_paths.ok()) return read_paths.status();
  r.read_paths = *std::move(read_paths);
  absl::StatusOr<std::vector<std::string>> cwd = Strings(j, "cwd");
  if (!cwd.ok()) return cwd.status();
  r.cwd = *std::move(cwd);
  if (const json* w = Field(j, "within_workspace"); w != nullptr) {
    if (!w->is_boolean()) return Bad(Cat("rule ", *id, ": within_workspace must be a boolean"));
    r.within_workspace = w->get<bool>();
  }
  absl::StatusOr<std::string> expires = OptionalString(j, "expires");
  if (!expires.ok()) return expires.status();
  if (!expires->empty()) {
    std::optional<int64_t> when = ParseExpiry(*expires);
    if (!when) return Bad(Cat("rule ", *id, ": expires must be RFC 3339"));
    r.expires_unix_s = *when;
  }
  r.reason = *reason;
  r.origin = *origin;
  return r;
}

}  // namespace

json Decision::ToJson() const {
  json cmds = json::array();
  for (const CommandDecision& c : commands) {
    cmds.push_back({{"command", c.command},
                    {"action", ActionName(c.action)},
                    {"rule_id", c.rule_id},
                    {"reason", c.reason},
                    {"reads", c.reads},
                    {"read_scope", c.read_scope},
                    {"read_blocker", c.read_blocker}});
  }
  json out = {{"action", ActionName(action)},
              {"rule_id", rule_id},
              {"reason", reason},
              {"command", command},
              {"parsed", parsed},
              {"commands", cmds},
              {"reads", reads},
              {"read_scope", read_scope},
              {"read_blocker", read_blocker}};
  if (!limit.empty()) out["limit"] = limit;
  return out;
}

json Policy::ToJson() const {
  bool all_off = false;
  std::vector<std::string> ids;
  for (const std::string& d : disabled_builtins_) {
    all_off = all_off || d == "*";
    if (d != "*") ids.push_back(d);
  }
  json builtins = json::array();
  json rules = json::array();
  for (const Rule& r : rules_) {
    if (r.kind == MatchKind::kBuiltin) {
      builtins.push_back({{"id", r.id}, {"reason", r.reason}});
    } else {
      rules.push_back(RuleToJson(r));
    }
  }
  return {{"version", 1},
          {"default", ActionName(default_action_)},
          {"builtin_deny", !all_off},
          {"disable_builtin", ids},
          {"builtin_rules", builtins},
          {"sensitive_paths", sensitive_paths_},
          {"rules", rules}};
}

absl::StatusOr<Policy> Policy::FromJson(const json& j) {
  if (!j.is_object()) return Bad("the policy must be an object");
  if (const json* v = Field(j, "version"); v != nullptr && (!v->is_number_integer() || *v != 1)) {
    return Bad("version must be 1");
  }
  absl::StatusOr<std::string> def = OptionalString(j, "default");
  if (!def.ok()) return def.status();
  std::optional<Action> action = internal::ParseAction(def->empty() ? "ask" : *def);
  if (!action) return Bad(Cat("unknown default action \"", *def, "\""));
  absl::StatusOr<std::vector<std::string>> disabled = Strings(j, "disable_builtin");
  if (!disabled.ok()) return disabled.status();
  for (const std::string& id : *disabled) {
    if (internal::FindBuiltin(id) == nullptr) return Bad(Cat("unknown built-in ", id));
  }
  if (const json* b = Field(j, "builtin_deny"); b != nullptr) {
    if (!b->is_boolean()) return Bad("builtin_deny must be a boolean");
    if (!b->get<bool>()) disabled->push_back("*");
  }
  std::vector<Rule> rules;
  if (const json* rs = Field(j, "rules"); rs != nullptr) {
    if (!rs->is_array()) return Bad("rules must be an array");
    for (const json& r : *rs) {
      absl::StatusOr<Rule> rule = RuleFromJson(r);
      if (!rule.ok()) return rule.status();
      rules.push_back(*std::move(rule));
    }
  }
  absl::StatusOr<std::vector<std::string>> sensitive = Strings(j, "sensitive_paths");
  if (!sensitive.ok()) return sensitive.status();
  return Assemble(std::move(rules), *action, *std::move(disabled), *std::move(sensitive));
}

}  // namespace termbridge::policy
