// `termbridge policy replay`: the commands the audit log holds, judged again
// by a policy (the one in force, or a candidate file), and the decisions
// that would change (docs/operating.md, "Policy replay"). Each command is
// judged as the broker's gate judged it (policy::Policy::Check of the exact
// line, in the cwd and workspace it ran in), from the records the broker
// writes: policy_decided (broker/core/command_gate.cc) and
// approval_requested/decided (broker/approval/approval_queue.cc). What the
// gate decided from things only true at that moment (the agent's
// environment, the program reading an input line, a repository's config)
// is left out and counted; reads are resolved against the files as they are
// now. Reads files only: no broker, no gRPC.
#ifndef TERMBRIDGE_BROKER_CLI_POLICY_REPLAY_H_
#define TERMBRIDGE_BROKER_CLI_POLICY_REPLAY_H_

#include <cstddef>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "broker/cli/audit_history.h"
#include "common/policy/policy.h"
#include "nlohmann/json.hpp"

namespace termbridge::cli::replay {

struct ReplayOptions {
  std::optional<absl::Time> since, until;  // by decision time, inclusive
  std::string agent;                       // "" = any
  // The broker's cwd_roots: the read scope's workspace when set (else each
  // command's own workspace), as core::ContextFor builds it.
  std::vector<std::string> cwd_roots;
};

// One audited command judged again.
struct Replayed {
  history::Decision audited;  // who, when, and what a person decided if asked
  std::string command;        // the line as the gate judged it
  std::string cwd;            // "" when the record predates cwd in policy_decided
  std::string workspace;
  std::string before;  // the policy's action then: allow, ask or deny
  std::string before_rule;
  std::string after;  // the replayed policy's action: allow, ask or deny
  std::string after_rule;
  std::string after_reason;
  // Why it was not judged again ("" when it was): the gate's own checks
  // decided it (builtin.agent-env, builtin.input-reader, builtin.repo-config).
  std::string skipped;
};

struct ReplayResult {
  std::vector<Replayed> changed;  // the decisions that would change, oldest first
  std::vector<Replayed> skipped;  // not judged again, with why
  size_t judged = 0;              // commands judged again (changed or not)
  size_t cwd_unknown = 0;         // of them, judged without a cwd (older records)
};

// Judges the commands of `records` (oldest first) in the window of
// `options` again with `policy`, at the present time (an expired rule no
// longer allows anything).
ReplayResult Replay(const std::vector<nlohmann::json>& records, const policy::Policy& policy,
                    const ReplayOptions& options);

// {"judged", "changed": [...], "unchanged", "skipped": [...], "cwd_unknown",
// "summary": {"allow->ask": n, ...}}.
nlohmann::json ResultJson(const ReplayResult& result);
// One line per changed decision, then the skipped ones and a summary.
void PrintResult(const ReplayResult& result, std::ostream& out);

}  // namespace termbridge::cli::replay

#endif  // TERMBRIDGE_BROKER_CLI_POLICY_REPLAY_H_
