// String helpers for common/workdir taking std::string_view. Debian's Abseil
// has its own absl::string_view, so absl::StartsWith and friends cannot take
// the std::string_view these files use.
#ifndef TERMBRIDGE_COMMON_WORKDIR_PATH_TEXT_H_
#define TERMBRIDGE_COMMON_WORKDIR_PATH_TEXT_H_

#include <string_view>

namespace termbridge::workdir::internal {

inline bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

inline bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Removes `prefix` from the front of *s; false (and *s unchanged) if absent.
inline bool ConsumePrefix(std::string_view* s, std::string_view prefix) {
  if (!StartsWith(*s, prefix)) return false;
  s->remove_prefix(prefix.size());
  return true;
}

inline bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

inline std::string_view StripLeadingSpace(std::string_view s) {
  while (!s.empty() && IsAsciiSpace(s.front())) s.remove_prefix(1);
  return s;
}

inline std::string_view StripTrailingSpace(std::string_view s) {
  while (!s.empty() && IsAsciiSpace(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace termbridge::workdir::internal

#endif  // TERMBRIDGE_COMMON_WORKDIR_PATH_TEXT_H_
