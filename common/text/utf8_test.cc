// ValidUtf8: well-formed UTF-8 exactly as TOML reads it; CutAtCharBoundary
// and CompleteUtf8Length: cuts that never split a character.
#include "common/text/utf8.h"

#include <string>
#include <string_view>

#include "gtest/gtest.h"

namespace termbridge::text {
namespace {

TEST(Utf8Test, WellFormedTextIsValid) {
  EXPECT_TRUE(ValidUtf8(""));
  EXPECT_TRUE(ValidUtf8("plain ascii"));
  EXPECT_TRUE(ValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf"));
  std::string round_trip;
  for (uint32_t cp :
       {0x7Fu, 0x80u, 0x7FFu, 0x800u, 0xD7FFu, 0xE000u, 0xFFFFu, 0x10000u, 0x10FFFFu}) {
    AppendUtf8(cp, &round_trip);
  }
  EXPECT_TRUE(ValidUtf8(round_trip));
}

TEST(Utf8Test, MalformedSequencesAreNot) {
  for (const char* bad :
       {"\xff", "\xc0\xaf", "\xc1\xbf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf0\x80\x80\xaf",
        "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xf7\xb8\xb8\xb8", "\xc3", "\xe2\x82", "a\x80"}) {
    EXPECT_FALSE(ValidUtf8(bad)) << testing::PrintToString(std::string(bad));
  }
  EXPECT_EQ(Utf8SequenceLength("\xe2\x82\xac", 0), 3u);
  EXPECT_EQ(Utf8SequenceLength("\xf7\xb8\xb8\xb8", 0), 0u);
}

TEST(Utf8Test, CutAtCharBoundaryNeverSplitsACharacter) {
  EXPECT_EQ(CutAtCharBoundary("abc", 3), "abc");  // fits: unchanged
  EXPECT_EQ(CutAtCharBoundary("abc", 10), "abc");
  EXPECT_EQ(CutAtCharBoundary("abcdef", 4), "abcd");
  EXPECT_EQ(CutAtCharBoundary("", 0), "");
  EXPECT_EQ(CutAtCharBoundary("abc", 0), "");
  // "a€b": € is bytes 1..3; a cut inside it backs up to before it.
  const std::string text =
      "a\xe2\x82\xac"
      "b";
  EXPECT_EQ(CutAtCharBoundary(text, 1), "a");
  EXPECT_EQ(CutAtCharBoundary(text, 2), "a");
  EXPECT_EQ(CutAtCharBoundary(text, 3), "a");
  EXPECT_EQ(CutAtCharBoundary(text, 4), "a\xe2\x82\xac");
  // A 4-byte character at the start cut anywhere inside leaves nothing.
  EXPECT_EQ(CutAtCharBoundary("\xf0\x9f\x98\x80!", 3), "");
  // Every cut of valid text is valid text.
  const std::string mixed = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 x";
  for (size_t max = 0; max <= mixed.size(); ++max) {
    std::string_view cut = CutAtCharBoundary(mixed, max);
    EXPECT_LE(cut.size(), max);
    EXPECT_GE(cut.size() + 3, max);  // backs up at most 3 bytes
    EXPECT_TRUE(ValidUtf8(cut)) << max;
  }
}

TEST(Utf8Test, CompleteLengthStopsBeforeACutCharacter) {
  EXPECT_EQ(CompleteUtf8Length(""), 0u);
  EXPECT_EQ(CompleteUtf8Length("abc"), 3u);
  EXPECT_EQ(CompleteUtf8Length("a\xc3"), 1u);             // é cut after its lead byte
  EXPECT_EQ(CompleteUtf8Length("a\xc3\xa9"), 3u);         // é whole
  EXPECT_EQ(CompleteUtf8Length("\xe2\x82"), 0u);          // € cut
  EXPECT_EQ(CompleteUtf8Length("x\xe2\x82\xac"), 4u);     // € whole
  EXPECT_EQ(CompleteUtf8Length("\xf0\x9f\x98"), 0u);      // emoji cut
  EXPECT_EQ(CompleteUtf8Length("\x80\x80\x80\x80"), 4u);  // invalid: passed on
}

}  // namespace
}  // namespace termbridge::text
