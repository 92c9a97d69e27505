// ReadAhead with a fake broker: pages read ahead are handed out once, to the
// read of exactly that page, and no more than kMaxPages are held.
#include "agent/lane/read_ahead.h"

#include <vector>

#include "absl/synchronization/notification.h"
#include "common/thread/named_thread.h"
#include "gtest/gtest.h"

namespace termbridge::lane {
namespace {

v1::ReadOutputRequest Page(uint64_t cursor) {
  v1::ReadOutputRequest request;
  request.set_session_id("s_1");
  request.set_cursor(cursor);
  request.set_max_bytes(1 << 20);
  request.set_format(v1::OUTPUT_FORMAT_RAW);
  request.set_wait_ms(10000);
  request.set_until("output");
  return request;
}

// A broker whose page at `cursor` holds the text "page <cursor>".
struct FakeBroker {
  absl::Mutex mu;
  std::vector<v1::ReadOutputRequest> asked ABSL_GUARDED_BY(mu);
  absl::StatusOr<v1::ReadOutputResponse> Read(v1::ReadOutputRequest request) {
    absl::MutexLock lock(&mu);
    asked.push_back(request);
    v1::ReadOutputResponse reply;
    reply.mutable_output()->set_text("page " + std::to_string(request.cursor()));
    return reply;
  }
};

TEST(ReadAheadTest, ThePageReadAheadGoesToTheReadOfThatPageOnce) {
  FakeBroker broker;
  ReadAhead ahead([&broker](v1::ReadOutputRequest r) { return broker.Read(std::move(r)); });
  ahead.Start(Page(100));
  EXPECT_FALSE(ahead.Take(Page(99)).has_value());
  v1::ReadOutputRequest other_size = Page(100);
  other_size.set_max_bytes(4096);
  EXPECT_FALSE(ahead.Take(other_size).has_value());
  std::optional<absl::StatusOr<v1::ReadOutputResponse>> page = ahead.Take(Page(100));
  ASSERT_TRUE(page.has_value());
  ASSERT_TRUE(page->ok());
  EXPECT_EQ((*page)->output().text(), "page 100");
  EXPECT_FALSE(ahead.Take(Page(100)).has_value());  // handed out once
  absl::MutexLock lock(&broker.mu);
  ASSERT_EQ(broker.asked.size(), 1u);
  EXPECT_EQ(broker.asked[0].cursor(), 100u);
  EXPECT_EQ(broker.asked[0].wait_ms(), 0u);  // the read ahead never waits
  EXPECT_EQ(broker.asked[0].until(), "");
  EXPECT_FALSE(broker.asked[0].tail());
}

TEST(ReadAheadTest, TakeWaitsForThePageBeingRead) {
  absl::Notification reading;
  absl::Notification release;
  ReadAhead ahead([&](v1::ReadOutputRequest r) -> absl::StatusOr<v1::ReadOutputResponse> {
    reading.Notify();
    release.WaitForNotification();
    v1::ReadOutputResponse reply;
    reply.mutable_output()->set_text("late");
    return reply;
  });
  ahead.Start(Page(7));
  reading.WaitForNotification();
  // The page is not there yet when Take looks: Take has it only by waiting.
  thread::NamedThread releaser("test-release", [&] { release.Notify(); });
  std::optional<absl::StatusOr<v1::ReadOutputResponse>> page = ahead.Take(Page(7));
  ASSERT_TRUE(page.has_value());
  ASSERT_TRUE(page->ok());
  EXPECT_EQ((*page)->output().text(), "late");
}

TEST(ReadAheadTest, AFailedReadIsHandedOutAsItsError) {
  ReadAhead ahead([](v1::ReadOutputRequest) -> absl::StatusOr<v1::ReadOutputResponse> {
    return absl::UnavailableError("broker gone");
  });
  ahead.Start(Page(1));
  std::optional<absl::StatusOr<v1::ReadOutputResponse>> page = ahead.Take(Page(1));
  ASSERT_TRUE(page.has_value());
  EXPECT_EQ(page->status().code(), absl::StatusCode::kUnavailable);
}

TEST(ReadAheadTest, HoldsAtMostMaxPagesDroppingTheOldest) {
  FakeBroker broker;
  ReadAhead ahead([&broker](v1::ReadOutputRequest r) { return broker.Read(std::move(r)); });
  for (uint64_t cursor = 0; cursor <= ReadAhead::kMaxPages; ++cursor) {
    ahead.Start(Page(cursor));
  }
  EXPECT_FALSE(ahead.Take(Page(0)).has_value());
  for (uint64_t cursor = 1; cursor <= ReadAhead::kMaxPages; ++cursor) {
    std::optional<absl::StatusOr<v1::ReadOutputResponse>> page = ahead.Take(Page(cursor));
    ASSERT_TRUE(page.has_value()) << cursor;
    EXPECT_EQ((*page)->output().text(), "page " + std::to_string(cursor));
  }
}

}  // namespace
}  // namespace termbridge::lane
