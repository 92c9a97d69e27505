// What an "always" approval writes (always_rules.h).
#include "broker/core/always_rules.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace termbridge::core {
namespace {

// Marks the shown rules stale: the caller shows `proposal` instead.
absl::Status Stale(AlwaysProposal proposal, AlwaysProposal* reshow, std::string message) {
  if (reshow != nullptr) *reshow = std::move(proposal);
  return absl::FailedPreconditionError(std::move(message));
}

}  // namespace

absl::StatusOr<std::vector<policy::Rule>> RulesForAlways(const policy::Policy& current,
                                                         const approval::Request& request,
                                                         const std::vector<std::string>& cwd_roots,
                                                         const std::string& rules_toml,
                                                         absl::Time expires,
                                                         AlwaysProposal* reshow) {
  const policy::CheckContext context = ContextFor(request.cwd, request.workspace, cwd_roots);
  AlwaysProposal proposal = ProposeAlways(current, request.command, context);
  std::vector<policy::Rule> rules;
  if (proposal.nothing_to_write) return rules;
  if (proposal.rules.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot allow this command always: ", proposal.refusal,
                     "; approve it once or for this terminal"));
  }
  if (rules_toml.empty()) {
    if (proposal.toml != request.always_rules_toml) {
      std::string message = absl::StrCat(
          "what \"always\" writes changed since the request was shown (the policy or the files "
          "changed), so nothing was written or decided; it would now write:\n",
          proposal.toml, "approve again to write that");
      return Stale(std::move(proposal), reshow, std::move(message));
    }
    rules = std::move(proposal.rules);
  } else {
    absl::StatusOr<std::vector<policy::Rule>> narrowed =
        policy::RulesFromToml(rules_toml, "rules_toml");
    if (!narrowed.ok()) return narrowed.status();
    rules = *std::move(narrowed);
    NameRules(current, &rules);
    if (absl::Status narrower =
            policy::CheckNarrowing(current, request.command, context, proposal.rules, rules);
        !narrower.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("the rule was not written and nothing was decided: ", narrower.message()));
    }
    // Narrower than what the person was shown, too: files an agent changed
    // since may have widened the proposal made now.
    if (proposal.toml != request.always_rules_toml) {
      absl::StatusOr<std::vector<policy::Rule>> shown =
          policy::RulesFromToml(request.always_rules_toml, "always_rules_toml");
      absl::Status within =
          shown.ok() ? policy::CheckNarrowing(current, request.command, context, *shown, rules)
                     : shown.status();
      if (!within.ok()) {
        return Stale(std::move(proposal), reshow,
                     absl::StrCat("what \"always\" writes changed since the request was shown, "
                                  "and the rule given is not within what was shown (",
                                  within.message(), "); nothing was written or decided"));
      }
    }
    for (policy::Rule& rule : rules) {
      if (rule.reason.empty()) {
        rule.reason = "narrowed from \"always\" by a person (the audit's policy_changed record)";
      }
    }
  }
  if (expires != absl::InfiniteFuture()) {
    const int64_t until = absl::ToUnixSeconds(expires);
    for (policy::Rule& rule : rules) {
      if (rule.expires_unix_s == 0 || rule.expires_unix_s > until) rule.expires_unix_s = until;
    }
  }
  return rules;
}

}  // namespace termbridge::core
