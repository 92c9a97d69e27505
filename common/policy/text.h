// Small string helpers for the policy library. Debian's Abseil is built with
// its own absl::string_view (not std::string_view), so absl::StrCat and
// friends cannot take the std::string_view the public header uses; these
// take std::string_view directly.
#ifndef TERMBRIDGE_COMMON_POLICY_TEXT_H_
#define TERMBRIDGE_COMMON_POLICY_TEXT_H_

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/text/utf8.h"

namespace termbridge::policy::internal {

inline void AppendPiece(std::string* out, std::string_view s) { out->append(s); }
inline void AppendPiece(std::string* out, const char* s) { out->append(s); }
inline void AppendPiece(std::string* out, const std::string& s) { out->append(s); }
inline void AppendPiece(std::string* out, char c) { out->push_back(c); }
#if !ABSL_USES_STD_STRING_VIEW
inline void AppendPiece(std::string* out, absl::string_view s) { out->append(s.data(), s.size()); }
#endif
template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, char> &&
                                           !std::is_same_v<T, bool>,
                                       int> = 0>
void AppendPiece(std::string* out, T value) {
  out->append(std::to_string(value));
}

// Appends every argument (strings, characters, integers) to *out.
template <typename... Args>
void Append(std::string* out, const Args&... args) {
  (AppendPiece(out, args), ...);
}

template <typename... Args>
std::string Cat(const Args&... args) {
  std::string out;
  Append(&out, args...);
  return out;
}

inline std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out.append(sep);
    out.append(parts[i]);
  }
  return out;
}

// A word for a message: up to 48 bytes, cut at a character boundary.
inline std::string ShortenWord(std::string_view s) {
  if (s.size() <= 48) return std::string(s);
  return Cat(text::CutAtCharBoundary(s, 45), "...");
}

inline bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

inline bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Splits at any of `delims`; empty pieces are kept unless skip_empty.
inline std::vector<std::string_view> SplitAny(std::string_view s, std::string_view delims,
                                              bool skip_empty) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t end = s.find_first_of(delims, start);
    std::string_view piece = s.substr(start, end == std::string_view::npos ? s.npos : end - start);
    if (!piece.empty() || !skip_empty) out.push_back(piece);
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

}  // namespace termbridge::policy::internal

#endif  // TERMBRIDGE_COMMON_POLICY_TEXT_H_
