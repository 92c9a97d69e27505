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
