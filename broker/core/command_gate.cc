// The command gate: policy, then the approval queue, then the registry.
#include "broker/core/command_gate.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "broker/core/audit_guard.h"
#include "broker/core/gate_checks.h"
#include "broker/core/problem.h"
#include "common/contract/request.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace termbridge::core {
namespace {

// Finished launches kept for read_output of sessions that never started.
constexpr size_t kMaxLaunches = 4096;

// A command that will not start, with the code `name_of` gives its refusal
// and the reason it got.
void AuditRefusal(audit::AuditSink* audit, const RefusalNamer& name_of,
                  const ExecuteRequest& params, const absl::Status& refusal) {
  std::optional<ProblemInfo> problem = ProblemOf(refusal);
  AuditAfterTheFact(
      audit, audit::kCommandRefused,
      {{"session_id", params.session_id},
       {"trace_id", params.trace_id},
       {"agent_id", params.agent_id},
       {"terminal_id", params.terminal_id},
       {"code", name_of ? name_of(refusal)
                        : std::string(ProblemName(problem ? problem->kind : Problem::kInternal))},
       {"reason", std::string(refusal.message())},
       {"details", problem ? problem->details : nlohmann::json::object()}});
}

// True when `pending` asks for what `params` would ask (in `cwd`): it joins.
bool IsRepeatOf(const approval::Request& pending, const ExecuteRequest& params,
                const std::string& cwd) {
  std::map<std::string, std::string> env(params.env.begin(), params.env.end());
  return pending.kind == "command" && pending.agent_id == params.agent_id &&
         pending.command == params.command && pending.cwd == cwd && pending.env == env;
}

}  // namespace

struct CommandGate::Launch {
  std::string session_id;
  std::string agent_id;  // whose command: no other agent may look it up
  std::string planned_terminal;
  GateState gate;
  bool done = false;    // started, or ended without starting
  absl::Status status;  // why it did not start
  std::optional<SessionRecord> record;
};

CommandGate::CommandGate(policy::PolicyFile* policy, approval::ApprovalQueue* approvals,
                         CommandRunner* registry, audit::AuditSink* audit,
                         RefusalNamer name_refusal)
    : policy_(policy),
      approvals_(approvals),
      registry_(registry),
      audit_(audit),
      name_refusal_(std::move(name_refusal)) {}

CommandGate::~CommandGate() { starters_.JoinAll(); }

GateState CommandGate::FromEntry(const approval::Entry& entry) {
  GateState state;
  state.state = std::string(approval::StateName(entry.state));
  state.approval_id = entry.approval_id;
  state.rule = entry.request.rule;
  state.reason = entry.request.reason;
  state.decided_by = entry.approver;
  state.surface = entry.surface;
  state.note = entry.note;
  if (entry.state == approval::State::kApproved) {
    state.scope = std::string(approval::ScopeName(entry.scope));
    if (entry.grant_expires_at != absl::InfiniteFuture()) {
      state.grant_expires_at_unix_ms = absl::ToUnixMillis(entry.grant_expires_at);
    }
  }
  return state;
}

void CommandGate::FollowRuleExpiries(const policy::Policy& policy) {
  const uint64_t generation = policy_->generation();
  {
    absl::MutexLock lock(&mu_);
    if (generation == followed_generation_) return;
    followed_generation_ = generation;
  }
  for (const policy::Rule& rule : policy.rules()) {
    if (rule.expires_unix_s == 0) continue;
    approval::RuleGrant grant;
    grant.rule_id = rule.id;
    grant.rule_toml = policy::RuleToToml(rule);
    grant.expires_at = absl::FromUnixSeconds(rule.expires_unix_s);
    approvals_->FollowRuleGrant(std::move(grant));  // past ones are not followed
  }
}

std::string CommandGate::PendingOtherThan(const std::string& terminal_id,
                                          const ExecuteRequest& params,
                                          const std::string& cwd) const {
  if (terminal_id.empty()) return "";
  for (const approval::Entry& pending : approvals_->List(false)) {
    if (pending.request.terminal_id != terminal_id) continue;
    // The same command again joins the pending one (Submit merges it).
    if (IsRepeatOf(pending.request, params, cwd)) continue;
    return pending.approval_id;
  }
  return "";
}

