// The approval queue: pending requests, decisions, expiry and audit records,
// and the bounds on what agents may queue (docs/limits.md).
#include "broker/approval/approval_queue.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "broker/core/problem.h"
#include "common/contract/request.h"
#include "common/text/utf8.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace termbridge::approval {
namespace {

nlohmann::json RequestFields(const Entry& entry) {
  const Request& r = entry.request;
  std::vector<std::string> env_names;
  for (const auto& [name, value] : r.env) env_names.push_back(name);
  return {{"approval_id", entry.approval_id},
          {"kind", r.kind},
          {"command", r.command},
          {"cwd", r.cwd},
          {"env_names", env_names},
          {"lane", r.lane},
          {"agent_id", r.agent_id},
          {"terminal_id", r.terminal_id},
          {"session_id", r.session_id},
          {"trace_id", r.trace_id},
          {"request_id", r.request_id},
          {"rule", r.rule},
          {"reason", r.reason},
          {"workspace", r.workspace}};
}

// RFC 3339 in UTC, as the policy file writes an expiry: "2026-11-26T10:00:00Z".
std::string TimeText(absl::Time t) {
  return absl::FormatTime("%Y-%m-%d%ET%H:%M:%SZ", t, absl::UTCTimeZone());
}

// Audit events of the caps: one when a burst of refusals starts, one with
// its count when it ends.
// How long a terminal's loss of its grants is remembered (longer than any
// wait between a decision and its command's start).
constexpr absl::Duration kCancelMemory = absl::Hours(1);
constexpr std::string_view kLimitReached = "approval_limit_reached";
constexpr std::string_view kLimitBurstEnded = "approval_limit_burst_ended";

bool IsProposal(const Request& request) { return request.kind == "policy_change"; }

// Cuts `text` to at most `max` bytes, never inside a UTF-8 sequence; true if it cut.
bool Cut(std::string* text, size_t max) {
  if (text->size() <= max) return false;
  text->resize(text::CutAtCharBoundary(*text, max).size());
  return true;
}

bool CutList(std::vector<std::string>* items, const ListLimits& limits) {
  bool cut = false;
  if (items->size() > limits.list_items) {
    items->resize(limits.list_items);
    cut = true;
  }
  for (std::string& item : *items) cut |= Cut(&item, limits.text_bytes);
  return cut;
}

// The entry as a list shows it, and the bytes of text it keeps.
Entry Abridge(Entry entry, const ListLimits& limits, size_t* bytes) {
  Request& r = entry.request;
  bool cut = false;
  for (std::string* text : {&r.command, &r.cwd, &r.rule, &r.reason, &r.workspace, &entry.note,
                            &r.agent_id, &r.trace_id, &r.request_id, &r.always_refusal}) {
    cut |= Cut(text, limits.text_bytes);
  }
  // A rule cut short is not the rule "always" writes: show none rather than
  // part of one (approvals show prints it whole).
  if (r.always_rules_toml.size() > limits.text_bytes) {
    r.always_rules_toml.clear();
    cut = true;
  }
  std::map<std::string, std::string> env;
  for (auto& [name, value] : r.env) {
    if (env.size() == limits.list_items) {
      cut = true;
      break;
    }
    std::string shown_name = name;
    std::string shown_value = value;
    cut |= Cut(&shown_name, limits.text_bytes);
    cut |= Cut(&shown_value, limits.text_bytes);
    env[shown_name] = shown_value;
  }
  r.env = std::move(env);
  cut |= CutList(&r.reads, limits);
  cut |= CutList(&r.read_scope, limits);
  r.argv.clear();  // the command says it; the wire has no field for it
  entry.abridged = cut;
  size_t total = 256;  // ids, times and states
  for (const std::string* text :
       {&r.command, &r.cwd, &r.rule, &r.reason, &r.workspace, &entry.note, &r.agent_id, &r.trace_id,
        &r.request_id, &r.always_rules_toml, &r.always_refusal}) {
    total += text->size();
  }
  for (const auto& [name, value] : r.env) total += name.size() + value.size() + 8;
  for (const std::string& item : r.reads) total += item.size() + 4;
  for (const std::string& item : r.read_scope) total += item.size() + 4;
  *bytes = total;
  return entry;
}

absl::Status OverProposalLimit(std::string_view what, size_t actual, std::string_view field,
                               std::string_view limit, size_t value) {
  return core::Fail(
      core::Problem::kLimitReached,
      absl::StrCat("the proposal's ", std::string(what), " is ", actual,
                   "; the broker accepts at most ", value, " (", std::string(limit), ")"),
      {{"field", std::string(field)},
       {"limit", std::string(limit)},
       {"value", value},
       {"actual", actual}});
}

}  // namespace

