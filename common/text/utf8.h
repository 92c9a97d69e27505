// UTF-8 helpers shared by the policy parser ($'\u....' escapes), the
// broker's screen snapshots (libvterm cells), and every place that cuts text
// or output bytes: encoding one code point, validating, and finding where a
// string can be cut without splitting a character.
#ifndef TERMBRIDGE_COMMON_TEXT_UTF8_H_
#define TERMBRIDGE_COMMON_TEXT_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace termbridge::text {

// Appends `cp` to *out as UTF-8 (1 to 4 bytes).
inline void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// The length (1 to 4) of the well-formed UTF-8 sequence at s[i], or 0 when
// there is none: RFC 3629 as TOML reads it, so no overlong forms, no
// surrogates and nothing past U+10FFFF (C0, C1 and F5-FF never lead).
inline size_t Utf8SequenceLength(std::string_view s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  size_t extra = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the byte after the lead
  if (c >= 0xC2 && c <= 0xDF) {
    extra = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    extra = 2;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    extra = 3;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // past U+10FFFF
  } else {
    return 0;
  }
  if (s.size() - i <= extra) return 0;
  for (size_t k = 1; k <= extra; ++k) {
    unsigned char b = static_cast<unsigned char>(s[i + k]);
    if (k == 1 ? (b < lo || b > hi) : (b >> 6) != 0x2) return 0;
  }
  return extra + 1;
}

// The code point of the well-formed sequence s[i, i+len) (len from
// Utf8SequenceLength).
inline uint32_t DecodeUtf8(std::string_view s, size_t i, size_t len) {
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

// Whether all of `s` is well-formed UTF-8 (see Utf8SequenceLength).
inline bool ValidUtf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t len = Utf8SequenceLength(s, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

// `s` cut to at most `max` bytes, never inside a UTF-8 sequence: when
// s[max] is a continuation byte (10xxxxxx) the cut backs up to the lead byte
// before it. `s` itself when it fits.
inline std::string_view CutAtCharBoundary(std::string_view s, size_t max) {
  if (s.size() <= max) return s;
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;
  return s.substr(0, end);
}

// Length of the longest prefix of `data` that does not end inside a UTF-8
// character whose continuation bytes have not arrived yet (a stream cut in
// chunks). Only the last 3 bytes are looked at; invalid bytes count as whole
// characters, so they are passed on rather than held back.
inline size_t CompleteUtf8Length(std::string_view data) {
  size_t n = data.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    unsigned char c = static_cast<unsigned char>(data[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: keep looking for the lead
    size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    return need > back ? n - back : n;
  }
  return n;
}

}  // namespace termbridge::text

#endif  // TERMBRIDGE_COMMON_TEXT_UTF8_H_
