// The command gate's checks around the policy: what makes a line exactly
// the text the shell will get, which environments no program may get, and
// which allowed commands still need a person because they would do more
// than the rules judged (see docs/security.md).
#ifndef TERMBRIDGE_BROKER_CORE_GATE_CHECKS_H_
#define TERMBRIDGE_BROKER_CORE_GATE_CHECKS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "broker/core/terminal_registry.h"
#include "common/policy/policy.h"
#include "common/policy/portable_line.h"

namespace termbridge::core {

// Folds the arguments into params->command and normalizes line ends the way
// the policy parser reads them, so what is judged is byte for byte what the
// shell receives. PM_TERM_INVALID_PAYLOAD for a NUL byte (no shell can hold
// it). Other control characters are kept: the parser cannot judge them, so
// the line asks, and the shell takes them literally from its command file.
absl::Status MakeExactCommandLine(ExecuteRequest* params);

// PM_TERM_INVALID_PAYLOAD naming the variable when a value is unfit for any
// program (policy::EnvValueProblem), or, for open_only, which no person is
// asked about, when a name is not harmless.
absl::Status CheckAgentEnv(const ExecuteRequest& params, const std::vector<std::string>& env_allow);

// What the policy needs to know about where a line runs: its cwd, and the
// read scope's roots (the broker's cwd_roots, or the terminal's workspace
// when none are set).
policy::CheckContext ContextFor(const std::string& cwd, const std::string& workspace,
                                const std::vector<std::string>& cwd_roots);

// Why a shell other than bash may read a line otherwise than the policy's
// parser (common/policy/portable_line.h).
using policy::PortableLineProblem;

// Turns an "allow" into "ask" when the command would do more than the rules
// judged: the agent sets a variable that is not harmless by name, the
// terminal's shell is not bash and the line is outside what every shell
// reads alike (PortableLineProblem), the line is input to a running program
// that runs commands from its input, or it runs git where the repository's
// own files name programs git would run. Deny and ask stay as they are.
void TightenDecision(const ExecuteRequest& params, const CommandTarget& target,
                     const std::vector<std::string>& env_allow, policy::Decision* decision);

// What "always" would write for a command line: the rules
// policy::Policy::RulesToAllow gives, each with an id no rule of `policy`
// has and one reason, as the TOML the policy file gets; or why no rule can
// allow it (then `rules` and `toml` are empty). CommandGate shows it with
// the request, and the operator's DecideApproval writes it
// (docs/operating.md, "Grants").
struct AlwaysProposal {
  std::vector<policy::Rule> rules;
  std::string toml;
  std::string refusal;
  // The policy allows the line already (it asked for a reason judged anew
  // each time): "always" writes nothing and approves this request.
  bool nothing_to_write = false;
};
AlwaysProposal ProposeAlways(const policy::Policy& policy, const std::string& command,
                             const policy::CheckContext& context);

// Gives every rule without an id one from its program ("always-make-narrowed",
// with "-2", "-3", ... when `policy` or an earlier rule holds it already).
// Rules that have an id keep it.
void NameRules(const policy::Policy& policy, std::vector<policy::Rule>* rules);

// The TOML of `rules`, one [[rule]] table after another.
std::string RulesToml(const std::vector<policy::Rule>& rules);

}  // namespace termbridge::core

#endif  // TERMBRIDGE_BROKER_CORE_GATE_CHECKS_H_