bool SameRequest(const Request& a, const Request& b) {
  return a.agent_id == b.agent_id && a.kind == b.kind && a.lane == b.lane &&
         a.command == b.command && a.argv == b.argv && a.cwd == b.cwd && a.env == b.env &&
         a.terminal_id == b.terminal_id;
}

absl::Status CheckProposal(const std::vector<std::string>& argv, std::string_view reason,
                           const ProposalLimits& limits) {
  if (argv.size() > limits.max_words) {
    return OverProposalLimit("rule's word count", argv.size(), "rule", "max_proposal_words",
                             limits.max_words);
  }
  size_t rule_bytes = argv.empty() ? 0 : argv.size() - 1;
  for (const std::string& word : argv) rule_bytes += word.size();
  if (rule_bytes > limits.max_rule_bytes) {
    return OverProposalLimit("rule's size in bytes", rule_bytes, "rule", "max_proposal_rule_bytes",
                             limits.max_rule_bytes);
  }
  if (reason.size() > limits.max_reason_bytes) {
    return OverProposalLimit("reason's size in bytes", reason.size(), "reason",
                             "max_proposal_reason_bytes", limits.max_reason_bytes);
  }
  return absl::OkStatus();
}

std::string_view StateName(State state) {
  switch (state) {
    case State::kPending:
      return "pending";
    case State::kApproved:
      return "approved";
    case State::kDenied:
      return "denied";
    case State::kTimedOut:
      return "timed_out";
    case State::kCancelled:
      return "cancelled";
  }
  return "pending";
}

std::string_view ScopeName(Scope scope) {
  switch (scope) {
    case Scope::kOnce:
      return "once";
    case Scope::kTerminal:
      return "terminal";
    case Scope::kAlways:
      return "always";
  }
  return "once";
}

absl::StatusOr<Scope> ParseScope(std::string_view text) {
  if (text == "once") return Scope::kOnce;
  if (text == "terminal") return Scope::kTerminal;
  if (text == "always") return Scope::kAlways;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown approval scope '", std::string(text), "' (once, terminal or always)"));
}

ApprovalQueue::ApprovalQueue(QueueOptions options) : options_(std::move(options)) {
  expiry_ = thread::NamedThread("tb-approval-exp", [this] { ExpiryLoop(); });
}

ApprovalQueue::~ApprovalQueue() {
  std::vector<std::string> pending;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (const auto& [id, entry] : entries_) {
      if (entry.state == State::kPending) pending.push_back(id);
    }
  }
  expiry_.Join();
  for (const std::string& id : pending) {
    Resolve(id, State::kCancelled, Scope::kOnce, "broker", "broker", "the broker is shutting down")
        .IgnoreError();
  }
  std::set<std::string> agents;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, burst] : bursts_) agents.insert(burst.agent_id);
  }
  for (const std::string& agent_id : agents) EndBursts(agent_id);
}