absl::Status CommandGate::DecisionError(const approval::Entry& entry) const {
  nlohmann::json details = {{"approval_id", entry.approval_id},
                            {"session_id", entry.request.session_id},
                            {"decided_by", entry.approver},
                            {"surface", entry.surface}};
  switch (entry.state) {
    case approval::State::kDenied:
      details["note"] = entry.note;
      return Fail(Problem::kDeclined,
                  entry.note.empty()
                      ? absl::StrCat("declined by ", entry.approver)
                      : absl::StrCat("declined by ", entry.approver, ": ", entry.note),
                  details);
    case approval::State::kTimedOut:
      details["phase"] = "approval";
      details["timeout_ms"] = absl::ToInt64Milliseconds(entry.expires_at - entry.requested_at);
      return Fail(Problem::kTimedOut, "no one approved the command within the approval timeout",
                  details);
    case approval::State::kCancelled:
      details["reason"] = entry.note;
      return Fail(Problem::kDeclined, absl::StrCat("the request was cancelled: ", entry.note),
                  details);
    default:
      return absl::OkStatus();
  }
}

absl::StatusOr<GateOutcome> CommandGate::Execute(const ExecuteRequest& request,
                                                 absl::Duration wait) {
  const absl::Time deadline = absl::Now() + wait;
  absl::StatusOr<Judged> judged = Judge(request);
  if (!judged.ok()) return judged.status();
  const policy::Decision& decision = judged->decision;
  if (decision.action == policy::Action::kDeny) {
    spdlog::warn("event=policy_denied trace_id={} rule={} command=\"{}\"", request.trace_id,
                 decision.rule_id, decision.command);
    return Fail(Problem::kDeniedByPolicy, decision.reason,
                {{"rule", decision.rule_id},
                 {"command", decision.command},
                 {"decision", decision.ToJson()}});
  }
  if (decision.action == policy::Action::kAllow || judged->granted) return RunNow(*judged);
  return AskAPerson(*judged, deadline);
}

