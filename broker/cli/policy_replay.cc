// Judging audited commands again (policy_replay.h). The decisions come from
// history::Decisions; each is joined with its deciding record by index for
// what Decisions leaves out (the exact line, cwd, workspace, lane and the
// policy's own action before a terminal grant or a person overrode it).
#include "broker/cli/policy_replay.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "broker/audit/audit_log.h"
#include "common/text/utf8.h"
#include "common/text/visible.h"

namespace termbridge::cli::replay {
namespace {

using nlohmann::json;

// The longest command shown on a line of the text output.
constexpr size_t kMaxShownCommand = 160;

std::string Str(const json& record, std::string_view key) {
  auto it = record.find(key);
  return it != record.end() && it->is_string() ? it->get<std::string>() : "";
}

// The rules the gate adds after the policy (broker/core/gate_checks.cc
// TightenDecision): they judge what was true at that moment only.
bool GateOnlyRule(const std::string& rule) {
  return rule == "builtin.agent-env" || rule == "builtin.input-reader" ||
         rule == "builtin.repo-config" || rule == "builtin.shell-dialect" ||
         rule == "builtin.shell-state";
}

// As core::ContextFor: the broker's cwd_roots, else the terminal's workspace.
policy::CheckContext ContextOf(const Replayed& r, const ReplayOptions& options) {
  policy::CheckContext context;
  context.cwd = r.cwd;
  context.read_roots = options.cwd_roots;
  if (context.read_roots.empty() && !r.workspace.empty()) context.read_roots = {r.workspace};
  return context;
}

std::string LocalTime(absl::Time t) {
  if (t == absl::InfinitePast()) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", t, absl::LocalTimeZone());
}

std::string Shown(const std::string& command) {
  std::string visible = text::Visible(command);
  if (visible.size() <= kMaxShownCommand) return visible;
  return absl::StrCat(std::string(text::CutAtCharBoundary(visible, kMaxShownCommand)), "...");
}

std::string RuleText(const std::string& action, const std::string& rule) {
  return absl::StrCat(action, " (", rule.empty() ? "default action" : rule, ")");
}

// The cwd of the last command_requested before `index` with this agent,
// trace id and command (records older than the decision's own cwd field).
std::string RequestedCwd(
    const std::multimap<std::pair<std::string, std::string>, const json*>& requested,
    const std::string& agent, const std::string& trace_id, const std::string& command,
    uint64_t index) {
  std::string cwd;
  auto [first, last] = requested.equal_range({agent, trace_id});
  for (auto it = first; it != last; ++it) {
    const json& sent = *it->second;
    if (sent.value("index", uint64_t{0}) >= index || Str(sent, "command") != command) continue;
    cwd = Str(sent, "cwd");
  }
  return cwd;
}

json ReplayedJson(const Replayed& r) {
  json out = history::DecisionJson(r.audited);
  out["command"] = r.command;
  out["cwd"] = r.cwd;
  out["workspace"] = r.workspace;
  out["before"] = {{"action", r.before}, {"rule", r.before_rule}};
  if (r.skipped.empty()) {
    out["after"] = {{"action", r.after}, {"rule", r.after_rule}, {"reason", r.after_reason}};
  } else {
    out["skipped"] = r.skipped;
  }
  return out;
}

}  // namespace

ReplayResult Replay(const std::vector<json>& records, const policy::Policy& policy,
                    const ReplayOptions& options) {
  std::map<uint64_t, const json*> by_index;
  // (agent, trace_id) -> its command_requested records, oldest first. The
  // trace id is the agent's to choose, so it alone joins nothing: the
  // agent and the command must be the decision's too.
  std::multimap<std::pair<std::string, std::string>, const json*> requested;
  for (const json& record : records) {
    by_index[record.value("index", uint64_t{0})] = &record;
    if (Str(record, "event") == audit::kCommandRequested) {
      requested.emplace(std::make_pair(Str(record, "agent_id"), Str(record, "trace_id")), &record);
    }
  }
  history::DecisionFilter filter;
  filter.agent = options.agent;
  filter.since = options.since;
  filter.until = options.until;
  ReplayResult result;
  for (history::Decision& d : history::Filter(history::Decisions(records), filter)) {
    if (d.kind != "command") continue;  // an agent's proposed rule is not a command
    auto found = by_index.find(d.index);
    if (found == by_index.end()) continue;
    const json& record = *found->second;
    Replayed r;
    r.command = Str(record, "command");
    r.cwd = Str(record, "cwd");
    r.workspace = Str(record, "workspace");
    if (d.asked) {
      r.before = "ask";
      r.before_rule = Str(record, "rule");
    } else {
      const json empty = json::object();
      auto it = record.find("decision");
      const json& decision = it != record.end() && it->is_object() ? *it : empty;
      r.before = Str(decision, "action");
      r.before_rule = Str(decision, "rule_id");
    }
    if (r.command.empty()) r.command = d.command;  // a record before "command" was added
    if (r.cwd.empty()) r.cwd = RequestedCwd(requested, d.agent_id, d.trace_id, r.command, d.index);
    r.audited = std::move(d);
    if (GateOnlyRule(r.before_rule)) {
      r.skipped = absl::StrCat(r.before_rule,
                               " decided it from what was true then (the agent's environment, the "
                               "program reading the line, the repository's config)");
      result.skipped.push_back(std::move(r));
      continue;
    }
    policy::Decision after = policy.Check(r.command, ContextOf(r, options));
    r.after = std::string(policy::ActionName(after.action));
    r.after_rule = after.rule_id;
    r.after_reason = after.reason;
    ++result.judged;
    if (r.cwd.empty()) ++result.cwd_unknown;
    if (r.after != r.before) result.changed.push_back(std::move(r));
  }
  return result;
}

json ResultJson(const ReplayResult& result) {
  json changed = json::array();
  std::map<std::string, size_t> summary;
  for (const Replayed& r : result.changed) {
    changed.push_back(ReplayedJson(r));
    ++summary[absl::StrCat(r.before, "->", r.after)];
  }
  json skipped = json::array();
  for (const Replayed& r : result.skipped) skipped.push_back(ReplayedJson(r));
  json counts = json::object();
  for (const auto& [change, n] : summary) counts[change] = n;
  return {{"judged", result.judged},
          {"changed", changed},
          {"unchanged", result.judged - result.changed.size()},
          {"skipped", skipped},
          {"cwd_unknown", result.cwd_unknown},
          {"summary", counts}};
}

void PrintResult(const ReplayResult& result, std::ostream& out) {
  std::map<std::string, size_t> summary;
  for (const Replayed& r : result.changed) {
    const history::Decision& d = r.audited;
    std::string then = RuleText(r.before, r.before_rule);
    if (d.asked) absl::StrAppend(&then, ", ", d.decision, " by ", history::DecidedBy(d));
    out << absl::StrFormat("%-19s  %-12s  %s -> %s  %s\n", LocalTime(d.time),
                           text::Visible(d.agent_id.empty() ? "-" : d.agent_id),
                           text::Visible(then), text::Visible(RuleText(r.after, r.after_rule)),
                           Shown(r.command));
    if (r.cwd.empty()) out << "    (judged without a cwd: the record does not say where it ran)\n";
    ++summary[absl::StrCat(r.before, " -> ", r.after)];
  }
  for (const Replayed& r : result.skipped) {
    out << absl::StrFormat("%-19s  %-12s  not judged again: %s  %s\n", LocalTime(r.audited.time),
                           text::Visible(r.audited.agent_id.empty() ? "-" : r.audited.agent_id),
                           text::Visible(r.skipped), Shown(r.command));
  }
  std::string counts;
  for (const auto& [change, n] : summary) {
    absl::StrAppend(&counts, counts.empty() ? "" : ", ", change, ": ", n);
  }
  out << result.changed.size() << " of " << result.judged << " decisions would change"
      << (counts.empty() ? "" : " (" + counts + ")");
  if (!result.skipped.empty()) out << "; " << result.skipped.size() << " not judged again";
  if (result.cwd_unknown > 0) out << "; " << result.cwd_unknown << " judged without a cwd";
  out << "\n";
}

}  // namespace termbridge::cli::replay
