// Walking a recording's asciicast export and searching its text (see
// recording_search.h).
#include "broker/surface/console/recording_search.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "broker/surface/console/string_views.h"
#include "nlohmann/json.hpp"

namespace termbridge::console {
namespace {

using nlohmann::json;

constexpr size_t kMaxQueryBytes = 256;
// A line longer than this is searched in pieces (overlapping by the query's
// length, so no match is lost at a cut).
constexpr size_t kMaxLineBytes = 16 << 10;
// An OSC or DCS string longer than this ends (output that never ends one
// would otherwise hide everything after it).
constexpr size_t kMaxSequenceBytes = 64 << 10;
// What each event's offset costs a replay window: 8 bytes held and up to 21
// in its answer ("18446744073709551615,").
constexpr size_t kOffsetBytes = sizeof(uint64_t) + 21;
// In an "o" event's text: one output byte that was not UTF-8 (recording.h).
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// How many bytes of `text` from `i` stand for one output byte.
size_t OneByteWidth(std::string_view text, size_t i) {
  return text.compare(i, kReplacement.size(), kReplacement) == 0 ? kReplacement.size() : 1;
}

// "[N earlier bytes not kept]" and "[N bytes not recorded]": the N bytes a
// marker stands for (recording.cc writes them); 0 for other markers.
uint64_t MarkerBytes(std::string_view text) {
  if (text.empty() || text.front() != '[') return 0;
  text.remove_prefix(1);
  size_t digits = 0;
  while (digits < text.size() && absl::ascii_isdigit(static_cast<unsigned char>(text[digits]))) {
    ++digits;
  }
  uint64_t bytes = 0;
  if (digits == 0 || !absl::SimpleAtoi(AbslView(text.substr(0, digits)), &bytes)) return 0;
  std::string_view rest = text.substr(digits);
  if (rest != " earlier bytes not kept]" && rest != " bytes not recorded]") return 0;
  return bytes;
}

}  // namespace

uint64_t OutputBytes(std::string_view text) {
  uint64_t bytes = 0;
  for (size_t i = 0; i < text.size(); i += OneByteWidth(text, i)) ++bytes;
  return bytes;
}

absl::StatusOr<bool> CastWalker::Feed(std::string_view lines, const OnEvent& on_event,
                                      absl::Span<const uint64_t> output_offsets) {
  output_offsets_.insert(output_offsets_.end(), output_offsets.begin(), output_offsets.end());
  while (!lines.empty()) {
    size_t newline = lines.find('\n');
    if (newline == std::string_view::npos) {
      carry_.append(lines.data(), lines.size());
      return true;
    }
    absl::StatusOr<bool> more;
    if (carry_.empty()) {
      more = Line(lines.substr(0, newline), on_event);
    } else {
      carry_.append(lines.data(), newline);
      std::string line = std::move(carry_);
      carry_.clear();
      more = Line(line, on_event);
    }
    if (!more.ok() || !*more) return more;
    lines.remove_prefix(newline + 1);
  }
  return true;
}

absl::StatusOr<bool> CastWalker::Line(std::string_view line, const OnEvent& on_event) {
  if (line.empty()) return true;
  if (header_.empty()) {
    if (line.front() != '{') return absl::InvalidArgumentError("the recording has no header");
    header_ = std::string(line);
    return true;
  }
  json event = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!event.is_array() || event.size() != 3 || !event[0].is_number() || !event[1].is_string() ||
      !event[2].is_string() || event[1].get_ref<const std::string&>().size() != 1) {
    return absl::InvalidArgumentError("a recording line is no asciicast event");
  }
  data_ = std::move(event[2].get_ref<std::string&>());
  CastEvent e;
  e.seconds = event[0].get<double>();
  e.code = event[1].get_ref<const std::string&>()[0];
  e.data = data_;
  e.line = line;
  if (e.code == 'o' && !output_offsets_.empty()) {
    offset_ = output_offsets_.front();
    output_offsets_.pop_front();
  }
  e.offset = offset_;
  if (e.code == 'o') {
    offset_ += OutputBytes(data_);
  } else if (e.code == 'm') {
    offset_ += MarkerBytes(data_);
  }
  e.end = offset_;
  return on_event(e);
}

ReplayWindow::ReplayWindow(std::optional<uint64_t> at, uint64_t lead, size_t max_bytes)
    : from_(at && *at > lead ? *at - lead : 0), max_bytes_(max_bytes) {}

