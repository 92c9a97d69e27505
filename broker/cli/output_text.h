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
// window's title: OSC 0, 1 and 2 and CSI 22/23 t (the title stack) are
// dropped, so the title `termbridge attach` keeps (the terminal's status)
// cannot be written by the output it shows. A sequence may span chunks: its
// start is held until it is known. A title never ended is dropped up to
// kMaxDroppedTitle bytes, then the output passes again.
class TitleFilter {
 public:
  static constexpr size_t kMaxDroppedTitle = 4096;
  std::string Add(std::string_view data);

 private:
  enum class State {
    kText,
    kEscape,
    kCsi,
    kOscNumber,
    kOscPass,
    kOscPassEscape,
    kDrop,
    kDropEscape
  };
  State state_ = State::kText;
  std::string held_;    // ESC [ ... or ESC ] <digits> not yet known
  size_t dropped_ = 0;  // bytes of the title being dropped
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