absl::StatusOr<CommandGate::Judged> CommandGate::Judge(const ExecuteRequest& request) {
  Judged judged;
  ExecuteRequest& params = judged.params;
  params = request;
  params.session_id = contract::NewId("s_");
  // A line refused before policy is audited like a policy decision.
  auto refuse = [&](absl::Status refusal) -> absl::Status {
    AuditRefusal(audit_, name_refusal_, params, refusal);
    return refusal;
  };
  if (absl::Status exact = MakeExactCommandLine(&params); !exact.ok()) return refuse(exact);
  const std::vector<std::string>& env_allow = registry_->options().env_allow;
  if (absl::Status env = CheckAgentEnv(params, env_allow); !env.ok()) return refuse(env);
  CommandTarget& target = judged.target;
  target = registry_->PlanCommand(params);
  if (target.foreign) {
    // Known to the gate as nobody's: no pending request, grant or notice of
    // that terminal is looked at for this agent (docs/CONTRACT.md, "Identity
    // and reuse").
    return refuse(Fail(Problem::kUnknownId, "unknown terminal_id " + request.terminal_id,
                       {{"terminal_id", request.terminal_id}}));
  }
  // The agent's default terminal waiting for a person is like a busy one: an
  // untargeted command gets a terminal of its own (nobody declined anything).
  if (request.terminal_id.empty() && !target.terminal_id.empty() &&
      !PendingOtherThan(target.terminal_id, params, target.cwd).empty()) {
    params.new_terminal = true;
    target = registry_->PlanCommand(params);
  }
  // The line runs where it was judged (cwd, repository, reader), or not at
  // all: the registry does not plan again after an approval wait.
  params.as_input = target.input;
  params.input_session = target.input_session;
  if (!target.terminal_id.empty()) {
    params.terminal_id = target.terminal_id;
  } else {
    params.new_terminal = true;
  }
  judged.launch = std::make_shared<Launch>();
  Launch& launch = *judged.launch;
  launch.session_id = params.session_id;
  launch.agent_id = params.agent_id;
  launch.planned_terminal = target.terminal_id;
  if (std::string pending = PendingOtherThan(launch.planned_terminal, params, target.cwd);
      !launch.planned_terminal.empty() && !pending.empty()) {
    return Fail(Problem::kDeclined,
                absl::StrCat("terminal ", launch.planned_terminal,
                             " has a command waiting for a person's approval (nobody declined "
                             "it yet); this one is refused, not queued: wait for that "
                             "decision or run it in another terminal"),
                {{"terminal_id", launch.planned_terminal},
                 {"approval_id", pending},
                 {"reason", "pending_approval"}});
  }
  policy::Decision& decision = judged.decision;
  if (params.open_only) {
    decision.action = policy::Action::kAllow;
    decision.reason = "allow: opening a terminal runs no command";
  } else if (!target.terminal_id.empty() && target.secret_prompt) {
    // Refused before any person is asked: approving would not make the
    // agent's line fit to be a password (Terminal::WriteAgentInput also
    // refuses it, against the modes at the moment of writing).
    return refuse(TerminalInputError(absl::PermissionDeniedError("secret prompt"),
                                     target.terminal_id, params.command.size() + 1));
  } else if (target.input && !target.takes_agent_input) {
    return refuse(Fail(Problem::kInvalidRequest,
                       "this terminal's shell cannot discard input a program leaves unread, so it "
                       "takes commands only, not input for a running program",
                       {{"terminal_id", target.terminal_id}, {"reason", "no_input_to_programs"}}));
  } else {
    judged.policy = policy_->Current();
    FollowRuleExpiries(*judged.policy);
    decision = judged.policy->Check(
        params.command, ContextFor(target.cwd, target.workspace, registry_->options().cwd_roots));
    TightenDecision(params, target, env_allow, &decision);
  }
  if (decision.action == policy::Action::kAsk && !launch.planned_terminal.empty()) {
    // An expired grant is ended (and audited) here: the command asks again.
    // A grant is the agent's the person approved: another agent the
    // terminal went to is asked.
    if (std::optional<approval::TerminalGrant> grant =
            approvals_->TerminalGrantFor(launch.planned_terminal);
        grant && grant->agent_id == params.agent_id) {
      judged.granted = true;
      judged.grant_expires_at = grant->expires_at;
    }
  }
  // What policy (or a grant) decided alone is audited here; what a person
  // decides, by the approval queue.
  if (decision.action != policy::Action::kAsk || judged.granted) {
    nlohmann::json audited = {
        {"session_id", params.session_id},
        {"trace_id", request.trace_id},
        {"agent_id", params.agent_id},
        {"terminal_id", launch.planned_terminal},
        {"lane", request.lane},
        {"decision", decision.ToJson()},
        {"action", judged.granted ? "allow" : std::string(policy::ActionName(decision.action))},
        {"surface", judged.granted ? "terminal_grant" : "policy"},
        // What `termbridge policy replay` judges again: the line as judged,
        // where it ran and its workspace.
        {"command", params.command},
        {"cwd", target.cwd},
        {"workspace", target.workspace}};
    if (judged.granted && judged.grant_expires_at != absl::InfiniteFuture()) {
      audited["grant_expires_at"] =
          absl::FormatTime("%Y-%m-%d%ET%H:%M:%SZ", judged.grant_expires_at, absl::UTCTimeZone());
    }
    if (absl::Status s = Audit(audit_, audit::kPolicyDecided, audited); !s.ok()) return s;
  }
  return judged;
}

