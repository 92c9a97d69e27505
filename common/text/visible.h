// Text an agent wrote, made safe to show a person on a terminal: control
// characters become visible escapes, so that a command or a reason cannot
// move the cursor, erase a line or fake the lines printed around it.
#ifndef TERMBRIDGE_COMMON_TEXT_VISIBLE_H_
#define TERMBRIDGE_COMMON_TEXT_VISIBLE_H_

#include <string>
#include <string_view>

namespace termbridge::text {

// Returns `raw` with C0 controls (tab and newline included), DEL, C1 controls
// (U+0080..U+009F) and bytes that are not UTF-8 replaced by escapes: "\r",
// "\n", "\t", "\e", "\x07", "\u009b", ... A backslash stays a backslash.
// Printable text, non-ASCII letters included, is unchanged.
std::string Visible(std::string_view raw);

}  // namespace termbridge::text

#endif  // TERMBRIDGE_COMMON_TEXT_VISIBLE_H_
