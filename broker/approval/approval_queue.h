// ApprovalQueue holds the commands (and policy proposals) that policy sent to
// a person: each waits, pending, until an operator approves or denies it or
// the approval timeout passes. Every request and every decision is audited
// before anyone hears about it. The queue knows nothing about gRPC or PTYs:
// what happens after a decision is the caller's `on_decided` continuation.
// What agents put in it is bounded (docs/limits.md): each agent has a cap on
// pending command approvals and on pending proposals, a request identical to
// one of its pending ones joins that one instead of queueing again, and a
// refusal past a cap is audited once per burst, not once per request.
#ifndef TERMBRIDGE_BROKER_APPROVAL_APPROVAL_QUEUE_H_
#define TERMBRIDGE_BROKER_APPROVAL_APPROVAL_QUEUE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "broker/audit/audit_log.h"
#include "common/thread/named_thread.h"

namespace termbridge::approval {

enum class State { kPending, kApproved, kDenied, kTimedOut, kCancelled };
std::string_view StateName(
    State state);  // "pending", "approved", "denied", "timed_out", "cancelled"

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
  std::string rule;                     // the policy rule that asked ("" for the default action)
  std::string reason;                   // the policy's explanation
  std::vector<std::string> read_scope;  // where it may read without a person
  std::vector<std::string> reads;       // what it would read
  std::string workspace;  // where the terminal was opened ("always" scopes its rule from it)
  std::vector<std::string> argv;  // policy_change: the proposed rule, word by word
  // What "always" would write for this command, as TOML (what a person sees
  // before choosing it), or why it cannot: one of the two is set for
  // commands (CommandGate), neither for other kinds.
  std::string always_rules_toml;
  std::string always_refusal;
};

// True when `b` asks for exactly what `a` asks for: same agent, kind, lane,
// command (and rule words), cwd, environment and terminal. Such a request
// joins the pending one (ApprovalQueue::Submit).
bool SameRequest(const Request& a, const Request& b);

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
  int duplicates = 0;     // later identical requests that joined this one
  bool abridged = false;  // ListAbridged cut some of its text
  // Approved "terminal" or "always" with a time limit: when the grant ends.
  absl::Time grant_expires_at = absl::InfiniteFuture();
};

// The audit event of a grant that ran out (docs/operating.md, "Grants").
inline constexpr std::string_view kGrantExpired = "grant_expired";

// A "terminal" approval: later commands of that terminal run without asking
// until it closes or `expires_at` passes.
struct TerminalGrant {
  std::string terminal_id;
  std::string agent_id;
  std::string command;  // the command whose approval granted it
  std::string approval_id;
  std::string granted_by;
  std::string surface;
  absl::Time granted_at;
  absl::Time expires_at = absl::InfiniteFuture();
};

// An allow rule in the policy file with an expiry, followed so that its end
// is audited (the policy itself skips it once past).
struct RuleGrant {
  std::string rule_id;
  std::string rule_toml;
  std::string agent_id;  // "" for a rule the broker found in the file
  std::string approval_id;
  std::string granted_by;
  std::string surface;
  absl::Time granted_at = absl::InfinitePast();  // InfinitePast: not known
  absl::Time expires_at;
};

// What an agent may put in one proposal (ProposeRule).
struct ProposalLimits {
  size_t max_words = 32;           // max_proposal_words: argv entries of the rule
  size_t max_rule_bytes = 1024;    // max_proposal_rule_bytes: the words joined by spaces
  size_t max_reason_bytes = 1024;  // max_proposal_reason_bytes: the agent's explanation
};
// PM_TERM_INVALID_PAYLOAD naming the field and the limit (details.field,
// details.limit, details.value) when a proposal is over `limits`.
absl::Status CheckProposal(const std::vector<std::string>& argv, std::string_view reason,
                           const ProposalLimits& limits);

// How much of the queue one list answer carries (an operator's list must
// answer whatever agents queued, within a gRPC message).
struct ListLimits {
  size_t text_bytes = 1024;      // each text field (command, cwd, env value, reason, ...)
  size_t list_items = 16;        // entries of env, reads and read_scope
  size_t total_bytes = 2 << 20;  // the texts of all entries together
};

struct ListView {
  std::vector<Entry> entries;  // pending oldest first, then decided ones if asked
  size_t omitted = 0;          // entries left out past total_bytes
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
  // Per agent: pending "command"/"input" requests, and pending proposals
  // ("policy_change"). Past either, Submit refuses (docs/limits.md).
  size_t max_pending_approvals_per_agent = 16;
  size_t max_pending_proposals_per_agent = 16;
  size_t max_pending_total = 1024;  // all agents together
  ProposalLimits proposal_limits = {};
};

class ApprovalQueue {
 public:
  explicit ApprovalQueue(QueueOptions options);
  ~ApprovalQueue();  // stops the expiry thread; pending entries are cancelled
  ApprovalQueue(const ApprovalQueue&) = delete;
  ApprovalQueue& operator=(const ApprovalQueue&) = delete;

