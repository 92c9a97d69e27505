// VerifyAuditFiles checks what AuditLog (audit_log.h) promises about its
// files: read in order (rotated files oldest first, the live file last), the
// records' indexes go up by one with no gap, and each record's "prev" is the
// hash of the record before it, so a removed, reordered or edited record is
// found and named by file and line. It is what `termbridge audit verify` runs
// (docs/security.md#the-audit-log-is-evidence). Knows nothing about the
// broker or the CLI.
#ifndef TERMBRIDGE_BROKER_AUDIT_AUDIT_VERIFY_H_
#define TERMBRIDGE_BROKER_AUDIT_AUDIT_VERIFY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace termbridge::audit {

// Kinds of problem: the chain is broken there.
inline constexpr std::string_view kIndexGap = "index_gap";                  // records removed
inline constexpr std::string_view kIndexOutOfOrder = "index_out_of_order";  // reordered, copied
inline constexpr std::string_view kPrevMismatch = "prev_mismatch";  // the record before was edited
inline constexpr std::string_view kPrevMissing = "prev_missing";    // "prev" absent or not a hash
inline constexpr std::string_view kStartMissing = "start_missing";  // the first records removed
// Kinds of warning: worth a look, the chain holds.
inline constexpr std::string_view kTornLine = "torn_line";       // a last line without newline
inline constexpr std::string_view kNotARecord = "not_a_record";  // a line that does not parse
inline constexpr std::string_view kUnchained = "unchained";      // records older than the chain
inline constexpr std::string_view kStartsAfterRotation = "starts_after_rotation";
inline constexpr std::string_view kNoRecords = "no_records";

// One thing found, where.
struct AuditFinding {
  std::string kind;     // one of the kinds above
  std::string file;     // as given
  uint64_t line = 0;    // 1-based line in `file`; 0 when about the files as a whole
  uint64_t index = 0;   // the record's index; 0 for a line that is not a record
  std::string message;  // for a person: what is wrong and what it means
};

struct AuditVerification {
  std::vector<std::string> files;
  uint64_t records = 0;      // records checked
  uint64_t first_index = 0;  // of the first record checked (0: none)
  uint64_t last_index = 0;   // of the last record checked
  // RecordHash of the last record checked: kept somewhere else, it shows
  // later whether records were removed from the end (which no chain can).
  std::string last_hash;
  std::optional<AuditFinding> problem;  // the first broken link; checking stops there
  std::vector<AuditFinding> warnings;   // the first kMaxWarnings
  uint64_t warnings_total = 0;

  static constexpr size_t kMaxWarnings = 100;
  bool intact() const { return !problem.has_value(); }
};

// Reads `paths` (plain or gzip-compressed, as logrotate's `compress` leaves
// them) in the order given as one log and checks its chain. An unreadable
// file is an error (its errno's code); what the files hold is reported in the
// result, never as an error. Records written before the chain existed (no
// "prev") at the start are checked for their index only (warning unchained).
absl::StatusOr<AuditVerification> VerifyAuditFiles(const std::vector<std::string>& paths);

}  // namespace termbridge::audit

#endif  // TERMBRIDGE_BROKER_AUDIT_AUDIT_VERIFY_H_
