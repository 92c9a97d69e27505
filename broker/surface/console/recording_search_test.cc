// The whole-history search and the export walker: offsets as the output
// stream counts them, escape sequences removed even when a chunk or event
// boundary cuts one (or the match), literal queries, and the limits.
#include "broker/surface/console/recording_search.h"

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "common/text/utf8.h"
#include "gtest/gtest.h"

namespace termbridge::console {
namespace {

// Feeds `chunks` as consecutive output events from offset 0, one second apart.
RecordingSearch Search(std::string_view query, const std::vector<std::string>& chunks,
                       SearchLimits limits = SearchLimits(), uint64_t from = 0) {
  RecordingSearch search(query, limits, from);
  uint64_t offset = 0;
  double seconds = 0;
  for (const std::string& chunk : chunks) {
    if (!search.Output(offset, chunk, seconds)) return search;
    offset += chunk.size();
    seconds += 1;
  }
  search.Finish();
  return search;
}

TEST(CastWalker, PlacesEventsInTheOutputStreamAcrossSplitLines) {
  const std::string cast =
      "{\"version\":2,\"width\":80,\"height\":24,\"timestamp\":1800000000}\n"
      "[0, \"m\", \"[100 earlier bytes not kept]\"]\n"
      "[0.5, \"o\", \"ab\\u001b[31mc\\n\"]\n"
      "[0.6, \"r\", \"100x30\"]\n"
      "[0.7, \"m\", \"[7 bytes not recorded]\"]\n"
      "[0.8, \"o\", \"h\\u00e9\"]\n";
  CastWalker walker;
  std::vector<CastEvent> events;
  std::vector<std::string> data;
  // Cut mid-line, mid-escape.
  for (std::string_view part :
       {std::string_view(cast).substr(0, 90), std::string_view(cast).substr(90, 17),
        std::string_view(cast).substr(107)}) {
    auto more = walker.Feed(part, [&](const CastEvent& e) {
      events.push_back(e);
      data.emplace_back(e.data);
      return true;
    });
    ASSERT_TRUE(more.ok()) << more.status();
  }
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(walker.header().substr(0, 12), "{\"version\":2");
  EXPECT_EQ(events[0].code, 'm');
  EXPECT_EQ(events[0].end, 100u);
  EXPECT_EQ(events[1].offset, 100u);
  EXPECT_EQ(data[1], "ab\x1b[31mc\n");
  EXPECT_EQ(events[1].end, 109u);
  EXPECT_EQ(events[2].code, 'r');
  EXPECT_EQ(events[2].offset, 109u);
  EXPECT_EQ(events[3].end, 116u);  // the hole
  EXPECT_EQ(events[4].offset, 116u);
  EXPECT_EQ(walker.offset(), 119u);  // é is two bytes
  EXPECT_DOUBLE_EQ(events[4].seconds, 0.8);

  CastWalker bad;
  auto refused = bad.Feed("{}\n[1, \"o\"]\n", [](const CastEvent&) { return true; });
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
}

// A replay at output byte 3500 with 1000 bytes of lead: the events from
// the one holding byte 2500 on, after a marker and the last resize before.
TEST(ReplayWindow, BeginsNearTheOffsetWithTheSizeInForceThen) {
  struct Line {
    char code;
    uint64_t offset, end;
    std::string text;
  };
  const std::vector<Line> cast = {
      {'r', 0, 0, "[0, \"r\", \"100x30\"]"},    {'o', 0, 1000, "[0.1, \"o\", \"a\"]"},
      {'o', 1000, 3000, "[0.2, \"o\", \"b\"]"}, {'r', 3000, 3000, "[0.3, \"r\", \"90x20\"]"},
      {'o', 3000, 3100, "[0.4, \"o\", \"c\"]"}, {'o', 3100, 5000, "[0.5, \"o\", \"d\"]"}};
  auto feed = [&](ReplayWindow& window) {
    for (const Line& l : cast) {
      CastEvent e;
      e.code = l.code;
      e.offset = l.offset;
      e.end = l.end;
      e.line = l.text;
      e.seconds = 0.2;
      if (!window.Add(e)) return false;
    }
    return true;
  };
  ReplayWindow at(3500, 1000, 1 << 20);
  ASSERT_TRUE(feed(at));
  EXPECT_EQ(at.first_offset(), 1000u);
  EXPECT_EQ(at.offsets(), (std::vector<uint64_t>{1000, 1000, 1000, 3000, 3000, 3100}));
  std::vector<std::string> lines = absl::StrSplit(at.lines(), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0],
            "[0.2,\"m\",\"[replay from byte 1000: the output before it is not loaded here, "
            "Replay shows it all]\"]");
  EXPECT_EQ(lines[1], cast[0].text);  // the size in force
  EXPECT_EQ(lines[2], cast[2].text);
  EXPECT_FALSE(at.truncated());

