// Clean text: a small line-oriented screen model. It drops escape sequences,
// applies carriage returns, backspaces and erase-line as a terminal would on
// the current line, and emits each line when a newline ends it.
#include "broker/session/clean_text.h"

#include <cstddef>
#include <string>
#include <vector>

#include "common/text/utf8.h"

namespace termbridge::session {
namespace {

using text::Utf8SequenceLength;

constexpr char kReplacement[] = "\xEF\xBF\xBD";

// The current line as its bytes and, once a glyph is not one byte (a
// multi-byte character, or an empty cell left by erasing the line), where
// each glyph starts. Runs of printable ASCII written at the end of the line,
// nearly all of a build's output, are appended as they are.
class LineModel {
 public:
  // Printable ASCII, one glyph per byte.
  void PutAscii(std::string_view run) {
    if (col_ == glyphs_) {
      if (multibyte_) {
        for (size_t k = 0; k < run.size(); ++k) starts_.push_back(text_.size() + k);
      }
      text_.append(run);
      glyphs_ += run.size();
      col_ += run.size();
      return;
    }
    for (char c : run) Put(std::string_view(&c, 1));
  }
  void Put(std::string_view glyph) {
    if (col_ < glyphs_) {
      Replace(col_, glyph);
    } else {
      if (col_ > glyphs_ || glyph.size() != 1) Multibyte();
      while (glyphs_ < col_) {  // cells cleared by erasing the whole line
        starts_.push_back(text_.size());
        ++glyphs_;
      }
      if (multibyte_) starts_.push_back(text_.size());
      text_.append(glyph);
      ++glyphs_;
    }
    ++col_;
  }
  void CarriageReturn() { col_ = 0; }
  void Backspace() {
    if (col_ > 0) --col_;
  }
  void EraseLine(int mode) {
    if (mode == 0 && col_ < glyphs_) Truncate(col_);
    if (mode == 1) {
      for (size_t k = 0; k < col_ && k < glyphs_; ++k) Replace(k, " ");
    }
    if (mode == 2) Truncate(0);
  }
  void NewLine(std::string& out) {
    Flush(out);
    out.push_back('\n');
  }
  void Flush(std::string& out) {
    out += text_;
    text_.clear();
    starts_.clear();
    multibyte_ = false;
    glyphs_ = 0;
    col_ = 0;
  }

 private:
  size_t Start(size_t glyph) const {
    if (glyph >= glyphs_) return text_.size();
    return multibyte_ ? starts_[glyph] : glyph;
  }
  void Multibyte() {
    if (multibyte_) return;
    multibyte_ = true;
    starts_.resize(glyphs_);
    for (size_t k = 0; k < glyphs_; ++k) starts_[k] = k;
  }
  void Replace(size_t glyph, std::string_view with) {
    if (!multibyte_ && with.size() == 1) {
      text_[glyph] = with[0];
      return;
    }
    Multibyte();
    const size_t from = Start(glyph);
    const size_t to = Start(glyph + 1);
    text_.replace(from, to - from, with);
    const ptrdiff_t delta = static_cast<ptrdiff_t>(with.size()) - static_cast<ptrdiff_t>(to - from);
    if (delta == 0) return;
    for (size_t k = glyph + 1; k < glyphs_; ++k) starts_[k] += delta;
  }
  void Truncate(size_t glyphs) {
    text_.resize(Start(glyphs));
    if (multibyte_) starts_.resize(glyphs);
    glyphs_ = glyphs;
  }

