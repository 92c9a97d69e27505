// Deciding what a command line may do: every simple command the parser finds
// is checked against the rules (built-ins and deny first, then ask, then
// allow), the line gets the strictest action, and each decision says which
// rule made it and why. Also the two lanes (interactive Check, strict
// CheckHeadless) and the "always" helper RulesToAllow.
#include "common/policy/policy.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/policy/builtin_rules.h"
#include "common/policy/options.h"
#include "common/policy/policy_internal.h"
#include "common/policy/protected_paths.h"
#include "common/policy/read_scope.h"
#include "common/policy/shell_parser.h"
#include "common/policy/text.h"
#include "common/text/utf8.h"
#include "re2/re2.h"

namespace termbridge::policy {

using internal::Append;
using internal::Cat;
using internal::IsTrustedProgramPath;
using internal::Join;
using internal::StartsWith;

std::string FormatExpiry(int64_t unix_s) {
  time_t t = static_cast<time_t>(unix_s);
  struct tm tm {};
  if (gmtime_r(&t, &tm) == nullptr) return std::to_string(unix_s);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::optional<int64_t> ParseExpiry(std::string_view text) {
  std::string s(text);
  struct tm tm {};
  char sep = 0;
  int consumed = 0;
  if (sscanf(s.c_str(), "%4d-%2d-%2d%c%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &sep,
             &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &consumed) != 7 ||
      (sep != 'T' && sep != 't' && sep != ' ') || consumed != 19) {
    return std::nullopt;
  }
  std::string_view rest = std::string_view(s).substr(19);
  int64_t offset_s = 0;
  if (rest == "Z" || rest == "z") {
    offset_s = 0;
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':') {
    int hh = 0, mm = 0;
    if (sscanf(std::string(rest.substr(1)).c_str(), "%2d:%2d", &hh, &mm) != 2 || hh > 23 ||
        mm > 59) {
      return std::nullopt;
    }
    offset_s = (rest[0] == '+' ? 1 : -1) * (hh * 3600 + mm * 60);
  } else {
    return std::nullopt;
  }
  if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
      tm.tm_min > 59 || tm.tm_sec > 60) {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  int64_t utc = static_cast<int64_t>(timegm(&tm));
  return utc - offset_s;
}

bool Expired(const Rule& rule, int64_t now_unix_s) {
  return rule.expires_unix_s != 0 && rule.expires_unix_s <= now_unix_s;
}

std::string_view ActionName(Action action) {
  switch (action) {
    case Action::kAllow:
      return "allow";
    case Action::kAsk:
      return "ask";
    case Action::kDeny:
      return "deny";
  }
  return "ask";
}

namespace internal {

std::optional<Action> ParseAction(std::string_view name) {
  if (name == "allow") return Action::kAllow;
  if (name == "ask") return Action::kAsk;
  if (name == "deny") return Action::kDeny;
  return std::nullopt;
}

std::string_view MatchKindName(MatchKind kind) {
  switch (kind) {
    case MatchKind::kExact:
      return "exact";
    case MatchKind::kPrefix:
      return "prefix";
    case MatchKind::kRegex:
      return "regex";
    case MatchKind::kBuiltin:
      return "builtin";
  }
  return "exact";
}

}  // namespace internal

namespace {

int Severity(Action a) { return a == Action::kDeny ? 2 : a == Action::kAsk ? 1 : 0; }

// `s`, or its first max - 3 bytes and "..." when longer, never cut inside a
// UTF-8 character (a reason must stay valid text for JSON and the wire).
std::string Shorten(std::string_view s, size_t max = 200) {
  if (s.size() <= max) return std::string(s);
  return Cat(text::CutAtCharBoundary(s, max - 3), "...");
}

// NAME=value or NAME+=value with a harmless name and a sound value.
bool IsSafeEnv(std::string_view assignment) {
  size_t eq = assignment.find('=');
  if (eq == std::string_view::npos) return false;
  std::string_view name = assignment.substr(0, eq);
  if (!name.empty() && name.back() == '+') name.remove_suffix(1);
  return EnvNameHarmless(name, {}) && !EnvValueProblem(name, assignment.substr(eq + 1));
}

std::string CommandText(const SimpleCommand& c) {
  if (!c.argv.empty()) return c.Text();
  if (!c.write_targets.empty()) return Cat("> ", Join(c.write_targets, " "));
  if (!c.read_sources.empty()) return Cat("< ", Join(c.read_sources, " "));
  return "(a redirection)";
}

std::string Display(const SimpleCommand& c) {
  std::string s = Cat("`", Shorten(CommandText(c)), "`");
  if (!c.via.empty()) Append(&s, " via ", Join(c.via, ", "));
  return s;
}

// Why no allow rule may match `c`, or "" when allow rules may.
std::string AllowBlocker(const SimpleCommand& c) {
  if (c.argv.empty()) return "it is a redirection without a command";
  if (c.opaque) return c.note.empty() ? "it runs code the parser cannot see" : c.note;
  if (c.dynamic) return c.note.empty() ? "part of it is only known at run time" : c.note;
  for (const std::string& e : c.env) {
    if (!IsSafeEnv(e)) return Cat("it sets ", e.substr(0, e.find('=')));
  }
  return "";
}

std::string RuleReason(const Rule& r, const SimpleCommand& c) {
  std::string s = Cat(ActionName(r.action), ": ", r.id, " matched ", Display(c));
  if (!r.reason.empty()) Append(&s, " (", r.reason, ")");
  return s;
}

uint32_t Fnv1a(std::string_view s) {
  uint32_t h = 2166136261u;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 16777619u;
  }
  return h;
}

// Picks the first decision with the strictest action, preferring one a rule
// made over the default action, so `curl x | sh` under default = "deny" is
// reported as builtin.pipe-to-shell rather than "no rule matched curl".
size_t Strictest(const std::vector<CommandDecision>& ds) {
  size_t best = 0;
  for (size_t i = 1; i < ds.size(); ++i) {
    int a = Severity(ds[i].action), b = Severity(ds[best].action);
    if (a > b || (a == b && ds[best].rule_id.empty() && !ds[i].rule_id.empty())) best = i;
  }
  return best;
}

void Adopt(const CommandDecision& cd, Decision* d) {
  d->action = cd.action;
  d->rule_id = cd.rule_id;
  d->reason = cd.reason;
  d->command = cd.command;
  d->read_scope = cd.read_scope;
  d->read_blocker = cd.read_blocker;
}

void CollectReads(Decision* d) {
  std::unordered_set<std::string_view> seen;
  for (const CommandDecision& cd : d->commands) {
    for (const std::string& r : cd.reads) {
      if (seen.insert(r).second) d->reads.push_back(r);
    }
  }
}

// Why `plan` may not run under `scope`, with *path set to the read; "" when
// it may.
std::string ReadProblem(const internal::ReadPlan& plan, const internal::ReadScope& scope,
                        std::string* path) {
  if (!plan.unknown.empty()) {
    *path = plan.unknown;
    return Cat(plan.unknown, ", which no read scope can check");
  }
  bool walk = false;
  std::optional<std::string> outside = internal::FirstReadOutside(plan, scope, &walk);
  if (!outside) return "";
  *path = *outside;
  if (scope.entries.empty() && !scope.too_broad.empty()) {
    return Cat(walk ? "walks " : "reads ", *outside, ", and ", scope.too_broad, ": reads ask");
  }
  return Cat(walk ? "walks " : "reads ", *outside, walk ? " (every file below it)" : "",
             ", outside the read scope ", Join(scope.shown, ", "));
}

}  // namespace

std::vector<Rule> Policy::BuiltinRules() {
  std::vector<Rule> rules;
  for (const internal::BuiltinSpec& s : internal::BuiltinSpecs()) {
    Rule r;
    r.id = std::string(s.id);
    r.action = Action::kDeny;
    r.kind = MatchKind::kBuiltin;
    r.reason = std::string(s.reason);
    r.origin = "builtin";
    rules.push_back(std::move(r));
  }
  return rules;
}

const std::vector<std::string>& Policy::DefaultSensitivePaths() {
  return internal::DefaultSensitivePaths();
}

std::vector<std::string> Policy::SensitiveGlobs() const {
  std::vector<std::string> out = internal::DefaultSensitivePaths();
  out.insert(out.end(), sensitive_paths_.begin(), sensitive_paths_.end());
  for (const std::string& p : protected_forms_) {
    out.push_back(p == "/" ? "/**" : Cat(internal::EscapeReadGlob(p), "/**"));
  }
  return out;
}

absl::StatusOr<Policy> Policy::Assemble(std::vector<Rule> rules, Action default_action,
                                        std::vector<std::string> disabled_builtins,
                                        std::vector<std::string> sensitive_paths) {
  Policy p;
  for (const std::string& s : sensitive_paths) {
    if (s.empty()) return absl::InvalidArgumentError("sensitive_paths must not hold \"\"");
  }
  p.sensitive_paths_ = std::move(sensitive_paths);
  p.default_action_ = default_action;
  bool all_off =
      std::find(disabled_builtins.begin(), disabled_builtins.end(), "*") != disabled_builtins.end();
  for (Rule& b : BuiltinRules()) {
    const internal::BuiltinSpec* spec = internal::FindBuiltin(b.id);
    bool by_id = std::find(disabled_builtins.begin(), disabled_builtins.end(), b.id) !=
                 disabled_builtins.end();
    bool off = by_id || (all_off && !spec->survives_all_off);
    if (!off) p.rules_.push_back(std::move(b));
  }
  p.disabled_builtins_ = std::move(disabled_builtins);
  for (Action action : {Action::kDeny, Action::kAsk, Action::kAllow}) {
    for (Rule& r : rules) {
      if (r.action != action || r.kind == MatchKind::kBuiltin) continue;
      std::string where = r.origin.empty() ? r.id : r.origin;
      if (r.kind != MatchKind::kRegex && r.argv.empty()) {
        return absl::InvalidArgumentError(Cat(where, ": rule ", r.id, " has no argv"));
      }
      if (r.action != Action::kAllow && (!r.cwd.empty() || r.within_workspace)) {
        return absl::InvalidArgumentError(
            Cat(where, ": rule ", r.id, ": cwd and within_workspace are for allow rules"));
      }
      for (const std::string& dir : r.cwd) {
        if (dir.empty() || (dir[0] != '/' && dir[0] != '~')) {
          return absl::InvalidArgumentError(Cat(where, ": rule ", r.id, ": cwd entry \"", dir,
                                                "\" must be absolute or start with ~"));
        }
      }
      for (const std::string& option : r.options) {
        if (!internal::IsOptionName(option)) {
          return absl::InvalidArgumentError(
              Cat(where, ": rule ", r.id, ": option \"", option, "\" is neither -x nor --name"));
        }
      }
      p.rules_.push_back(std::move(r));
    }
  }
  p.regexes_.resize(p.rules_.size());
  p.write_regexes_.resize(p.rules_.size());
  RE2::Options options;
  options.set_log_errors(false);
  for (size_t i = 0; i < p.rules_.size(); ++i) {
    const Rule& r = p.rules_[i];
    std::string where = r.origin.empty() ? r.id : r.origin;
    if (r.kind == MatchKind::kRegex) {
      auto re = std::make_shared<const RE2>(r.pattern, options);
      if (!re->ok()) return absl::InvalidArgumentError(Cat(where, ": bad regex: ", re->error()));
      p.regexes_[i] = std::move(re);
    }
    if (!r.write_paths.empty()) {
      auto re = std::make_shared<const RE2>(internal::WritePathsRegex(r.write_paths), options);
      if (!re->ok()) {
        return absl::InvalidArgumentError(Cat(where, ": bad write_paths: ", re->error()));
      }
      p.write_regexes_[i] = std::move(re);
    }
  }
  return p;
}

absl::StatusOr<Policy> Policy::WithRules(std::vector<Rule> extra) const {
  std::vector<Rule> rules;
  std::unordered_set<std::string> ids;
  for (const Rule& r : rules_) {
    if (r.kind == MatchKind::kBuiltin) continue;
    ids.insert(r.id);
    rules.push_back(r);
  }
  for (Rule& r : extra) {
    if (!ids.insert(r.id).second) {
      return absl::InvalidArgumentError(Cat("rule id \"", r.id, "\" is already in the policy"));
    }
    rules.push_back(std::move(r));
  }
  absl::StatusOr<Policy> p =
      Assemble(std::move(rules), default_action_, disabled_builtins_, sensitive_paths_);
  if (!p.ok()) return p.status();
  p->protected_paths_ = protected_paths_;
  p->protected_forms_ = protected_forms_;
  return p;
}

Policy Policy::Default() {
  absl::StatusOr<Policy> p = Assemble(internal::DefaultRules(), Action::kAsk, {});
  return *std::move(p);  // the default rules are constants: a failure cannot happen
}

void Policy::SetProtectedPaths(std::vector<std::string> paths) {
  protected_forms_ = internal::ProtectedForms(paths);
  protected_paths_ = std::move(paths);
}

bool Policy::Matches(size_t index, const SimpleCommand& c, const ParsedLine& line,
                     const CheckContext& context) const {
  const Rule& r = rules_[index];
  if (r.kind == MatchKind::kBuiltin) {
    const internal::BuiltinSpec* spec = internal::FindBuiltin(r.id);
    if (spec == nullptr || spec->command == nullptr) return false;
    internal::BuiltinContext builtin_context{&protected_forms_, context.cwd};
    return spec->command(c, line, builtin_context);
  }
  if (r.expires_unix_s != 0 &&
      Expired(r, context.now_unix_s != 0 ? context.now_unix_s : std::time(nullptr))) {
    return false;
  }
  if (c.argv.empty() || !MatchesArgv(index, c)) return false;
  if (!r.cwd.empty() && !internal::RunsWithin(r.cwd, c, line, context)) return false;
  if (r.options.empty()) return true;
  for (const std::string& option : r.options) {
    if (HasOption(c, option)) return true;
  }
  return false;
}

bool Policy::MatchesArgv(size_t index, const SimpleCommand& c) const {
  const Rule& r = rules_[index];
  if (r.kind == MatchKind::kRegex) {
    return regexes_[index] != nullptr && RE2::PartialMatch(c.Text(), *regexes_[index]);
  }
  if (r.kind == MatchKind::kExact && c.argv.size() != r.argv.size()) return false;
  if (c.argv.size() < r.argv.size()) return false;
  if (r.argv[0].find('/') != std::string::npos) {
    if (c.argv[0] != r.argv[0]) return false;
  } else if (c.program != r.argv[0] ||
             (r.action == Action::kAllow && !IsTrustedProgramPath(c.argv[0]))) {
    return false;
  }
  return std::equal(r.argv.begin() + 1, r.argv.end(), c.argv.begin() + 1);
}

CommandDecision Policy::Decide(const SimpleCommand& c, const ParsedLine& line) const {
  return Decide(c, line, CheckContext{});
}

CommandDecision Policy::Decide(const SimpleCommand& c, const ParsedLine& line,
                               const CheckContext& context) const {
  CommandDecision d;
  d.command = CommandText(c);
  std::string blocker = AllowBlocker(c);
  std::string write_blocker;
  std::string read_blocker;
  internal::ReadPlan plan = internal::PlanReads(c, line, context.cwd);
  d.reads = plan.Shown();
  const internal::ReadScope workspace = internal::MakeReadScope({}, context);
  d.read_scope = workspace.shown;
  for (size_t i = 0; i < rules_.size(); ++i) {
    const Rule& r = rules_[i];
    if (r.action == Action::kAllow && !blocker.empty()) continue;
    if (!Matches(i, c, line, context)) continue;
    if (r.action == Action::kAllow && !c.write_targets.empty()) {
      if (!r.writes) {
        write_blocker = Cat(r.id, " matched, but it writes ", Join(c.write_targets, ", "),
                            " and the rule has no writes = true");
        continue;
      }
      std::vector<std::string> uncovered;
      for (const std::string& target : c.write_targets) {
        const re2::RE2* allowed = write_regexes_[i].get();
        if (allowed == nullptr) continue;
        if (std::string why; !internal::WriteCovered(*allowed, target, line, context.cwd, &why)) {
          uncovered.push_back(why.empty() ? target : Cat(target, " (", why, ")"));
        }
      }
      if (!uncovered.empty()) {
        write_blocker = Cat(r.id, " matched, but it writes ", Join(uncovered, ", "),
                            ", which its write_paths do not cover");
        continue;
      }
    }
    if (r.action == Action::kAllow) {
      internal::ReadScope scope =
          r.read_paths.empty() ? workspace : internal::MakeReadScope(r.read_paths, context);
      std::string path;
      std::string problem = ReadProblem(plan, scope, &path);
      if (problem.empty() && r.within_workspace && !r.read_paths.empty()) {
        // Both scopes: reads inside read_paths that leave the workspace ask.
        problem = ReadProblem(plan, workspace, &path);
        if (!problem.empty()) scope = workspace;
      }
      if (!problem.empty()) {
        read_blocker = Cat(r.id, " matched, but it ", problem);
        d.read_blocker = path;
        d.read_scope = scope.shown;
        continue;
      }
      d.read_scope = scope.shown;
      d.read_blocker.clear();
    }
    d.action = r.action;
    d.rule_id = r.id;
    d.reason = RuleReason(r, c);
    GuardReads(c, plan, &d);
    return d;
  }
  // An operator's `default = "allow"` allows reads anywhere (it names no
  // scope); sensitive paths and process listings still ask (GuardReads).
  d.action = default_action_;
  d.reason = Cat(ActionName(d.action), ": no rule matched ", Display(c), " (default action");
  if (!blocker.empty()) {
    Append(&d.reason, "; allow rules skip it: ", blocker);
  } else if (!write_blocker.empty()) {
    Append(&d.reason, "; ", write_blocker);
  } else if (!read_blocker.empty()) {
    Append(&d.reason, "; ", read_blocker);
  }
  Append(&d.reason, ")");
  GuardReads(c, plan, &d);
  return d;
}

void Policy::GuardReads(const SimpleCommand& c, const internal::ReadPlan& plan,
                        CommandDecision* d) const {
  if (d->action == Action::kDeny) return;
  if (d->action == Action::kAsk && !d->rule_id.empty()) return;  // an ask rule decided
  if (std::optional<std::string> ps = internal::ProcessListingProblem(c)) {
    d->action = Action::kAsk;
    d->rule_id = kProcessListingRule;
    d->reason = Cat("ask: ", kProcessListingRule, " matched ", Display(c), " (", *ps, ")");
    return;
  }
  std::optional<internal::SensitiveHit> hit = internal::FirstSensitiveRead(plan, SensitiveGlobs());
  if (!hit) return;
  d->action = Action::kAsk;
  d->rule_id = kSensitiveReadRule;
  d->read_blocker = hit->path;
  d->reason = Cat("ask: ", kSensitiveReadRule, " matched ", Display(c), " (it reads ", hit->path,
                  ", a sensitive path: ", hit->pattern, ")");
}

namespace {

// Deny decisions of the built-ins that look at the raw line (fork bombs).
std::vector<CommandDecision> LineBuiltins(const std::vector<Rule>& rules, std::string_view raw) {
  std::vector<CommandDecision> out;
  for (const Rule& r : rules) {
    if (r.kind != MatchKind::kBuiltin) continue;
    const internal::BuiltinSpec* spec = internal::FindBuiltin(r.id);
    if (spec == nullptr || spec->line == nullptr || !spec->line(raw)) continue;
    CommandDecision d;
    d.command = Shorten(raw);
    d.action = Action::kDeny;
    d.rule_id = r.id;
    d.reason = Cat("deny: ", r.id, " matched `", d.command, "` (", r.reason, ")");
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace

Decision Policy::Check(std::string_view line) const { return Check(line, CheckContext{}); }

Decision Policy::Check(std::string_view line, const CheckContext& context) const {
  ParsedLine p = ParseLine(line);
  Decision d;
  d.parsed = !p.error.has_value();
  if (line.size() <= kMaxLineBytes) d.commands = LineBuiltins(rules_, line);
  for (const SimpleCommand& c : p.commands) d.commands.push_back(Decide(c, p, context));
  for (const std::string& a : p.assignments) {
    CommandDecision cd;
    cd.command = a;
    cd.action = default_action_;
    cd.reason = Cat(ActionName(default_action_), ": `", Shorten(a),
                    "` changes a shell variable (default action; no rule can allow it)");
    d.commands.push_back(std::move(cd));
  }
  if (!d.commands.empty()) Adopt(d.commands[Strictest(d.commands)], &d);
  CollectReads(&d);
  if (p.error) {
    if (!d.commands.empty() && d.action == Action::kDeny) return d;
    d.action = Action::kAsk;
    d.rule_id.clear();
    d.command = Shorten(line);
    if (!p.limit.empty()) {
      d.rule_id = kTooComplexRule;
      d.limit = p.limit;
      d.reason = Cat("ask: ", kTooComplexRule, ": ", *p.error,
                     "; the line is not judged further, a person has to read it");
      return d;
    }
    d.reason = Cat("ask: the line cannot be parsed: ", *p.error, "; a person has to read it");
    return d;
  }
  if (d.commands.empty()) {
    d.action = Action::kAllow;
    d.reason = "allow: nothing to run";
  }
  return d;
}

Decision Policy::CheckHeadless(const std::vector<std::string>& argv) const {
  Decision d;
  if (argv.empty()) {
    d.action = Action::kDeny;
    d.reason = "deny: empty command";
    return d;
  }
  ParsedLine p = ParseArgv(argv);
  d.parsed = !p.error.has_value();
  if (p.limit != "line_bytes") d.commands = LineBuiltins(rules_, Join(argv, " "));
  for (const SimpleCommand& c : p.commands) d.commands.push_back(Decide(c, p));
  if (!d.commands.empty()) Adopt(d.commands[Strictest(d.commands)], &d);
  CollectReads(&d);
  if (!d.commands.empty() && d.action == Action::kDeny) return d;
  d.action = Action::kDeny;
  d.rule_id.clear();
  if (p.error && !p.limit.empty()) {
    d.rule_id = kTooComplexRule;
    d.limit = p.limit;
    d.command = Shorten(Join(argv, " "));
    d.reason = Cat("deny: ", kTooComplexRule, ": ", *p.error,
                   " (the headless lane runs only what it can check)");
    return d;
  }
  if (p.error) {
    d.reason = Cat("deny: cannot parse the code inside `", Shorten(argv[0]), "`: ", *p.error,
                   " (the headless lane runs only what it can check)");
    return d;
  }
  if (p.has_operators) {
    d.reason =
        "deny: shell operators inside the command's code are not allowed in the headless "
        "lane";
    return d;
  }
  if (d.commands.empty()) {
    d.reason = "deny: nothing to run";
    return d;
  }
  std::vector<std::string> ids;
  for (const CommandDecision& cd : d.commands) {
    if (cd.action != Action::kAllow || cd.rule_id.empty()) {
      d.command = cd.command;
      d.rule_id = cd.rule_id;
      d.reason =
          Cat("deny: the headless lane runs only commands an allow rule matches; ", cd.reason);
      return d;
    }
    ids.push_back(cd.rule_id);
  }
  d.action = Action::kAllow;
  d.rule_id = d.commands[0].rule_id;
  d.command = d.commands[0].command;
  d.reason = d.commands.size() == 1 ? d.commands[0].reason
                                    : Cat("allow: every part is allowed (", Join(ids, ", "), ")");
  return d;
}

absl::StatusOr<std::vector<Rule>> Policy::RulesToAllow(std::string_view line) const {
  return RulesToAllow(line, CheckContext{});
}

absl::StatusOr<std::vector<Rule>> Policy::RulesToAllow(std::string_view line,
                                                       const CheckContext& context) const {
  ParsedLine p = ParseLine(line);
  if (p.error) {
    return absl::FailedPreconditionError(Cat("cannot parse the line: ", *p.error));
  }
  Decision d = Check(line, context);
  if (d.action == Action::kDeny) return absl::FailedPreconditionError(d.reason);
  if (!p.assignments.empty()) {
    return absl::FailedPreconditionError(
        Cat("`", Shorten(p.assignments[0]), "` changes a shell variable; no rule can allow that"));
  }
  std::vector<Rule> out;
  for (const SimpleCommand& c : p.commands) {
    CommandDecision cd = Decide(c, p, context);
    if (cd.action == Action::kAllow && !cd.rule_id.empty()) continue;
    std::string blocker = AllowBlocker(c);
    if (!blocker.empty()) {
      return absl::FailedPreconditionError(
          Cat(Display(c), " can never be allowed by a rule: ", blocker));
    }
    if (cd.rule_id == kSensitiveReadRule || cd.rule_id == kProcessListingRule) {
      return absl::FailedPreconditionError(
          Cat(cd.reason, "; \"always\" never covers that: a person approves it each time"));
    }
    if (cd.action != Action::kAllow && !cd.rule_id.empty()) {
      return absl::FailedPreconditionError(
          Cat(cd.rule_id, " asks for ", Display(c), "; an allow rule would not override it"));
    }
    internal::ReadPlan plan = internal::PlanReads(c, p, context.cwd);
    if (!plan.unknown.empty()) {
      return absl::FailedPreconditionError(
          Cat(Display(c), ": ", plan.unknown, ", so no rule can say what it may read"));
    }
    for (const std::string& a : c.argv) {
      if (!text::ValidUtf8(a)) {
        return absl::FailedPreconditionError(
            Cat(Display(c), " is not valid UTF-8, so no rule can name it"));
      }
    }
    Rule r;
    r.action = Action::kAllow;
    r.kind = MatchKind::kExact;
    r.argv = c.argv;
    if (IsTrustedProgramPath(c.argv[0])) r.argv[0] = c.program;
    r.writes = !c.write_targets.empty();
    // "Always" covers the files this command writes, not every file.
    for (const std::string& target : c.write_targets) {
      if (!target.empty() && target.back() == '/') {
        return absl::FailedPreconditionError(
            Cat(Display(c), " writes to ", target, ", a directory, so no rule can name the file"));
      }
      // A rule names a path as written; one the shell would spell otherwise
      // (build//a.log, ./a/./b) would not match it again.
      if (target.find("//") != std::string::npos || target.find("/./") != std::string::npos ||
          (target.size() >= 2 && target.compare(target.size() - 2, 2, "/.") == 0)) {
        return absl::FailedPreconditionError(
            Cat(Display(c), " writes to ", target,
                ", which is not spelled in its plain form, so no rule can name it"));
      }
      if (!text::ValidUtf8(target)) {
        return absl::FailedPreconditionError(
            Cat(Display(c),
                " writes to a file whose name is not valid UTF-8, so no rule can "
                "name it"));
      }
      if (!internal::IsStaticWriteTarget(target)) {
        return absl::FailedPreconditionError(
            Cat(Display(c), " writes to ", target,
                ", a file the shell names at run time or a path through \"..\", so no rule "
                "can name it"));
      }
      std::string glob = internal::EscapeGlob(target);
      if (std::find(r.write_paths.begin(), r.write_paths.end(), glob) == r.write_paths.end()) {
        r.write_paths.push_back(std::move(glob));
      }
    }
    // A target a symlink or a cd of the line takes elsewhere is not the file
    // the rule names: the rule would not allow the command again.
    if (!r.write_paths.empty()) {
      RE2::Options options;
      options.set_log_errors(false);
      const RE2 written(internal::WritePathsRegex(r.write_paths), options);
      for (const std::string& target : c.write_targets) {
        if (std::string why; !internal::WriteCovered(written, target, p, context.cwd, &why)) {
          return absl::FailedPreconditionError(
              Cat(Display(c), " writes to ", target, why.empty() ? "" : Cat(" (", why, ")"),
                  ", which a rule naming the file would not cover: a person approves it each "
                  "time"));
        }
      }
    }
    // "Always" covers the files this command reads, when they are outside
    // the workspace: exactly them, never everything.
    bool walk = false;
    if (internal::FirstReadOutside(plan, internal::MakeReadScope({}, context), &walk)) {
      r.read_paths = internal::ReadPathsFor(plan);
      for (const std::string& path : r.read_paths) {
        if (!text::ValidUtf8(path)) {
          return absl::FailedPreconditionError(Cat(
              Display(c), " reads a file whose name is not valid UTF-8, so no rule can name it"));
        }
      }
    }
    r.reason = "approved by a person (always)";
    char hash[16];
    snprintf(hash, sizeof(hash), "%08x",
             Fnv1a(Cat(Join(r.argv, "\x1f"), "\x1e", Join(r.read_paths, "\x1f"))));
    r.id = Cat("always-", c.program, "-", hash);
    // The same command again (make > a; make > b) is one rule covering
    // every file it writes.
    auto same = std::find_if(out.begin(), out.end(), [&](const Rule& o) { return o.id == r.id; });
    if (same == out.end()) {
      out.push_back(std::move(r));
      continue;
    }
    for (std::string& path : r.write_paths) {
      if (std::find(same->write_paths.begin(), same->write_paths.end(), path) ==
          same->write_paths.end()) {
        same->write_paths.push_back(std::move(path));
      }
    }
    same->writes = same->writes || r.writes;
  }
  return out;
}

}  // namespace termbridge::policy
