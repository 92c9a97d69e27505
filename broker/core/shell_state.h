// What a terminal's bash has been changed into since it started, and
// whether that changes what a judged line runs. The policy judges a line as
// a fresh bash would run it; but an earlier command (one a person approved,
// or typed) can leave the shell with PATH leading elsewhere, an alias or a
// function named like a program, a hashed path, a trap that runs code with
// every command, a loaded builtin or different options. The shell writes its
// state after every command into <dir>/state, and once when its rc has run
// into <dir>/state0 (broker/session/shell_integration.cc, __tb_state); the
// command gate compares the two before it lets an allowed line run without a
// person (docs/security.md, "A line runs as judged only in the shell state it
// was judged for").
#ifndef TERMBRIDGE_BROKER_CORE_SHELL_STATE_H_
#define TERMBRIDGE_BROKER_CORE_SHELL_STATE_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace termbridge::core {

struct ShellState {
  std::string path;                              // $PATH
  std::string options;                           // "$SHELLOPTS $BASHOPTS"
  std::map<std::string, std::string> aliases;    // name -> its `alias -p` line
  std::set<std::string> traps;                   // `trap -p` lines
  std::set<std::string> builtins;                // `enable -a` lines ("enable -n echo")
  std::map<std::string, std::string> hashed;     // `hash -l`: name -> path
  std::map<std::string, std::string> functions;  // `declare -f`: name -> body
  // Every other line, in order: IFS, CDPATH and GLOBIGNORE, the exported
  // variables (`export -p`, but PATH, PWD, OLDPWD and names harmless to any
  // program), readline's `bind -x` commands and macros. Any change asks.
  std::vector<std::string> rest;
};

// Reads what __tb_state wrote. InvalidArgument when it is not such a state
// (empty, cut short): then what the shell would run cannot be known.
absl::StatusOr<ShellState> ParseShellState(absl::string_view text);

// Why `programs` (the command names of a judged line, as written) may run
// otherwise than judged in a shell that went from `initial` to `now`, with
// relative PATH entries taken from `cwd`; nullopt when nothing changed that
// matters. Any change but to PATH and the hashed paths matters (an alias
// can name a reserved word such as `{`, a function a builtin the line or the
// shell's own hooks use); PATH or a hashed path matters when it finds one of
// the programs in another file than at the start.
std::optional<std::string> ShellStateProblem(const ShellState& initial, const ShellState& now,
                                             const std::vector<std::string>& programs,
                                             const std::string& cwd);

// The program a simple command's text starts with (after NAME=value words),
// without quotes and backslashes; "" when there is none.
std::string ProgramOf(absl::string_view command_text);

}  // namespace termbridge::core

#endif  // TERMBRIDGE_BROKER_CORE_SHELL_STATE_H_
