// AuditLog is the broker's append-only record of who asked for what and who
// decided: one JSON object per line (JSONL) in the state dir, each with a
// monotonic, gap-free "index", an RFC 3339 UTC "time" with milliseconds, an
// "event" name and "prev", the SHA-256 of the record before it, so that a
// removed, reordered or edited record breaks the chain (VerifyAuditFiles in
// audit_verify.h checks it; docs/security.md#the-audit-log-is-evidence). A
// record is durable (written with one write(2) and fdatasync'd) before Append
// returns, so a caller that acknowledges an event only after Append returns OK
// gets exactly one record per acknowledged event; an event that already
// happened (AppendAfterTheFact) is kept in memory while the log cannot be
// written and written, in order, as soon as it can. Callers depend on the
// AuditSink interface; AuditLog is the file-backed one.
#ifndef TERMBRIDGE_BROKER_AUDIT_AUDIT_LOG_H_
#define TERMBRIDGE_BROKER_AUDIT_AUDIT_LOG_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
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
inline constexpr std::string_view kTerminalRenamed = "terminal_renamed";      // name, by, surface
inline constexpr std::string_view kTerminalHandedOver =
    "terminal_handed_over";  // agent_id ("" taken back), by, surface
inline constexpr std::string_view kPolicyChanged = "policy_changed";         // rules appended
inline constexpr std::string_view kAuditLogReopened = "audit_log_reopened";  // previous index
inline constexpr std::string_view kRecordingGap = "recording_gap";  // terminal_id, from, reason
// Records AppendAfterTheFact could not keep (its memory for them was full):
// how many, of which events, and when the first and the last happened.
inline constexpr std::string_view kAuditRecordsDropped = "audit_records_dropped";

// The "prev" of the first record of a new log: 64 zeros.
inline constexpr std::string_view kGenesisHash =
    "0000000000000000000000000000000000000000000000000000000000000000";

// The chain hash of a record: lowercase hex SHA-256 of its line's bytes
// without the newline. The next record's "prev" holds it.
std::string RecordHash(std::string_view line);

// True when a complete line (without its newline) is a record: a JSON object
// with an unsigned "index" and a string "event". Sets *record to it. A torn
// write or garbage is not a record.
bool ParseRecord(std::string_view line, nlohmann::json* record);

// Where audit records go. Implementations are thread-safe.
class AuditSink {
 public:
  virtual ~AuditSink() = default;

  // Durably records `event` with `fields` and returns the record's index.
  // Acknowledge the event only after this returns OK.
  virtual absl::StatusOr<uint64_t> Append(std::string_view event, nlohmann::json fields) = 0;

  // Records an event that already happened and cannot be refused (a command
  // exited, a login was refused). Written as Append writes when the log can
  // be written; otherwise the sink keeps it and writes it, in order, before
  // the next record once it can. OK when written now; else the write's error
  // (the record is kept, or counted in an audit_records_dropped record when
  // the sink has no room left to keep it). This default keeps nothing.
  virtual absl::Status AppendAfterTheFact(std::string_view event, nlohmann::json fields);
};

// The JSONL file behind AuditSink. One line per record:
//   {"index":N,"time":"2024-05-01T12:00:00.123Z","event":"...","prev":"<hex>",<fields>}
// "prev" is RecordHash of the record before it (kGenesisHash for the first
// record of a new log). A record written after the fact, later than it
// happened, also has "written": the time it reached the file ("time" is when
// it happened). A record is a line that ends in '\n'; a last line without one
// is torn (a crash or a failed write) and is not a record. Readers skip lines
// that do not parse; the chain steps over them.
class AuditLog : public AuditSink {
 public:
  // Largest record Append writes, in bytes including the newline.
  static constexpr size_t kMaxRecordBytes = 1 << 20;
  // What AppendAfterTheFact keeps while the log cannot be written: at most
  // this many records and this many bytes of their fields.
  static constexpr size_t kMaxPendingRecords = 16384;
  static constexpr size_t kMaxPendingBytes = 8 << 20;

  // Opens `path` for appending, creating it with mode 0600 if missing (and
  // fsyncing its directory). An existing file is tightened to mode 0600 and
  // its index and chain continue after the last complete, valid record; a
  // torn last line is ignored and the next record starts on a fresh line.
  // `path` must be a regular file, not a symlink. While one AuditLog has the
  // file open (an exclusive flock), another Open, in any process, fails
  // FAILED_PRECONDITION.
  // `clock` gives record times (tests inject it).
  static absl::StatusOr<std::unique_ptr<AuditLog>> Open(
      const std::string& path, std::function<absl::Time()> clock = absl::Now);

