// Gate checks: exact command lines, agent environments, and the allowed
// commands that still ask (agent variables, input readers, git's repository).
#include "broker/core/gate_checks.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "broker/core/input_readers.h"
#include "broker/core/problem.h"
#include "broker/core/shell_state.h"
#include "common/contract/errors.h"
#include "common/workdir/workdir_config.h"

namespace termbridge::core {
namespace {

void Ask(policy::Decision* d, std::string rule, std::string reason) {
  d->action = policy::Action::kAsk;
  d->rule_id = std::move(rule);
  d->reason = absl::StrCat("ask: ", reason);
}

// Why the terminal's shell, changed since it started, may run the line's
// programs otherwise than judged (shell_state.h); nullopt when it will not.
std::optional<std::string> ShellStateChange(const CommandTarget& target,
                                            const policy::Decision& d) {
  if (!target.initial_shell_state || !target.shell_state) {
    return "what it has become cannot be read";
  }
  absl::StatusOr<ShellState> initial = ParseShellState(*target.initial_shell_state);
  absl::StatusOr<ShellState> now = ParseShellState(*target.shell_state);
  if (!initial.ok() || !now.ok()) return "what it has become cannot be read";
  std::vector<std::string> programs;
  for (const policy::CommandDecision& c : d.commands) programs.push_back(ProgramOf(c.command));
  return ShellStateProblem(*initial, *now, programs, target.cwd);
}

bool RunsGit(const policy::Decision& d) {
  for (const policy::CommandDecision& c : d.commands) {
    if (c.command == "git" || absl::StartsWith(c.command, "git ")) return true;
  }
  return false;
}

// git pointed elsewhere than the directory we can check.
bool GitElsewhere(const policy::Decision& d) {
  for (const policy::CommandDecision& c : d.commands) {
    const std::string& t = c.command;
    if (absl::StartsWith(t, "cd ") || t == "cd" || absl::StartsWith(t, "pushd")) return true;
    if (!absl::StartsWith(t, "git ")) continue;
    for (const char* opt : {" -C", " --git-dir", " --work-tree", " --namespace"}) {
      if (absl::StrContains(t, opt)) return true;
    }
  }
  return false;
}

}  // namespace

absl::Status MakeExactCommandLine(ExecuteRequest* params) {
  std::string line = CommandLine(*params);
  std::string normalized;
  std::optional<std::string> bad = policy::NormalizeCommandLine(line, &normalized);
  if (bad && absl::StrContains(*bad, "NUL")) {
    return Fail(
        Problem::kInvalidRequest,
        absl::StrCat("the command line holds a NUL byte (", *bad, "), which no shell can take"),
        {{"field", "execution.command"}, {"reason", *bad}});
  }
  params->command = bad ? std::move(line) : std::move(normalized);
  params->args.clear();
  return absl::OkStatus();
}

absl::Status CheckAgentEnv(const ExecuteRequest& params,
                           const std::vector<std::string>& env_allow) {
  for (const auto& [name, value] : params.env) {
    const std::string field = absl::StrCat("execution.env.", name);
    if (std::optional<std::string> problem = policy::EnvValueProblem(name, value)) {
      return Fail(Problem::kInvalidRequest,
                  absl::StrCat("environment variable ", name, ": ", *problem),
                  {{"field", field}, {"variable", name}});
    }
    if (params.open_only && !policy::EnvNameHarmless(name, env_allow)) {
      return Fail(
          Problem::kInvalidRequest,
          absl::StrCat("environment variable ", name,
                       " can change what a shell or program runs, and opening a terminal asks "
                       "no one; set it on a command (a person is asked) or have the operator "
                       "allow it by name (env_allow)"),
          {{"field", field}, {"variable", name}, {"limit", "env_allow"}});
    }
  }
  return absl::OkStatus();
}

policy::CheckContext ContextFor(const std::string& cwd, const std::string& workspace,
                                const std::vector<std::string>& cwd_roots) {
  policy::CheckContext context;
  context.cwd = cwd;
  context.read_roots = cwd_roots;
  if (context.read_roots.empty() && !workspace.empty()) context.read_roots = {workspace};
  return context;
}

void TightenDecision(const ExecuteRequest& params, const CommandTarget& target,
                     const std::vector<std::string>& env_allow, policy::Decision* decision) {
  if (decision->action != policy::Action::kAllow) return;
  for (const auto& [name, value] : params.env) {
    if (!policy::EnvNameHarmless(name, env_allow)) {
      Ask(decision, "builtin.agent-env",
          absl::StrCat("the command sets ", name,
                       ", a variable that can change what a shell or program runs (only "
                       "harmless names and the operator's env_allow run without a person)"));
      return;
    }
  }
  if (target.shell_kind != session::ShellKind::kBash) {
    if (std::optional<std::string> problem = PortableLineProblem(
            params.command, /*posix_quotes=*/target.shell_kind != session::ShellKind::kOther)) {
      Ask(decision, "builtin.shell-dialect",
          absl::StrCat("the terminal's shell (", target.shell,
                       ") is not bash, and the line holds what it may read otherwise than the "
                       "policy judged it: ",
                       *problem));
      return;
    }
  }
  if (target.shell_state_known) {
    if (std::optional<std::string> problem = ShellStateChange(target, *decision)) {
      Ask(decision, "builtin.shell-state",
          absl::StrCat("the terminal's shell is not as it started: ", *problem));
      return;
    }
  }
  if (target.input) {
    if (!target.readers_known) {
      Ask(decision, "builtin.input-reader",
          "the line is input for a command whose programs cannot be known now (only the shell "
          "holds the terminal, or the command line runs words known only at run time), so "
          "what it would do with the line cannot be judged");
      return;
    }
    if (std::optional<std::string> reader = CommandReader(target.readers)) {
      Ask(decision, "builtin.input-reader",
          absl::StrCat("the line is input for ", *reader, ", which runs commands from its input"));
      return;
    }
  }
  // Input is judged as a command line too: its program may end before the
  // line arrives, and then the shell runs it.
  if (!RunsGit(*decision)) return;
  if (GitElsewhere(*decision) || target.cwd.empty()) {
    Ask(decision, "builtin.repo-config",
        "git runs where its repository cannot be checked for programs it would run");
    return;
  }
  absl::StatusOr<workdir::GitRepoRisks> risks = workdir::FindGitConfigThatRunsCode(target.cwd);
  if (!risks.ok()) {
    Ask(decision, "builtin.repo-config",
        absl::StrCat("the repository cannot be checked: ", risks.status().message()));
  } else if (!risks->empty()) {
    Ask(decision, "builtin.repo-config",
        absl::StrCat("git would run programs the repository names: ", risks->Summary()));
  }
}

namespace {

// `base`, or `base` with "-2", "-3", ... when `taken` holds it.
std::string Unique(const std::string& base, const std::set<std::string>& taken) {
  if (taken.count(base) == 0) return base;
  for (int n = 2;; ++n) {
    std::string id = absl::StrCat(base, "-", n);
    if (taken.count(id) == 0) return id;
  }
}

std::set<std::string> RuleIds(const policy::Policy& policy) {
  std::set<std::string> ids;
  for (const policy::Rule& r : policy.rules()) ids.insert(r.id);
  return ids;
}

}  // namespace

void NameRules(const policy::Policy& policy, std::vector<policy::Rule>* rules) {
  std::set<std::string> taken = RuleIds(policy);
  for (const policy::Rule& r : *rules) taken.insert(r.id);
  for (policy::Rule& r : *rules) {
    if (!r.id.empty()) continue;
    std::string program =
        r.kind == policy::MatchKind::kRegex || r.argv.empty() ? "regex" : r.argv[0];
    program = program.substr(program.rfind('/') + 1);
    r.id = Unique(absl::StrCat("always-", program, "-narrowed"), taken);
    taken.insert(r.id);
  }
}

std::string RulesToml(const std::vector<policy::Rule>& rules) {
  std::string out;
  for (const policy::Rule& r : rules) {
    if (!out.empty()) out.push_back('\n');
    out += policy::RuleToToml(r);
  }
  return out;
}

AlwaysProposal ProposeAlways(const policy::Policy& policy, const std::string& command,
                             const policy::CheckContext& context) {
  AlwaysProposal out;
  absl::StatusOr<std::vector<policy::Rule>> rules = policy.RulesToAllow(command, context);
  if (!rules.ok()) {
    out.refusal = std::string(rules.status().message());
    return out;
  }
  if (rules->empty()) {
    out.nothing_to_write = true;
    out.refusal =
        "nothing to write: the policy allows this command already, and what made it ask "
        "(the environment, the program reading the input, the repository) is judged anew "
        "each time";
    return out;
  }
  // An id an expired rule of the same command still holds gets a suffix.
  std::set<std::string> taken = RuleIds(policy);
  for (policy::Rule& r : *rules) {
    r.id = Unique(r.id, taken);
    taken.insert(r.id);
    r.reason = "approved always by a person (the audit's policy_changed record says who)";
  }
  out.rules = *std::move(rules);
  out.toml = RulesToml(out.rules);
  return out;
}

}  // namespace termbridge::core
