// Read-ahead for a program paging through a large output (docs/CONTRACT.md,
// 'Output budget': read_output with tail false). After a page that left more
// output behind it, the router asks for the next page at once; the
// read-ahead thread fetches it from the broker while the client is still
// taking in this one, and the read of exactly that page (same target,
// cursor, size and format) then has it without a broker round trip. The
// bytes at an offset never change, so a page read ahead is the page the
// later read would get; only its status (running, more) is a moment older,
// as if that read had come a moment earlier. At most kMaxPages pages are
// held, each for at most kKeep: a client that stops paging leaves nothing
// behind for long.
#ifndef TERMBRIDGE_AGENT_LANE_READ_AHEAD_H_
#define TERMBRIDGE_AGENT_LANE_READ_AHEAD_H_

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/thread/named_thread.h"
#include "termbridge/v1/broker.pb.h"

namespace termbridge::lane {

class ReadAhead {
 public:
  static constexpr size_t kMaxPages = 4;
  static constexpr absl::Duration kKeep = absl::Seconds(5);
  // How a page is read from the broker (BrokerClient::ReadOutput).
  using Fetch = std::function<absl::StatusOr<v1::ReadOutputResponse>(v1::ReadOutputRequest)>;

  // Starts the read-ahead thread ("tb-read-ahead").
  explicit ReadAhead(Fetch fetch);
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;
  // Drops what it holds and joins the thread (after the read under way, if any).
  ~ReadAhead();

  // Reads the page `next` asks for (no wait) ahead, unless it is held or
  // under way already. When kMaxPages are held or wanted, the oldest goes.
  void Start(v1::ReadOutputRequest next);
  // The page read ahead for `request` (target, cursor, max_bytes, format),
  // waiting for it while it is being read; nullopt when none was started or
  // it was dropped. A page is handed out once.
  std::optional<absl::StatusOr<v1::ReadOutputResponse>> Take(const v1::ReadOutputRequest& request);

 private:
  struct Page {
    v1::ReadOutputRequest request;
    std::optional<absl::StatusOr<v1::ReadOutputResponse>> reply;  // set once read
    absl::Time started;
    bool reading = false;
  };
  static std::string KeyOf(const v1::ReadOutputRequest& request);
  void Run();
  // Drops pages held longer than kKeep, and the oldest past kMaxPages.
  void Trim() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Fetch fetch_;
  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Page>> pages_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);  // keys to read, oldest first
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  thread::NamedThread thread_;  // last: it uses the members above until joined
};

}  // namespace termbridge::lane

#endif  // TERMBRIDGE_AGENT_LANE_READ_AHEAD_H_
