// termbridge approvals history and termbridge history <terminal>: what
// happened earlier, read from the broker's audit log files (the live one and
// the rotated ones; audit_history.h), so they work with the broker stopped
// (docs/operating.md#history).
#ifndef TERMBRIDGE_BROKER_CLI_HISTORY_CLI_H_
#define TERMBRIDGE_BROKER_CLI_HISTORY_CLI_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "broker/cli/operator_cli.h"

namespace termbridge::cli {

// The filters of approvals history ("" or 0: none).
struct HistoryOptions {
  std::string agent;
  std::string terminal;
  std::string decision;  // allow, deny, ask, approved, denied, timed_out, cancelled, pending
  std::string since;     // RFC 3339 or a duration ago (2h, 3d)
  std::string until;
  int64_t limit = 0;  // the newest N
};

// approvals history (args: "approvals", "history"): past requests and
// decisions, newest last. Exit 0, 1 (the log cannot be read), 2 (usage).
int ApprovalsHistory(const std::vector<std::string>& args, const CliOptions& options,
                     const HistoryOptions& filters, std::ostream& out, std::ostream& err);

// history <terminal>: the terminal's commands, decisions, exits and
// recording offsets, oldest first. Exit 1 for a terminal the log never names.
int TerminalHistory(const std::vector<std::string>& args, const CliOptions& options,
                    std::ostream& out, std::ostream& err);

}  // namespace termbridge::cli

#endif  // TERMBRIDGE_BROKER_CLI_HISTORY_CLI_H_
