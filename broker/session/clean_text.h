// Turns raw terminal bytes into the clean text an agent reads: ANSI escape
// sequences (CSI, OSC, DCS and two-byte ESC forms) removed, CRLF folded to LF,
// and carriage-return overwrites collapsed to what a person would see last on
// the line. Invalid UTF-8 is replaced, so the result is always valid UTF-8.
#ifndef TERMBRIDGE_BROKER_SESSION_CLEAN_TEXT_H_
#define TERMBRIDGE_BROKER_SESSION_CLEAN_TEXT_H_

#include <string>
#include <string_view>

namespace termbridge::session {

std::string CleanTerminalText(std::string_view raw);

// Replaces invalid UTF-8 sequences with U+FFFD (for raw output sent as JSON text).
std::string SanitizeUtf8(std::string_view bytes);

}  // namespace termbridge::session

#endif  // TERMBRIDGE_BROKER_SESSION_CLEAN_TEXT_H_
