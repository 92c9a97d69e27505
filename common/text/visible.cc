#include "common/text/visible.h"

#include <cstdint>
#include <cstdio>

namespace termbridge::text {
namespace {

// Length of the UTF-8 character at data[i], or 0 if the bytes there are not one.
size_t Utf8CharLength(std::string_view data, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(data[k]); };
  unsigned char lead = byte(i);
  size_t length = lead >= 0xF0 && lead <= 0xF4 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0;
  if (length == 0 || lead >= 0xF5 || i + length > data.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  // Overlong forms and surrogates are not characters either.
  if (lead == 0xE0 && byte(i + 1) < 0xA0) return 0;
  if (lead == 0xED && byte(i + 1) >= 0xA0) return 0;
  if (lead == 0xF0 && byte(i + 1) < 0x90) return 0;
  if (lead == 0xF4 && byte(i + 1) >= 0x90) return 0;
  return length;
}

}  // namespace

std::string Visible(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  char escape[8];
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
    size_t length = Utf8CharLength(raw, i);
    if (length == 0) {  // not UTF-8: show the byte
      std::snprintf(escape, sizeof escape, "\\x%02x", c);
      out += escape;
      ++i;
      continue;
    }
    if (length == 2 && c == 0xC2 && static_cast<unsigned char>(raw[i + 1]) < 0xA0) {
      // U+0080..U+009F: C1 controls (CSI, OSC, ...), which some terminals obey.
      std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned char>(raw[i + 1]));
      out += escape;
    } else {
      out.append(raw.substr(i, length));
    }
    i += length;
  }
  return out;
}

}  // namespace termbridge::text