absl::StatusOr<Entry> ApprovalQueue::Submit(Request request, OnDecided on_decided) {
  absl::MutexLock submit(&submit_mu_);
  {
    absl::MutexLock lock(&mu_);
    size_t mine = 0;
    size_t total = 0;
    for (auto& [id, pending] : entries_) {
      if (pending.state != State::kPending) continue;
      if (SameRequest(pending.request, request)) {
        // The same request again: it joins the one a person will decide.
        ++pending.duplicates;
        ++version_;
        spdlog::info("event=approval_joined approval_id={} trace_id={} duplicates={}", id,
                     request.trace_id, pending.duplicates);
        return pending;
      }
      ++total;
      if (pending.request.agent_id == request.agent_id &&
          IsProposal(pending.request) == IsProposal(request)) {
        ++mine;
      }
    }
    const bool proposal = IsProposal(request);
    const size_t cap = proposal ? options_.max_pending_proposals_per_agent
                                : options_.max_pending_approvals_per_agent;
    if (mine >= cap) {
      return Refuse(
          request, proposal ? "max_pending_proposals_per_agent" : "max_pending_approvals_per_agent",
          cap, mine);
    }
    if (total >= options_.max_pending_total) {
      return Refuse(request, "max_pending_total", options_.max_pending_total, total);
    }
  }
  EndBursts(request.agent_id);  // admitted: a burst of this agent may be over
  Entry entry;
  entry.approval_id = contract::NewId("a_");
  entry.request = std::move(request);
  entry.requested_at = options_.clock();
  entry.expires_at = entry.requested_at + options_.timeout;
  if (options_.audit != nullptr) {
    nlohmann::json fields = RequestFields(entry);
    fields["timeout_ms"] = absl::ToInt64Milliseconds(options_.timeout);
    absl::StatusOr<uint64_t> index = options_.audit->Append(audit::kApprovalRequested, fields);
    if (!index.ok()) return index.status();
  }
  {
    absl::MutexLock lock(&mu_);
    entries_[entry.approval_id] = entry;
    continuations_[entry.approval_id] = std::move(on_decided);
    ++version_;
  }
  spdlog::info(
      "event=approval_requested approval_id={} session_id={} terminal_id={} trace_id={} "
      "rule={}",
      entry.approval_id, entry.request.session_id, entry.request.terminal_id,
      entry.request.trace_id, entry.request.rule);
  Notify("requested", entry);
  return entry;
}

absl::StatusOr<Entry> ApprovalQueue::Decide(const std::string& approval_id, bool approve,
                                            Scope scope, std::string approver, std::string surface,
                                            std::string note, absl::Time grant_expires_at) {
  return Resolve(approval_id, approve ? State::kApproved : State::kDenied,
                 approve ? scope : Scope::kOnce, std::move(approver), std::move(surface),
                 std::move(note), grant_expires_at);
}

bool ApprovalQueue::UpdateAlways(const std::string& approval_id, std::string rules_toml,
                                 std::string refusal) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(approval_id);
  if (it == entries_.end() || it->second.state != State::kPending) return false;
  it->second.request.always_rules_toml = std::move(rules_toml);
  it->second.request.always_refusal = std::move(refusal);
  ++version_;
  return true;
}

