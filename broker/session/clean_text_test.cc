// Clean text is what a person would read on the screen, line by line.
#include "broker/session/clean_text.h"

#include "gtest/gtest.h"

namespace termbridge::session {
namespace {

TEST(CleanTextTest, StripsColorsAndFoldsCrlf) {
  EXPECT_EQ(CleanTerminalText("\x1b[1;32mok\x1b[0m\r\nnext\r\n"), "ok\nnext\n");
}

TEST(CleanTextTest, CarriageReturnOverwritesLikeATerminal) {
  EXPECT_EQ(CleanTerminalText("10%\r50%\r100%\n"), "100%\n");
  EXPECT_EQ(CleanTerminalText("abcdef\rXY\n"), "XYcdef\n");
  EXPECT_EQ(CleanTerminalText("long line\r\x1b[Kshort\n"), "short\n");
}

TEST(CleanTextTest, DropsOscTitlesAndShellMarks) {
  EXPECT_EQ(CleanTerminalText("\x1b]0;title\x07"
                              "a\x1b]133;D;0\x1b\\b\n"),
            "ab\n");
}

TEST(CleanTextTest, BackspaceMovesLeft) { EXPECT_EQ(CleanTerminalText("abc\b\bX\n"), "aXc\n"); }

TEST(CleanTextTest, KeepsUtf8AndReplacesInvalidBytes) {
  EXPECT_EQ(CleanTerminalText("h\xC3\xA9llo \xE2\x9C\x93\n"), "h\xC3\xA9llo \xE2\x9C\x93\n");
  EXPECT_EQ(CleanTerminalText("a\xFF"
                              "b"),
            "a\xEF\xBF\xBD"
            "b");
}

TEST(CleanTextTest, SanitizeUtf8ReplacesOnlyInvalidSequences) {
  EXPECT_EQ(SanitizeUtf8("ok \xE2\x9C\x93"), "ok \xE2\x9C\x93");
  EXPECT_EQ(SanitizeUtf8("\xC0\x80x"), "\xEF\xBF\xBD\xEF\xBF\xBDx");
  EXPECT_EQ(SanitizeUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

}  // namespace
}  // namespace termbridge::session
