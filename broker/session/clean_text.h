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

// Whether a person's screen shows output on the cursor's line after
// `tail`, the last bytes a command printed: its last text is not followed by
// a newline, a carriage return, a return to the main screen or a move to the
// first column. The shell then starts its prompt on a line of its own, so the
// line editor's redraw (which erases the prompt's line) keeps that text.
bool EndsMidLine(std::string_view tail);

// Replaces invalid UTF-8 sequences with U+FFFD (for raw output sent as JSON text).
std::string SanitizeUtf8(std::string_view bytes);

}  // namespace termbridge::session

#endif  // TERMBRIDGE_BROKER_SESSION_CLEAN_TEXT_H_
