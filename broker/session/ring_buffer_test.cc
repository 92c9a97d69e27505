// Offsets are monotonic and a reader that fell behind gets an explicit gap.
#include "broker/session/ring_buffer.h"

#include <string>

#include "gtest/gtest.h"

namespace termbridge::session {
namespace {

TEST(RingBufferTest, ReadsWhatWasAppendedByOffset) {
  RingBuffer ring(16);
  ring.Append("hello ");
  ring.Append("world");
  OutputSlice all = ring.Read(0, 100);
  EXPECT_EQ(all.data, "hello world");
  EXPECT_EQ(all.start, 0u);
  EXPECT_EQ(all.next, 11u);
  EXPECT_EQ(all.gap, 0u);
  OutputSlice part = ring.Read(6, 3);
  EXPECT_EQ(part.data, "wor");
  EXPECT_EQ(part.next, 9u);
}

TEST(RingBufferTest, WrapsAndReportsGapForOverwrittenBytes) {
  RingBuffer ring(8);
  ring.Append("0123456789abc");  // 13 bytes, ring keeps the last 8
  EXPECT_EQ(ring.begin_offset(), 5u);
  EXPECT_EQ(ring.end_offset(), 13u);
  OutputSlice s = ring.Read(2, 100);
  EXPECT_EQ(s.gap, 3u);
  EXPECT_EQ(s.start, 5u);
  EXPECT_EQ(s.data, "56789abc");
  ring.Append("XY");
  EXPECT_EQ(ring.Read(13, 10).data, "XY");
  EXPECT_EQ(ring.Read(0, 100).data, "789abcXY");
}

TEST(RingBufferTest, ManySmallAppendsAcrossTheWrapPoint) {
  RingBuffer ring(7);
  std::string expected;
  for (int i = 0; i < 50; ++i) {
    std::string piece(1, static_cast<char>('a' + i % 26));
    ring.Append(piece);
    expected += piece;
  }
  EXPECT_EQ(ring.Read(0, 100).data, expected.substr(expected.size() - 7));
  EXPECT_EQ(ring.Tail(3).data, expected.substr(expected.size() - 3));
  EXPECT_EQ(ring.Tail(3).next, 50u);
}

TEST(RingBufferTest, CursorPastEndIsClampedAndEmpty) {
  RingBuffer ring(8);
  ring.Append("abc");
  OutputSlice s = ring.Read(99, 10);
  EXPECT_TRUE(s.data.empty());
  EXPECT_EQ(s.start, 3u);
  EXPECT_EQ(s.next, 3u);
}

TEST(RingBufferTest, ConsecutiveReadsLoseNothing) {
  RingBuffer ring(1 << 16);
  std::string expected;
  for (int i = 0; i < 1000; ++i) {
    std::string line = std::to_string(i) + "\n";
    ring.Append(line);
    expected += line;
  }
  std::string got;
  uint64_t cursor = 0;
  for (;;) {
    OutputSlice s = ring.Read(cursor, 37);
    if (s.data.empty()) break;
    EXPECT_EQ(s.gap, 0u);
    got += s.data;
    cursor = s.next;
  }
  EXPECT_EQ(got, expected);
}

TEST(RingBufferTest, HoldsOnlyWhatWasPrintedUntilItFills) {
  RingBuffer ring(8 << 20);
  EXPECT_EQ(ring.capacity(), 8u << 20);
  EXPECT_EQ(ring.resident(), 0u);
  ring.Append(std::string(1000, 'a'));
  EXPECT_GT(ring.resident(), 0u);
  EXPECT_LE(ring.resident(), 64u << 10);
  EXPECT_EQ(ring.Read(0, 2000).data, std::string(1000, 'a'));
}

// Every mix of append sizes, across the first fill and the wrap, reads back
// exactly the last `capacity` bytes of everything appended.
TEST(RingBufferTest, MatchesAPlainStringAcrossTheFirstFill) {
  for (size_t cap : {1u, 5u, 64u, 1000u}) {
    RingBuffer ring(cap);
    std::string all;
    unsigned seed = static_cast<unsigned>(cap);
    for (int i = 0; i < 300; ++i) {
      seed = seed * 1103515245u + 12345u;
      size_t n = (seed >> 16) % (i % 50 == 49 ? 3 * cap + 1 : cap / 3 + 2);
      std::string piece;
      for (size_t k = 0; k < n; ++k)
        piece.push_back(static_cast<char>('a' + (all.size() + k) % 26));
      ring.Append(piece);
      all += piece;
      ASSERT_EQ(ring.end_offset(), all.size());
      const size_t held = std::min(all.size(), cap);
      ASSERT_EQ(ring.begin_offset(), all.size() - held);
      OutputSlice s = ring.Read(0, cap + 10);
      ASSERT_EQ(s.gap, all.size() - held) << "cap " << cap << " step " << i;
      ASSERT_EQ(s.data, all.substr(all.size() - held)) << "cap " << cap << " step " << i;
    }
  }
}

}  // namespace
}  // namespace termbridge::session