bool ReplayWindow::Add(const CastEvent& e) {
  if (truncated_) return false;
  if (!started_) {
    if (from_ > 0 && e.end <= from_) {  // before the window
      if (e.code == 'r') last_resize_ = std::string(e.line);
      return true;
    }
    started_ = true;
    first_offset_ = e.offset;
    if (from_ > 0 && e.offset > 0) {
      json marker = json::array(
          {e.seconds, "m",
           absl::StrCat("[replay from byte ", e.offset,
                        ": the output before it is not loaded here, Replay shows it all]")});
      Line(marker.dump(-1, ' ', false, json::error_handler_t::replace), e.offset);
      if (!last_resize_.empty()) Line(last_resize_, e.offset);
    }
  }
  if (lines_.size() + e.line.size() + 1 + (offsets_.size() + 1) * kOffsetBytes > max_bytes_) {
    truncated_ = true;
    return false;
  }
  Line(e.line, e.offset);
  return true;
}

void ReplayWindow::Line(std::string_view line, uint64_t offset) {
  lines_.append(line.data(), line.size());
  lines_.push_back('\n');
  offsets_.push_back(offset);
}

absl::Status RecordingSearch::CheckQuery(std::string_view query) {
  if (query.empty()) return absl::InvalidArgumentError("q (the text to search for) is required");
  if (query.size() > kMaxQueryBytes) {
    return absl::InvalidArgumentError(absl::StrCat("q is longer than ", kMaxQueryBytes, " bytes"));
  }
  for (char c : query) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      return absl::InvalidArgumentError("q holds a control character (lines never do)");
    }
  }
  return absl::OkStatus();
}

RecordingSearch::RecordingSearch(std::string_view query, SearchLimits limits, uint64_t from)
    : query_(absl::AsciiStrToLower(AbslView(query))),
      limits_(limits),
      from_(from),
      scanned_to_(from) {}

bool RecordingSearch::Output(uint64_t offset, std::string_view text, double seconds) {
  if (stop_ != Stop::kNone) return false;
  if (offset + text.size() <= from_) return true;  // it stands for no more bytes
  seconds_ = seconds;
  new_event_ = true;
  for (size_t i = 0; i < text.size(); ++offset) {
    const size_t width = OneByteWidth(text, i);  // the text of output byte `offset`
    if (offset >= from_) {
      for (size_t k = 0; k < width; ++k) {
        Byte(static_cast<unsigned char>(text[i + k]), offset);
        if (stop_ != Stop::kNone) return false;
      }
      scanned_to_ = offset + 1;
      if (++scanned_ >= limits_.max_bytes) {
        ScanLine(false);
        if (stop_ == Stop::kNone) stop_ = Stop::kBytes;
        return false;
      }
    }
    i += width;
  }
  return true;
}

void RecordingSearch::Gap() {
  if (stop_ != Stop::kNone) return;
  state_ = State::kGround;
  EndLine();
}

void RecordingSearch::Finish() {
  if (stop_ == Stop::kNone) EndLine();
}

