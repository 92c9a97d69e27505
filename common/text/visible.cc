#include "common/text/visible.h"

#include <cstdint>
#include <cstdio>

#include "common/text/utf8.h"

// Making agent-written text safe to show (visible.h).
namespace termbridge::text {

bool Invisible(uint32_t cp) {
  return (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2060 && cp <= 0x206F) || cp == 0xFEFF || cp == 0x061C || cp == 0x00AD ||
         cp == 0x180E || cp == 0x034F || cp == 0x115F || cp == 0x1160 || cp == 0x3164 ||
         cp == 0xFFA0 || cp == 0x2800 || (cp >= 0xFE00 && cp <= 0xFE0F) ||
         (cp >= 0xFFF0 && cp <= 0xFFFB) || (cp >= 0xE0000 && cp <= 0xE0FFF) ||
         (cp >= 0xE000 && cp <= 0xF8FF) || cp >= 0xF0000 || (cp & 0xFFFE) == 0xFFFE ||
         (cp >= 0xFDD0 && cp <= 0xFDEF);
}

std::string Visible(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  char escape[12];
  for (size_t i = 0; i < raw.size();) {
    unsigned char c = static_cast<unsigned char>(raw[i]);
    if (c >= 0x20 && c < 0x7F) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    if (c < 0x80) {  // C0 controls and DEL
      switch (c) {
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case 0x1B:
          out += "\\e";
          break;
        default:
          std::snprintf(escape, sizeof escape, "\\x%02x", c);
          out += escape;
      }
      ++i;
      continue;
    }
    size_t length = Utf8SequenceLength(raw, i);
    if (length == 0) {  // not UTF-8: show the byte
      std::snprintf(escape, sizeof escape, "\\x%02x", c);
      out += escape;
      ++i;
      continue;
    }
    const uint32_t cp = DecodeUtf8(raw, i, length);
    if ((cp >= 0x80 && cp <= 0x9F) || Invisible(cp)) {
      // C1 controls (CSI, OSC, ...), which some terminals obey, and
      // characters that would change how the rest shows.
      std::snprintf(escape, sizeof escape, cp > 0xFFFF ? "\\U%08x" : "\\u%04x", cp);
      out += escape;
    } else {
      out.append(raw.substr(i, length));
    }
    i += length;
  }
  return out;
}

}  // namespace termbridge::text