absl::StatusOr<GateOutcome> CommandGate::RunNow(const Judged& judged) {
  const std::shared_ptr<Launch>& launch = judged.launch;
  launch->gate.state = judged.granted ? "approved" : "allowed";
  launch->gate.rule = judged.decision.rule_id;
  launch->gate.reason = judged.decision.reason;
  launch->gate.decided_by = judged.granted ? "terminal grant" : "policy";
  launch->gate.surface = judged.granted ? "terminal_grant" : "policy";
  if (judged.granted) {
    launch->gate.scope = "terminal";
    if (judged.grant_expires_at != absl::InfiniteFuture()) {
      launch->gate.grant_expires_at_unix_ms = absl::ToUnixMillis(judged.grant_expires_at);
    }
  }
  Remember(launch);
  Start(launch, judged.params);
  absl::MutexLock lock(&mu_);
  if (!launch->status.ok()) return launch->status;
  return OutcomeOf(*launch);
}

absl::StatusOr<GateOutcome> CommandGate::AskAPerson(const Judged& judged, absl::Time deadline) {
  const ExecuteRequest& params = judged.params;
  std::shared_ptr<Launch> launch = judged.launch;
  approval::Request ask;
  ask.kind = "command";
  ask.command = params.command;
  ask.cwd = judged.target.cwd;
  for (const auto& [name, value] : params.env) ask.env[name] = value;
  ask.lane = params.lane;
  ask.agent_id = params.agent_id;
  ask.terminal_id = launch->planned_terminal;
  ask.session_id = params.session_id;
  ask.trace_id = params.trace_id;
  ask.request_id = params.request_id;
  ask.rule = judged.decision.rule_id;
  ask.reason = judged.decision.reason;
  ask.read_scope = judged.decision.read_scope;
  ask.reads = judged.decision.reads;
  ask.workspace = judged.target.workspace;
  if (judged.policy != nullptr) {
    // What "always" would write, shown with the request before anyone chooses it.
    AlwaysProposal always =
        ProposeAlways(*judged.policy, params.command,
                      ContextFor(ask.cwd, ask.workspace, registry_->options().cwd_roots));
    ask.always_rules_toml = std::move(always.toml);
    ask.always_refusal = std::move(always.refusal);
  }
  Remember(launch);
  absl::StatusOr<approval::Entry> entry =
      approvals_->Submit(ask, [this, launch, params](const approval::Entry& decided) {
        {
          absl::MutexLock lock(&mu_);
          launch->gate = FromEntry(decided);
          if (decided.state != approval::State::kApproved) {
            launch->done = true;
            launch->status = DecisionError(decided);
            return;
          }
        }
        // Start on a thread of the gate's own: the person's call returns at
        // once, and the start may wait for a viewer.
        absl::Status started = starters_.Start([this, launch, params] { Start(launch, params); });
        if (!started.ok()) {
          absl::Status refusal = Fail(
              Problem::kLimitReached, "the approved command could not be started now",
              {{"limit", "approved_starts_running"}, {"reason", std::string(started.message())}});
          spdlog::error("event=command_not_started session_id={} status=\"{}\"", launch->session_id,
                        refusal.ToString());
          AuditRefusal(audit_, name_refusal_, params, refusal);
          absl::MutexLock lock(&mu_);
          launch->done = true;
          launch->status = refusal;
        }
      });
  if (!entry.ok()) {
    absl::MutexLock lock(&mu_);
    launches_.erase(launch->session_id);
    if (ProblemOf(entry.status())) {
      return entry.status();  // past a cap: typed, and audited by the queue
    }
    return Fail(Problem::kAuditUnavailable, "the approval request could not be audited",
                {{"reason", std::string(entry.status().message())}});
  }
  if (entry->request.session_id != launch->session_id) {
    // Joined an identical pending request: this call follows that one's
    // launch (its session id), and its own is forgotten.
    absl::MutexLock lock(&mu_);
    launches_.erase(launch->session_id);
    auto joined = launches_.find(entry->request.session_id);
    if (joined == launches_.end()) {
      return Fail(Problem::kEnded, "the pending request this one joined is gone",
                  {{"approval_id", entry->approval_id}});
    }
    launch = joined->second;
  }
  {
    absl::MutexLock lock(&mu_);
    if (launch->gate.state.empty()) launch->gate = FromEntry(*entry);
  }
  approvals_->Wait(entry->approval_id, deadline - absl::Now()).IgnoreError();
  absl::MutexLock lock(&mu_);
  auto over = [&launch]() { return launch->done; };
  mu_.AwaitWithDeadline(absl::Condition(&over), deadline);
  if (launch->done && !launch->status.ok()) return launch->status;
  return OutcomeOf(*launch);
}

