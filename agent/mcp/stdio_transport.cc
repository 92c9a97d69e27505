// Line framing and concurrency for the stdio transport.
#include "agent/mcp/stdio_transport.h"

#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "agent/mcp/id_scanner.h"
#include "agent/mcp/json_depth.h"
#include "spdlog/spdlog.h"

namespace termbridge::mcp {
namespace {

class LineWriter {
 public:
  explicit LineWriter(int fd) : fd_(fd) {}
  void Write(const std::string& text) {
    absl::MutexLock lock(&mu_);
    std::string line = text + "\n";
    size_t done = 0;
    while (done < line.size()) {
      ssize_t n = write(fd_, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        spdlog::warn("event=stdout_write_failed errno={}", errno);
        return;
      }
      done += static_cast<size_t>(n);
    }
  }

 private:
  const int fd_;
  absl::Mutex mu_;
};

// Tool calls run on their own threads, at most `max` at once; more wait in a
// queue (up to kMaxQueued, then they are refused as busy). Everything else
// (ping, initialize, tools/list, notifications, cancellations and responses)
// is handled on the reading thread at once, so a cancellation or a client's
// answer is never stuck behind the calls it concerns, however many wait.
// A call thread that ended is joined by the next Dispatch, and Drain joins
// the rest, so none outlives RunStdio.
class Dispatcher {
 public:
  static constexpr size_t kMaxQueued = 256;

  Dispatcher(McpServer& server, LineWriter& writer, int max)
      : server_(server), writer_(writer), max_(max) {
    exchange_.notify = [this](const nlohmann::json& message) { writer_.Write(Dump(message)); };
  }

  void Dispatch(std::string line) {
    if (JsonNestsDeeperThan(line)) {
      IdScanner ids;  // the refusal names the request, so the client stops waiting
      ids.Feed(line);
      writer_.Write(
          Dump(ErrorReply(ids.id(), kInvalidRequest, "Invalid Request: JSON nests too deeply",
                          {{"max_depth", kMaxJsonDepth}})));
      return;
    }
    // nlohmann's parser ends the text at a NUL byte and ignores the rest, but
    // JSON has no raw NUL anywhere: such a line is not JSON.
    nlohmann::json message = line.find('\0') != std::string::npos
                                 ? nlohmann::json(nlohmann::json::value_t::discarded)
                                 : nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (message.is_discarded()) {
      writer_.Write(Dump(ErrorReply(nullptr, kParseError, "Parse error: invalid JSON")));
      return;
    }
    const std::string method = StringField(message, "method");
    if (method == "notifications/cancelled") DropQueued(ObjectField(message, "params"));
    if (method != "tools/call" || !message.contains("id")) {
      Outcome outcome = server_.Handle(message, exchange_);
      if (outcome.reply) writer_.Write(Dump(*outcome.reply));
      return;
    }
    std::list<std::thread> ended;
    {
      absl::MutexLock lock(&mu_);
      if (running_ >= max_) {
        if (queue_.size() < kMaxQueued) {
          queue_.push_back(std::move(message));
          return;
        }
        writer_.Write(Dump(
            ErrorReply(AnyField(message, "id"), kServerBusy,
                       "Server busy: too many tool calls in flight; retry when one has finished",
                       {{"running", running_}, {"queued", queue_.size()}})));
        return;
      }
      ++running_;
      ended.splice(ended.end(), ended_);
      // The thread waits for mu_ before it can say it ended, so its list
      // entry is set by then.
      auto self = workers_.emplace(workers_.end());
      *self = std::thread(&Dispatcher::Work, this, self, std::move(message));
    }
    for (std::thread& thread : ended) thread.join();
  }