absl::StatusOr<Entry> ApprovalQueue::Resolve(const std::string& approval_id, State state,
                                             Scope scope, std::string approver, std::string surface,
                                             std::string note, absl::Time grant_expires_at) {
  Entry decided;
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(approval_id);
    if (it == entries_.end()) {
      return absl::NotFoundError(absl::StrCat("no approval request ", approval_id));
    }
    if (it->second.state != State::kPending) {
      return absl::FailedPreconditionError(absl::StrCat("approval ", approval_id, " is already ",
                                                        std::string(StateName(it->second.state))));
    }
    decided = it->second;
  }
  decided.state = state;
  decided.scope = scope;
  decided.approver = std::move(approver);
  decided.surface = std::move(surface);
  decided.note = std::move(note);
  decided.decided_at = options_.clock();
  if (state == State::kApproved && scope != Scope::kOnce) {
    decided.grant_expires_at = grant_expires_at;
  }
  if (options_.audit != nullptr) {
    nlohmann::json fields = RequestFields(decided);
    fields["decision"] = StateName(state);
    fields["scope"] = ScopeName(scope);
    fields["approver"] = decided.approver;
    fields["surface"] = decided.surface;
    fields["note"] = decided.note;
    if (decided.grant_expires_at != absl::InfiniteFuture()) {
      fields["grant_expires_at"] = TimeText(decided.grant_expires_at);
    }
    absl::StatusOr<uint64_t> index = options_.audit->Append(audit::kApprovalDecided, fields);
    if (!index.ok()) return index.status();  // undecided: a person may try again
  }
  OnDecided continuation;
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(approval_id);
    if (it == entries_.end() || it->second.state != State::kPending) {
      return absl::FailedPreconditionError(
          absl::StrCat("approval ", approval_id, " was decided concurrently"));
    }
    it->second = decided;
    // A terminal that lost its grants (hand-over, close) after the request
    // came gets none from it: a decision racing that cancel grants nothing.
    if (state == State::kApproved && scope == Scope::kTerminal &&
        !decided.request.terminal_id.empty() &&
        !LostGrantsSinceLocked(decided.request.terminal_id, decided.requested_at)) {
      terminal_grants_[decided.request.terminal_id] = TerminalGrant{
          decided.request.terminal_id, decided.request.agent_id, decided.request.command,
          decided.approval_id,         decided.approver,         decided.surface,
          decided.decided_at,          decided.grant_expires_at};
    }
    continuation = std::move(continuations_[approval_id]);
    continuations_.erase(approval_id);
    settling_.insert(approval_id);
    decided_order_.push_back(approval_id);
    while (decided_order_.size() > options_.keep_decided) {
      entries_.erase(decided_order_.front());
      decided_order_.erase(decided_order_.begin());
    }
    ++version_;
  }
  spdlog::info(
      "event=approval_decided approval_id={} decision={} scope={} approver={} surface={} "
      "trace_id={}",
      approval_id, StateName(state), ScopeName(scope), decided.approver, decided.surface,
      decided.request.trace_id);
  EndBursts(decided.request.agent_id);  // a slot is free again
  if (continuation) continuation(decided);
  {
    // Waiters wake only now, after the continuation ran.
    absl::MutexLock lock(&mu_);
    settling_.erase(approval_id);
    ++version_;
  }
  Notify("decided", decided);
  return decided;
}

void ApprovalQueue::CancelTerminal(const std::string& terminal_id) {
  std::vector<std::string> pending;
  {
    absl::MutexLock lock(&mu_);
    terminal_grants_.erase(terminal_id);
    const absl::Time now = options_.clock();
    for (auto it = cancelled_at_.begin(); it != cancelled_at_.end();) {
      it = now - it->second > kCancelMemory ? cancelled_at_.erase(it) : std::next(it);
    }
    cancelled_at_[terminal_id] = now;
    for (const auto& [id, entry] : entries_) {
      if (entry.state == State::kPending && entry.request.terminal_id == terminal_id) {
        pending.push_back(id);
      }
    }
  }
  for (const std::string& id : pending) {
    Resolve(id, State::kCancelled, Scope::kOnce, "broker", "broker", "the terminal was closed")
        .IgnoreError();
  }
}

size_t ApprovalQueue::CancelAgent(const std::string& agent_id) {
  std::vector<std::string> pending;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, entry] : entries_) {
      if (entry.state == State::kPending && entry.request.agent_id == agent_id) {
        pending.push_back(id);
      }
    }
  }
  size_t cancelled = 0;
  for (const std::string& id : pending) {
    cancelled += Resolve(id, State::kCancelled, Scope::kOnce, "broker", "broker",
                         "the agent's credentials were revoked")
                     .ok();
  }
  return cancelled;
}

absl::StatusOr<Entry> ApprovalQueue::Wait(const std::string& approval_id, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto decided_or_gone = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = entries_.find(approval_id);
    return it == entries_.end() ||
           (it->second.state != State::kPending && settling_.count(approval_id) == 0);
  };
  mu_.AwaitWithTimeout(absl::Condition(&decided_or_gone), timeout);
  auto it = entries_.find(approval_id);
  if (it == entries_.end()) {
    return absl::NotFoundError(absl::StrCat("no approval request ", approval_id));
  }
  return it->second;
}

