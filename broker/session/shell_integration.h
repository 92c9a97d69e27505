// Shell integration: how the broker learns where each command in a persistent
// interactive shell starts and ends, and its exit code. PrepareShell writes a
// small rc file that makes bash, zsh or sh print OSC 133 marks (ESC ] 133 ; A
// BEL at prompt start, B where input starts, C where command output starts,
// D ; <exit> when the command finished) and returns the argv and environment
// that start the shell with it instead of the user's own rc files, and how a
// command reaches that shell. MarkFilter (mark_filter.h) finds the marks in
// the raw PTY stream.
#ifndef TERMBRIDGE_BROKER_SESSION_SHELL_INTEGRATION_H_
#define TERMBRIDGE_BROKER_SESSION_SHELL_INTEGRATION_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace termbridge::session {

enum class ShellKind { kBash, kZsh, kSh, kOther };

// Quotes one word for a POSIX shell: it's -> 'it'\''s'.
std::string ShellQuote(std::string_view word);

// Classifies a shell by the basename of `path`: "bash", "zsh", and "sh",
// "dash" or "ash" (kSh). Anything else is kOther. Does not touch the file system.
ShellKind DetectShell(const std::string& path);

// The kind of the file `shell_path` runs, through symlinks and PATH
// ("/bin/sh" -> "/usr/bin/dash": kSh). Only kBash reads lines as the
// command policy's parser does; zsh, dash and others read some otherwise.
ShellKind ResolvedShellKind(const std::string& shell_path);

struct ShellLaunch {
  std::vector<std::string> argv;
  // Variables to add to (or override in) the child's environment. The caller
  // merges them into its base environment: SpawnOptions::env replaces the
  // whole environment when it is non-empty.
  std::vector<std::pair<std::string, std::string>> extra_env;
  // True when the shell emits all four marks, C included, so a command's end
  // and exit code come from D. False for kOther (no marks) and for a plain
  // POSIX sh such as dash, which has no pre-exec hook: it prints A, B and
  // D ; $? at every prompt (also before the first and after empty lines), but
  // never C.
  bool integrated = false;
  // The secret the shell signs its marks with (MarkFilter); empty for kOther.
  std::string secret;
  // How a command reaches the shell: write it to `command_file` (the shell
  // reads it whole; it is never typed), then write `trigger` into the PTY.
  std::string command_file;
  std::string trigger;
  // The FIFO the shell waits on after each D mark until the broker has
  // discarded leftover input; empty when the shell cannot wait (plain sh).
  std::string ack_fifo;
  // bash only: where the shell writes its state (PATH, options, aliases,
  // functions, traps, builtins, hashed paths) after every command, and once
  // at its first prompt (broker/core/shell_state.h). Empty for other shells.
  std::string state_file;
  std::string initial_state_file;
};

// Creates the terminal's private directory <runtime_dir>/<terminal_id>
// (runtime_dir 0700, created if missing; refused if it is not a directory
// owned by us or is writable by group or others; the terminal's directory
// must not exist yet), writes the rc file for `shell_path`'s kind there (0600,
// holding a fresh secret; the shell deletes it once read) and returns how to
// start an interactive shell that loads only that file: prompt "$ ", no
// history file, no histexpand.
//   bash:  bash --noprofile --rcfile <dir>/bashrc -i  (PROMPT_COMMAND for A/B/D, PS0 for C)
//   zsh:   zsh -d -i with ZDOTDIR=<dir>/zsh           (precmd for D, preexec for C)
//   sh:    sh -i with ENV=<dir>/shrc                  (A/B/D in PS1; when sh is bash,
//                                                      the bash hooks and integrated=true)
//   other: <shell> -i, nothing written, integrated=false, no secret.
absl::StatusOr<ShellLaunch> PrepareShell(const std::string& shell_path,
                                         const std::string& runtime_dir,
                                         const std::string& terminal_id);

// Writes `command` whole into launch.command_file (0600, replaced
// atomically), where the shell's binding reads it once launch.trigger is
// typed. InvalidArgument for a NUL byte, which no shell variable can hold.
absl::Status WriteCommandFile(const ShellLaunch& launch, std::string_view command);

// Removes what PrepareShell made for `terminal_id` (once its shell is gone).
void RemoveTerminalDir(const std::string& runtime_dir, const std::string& terminal_id);

struct ShellMark {
  enum Kind {
    kPromptStart,   // A: the prompt is about to be drawn
    kCommandStart,  // B: the prompt ended; what follows is the user's input
    kOutputStart,   // C: the command line was accepted; its output follows
    kCommandEnd,    // D: the command finished
  } kind;
  uint64_t offset = 0;           // stream offset of the mark's ESC byte
  uint64_t end_offset = 0;       // stream offset just past its terminator
  std::optional<int> exit_code;  // D only, when the shell reported one
  std::optional<uint64_t> seq;   // D only: the shell's count of D marks ("n=")
};

// Short name of a mark kind ("A", "B", "C", "D"), for logs and test messages.
const char* ShellMarkName(ShellMark::Kind kind);

}  // namespace termbridge::session

#endif  // TERMBRIDGE_BROKER_SESSION_SHELL_INTEGRATION_H_
