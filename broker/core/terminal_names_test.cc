// Tests for terminal names: what an agent names a terminal cannot reach a
// person's screen as control sequences or reordered text.
#include "broker/core/terminal_names.h"

#include <string>

#include "gtest/gtest.h"

namespace termbridge::core {
namespace {

TEST(TerminalNamesTest, PrintableNamesStayAsGiven) {
  EXPECT_EQ(CleanTerminalName("build server"), "build server");
  EXPECT_EQ(CleanTerminalName("Übersetzung — 日本"), "Übersetzung — 日本");
}

TEST(TerminalNamesTest, ControlsAndEscapesAreRemoved) {
  EXPECT_EQ(CleanTerminalName("a\x1b[2J\x1b]0;pwned\x07z"), "a[2J]0;pwnedz");
  EXPECT_EQ(CleanTerminalName("one\rtwo"), "one two");
  EXPECT_EQ(CleanTerminalName("x\x7f\xc2\x9b"
                              "31my"),
            "x31my");  // DEL and C1 CSI
  EXPECT_EQ(CleanTerminalName("bad\xff\xfe utf8"), "bad utf8");
}

TEST(TerminalNamesTest, BidiAndZeroWidthCharactersAreRemoved) {
  // U+202E (right-to-left override) would show "safe" reversed text.
  EXPECT_EQ(CleanTerminalName("evil\u202Etxt.exe"), "eviltxt.exe");
  EXPECT_EQ(CleanTerminalName("a\u200Bb\u2066c\uFEFF"), "abc");
  // Blank letters, tag characters, variation selectors and private use show
  // as nothing or as blanks: a name made of them would look empty.
  EXPECT_EQ(CleanTerminalName("x\u3164\u2800\uFE0F\U000E0041\uE000y"), "xy");
  EXPECT_EQ(CleanTerminalName("one\u2028two"), "one two");
}

TEST(TerminalNamesTest, SpacesCollapseAndTrim) {
  EXPECT_EQ(CleanTerminalName("  lots \t of\n\n space  "), "lots of space");
  EXPECT_EQ(CleanTerminalName(" \t\x01 "), "");
}

TEST(TerminalNamesTest, LongNamesAreCutAtACharacterBoundary) {
  std::string name = CleanTerminalName(std::string(63, 'a') + "é and more");
  EXPECT_EQ(name, std::string(63, 'a'));
  EXPECT_LE(CleanTerminalName(std::string(500, 'x')).size(), kMaxTerminalName);
}

TEST(TerminalNamesTest, DerivedFromDirectoryAndFirstCommand) {
  EXPECT_EQ(DerivedTerminalName("/home/ann/repo", "make -j4 test"), "repo: make");
  EXPECT_EQ(DerivedTerminalName("/home/ann/repo/", "/usr/bin/python3 x.py"), "repo: python3");
  EXPECT_EQ(DerivedTerminalName("/home/ann/repo", ""), "repo");
  EXPECT_EQ(DerivedTerminalName("/", "ls"), "/: ls");
  EXPECT_EQ(DerivedTerminalName("", "ls;rm"), "ls");
  EXPECT_EQ(DerivedTerminalName("/srv/\x1b]0;x\x07", "top"), "]0;x: top");
}

}  // namespace
}  // namespace termbridge::core
