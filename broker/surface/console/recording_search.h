// Reading a terminal's recording as the broker exports it (asciicast v2,
// ExportRecording; docs/operating.md, "Recordings") for the console's
// whole-history search and its replay at an output offset:
//   CastWalker  says where each event of the export sits in the terminal's
//               output stream (byte offsets, as the audit log and the live
//               view count them): the stream gives each "o" event's offset
//               (RecordingChunk.output_offsets), and in its text a U+FFFD is
//               one byte that was not UTF-8; "m" events say how many bytes
//               were not kept or not recorded.
//   ReplayWindow  the events a replay at an output offset loads.
//   RecordingSearch  finds a literal text, ASCII case-insensitively, in the
//               output with terminal escape sequences removed (a match split
//               by a colour change is found), across event boundaries, with
//               a cap on the bytes it scans and the matches it keeps.
#ifndef TERMBRIDGE_BROKER_SURFACE_CONSOLE_RECORDING_SEARCH_H_
#define TERMBRIDGE_BROKER_SURFACE_CONSOLE_RECORDING_SEARCH_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace termbridge::console {

// One event of the export, placed in the output stream.
struct CastEvent {
  double seconds = 0;     // after the terminal opened
  char code = 'o';        // 'o' output, 'r' resize, 'm' a marker
  std::string_view data;  // the event's text (decoded; a U+FFFD is one output byte)
  std::string_view line;  // the event's line as exported (no newline)
  uint64_t offset = 0;    // where its output begins ('m', 'r': where the stream is)
  uint64_t end = 0;       // one past it (after an 'm': past the bytes it stands for)
};

class CastWalker {
 public:
  // Called for each event; returns false to stop the walk.
  using OnEvent = std::function<bool(const CastEvent&)>;

  // Takes the next lines of the export (lines may be split across calls)
  // and the output offsets of the "o" events among them, in order (without
  // them, events are placed by counting on). InvalidArgument for a line that
  // is no asciicast event; false when `on_event` stopped the walk.
  absl::StatusOr<bool> Feed(std::string_view lines, const OnEvent& on_event,
                            absl::Span<const uint64_t> output_offsets = {});

  // The export's header line (as exported), once read.
  const std::string& header() const { return header_; }
  uint64_t offset() const { return offset_; }

 private:
  absl::StatusOr<bool> Line(std::string_view line, const OnEvent& on_event);

  std::string carry_;                    // the start of a line the next Feed ends
  std::string header_;                   // empty until the first line
  std::string data_;                     // the current event's text
  std::deque<uint64_t> output_offsets_;  // of "o" events still to come
  uint64_t offset_ = 0;
};

// The output bytes an "o" event's text stands for: its length with each
// U+FFFD counted as one byte.
uint64_t OutputBytes(std::string_view text);

// The events of an export a replay loads: all of them, or (with `at`) those
// from up to `lead` bytes of output before byte `at`, after the last resize
// before them and a marker saying what was left out; at most `max_bytes` of
// lines and offsets together.
class ReplayWindow {
 public:
  ReplayWindow(std::optional<uint64_t> at, uint64_t lead, size_t max_bytes);

  // The next event of the export. False once the window is full.
  bool Add(const CastEvent& event);

  // The window's event lines, one per line, and each one's output offset.
  const std::string& lines() const { return lines_; }
  const std::vector<uint64_t>& offsets() const { return offsets_; }
  uint64_t first_offset() const { return first_offset_; }
  bool truncated() const { return truncated_; }

 private:
  void Line(std::string_view line, uint64_t offset);

  const uint64_t from_;  // events ending at or before it are left out
  const size_t max_bytes_;
  bool started_ = false;
  bool truncated_ = false;
  uint64_t first_offset_ = 0;
  std::string last_resize_;
  std::string lines_;
  std::vector<uint64_t> offsets_;
};

struct SearchLimits {
  uint64_t max_bytes = uint64_t{128} << 20;  // output bytes scanned per answer
  size_t max_matches = 200;
  size_t context_bytes = 120;  // of the line, each side of a match
};

struct SearchMatch {
  uint64_t offset = 0;  // the match's first byte in the output stream
  uint64_t end = 0;     // one past its last byte
  double seconds = -1;  // after the terminal opened (-1: unknown)
  std::string line;     // the cleaned line around it (may be cut)
  size_t column = 0;    // where the match begins in `line`, in bytes
  size_t length = 0;    // its length in `line`, in bytes
};

class RecordingSearch {
 public:
  enum class Stop { kNone, kMatches, kBytes };

  // InvalidArgument for an empty query, one over 256 bytes, or one holding
  // control characters (a line never holds them).
  static absl::Status CheckQuery(std::string_view query);
  // `query` must pass CheckQuery. Matches begin at `from` or later.
  RecordingSearch(std::string_view query, SearchLimits limits, uint64_t from = 0);

  // An "o" event's text, its output beginning at byte `offset`, shown
  // `seconds` after the terminal opened (a U+FFFD in it is one byte).
  // Returns false once a limit stopped the search.
  bool Output(uint64_t offset, std::string_view text, double seconds);
  // Bytes the recording does not hold: no match spans them.
  void Gap();
  // The end of the recording: matches in its last line.
  void Finish();

  const std::vector<SearchMatch>& matches() const { return matches_; }
  Stop stopped() const { return stop_; }
  // The stream offset scanning reached (search on from there).
  uint64_t scanned_to() const { return scanned_to_; }
  uint64_t scanned_bytes() const { return scanned_; }

 private:
  enum class State { kGround, kEsc, kEscIntermediate, kCsi, kOsc, kOscEsc, kString, kStringEsc };
  void Byte(unsigned char c, uint64_t offset);
  void Text(char c, uint64_t offset);
  void EndLine();
  // Finds matches in the line held; keeps the last query-1 bytes when
  // `partial` (the line goes on).
  void ScanLine(bool partial);
  double SecondsAt(size_t index) const;

  const std::string query_;  // lowered
  const SearchLimits limits_;
  const uint64_t from_;
  State state_ = State::kGround;
  size_t sequence_bytes_ = 0;        // of the escape string being skipped
  bool skip_continuations_ = false;  // an escape string was cut mid-character
  std::string line_;                 // cleaned text of the current line
  std::string lowered_;
  std::vector<uint64_t> offsets_;  // stream offset of each byte of line_
  // (index in line_, seconds): where the text of each Output call begins.
  std::vector<std::pair<size_t, double>> times_;
  double seconds_ = -1;     // of the current Output call
  bool new_event_ = false;  // its first text is still to come
  std::vector<SearchMatch> matches_;
  Stop stop_ = Stop::kNone;
  uint64_t scanned_ = 0;
  uint64_t scanned_to_ = 0;
};

}  // namespace termbridge::console

#endif  // TERMBRIDGE_BROKER_SURFACE_CONSOLE_RECORDING_SEARCH_H_
