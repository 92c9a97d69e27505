// The options of the programs that run another program (env, nice,
// timeout, time, flock, script, exec, ...), read as the program reads them,
// and what each does to the program it runs: a file it writes (`time -o F`,
// `flock F`, `nohup`'s nohup.out), a variable it sets, or something the
// check cannot follow (`env -C DIR`, `env -i`, `exec -c`, chroot), which
// makes the wrapped command ask. An option the table does not know asks as
// well: `env -a NAME` (coreutils 9.5) renames the program it runs, and a
// reader that skipped it would judge the wrong program. See
// docs/security.md, "Wrappers are read as they read themselves".
#ifndef TERMBRIDGE_COMMON_POLICY_WRAPPER_ARGS_H_
#define TERMBRIDGE_COMMON_POLICY_WRAPPER_ARGS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/policy/shell_parser.h"

namespace termbridge::policy::internal {

struct WrapperSpec;

// The wrapper named `prog` (a basename), or nullptr.
const WrapperSpec* FindWrapper(std::string_view prog);

struct WrapperArgs {
  size_t command_at = 0;            // first word of the wrapped command (== size: none)
  bool no_command = false;          // `command -v`, `ionice -p PID`: nothing is run
  bool runs_command = true;         // false: the operands are files (sudoedit, script)
  std::optional<Word> code;         // flock -c CODE, script -c CODE, env -S STRING
  size_t after_code = 0;            // the word after the code's (env -S STRING ARGS...)
  std::vector<std::string> writes;  // files the wrapper itself writes
  std::string unjudged;             // why the check cannot follow it; "" when it can
  std::string opaque;               // strace: why no rule may allow the whole line
};

// Reads the options of `w` (w[0] is the wrapper, `spec` its entry) up to the
// command it runs. A word known only at run time ends the options there.
WrapperArgs ReadWrapperArgs(const WrapperSpec& spec, const std::vector<Word>& w);

}  // namespace termbridge::policy::internal

#endif  // TERMBRIDGE_COMMON_POLICY_WRAPPER_ARGS_H_
