// AwaitViewer: a window if possible, then wait for any viewer; and the
// notice lines viewers see about approvals.
#include "broker/core/visibility.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "broker/core/problem.h"
#include "spdlog/spdlog.h"

namespace termbridge::core {
namespace {

// A broker terminal as AwaitViewer sees it.
class SessionTerminalView final : public ViewedTerminal {
 public:
  explicit SessionTerminalView(session::Terminal& terminal) : terminal_(terminal) {}
  session::LockMode lock() const override { return terminal_.lock(); }
  int viewers() const override { return terminal_.viewers(); }
  bool WaitForViewer(absl::Duration timeout) override { return terminal_.WaitForViewer(timeout); }
  void PostNotice(std::string text) override { terminal_.PostNotice(std::move(text)); }

 private:
  session::Terminal& terminal_;
};

}  // namespace

absl::Status AwaitViewer(const SessionRecord& record, const VisibilityOptions& options) {
  SessionTerminalView terminal(*record.terminal);
  return AwaitViewer(record, terminal, options);
}

absl::Status AwaitViewer(const SessionRecord& record, ViewedTerminal& terminal,
                         const VisibilityOptions& options) {
  if (terminal.lock() == session::LockMode::kUserOnly) {
    terminal.PostNotice(
        absl::StrCat("agent command refused: the terminal is user_only: ", record.command));
    return Fail(Problem::kDeclined,
                absl::StrCat("terminal ", record.terminal_id,
                             " is user_only: a person holds its input; the "
                             "command was not run"),
                {{"terminal_id", record.terminal_id}, {"lock", "user_only"}});
  }
  if (!options.require_viewer || terminal.viewers() > 0) return absl::OkStatus();
  std::vector<std::string> tried;
  if (options.open_window) {
    absl::Status opened = options.open_window(record.terminal_id);
    tried.push_back(opened.ok() ? "window: opened, nobody attached"
                                : absl::StrCat("window: ", std::string(opened.message())));
  } else {
    tried.push_back(absl::StrCat("window: ", options.window_unavailable_reason.empty()
                                                 ? "off"
                                                 : options.window_unavailable_reason));
  }
  for (const std::string& surface : options.other_surfaces) tried.push_back(surface);
  tried.push_back(absl::StrCat("attach: termbridge attach ", record.terminal_id));
  spdlog::info("event=awaiting_viewer terminal_id={} session_id={} timeout_ms={}",
               record.terminal_id, record.session_id,
               absl::ToInt64Milliseconds(options.spawn_timeout));
  if (terminal.WaitForViewer(options.spawn_timeout)) return absl::OkStatus();
  spdlog::warn("event=no_viewer terminal_id={} session_id={}", record.terminal_id,
               record.session_id);
  return Fail(Problem::kNoViewer,
              absl::StrCat("no one is watching terminal ", record.terminal_id, " after ",
                           absl::ToInt64Milliseconds(options.spawn_timeout),
                           " ms; the command was not run"),
              {{"terminal_id", record.terminal_id},
               {"session_id", record.session_id},
               {"spawn_timeout_ms", absl::ToInt64Milliseconds(options.spawn_timeout)},
               {"surfaces_tried", tried}});
}

std::string ApprovalNotice(std::string_view kind, const approval::Entry& entry) {
  std::string text;
  if (kind == "requested") {
    text = absl::StrCat("approval needed (", entry.approval_id, "): ", entry.request.command);
    // What the command will get besides its text: where it runs, every
    // variable the agent set, which terminal, who asked and what asked.
    // (PostNotice makes control characters visible.)
    if (!entry.request.cwd.empty()) absl::StrAppend(&text, "  [cwd ", entry.request.cwd, "]");
    for (const auto& [name, value] : entry.request.env) {
      absl::StrAppend(&text, "  [env ", name, "=", value, "]");
    }
    absl::StrAppend(&text, "  [terminal ", entry.request.terminal_id, "]  [agent ",
                    entry.request.agent_id, "]  [",
                    entry.request.rule.empty() ? std::string("default action")
                                               : absl::StrCat("rule ", entry.request.rule),
                    entry.request.reason.empty() ? "" : ": ", entry.request.reason, "]");
  } else if (entry.state == approval::State::kApproved) {
    text = absl::StrCat("approved ", std::string(approval::ScopeName(entry.scope)), " by ",
                        entry.approver, " via ", entry.surface, ": ", entry.request.command);
  } else if (entry.state == approval::State::kDenied) {
    text = absl::StrCat("denied by ", entry.approver, " via ", entry.surface, ": ",
                        entry.request.command,
                        entry.note.empty() ? "" : absl::StrCat(" (", entry.note, ")"));
  } else {
    text = absl::StrCat("approval ", std::string(approval::StateName(entry.state)), ": ",
                        entry.request.command);
  }
  return text;
}

int PostApprovalNotices(approval::ApprovalQueue* queue, TerminalRegistry* registry) {
  return queue->Watch([registry](std::string_view kind, const approval::Entry& entry) {
    if (entry.request.terminal_id.empty()) return;
    absl::StatusOr<SessionRecord> record = registry->FindTerminal(entry.request.terminal_id, "");
    if (!record.ok()) return;  // a new terminal: nobody can watch it yet
    record->terminal->PostNotice(ApprovalNotice(kind, entry));
  });
}

}  // namespace termbridge::core
