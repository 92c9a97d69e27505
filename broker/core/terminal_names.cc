// Cleaning and deriving terminal names (terminal_names.h).
#include "broker/core/terminal_names.h"

#include <cstdint>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/text/utf8.h"

namespace termbridge::core {
namespace {

// The code point of the well-formed sequence s[i, i+len).
uint32_t Decode(std::string_view s, size_t i, size_t len) {
  auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(s[i + k])); };
  switch (len) {
    case 1:
      return b(0);
    case 2:
      return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    case 3:
      return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    default:
      return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
  }
}

// Characters that change how the text around them shows without being
// seen: bidirectional controls, zero-width and format characters, blank
// letters (Hangul fillers, the braille blank), variation selectors, tag
// characters, interlinear annotation marks, private use and noncharacters.
bool Invisible(uint32_t cp) {
  return (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2060 && cp <= 0x206F) || cp == 0xFEFF || cp == 0x061C || cp == 0x00AD ||
         cp == 0x180E || cp == 0x034F || cp == 0x115F || cp == 0x1160 || cp == 0x3164 ||
         cp == 0xFFA0 || cp == 0x2800 || (cp >= 0xFE00 && cp <= 0xFE0F) ||
         (cp >= 0xFFF0 && cp <= 0xFFFB) || (cp >= 0xE0000 && cp <= 0xE0FFF) ||
         (cp >= 0xE000 && cp <= 0xF8FF) || cp >= 0xF0000 || (cp & 0xFFFE) == 0xFFFE ||
         (cp >= 0xFDD0 && cp <= 0xFDEF);
}

bool Space(uint32_t cp) {
  return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cp == 0x00A0 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000 || cp == 0x1680;
}

}  // namespace

std::string CleanTerminalName(std::string_view raw) {
  std::string out;
  bool pending_space = false;
  for (size_t i = 0; i < raw.size();) {
    size_t len = text::Utf8SequenceLength(raw, i);
    if (len == 0) {  // not UTF-8: dropped
      ++i;
      continue;
    }
    uint32_t cp = Decode(raw, i, len);
    std::string_view piece = raw.substr(i, len);
    i += len;
    if (Space(cp)) {
      pending_space = !out.empty();
      continue;
    }
    if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || Invisible(cp)) continue;
    size_t needed = piece.size() + (pending_space ? 1 : 0);
    if (out.size() + needed > kMaxTerminalName) break;
    if (pending_space) out.push_back(' ');
    pending_space = false;
    out.append(piece);
  }
  return out;
}

std::string DerivedTerminalName(std::string_view cwd, std::string_view command) {
  while (cwd.size() > 1 && cwd.back() == '/') cwd.remove_suffix(1);
  size_t slash = cwd.rfind('/');
  std::string_view dir =
      slash == std::string_view::npos || cwd.size() == 1 ? cwd : cwd.substr(slash + 1);
  while (!command.empty() && absl::ascii_isspace(static_cast<unsigned char>(command.front()))) {
    command.remove_prefix(1);
  }
  std::string_view word = command.substr(0, command.find_first_of(" \t\n;|&()<>"));
  if (size_t last = word.rfind('/'); last != std::string_view::npos) word = word.substr(last + 1);
  std::string name = CleanTerminalName(dir);
  std::string program = CleanTerminalName(word);
  if (name.empty()) return CleanTerminalName(program);
  if (program.empty()) return name;
  return CleanTerminalName(absl::StrCat(name, ": ", program));
}

}  // namespace termbridge::core
