// The stdio transport over real pipes: tool calls beyond the concurrency limit
// wait in a queue while ping and cancellation are answered at once.
#include "agent/mcp/stdio_transport.h"

#include <poll.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "agent/mcp/json_depth.h"
#include "agent/mcp/protocol.h"
#include "gtest/gtest.h"

namespace termbridge::mcp {
namespace {

class StdioTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(pipe(in_), 0);
    ASSERT_EQ(pipe(out_), 0);
    Tool hold;
    hold.definition = {{"name", "hold"}, {"inputSchema", {{"type", "object"}}}};
    hold.handler = [this](const nlohmann::json& args, const CallContext&) {
      release_.WaitForNotification();
      return ToolResult{args, false};
    };
    server_ = std::make_unique<McpServer>("test", "1.0", std::vector<Tool>{hold});
    loop_ = std::thread([this] { RunStdio(*server_, in_[0], out_[1], /*max_concurrent=*/2); });
  }

  void TearDown() override {
    if (!release_.HasBeenNotified()) release_.Notify();
    if (in_[1] >= 0) close(in_[1]);
    if (loop_.joinable()) loop_.join();
    for (int fd : {in_[0], out_[0], out_[1]}) close(fd);
  }

  void Send(const std::string& line) {
    std::string framed = line + "\n";
    ASSERT_EQ(write(in_[1], framed.data(), framed.size()), static_cast<ssize_t>(framed.size()));
  }

  // The next reply line, or null if none came within `timeout_ms`.
  nlohmann::json Next(int timeout_ms = 10000) {
    for (;;) {
      if (size_t nl = buffered_.find('\n'); nl != std::string::npos) {
        std::string line = buffered_.substr(0, nl);
        buffered_.erase(0, nl + 1);
        return nlohmann::json::parse(line);
      }
      struct pollfd p = {out_[0], POLLIN, 0};
      if (poll(&p, 1, timeout_ms) <= 0) return nullptr;
      char buf[4096];
      ssize_t n = read(out_[0], buf, sizeof buf);
      if (n <= 0) return nullptr;
      buffered_.append(buf, static_cast<size_t>(n));
    }
  }

  static std::string Hold(int id) {
    return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
           R"(,"method":"tools/call","params":{"name":"hold","arguments":{"n":)" +
           std::to_string(id) + "}}}";
  }

  int in_[2] = {-1, -1};
  int out_[2] = {-1, -1};
  std::string buffered_;
  absl::Notification release_;
  std::unique_ptr<McpServer> server_;
  std::thread loop_;
};

TEST_F(StdioTest, PingIsAnsweredWhileMoreCallsWaitThanMayRun) {
  for (int id = 1; id <= 4; ++id) Send(Hold(id));  // two run, two wait in the queue
  Send(R"({"jsonrpc":"2.0","id":"p","method":"ping"})");
  nlohmann::json pong = Next();
  ASSERT_FALSE(pong.is_null()) << "ping was stuck behind the waiting calls";
  EXPECT_EQ(pong["id"], "p");
  EXPECT_TRUE(pong.contains("result"));
  // A queued call that is cancelled never runs and gets no reply.
  Send(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}})");
  Send(R"({"jsonrpc":"2.0","id":"q","method":"ping"})");  // after the cancellation was read
  ASSERT_EQ(Next()["id"], "q");
  release_.Notify();
  std::set<int> answered;
  for (int i = 0; i < 3; ++i) {
    nlohmann::json reply = Next();
    ASSERT_FALSE(reply.is_null()) << "a queued call was never run";
    answered.insert(reply["id"].get<int>());
    EXPECT_EQ(reply["result"]["structuredContent"]["n"], reply["id"]);
  }
  EXPECT_EQ(answered, (std::set<int>{1, 2, 3}));
  close(in_[1]);  // end of the session: RunStdio returns once every reply is out
  in_[1] = -1;
  loop_.join();
  EXPECT_TRUE(Next(0).is_null()) << "the cancelled call was answered";
}

// A 2025-03-26 client may send a batch (one line holding an array); one that
// calls a tool runs like a call, so ping is answered while it waits, and its
// replies come back as one array line.
TEST_F(StdioTest, ABatchWithAToolCallWaitsOffTheReadingThread) {
  Send(
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26"}})");
  ASSERT_EQ(Next()["result"]["protocolVersion"], "2025-03-26");
  Send("[" + Hold(1) + R"(,{"jsonrpc":"2.0","id":2,"method":"ping"}])");
  Send(R"({"jsonrpc":"2.0","id":"p","method":"ping"})");
  nlohmann::json pong = Next();
  ASSERT_FALSE(pong.is_null()) << "ping was stuck behind the batch";
  EXPECT_EQ(pong["id"], "p");
  release_.Notify();
  nlohmann::json replies = Next();
  ASSERT_TRUE(replies.is_array()) << replies.dump();
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[0]["id"], 1);
  EXPECT_FALSE(replies[0]["result"].contains("structuredContent"));  // 2025-06-18 on
  EXPECT_EQ(replies[1]["id"], 2);
}

TEST_F(StdioTest, AnOversizedLineIsRefusedWithItsIdAndTheNextOneServed) {
  std::string big = R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":")" +
                    std::string(kMaxMessageBytes, 'x') + "\"}}";
  Send(big);
  Send(R"({"jsonrpc":"2.0","id":2,"method":"ping"})");
  nlohmann::json refused = Next();
  EXPECT_EQ(refused["id"], 1) << "the client can tell which request failed";
  EXPECT_EQ(refused["error"]["code"], -32600) << refused.dump();
  EXPECT_EQ(refused["error"]["data"]["max_bytes"], kMaxMessageBytes);
  nlohmann::json pong = Next();
  EXPECT_EQ(pong["id"], 2) << pong.dump();
  EXPECT_TRUE(pong.contains("result"));
  EXPECT_TRUE(Next(200).is_null()) << "one reply per line";
}

