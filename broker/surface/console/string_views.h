// Debian's Abseil is built with its own absl::string_view (not an alias of
// std::string_view). The console speaks std::string_view, as Beast does;
// these two conversions are used where it calls Abseil's string functions.
#ifndef TERMBRIDGE_BROKER_SURFACE_CONSOLE_STRING_VIEWS_H_
#define TERMBRIDGE_BROKER_SURFACE_CONSOLE_STRING_VIEWS_H_

#include <string_view>

#include "absl/strings/string_view.h"

namespace termbridge::console {

inline absl::string_view AbslView(std::string_view text) { return {text.data(), text.size()}; }
inline std::string_view StdView(absl::string_view text) { return {text.data(), text.size()}; }

}  // namespace termbridge::console

#endif  // TERMBRIDGE_BROKER_SURFACE_CONSOLE_STRING_VIEWS_H_
