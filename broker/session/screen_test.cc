// Tests for screen snapshots: what a person sees, not the escapes that drew it.
#include "broker/session/screen.h"

#include "gtest/gtest.h"

namespace termbridge::session {
namespace {

TEST(RenderScreen, CursorMovesAndOverwritesLandWhereAPersonSeesThem) {
  // Clear, draw a box title at row 3 column 5, then overwrite part of a line.
  std::string bytes =
      "\x1b[2J\x1b[H"
      "hello world\r\n"
      "\x1b[3;5H"
      "TITLE"
      "\x1b[1;7H"
      "there";
  ScreenSnapshot s = RenderScreen(bytes, 20, 5);
  EXPECT_EQ(s.text, "hello there\n\n    TITLE");
  EXPECT_EQ(s.cursor_row, 0);
  EXPECT_EQ(s.cursor_col, 11);
  EXPECT_FALSE(s.alternate_screen);
}

TEST(RenderScreen, AlternateScreenShowsTheProgramsScreenOnly) {
  std::string bytes =
      "shell prompt$ top\r\n"
      "\x1b[?1049h\x1b[H\x1b[2J"
      "top - load 0.1\r\nPID USER";
  ScreenSnapshot s = RenderScreen(bytes, 40, 10);
  EXPECT_TRUE(s.alternate_screen);
  EXPECT_EQ(s.text, "top - load 0.1\nPID USER");
  // Leaving it restores the shell's screen.
  ScreenSnapshot back = RenderScreen(bytes + "\x1b[?1049l", 40, 10);
  EXPECT_FALSE(back.alternate_screen);
  EXPECT_EQ(back.text, "shell prompt$ top");
}

TEST(RenderScreen, WideAndMultibyteCharactersSurvive) {
  ScreenSnapshot s = RenderScreen("caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 ok", 20, 2);
  EXPECT_EQ(s.text, "caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 ok");
}

TEST(RenderScreen, LongOutputScrollsToTheLastRows) {
  std::string bytes;
  for (int i = 1; i <= 30; ++i) bytes += "line " + std::to_string(i) + "\r\n";
  ScreenSnapshot s = RenderScreen(bytes, 20, 4);
  EXPECT_EQ(s.text, "line 28\nline 29\nline 30");
}

}  // namespace
}  // namespace termbridge::session
