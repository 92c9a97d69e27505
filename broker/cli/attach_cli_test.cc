// Unit tests for the pure parts of attach and watch: key names, the
// keystroke filter, UTF-8 boundaries and watch's per-terminal lines.
#include "broker/cli/attach_keys.h"
#include "broker/cli/output_text.h"
#include "gtest/gtest.h"

namespace termbridge::cli {
namespace {

TEST(ParseKeyTest, ControlKeysInEverySpelling) {
  EXPECT_EQ(ParseKey("^]"), 0x1d);
  EXPECT_EQ(ParseKey("ctrl-]"), 0x1d);
  EXPECT_EQ(ParseKey("C-\\"), 0x1c);
  EXPECT_EQ(ParseKey("^a"), 0x01);
  EXPECT_EQ(ParseKey("Ctrl+Z"), 0x1a);
  EXPECT_EQ(ParseKey("^?"), 0x7f);
  EXPECT_EQ(ParseKey("q"), 'q');
  EXPECT_EQ(ParseKey("none"), -1);
  EXPECT_EQ(ParseKey(""), -1);
  EXPECT_EQ(ParseKey("^1"), std::nullopt);
  EXPECT_EQ(ParseKey("ab"), std::nullopt);
  EXPECT_EQ(KeyName(0x1d), "Ctrl-]");
}

TEST(KeyFilterTest, DetachKeyStopsAndDropsTheRest) {
  KeyFilter keys(0x1d, 0x1c);
  std::string forward;
  EXPECT_EQ(keys.Feed("ls\r\x1dxyz", &forward), KeyAction::kDetach);
  EXPECT_EQ(forward, "ls\r");
}

TEST(KeyFilterTest, CommandKeyThenKClosesAcrossReads) {
  KeyFilter keys(0x1d, 0x1c);
  std::string forward;
  EXPECT_EQ(keys.Feed("a\x1c", &forward), KeyAction::kNone);
  EXPECT_EQ(keys.Feed("k", &forward), KeyAction::kClose);
  EXPECT_EQ(forward, "a");
}

TEST(KeyFilterTest, CommandKeyThenUASSetsTheLock) {
  KeyFilter keys(0x1d, 0x1c);
  std::string forward;
  EXPECT_EQ(keys.Feed("\x1cu", &forward), KeyAction::kLockUser);
  EXPECT_EQ(keys.Feed("\x1c", &forward), KeyAction::kNone);
  EXPECT_EQ(keys.Feed("A", &forward), KeyAction::kLockAgent);
  EXPECT_EQ(keys.Feed("x\x1cs", &forward), KeyAction::kLockShared);
  EXPECT_EQ(forward, "x");
}

TEST(KeyFilterTest, CommandKeyOtherwisePassesThrough) {
  const std::string command = "\x1c";
  KeyFilter keys(0x1d, 0x1c);
  std::string forward;
  EXPECT_EQ(keys.Feed(command + command + "x" + command + "y", &forward), KeyAction::kNone);
  EXPECT_EQ(forward, command + "x" + command + "y");
  forward.clear();
  EXPECT_EQ(keys.Feed(command + "d", &forward), KeyAction::kDetach);
}

TEST(KeyFilterTest, KeysOffForwardEverything) {
  KeyFilter keys(-1, -1);
  std::string forward;
  EXPECT_EQ(keys.Feed("\x1d\x1ck", &forward), KeyAction::kNone);
  EXPECT_EQ(forward, "\x1d\x1ck");
}

TEST(Utf8Test, CarryJoinsACharacterSplitBetweenChunks) {
  Utf8Carry carry;
  Utf8Carry::Text first = carry.Add(10, "x\xe2\x82");
  EXPECT_EQ(first.offset, 10u);
  EXPECT_EQ(first.text, "x");
  Utf8Carry::Text second = carry.Add(13, "\xac!");
  EXPECT_EQ(second.offset, 11u);
  EXPECT_EQ(second.text, "\xe2\x82\xac!");
  Utf8Carry::Text after_gap = carry.Add(100, "z");
  EXPECT_EQ(after_gap.offset, 100u);
  EXPECT_EQ(after_gap.text, "z");
}

TEST(LinePrefixerTest, EveryLineNamesItsTerminal) {
  LinePrefixer lines;
  std::string out = lines.Add("t_1", "hello\r\nwor");
  out += lines.Add("t_2", "other\r\n");
  out += lines.Add("t_1", "ld\n");
  out += lines.Line("t_2", "termbridge > terminal t_2 exited (0)");
  EXPECT_EQ(out,
            "t_1 | hello\n"
            "t_1 | wor\n"
            "t_2 | other\n"
            "t_1 | ld\n"
            "t_2 | termbridge > terminal t_2 exited (0)\n");
}

TEST(EscapeStripperTest, RemovesSequencesSplitAcrossChunks) {
  EscapeStripper strip;
  std::string out = strip.Add("\x1b]133;A\x07$ ls\x1b[1");
  out += strip.Add(";32mfile\x1b[0m\r\n\x1b]0;title\x1b");
  out += strip.Add("\\done\x1b(Bx\x1b=\ty\x07\b\n");
  EXPECT_EQ(out, "$ lsfile\r\ndonex\ty\n");
}

}  // namespace
}  // namespace termbridge::cli
