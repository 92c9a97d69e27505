// The visibility guarantee: an agent's command is written into its PTY only
// while a person watches that terminal (a native window, a console tab,
// `termbridge attach` or `termbridge watch`). AwaitViewer runs between
// choosing a terminal and writing the command: it opens a window when one
// can be opened, waits up to the spawn timeout for any viewer, and otherwise
// fails with PM_TERM_GUI_UNAVAILABLE naming every surface it tried.
#ifndef TERMBRIDGE_BROKER_CORE_VISIBILITY_H_
#define TERMBRIDGE_BROKER_CORE_VISIBILITY_H_

#include <functional>
#include <string>
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

// Runs before a command's bytes go into its PTY: refuses a terminal locked
// to its person (user_only) with PM_TERM_DECLINED, then waits for a viewer.
absl::Status AwaitViewer(const SessionRecord& record, const VisibilityOptions& options);

// Tells the people watching a terminal about approvals for it, as notice
// lines ("approval needed ...", "approved once by ..."). Returns the watch id.
int PostApprovalNotices(approval::ApprovalQueue* queue, TerminalRegistry* registry);

}  // namespace termbridge::core

#endif  // TERMBRIDGE_BROKER_CORE_VISIBILITY_H_
