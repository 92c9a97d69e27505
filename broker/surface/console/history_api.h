// The console's history views, read from the broker's audit log with the
// same library as `termbridge approvals history` and `termbridge history
// <terminal>` (broker/cli/audit_history.h, docs/operating.md#history):
//   GET /api/history/decisions?agent=A&terminal=T&decision=D&since=S&until=U&limit=N
//     -> {"decisions":[...oldest first],"matched":N,"terminal_names":{id:name},
//         "skipped_lines":N}
//   GET /api/history/timeline?terminal_id=T
//     -> {"terminal_id","name","entries":[...oldest first],"skipped_lines":N}
// since/until take what the CLI's --since/--until take ("2h", RFC 3339).
// The log's path comes from the broker (GetBrokerInfo.audit_log); the files
// are read on a thread of the console's "tb-console-hist" group, never on
// the I/O thread or a gRPC thread.
#ifndef TERMBRIDGE_BROKER_SURFACE_CONSOLE_HISTORY_API_H_
#define TERMBRIDGE_BROKER_SURFACE_CONSOLE_HISTORY_API_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "broker/cli/audit_history.h"
#include "broker/surface/console/console_context.h"
#include "broker/surface/console/operator_api.h"
#include "nlohmann/json.hpp"

namespace termbridge::console {

// The most decisions one answer carries (the newest); `limit` may ask fewer.
inline constexpr size_t kMaxHistoryDecisions = 2000;
// The most timeline entries one answer carries (the newest).
inline constexpr size_t kMaxTimelineEntries = 5000;

struct HistoryRequest {
  enum class Kind { kDecisions, kTimeline };
  Kind kind = Kind::kDecisions;
  cli::history::DecisionFilter filter;  // kDecisions
  std::string terminal_id;              // kTimeline
};

// Whether `path` is one of the history routes (GET only).
bool IsHistoryPath(std::string_view path);

// The request for `path` and its query; InvalidArgument naming the bad
// parameter. `now` anchors relative times ("2h").
absl::StatusOr<HistoryRequest> ParseHistoryRequest(std::string_view path, std::string_view query,
                                                   absl::Time now);

struct HistoryAnswer {
  int http_status = 200;
  nlohmann::json body;  // the answer, or {"error":{...}}
};

// Reads the log whose live file is `audit_log` and answers `request`.
// 404 when there is no log (or, for a timeline, no record of the terminal),
// 412 when the broker keeps none (`audit_log` empty), 500 when a file
// cannot be read.
HistoryAnswer AnswerHistory(const std::string& audit_log, const HistoryRequest& request);

// Asks the broker where its audit log is, then answers `request` through
// `reply` from a thread of the console's history readers (503 when they
// are all busy or the console is stopping).
void HandleHistory(ConsoleContext* context, HistoryRequest request, ApiReply reply);

}  // namespace termbridge::console

#endif  // TERMBRIDGE_BROKER_SURFACE_CONSOLE_HISTORY_API_H_