std::optional<Entry> ApprovalQueue::Find(const std::string& approval_id) const {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(approval_id);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

std::optional<Entry> ApprovalQueue::FindBySession(const std::string& session_id) const {
  absl::MutexLock lock(&mu_);
  for (const auto& [id, entry] : entries_) {
    if (entry.request.session_id == session_id) return entry;
  }
  return std::nullopt;
}

std::vector<Entry> ApprovalQueue::List(bool include_decided) const {
  absl::MutexLock lock(&mu_);
  std::vector<Entry> pending;
  for (const auto& [id, entry] : entries_) {
    if (entry.state == State::kPending) pending.push_back(entry);
  }
  std::sort(pending.begin(), pending.end(),
            [](const Entry& a, const Entry& b) { return a.requested_at < b.requested_at; });
  if (include_decided) {
    for (const std::string& id : decided_order_) pending.push_back(entries_.at(id));
  }
  return pending;
}

ListView ApprovalQueue::ListAbridged(bool include_decided, const ListLimits& limits) const {
  ListView view;
  size_t used = 0;
  for (Entry& entry : List(include_decided)) {
    size_t bytes = 0;
    Entry shown = Abridge(std::move(entry), limits, &bytes);
    if (used + bytes > limits.total_bytes) {
      ++view.omitted;
      continue;
    }
    used += bytes;
    view.entries.push_back(std::move(shown));
  }
  return view;
}

absl::Status ApprovalQueue::Refuse(const Request& request, std::string_view limit, size_t value,
                                   size_t pending) {
  const std::string what = IsProposal(request) ? "proposals" : "commands";
  absl::Status refusal =
      core::Fail(core::Problem::kLimitReached,
                 limit == "max_pending_total"
                     ? absl::StrCat("the broker already has ", pending,
                                    " requests waiting for a person (max_pending_total ", value,
                                    "); wait for decisions before asking again")
                     : absl::StrCat("this agent already has ", pending, " ", what,
                                    " waiting for a person (", std::string(limit), " ", value,
                                    "); wait for a decision before asking again"),
                 {{"limit", std::string(limit)},
                  {"value", value},
                  {"pending", pending},
                  {"agent_id", request.agent_id},
                  {"kind", request.kind}});
  const absl::Time now = options_.clock();
  const std::string key = absl::StrCat(request.agent_id, "\n", std::string(limit));
  auto it = bursts_.find(key);
  if (it != bursts_.end()) {
    ++it->second.refused;
    it->second.last = now;
    return refusal;  // counted; audited when the burst ends
  }
  bursts_[key] = Burst{request.agent_id, std::string(limit), value, 1, now, now};
  spdlog::warn("event=approval_limit_reached agent_id={} limit={} value={} trace_id={}",
               request.agent_id, limit, value, request.trace_id);
  if (options_.audit != nullptr) {
    // Written with mu_ held: the audit sink never calls back into the queue,
    // and the record must precede any summary of the same burst.
    // The refusal happened: the log keeps the record until it can write it.
    options_.audit
        ->AppendAfterTheFact(kLimitReached, {{"agent_id", request.agent_id},
                                             {"limit", std::string(limit)},
                                             {"value", value},
                                             {"kind", request.kind},
                                             {"trace_id", request.trace_id},
                                             {"request_id", request.request_id}})
        .IgnoreError();
  }
  return refusal;
}

void ApprovalQueue::EndBursts(const std::string& agent_id) {
  std::vector<Burst> ended;
  {
    absl::MutexLock lock(&mu_);
    if (bursts_.empty()) return;
    size_t approvals = 0;
    size_t proposals = 0;
    size_t total = 0;
    for (const auto& [id, entry] : entries_) {
      if (entry.state != State::kPending) continue;
      ++total;
      if (entry.request.agent_id != agent_id) continue;
      ++(IsProposal(entry.request) ? proposals : approvals);
    }
    for (auto it = bursts_.begin(); it != bursts_.end();) {
      const Burst& burst = it->second;
      bool below = burst.limit == "max_pending_proposals_per_agent"   ? proposals < burst.value
                   : burst.limit == "max_pending_approvals_per_agent" ? approvals < burst.value
                                                                      : total < burst.value;
      if ((burst.agent_id == agent_id && below) || stopping_) {
        ended.push_back(burst);
        it = bursts_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const Burst& burst : ended) {
    spdlog::info("event=approval_limit_burst_ended agent_id={} limit={} refused={}", burst.agent_id,
                 burst.limit, burst.refused);
    if (options_.audit == nullptr) continue;
    options_.audit
        ->AppendAfterTheFact(kLimitBurstEnded, {{"agent_id", burst.agent_id},
                                                {"limit", burst.limit},
                                                {"value", burst.value},
                                                {"refused", burst.refused},
                                                {"first_refused_at", absl::FormatTime(burst.first)},
                                                {"last_refused_at", absl::FormatTime(burst.last)}})
        .IgnoreError();
  }
}

std::optional<TerminalGrant> ApprovalQueue::TerminalGrantFor(const std::string& terminal_id) {
  std::vector<TerminalGrant> expired;
  {
    absl::MutexLock lock(&mu_);
    auto it = terminal_grants_.find(terminal_id);
    if (it == terminal_grants_.end()) return std::nullopt;
    if (it->second.expires_at > options_.clock()) return it->second;
    expired.push_back(it->second);
    terminal_grants_.erase(it);
    ++version_;
  }
  AuditExpired(expired, {}, "in use");
  return std::nullopt;
}

bool ApprovalQueue::LostGrantsSinceLocked(const std::string& terminal_id, absl::Time since) const {
  auto cancelled = cancelled_at_.find(terminal_id);
  return cancelled != cancelled_at_.end() && cancelled->second >= since;
}

void ApprovalQueue::GrantTerminal(TerminalGrant grant) {
  absl::MutexLock lock(&mu_);
  // The command a grant came with can start after the grant ended (its start
  // may wait for a viewer): the grant stays ended, audited once when it
  // ended. So does one the terminal lost (closed, handed over) after the
  // person decided, and one whose decision the queue no longer holds.
  if (grant.expires_at <= options_.clock()) return;
  auto decided = entries_.find(grant.approval_id);
  if (decided == entries_.end()) return;
  if (LostGrantsSinceLocked(grant.terminal_id, decided->second.decided_at)) return;
  std::string terminal_id = grant.terminal_id;
  terminal_grants_[terminal_id] = std::move(grant);
  ++version_;  // the expiry thread looks at the new deadline
}

std::vector<TerminalGrant> ApprovalQueue::TerminalGrants() {
  std::vector<TerminalGrant> in_force, expired;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = options_.clock();
    for (auto it = terminal_grants_.begin(); it != terminal_grants_.end();) {
      if (it->second.expires_at > now) {
        in_force.push_back(it++->second);
      } else {
        expired.push_back(it->second);
        it = terminal_grants_.erase(it);
      }
    }
  }
  AuditExpired(expired, {}, "listing");
  return in_force;
}

void ApprovalQueue::FollowRuleGrant(RuleGrant grant) {
  absl::MutexLock lock(&mu_);
  if (grant.expires_at <= options_.clock()) return;
  std::string key = absl::StrCat(grant.rule_id, "\n", absl::ToUnixSeconds(grant.expires_at));
  if (!followed_rules_.insert(key).second) return;
  rule_grants_[key] = std::move(grant);
  ++version_;
}

std::vector<RuleGrant> ApprovalQueue::RuleGrants() const {
  absl::MutexLock lock(&mu_);
  std::vector<RuleGrant> out;
  const absl::Time now = options_.clock();
  for (const auto& [key, grant] : rule_grants_) {
    if (grant.expires_at > now) out.push_back(grant);
  }
  return out;
}

void ApprovalQueue::TakeExpiredLocked(absl::Time now, absl::Time* next,
                                      std::vector<TerminalGrant>* terminals,
                                      std::vector<RuleGrant>* rules) {
  for (auto it = terminal_grants_.begin(); it != terminal_grants_.end();) {
    if (it->second.expires_at <= now) {
      terminals->push_back(it->second);
      it = terminal_grants_.erase(it);
    } else {
      *next = std::min(*next, it->second.expires_at);
      ++it;
    }
  }
  for (auto it = rule_grants_.begin(); it != rule_grants_.end();) {
    if (it->second.expires_at <= now) {
      rules->push_back(it->second);
      it = rule_grants_.erase(it);
    } else {
      *next = std::min(*next, it->second.expires_at);
      ++it;
    }
  }
}

void ApprovalQueue::AuditExpired(const std::vector<TerminalGrant>& terminals,
                                 const std::vector<RuleGrant>& rules, std::string_view found) {
  for (const TerminalGrant& g : terminals) {
    spdlog::info("event=grant_expired kind=terminal terminal_id={} approval_id={} found=\"{}\"",
                 g.terminal_id, g.approval_id, found);
    if (options_.audit == nullptr) continue;
    // It ended whether or not the disk takes the record now.
    options_.audit
        ->AppendAfterTheFact(kGrantExpired, {{"kind", "terminal"},
                                             {"terminal_id", g.terminal_id},
                                             {"agent_id", g.agent_id},
                                             {"command", g.command},
                                             {"approval_id", g.approval_id},
                                             {"granted_by", g.granted_by},
                                             {"surface", g.surface},
                                             {"granted_at", TimeText(g.granted_at)},
                                             {"expires_at", TimeText(g.expires_at)},
                                             {"found", std::string(found)}})
        .IgnoreError();
  }
  for (const RuleGrant& g : rules) {
    spdlog::info("event=grant_expired kind=rule rule_id={} approval_id={} found=\"{}\"", g.rule_id,
                 g.approval_id, found);
    if (options_.audit == nullptr) continue;
    nlohmann::json fields = {{"kind", "rule"},
                             {"rule_id", g.rule_id},
                             {"rule", g.rule_toml},
                             {"agent_id", g.agent_id},
                             {"approval_id", g.approval_id},
                             {"granted_by", g.granted_by},
                             {"surface", g.surface},
                             {"expires_at", TimeText(g.expires_at)},
                             {"found", std::string(found)}};
    if (g.granted_at != absl::InfinitePast()) fields["granted_at"] = TimeText(g.granted_at);
    options_.audit->AppendAfterTheFact(kGrantExpired, std::move(fields)).IgnoreError();
  }
}

int ApprovalQueue::Watch(Watcher watcher) {
  absl::MutexLock lock(&watchers_mu_);
  int id = next_watcher_++;
  watchers_[id] = std::move(watcher);
  return id;
}

void ApprovalQueue::Unwatch(int id) {
  absl::MutexLock lock(&watchers_mu_);
  watchers_.erase(id);
}

void ApprovalQueue::Notify(std::string_view kind, const Entry& entry) {
  absl::MutexLock lock(&watchers_mu_);
  for (const auto& [id, watcher] : watchers_) watcher(kind, entry);
}

void ApprovalQueue::ExpiryLoop() {
  for (;;) {
    std::vector<std::string> expired;
    std::vector<TerminalGrant> ended_terminals;
    std::vector<RuleGrant> ended_rules;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      absl::Time now = options_.clock();
      absl::Time next = now + absl::Seconds(1);
      TakeExpiredLocked(now, &next, &ended_terminals, &ended_rules);
      for (const auto& [id, entry] : entries_) {
        if (entry.state != State::kPending) continue;
        if (entry.expires_at <= now) {
          expired.push_back(id);
        } else {
          next = std::min(next, entry.expires_at);
        }
      }
      if (expired.empty() && ended_terminals.empty() && ended_rules.empty()) {
        // Wake at the next deadline, or when something changes or stops.
        uint64_t seen = version_;
        auto changed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return stopping_ || version_ != seen;
        };
        mu_.AwaitWithTimeout(absl::Condition(&changed),
                             std::max(next - now, absl::Milliseconds(5)));
        continue;
      }
    }
    AuditExpired(ended_terminals, ended_rules, "sweep");
    for (const std::string& id : expired) {
      Resolve(id, State::kTimedOut, Scope::kOnce, "broker", "broker",
              "no decision within the approval timeout")
          .IgnoreError();
    }
  }
}

}  // namespace termbridge::approval
