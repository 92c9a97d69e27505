// Line framing and concurrency for the stdio transport.
#include "agent/mcp/stdio_transport.h"

#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
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

}  // namespace

int RunStdio(McpServer& server, int in_fd, int out_fd, int max_concurrent) {
  LineWriter writer(out_fd);
  Sink notify = [&writer](const nlohmann::json& message) { writer.Write(message.dump()); };
  absl::Mutex mu;
  int running = 0;
  struct Room {
    int* running;
    int max;
  } room{&running, max_concurrent};

  auto dispatch = [&](std::string line) {
    {
      absl::MutexLock lock(&mu);
      mu.Await(absl::Condition(+[](Room* r) { return *r->running < r->max; }, &room));
      ++running;
    }
    std::thread([&, line = std::move(line)] {
      std::optional<std::string> reply = server.HandleText(line, notify);
      if (reply) writer.Write(*reply);
      absl::MutexLock lock(&mu);
      --running;
    }).detach();
  };

  std::string pending;
  bool discarding = false;  // inside an oversized line: drop bytes until its newline
  char buffer[65536];
  while (true) {
    ssize_t n = read(in_fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    size_t start = 0;
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      if (buffer[i] != '\n') continue;
      if (!discarding) {
        pending.append(buffer + start, i - start);
        if (!pending.empty() && pending.back() == '\r') pending.pop_back();
        if (!pending.empty()) dispatch(std::move(pending));
      }
      pending.clear();
      discarding = false;
      start = i + 1;
    }
    if (!discarding) pending.append(buffer + start, static_cast<size_t>(n) - start);
    if (!discarding && pending.size() > kMaxMessageBytes) {
      writer.Write(ErrorReply(nullptr, -32600, "message too large",
                              {{"max_bytes", kMaxMessageBytes}})
                       .dump());
      pending.clear();
      discarding = true;
    }
  }
  if (!discarding && !pending.empty()) dispatch(std::move(pending));
  absl::MutexLock lock(&mu);
  mu.Await(absl::Condition(+[](int* count) { return *count == 0; }, &running));
  return 0;
}

}  // namespace termbridge::mcp
