// Operator RPCs over the unix socket: terminals, approvals and policy.
#include "broker/service/operator_service.h"

#include <openssl/crypto.h>

#include <cstdlib>
#include <deque>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "broker/core/always_rules.h"
#include "broker/core/gate_checks.h"
#include "broker/service/attach_reactor.h"
#include "broker/service/operator_common.h"
#include "broker/service/wire.h"
#include "common/contract/errors.h"
#include "common/policy/policy.h"
#include "spdlog/spdlog.h"

namespace termbridge::broker {
namespace {

using contract::ErrorCode;
using contract::MakeError;

// How often a watch stream looks at its cancellation flag while idle.
constexpr absl::Duration kWatchPoll = absl::Milliseconds(250);

// The most a narrowed rule's TOML may hold (a rule is a few hundred bytes).
constexpr size_t kMaxRulesTomlBytes = 64 << 10;

// What operators see of an approval beyond wire.cc's fields: what "always"
// would write (or why it cannot), and when a time-boxed grant ends.
void FillGrantFields(const approval::Entry& entry, v1::Approval* out) {
  out->set_always_rules_toml(entry.request.always_rules_toml);
  out->set_always_refusal(entry.request.always_refusal);
  if (entry.grant_expires_at != absl::InfiniteFuture()) {
    out->mutable_state()->set_grant_expires_at_unix_ms(absl::ToUnixMillis(entry.grant_expires_at));
  }
}

}  // namespace

OperatorService::OperatorService(ServiceOptions options, core::TerminalRegistry* registry,
                                 BrokerService* agents_service)
    : options_(std::move(options)), registry_(registry), agents_service_(agents_service) {}

absl::Status OperatorService::RefuseAgentCredentials(const grpc::ServerContextBase& context) const {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return absl::OkStatus();
  std::string value(it->second.data(), it->second.size());
  constexpr std::string_view kBearer = "Bearer ";
  std::string token =
      value.compare(0, kBearer.size(), kBearer) == 0 ? value.substr(kBearer.size()) : std::string();
  bool agent = false;
  if (options_.agents != nullptr && !token.empty()) {
    agent = options_.agents->Identify(token, "").ok();
  } else {
    const std::string shared = "Bearer " + options_.agent_token;
    agent = value.size() == shared.size() &&
            CRYPTO_memcmp(value.data(), shared.data(), shared.size()) == 0;
  }
  if (agent) {
    spdlog::warn("event=operator_refused reason=agent_credentials peer={}", context.peer());
    core::AuditAfterTheFact(
        options_.audit, audit::kAuthFailed,
        {{"surface", "operator_socket"}, {"role", "operator"}, {"reason", "agent_credentials"}});
    return absl::PermissionDeniedError("agent credentials cannot be used for operator RPCs");
  }
  return absl::OkStatus();
}

grpc::Status OperatorService::ListAll(grpc::ServerContext* context, const v1::ListRequest* request,
                                      v1::ListResponse* response) {
  TB_OPERATOR_ONLY(context);
  for (const core::SessionRecord& record : registry_->List(request->agent_id())) {
    v1::SessionInfo* info = response->add_sessions();
    FillSessionInfo(record, info);
    if (options_.gate != nullptr) {
      if (auto gate = options_.gate->StateOf(record.session_id)) {
        FillApproval(*gate, info->mutable_approval());
        info->mutable_approval()->set_grant_expires_at_unix_ms(gate->grant_expires_at_unix_ms);
      }
    }
  }
  for (const core::SessionRecord& record : registry_->ListTerminals()) {
    if (!request->agent_id().empty() && record.agent_id != request->agent_id()) continue;
    FillSessionInfo(record, response->add_terminals());
  }
  for (const auto& [name, value] : registry_->options().terminal_env) {
    response->add_terminal_env(absl::StrCat(name, "=", value));
  }
  return grpc::Status::OK;
}

grpc::Status OperatorService::CloseTerminal(grpc::ServerContext* context,
                                            const v1::CloseTerminalRequest* request,
                                            v1::CloseTerminalResponse* response) {
  TB_OPERATOR_ONLY(context);
  absl::StatusOr<core::SessionRecord> record = registry_->FindTerminal(request->terminal_id(), "");
  if (!record.ok()) return ToGrpcStatus(*context, record.status());
  absl::Status closed = registry_->CloseTerminal(request->terminal_id(), "", "operator_close");
  if (!closed.ok()) return ToGrpcStatus(*context, closed);
  if (options_.approvals != nullptr) options_.approvals->CancelTerminal(request->terminal_id());
  spdlog::info("event=operator_closed terminal_id={}", request->terminal_id());
  FillExit(record->terminal->exit_state(), response->mutable_exit());
  return grpc::Status::OK;
}

grpc::Status OperatorService::SetLock(grpc::ServerContext* context,
                                      const v1::SetLockRequest* request,
                                      v1::SetLockResponse* response) {
  TB_OPERATOR_ONLY(context);
  session::LockMode mode;
  if (!session::ParseLockMode(request->mode(), &mode)) {
    return ToGrpcStatus(*context, MakeError(ErrorCode::kInvalidPayload,
                                            "mode must be shared, user_only or agent_only",
                                            {{"field", "mode"}, {"value", request->mode()}}));
  }
  absl::StatusOr<core::SessionRecord> record = registry_->FindTerminal(request->terminal_id(), "");
  if (!record.ok()) return ToGrpcStatus(*context, record.status());
  std::string by = OperatorName(request->by());
  std::string surface = SurfaceName(request->surface());
  if (absl::Status s = core::Audit(options_.audit, audit::kLockChanged,
                                   {{"terminal_id", request->terminal_id()},
                                    {"mode", request->mode()},
                                    {"by", by},
                                    {"surface", surface}});
      !s.ok()) {
    return ToGrpcStatus(*context, s);
  }
  record->terminal->SetLock(mode);
  record->terminal->PostNotice(
      absl::StrCat("lock ", request->mode(), " (set by ", by, " via ", surface, ")"));
  response->set_mode(request->mode());
  return grpc::Status::OK;
}

grpc::ServerBidiReactor<v1::AttachClientFrame, v1::AttachServerFrame>* OperatorService::Attach(
    grpc::CallbackServerContext* context) {
  return NewAttachReactor(nullptr, context, registry_, options_, RefuseAgentCredentials(*context),
                          AttachRole{.person = true, .viewer = "attach", .agent_id = ""});
}

grpc::Status OperatorService::WatchTerminals(grpc::ServerContext* context,
                                             const v1::WatchTerminalsRequest* request,
                                             grpc::ServerWriter<v1::TerminalEvent>* writer) {
  TB_OPERATOR_ONLY(context);
  // What the watcher was last told, per terminal: whether it ran, and what
  // people read about it (name, holder, lock, secret prompt, last exit).
  struct Told {
    bool running = false;
    std::string shown;
  };
  std::map<std::string, Told> told;
  bool snapshot_sent = false;
  uint64_t seen = registry_->changes();
  while (!context->IsCancelled()) {
    for (const core::SessionRecord& record : registry_->ListTerminals()) {
      bool running = record.terminal->exit_state().running;
      v1::TerminalEvent event;
      FillSessionInfo(record, event.mutable_terminal());
      const v1::SessionInfo& info = event.terminal();
      std::string shown = absl::StrCat(
          info.name(), "\n", info.agent_id(), "\n", info.lock(), "\n", info.secret_prompt(), "\n",
          info.has_last_exit_code() ? std::to_string(info.last_exit_code()) : "-");
      auto it = told.find(record.terminal_id);
      if (it != told.end() && it->second.running == running && it->second.shown == shown) continue;
      bool changed = it != told.end() && it->second.running == running;
      event.set_kind(changed ? "changed" : running ? "opened" : "closed");
      if (!writer->Write(event)) return grpc::Status::OK;
      told[record.terminal_id] = {running, shown};
    }
    if (!snapshot_sent) {
      v1::TerminalEvent done;
      done.set_kind("snapshot_done");
      if (!writer->Write(done)) return grpc::Status::OK;
      snapshot_sent = true;
    }
    seen = registry_->WaitForChange(seen, kWatchPoll);
  }
  return grpc::Status::OK;
}

grpc::Status OperatorService::ListApprovals(grpc::ServerContext* context,
                                            const v1::ListApprovalsRequest* request,
                                            v1::ListApprovalsResponse* response) {
  TB_OPERATOR_ONLY(context);
  if (options_.approvals == nullptr) return grpc::Status::OK;
  if (!request->approval_id().empty()) {
    std::optional<approval::Entry> entry = options_.approvals->Find(request->approval_id());
    if (!entry) {
      return ToGrpcStatus(*context, MakeError(ErrorCode::kNotFound, "unknown approval_id",
                                              {{"approval_id", request->approval_id()}}));
    }
    FillApprovalEntry(*entry, response->add_approvals());
    FillGrantFields(*entry, response->mutable_approvals(0));
    response->mutable_approvals(0)->set_duplicates(entry->duplicates);
    return grpc::Status::OK;
  }
  // Bounded whatever agents queued: texts cut, and entries past the budget
  // counted in `omitted` (docs/limits.md).
  approval::ListView view =
      options_.approvals->ListAbridged(request->include_decided(), approval::ListLimits{});
  for (const approval::Entry& entry : view.entries) {
    v1::Approval* out = response->add_approvals();
    FillApprovalEntry(entry, out);
    FillGrantFields(entry, out);
    out->set_abridged(entry.abridged);
    out->set_duplicates(entry.duplicates);
  }
  response->set_omitted(view.omitted);
  return grpc::Status::OK;
}

grpc::Status OperatorService::WatchApprovals(grpc::ServerContext* context,
                                             const v1::ListApprovalsRequest* request,
                                             grpc::ServerWriter<v1::ApprovalEvent>* writer) {
  TB_OPERATOR_ONLY(context);
  if (options_.approvals == nullptr) return grpc::Status::OK;
  absl::Mutex mu;
  std::deque<v1::ApprovalEvent> queue;
  // Subscribe before the snapshot, so nothing falls between the two.
  int watch = options_.approvals->Watch([&](std::string_view kind, const approval::Entry& entry) {
    v1::ApprovalEvent event;
    event.set_kind(std::string(kind));
    FillApprovalEntry(entry, event.mutable_approval());
    FillGrantFields(entry, event.mutable_approval());
    absl::MutexLock lock(&mu);
    queue.push_back(std::move(event));
  });
  bool open = true;
  for (const approval::Entry& entry : options_.approvals->List(request->include_decided())) {
    v1::ApprovalEvent event;
    event.set_kind(entry.state == approval::State::kPending ? "requested" : "decided");
    FillApprovalEntry(entry, event.mutable_approval());
    FillGrantFields(entry, event.mutable_approval());
    open = open && writer->Write(event);
  }
  v1::ApprovalEvent done;
  done.set_kind("snapshot_done");
  open = open && writer->Write(done);
  while (open && !context->IsCancelled()) {
    std::deque<v1::ApprovalEvent> batch;
    {
      absl::MutexLock lock(&mu);
      auto ready = [&queue]() { return !queue.empty(); };
      mu.AwaitWithTimeout(absl::Condition(&ready), kWatchPoll);
      batch.swap(queue);
    }
    for (const v1::ApprovalEvent& event : batch) {
      if (!(open = writer->Write(event))) break;
    }
  }
  options_.approvals->Unwatch(watch);
  return grpc::Status::OK;
}

grpc::Status OperatorService::DecideApproval(grpc::ServerContext* context,
                                             const v1::DecideApprovalRequest* request,
                                             v1::DecideApprovalResponse* response) {
  TB_OPERATOR_ONLY(context);
  if (options_.approvals == nullptr) {
    return ToGrpcStatus(*context, MakeError(ErrorCode::kInternal, "no approval queue"));
  }
  const std::string& decision = request->decision();
  bool approve = decision != "deny";
  absl::StatusOr<approval::Scope> scope =
      approve ? approval::ParseScope(decision) : approval::Scope::kOnce;
  if (!scope.ok()) {
    return ToGrpcStatus(*context, MakeError(ErrorCode::kInvalidPayload,
                                            absl::StrCat("unknown decision '", decision,
                                                         "' (once, terminal, always or deny)"),
                                            {{"field", "decision"}}));
  }
  const uint32_t for_s = request->expires_in_seconds();
  if (for_s > 0 && (!approve || *scope == approval::Scope::kOnce)) {
    return ToGrpcStatus(*context,
                        MakeError(ErrorCode::kInvalidPayload,
                                  "a time limit (expires_in_seconds) is for \"terminal\" and "
                                  "\"always\" approvals",
                                  {{"field", "expires_in_seconds"}}));
  }
  if (!request->rules_toml().empty() && (!approve || *scope != approval::Scope::kAlways)) {
    return ToGrpcStatus(*context, MakeError(ErrorCode::kInvalidPayload,
                                            "rules_toml narrows an \"always\" approval only",
                                            {{"field", "rules_toml"}}));
  }
  if (request->rules_toml().size() > kMaxRulesTomlBytes) {
    return ToGrpcStatus(*context, MakeError(ErrorCode::kInvalidPayload,
                                            absl::StrCat("rules_toml is larger than ",
                                                         kMaxRulesTomlBytes, " bytes"),
                                            {{"field", "rules_toml"}}));
  }
  std::optional<approval::Entry> entry = options_.approvals->Find(request->approval_id());
  if (!entry) {
    return ToGrpcStatus(*context, MakeError(ErrorCode::kNotFound, "unknown approval_id",
                                            {{"approval_id", request->approval_id()}}));
  }
  if (entry->state != approval::State::kPending) {
    // Before anything is written: "always" on a request that was denied or
    // timed out must not leave an allow rule behind.
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        absl::StrCat("approval ", entry->approval_id, " is already ",
                                     std::string(approval::StateName(entry->state))));
  }
  const bool proposal = entry->request.kind == "policy_change";
  if (proposal && (for_s > 0 || !request->rules_toml().empty())) {
    return ToGrpcStatus(*context,
                        MakeError(ErrorCode::kInvalidPayload,
                                  "an agent's proposed rule is approved as proposed (no time "
                                  "limit, no narrowing); deny it and approve its commands instead",
                                  {{"field", for_s > 0 ? "expires_in_seconds" : "rules_toml"}}));
  }
  const absl::Time grant_expires =
      for_s > 0 ? absl::Now() + absl::Seconds(for_s) : absl::InfiniteFuture();
  // "always" writes allow rules to the policy file; check that it can before deciding.
  std::vector<policy::Rule> rules;
  if (approve && *scope == approval::Scope::kAlways && !proposal) {
    if (options_.policy == nullptr) {
      return ToGrpcStatus(*context, MakeError(ErrorCode::kInternal, "this broker has no policy"));
    }
    core::AlwaysProposal reshow;
    absl::StatusOr<std::vector<policy::Rule>> wanted = core::RulesForAlways(
        *options_.policy->Current(), entry->request, registry_->options().cwd_roots,
        request->rules_toml(), grant_expires, &reshow);
    if (!reshow.toml.empty() || !reshow.refusal.empty()) {
      options_.approvals->UpdateAlways(entry->approval_id, reshow.toml, reshow.refusal);
    }
    if (!wanted.ok()) {
      return grpc::Status(wanted.status().code() == absl::StatusCode::kInvalidArgument
                              ? grpc::StatusCode::INVALID_ARGUMENT
                              : grpc::StatusCode::FAILED_PRECONDITION,
                          std::string(wanted.status().message()));
    }
    rules = *std::move(wanted);
  }
  std::string approver = OperatorName(request->approver());
  std::string surface = SurfaceName(request->surface());
  std::string written_toml;
  if (!rules.empty()) {
    if (absl::Status appended = options_.policy->AppendRules(rules); !appended.ok()) {
      return ToGrpcStatus(*context, MakeError(ErrorCode::kInternal,
                                              "the allow rule could not be written to the policy "
                                              "file; nothing was decided",
                                              {{"reason", std::string(appended.message())}}));
    }
    std::vector<std::string> written;
    for (const policy::Rule& rule : rules) written.push_back(policy::RuleToToml(rule));
    written_toml = core::RulesToml(rules);
    nlohmann::json changed = {{"approval_id", entry->approval_id},
                              {"approver", approver},
                              {"surface", surface},
                              {"rules", written},
                              {"narrowed", !request->rules_toml().empty()},
                              {"path", options_.policy->path()}};
    if (grant_expires != absl::InfiniteFuture()) {
      changed["expires_at"] = policy::FormatExpiry(absl::ToUnixSeconds(grant_expires));
    }
    core::AuditAfterTheFact(options_.audit, audit::kPolicyChanged, changed);
    for (const policy::Rule& rule : rules) {
      if (rule.expires_unix_s == 0) continue;
      approval::RuleGrant grant;
      grant.rule_id = rule.id;
      grant.rule_toml = policy::RuleToToml(rule);
      grant.agent_id = entry->request.agent_id;
      grant.approval_id = entry->approval_id;
      grant.granted_by = approver;
      grant.surface = surface;
      grant.granted_at = absl::Now();
      grant.expires_at = absl::FromUnixSeconds(rule.expires_unix_s);
      options_.approvals->FollowRuleGrant(std::move(grant));
    }
  }
  absl::StatusOr<approval::Entry> decided = options_.approvals->Decide(
      request->approval_id(), approve, *scope, approver, surface, request->note(), grant_expires);
  if (!decided.ok()) {
    grpc::StatusCode code = decided.status().code() == absl::StatusCode::kFailedPrecondition
                                ? grpc::StatusCode::FAILED_PRECONDITION
                                : grpc::StatusCode::INTERNAL;
    std::string message(decided.status().message());
    if (!rules.empty()) {
      // Decided by someone else in the moment between the check above and
      // now: the rule is in the file. Say so rather than leave it unseen.
      spdlog::error("event=always_rule_without_decision approval_id={} path={}", entry->approval_id,
                    options_.policy->path());
      absl::StrAppend(&message, "; the allow rule was already written to ", options_.policy->path(),
                      ": remove it if it is not wanted");
    }
    return grpc::Status(code, message);
  }
  FillApprovalEntry(*decided, response->mutable_approval());
  FillGrantFields(*decided, response->mutable_approval());
  // What was written, which a narrowed or time-boxed rule makes differ
  // from what was shown.
  if (!rules.empty()) response->mutable_approval()->set_always_rules_toml(written_toml);
  return grpc::Status::OK;
}

