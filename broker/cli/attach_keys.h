// The keys `termbridge attach` keeps for itself in a person's keystrokes: a
// detach key (default Ctrl-], as in telnet) and a command key (default
// Ctrl-\) that, followed by `k`, closes the terminal (`u`, `a`, `s` set the
// lock mode); every other byte goes to the terminal unchanged.
#ifndef TERMBRIDGE_BROKER_CLI_ATTACH_KEYS_H_
#define TERMBRIDGE_BROKER_CLI_ATTACH_KEYS_H_

#include <optional>
#include <string>
#include <string_view>

namespace termbridge::cli {

// A key as a byte: "^]", "ctrl-]", "C-]" (control keys), one character, or
// "none" / "" for no key (-1). nullopt when the text names no single byte.
std::optional<int> ParseKey(std::string_view text);

// The printable name of a key byte ("Ctrl-]"), for help lines.
std::string KeyName(int key);

enum class KeyAction {
  kNone,
  kDetach,      // stop mirroring; the terminal keeps running
  kClose,       // close the terminal (CloseTerminal), then wait for its exit
  kLockUser,    // only the person's input goes through (user_only)
  kLockAgent,   // only the agent's input goes through (agent_only)
  kLockShared,  // both (shared, the default)
};

// Splits typed bytes into what goes to the terminal and the person's own
// commands. Stateful: a command key at the end of one read pairs with the
// first byte of the next.
//   detach key          -> kDetach
//   command key, k / K  -> kClose
//   command key, d / D  -> kDetach
//   command key, u / a / s -> kLockUser / kLockAgent / kLockShared
//   command key twice   -> one command key byte to the terminal
//   command key, other  -> both bytes to the terminal
class KeyFilter {
 public:
  // A key of -1 is off.
  KeyFilter(int detach_key, int command_key) : detach_(detach_key), command_(command_key) {}

  // Appends the bytes meant for the terminal to *forward and returns the
  // first action in `typed`; bytes after an action are dropped.
  KeyAction Feed(std::string_view typed, std::string* forward);

 private:
  int detach_;
  int command_;
  bool after_command_ = false;  // the last byte was the command key
};

}  // namespace termbridge::cli

#endif  // TERMBRIDGE_BROKER_CLI_ATTACH_KEYS_H_