  ReplayWindow whole(std::nullopt, 1000, 1 << 20);
  ASSERT_TRUE(feed(whole));
  EXPECT_EQ(whole.offsets(), (std::vector<uint64_t>{0, 0, 1000, 3000, 3000, 3100}));
  EXPECT_EQ(whole.first_offset(), 0u);
  ReplayWindow near_start(500, 1000, 1 << 20);  // nothing to leave out
  ASSERT_TRUE(feed(near_start));
  EXPECT_EQ(near_start.offsets().size(), 6u);

  // The offsets count against the cap as well as the lines.
  ReplayWindow small(std::nullopt, 1000, 100);
  EXPECT_FALSE(feed(small));
  EXPECT_TRUE(small.truncated());
  EXPECT_LE(small.lines().size() + small.offsets().size() * sizeof(uint64_t), 100u);
  EXPECT_EQ(small.offsets().size(), 2u);
}

// Output that was not UTF-8 is one U+FFFD a byte in the export, and the
// stream names each output event's offset: a marker after 5000 such bytes
// (and after a U+FFFD the program printed, three bytes) is found at its
// true byte offset, as the live view and the audit log count.
TEST(CastWalker, PlacesTextAfterBytesThatWereNotUtf8AtTheirTrueOffset) {
  std::string fffd;
  for (int i = 0; i < 5000; ++i) fffd += "\\ufffd";
  const std::string cast =
      "{\"version\": 2, \"width\": 80, \"height\": 24}\n"
      "[0.1, \"o\", \"ab" +
      fffd +
      "c\\n\\ufffd\"]\n"                           // 5005 bytes from 10
      "[0.2, \"o\", \"d first-MARKER\\r\\n\"]\n";  // after a printed U+FFFD
  const std::vector<uint64_t> offsets = {10, 5017};
  CastWalker walker;
  RecordingSearch search("first-marker", SearchLimits());
  std::vector<CastEvent> events;
  auto more = walker.Feed(
      cast,
      [&](const CastEvent& e) {
        events.push_back(e);
        return search.Output(e.offset, e.data, e.seconds);
      },
      offsets);
  ASSERT_TRUE(more.ok()) << more.status();
  search.Finish();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].offset, 10u);
  EXPECT_EQ(events[0].end, 10u + 5005u);
  EXPECT_EQ(events[1].offset, 5017u);
  EXPECT_EQ(walker.offset(), 5017u + 16u);
  ASSERT_EQ(search.matches().size(), 1u);
  EXPECT_EQ(search.matches()[0].offset, 5017u + 2u);
  EXPECT_EQ(search.matches()[0].end, 5017u + 14u);
  EXPECT_EQ(search.matches()[0].line,
            "\xEF\xBF\xBD"
            "d first-MARKER");
  EXPECT_EQ(search.matches()[0].column, 5u);
  EXPECT_EQ(OutputBytes("a\xEF\xBF\xBD\xC3\xA9"), 4u);
}

