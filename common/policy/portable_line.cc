#include "common/policy/portable_line.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace termbridge::policy {
namespace {

bool PortableWordByte(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         absl::string_view("_@%+=:,./-").find(c) != absl::string_view::npos;
}

// Where a word may end: the line's end, a blank, or an operator.
bool EndsWord(std::string_view line, size_t i) {
  return i >= line.size() || absl::string_view(" \t;|&<>").find(line[i]) != absl::string_view::npos;
}

std::string Shown(char c) {
  const auto byte = static_cast<unsigned char>(c);
  if (byte < 0x20 || byte >= 0x7f) return absl::StrFormat("byte 0x%02x", byte);
  return absl::StrCat("'", std::string(1, c), "'");
}

}  // namespace

std::optional<std::string> PortableLineProblem(std::string_view line, bool posix_quotes) {
  // In the word being read: whether anything came yet (an empty quote
  // counts), and whether any text did. zsh expands ''=ls as =ls.
  bool word_start = true;
  bool word_text = false;
  for (size_t i = 0; i < line.size();) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == ';') {
      word_start = true;
      word_text = false;
      ++i;
    } else if (c == '\'') {
      const size_t close = line.find('\'', i + 1);
      if (close == std::string_view::npos) return "a quote that is not closed";
      for (size_t j = i + 1; j < close; ++j) {
        const auto byte = static_cast<unsigned char>(line[j]);
        if (line[j] == '\\' && !posix_quotes) {
          return "'\\' inside single quotes (fish reads an escape there)";
        }
        if (byte < 0x20 || byte >= 0x7f) return absl::StrCat(Shown(line[j]), " inside quotes");
      }
      word_start = false;
      word_text = word_text || close > i + 1;
      i = close + 1;
    } else if (c == '"') {
      size_t j = i + 1;
      for (; j < line.size() && line[j] != '"'; ++j) {
        const auto byte = static_cast<unsigned char>(line[j]);
        if (absl::string_view("$`\\!").find(line[j]) != absl::string_view::npos || byte < 0x20 ||
            byte >= 0x7f) {
          return absl::StrCat(Shown(line[j]), " inside double quotes");
        }
      }
      if (j >= line.size()) return "a quote that is not closed";
      word_start = false;
      word_text = word_text || j > i + 1;
      i = j + 1;
    } else if (c == '|') {
      if (i + 1 < line.size() && line[i + 1] == '&') return "'|&'";
      i += (i + 1 < line.size() && line[i + 1] == '|') ? 2 : 1;
      word_start = true;
      word_text = false;
    } else if (c == '&') {
      if (i + 1 >= line.size() || line[i + 1] != '&') return "'&' other than in '&&'";
      i += 2;
      word_start = true;
      word_text = false;
    } else if (c == '>') {
      ++i;
      if (i < line.size() && line[i] == '>') ++i;
      if (i < line.size() && line[i] == '&') {  // >&N: to another descriptor
        const size_t digits = ++i;
        while (i < line.size() && absl::ascii_isdigit(static_cast<unsigned char>(line[i]))) ++i;
        if (i == digits || !EndsWord(line, i)) return "'>&' not followed by a descriptor number";
      } else if (i < line.size() &&
                 absl::string_view("|!(").find(line[i]) != absl::string_view::npos) {
        return absl::StrCat("'>", std::string(1, line[i]), "'");
      }
      word_start = true;
      word_text = false;
    } else if (c == '~') {
      if (!word_start) return "'~' inside a word";
      ++i;
      if (!EndsWord(line, i) && line[i] != '/') return "'~' before a user name";
      word_start = false;
      word_text = true;
    } else if ((c == '=' || c == '%') && !word_text) {
      return absl::StrCat(Shown(c), " starting a word (after empty quotes too)");
    } else if (PortableWordByte(c)) {
      word_start = false;
      word_text = true;
      ++i;
    } else {
      return Shown(c);
    }
  }
  return std::nullopt;
}

}  // namespace termbridge::policy
