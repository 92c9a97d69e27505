// WindowLauncher opens a native terminal window on the host that runs
// `termbridge attach <terminal>`, so a person sees every interactive
// terminal. The command comes from a template: "auto" detects
// x-terminal-emulator, gnome-terminal, konsole or xterm on Linux (when a
// display is set) and Terminal.app on macOS; "none" turns windows off; any
// other value is a command line in which {attach} is replaced by the attach
// command (already shell-quoted) and {terminal} by the terminal id.
#ifndef TERMBRIDGE_BROKER_SURFACE_WINDOW_WINDOW_LAUNCHER_H_
#define TERMBRIDGE_BROKER_SURFACE_WINDOW_WINDOW_LAUNCHER_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace termbridge::surface {

struct WindowOptions {
  std::string command_template = "auto";
  std::string cli_path;   // the termbridge binary; empty: found next to the broker or on PATH
  std::string state_dir;  // passed to `termbridge attach --state-dir`
  // Environment lookup (tests inject it).
  std::function<std::optional<std::string>(const std::string&)> env;
};

class WindowLauncher {
 public:
  // Resolves the template. When no window can be opened (no display, no
  // emulator, "none"), it returns FailedPrecondition saying why.
  static absl::StatusOr<WindowLauncher> Create(WindowOptions options);

  // The resolved command line for a terminal, e.g.
  // `xterm -T 'termbridge t_1' -e '/usr/bin/termbridge' attach ... t_1`.
  std::string CommandFor(const std::string& terminal_id) const;
  // Starts the window detached (its own session; the broker never waits on it).
  absl::Status Open(const std::string& terminal_id) const;
  const std::string& command_template() const { return template_; }

 private:
  WindowLauncher(std::string command_template, std::string attach_prefix)
      : template_(std::move(command_template)), attach_prefix_(std::move(attach_prefix)) {}
  std::string template_;
  std::string attach_prefix_;  // the attach command before the terminal id, quoted
};

// Single-quotes a word for sh.
std::string ShellQuoteWord(const std::string& word);

}  // namespace termbridge::surface

#endif  // TERMBRIDGE_BROKER_SURFACE_WINDOW_WINDOW_LAUNCHER_H_
