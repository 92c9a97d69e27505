// Flow control accounting: reading pauses past the window and resumes
// exactly once when the page catches up.
#include "broker/surface/console/flow_window.h"

#include "gtest/gtest.h"

namespace termbridge::console {
namespace {

TEST(FlowWindow, ReadsWhileUnderTheWindow) {
  FlowWindow window(100);
  EXPECT_TRUE(window.AfterChunk(60));
  EXPECT_TRUE(window.AfterChunk(39));
  EXPECT_EQ(window.unacked(), 99u);
  EXPECT_FALSE(window.paused());
}

TEST(FlowWindow, PausesAtTheWindowAndResumesOnceOnAck) {
  FlowWindow window(100);
  EXPECT_TRUE(window.AfterChunk(64));
  EXPECT_FALSE(window.AfterChunk(64));  // 128 unacked: stop pulling
  EXPECT_TRUE(window.paused());
  absl::Status error;
  EXPECT_FALSE(window.OnAck(20, &error));  // 108 still >= 100
  EXPECT_TRUE(window.OnAck(64, &error));   // 44: resume
  EXPECT_FALSE(window.OnAck(10, &error));  // already reading: no second resume
  EXPECT_TRUE(error.ok());
  EXPECT_EQ(window.unacked(), 34u);
}

TEST(FlowWindow, FramesWithoutOutputDoNotCount) {
  FlowWindow window(100);
  EXPECT_FALSE(window.AfterChunk(100));
  EXPECT_FALSE(window.AfterChunk(0));  // a gap frame while paused stays paused
  absl::Status error;
  EXPECT_TRUE(window.OnAck(1, &error));
}

TEST(FlowWindow, OverAckIsClampedAndReported) {
  FlowWindow window(100);
  window.AfterChunk(10);
  absl::Status error;
  window.OnAck(50, &error);
  EXPECT_EQ(error.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(window.unacked(), 0u);
  EXPECT_TRUE(window.AfterChunk(99));  // the clamp did not open a credit
  EXPECT_FALSE(window.AfterChunk(1));
}

TEST(FlowWindow, DefaultWindowIsOneMebibyte) {
  FlowWindow window;
  EXPECT_EQ(window.limit(), 1u << 20);
  uint64_t chunks = 0;
  while (window.AfterChunk(64 << 10)) ++chunks;
  EXPECT_EQ(chunks, 15u);  // the 16th chunk reaches 1 MiB and pauses
}

}  // namespace
}  // namespace termbridge::console
