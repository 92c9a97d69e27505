// The visibility guarantee: an agent's command is written into its PTY only
// while a person watches that terminal (a native window, a console tab,
// `termbridge attach` or `termbridge watch`). AwaitViewer runs between
// choosing a terminal and writing the command: it opens a window when one
// can be opened, waits up to the spawn timeout for any viewer, and otherwise
// fails with Problem::kNoViewer naming every surface it tried (the edge,
// broker/service/errors.h, gives it its details.reason, no_viewer).
#ifndef TERMBRIDGE_BROKER_CORE_VISIBILITY_H_
#define TERMBRIDGE_BROKER_CORE_VISIBILITY_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "broker/approval/approval_queue.h"
#include "broker/core/terminal_registry.h"

namespace termbridge::core {

struct VisibilityOptions {
  bool require_viewer = true;
  absl::Duration spawn_timeout = absl::Milliseconds(8000);
  // Opens a native window showing the terminal; null when there is no
  // display or windows are off. Its error is reported with the others.
  std::function<absl::Status(const std::string& terminal_id)> open_window;
  // How a person could watch, for the error ("console http://127.0.0.1:45460").
  std::vector<std::string> other_surfaces;
  std::string window_unavailable_reason;  // why open_window is null
};

// What AwaitViewer reads and does on a terminal: whose input it takes, who
// watches it, a wait for the first viewer, and a notice line for viewers.
// The broker's session::Terminal stands behind it; unit tests use a fake
// with a clock of their own (visibility_test.cc).
class ViewedTerminal {
 public:
  virtual ~ViewedTerminal() = default;
  virtual session::LockMode lock() const = 0;
  // People watching it now.
  virtual int viewers() const = 0;
  // Blocks until it has a viewer or `timeout` passes; true when it has one.
  virtual bool WaitForViewer(absl::Duration timeout) = 0;
  virtual void PostNotice(std::string text) = 0;
};

// Runs before a command's bytes go into its PTY: refuses a terminal locked
// to its person (user_only) with Problem::kDeclined, then waits for a viewer
// (Problem::kNoViewer when none comes). On record.terminal.
absl::Status AwaitViewer(const SessionRecord& record, const VisibilityOptions& options);
// The same on `terminal`; `record` gives the ids and the command for the
// messages (its own terminal is not used).
absl::Status AwaitViewer(const SessionRecord& record, ViewedTerminal& terminal,
                         const VisibilityOptions& options);

// The notice line for an approval event `kind` ("requested", or a decision)
// about `entry`: what is asked and by whom, or how it was decided.
std::string ApprovalNotice(std::string_view kind, const approval::Entry& entry);

// Tells the people watching a terminal about approvals for it, as notice
// lines ("approval needed ...", "approved once by ..."). Returns the watch id.
int PostApprovalNotices(approval::ApprovalQueue* queue, TerminalRegistry* registry);

}  // namespace termbridge::core

#endif  // TERMBRIDGE_BROKER_CORE_VISIBILITY_H_
