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

// Whether a CSI's parameters (after ESC [, before its final t) push or pop
// the title stack: the first parameter is 22 or 23.
bool TitleStack(std::string_view params) {
  const std::string_view first = params.substr(0, params.find(';'));
  return first == "22" || first == "23";
}

constexpr size_t kMaxHeld = 64;  // a longer CSI or OSC number passes as it is

}  // namespace

std::string TitleFilter::Add(std::string_view data) {
  std::string out;
  out.reserve(data.size());
  for (char ch : data) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (state_) {
      case State::kText:
        if (c == 0x1b) {
          held_.assign(1, ch);
          state_ = State::kEscape;
        } else {
          out.push_back(ch);
        }
        break;
      case State::kEscape:
        held_.push_back(ch);
        if (c == '[') {
          state_ = State::kCsi;
        } else if (c == ']') {
          state_ = State::kOscNumber;
        } else if (c == 0x1b) {
          out.append(held_, 0, held_.size() - 1);
          held_.assign(1, ch);
        } else {
          out += held_;
          held_.clear();
          state_ = State::kText;
        }
        break;
      case State::kCsi:
        held_.push_back(ch);
        if (c >= 0x40 && c <= 0x7e) {
          if (c != 't' || !TitleStack(std::string_view(held_).substr(2, held_.size() - 3))) {
            out += held_;
          }
          held_.clear();
          state_ = State::kText;
        } else if (held_.size() > kMaxHeld) {
          out += held_;
          held_.clear();
          state_ = State::kText;  // the rest passes as text
        }
        break;
      case State::kOscNumber:
        if (c >= '0' && c <= '9' && held_.size() < kMaxHeld) {
          held_.push_back(ch);
          break;
        }
        if (c == ';' && (held_ == "\x1b]0" || held_ == "\x1b]1" || held_ == "\x1b]2")) {
          held_.clear();
          dropped_ = 0;
          state_ = State::kDrop;
          break;
        }
        out += held_;
        held_.clear();
        out.push_back(ch);
        state_ = c == 0x07 ? State::kText : c == 0x1b ? State::kOscPassEscape : State::kOscPass;
        break;
      case State::kOscPass:
        out.push_back(ch);
        if (c == 0x07) state_ = State::kText;
        if (c == 0x1b) state_ = State::kOscPassEscape;
        break;
      case State::kOscPassEscape:
        out.push_back(ch);
        state_ = c == '\\' ? State::kText : State::kOscPass;
        break;
      case State::kDrop:
      case State::kDropEscape:
        if (++dropped_ > kMaxDroppedTitle) {  // no title is this long: output again
          out.push_back(ch);
          state_ = State::kText;
        } else if (c == 0x07 || (state_ == State::kDropEscape && c == '\\')) {
          state_ = State::kText;
        } else {
          state_ = c == 0x1b ? State::kDropEscape : State::kDrop;
        }
        break;
    }
  }
  return out;
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
