// Which programs turn what they read into commands. Input an agent sends to
// a running program is judged by what that program will do with it: a
// shell, a pager with shell escapes, an editor, a REPL, a debugger, a remote
// or nested shell, a terminal multiplexer or a job scheduler runs (or hands
// on) what it reads, so input to it asks a person like a command would. See
// docs/security.md.
#ifndef TERMBRIDGE_BROKER_CORE_INPUT_READERS_H_
#define TERMBRIDGE_BROKER_CORE_INPUT_READERS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace termbridge::core {

// True when `program` (an executable's basename, such as "less" or
// "python3.11") can run commands from its input; also for "(unknown ...)",
// a process whose executable could not be read.
bool RunsCommandsFromInput(std::string_view program);

// The first of `programs` (the terminal's foreground process group) that
// runs commands from its input, if any.
std::optional<std::string> CommandReader(const std::vector<std::string>& programs);

}  // namespace termbridge::core

#endif  // TERMBRIDGE_BROKER_CORE_INPUT_READERS_H_
