// UTF-8 boundaries and per-terminal line prefixes for attach and watch output.
#include "broker/cli/output_text.h"

#include "common/text/utf8.h"

namespace termbridge::cli {

Utf8Carry::Text Utf8Carry::Add(uint64_t offset, std::string_view data) {
  std::string joined;
  uint64_t start = offset;
  if (!held_.empty() && held_offset_ + held_.size() == offset) {
    joined = held_;
    start = held_offset_;
  }
  joined.append(data);
  size_t complete = text::CompleteUtf8Length(joined);
  held_ = joined.substr(complete);
  held_offset_ = start + complete;
  joined.resize(complete);
  return {start, std::move(joined)};
}

std::string EscapeStripper::Add(std::string_view data) {
  std::string text;
  for (char ch : data) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (state_) {
      case State::kText:
        if (c == 0x1b) {
          state_ = State::kEscape;
        } else if (c >= 0x20 || c == '\n' || c == '\t' || c == '\r') {
          text.push_back(ch);  // \r is the line view's to drop or keep
        }
        break;
      case State::kEscape:
        if (c == '[') {
          state_ = State::kCsi;
        } else if (c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_') {
          state_ = State::kString;
        } else if (c >= 0x20 && c <= 0x2f) {
          state_ = State::kEscapeIntermediate;  // ESC ( B and the like
        } else {
          state_ = State::kText;  // a two-byte form: ESC 7, ESC =, ...
        }
        break;
      case State::kEscapeIntermediate:
        if (c < 0x20 || c > 0x2f) state_ = State::kText;
        break;
      case State::kCsi:
        if (c >= 0x40 && c <= 0x7e) state_ = State::kText;  // the final byte
        break;
      case State::kString:  // ends with BEL or ST (ESC \)
        if (c == 0x07) state_ = State::kText;
        if (c == 0x1b) state_ = State::kStringEscape;
        break;
      case State::kStringEscape:
        state_ = c == '\\' ? State::kText : State::kString;
        break;
    }
  }
  return text;
}

namespace {

constexpr size_t kMaxHeld = 64;  // no real CSI is longer
constexpr unsigned char kEsc = 0x1b, kBel = 0x07, kCan = 0x18, kSub = 0x1a;

// An OSC that only draws: its number (before ';', leading zeros dropped,
// empty reads as 0) is 7, 8, 22 or 133. Titles (0, 1, 2, dtterm's l and L)
// and everything else are not.
bool OscOnlyDraws(std::string_view number) {
  if (number == "l" || number == "L") return false;
  const size_t digits = number.find_first_not_of('0');
  const std::string_view value = digits == std::string_view::npos ? "" : number.substr(digits);
  return value == "7" || value == "8" || value == "22" || value == "133";
}

// The second byte of a control string's introducer: ESC P (DCS), ESC X
// (SOS), ESC ^ (PM), ESC _ (APC), or the C1 forms 0x90, 0x98, 0x9E, 0x9F.
bool StartsControlString(unsigned char c, bool c1) {
  return c1 ? (c == 0x90 || c == 0x98 || c == 0x9E || c == 0x9F)
            : (c == 'P' || c == 'X' || c == '^' || c == '_' || c == 'k');  // k: screen's title
}

}  // namespace

std::string OutputGuard::Add(std::string_view data) {
  std::string out;
  out.reserve(data.size());
  for (char ch : data) {
    const unsigned char c = static_cast<unsigned char>(ch);
    while (!Step(c, out)) {
    }
  }
  return out;
}