void CommandGate::Remember(const std::shared_ptr<Launch>& launch) {
  absl::MutexLock lock(&mu_);
  launches_[launch->session_id] = launch;
  if (launches_.size() <= kMaxLaunches) return;
  // Forget a launch that is over; its session lives on in the registry.
  for (auto it = launches_.begin(); it != launches_.end(); ++it) {
    if (it->second->done && it->second != launch) {
      launches_.erase(it);
      return;
    }
  }
}

void CommandGate::Start(const std::shared_ptr<Launch>& launch, ExecuteRequest params) {
  {
    absl::MutexLock lock(&mu_);
    if (launch->gate.scope == "terminal" && params.terminal_id.empty()) {
      // Approved for a terminal: run it in the terminal that was asked about.
      params.terminal_id = launch->planned_terminal;
    }
  }
  absl::StatusOr<SessionRecord> record = registry_->Execute(params);
  if (record.ok()) {
    // It runs: the record cannot stop it, so it must not be lost either.
    AuditAfterTheFact(audit_, audit::kCommandStarted,
                      {{"session_id", record->session_id},
                       {"terminal_id", record->terminal_id},
                       {"agent_id", record->agent_id},
                       {"approval", launch->gate.state}});
  }
  if (record.ok()) {
    spdlog::info("event=command_started session_id={} terminal_id={} approval={}",
                 record->session_id, record->terminal_id, launch->gate.state);
    GateState gate;
    {
      absl::MutexLock lock(&mu_);
      gate = launch->gate;
    }
    // A person's "terminal" approval grants the terminal the command ran in
    // (it may have opened it); a command the grant let through grants nothing.
    if (gate.scope == "terminal" && gate.surface != "terminal_grant") {
      approval::TerminalGrant grant;
      grant.terminal_id = record->terminal_id;
      grant.agent_id = params.agent_id;
      grant.command = params.command;
      grant.approval_id = gate.approval_id;
      grant.granted_by = gate.decided_by;
      grant.surface = gate.surface;
      grant.granted_at = absl::Now();
      if (gate.grant_expires_at_unix_ms != 0) {
        grant.expires_at = absl::FromUnixMillis(gate.grant_expires_at_unix_ms);
      }
      approvals_->GrantTerminal(std::move(grant));
    }
  } else {
    spdlog::warn("event=command_not_started session_id={} status=\"{}\"", launch->session_id,
                 record.status().ToString());
    AuditRefusal(audit_, name_refusal_, params, record.status());
  }
  absl::MutexLock lock(&mu_);
  launch->done = true;
  if (record.ok()) {
    launch->record = *record;
  } else {
    launch->status = record.status();
  }
}

GateOutcome CommandGate::OutcomeOf(const Launch& launch) const {
  GateOutcome outcome;
  outcome.session_id = launch.session_id;
  outcome.terminal_id = launch.record ? launch.record->terminal_id : launch.planned_terminal;
  outcome.gate = launch.gate;
  outcome.record = launch.record;
  return outcome;
}

absl::StatusOr<GateOutcome> CommandGate::Lookup(const std::string& session_id,
                                                const std::string& agent_id) const {
  absl::MutexLock lock(&mu_);
  auto it = launches_.find(session_id);
  if (it == launches_.end() || (!agent_id.empty() && it->second->agent_id != agent_id)) {
    return Fail(Problem::kUnknownId, "unknown session_id", {{"session_id", session_id}});
  }
  if (it->second->done && !it->second->status.ok()) return it->second->status;
  return OutcomeOf(*it->second);
}

std::optional<GateState> CommandGate::StateOf(const std::string& session_id) const {
  absl::MutexLock lock(&mu_);
  auto it = launches_.find(session_id);
  if (it == launches_.end()) return std::nullopt;
  return it->second->gate;
}

}  // namespace termbridge::core
