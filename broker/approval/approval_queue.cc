// The approval queue: pending requests, decisions, expiry and audit records.
#include "broker/approval/approval_queue.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/contract/request.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace termbridge::approval {
namespace {

nlohmann::json RequestFields(const Entry& entry) {
  const Request& r = entry.request;
  std::vector<std::string> env_names;
  for (const auto& [name, value] : r.env) env_names.push_back(name);
  return {{"approval_id", entry.approval_id}, {"kind", r.kind},
          {"command", r.command},             {"cwd", r.cwd},
          {"env_names", env_names},           {"lane", r.lane},
          {"agent_id", r.agent_id},           {"terminal_id", r.terminal_id},
          {"session_id", r.session_id},       {"trace_id", r.trace_id},
          {"request_id", r.request_id},       {"rule", r.rule},
          {"reason", r.reason}};
}

}  // namespace

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
  expiry_ = std::thread([this] { ExpiryLoop(); });
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
  expiry_.join();
  for (const std::string& id : pending) {
    Resolve(id, State::kCancelled, Scope::kOnce, "broker", "broker", "the broker is shutting down")
        .IgnoreError();
  }
}

absl::StatusOr<Entry> ApprovalQueue::Submit(Request request, OnDecided on_decided) {
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
  spdlog::info("event=approval_requested approval_id={} session_id={} terminal_id={} trace_id={} "
               "rule={}",
               entry.approval_id, entry.request.session_id, entry.request.terminal_id,
               entry.request.trace_id, entry.request.rule);
  Notify("requested", entry);
  return entry;
}

absl::StatusOr<Entry> ApprovalQueue::Decide(const std::string& approval_id, bool approve,
                                            Scope scope, std::string approver,
                                            std::string surface, std::string note) {
  return Resolve(approval_id, approve ? State::kApproved : State::kDenied,
                 approve ? scope : Scope::kOnce, std::move(approver), std::move(surface),
                 std::move(note));
}

absl::StatusOr<Entry> ApprovalQueue::Resolve(const std::string& approval_id, State state,
                                             Scope scope, std::string approver,
                                             std::string surface, std::string note) {
  Entry decided;
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(approval_id);
    if (it == entries_.end()) {
      return absl::NotFoundError(absl::StrCat("no approval request ", approval_id));
    }
    if (it->second.state != State::kPending) {
      return absl::FailedPreconditionError(absl::StrCat(
          "approval ", approval_id, " is already ", std::string(StateName(it->second.state))));
    }
    decided = it->second;
  }
  decided.state = state;
  decided.scope = scope;
  decided.approver = std::move(approver);
  decided.surface = std::move(surface);
  decided.note = std::move(note);
  decided.decided_at = options_.clock();
  if (options_.audit != nullptr) {
    nlohmann::json fields = RequestFields(decided);
    fields["decision"] = StateName(state);
    fields["scope"] = ScopeName(scope);
    fields["approver"] = decided.approver;
    fields["surface"] = decided.surface;
    fields["note"] = decided.note;
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
    if (state == State::kApproved && scope == Scope::kTerminal &&
        !decided.request.terminal_id.empty()) {
      granted_terminals_.insert(decided.request.terminal_id);
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
  spdlog::info("event=approval_decided approval_id={} decision={} scope={} approver={} surface={} "
               "trace_id={}",
               approval_id, StateName(state), ScopeName(scope), decided.approver, decided.surface,
               decided.request.trace_id);
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
    granted_terminals_.erase(terminal_id);
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

absl::StatusOr<Entry> ApprovalQueue::Wait(const std::string& approval_id,
                                          absl::Duration timeout) {
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

bool ApprovalQueue::TerminalGranted(const std::string& terminal_id) const {
  absl::MutexLock lock(&mu_);
  return granted_terminals_.count(terminal_id) > 0;
}

void ApprovalQueue::GrantTerminal(const std::string& terminal_id) {
  absl::MutexLock lock(&mu_);
  granted_terminals_.insert(terminal_id);
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
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      absl::Time now = options_.clock();
      absl::Time next = now + absl::Seconds(1);
      for (const auto& [id, entry] : entries_) {
        if (entry.state != State::kPending) continue;
        if (entry.expires_at <= now) {
          expired.push_back(id);
        } else {
          next = std::min(next, entry.expires_at);
        }
      }
      if (expired.empty()) {
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
    for (const std::string& id : expired) {
      Resolve(id, State::kTimedOut, Scope::kOnce, "broker", "broker",
              "no decision within the approval timeout")
          .IgnoreError();
    }
  }
}

}  // namespace termbridge::approval