bool OutputGuard::Step(unsigned char c, std::string& out) {
  const char ch = static_cast<char>(c);
  switch (state_) {
    case State::kText:
      if (continuation_ > 0 && c >= 0x80 && c <= 0xBF) {  // inside a UTF-8 character
        --continuation_;
        out.push_back(ch);
        return true;
      }
      continuation_ = 0;
      if (c == kEsc || c == 0xC2) {
        held_.assign(1, ch);
        state_ = c == kEsc ? State::kEscape : State::kC1;
      } else if (c >= 0x80 && c <= 0x9F) {
        // A raw 8-bit C1 control, in no character: a terminal not in UTF-8
        // mode reads 0x9D as OSC. Dropped.
      } else {
        if (c >= 0xC3 && c <= 0xF4) continuation_ = c < 0xE0 ? 1 : c < 0xF0 ? 2 : 3;
        out.push_back(ch);
      }
      return true;
    case State::kDropOne:
      state_ = State::kText;
      return c == kEsc ? false : true;  // the byte after ESC %; an ESC starts anew
    case State::kC1:
    case State::kEscape: {
      const bool c1 = state_ == State::kC1;
      if ((c1 && c == 0x9B) || (!c1 && c == '[')) {
        held_.push_back(ch);
        introducer_ = held_.size();
        state_ = State::kCsi;
        return true;
      }
      if ((c1 && c == 0x9D) || (!c1 && c == ']')) {
        held_.push_back(ch);
        introducer_ = held_.size();
        state_ = State::kOscNumber;
        return true;
      }
      if (!c1 && c == '%') {  // ESC % @ / G: leaves or enters UTF-8, so 8-bit C1 would act
        held_.clear();
        state_ = State::kDropOne;
        return true;
      }
      if (StartsControlString(c, c1)) {  // never reaches the person's terminal
        held_.clear();
        dropping_ = true;
        dropped_ = 0;
        state_ = State::kString;
        return true;
      }
      out += held_;
      held_.clear();
      state_ = State::kText;
      return false;  // read as text (an ESC again starts a sequence)
    }
    case State::kCsi:
      if (c == kEsc || c == kCan || c == kSub) {  // the terminal drops the sequence
        held_.clear();
        state_ = State::kText;
        return c != kEsc;
      }
      held_.push_back(ch);
      if (c >= 0x40 && c <= 0x7e) {
        if (c != 't' && c != 'i') out += held_;  // window operations and reports; media copy
        held_.clear();
        state_ = State::kText;
      } else if (held_.size() > kMaxHeld) {
        held_.clear();
        state_ = State::kCsiDrop;
      }
      return true;
    case State::kCsiDrop:
      if (c == kEsc) {
        state_ = State::kText;
        return false;
      }
      if ((c >= 0x40 && c <= 0x7e) || c == kCan || c == kSub) state_ = State::kText;
      return true;
    case State::kOscNumber: {
      const bool first = held_.size() == introducer_;
      // Leading zeros collapse to one: 000002 is 2 to a terminal.
      if (c == '0' && std::string_view(held_).substr(introducer_) == "0") return true;
      if ((c >= '0' && c <= '9' && held_.size() < introducer_ + 8) ||
          (first && (c == 'l' || c == 'L'))) {
        held_.push_back(ch);
        return true;
      }
      const std::string_view number = std::string_view(held_).substr(introducer_);
      dropping_ = !OscOnlyDraws(number);
      if (dropping_) {
        dropped_ = 0;
      } else {
        out += held_;
      }
      held_.clear();
      state_ = State::kString;
      return dropping_ && c == ';';  // otherwise the byte is the string's first (l/L: the title)
    }
    case State::kString:
    case State::kStringEscape:
    case State::kStringC1: {
      // An OSC's string passed, or a string dropped up to its limit.
      if (dropping_ && ++dropped_ > kMaxDropped) {  // never ended: text again
        state_ = State::kText;
        return false;
      }
      auto emit = [&](std::string_view bytes) {
        if (!dropping_) out.append(bytes);
      };
      if (state_ == State::kStringEscape) {
        if (c == '\\') {  // ST
          emit("\x1b\\");
          state_ = State::kText;
          return true;
        }
        held_.assign(1, static_cast<char>(kEsc));  // the ESC ended the string and begins a sequence
        state_ = State::kEscape;
        return false;
      }
      if (state_ == State::kStringC1) {
        if (c == 0x9C) {  // C1 ST
          emit("\xc2\x9c");
          state_ = State::kText;
          return true;
        }
        if (c >= 0x80 && c <= 0x9F) {
          // Another C1 control: some terminals end the string there and
          // start a sequence, so it is read as one (and dropped if it acts).
          held_.assign(1, static_cast<char>(0xC2));
          state_ = State::kC1;
          return false;
        }
        emit("\xc2");
      }
      if (c == kEsc) {
        state_ = State::kStringEscape;
      } else if (c == 0xC2) {
        state_ = State::kStringC1;
      } else {
        emit(std::string_view(&ch, 1));
        state_ = c == kBel || c == kCan || c == kSub ? State::kText : State::kString;
      }
      return true;
    }
  }
  return true;
}

std::string LinePrefixer::Add(std::string_view terminal_id, std::string_view data) {
  std::string text;
  if (!open_line_.empty() && open_line_ != terminal_id) {
    text.push_back('\n');
    open_line_.clear();
  }
  for (char c : data) {
    if (c == '\r') continue;
    if (open_line_.empty()) {
      text.append(terminal_id).append(" | ");
      open_line_ = std::string(terminal_id);
    }
    text.push_back(c);
    if (c == '\n') open_line_.clear();
  }
  return text;
}

std::string LinePrefixer::Line(std::string_view terminal_id, std::string_view text) {
  std::string out;
  if (!open_line_.empty()) out.push_back('\n');
  open_line_.clear();
  out.append(terminal_id).append(" | ").append(text).push_back('\n');
  return out;
}

}  // namespace termbridge::cli