// A search from an offset inside text that stands for bytes that were not
// UTF-8 counts each U+FFFD as one byte.
TEST(RecordingSearch, FromCountsAReplacementCharacterAsOneByte) {
  RecordingSearch s("hit", SearchLimits(), /*from=*/3);
  s.Output(0, "\xEF\xBF\xBD\xEF\xBF\xBDhit hit", 0);  // "hit" at bytes 2 and 6
  s.Finish();
  ASSERT_EQ(s.matches().size(), 1u);
  EXPECT_EQ(s.matches()[0].offset, 6u);
  EXPECT_EQ(s.scanned_to(), 9u);
}

TEST(RecordingSearch, FindsTextSplitByColourChangesAndChunkBoundaries) {
  // "Marker-7" with a colour change inside, cut by two chunk boundaries, one
  // of them inside the escape sequence.
  RecordingSearch s = Search(
      "marker-7", {"noise\r\nbefore ", "Mar\x1b[3", "1mker\x1b[0", "m-7 after\r\n", "MARKER-7\n"});
  ASSERT_EQ(s.matches().size(), 2u);
  const SearchMatch& m = s.matches()[0];
  EXPECT_EQ(m.offset, 14u);  // the 'M'
  EXPECT_EQ(m.line, "before Marker-7 after");
  EXPECT_EQ(m.line.substr(m.column, m.length), "Marker-7");
  EXPECT_DOUBLE_EQ(m.seconds, 1);  // the chunk where it begins
  const std::string stream = "noise\r\nbefore Mar\x1b[31mker\x1b[0m-7 after\r\n";
  EXPECT_EQ(m.end, stream.find(" after"));
  EXPECT_EQ(s.matches()[1].offset, stream.size());
  EXPECT_EQ(s.matches()[1].line, "MARKER-7");
  EXPECT_EQ(s.stopped(), RecordingSearch::Stop::kNone);
}

TEST(RecordingSearch, TitlesAndOtherStringsAreNotText) {
  RecordingSearch s = Search("secret", {"\x1b]0;secret title\x07", "x\x1bP+qsecret\x1b\\y",
                                        "\x1b]8;;http://secret\x1b\\link\n"});
  EXPECT_TRUE(s.matches().empty());
  RecordingSearch after = Search("xy", {"\x1b]0;t\x07x", "\x1bPq\x1b\\y\n"});
  ASSERT_EQ(after.matches().size(), 1u);  // text after the strings counts again
  EXPECT_EQ(after.matches()[0].line, "xy");
}

