// What `termbridge approvals history` and `termbridge history` read out of
// the broker's audit log (broker/audit/audit_log.h): the log's files (the
// live one and logrotate's rotated ones, plain or gzip), the decisions in it
// (the policy's and people's) and one terminal's timeline, each command
// joined from its records by session_id and trace_id
// (docs/operating.md#history). Reads files only: no broker, no gRPC.
#ifndef TERMBRIDGE_BROKER_CLI_AUDIT_HISTORY_H_
#define TERMBRIDGE_BROKER_CLI_AUDIT_HISTORY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace termbridge::cli::history {

// The files of the log whose live file is `live`: the rotated ones next to
// it (`live`.N, `live`.N.gz, `live`-DATE[.gz]) and `live` itself, which must
// exist (NotFound otherwise). Order does not matter: ReadAuditRecords orders.
absl::StatusOr<std::vector<std::string>> FindAuditFiles(const std::string& live);

struct AuditRecords {
  std::vector<nlohmann::json> records;  // oldest first
  uint64_t skipped_lines = 0;           // lines that are not records (corrupt), skipped
};

// Reads `files` (plain or gzip) and returns their records, files ordered by
// their first record's time, records in file order. A file that cannot be
// read is an error naming it; a line that is not a record is counted and
// skipped (a last line without newline, a record being written, is not
// counted).
absl::StatusOr<AuditRecords> ReadAuditRecords(const std::vector<std::string>& files);

// `text` as a point in time: RFC 3339 ("2026-05-01T12:00:00Z") or a
// duration before `now` ("90s", "15m", "2h", "3d", "1h30m").
// InvalidArgument naming `flag` otherwise.
absl::StatusOr<absl::Time> ParseWhen(std::string_view text, absl::Time now, std::string_view flag);

// One judged request: what the policy decided alone (policy_decided), or a
// request a person was asked about (approval_requested, then
// approval_decided; "pending" while undecided).
struct Decision {
  uint64_t index = 0;        // the audit record that decided (or asked)
  absl::Time time;           // when decided (asked, if pending)
  std::string time_text;     // the record's RFC 3339 "time"
  std::string requested_at;  // asked of a person: when (RFC 3339)
  std::string agent_id, terminal_id, session_id, trace_id, approval_id;
  std::string kind = "command";  // or "policy_change" (a rule an agent proposed)
  std::string command;
  // allow or deny (the policy alone), or approved, denied, timed_out,
  // cancelled or pending (asked of a person).
  std::string decision;
  bool asked = false;    // a person was asked
  std::string rule;      // the policy rule that decided or asked
  std::string surface;   // policy, terminal_grant, or where a person decided (cli, console, ...)
  std::string approver;  // who decided, when a person did
  std::string scope;     // once, terminal or always, when a person approved
  std::string note;      // the person's note, or the policy's reason
};

// The decisions in `records`, oldest first. Opening a terminal with no
// command is not a decision and is left out. A command that opened its
// terminal is decided before the terminal has an id: it gets the id its
// session later ran in.
std::vector<Decision> Decisions(const std::vector<nlohmann::json>& records);

struct DecisionFilter {
  std::string agent;     // "" = any
  std::string terminal;  // "" = any
  // "" = any; allow, deny, approved, denied, timed_out, cancelled, pending;
  // "ask" = every request a person was asked about.
  std::string decision;
  std::optional<absl::Time> since, until;  // by decision time, inclusive
  size_t limit = 0;                        // keep the newest N (0 = all)
};

// InvalidArgument when `decision` is not one of the values above.
absl::Status CheckDecisionFilter(const DecisionFilter& filter);
std::vector<Decision> Filter(std::vector<Decision> decisions, const DecisionFilter& filter);
nlohmann::json DecisionJson(const Decision& decision);
// "rule no-rm", "alice via cli, scope once", "nobody (timed out)", "the broker".
std::string DecidedBy(const Decision& decision);

// One thing that happened in a terminal.
struct TimelineEntry {
  // command, input (bytes a person or agent typed), opened, closed, lock,
  // recording_gap.
  std::string kind;
  // Its first audit record; a command that started, its command_started
  // record (a command that opens a terminal is decided before it opens).
  uint64_t index = 0;
  absl::Time time;
  std::string time_text;
  std::string from;  // "agent <id>" or "person (<surface>)"
  // kind command:
  std::string session_id, trace_id, command;
  std::optional<Decision> decision;  // none: the log has no decision for it
  // ran (exited), running (no exit recorded), refused (never started),
  // judged (decided, not started).
  std::string state;
  std::optional<absl::Time> started, exited;
  std::string started_text;  // the command_started record's RFC 3339 "time"
  std::optional<int64_t> exit_code, signal;
  std::string completion;
  std::optional<uint64_t> output_from, output_to;  // recording byte offsets [from, to)
  std::string refused_code;
  // kind input: byte count; every kind: the detail a person reads
  // ("accepted", the refusal reason, the lock mode, the close reason).
  uint64_t bytes = 0;
  std::string detail;
};

struct Timeline {
  std::string terminal_id;
  std::vector<TimelineEntry> entries;  // oldest first
};

// The timeline of `terminal_id`. NotFound when no record names it.
absl::StatusOr<Timeline> BuildTimeline(const std::vector<nlohmann::json>& records,
                                       const std::string& terminal_id);
nlohmann::json TimelineEntryJson(const TimelineEntry& entry);

}  // namespace termbridge::cli::history

#endif  // TERMBRIDGE_BROKER_CLI_AUDIT_HISTORY_H_
