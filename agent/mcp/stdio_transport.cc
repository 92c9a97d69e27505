// Line framing and concurrency for the stdio transport.
#include "agent/mcp/stdio_transport.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "absl/synchronization/mutex.h"
#include "agent/mcp/id_scanner.h"
#include "agent/mcp/json_depth.h"
#include "agent/mcp/tool_call.h"
#include "common/thread/named_thread.h"
#include "spdlog/spdlog.h"

namespace termbridge::mcp {
namespace {

// True when `message` is, or is a batch (2025-03-26) holding, a tools/call
// request: it may wait long, so it runs on a call thread.
bool CallsATool(const nlohmann::json& message) {
  auto is_call = [](const nlohmann::json& request) {
    return StringField(request, "method") == "tools/call" && request.contains("id");
  };
  if (!message.is_array()) return is_call(message);
  return std::any_of(message.begin(), message.end(), is_call);
}

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

// Tool calls (and batches holding one) run on call threads ("tb-mcp-call"),
// at most `max` at once; more wait in a queue (up to kMaxQueued, then they
// are refused as busy). Everything else (ping, initialize, tools/list, notifications,
// cancellations and responses) is handled on the reading thread at once, so
// a cancellation or a client's answer is never stuck behind the calls it
// concerns, however many wait. calls_ joins a call thread that ended at the
// next Dispatch, and Drain joins the rest, so none outlives RunStdio.
class Dispatcher {
 public:
  static constexpr size_t kMaxQueued = 256;

  // `handlers`: where the calls' tool handlers run (RunStdio joins them).
  Dispatcher(McpServer& server, LineWriter& writer, int max, thread::ThreadGroup& handlers)
      : server_(server),
        writer_(writer),
        max_(max),
        // A call thread leaves running_ just before its body returns: twice
        // `max` is room the dispatcher's own bound can never exceed.
        calls_("tb-mcp-call", 2 * static_cast<size_t>(max)) {
    exchange_.notify = [this](const nlohmann::json& message) { writer_.Write(Dump(message)); };
    exchange_.handlers = &handlers;
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
    if (!CallsATool(message)) {
      Outcome outcome = server_.Handle(message, exchange_);
      if (outcome.reply) writer_.Write(Dump(*outcome.reply));
      return;
    }
    const nlohmann::json id = AnyField(message, "id");
    {
      absl::MutexLock lock(&mu_);
      if (running_ >= max_) {
        if (queue_.size() < kMaxQueued) {
          queue_.push_back(std::move(message));
          return;
        }
        writer_.Write(Dump(
            ErrorReply(id, kServerBusy,
                       "Server busy: too many tool calls in flight; retry when one has finished",
                       {{"running", running_}, {"queued", queue_.size()}})));
        return;
      }
      ++running_;
    }
    // Only this (the reading) thread queues, so nothing was queued meanwhile.
    absl::Status started =
        calls_.Start([this, message = std::move(message)]() mutable { Work(std::move(message)); });
    if (!started.ok()) {
      {
        absl::MutexLock lock(&mu_);
        --running_;
      }
      writer_.Write(
          Dump(ErrorReply(id, kServerBusy, "Server busy: cannot start a call thread; retry later",
                          {{"reason", std::string(started.message())}})));
    }
  }

  // Blocks until every call, queued or running, has written its reply and
  // every call thread has ended.
  void Drain() {
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &Dispatcher::Idle));
    }
    calls_.JoinAll();
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
  void Work(nlohmann::json message) {
    for (;;) {
      Outcome outcome = server_.Handle(message, exchange_);
      if (outcome.reply) writer_.Write(Dump(*outcome.reply));
      absl::MutexLock lock(&mu_);
      if (queue_.empty()) {
        --running_;
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
  thread::ThreadGroup calls_;  // last: its threads use the members above until joined
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
  // Declared before the dispatcher: calls wait on their handlers, and a
  // cancelled call's handler may outlive its call thread.
  thread::ThreadGroup handlers("tb-mcp-handler", kMaxToolHandlers);
  Dispatcher dispatcher(server, writer, max_concurrent, handlers);
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
  handlers.JoinAll();  // abandoned handlers: each ends when the broker answers
  return 0;
}

}  // namespace termbridge::mcp
