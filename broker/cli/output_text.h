// How terminal output bytes become text for `termbridge attach --json` and
// `termbridge watch`: chunks are cut only between whole UTF-8 characters, and
// watch's interleaved output names its terminal at the start of every line.
#ifndef TERMBRIDGE_BROKER_CLI_OUTPUT_TEXT_H_
#define TERMBRIDGE_BROKER_CLI_OUTPUT_TEXT_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace termbridge::cli {

// Holds back an incomplete UTF-8 character at the end of a chunk until the
// next chunk completes it, so each JSON line carries whole characters.
class Utf8Carry {
 public:
  struct Text {
    uint64_t offset;  // stream offset of text[0]
    std::string text;
  };
  // `data` starts at stream `offset`. A gap (offset past the held bytes)
  // drops what was held.
  Text Add(uint64_t offset, std::string_view data);

 private:
  std::string held_;
  uint64_t held_offset_ = 0;
};

// Removes terminal control sequences from a byte stream, so a line-by-line
// view of a terminal shows its text: CSI, OSC (shell integration marks,
// titles), DCS/APC/PM/SOS strings, two-byte ESC forms and control bytes
// other than newline and tab. Stateful: a sequence may span chunks. (The
// broker's CleanTerminalText works on whole buffers, not a live stream.)
class EscapeStripper {
 public:
  std::string Add(std::string_view data);

 private:
  enum class State { kText, kEscape, kEscapeIntermediate, kCsi, kString, kStringEscape };
  State state_ = State::kText;
};

// Passes a terminal's output to the person's own terminal emulator (attach,
// replay) as it is, but for what would make that emulator do more than draw,
// so the output cannot act on the person's desk:
// - set the window's title, which attach keeps for the terminal's status:
//   OSC 0, 1 and 2 and every CSI ... t (the title stack, window operations
//   and their reports, such as the title report that types the title back);
// - answer with text the output chose, or change what the person's keys
//   send: every DCS (DECRQSS, XTGETTCAP, DECUDK, tmux passthrough), APC, PM
//   and SOS string, and every OSC but the allowed ones (the clipboard's 52,
//   color queries, iTerm2's 1337, notifications);
// - print: CSI ... i (media copy);
// - leave UTF-8 (ESC %), where raw 8-bit C1 bytes act: those are dropped
//   too, and screen's ESC k title.
// The allowed OSCs only draw: 7 (the working directory), 8 (a hyperlink),
// 22 (the pointer's shape) and 133 (prompt marks). An emulator's answers to
// what stays (cursor position, device attributes) have a fixed form.
// Sequences are read as terminals read them: an OSC number with leading
// zeros, the empty number (0) and dtterm's l and L; introducers by ESC or as
// UTF-8 C1 controls; a string ends with BEL (OSC), ST (ESC \ or C1), CAN,
// SUB, another ESC or another C1 control (read as the sequence it starts).
// A sequence may span chunks: its start is held until it is known. A dropped
// string never ended hides at most kMaxDropped bytes, then the output is
// read as text again; a CSI longer than any real one is dropped whole. See
// docs/security.md, "What a viewer's terminal answers".
class OutputGuard {
 public:
  static constexpr size_t kMaxDropped = 4096;
  std::string Add(std::string_view data);

 private:
  enum class State {
    kText,
    kC1,         // after 0xC2: a C1 control may follow
    kEscape,     // after ESC
    kCsi,        // ESC [ (or CSI) and its parameters, held
    kCsiDrop,    // an overlong CSI, up to its final byte
    kOscNumber,  // ESC ] (or OSC) and the digits after it, held
    kString,     // an OSC's string (passed, or dropped while dropping_) or a dropped DCS/APC/PM/SOS
    kStringEscape,
    kStringC1,
    kDropOne,  // the byte after ESC %
  };
  // Takes byte `c` in the current state; false when the state changed and
  // the byte is to be read again in the new one.
  bool Step(unsigned char c, std::string& out);
  State state_ = State::kText;
  std::string held_;       // a sequence's start, not yet known
  size_t introducer_ = 0;  // bytes of held_ before an OSC's number or a CSI's parameters
  bool dropping_ = false;  // the string is dropped
  size_t dropped_ = 0;     // bytes of the string being dropped
  int continuation_ = 0;   // UTF-8 continuation bytes the text still owes
};

// Interleaves several terminals' output on one stream, line by line: every
// line starts with "<terminal_id> | ". A partial line is written at once;
// when another terminal writes before it ends, the line is ended first.
// Carriage returns are dropped, so a log file reads cleanly.
class LinePrefixer {
 public:
  // Returns the text to write for `data` from `terminal_id`.
  std::string Add(std::string_view terminal_id, std::string_view data);
  // A whole line of our own for `terminal_id` ("termbridge > ...").
  std::string Line(std::string_view terminal_id, std::string_view text);

 private:
  std::string open_line_;  // the terminal whose line is unfinished; "" at a line start
};

}  // namespace termbridge::cli

#endif  // TERMBRIDGE_BROKER_CLI_OUTPUT_TEXT_H_