  // Blocks until every call, queued or running, has written its reply and
  // every call thread has ended.
  void Drain() {
    std::list<std::thread> workers;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &Dispatcher::Idle));
      workers.splice(workers.end(), ended_);
      workers.splice(workers.end(), workers_);
    }
    for (std::thread& thread : workers) thread.join();
  }

 private:
  // A cancelled call that has not started is dropped: it gets no reply, as
  // the protocol says of cancelled requests.
  void DropQueued(const nlohmann::json& params) {
    if (!params.contains("requestId")) return;
    absl::MutexLock lock(&mu_);
    for (auto it = queue_.begin(); it != queue_.end();) {
      if (AnyField(*it, "id") == params["requestId"]) {
        spdlog::info("event=cancelled_queued request_id={}", params["requestId"].dump());
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
  }

  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return running_ == 0 && queue_.empty(); }

  // A call thread: runs `message`, then queued calls until none is left.
  void Work(std::list<std::thread>::iterator self, nlohmann::json message) {
    pthread_setname_np(pthread_self(), "tb-mcp-call");
    for (;;) {
      Outcome outcome = server_.Handle(message, exchange_);
      if (outcome.reply) writer_.Write(Dump(*outcome.reply));
      absl::MutexLock lock(&mu_);
      if (queue_.empty()) {
        --running_;
        ended_.splice(ended_.end(), workers_, self);  // joined by the next Dispatch or Drain
        return;
      }
      message = std::move(queue_.front());
      queue_.pop_front();
    }
  }

  McpServer& server_;
  LineWriter& writer_;
  const int max_;
  Exchange exchange_;
  absl::Mutex mu_;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<nlohmann::json> queue_ ABSL_GUARDED_BY(mu_);
  std::list<std::thread> workers_ ABSL_GUARDED_BY(mu_);  // call threads still running
  std::list<std::thread> ended_ ABSL_GUARDED_BY(mu_);    // call threads to join
};

// The reply to a line over kMaxMessageBytes, with the id IdScanner found in
// it (null when it found none).
std::string TooLarge(const IdScanner& scanner) {
  return Dump(ErrorReply(scanner.id(), kInvalidRequest, "Invalid Request: message too large",
                         {{"max_bytes", kMaxMessageBytes}}));
}

}  // namespace

int RunStdio(McpServer& server, int in_fd, int out_fd, int max_concurrent) {
  LineWriter writer(out_fd);
  Dispatcher dispatcher(server, writer, max_concurrent);
  std::string pending;
  // Inside an oversized line: its bytes go through the scanner (for its id)
  // and are dropped; the refusal is written when the line ends.
  std::optional<IdScanner> oversized;
  char buffer[65536];
  while (true) {
    ssize_t n = read(in_fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    size_t start = 0;
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      if (buffer[i] != '\n') continue;
      if (oversized) {
        oversized->Feed(std::string_view(buffer + start, i - start));
      } else {
        pending.append(buffer + start, i - start);
        if (!pending.empty() && pending.back() == '\r') pending.pop_back();
        if (pending.size() > kMaxMessageBytes) {  // completed within this read
          oversized.emplace().Feed(pending);
        } else if (!pending.empty()) {
          dispatcher.Dispatch(std::move(pending));
        }
      }
      if (oversized) writer.Write(TooLarge(*oversized));
      oversized.reset();
      pending.clear();
      start = i + 1;
    }
    std::string_view rest(buffer + start, static_cast<size_t>(n) - start);
    if (oversized) {
      oversized->Feed(rest);
      continue;
    }
    pending.append(rest);
    if (pending.size() > kMaxMessageBytes) {
      oversized.emplace().Feed(pending);
      pending.clear();
    }
  }
  // A last line without its newline is framed like the others ("\r\n" or "\n").
  if (!oversized && !pending.empty() && pending.back() == '\r') pending.pop_back();
  if (oversized) {
    writer.Write(TooLarge(*oversized));  // the input ended inside it
  } else if (!pending.empty()) {
    dispatcher.Dispatch(std::move(pending));
  }
  dispatcher.Drain();
  return 0;
}

}  // namespace termbridge::mcp