TEST(RecordingSearch, TheQueryIsLiteral) {
  RecordingSearch s = Search(".*(a+)+$", {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!\n", "x .*(a+)+$ y\n"});
  ASSERT_EQ(s.matches().size(), 1u);
  EXPECT_EQ(s.matches()[0].line, "x .*(a+)+$ y");
  EXPECT_TRUE(RecordingSearch::CheckQuery(".*(a+)+$").ok());
  EXPECT_FALSE(RecordingSearch::CheckQuery("").ok());
  EXPECT_FALSE(RecordingSearch::CheckQuery("a\nb").ok());
  EXPECT_FALSE(RecordingSearch::CheckQuery("\x1b[31m").ok());
  EXPECT_FALSE(RecordingSearch::CheckQuery(std::string(300, 'a')).ok());
}

TEST(RecordingSearch, AGapOrALineEndBreaksAMatch) {
  RecordingSearch search("abcd", SearchLimits());
  search.Output(0, "ab", 0);
  search.Gap();
  search.Output(10, "cd ab\ncd\n", 1);
  search.Finish();
  EXPECT_TRUE(search.matches().empty());
}

TEST(RecordingSearch, ALongLineIsSearchedInPiecesWithoutLosingAMatchAtACut) {
  std::string line(16 * 1024 - 3, 'x');
  line += "needle";  // crosses the 16 KiB cut
  line += std::string(40000, 'y') + "needle\n";
  RecordingSearch s = Search("NEEDLE", {line});
  ASSERT_EQ(s.matches().size(), 2u);
  EXPECT_EQ(s.matches()[0].offset, 16u * 1024 - 3);
  EXPECT_EQ(s.matches()[1].offset, line.size() - 7);
  EXPECT_LE(s.matches()[1].line.size(), 2 * SearchLimits().context_bytes + 6);
  EXPECT_EQ(s.matches()[1].line.substr(s.matches()[1].column), "needle");
}

TEST(RecordingSearch, StopsAtItsLimitsAndSaysWhere) {
  std::vector<std::string> chunks(50, "hit hit\n");
  SearchLimits few;
  few.max_matches = 5;
  RecordingSearch by_matches = Search("hit", chunks, few);
  EXPECT_EQ(by_matches.matches().size(), 5u);
  EXPECT_EQ(by_matches.stopped(), RecordingSearch::Stop::kMatches);
  EXPECT_EQ(by_matches.scanned_to(), 8u * 2 + 3);  // past the 5th match
  // On from there: the rest.
  RecordingSearch rest = Search("hit", chunks, SearchLimits(), by_matches.scanned_to());
  EXPECT_EQ(rest.matches().size(), 95u);
  EXPECT_EQ(rest.matches()[0].offset, 8u * 2 + 4);

  SearchLimits small;
  small.max_bytes = 100;
  RecordingSearch by_bytes = Search("hit", chunks, small);
  EXPECT_EQ(by_bytes.stopped(), RecordingSearch::Stop::kBytes);
  EXPECT_EQ(by_bytes.scanned_bytes(), 100u);
  EXPECT_EQ(by_bytes.scanned_to(), 100u);
  EXPECT_EQ(by_bytes.matches().size(), 25u);  // 12 whole lines and the "hit" at 96
}

// ESC before a character is no sequence: the character stays whole, and
// the highlight's column counts what the page shows.
TEST(RecordingSearch, AnEscapeBeforeACharacterKeepsItWhole) {
  RecordingSearch s = Search("tude", {"\x1b\xc3\xa9tude\n", "\x1b(\xc3\xa9tude\n"});
  ASSERT_EQ(s.matches().size(), 2u);
  for (const SearchMatch& m : s.matches()) {
    EXPECT_EQ(m.line, "\xc3\xa9tude");
    EXPECT_EQ(m.column, 2u);
    EXPECT_TRUE(text::ValidUtf8(m.line));
  }
}

// An OSC string cut at 64 KiB inside a character: the rest of that
// character is not text (the line before it is kept around the match).
TEST(RecordingSearch, AStringCutInsideACharacterLeavesNoHalfOfIt) {
  // "0;" and the title: the 65537th byte is the first of the é, then its second.
  for (size_t title : {(64 << 10) - 2, (64 << 10) - 3}) {
    const std::string osc = "\x1b]0;" + std::string(title, 't') + "\xc3\xa9";
    RecordingSearch s = Search("tail", {"x " + osc + "tail-word\n"});
    ASSERT_EQ(s.matches().size(), 1u);
    const SearchMatch& m = s.matches()[0];
    EXPECT_TRUE(text::ValidUtf8(m.line)) << m.line;
    EXPECT_EQ(m.line.substr(m.column), "tail-word");
  }
}

TEST(RecordingSearch, ContextIsCutAtWholeUtf8Characters) {
  SearchLimits limits;
  limits.context_bytes = 3;
  RecordingSearch s = Search("x", {"\xc3\xa9\xc3\xa9x\xc3\xa9\xc3\xa9\n"}, limits);
  ASSERT_EQ(s.matches().size(), 1u);
  EXPECT_EQ(s.matches()[0].line, "\xc3\xa9x\xc3\xa9\xc3\xa9");
  EXPECT_EQ(s.matches()[0].column, 2u);
}

}  // namespace
}  // namespace termbridge::console