void RecordingSearch::Byte(unsigned char c, uint64_t offset) {
  switch (state_) {
    case State::kGround:
      if (skip_continuations_) {  // the rest of a character a cut sequence began
        if ((c & 0xC0) == 0x80) return;
        skip_continuations_ = false;
      }
      break;
    case State::kEsc:
      if (c >= 0x80) {  // not a sequence: the byte begins a character
        state_ = State::kGround;
        break;
      }
      if (c == '[') {
        state_ = State::kCsi;
      } else if (c == ']') {
        state_ = State::kOsc;
        sequence_bytes_ = 0;
      } else if (c == 'P' || c == 'X' || c == '^' || c == '_') {
        state_ = State::kString;
        sequence_bytes_ = 0;
      } else if (c >= 0x20 && c <= 0x2f) {
        state_ = State::kEscIntermediate;
      } else if (c != 0x1b) {
        state_ = State::kGround;
        if (c < 0x20) break;  // a control character: executed
      }
      return;
    case State::kEscIntermediate:
      if (c >= 0x20 && c <= 0x2f) return;
      if (c == 0x1b) {
        state_ = State::kEsc;
        return;
      }
      state_ = State::kGround;
      if (c < 0x20 || c >= 0x80) break;  // executed, or a character's first byte
      return;
    case State::kCsi:
      if (c >= 0x20 && c <= 0x3f) return;  // parameters and intermediates
      if (c >= 0x40 && c <= 0x7e) {        // the final byte
        state_ = State::kGround;
        return;
      }
      if (c == 0x1b) {
        state_ = State::kEsc;
        return;
      }
      if (c == 0x18 || c == 0x1a || c >= 0x80) {  // cancelled, or not a sequence after all
        state_ = State::kGround;
        if (c < 0x80) return;
      }
      break;  // a control character runs inside a CSI; 0x7f is dropped below
    case State::kOsc:
    case State::kString:
      if (c == 0x1b) {
        state_ = state_ == State::kOsc ? State::kOscEsc : State::kStringEsc;
      } else if ((c == 0x07 && state_ == State::kOsc) || c == 0x18 || c == 0x1a) {
        state_ = State::kGround;
      } else if (++sequence_bytes_ > kMaxSequenceBytes) {
        // Cut here: text from this byte on, but not the rest of a character
        // the string held.
        state_ = State::kGround;
        skip_continuations_ = true;
        Byte(c, offset);
      }
      return;
    case State::kOscEsc:
    case State::kStringEsc:
      if (c == '\\') {
        state_ = State::kGround;
        return;
      }
      state_ = State::kEsc;  // ESC began a new sequence
      Byte(c, offset);
      return;
  }
  if (c == 0x1b) {
    state_ = State::kEsc;
  } else if (c == '\n' || c == '\r' || c == '\v' || c == '\f') {
    EndLine();
  } else if (c == '\t') {
    Text(' ', offset);
  } else if (c >= 0x20 && c != 0x7f) {
    Text(static_cast<char>(c), offset);
  }
}

void RecordingSearch::Text(char c, uint64_t offset) {
  if (new_event_ || times_.empty()) {
    if (!times_.empty() && times_.back().first == line_.size()) times_.pop_back();
    times_.emplace_back(line_.size(), seconds_);
    new_event_ = false;
  }
  line_.push_back(c);
  lowered_.push_back(absl::ascii_tolower(static_cast<unsigned char>(c)));
  offsets_.push_back(offset);
  if (line_.size() >= kMaxLineBytes) ScanLine(/*partial=*/true);
}

void RecordingSearch::EndLine() { ScanLine(/*partial=*/false); }

double RecordingSearch::SecondsAt(size_t index) const {
  auto after = std::upper_bound(times_.begin(), times_.end(), index,
                                [](size_t i, const auto& t) { return i < t.first; });
  return after == times_.begin() ? -1 : std::prev(after)->second;
}

void RecordingSearch::ScanLine(bool partial) {
  const size_t q = query_.size();
  for (size_t at = lowered_.find(query_); at != std::string::npos && stop_ == Stop::kNone;
       at = lowered_.find(query_, at + q)) {
    size_t begin = at > limits_.context_bytes ? at - limits_.context_bytes : 0;
    size_t end = std::min(line_.size(), at + q + limits_.context_bytes);
    // Whole UTF-8 characters only.
    while (begin < at && (static_cast<unsigned char>(line_[begin]) & 0xC0) == 0x80) ++begin;
    while (end < line_.size() && (static_cast<unsigned char>(line_[end]) & 0xC0) == 0x80) ++end;
    SearchMatch match;
    match.offset = offsets_[at];
    match.end = offsets_[at + q - 1] + 1;
    match.seconds = SecondsAt(at);
    match.line = line_.substr(begin, end - begin);
    match.column = at - begin;
    match.length = q;
    matches_.push_back(std::move(match));
    if (matches_.size() >= limits_.max_matches) {
      stop_ = Stop::kMatches;
      scanned_to_ = matches_.back().end;
    }
  }
  if (!partial || stop_ != Stop::kNone) {
    line_.clear();
    lowered_.clear();
    offsets_.clear();
    times_.clear();
    return;
  }
  // Keep what a match beginning here could still need.
  const size_t keep = std::min(line_.size(), q - 1);
  const size_t cut = line_.size() - keep;
  line_.erase(0, cut);
  lowered_.erase(0, cut);
  offsets_.erase(offsets_.begin(), offsets_.begin() + static_cast<ptrdiff_t>(cut));
  const double seconds = SecondsAt(cut);
  std::vector<std::pair<size_t, double>> times;
  times.emplace_back(0, seconds);
  for (const auto& [index, t] : times_) {
    if (index > cut) times.emplace_back(index - cut, t);
  }
  times_ = std::move(times);
}

}  // namespace termbridge::console