grpc::Status OperatorService::GetPolicy(grpc::ServerContext* context,
                                        const v1::GetPolicyRequest* request,
                                        v1::GetPolicyResponse* response) {
  TB_OPERATOR_ONLY(context);
  if (options_.policy == nullptr) return grpc::Status::OK;
  std::shared_ptr<const policy::Policy> policy = options_.policy->Current();
  response->set_path(options_.policy->path());
  response->set_policy_json(policy->ToJson().dump());
  response->set_generation(options_.policy->generation());
  response->set_last_error(options_.policy->last_error());
  return grpc::Status::OK;
}

grpc::Status OperatorService::CheckPolicy(grpc::ServerContext* context,
                                          const v1::CheckPolicyRequest* request,
                                          v1::CheckPolicyResponse* response) {
  TB_OPERATOR_ONLY(context);
  if (options_.policy == nullptr) return grpc::Status::OK;
  std::shared_ptr<const policy::Policy> policy = options_.policy->Current();
  policy::Decision decision;
  if (request->lane() == "headless") {
    // The headless lane runs argv without a shell: split on whitespace only.
    std::vector<std::string> argv = absl::StrSplit(request->command(), ' ', absl::SkipEmpty());
    decision = policy->CheckHeadless(argv);
  } else {
    decision = policy->Check(request->command(), core::ContextFor(request->cwd(), request->cwd(),
                                                                  registry_->options().cwd_roots));
  }
  response->set_decision_json(decision.ToJson().dump());
  response->set_action(std::string(policy::ActionName(decision.action)));
  return grpc::Status::OK;
}

}  // namespace termbridge::broker

