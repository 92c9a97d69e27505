// What an "always" approval writes to the policy file: the rules shown with
// the request, or a person's narrower version of them, checked against the
// policy in force when the person decides (docs/operating.md, "Grants").
#ifndef TERMBRIDGE_BROKER_CORE_ALWAYS_RULES_H_
#define TERMBRIDGE_BROKER_CORE_ALWAYS_RULES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "broker/approval/approval_queue.h"
#include "broker/core/gate_checks.h"
#include "common/policy/policy.h"

namespace termbridge::core {

// The rules "always" writes for `request` (a command waiting for approval)
// under `current`: the ones shown with it (`request.always_rules_toml`), or
// the person's `rules_toml` when it is narrower than both what was shown and
// what would be proposed now and still allows the request
// (policy::CheckNarrowing). Each rule expires at `expires` when that is
// finite (an earlier expiry of a narrowed rule stays). Empty when the policy
// allows the line already. Errors: InvalidArgument for rules that do not
// parse; FailedPrecondition when nothing may be written (no rule can allow
// the line, a rule that is not narrower, or the proposal changed since it
// was shown); in the last case `*reshow` gets the proposal to show instead.
absl::StatusOr<std::vector<policy::Rule>> RulesForAlways(const policy::Policy& current,
                                                         const approval::Request& request,
                                                         const std::vector<std::string>& cwd_roots,
                                                         const std::string& rules_toml,
                                                         absl::Time expires,
                                                         AlwaysProposal* reshow);

}  // namespace termbridge::core

#endif  // TERMBRIDGE_BROKER_CORE_ALWAYS_RULES_H_
