// ApprovalQueue holds the commands (and policy proposals) that policy sent to
// a person: each waits, pending, until an operator approves or denies it or
// the approval timeout passes. Every request and every decision is audited
// before anyone hears about it. The queue knows nothing about gRPC or PTYs:
// what happens after a decision is the caller's `on_decided` continuation.
#ifndef TERMBRIDGE_BROKER_APPROVAL_APPROVAL_QUEUE_H_
#define TERMBRIDGE_BROKER_APPROVAL_APPROVAL_QUEUE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "broker/audit/audit_log.h"

namespace termbridge::approval {

enum class State { kPending, kApproved, kDenied, kTimedOut, kCancelled };
std::string_view StateName(State state);  // "pending", "approved", "denied", "timed_out", "cancelled"

// How far an approval reaches: this request only, every later request in the
// same terminal, or forever (an allow rule written to the policy file).
enum class Scope { kOnce, kTerminal, kAlways };
std::string_view ScopeName(Scope scope);  // "once", "terminal", "always"
// Parses "once", "terminal", "always"; anything else is InvalidArgument.
absl::StatusOr<Scope> ParseScope(std::string_view text);

struct Request {
  std::string kind = "command";  // "command", "input", "policy_change"
  std::string command;           // the full command line, or the proposed rule
  std::string cwd;
  std::map<std::string, std::string> env;
  std::string lane = "interactive";
  std::string agent_id;
  std::string terminal_id;  // may be empty: the command would open a new terminal
  std::string session_id;   // minted before the request waits, so the agent can poll it
  std::string trace_id;
  std::string request_id;
  std::string rule;    // the policy rule that asked ("" for the default action)
  std::string reason;  // the policy's explanation
  std::vector<std::string> read_scope;  // where it may read without a person
  std::vector<std::string> reads;       // what it would read
  std::string workspace;  // where the terminal was opened ("always" scopes its rule from it)
};

struct Entry {
  std::string approval_id;
  Request request;
  State state = State::kPending;
  Scope scope = Scope::kOnce;
  std::string approver;
  std::string surface;  // "cli", "console", "window", or "broker" for timeouts
  std::string note;
  absl::Time requested_at;
  absl::Time expires_at;
  absl::Time decided_at;
};

// Runs once per entry, when it stops being pending, on the thread that
// decided it (an operator call, or the queue's expiry thread).
using OnDecided = std::function<void(const Entry&)>;
// Sees every change: kind is "requested" or "decided".
using Watcher = std::function<void(std::string_view kind, const Entry&)>;

struct QueueOptions {
  absl::Duration timeout = absl::Minutes(5);  // how long a request may stay pending
  size_t keep_decided = 256;                  // decided entries kept for lookups
  audit::AuditSink* audit = nullptr;          // may be null in unit tests
  std::function<absl::Time()> clock = absl::Now;
};

class ApprovalQueue {
 public:
  explicit ApprovalQueue(QueueOptions options);
  ~ApprovalQueue();  // stops the expiry thread; pending entries are cancelled
  ApprovalQueue(const ApprovalQueue&) = delete;
  ApprovalQueue& operator=(const ApprovalQueue&) = delete;

  // Audits and queues a request. Fails (and queues nothing) when the audit
  // record cannot be written.
  absl::StatusOr<Entry> Submit(Request request, OnDecided on_decided);
  // Decides a pending entry. NotFound for an unknown id, FailedPrecondition
  // when it is no longer pending. `approve` false is a denial (scope ignored).
  absl::StatusOr<Entry> Decide(const std::string& approval_id, bool approve, Scope scope,
                               std::string approver, std::string surface, std::string note);
  // Ends every pending entry of a terminal (it closed) as cancelled.
  void CancelTerminal(const std::string& terminal_id);

  // Blocks until the entry is decided and its continuation has run, or
  // `timeout` passes; returns
  // it as it is then. NotFound for an unknown id.
  absl::StatusOr<Entry> Wait(const std::string& approval_id, absl::Duration timeout);
  std::optional<Entry> Find(const std::string& approval_id) const;
  std::optional<Entry> FindBySession(const std::string& session_id) const;
  // Pending entries (oldest first), then the kept decided ones if asked.
  std::vector<Entry> List(bool include_decided) const;

  // True once a person approved a request of `terminal_id` with Scope::kTerminal.
  bool TerminalGranted(const std::string& terminal_id) const;
  // Grants a terminal the command approved "for this terminal" ended up in.
  void GrantTerminal(const std::string& terminal_id);

  int Watch(Watcher watcher);
  void Unwatch(int id);

 private:
  // Marks an entry decided, audits it, and runs its continuation and watchers.
  absl::StatusOr<Entry> Resolve(const std::string& approval_id, State state, Scope scope,
                                std::string approver, std::string surface, std::string note);
  void ExpiryLoop();
  void Notify(std::string_view kind, const Entry& entry);

  const QueueOptions options_;
  mutable absl::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, OnDecided> continuations_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> decided_order_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> granted_terminals_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> settling_ ABSL_GUARDED_BY(mu_);  // decided, continuation running
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;  // bumps on every change, for waiters

  mutable absl::Mutex watchers_mu_;
  std::map<int, Watcher> watchers_ ABSL_GUARDED_BY(watchers_mu_);
  int next_watcher_ ABSL_GUARDED_BY(watchers_mu_) = 1;

  std::thread expiry_;
};

}  // namespace termbridge::approval

#endif  // TERMBRIDGE_BROKER_APPROVAL_APPROVAL_QUEUE_H_