  // Audits and queues a request. Fails (and queues nothing) when the audit
  // record cannot be written. A request SameRequest as a pending one joins
  // it: Submit returns that entry (duplicates bumped, nothing audited) and
  // drops `on_decided`; a caller tells by the returned entry's session_id.
  // Past the agent's cap, PM_TERM_INVALID_PAYLOAD with details.limit and
  // details.value; the first refusal of a burst is audited
  // (approval_limit_reached), the rest are counted and summarized
  // (approval_limit_burst_ended) once the agent is below its cap again.
  absl::StatusOr<Entry> Submit(Request request, OnDecided on_decided);
  // Decides a pending entry. NotFound for an unknown id, FailedPrecondition
  // when it is no longer pending. `approve` false is a denial (scope ignored).
  // `grant_expires_at`: when a "terminal" (or "always") grant ends.
  absl::StatusOr<Entry> Decide(const std::string& approval_id, bool approve, Scope scope,
                               std::string approver, std::string surface, std::string note,
                               absl::Time grant_expires_at = absl::InfiniteFuture());
  // Sets what "always" would write for a pending entry (it changed since the
  // request was made: the policy or the files did). False when not pending.
  bool UpdateAlways(const std::string& approval_id, std::string rules_toml, std::string refusal);
  // Ends every pending entry of a terminal (it closed) as cancelled.
  void CancelTerminal(const std::string& terminal_id);
  // Ends every pending entry of an agent (its credentials were revoked) as
  // cancelled; returns how many.
  size_t CancelAgent(const std::string& agent_id);

  // Blocks until the entry is decided and its continuation has run, or
  // `timeout` passes; returns
  // it as it is then. NotFound for an unknown id.
  absl::StatusOr<Entry> Wait(const std::string& approval_id, absl::Duration timeout);
  std::optional<Entry> Find(const std::string& approval_id) const;
  std::optional<Entry> FindBySession(const std::string& session_id) const;
  // Pending entries (oldest first), then the kept decided ones if asked.
  std::vector<Entry> List(bool include_decided) const;
  // List for a person's screen: every text cut to limits.text_bytes (the
  // entry says abridged), entries past limits.total_bytes left out.
  ListView ListAbridged(bool include_decided, const ListLimits& limits) const;

  const QueueOptions& options() const { return options_; }

  // The grant in force for `terminal_id` (a person approved one of its
  // requests with Scope::kTerminal), or nullopt. A grant found past its
  // expiry is ended here and audited (kGrantExpired, found "in use").
  std::optional<TerminalGrant> TerminalGrantFor(const std::string& terminal_id);
  bool TerminalGranted(const std::string& terminal_id) {
    return TerminalGrantFor(terminal_id).has_value();
  }
  // Grants a terminal the command approved "for this terminal" ended up in.
  void GrantTerminal(TerminalGrant grant);
  // Every terminal grant in force, by terminal id.
  std::vector<TerminalGrant> TerminalGrants();
  // Follows a rule's expiry (once per rule id and expiry; one already past
  // is not followed): when it passes, kGrantExpired is audited.
  void FollowRuleGrant(RuleGrant grant);
  // The followed rule grants not yet expired.
  std::vector<RuleGrant> RuleGrants() const;

  int Watch(Watcher watcher);
  void Unwatch(int id);

 private:
  // Marks an entry decided, audits it, and runs its continuation and watchers.
  absl::StatusOr<Entry> Resolve(const std::string& approval_id, State state, Scope scope,
                                std::string approver, std::string surface, std::string note,
                                absl::Time grant_expires_at = absl::InfiniteFuture());
  // Takes the grants past their expiry at `now` out of the books, for
  // AuditExpired; *next is lowered to the earliest expiry still ahead.
  void TakeExpiredLocked(absl::Time now, absl::Time* next, std::vector<TerminalGrant>* terminals,
                         std::vector<RuleGrant>* rules) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AuditExpired(const std::vector<TerminalGrant>& terminals,
                    const std::vector<RuleGrant>& rules, std::string_view found);
  void ExpiryLoop();
  void Notify(std::string_view kind, const Entry& entry);
  // The refusal of a request past the cap `limit` (of `value`, with
  // `pending` waiting); audits it if it starts a burst, else counts it.
  absl::Status Refuse(const Request& request, std::string_view limit, size_t value, size_t pending)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends (and audits) the bursts of `agent_id` whose class is below its cap.
  void EndBursts(const std::string& agent_id);

  // A run of refusals of one agent past one cap.
  struct Burst {
    std::string agent_id;
    std::string limit;
    size_t value = 0;
    uint64_t refused = 0;
    absl::Time first;
    absl::Time last;
  };

  const QueueOptions options_;
  // Serializes Submit: the cap check, the audit record and the insertion are
  // one step, so concurrent requests can neither pass a cap nor duplicate.
  absl::Mutex submit_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, OnDecided> continuations_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> decided_order_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, TerminalGrant> terminal_grants_ ABSL_GUARDED_BY(mu_);  // by terminal
  // When each terminal last lost its grants (closed, handed over): a grant
  // decided before that is not granted again by a command that started
  // late. Entries older than kCancelMemory are dropped.
  std::map<std::string, absl::Time> cancelled_at_ ABSL_GUARDED_BY(mu_);
  // Whether `terminal_id` lost its grants at or after `since`.
  bool LostGrantsSinceLocked(const std::string& terminal_id, absl::Time since) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Followed rule expiries, by rule id + "\n" + expiry; and every one ever
  // followed, so an ended one is not followed again.
  std::map<std::string, RuleGrant> rule_grants_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> followed_rules_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> settling_ ABSL_GUARDED_BY(mu_);  // decided, continuation running
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;                 // bumps on every change, for waiters
  std::map<std::string, Burst> bursts_ ABSL_GUARDED_BY(mu_);  // by agent_id + "\n" + limit

  mutable absl::Mutex watchers_mu_;
  std::map<int, Watcher> watchers_ ABSL_GUARDED_BY(watchers_mu_);
  int next_watcher_ ABSL_GUARDED_BY(watchers_mu_) = 1;

  thread::NamedThread expiry_;  // "tb-approval-exp", joined by the destructor
};

}  // namespace termbridge::approval

#endif  // TERMBRIDGE_BROKER_APPROVAL_APPROVAL_QUEUE_H_