  ~AuditLog() override;
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Writes one record with a single write(2), then fdatasync, and returns its
  // index (1, 2, 3, ... with no gaps). `event` is 1 to 64 of [a-z0-9_].
  // `fields` is a JSON object, or null for none. Fields cannot override the
  // record's own keys: a field named "index", "time", "event", "prev" or
  // "written" is rejected (InvalidArgument), as is a record over
  // kMaxRecordBytes. Invalid UTF-8 in fields is written as U+FFFD. Records
  // kept by AppendAfterTheFact are written first; if they cannot be, this
  // record is not written either. On a write failure (RESOURCE_EXHAUSTED for
  // a full disk or a short write, else the errno's code) no record is written
  // and the index does not advance; a partial line left behind is torn and the
  // next record starts after it on a line of its own. If fdatasync fails the
  // log can no longer tell what is on disk: it returns DATA_LOSS now and for
  // every later call; reopen to continue.
  absl::StatusOr<uint64_t> Append(std::string_view event, nlohmann::json fields) override;

  // As AuditSink says. The record's "time" is the time of this call. Kept
  // records are lost only if the process ends before the log can be written
  // (the destructor tries once more). InvalidArgument (as Append) keeps nothing.
  absl::Status AppendAfterTheFact(std::string_view event, nlohmann::json fields) override;

  // Records kept by AppendAfterTheFact and not yet written.
  size_t PendingRecords() const;

  // For log rotation (logrotate moves the file, then the broker gets SIGHUP):
  // if the file at the log's path is no longer the one open, opens the new
  // one (created 0600 if missing, locked as in Open) and continues the index
  // and the chain there, starting with an "audit_log_reopened" record that
  // names the last index of the previous file ("previous_last_index") and
  // whose "prev" is the hash of that file's last record. Kept records are
  // written to the previous file first if they can be, else after it. Returns
  // false, changing nothing, when the path still names the open file. Also
  // ends a DATA_LOSS state. An error writing the reopen record keeps it (it is
  // written first once the log can be written).
  absl::StatusOr<bool> Reopen();

 private:
  // A record AppendAfterTheFact could not write yet.
  struct Pending {
    std::string event;
    std::string fields_text;
    absl::Time time;
  };

  AuditLog(std::string path, int fd, uint64_t next_index, std::string last_hash, bool needs_newline,
           std::function<absl::Time()> clock);
  // Writes one record, with the fields already rendered (",\"k\":v..." or
  // ""), that happened at `time`; `late` adds "written".
  absl::StatusOr<uint64_t> AppendLocked(std::string_view event, const std::string& fields_text,
                                        absl::Time time, bool late)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the kept records in order (then the audit_records_dropped record
  // if some could not be kept); stops at the first failure.
  absl::Status WritePendingLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Keeps `record` at the back of the pending list, or counts it as dropped.
  void KeepLocked(Pending record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  int fd_ ABSL_GUARDED_BY(mu_);
  const std::function<absl::Time()> clock_;
  mutable absl::Mutex mu_;
  uint64_t next_index_ ABSL_GUARDED_BY(mu_);
  // RecordHash of the last record written (the next record's "prev").
  std::string last_hash_ ABSL_GUARDED_BY(mu_);
  // The file ends mid-line (torn record), so the next write starts with '\n'.
  bool needs_newline_ ABSL_GUARDED_BY(mu_);
  // Set once fdatasync fails; every later Append returns it.
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
  // Written-after-the-fact records waiting for the log to be writable.
  std::deque<Pending> pending_ ABSL_GUARDED_BY(mu_);
  size_t pending_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // Records that did not fit in pending_, by event, and when they happened.
  std::map<std::string, uint64_t> dropped_ ABSL_GUARDED_BY(mu_);
  absl::Time first_dropped_ ABSL_GUARDED_BY(mu_);
  absl::Time last_dropped_ ABSL_GUARDED_BY(mu_);
};

}  // namespace termbridge::audit

#endif  // TERMBRIDGE_BROKER_AUDIT_AUDIT_LOG_H_
