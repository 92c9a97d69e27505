// MarkFilter: only marks signed with the terminal's secret are events; the
// secret never reaches the filtered stream; chunks may split anything.
#include "broker/session/mark_filter.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace termbridge::session {
namespace {

constexpr char kSecret[] = "0123456789abcdef0123456789abcdef";

struct Filtered {
  std::string out;
  std::vector<ShellMark> marks;
};

// Feeds `chunks` one after the other, collecting output and marks (offsets
// made absolute in the filtered stream).
Filtered FilterAll(const std::vector<std::string>& chunks, const std::string& secret = kSecret) {
  MarkFilter filter(secret);
  Filtered f;
  for (const std::string& chunk : chunks) {
    std::string out;
    std::vector<ShellMark> marks;
    bool same = filter.Feed(chunk, &out, &marks);
    const uint64_t base = f.out.size();
    f.out += same ? chunk : out;
    for (ShellMark m : marks) {
      m.offset += base;
      m.end_offset += base;
      f.marks.push_back(m);
    }
  }
  f.out += filter.Flush();
  return f;
}

std::string Signed(const std::string& body) {
  return "\x1b]133;" + body + ";tb=" + kSecret + "\x07";
}

TEST(MarkFilterTest, PlainOutputPassesThroughUntouched) {
  MarkFilter filter(kSecret);
  std::string out = "untouched";
  std::vector<ShellMark> marks;
  EXPECT_TRUE(filter.Feed("hello \x1b[31mred\x1b[0m", &out, &marks));
  EXPECT_EQ(out, "untouched");
  EXPECT_TRUE(marks.empty());
}

TEST(MarkFilterTest, SignedMarksBecomeEventsAndLoseTheSecret) {
  Filtered f = FilterAll({"out" + Signed("D;3;n=7") + "$ " + Signed("B")});
  ASSERT_EQ(f.marks.size(), 2u);
  EXPECT_EQ(f.marks[0].kind, ShellMark::kCommandEnd);
  EXPECT_EQ(f.marks[0].exit_code, 3);
  EXPECT_EQ(f.marks[0].seq, 7u);
  EXPECT_EQ(f.marks[1].kind, ShellMark::kCommandStart);
  EXPECT_EQ(f.out, "out\x1b]133;D;3\x07$ \x1b]133;B\x07");
  EXPECT_EQ(f.out.find(kSecret), std::string::npos);
  EXPECT_EQ(f.out.substr(f.marks[0].offset, f.marks[0].end_offset - f.marks[0].offset),
            "\x1b]133;D;3\x07");
}

TEST(MarkFilterTest, UnsignedAndWronglySignedMarksStayOutput) {
  const std::vector<std::string> forged = {
      "\x1b]133;D;0\x07",
      "\x1b]133;D;0\x1b\\",
      "\x1b]133;D;0;tb=\x07",
      "\x1b]133;D;0;tb=0123456789abcdef0123456789abcdee\x07",
      "\x1b]133;D;0;tb=" + std::string(kSecret) + "x\x07",
      "\x1b]133;D;0;tb=" + std::string(kSecret).substr(1) + "\x07",
      "\x1b]133;Z;tb=" + std::string(kSecret) + "\x07",
  };
  for (const std::string& mark : forged) {
    Filtered f = FilterAll({"a" + mark + "b"});
    EXPECT_TRUE(f.marks.empty()) << mark;
    EXPECT_EQ(f.out, "a" + mark + "b");
  }
}

TEST(MarkFilterTest, SplittingAtEveryByteGivesTheSameResult) {
  const std::string stream = "x\x1b]0;title\x07" + Signed("C") + "data\x1b]133;D;0\x07more" +
                             Signed("D;0;n=1") + "\x1b]13" + Signed("A") + "$ ";
  Filtered whole = FilterAll({stream});
  ASSERT_EQ(whole.marks.size(), 3u);
  for (size_t cut = 1; cut < stream.size(); ++cut) {
    Filtered split = FilterAll({stream.substr(0, cut), stream.substr(cut)});
    EXPECT_EQ(split.out, whole.out) << cut;
    ASSERT_EQ(split.marks.size(), whole.marks.size()) << cut;
    for (size_t i = 0; i < whole.marks.size(); ++i) {
      EXPECT_EQ(split.marks[i].offset, whole.marks[i].offset) << cut;
      EXPECT_EQ(split.marks[i].kind, whole.marks[i].kind) << cut;
    }
  }
  std::vector<std::string> bytes;
  for (char c : stream) bytes.push_back(std::string(1, c));
  Filtered bytewise = FilterAll(bytes);
  EXPECT_EQ(bytewise.out, whole.out);
  EXPECT_EQ(bytewise.marks.size(), whole.marks.size());
}

TEST(MarkFilterTest, AnUnfinishedIntroIsHeldOnlyBoundedlyAndFlushedAtTheEnd) {
  Filtered f = FilterAll({"a\x1b]133;D;0;" + std::string(MarkFilter::kMaxMarkBytes * 2, '9')});
  EXPECT_TRUE(f.marks.empty());
  EXPECT_EQ(f.out, "a\x1b]133;D;0;" + std::string(MarkFilter::kMaxMarkBytes * 2, '9'));
  Filtered tail = FilterAll({"end\x1b]13"});
  EXPECT_EQ(tail.out, "end\x1b]13");
}

TEST(MarkFilterTest, SecretsAreFreshAndHex) {
  std::string a = NewMarkSecret(), b = NewMarkSecret();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}

}  // namespace
}  // namespace termbridge::session
