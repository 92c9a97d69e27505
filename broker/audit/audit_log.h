// AuditLog is the broker's append-only record of who asked for what and who
// decided: one JSON object per line (JSONL) in the state dir, each with a
// monotonic, gap-free "index", an RFC 3339 UTC "time" with milliseconds and an
// "event" name. A record is durable (written with one write(2) and
// fdatasync'd) before Append returns, so a caller that acknowledges an event
// only after Append returns OK gets exactly one record per acknowledged event.
// Callers depend on the AuditSink interface; AuditLog is the file-backed one.
#ifndef TERMBRIDGE_BROKER_AUDIT_AUDIT_LOG_H_
#define TERMBRIDGE_BROKER_AUDIT_AUDIT_LOG_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json_fwd.hpp"

namespace termbridge::audit {

// Event names the broker writes. Records describe sizes, never contents: input
// sent to a running program is recorded as a byte count, never as its bytes.
// Decisions carry the approver, the surface it came from and the trace_id.
inline constexpr std::string_view kTerminalOpened = "terminal_opened";      // terminal_id, shell
inline constexpr std::string_view kTerminalClosed = "terminal_closed";      // terminal_id, reason
inline constexpr std::string_view kCommandRequested = "command_requested";  // session_id, command
inline constexpr std::string_view kCommandStarted = "command_started";      // session_id
inline constexpr std::string_view kCommandRefused = "command_refused";      // code, reason
inline constexpr std::string_view kCommandExited = "command_exited";        // exit code, signal
inline constexpr std::string_view kInputAccepted = "input_accepted";        // bytes (a count)
inline constexpr std::string_view kInputRefused = "input_refused";          // bytes, reason
inline constexpr std::string_view kInputDiscarded = "input_discarded";      // bytes left unread
inline constexpr std::string_view kAuthFailed = "auth_failed";              // peer, role tried
inline constexpr std::string_view kIdentityMismatch =
    "identity_mismatch";                                            // agent_id, claimed_agent_id
inline constexpr std::string_view kAgentAdded = "agent_added";      // agent_id
inline constexpr std::string_view kAgentRevoked = "agent_revoked";  // agent_id, ended_calls
inline constexpr std::string_view kApprovalRequested = "approval_requested";  // rule, command
inline constexpr std::string_view kApprovalDecided = "approval_decided";      // approver, surface
inline constexpr std::string_view kPolicyDecided = "policy_decided";          // allow/deny, rule
inline constexpr std::string_view kLockChanged = "lock_changed";              // mode, by, surface
inline constexpr std::string_view kPolicyChanged = "policy_changed";          // rules appended
inline constexpr std::string_view kAuditLogReopened = "audit_log_reopened";   // previous index

// Where audit records go. Implementations are thread-safe.
class AuditSink {
 public:
  virtual ~AuditSink() = default;

  // Durably records `event` with `fields` and returns the record's index.
  // Acknowledge the event only after this returns OK.
  virtual absl::StatusOr<uint64_t> Append(std::string_view event, nlohmann::json fields) = 0;
};

// The JSONL file behind AuditSink. One line per record:
//   {"index":N,"time":"2024-05-01T12:00:00.123Z","event":"...",<fields>}
// A record is a line that ends in '\n'; a last line without one is torn (a
// crash or a failed write) and is not a record. Readers skip lines that do not
// parse.
class AuditLog : public AuditSink {
 public:
  // Largest record Append writes, in bytes including the newline.
  static constexpr size_t kMaxRecordBytes = 1 << 20;

  // Opens `path` for appending, creating it with mode 0600 if missing (and
  // fsyncing its directory). An existing file is tightened to mode 0600 and
  // its index continues after the last complete, valid record; a torn last
  // line is ignored and the next record starts on a fresh line. `path` must be
  // a regular file, not a symlink. While one AuditLog has the file open (an
  // exclusive flock), another Open, in any process, fails FAILED_PRECONDITION.
  // `clock` gives record times (tests inject it).
  static absl::StatusOr<std::unique_ptr<AuditLog>> Open(
      const std::string& path, std::function<absl::Time()> clock = absl::Now);

  ~AuditLog() override;
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Writes one record with a single write(2), then fdatasync, and returns its
  // index (1, 2, 3, ... with no gaps). `event` is 1 to 64 of [a-z0-9_].
  // `fields` is a JSON object, or null for none. Fields cannot override the
  // record's own keys: a field named "index", "time" or "event" is rejected
  // (InvalidArgument), as is a record over kMaxRecordBytes. Invalid UTF-8 in
  // fields is written as U+FFFD. On a write failure (RESOURCE_EXHAUSTED for a
  // full disk or a short write, else the errno's code) no record is written
  // and the index does not advance; a partial line left behind is torn and the
  // next record starts after it on a line of its own. If fdatasync fails the
  // log can no longer tell what is on disk: it returns DATA_LOSS now and for
  // every later call; reopen to continue.
  absl::StatusOr<uint64_t> Append(std::string_view event, nlohmann::json fields) override;

  // For log rotation (logrotate moves the file, then the broker gets SIGHUP):
  // if the file at the log's path is no longer the one open, opens the new
  // one (created 0600 if missing, locked as in Open) and continues the index
  // there, starting with an "audit_log_reopened" record that names the last
  // index of the previous file. Returns false, changing nothing, when the
  // path still names the open file. Also ends a DATA_LOSS state.
  absl::StatusOr<bool> Reopen();

 private:
  AuditLog(std::string path, int fd, uint64_t next_index, bool needs_newline,
           std::function<absl::Time()> clock);
  // Append's write, with the fields already rendered (",\"k\":v..." or "").
  absl::StatusOr<uint64_t> AppendLocked(std::string_view event, const std::string& fields_text)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  int fd_ ABSL_GUARDED_BY(mu_);
  const std::function<absl::Time()> clock_;
  absl::Mutex mu_;
  uint64_t next_index_ ABSL_GUARDED_BY(mu_);
  // The file ends mid-line (torn record), so the next write starts with '\n'.
  bool needs_newline_ ABSL_GUARDED_BY(mu_);
  // Set once fdatasync fails; every later Append returns it.
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
};

}  // namespace termbridge::audit

#endif  // TERMBRIDGE_BROKER_AUDIT_AUDIT_LOG_H_
