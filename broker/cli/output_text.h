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

// Passes terminal output through as it is, but for what would set the
// window's title, so the title `termbridge attach` keeps (the terminal's
// status) cannot be written by the output it shows: OSC 0, 1 and 2 (by
// number, leading zeros too; also the empty number and dtterm's l and L),
// and every CSI ... t (the title stack, window operations), whether they
// start with ESC or a UTF-8 C1 control. A string ends as a terminal ends it:
// BEL, ST (ESC \ or C1), CAN, SUB, or another ESC. A sequence may span
// chunks: its start is held until it is known. A title never ended is
// dropped up to kMaxDroppedTitle bytes, then the output is read as text
// again; a CSI longer than any real one is dropped whole.
class TitleFilter {
 public:
  static constexpr size_t kMaxDroppedTitle = 4096;
  std::string Add(std::string_view data);

 private:
  enum class State {
    kText,
    kC1,         // after 0xC2: a C1 control may follow
    kEscape,     // after ESC
    kCsi,        // ESC [ (or CSI) and its parameters, held
    kCsiDrop,    // an overlong CSI, up to its final byte
    kOscNumber,  // ESC ] (or OSC) and the digits after it, held
    kString,     // an OSC's string: passed, or dropped while dropping_
    kStringEscape,
    kStringC1,
  };
  // Takes byte `c` in the current state; false when the state changed and
  // the byte is to be read again in the new one.
  bool Step(unsigned char c, std::string& out);
  State state_ = State::kText;
  std::string held_;       // a sequence's start, not yet known
  size_t introducer_ = 0;  // bytes of held_ before an OSC's number or a CSI's parameters
  bool dropping_ = false;  // the string is a title's
  size_t dropped_ = 0;     // bytes of the title being dropped
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
