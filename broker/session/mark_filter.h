// MarkFilter authenticates shell-integration marks in a terminal's raw PTY
// output. The integrated shell signs every OSC 133 mark it prints with the
// terminal's secret (`ESC ] 133 ; <kind> [; params] ; tb=<secret> BEL`); a
// program's output cannot, because the secret lives only in the shell's own
// unexported variables. The filter takes the secret out of each signed mark
// before the bytes reach the ring (so no reader, agent or viewer, ever sees
// it), reports the mark with its offset in the filtered stream, and leaves
// every unsigned mark in place as ordinary output. See docs/security.md.
#ifndef TERMBRIDGE_BROKER_SESSION_MARK_FILTER_H_
#define TERMBRIDGE_BROKER_SESSION_MARK_FILTER_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "broker/session/shell_integration.h"

namespace termbridge::session {

class MarkFilter {
 public:
  // A mark longer than this (intro to terminator) is output, not a mark.
  static constexpr size_t kMaxMarkBytes = 512;

  explicit MarkFilter(std::string secret);

  // Filters the next raw chunk. Returns true when the chunk passes through
  // unchanged (nothing held back, no signed mark): the caller then uses
  // `bytes` itself and *out is untouched. Otherwise *out receives the
  // filtered bytes, and `marks` the signed marks found, their offsets
  // relative to the start of *out. A partial mark at the end of the chunk is
  // held back until the next Feed (or Flush).
  bool Feed(std::string_view bytes, std::string* out, std::vector<ShellMark>* marks);
  // The bytes held back, as output (the stream ended).
  std::string Flush();

 private:
  bool Signed(std::string_view body, ShellMark* mark) const;

  const std::string suffix_;  // ";tb=<secret>"
  std::string held_;
};

// A fresh secret: 32 hex digits from the kernel's random source.
std::string NewMarkSecret();

}  // namespace termbridge::session

#endif  // TERMBRIDGE_BROKER_SESSION_MARK_FILTER_H_