namespace termbridge::broker {
namespace {

void FillAgentInfo(const auth::AgentEntry& entry, size_t open_calls, v1::AgentInfo* info) {
  info->set_name(entry.name);
  info->set_source(entry.source);
  info->set_created_unix_ms(entry.created_unix_ms);
  info->set_revoked(entry.revoked_unix_ms != 0);
  info->set_revoked_unix_ms(entry.revoked_unix_ms);
  info->set_last_seen_unix_ms(entry.last_seen_unix_ms);
  info->set_open_calls(static_cast<uint32_t>(open_calls));
}

// Operator-facing failures carry the canonical code and message (absl and
// gRPC codes share their numbers); PM_TERM codes are for agents.
grpc::Status Plain(const absl::Status& status) {
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

// Agent administration needs the broker's agent directory.
absl::Status RequireDirectory(const auth::AgentDirectory* agents) {
  if (agents != nullptr) return absl::OkStatus();
  return absl::FailedPreconditionError("this broker has no agent directory");
}

}  // namespace

grpc::Status OperatorService::AddAgent(grpc::ServerContext* context,
                                       const v1::AddAgentRequest* request,
                                       v1::AddAgentResponse* response) {
  TB_OPERATOR_ONLY(context);
  if (absl::Status s = RequireDirectory(options_.agents); !s.ok()) return Plain(s);
  absl::StatusOr<std::string> token = options_.agents->Add(request->name());
  if (!token.ok()) {
    return Plain(token.status());
  }
  spdlog::info("event=agent_added agent={}", request->name());
  core::AuditAfterTheFact(options_.audit, audit::kAgentAdded, {{"agent_id", request->name()}});
  response->set_name(request->name());
  response->set_token(*token);
  return grpc::Status::OK;
}

grpc::Status OperatorService::ListAgents(grpc::ServerContext* context,
                                         const v1::ListAgentsRequest* request,
                                         v1::ListAgentsResponse* response) {
  TB_OPERATOR_ONLY(context);
  if (absl::Status s = RequireDirectory(options_.agents); !s.ok()) return Plain(s);
  for (const auth::AgentEntry& entry : options_.agents->List()) {
    size_t open = agents_service_ != nullptr ? agents_service_->OpenCallsOf(entry.name) : 0;
    FillAgentInfo(entry, open, response->add_agents());
  }
  return grpc::Status::OK;
}

grpc::Status OperatorService::RevokeAgent(grpc::ServerContext* context,
                                          const v1::RevokeAgentRequest* request,
                                          v1::RevokeAgentResponse* response) {
  TB_OPERATOR_ONLY(context);
  if (absl::Status s = RequireDirectory(options_.agents); !s.ok()) return Plain(s);
  absl::StatusOr<auth::AgentEntry> entry = options_.agents->Revoke(request->name());
  if (!entry.ok()) {
    return Plain(entry.status());
  }
  // From here every new call with these credentials is refused; end the open ones.
  size_t ended = agents_service_ != nullptr ? agents_service_->EndCallsOf(entry->name) : 0;
  // What it left waiting for a person is no longer asked.
  size_t cancelled =
      options_.approvals != nullptr ? options_.approvals->CancelAgent(entry->name) : 0;
  spdlog::warn("event=agent_revoked agent={} ended_calls={} cancelled_approvals={}", entry->name,
               ended, cancelled);
  core::AuditAfterTheFact(
      options_.audit, audit::kAgentRevoked,
      {{"agent_id", entry->name}, {"ended_calls", ended}, {"cancelled_approvals", cancelled}});
  FillAgentInfo(*entry, 0, response->mutable_agent());
  response->set_ended_calls(static_cast<uint32_t>(ended));
  return grpc::Status::OK;
}

grpc::Status OperatorService::GetBrokerInfo(grpc::ServerContext* context,
                                            const v1::BrokerInfoRequest* /*request*/,
                                            v1::BrokerInfo* response) {
  TB_OPERATOR_ONLY(context);
  absl::MutexLock lock(&info_mu_);
  if (!info_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the broker is still starting");
  *response = *info_;
  return grpc::Status::OK;
}

void OperatorService::SetBrokerInfo(v1::BrokerInfo info) {
  absl::MutexLock lock(&info_mu_);
  info_ = std::move(info);
}

}  // namespace termbridge::broker
