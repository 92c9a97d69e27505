// ValidUtf8: well-formed UTF-8 exactly as TOML reads it.
#include "common/text/utf8.h"

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

}  // namespace
}  // namespace termbridge::text
