// ListGrants: what lets an agent's commands run without asking for a while
// (docs/operating.md, "Grants"). Two kinds: a terminal grant (a "terminal"
// approval, held by the approval queue until its terminal closes or its time
// limit passes) and an allow rule in the policy file with an expiry (an
// "always" approval given a time limit, or one a person wrote). Rules
// without an expiry are the policy itself, not grants: `policy show` lists
// them. Reading the policy here also has the queue follow its rules'
// expiries, so their end is audited even before a command comes.
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "broker/service/operator_common.h"
#include "broker/service/operator_service.h"
#include "common/policy/policy.h"
#include "spdlog/spdlog.h"

namespace termbridge::broker {
namespace {

int64_t UnixMsOrZero(absl::Time t) {
  return t == absl::InfiniteFuture() || t == absl::InfinitePast() ? 0 : absl::ToUnixMillis(t);
}

}  // namespace

grpc::Status OperatorService::ListGrants(grpc::ServerContext* context,
                                         const v1::ListGrantsRequest* /*request*/,
                                         v1::ListGrantsResponse* response) {
  TB_OPERATOR_ONLY(context);
  if (options_.approvals == nullptr) return grpc::Status::OK;
  for (const approval::TerminalGrant& g : options_.approvals->TerminalGrants()) {
    v1::Grant* out = response->add_grants();
    out->set_kind("terminal");
    out->set_command(g.command);
    out->set_terminal_id(g.terminal_id);
    out->set_agent_id(g.agent_id);
    out->set_granted_by(g.granted_by);
    out->set_surface(g.surface);
    out->set_granted_at_unix_ms(UnixMsOrZero(g.granted_at));
    out->set_expires_at_unix_ms(UnixMsOrZero(g.expires_at));
  }
  if (options_.policy == nullptr) return grpc::Status::OK;
  // Who granted a rule is known for the ones this broker wrote.
  std::map<std::string, approval::RuleGrant> known;
  for (approval::RuleGrant& g : options_.approvals->RuleGrants()) {
    known[g.rule_id] = std::move(g);
  }
  const int64_t now = absl::ToUnixSeconds(absl::Now());
  for (const policy::Rule& rule : options_.policy->Current()->rules()) {
    if (rule.expires_unix_s == 0 || policy::Expired(rule, now)) continue;
    approval::RuleGrant follow;
    follow.rule_id = rule.id;
    follow.rule_toml = policy::RuleToToml(rule);
    follow.expires_at = absl::FromUnixSeconds(rule.expires_unix_s);
    options_.approvals->FollowRuleGrant(follow);
    v1::Grant* out = response->add_grants();
    out->set_kind("rule");
    out->set_command(follow.rule_toml);
    out->set_rule_id(rule.id);
    out->set_expires_at_unix_ms(int64_t{rule.expires_unix_s} * 1000);
    if (auto it = known.find(rule.id); it != known.end()) {
      out->set_agent_id(it->second.agent_id);
      out->set_granted_by(it->second.granted_by);
      out->set_surface(it->second.surface);
      out->set_granted_at_unix_ms(UnixMsOrZero(it->second.granted_at));
    }
  }
  spdlog::debug("event=grants_listed count={}", response->grants_size());
  return grpc::Status::OK;
}

}  // namespace termbridge::broker
