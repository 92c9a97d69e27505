// Unit tests for the head/tail shaping of output within a budget
// (agent/lane/output_budget.h; docs/CONTRACT.md, 'Output budget'): what a
// model gets stays within the budget, the omitted count is exact, and the
// cursors it returns read back every byte in between.
#include "agent/lane/output_budget.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace termbridge::lane {
namespace {

// Output that is not one byte repeated, so a misplaced cut shows.
std::string Lines(size_t bytes) {
  std::string out;
  for (int i = 1; out.size() < bytes; ++i) absl::StrAppend(&out, "line ", i, " of the build\n");
  out.resize(bytes);
  return out;
}

// Reads every byte from `cursor` to `end` in pages of at most `page` bytes
// (each page a read whose window holds no more than its budget).
std::string ReadRange(std::string_view held, uint64_t held_start, uint64_t cursor, uint64_t end,
                      size_t page) {
  std::string out;
  while (cursor < end) {
    const uint64_t window = std::min<uint64_t>(end, cursor + page);
    ShapedSlice slice = ShapeBytes(held.substr(0, window - held_start), held_start, cursor, page);
    EXPECT_EQ(slice.omitted_bytes, 0u);
    EXPECT_GT(slice.next, cursor);
    if (slice.next <= cursor) break;
    out += slice.text;
    cursor = slice.next;
  }
  return out;
}

TEST(OutputBudgetTest, NoBudgetOrZeroIsTheDefaultAndALargerOneStopsAtTheMaximum) {
  EXPECT_EQ(OutputBudget(std::nullopt), kDefaultOutputBudget);
  EXPECT_EQ(OutputBudget(0), kDefaultOutputBudget);
  EXPECT_EQ(OutputBudget(-3), kDefaultOutputBudget);
  EXPECT_EQ(OutputBudget(100), 100u);
  EXPECT_EQ(OutputBudget(512 << 10), 512u << 10);  // a larger value than the default is let through
  EXPECT_EQ(OutputBudget(int64_t{5} << 30), kMaxOutputBudget);
  EXPECT_EQ(OutputBudget(3 << 20, 2 << 20), 2u << 20);
  EXPECT_EQ(OutputBudget(std::nullopt, 1000), 1000u);
  EXPECT_GE(kDefaultOutputBudget, 16u << 10);
  EXPECT_LE(kDefaultOutputBudget, 32u << 10);
}

TEST(OutputBudgetTest, HeadAndTailShareTheBudget) {
  EXPECT_EQ(HeadBytes(16384) + TailBytes(16384), 16384u);
  EXPECT_EQ(HeadBytes(7) + TailBytes(7), 7u);
  EXPECT_EQ(HeadBytes(1), 1u);
  EXPECT_EQ(TailBytes(1), 0u);
  EXPECT_EQ(TailBytes(0), 0u);
}

TEST(OutputBudgetTest, OutputWithinTheBudgetComesWholeAndContiguous) {
  std::string held = Lines(1000);
  ShapedSlice slice = ShapeBytes(held, 0, 0, 1000);
  EXPECT_EQ(slice.text, held);
  EXPECT_EQ(slice.start, 0u);
  EXPECT_EQ(slice.next, 1000u);
  EXPECT_FALSE(slice.more);
  EXPECT_EQ(slice.omitted_bytes, 0u);
  EXPECT_TRUE(slice.tail.empty());
  // From a cursor: only what follows it.
  ShapedSlice rest = ShapeBytes(held, 0, 600, 1000);
  EXPECT_EQ(rest.text, held.substr(600));
  EXPECT_EQ(rest.start, 600u);
}

TEST(OutputBudgetTest, LargerOutputIsItsHeadAndTailAndTheMiddleReadsBackExactly) {
  const std::string held = Lines(200 * 1024);
  const size_t budget = 16 * 1024;
  ShapedSlice slice = ShapeBytes(held, 0, 0, budget);
  EXPECT_LE(slice.text.size() + slice.tail.size(), budget);
  EXPECT_EQ(slice.text, held.substr(0, slice.next));
  EXPECT_EQ(slice.tail, held.substr(held.size() - slice.tail.size()));
  EXPECT_EQ(slice.next, budget / 2);
  EXPECT_EQ(slice.tail_start, held.size() - budget / 2);
  EXPECT_EQ(slice.tail_next, held.size());
  EXPECT_EQ(slice.omitted_bytes, held.size() - budget);
  EXPECT_EQ(slice.tail_start, slice.next + slice.omitted_bytes);
  EXPECT_TRUE(slice.more);
  // The cursor it returns is the start of the omitted bytes: reading on from
  // it, page by page, gives them all, and the whole output is exact.
  std::string middle = ReadRange(held, 0, slice.next, slice.tail_start, budget);
  EXPECT_EQ(middle.size(), slice.omitted_bytes);
  EXPECT_EQ(slice.text + middle + slice.tail, held);
}

TEST(OutputBudgetTest, ACursorBeforeTheHeldBytesIsAGap) {
  const std::string held = Lines(100);
  ShapedSlice slice = ShapeBytes(held, 5000, 4000, 1000);
  EXPECT_EQ(slice.gap_bytes, 1000u);
  EXPECT_EQ(slice.start, 5000u);
  EXPECT_EQ(slice.text, held);
  EXPECT_EQ(slice.next, 5100u);
}

TEST(OutputBudgetTest, CutsFallOnCharacterBoundaries) {
  // "é" is two bytes, "€" three: put a character across each cut.
  std::string held =
      std::string(99, 'a') + "é" + std::string(800, 'b') + "€" + std::string(99, 'c');
  const size_t budget = 200;  // head cut at 100 (inside é), tail cut at size - 100 (inside €)
  ShapedSlice slice = ShapeBytes(held, 0, 0, budget);
  EXPECT_EQ(slice.text, std::string(99, 'a'));  // é given back to the omitted part
  EXPECT_EQ(slice.tail, std::string(99, 'c'));  // € skipped into the omitted part
  EXPECT_EQ(slice.next, 99u);
  EXPECT_EQ(slice.tail_start, held.size() - 99);
  EXPECT_EQ(slice.omitted_bytes, held.size() - 198);
  std::string middle = ReadRange(held, 0, slice.next, slice.tail_start, 64);
  EXPECT_EQ(slice.text + middle + slice.tail, held);
}

TEST(OutputBudgetTest, WithoutATailItIsAPageFromTheCursor) {
  const std::string held = Lines(200 * 1024);
  ShapedSlice page = ShapeBytes(held, 0, 8192, 16384, /*tail=*/false);
  EXPECT_EQ(page.text, held.substr(8192, 16384));
  EXPECT_EQ(page.start, 8192u);
  EXPECT_EQ(page.next, 8192u + 16384);
  EXPECT_TRUE(page.more);
  EXPECT_EQ(page.omitted_bytes, 0u);
  EXPECT_TRUE(page.tail.empty());
  EXPECT_EQ(FirstReadBytes(16384, false), 16384u);
  EXPECT_EQ(FirstReadBytes(16384, true), 8192u);
  // Pages end on character boundaries too, and a reader always moves on.
  const std::string text = std::string(99, 'a') + "é" + "z";
  ShapedSlice cut = ShapeBytes(text, 0, 0, 100, false);
  EXPECT_EQ(cut.text, std::string(99, 'a'));
  ShapedSlice lone = ShapeBytes("é", 0, 0, 1, false);
  EXPECT_EQ(lone.next, 1u);
  EXPECT_EQ(ReadRange(text, 0, 0, text.size(), 1), text);
}

TEST(OutputBudgetTest, ABudgetOfOneByteHasNoTail) {
  ShapedSlice slice = ShapeBytes("abc", 0, 0, 1);
  EXPECT_EQ(slice.text, "a");
  EXPECT_EQ(slice.next, 1u);
  EXPECT_TRUE(slice.more);
  EXPECT_EQ(slice.omitted_bytes, 0u);
  ShapedSlice none = ShapeBytes("abc", 0, 0, 0);
  EXPECT_EQ(none.text, "");
  EXPECT_EQ(none.next, 0u);
}

TEST(OutputBudgetTest, TwoStreamsShareOneBudget) {
  // Both fit: each gets what it has.
  EXPECT_EQ(SplitBudget(10, 20, 100), std::make_pair(size_t{10}, size_t{20}));
  // A small stream gets what it has, the other the rest.
  EXPECT_EQ(SplitBudget(1000, 20, 100), std::make_pair(size_t{80}, size_t{20}));
  EXPECT_EQ(SplitBudget(20, 1000, 100), std::make_pair(size_t{20}, size_t{80}));
  // Both large: half each.
  EXPECT_EQ(SplitBudget(1000, 1000, 100), std::make_pair(size_t{50}, size_t{50}));
  EXPECT_EQ(SplitBudget(1000, 1000, 0), std::make_pair(size_t{0}, size_t{0}));
}

// A reader over a string, as the broker reads a session's output: from a
// cursor, or the last bytes. Counts its reads; `data` may grow between them.
struct FakeStream {
  std::string data;
  int reads = 0;
  bool fail = false;

