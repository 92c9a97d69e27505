// Text an agent wrote, made safe to show a person on a terminal: control
// characters become visible escapes, so that a command or a reason cannot
// move the cursor, erase a line or fake the lines printed around it.
#ifndef TERMBRIDGE_COMMON_TEXT_VISIBLE_H_
#define TERMBRIDGE_COMMON_TEXT_VISIBLE_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace termbridge::text {

// Characters that change how the text around them shows without being
// seen: bidirectional controls (which reorder a line as displayed: a
// command could read as commented out while the shell runs all of it),
// zero-width and format characters, blank letters (Hangul fillers, the
// braille blank), variation selectors, tag characters, interlinear
// annotation marks, private use and noncharacters.
bool Invisible(uint32_t code_point);

// Returns `raw` with C0 controls (tab and newline included), DEL, C1 controls
// (U+0080..U+009F), Invisible characters and bytes that are not UTF-8
// replaced by escapes: "\r", "\n", "\t", "\e", "\x07", "\u009b", "\u202e",
// "\U000e0041", ... A backslash stays a backslash. Printable text, non-ASCII
// letters included, is unchanged.
std::string Visible(std::string_view raw);

}  // namespace termbridge::text

#endif  // TERMBRIDGE_COMMON_TEXT_VISIBLE_H_
