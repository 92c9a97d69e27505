// What people call a terminal (docs/CONTRACT.md, "Terminal names"): a name an
// agent or a person gives, cleaned so that it cannot move a cursor, reorder
// text or pass for something else on any surface, or one derived from the
// terminal's directory and first command. Ids stay the identity.
#ifndef TERMBRIDGE_BROKER_CORE_TERMINAL_NAMES_H_
#define TERMBRIDGE_BROKER_CORE_TERMINAL_NAMES_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace termbridge::core {

// The longest name kept, in bytes (cut at a character boundary).
inline constexpr size_t kMaxTerminalName = 64;

// `raw` made a name: well-formed UTF-8 only; control characters (C0, DEL,
// C1), bidirectional overrides and isolates, zero-width characters and
// invalid bytes removed; runs of white space made one space, trimmed; cut to
// kMaxTerminalName. Empty when nothing printable is left.
std::string CleanTerminalName(std::string_view raw);

// A name from the terminal's directory and its first command: "repo: make"
// (the directory's last component, the command's first word without its
// path), "repo" without a command, "/" for the root.
std::string DerivedTerminalName(std::string_view cwd, std::string_view command);

}  // namespace termbridge::core

#endif  // TERMBRIDGE_BROKER_CORE_TERMINAL_NAMES_H_