TEST_F(StdioTest, AnOversizedLineWithItsIdLastIsRefusedWithThatId) {
  // The TypeScript SDK writes the id after the params; the refusal comes
  // when the line ends, so the id is known by then.
  std::string big = R"({"method":"tools/call","params":{"pad":")" +
                    std::string(kMaxMessageBytes + 10, 'x') +
                    R"("},"jsonrpc":"2.0","id":"call-7"})";
  Send(big);
  nlohmann::json refused = Next();
  EXPECT_EQ(refused["id"], "call-7") << refused.dump().substr(0, 200);
  EXPECT_EQ(refused["error"]["code"], -32600);
  Send(R"({"jsonrpc":"2.0","id":3,"method":"ping"})");
  EXPECT_EQ(Next()["id"], 3);
}

TEST_F(StdioTest, AMessageNestedTooDeeplyIsRefusedAndTheNextOneServed) {
  // 200,000 '[' once ended the agent with SIGSEGV.
  Send(R"({"jsonrpc":"2.0","method":"ping","params":{"x":)" + std::string(200000, '[') +
       std::string(200000, ']') + R"(},"id":5})");
  Send(R"({"jsonrpc":"2.0","id":6,"method":"ping"})");
  nlohmann::json refused = Next();
  EXPECT_EQ(refused["id"], 5) << refused.dump().substr(0, 200);
  EXPECT_EQ(refused["error"]["code"], -32600);
  EXPECT_EQ(refused["error"]["data"]["max_depth"], kMaxJsonDepth);
  EXPECT_EQ(Next()["id"], 6);
}

// Found by tests/fuzz (jsonrpc_framing, corpus crash-4a700c38): a lone "\r"
// before the end of input was answered with a parse error, though "\r\n"
// is an empty line everywhere else and gets no reply.
TEST_F(StdioTest, ALastLineWithoutItsNewlineIsFramedLikeTheOthers) {
  Send(R"({"jsonrpc":"2.0","id":7,"method":"ping"})");
  std::string tail = "\r\n\r";
  ASSERT_EQ(write(in_[1], tail.data(), tail.size()), static_cast<ssize_t>(tail.size()));
  close(in_[1]);
  in_[1] = -1;
  loop_.join();
  EXPECT_EQ(Next()["id"], 7);
  EXPECT_TRUE(Next(0).is_null()) << "an empty last line was answered";
}

// Found by tests/fuzz (jsonrpc_framing): nlohmann's parser stops at a NUL
// byte, so a request followed by NUL and anything at all was served.
TEST_F(StdioTest, ALineWithANulByteIsAParseError) {
  Send(std::string(R"({"jsonrpc":"2.0","id":8,"method":"ping"})") + '\0' + "junk");
  nlohmann::json reply = Next();
  EXPECT_TRUE(reply["id"].is_null()) << reply.dump();
  EXPECT_EQ(reply["error"]["code"], kParseError) << reply.dump();
  Send(R"({"jsonrpc":"2.0","id":9,"method":"ping"})");
  EXPECT_EQ(Next()["id"], 9);
}

// How many threads of this process do not carry `name` (/proc/self/task/*/comm).
size_t ThreadsNotNamed(const std::string& name) {
  size_t n = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string line;
    if (std::getline(comm, line) && line != name) ++n;
  }
  return n;
}

// Found by tests/fuzz (jsonrpc_framing, a leak report): tool calls ran on
// detached threads that could still be ending, holding the request and
// about to unlock the transport's mutex, after RunStdio had returned. (The
// handlers' own threads may outlive a cancelled call by design, see
// tool_call.h; they are named tb-mcp-handler and not counted.)
TEST(StdioWorkersTest, RunStdioReturnsOnlyAfterEveryCallThreadHasEnded) {
  Tool echo;
  echo.definition = {{"name", "echo"}, {"inputSchema", {{"type", "object"}}}};
  echo.handler = [](const nlohmann::json& args, const CallContext&) {
    return ToolResult{args, false};
  };
  McpServer server("test", "1.0", {echo});
  const size_t before = ThreadsNotNamed("tb-mcp-handler");
  for (int round = 0; round < 20; ++round) {
    int in[2], out[2];
    ASSERT_EQ(pipe(in), 0);
    ASSERT_EQ(pipe(out), 0);
    std::string calls;
    for (int id = 1; id <= 8; ++id) {
      calls += R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
               R"(,"method":"tools/call","params":{"name":"echo","arguments":{"pad":")" +
               std::string(100000, 'x') + "\"}}}\n";
    }
    std::thread reader([fd = out[0]] {
      char buf[65536];
      while (read(fd, buf, sizeof buf) > 0) {
      }
    });
    std::thread writer([fd = in[1], &calls] {
      for (size_t done = 0; done < calls.size();) {
        ssize_t n = write(fd, calls.data() + done, calls.size() - done);
        if (n <= 0) break;
        done += static_cast<size_t>(n);
      }
      close(fd);
    });
    RunStdio(server, in[0], out[1], /*max_concurrent=*/4);
    writer.join();  // it closed the pipe, which is what ended RunStdio
    EXPECT_EQ(ThreadsNotNamed("tb-mcp-handler"), before + 1)  // + the reader
        << "round " << round << ": a call thread outlived RunStdio";
    close(out[1]);
    reader.join();
    close(in[0]);
    close(out[0]);
  }
}

}  // namespace
}  // namespace termbridge::mcp