  OutputPiece Read(uint64_t cursor, size_t max_bytes) const {
    OutputPiece piece;
    piece.start = std::min<uint64_t>(cursor, data.size());
    piece.text = data.substr(piece.start, max_bytes);
    piece.next = piece.start + piece.text.size();
    piece.more = piece.next < data.size();
    return piece;
  }
  PieceReader Reader() {
    return [this](std::optional<uint64_t> cursor, size_t max_bytes) -> absl::StatusOr<OutputPiece> {
      ++reads;
      if (fail) return absl::UnavailableError("broker went away");
      if (cursor) return Read(*cursor, max_bytes);
      return Read(data.size() > max_bytes ? data.size() - max_bytes : 0, max_bytes);
    };
  }
};

TEST(CompleteToBudgetTest, OutputInTheHeadReadNeedsNoFurtherRead) {
  FakeStream stream{Lines(3000)};
  ShapedSlice slice = CompleteToBudget(stream.Read(0, HeadBytes(16384)), 16384, stream.Reader());
  EXPECT_EQ(stream.reads, 0);
  EXPECT_EQ(slice.text, stream.data);
  EXPECT_FALSE(slice.more);
  EXPECT_EQ(slice.omitted_bytes, 0u);
}

TEST(CompleteToBudgetTest, OutputThatFitsTheBudgetIsReadOnContiguously) {
  FakeStream stream{Lines(12000)};  // more than the head (8192), less than the budget
  ShapedSlice slice = CompleteToBudget(stream.Read(0, HeadBytes(16384)), 16384, stream.Reader());
  EXPECT_EQ(stream.reads, 2);  // the tail (which reached back into the head), then on from the head
  EXPECT_EQ(slice.text, stream.data);
  EXPECT_EQ(slice.next, stream.data.size());
  EXPECT_FALSE(slice.more);
  EXPECT_EQ(slice.omitted_bytes, 0u);
}

TEST(CompleteToBudgetTest, LargerOutputIsHeadAndTailAndTheCursorReadsTheMiddle) {
  FakeStream stream{Lines(200 * 1024)};
  const size_t budget = 16384;
  ShapedSlice slice = CompleteToBudget(stream.Read(0, HeadBytes(budget)), budget, stream.Reader());
  EXPECT_EQ(stream.reads, 1);  // the tail
  EXPECT_LE(slice.text.size() + slice.tail.size(), budget);
  EXPECT_TRUE(slice.more);
  EXPECT_EQ(slice.omitted_bytes, stream.data.size() - budget);
  EXPECT_EQ(slice.tail_start, slice.next + slice.omitted_bytes);
  EXPECT_EQ(slice.tail_next, stream.data.size());
  // Reading on from the returned cursor with the same budget pages through
  // the middle; every page's head continues where the last one ended.
  std::string middle;
  uint64_t cursor = slice.next;
  while (cursor < slice.tail_start) {
    ShapedSlice page =
        CompleteToBudget(stream.Read(cursor, HeadBytes(budget)), budget, stream.Reader());
    ASSERT_EQ(page.start, cursor);
    ASSERT_GT(page.next, cursor);
    middle += page.text;
    cursor = page.next;
  }
  middle.resize(slice.omitted_bytes);
  EXPECT_EQ(slice.text + middle + slice.tail, stream.data);
}

TEST(CompleteToBudgetTest, OutputThatGrowsBetweenReadsKeepsTheCountsExact) {
  FakeStream stream{Lines(50000)};
  OutputPiece head = stream.Read(0, HeadBytes(4096));
  stream.data += Lines(30000);  // a running command printed more before the tail read
  ShapedSlice slice = CompleteToBudget(head, 4096, stream.Reader());
  EXPECT_EQ(slice.tail_next, stream.data.size());
  EXPECT_EQ(slice.omitted_bytes, stream.data.size() - 4096);
  EXPECT_EQ(slice.text + stream.data.substr(slice.next, slice.omitted_bytes) + slice.tail,
            stream.data);
}

TEST(CompleteToBudgetTest, AFailedTailReadReturnsTheHeadAloneAndSkipsNothing) {
  FakeStream stream{Lines(100000)};
  stream.fail = true;
  ShapedSlice slice = CompleteToBudget(stream.Read(0, HeadBytes(16384)), 16384, stream.Reader());
  EXPECT_EQ(slice.text, stream.data.substr(0, 8192));
  EXPECT_EQ(slice.next, 8192u);
  EXPECT_TRUE(slice.more);
  EXPECT_EQ(slice.omitted_bytes, 0u);
}

TEST(AddShapedJsonTest, TheTailAndTheOmittedCountAppearOnlyWhenBytesWereOmitted) {
  nlohmann::json whole = nlohmann::json::object();
  AddShapedJson(ShapeBytes("hi\n", 0, 0, 100), "stdout", "omitted_bytes", "tail", &whole);
  EXPECT_EQ(whole["stdout"], "hi\n");
  EXPECT_EQ(whole["omitted_bytes"], 0);
  EXPECT_FALSE(whole.contains("tail"));
  nlohmann::json cut = nlohmann::json::object();
  AddShapedJson(ShapeBytes(Lines(1000), 0, 0, 100), "stderr", "stderr_omitted_bytes", "stderr_tail",
                &cut);
  EXPECT_EQ(cut["stderr_omitted_bytes"], 900);
  EXPECT_EQ(cut["stderr_tail"]["start"], 950);
  EXPECT_EQ(cut["stderr_tail"]["cursor"], 1000);
  EXPECT_EQ(cut["stderr_tail"]["stderr"], Lines(1000).substr(950));
}

}  // namespace
}  // namespace termbridge::lane