  std::string text_;
  std::vector<size_t> starts_;  // used once multibyte_
  bool multibyte_ = false;
  size_t glyphs_ = 0;
  size_t col_ = 0;
};

}  // namespace

std::string CleanTerminalText(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  LineModel line;
  size_t i = 0;
  const size_t n = raw.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(raw[i]);
    if (c == 0x1B) {
      if (i + 1 >= n) break;  // a lone trailing ESC: drop it
      const char kind = raw[i + 1];
      if (kind == '[') {  // CSI: parameters, intermediates, one final byte
        size_t j = i + 2;
        while (j < n && static_cast<unsigned char>(raw[j]) >= 0x20 &&
               static_cast<unsigned char>(raw[j]) <= 0x3F) {
          ++j;
        }
        while (j < n && static_cast<unsigned char>(raw[j]) >= 0x20 &&
               static_cast<unsigned char>(raw[j]) <= 0x2F) {
          ++j;
        }
        if (j < n && raw[j] == 'K') {
          std::string_view params = raw.substr(i + 2, j - i - 2);
          line.EraseLine(params.empty() ? 0 : params[0] - '0');
        }
        i = j + 1;
      } else if (kind == ']' || kind == 'P' || kind == 'X' || kind == '^' || kind == '_') {
        // OSC / DCS / SOS / PM / APC: up to BEL (OSC only) or ST (ESC \).
        size_t j = i + 2;
        while (j < n) {
          if (kind == ']' && raw[j] == '\a') {
            ++j;
            break;
          }
          if (raw[j] == 0x1B && j + 1 < n && raw[j + 1] == '\\') {
            j += 2;
            break;
          }
          ++j;
        }
        i = j;
      } else {
        // Two-byte forms, optionally with intermediates (ESC ( B, ESC 7, ESC =).
        size_t j = i + 1;
        while (j < n && static_cast<unsigned char>(raw[j]) >= 0x20 &&
               static_cast<unsigned char>(raw[j]) <= 0x2F) {
          ++j;
        }
        i = j + 1;
      }
      continue;
    }
    if (c == '\n') {
      line.NewLine(out);
      ++i;
    } else if (c == '\r') {
      line.CarriageReturn();
      ++i;
    } else if (c == '\b') {
      line.Backspace();
      ++i;
    } else if (c == '\t') {
      line.Put("\t");
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      ++i;  // BEL and other controls have no visible effect
    } else if (c < 0x7F) {
      size_t j = i + 1;
      while (j < n && static_cast<unsigned char>(raw[j]) >= 0x20 &&
             static_cast<unsigned char>(raw[j]) < 0x7F) {
        ++j;
      }
      line.PutAscii(raw.substr(i, j - i));
      i = j;
    } else {
      size_t len = Utf8SequenceLength(raw, i);
      if (len == 0) {
        line.Put(kReplacement);
        ++i;
      } else {
        line.Put(raw.substr(i, len));
        i += len;
      }
    }
  }
  line.Flush(out);
  return out;
}

std::string SanitizeUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    size_t len = Utf8SequenceLength(bytes, i);
    if (len == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(bytes.data() + i, len);
      i += len;
    }
  }
  return out;
}

namespace {

// A CSI sequence that leaves the cursor in the first column: leaving the
// alternate screen (the cursor goes back where the program found it, after
// the command line's newline), or a move to column 1 (home, clear).
bool BackToFirstColumn(std::string_view params, char final) {
  if (final == 'l') return params == "?1049" || params == "?1047" || params == "?47";
  if (final == 'H' || final == 'f') {
    const size_t semicolon = params.find(';');
    return semicolon == std::string_view::npos || params.substr(semicolon + 1) == "1" ||
           params.substr(semicolon + 1).empty();
  }
  if (final == 'G') return params.empty() || params == "1";
  return final == 'E' || final == 'F';  // to the first column of a line below or above
}

// Where the string of an OSC, DCS, APC, PM or SOS that begins at `from` ends
// (its BEL or ST), or the end of `s`.
size_t StringEnd(std::string_view s, size_t from) {
  for (size_t j = from; j < s.size(); ++j) {
    if (s[j] == '\a') return j + 1;
    if (s[j] == '\x1b' && j + 1 < s.size() && s[j + 1] == '\\') return j + 2;
  }
  return s.size();
}

}  // namespace

bool EndsMidLine(std::string_view tail) {
  bool mid = false;
  size_t i = 0;
  while (i < tail.size()) {
    const unsigned char c = static_cast<unsigned char>(tail[i]);
    if (c == 0x1b && i + 1 < tail.size()) {
      const char kind = tail[i + 1];
      if (kind == '[') {
        size_t j = i + 2;
        while (j < tail.size() && (tail[j] < 0x40 || tail[j] > 0x7e)) ++j;
        if (j == tail.size()) break;
        if (BackToFirstColumn(tail.substr(i + 2, j - i - 2), tail[j])) mid = false;
        i = j + 1;
      } else if (kind == ']' || kind == 'P' || kind == '_' || kind == '^' || kind == 'X') {
        i = StringEnd(tail, i + 2);
      } else {
        // ESC, its intermediate bytes (ESC ( B selects a character set),
        // then its final byte; ESC c resets the terminal (the cursor home).
        size_t j = i + 1;
        while (j < tail.size() && tail[j] >= 0x20 && tail[j] <= 0x2f) ++j;
        if (j == i + 1 && kind == 'c') mid = false;
        i = j + 1;
      }
      continue;
    }
    if (c == '\n' || c == '\r') {
      mid = false;
    } else if (c >= 0x20 && c != 0x7f) {
      mid = true;
    }
    ++i;
  }
  return mid;
}

}  // namespace termbridge::session
