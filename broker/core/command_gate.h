// CommandGate stands between an agent's command and its terminal: it asks
// the host policy, sends what policy does not decide to the approval queue,
// and starts the command in the registry only once it is allowed or
// approved. A denied line never starts; a pending one has a session id the
// agent can poll, and its bytes wait outside the PTY. Input an agent sends to
// a terminal whose command is still pending is refused, not queued.
#ifndef TERMBRIDGE_BROKER_CORE_COMMAND_GATE_H_
#define TERMBRIDGE_BROKER_CORE_COMMAND_GATE_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "broker/approval/approval_queue.h"
#include "broker/audit/audit_log.h"
#include "broker/core/terminal_registry.h"
#include "common/policy/policy.h"
#include "common/thread/named_thread.h"

namespace termbridge::core {

// Where a command stands with policy and the queue (ApprovalState on the wire).
struct GateState {
  std::string state;  // "allowed", "approved", "pending", "denied", "timed_out", "cancelled"
  std::string approval_id;
  std::string rule;
  std::string reason;
  std::string decided_by;
  std::string surface;
  std::string note;
  std::string scope;
  // A time-boxed grant ("terminal" or "always" with a limit) ends then; 0: none.
  int64_t grant_expires_at_unix_ms = 0;
};

// What Execute knows when its wait ends.
struct GateOutcome {
  std::string session_id;
  std::string terminal_id;  // may be empty while the command waits for approval
  GateState gate;
  // Set once the command runs (or ran) in a terminal.
  std::optional<SessionRecord> record;
};

// Names a refusal in the audit's command_refused record; the broker passes
// the contract's code names (broker/service/errors.h). Empty: the problem's.
using RefusalNamer = std::function<std::string(const absl::Status&)>;

class CommandGate {
 public:
  CommandGate(policy::PolicyFile* policy, approval::ApprovalQueue* approvals,
              CommandRunner* registry, audit::AuditSink* audit,
              RefusalNamer name_refusal = nullptr);
  ~CommandGate();  // joins the starts of approved commands (each may wait for a viewer)

  // Checks policy and starts the command, waiting up to `wait` for a person's
  // decision and for the start. Errors: PM_TERM_BLOCKED_DESTRUCTIVE (denied
  // by policy), PM_TERM_DECLINED (denied by a person, or the terminal has a
  // pending command), PM_TERM_TIMEOUT phase approval, or the start's error.
  absl::StatusOr<GateOutcome> Execute(const ExecuteRequest& request, absl::Duration wait);

  // The state of a session the registry does not hold (yet): pending, or
  // ended by a decision (as the same errors Execute gives). NotFound when the
  // gate never saw it.
  // `agent_id` empty: any agent's; else another agent's session is not found.
  absl::StatusOr<GateOutcome> Lookup(const std::string& session_id,
                                     const std::string& agent_id) const;

  // The approval state of a session the registry holds, when it went through
  // the gate ("allowed" or "approved"), for read_output and list.
  std::optional<GateState> StateOf(const std::string& session_id) const;

  // An approval entry as a GateState.
  static GateState StateOfEntry(const approval::Entry& entry) { return FromEntry(entry); }

 private:
  struct Launch;
  // A request as the gate judged it: completed (session id, where it runs),
  // its target, the policy's decision and whether a terminal grant covers it.
  struct Judged {
    ExecuteRequest params;
    CommandTarget target;
    policy::Decision decision;
    std::shared_ptr<const policy::Policy> policy;  // the policy that decided
    bool granted = false;
    absl::Time grant_expires_at = absl::InfiniteFuture();
    std::shared_ptr<Launch> launch;
  };
  // Checks the line and its environment, plans where it runs, refuses it
  // behind another pending request, and asks policy (audited).
  absl::StatusOr<Judged> Judge(const ExecuteRequest& request);
  // Allowed by policy or a grant: starts it now.
  absl::StatusOr<GateOutcome> RunNow(const Judged& judged);
  // Asks a person and waits for the decision, and the start, until `deadline`.
  absl::StatusOr<GateOutcome> AskAPerson(const Judged& judged, absl::Time deadline);
  // Runs the registry's Execute for an allowed or approved command.
  void Start(const std::shared_ptr<Launch>& launch, ExecuteRequest params);
  void Remember(const std::shared_ptr<Launch>& launch);
  absl::Status DecisionError(const approval::Entry& entry) const;
  // The id of a request pending on `terminal_id` that `params` does not
  // repeat, or "" when there is none.
  std::string PendingOtherThan(const std::string& terminal_id, const ExecuteRequest& params,
                               const std::string& cwd) const;
  static GateState FromEntry(const approval::Entry& entry);
  // Has the approval queue follow the expiry of every rule of `policy` that
  // has one, once per policy generation, so that its end is audited.
  void FollowRuleExpiries(const policy::Policy& policy);
  GateOutcome OutcomeOf(const Launch& launch) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  policy::PolicyFile* const policy_;
  approval::ApprovalQueue* const approvals_;
  CommandRunner* const registry_;
  audit::AuditSink* const audit_;
  const RefusalNamer name_refusal_;

  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Launch>> launches_ ABSL_GUARDED_BY(mu_);
  uint64_t followed_generation_ ABSL_GUARDED_BY(mu_) = 0;  // FollowRuleExpiries' last
  // Approved commands being started ("tb-gate-start"), each until it runs
  // (a start may wait for a viewer); past 1024 at once an approved command
  // is refused (limit_reached, audited). Joined by the destructor.
  thread::ThreadGroup starters_{"tb-gate-start", 1024};
};

}  // namespace termbridge::core

#endif  // TERMBRIDGE_BROKER_CORE_COMMAND_GATE_H_
