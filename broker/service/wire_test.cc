// Tests for the broker's wire conversions.
#include "broker/service/wire.h"

#include "gtest/gtest.h"

namespace termbridge::broker {
namespace {

TEST(CompletePrefixTest, KeepsEverythingWhenFinal) {
  EXPECT_EQ(CompletePrefix("abc\x1b[", true), 5u);
}

TEST(CompletePrefixTest, HoldsBackAnUnfinishedEscapeSequence) {
  EXPECT_EQ(CompletePrefix("abc\x1b[3", false), 3u);
  EXPECT_EQ(CompletePrefix("abc\x1b[31m", false), 8u);
  EXPECT_EQ(CompletePrefix("abc\x1b]0;title", false), 3u);
  EXPECT_EQ(CompletePrefix("abc\x1b]0;title\x07", false), 13u);
  EXPECT_EQ(CompletePrefix("abc\x1b", false), 3u);
}

TEST(CompletePrefixTest, HoldsBackASplitUtf8Character) {
  std::string euro = "\xe2\x82\xac";  // U+20AC, three bytes
  EXPECT_EQ(CompletePrefix("x" + euro.substr(0, 1), false), 1u);
  EXPECT_EQ(CompletePrefix("x" + euro.substr(0, 2), false), 1u);
  EXPECT_EQ(CompletePrefix("x" + euro, false), 4u);
}

TEST(FillOutputTest, CleanTextAdvancesTheCursorOnlyOverWhatWasReturned) {
  session::OutputSlice slice;
  slice.start = 100;
  slice.data = "ok\r\n\x1b[3";
  slice.next = 100 + slice.data.size();
  v1::Output out;
  FillOutput(slice, v1::OUTPUT_FORMAT_CLEAN, /*final=*/false, /*end_offset=*/slice.next, &out);
  EXPECT_EQ(out.text(), "ok\n");
  EXPECT_EQ(out.start(), 100u);
  EXPECT_EQ(out.next_cursor(), 104u);
  EXPECT_TRUE(out.more());
}

TEST(FillOutputTest, RawKeepsBytes) {
  session::OutputSlice slice;
  slice.start = 0;
  slice.data = "\x1b[31mred\x1b[0m";
  slice.next = slice.data.size();
  v1::Output out;
  FillOutput(slice, v1::OUTPUT_FORMAT_RAW, true, slice.next, &out);
  EXPECT_EQ(out.raw(), slice.data);
  EXPECT_FALSE(out.more());
}

TEST(FillOutputTest, RawTextIsTheBytesMadeValidUtf8) {
  // A page of ASCII with well-formed characters kept, and bytes that are not
  // UTF-8 (a lone continuation, a C0 lead, a surrogate) replaced one by one,
  // past the first eight-byte word and inside one.
  const std::string ascii(37, 'a');
  const std::string euro = "\xe2\x82\xac";
  const std::string surrogate = "\xed\xa0\x80";
  session::OutputSlice slice;
  slice.data = ascii + euro + "b\x80" + ascii + "\xc0\xaf" + surrogate + "\xf0\x9f\x98\x80";
  slice.next = slice.data.size();
  v1::Output out;
  FillOutput(slice, v1::OUTPUT_FORMAT_RAW, true, slice.next, &out);
  const std::string r = "\xef\xbf\xbd";  // U+FFFD
  EXPECT_EQ(out.text(), ascii + euro + "b" + r + ascii + r + r + r + r + r + "\xf0\x9f\x98\x80");
  EXPECT_EQ(out.raw(), slice.data);
  slice.data = ascii + euro + ascii;
  slice.next = slice.data.size();
  FillOutput(slice, v1::OUTPUT_FORMAT_RAW, true, slice.next, &out);
  EXPECT_EQ(out.text(), slice.data);
}

}  // namespace
}  // namespace termbridge::broker
