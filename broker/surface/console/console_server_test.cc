// ConsoleServer end to end against a fake operator service on a real unix
// socket: HTTP access rules (token, cookie, Origin), the events feed,
// approval decisions, a live attach with input/resize/signal, flow control
// against a flooding terminal, a failed attach, and Stop with everything
// open. The clients are Beast's synchronous HTTP and WebSocket clients.
#include "broker/surface/console/console_server.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "boost/asio.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "boost/beast/websocket.hpp"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "termbridge/v1/broker.grpc.pb.h"

namespace termbridge::console {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using nlohmann::json;

constexpr char kToken[] = "operator-token-for-tests";
constexpr size_t kChunk = 64 << 10;
constexpr uint64_t kFloodBytes = 4 << 20;

// ---------------------------------------------------------------- fake broker

class HeldExport;

// What the fake operator service saw.
struct Seen {
  absl::Mutex mu;
  std::vector<v1::AttachClientFrame> frames ABSL_GUARDED_BY(mu);
  std::vector<v1::DecideApprovalRequest> decisions ABSL_GUARDED_BY(mu);
  std::vector<v1::SetLockRequest> locks ABSL_GUARDED_BY(mu);
  std::string audit_log ABSL_GUARDED_BY(mu);  // what GetBrokerInfo answers
  // ExportRecording streams wait open after their first chunk while set.
  bool hold_exports ABSL_GUARDED_BY(mu) = false;
  std::vector<HeldExport*> held_exports ABSL_GUARDED_BY(mu);
  int attach_done ABSL_GUARDED_BY(mu) = 0;
  int watches_done ABSL_GUARDED_BY(mu) = 0;

  // Waits until `predicate` holds on the frames seen so far.
  using FramesPredicate = std::function<bool(const std::vector<v1::AttachClientFrame>&)>;
  bool WaitFrames(const FramesPredicate& predicate) {
    struct Arg {
      Seen* seen;
      const FramesPredicate* predicate;
    } arg{this, &predicate};
    absl::MutexLock lock(&mu);
    return mu.AwaitWithTimeout(
        absl::Condition(
            +[](Arg* a) ABSL_NO_THREAD_SAFETY_ANALYSIS { return (*a->predicate)(a->seen->frames); },
            &arg),
        absl::Seconds(10));
  }
};

// Attach: "t_echo" echoes input as output until cancelled; "t_flood" writes
// kFloodBytes of numbered output, then exits; "t_stall" stops reading after
// its first input (a program that does not read); "t_missing" is NOT_FOUND.
class FakeAttach final
    : public grpc::ServerBidiReactor<v1::AttachClientFrame, v1::AttachServerFrame> {
 public:
  FakeAttach(Seen* seen, grpc::CallbackServerContext* context) : seen_(seen), context_(context) {
    StartRead(&in_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;
    {
      absl::MutexLock lock(&seen_->mu);
      seen_->frames.push_back(in_);
    }
    if (in_.has_resume()) {
      std::string id = in_.resume().terminal_id();
      absl::MutexLock lock(&mu_);
      if (id == "t_missing") {
        finish_ = true;
        v1::ErrorDetail detail;
        detail.set_code("PM_TERM_NOT_FOUND");
        detail.set_message("no terminal t_missing");
        status_ = grpc::Status(grpc::StatusCode::NOT_FOUND, "not found");
        trailer_ = detail.SerializeAsString();
      } else if (id == "t_flood") {
        flood_ = true;
      } else if (id == "t_stall") {
        stall_ = true;
      }
    } else if (in_.has_input()) {
      absl::MutexLock lock(&mu_);
      if (stall_) return;  // no StartRead: flow control backs up into the console
    }
    if (in_.has_input()) {
      absl::MutexLock lock(&mu_);
      v1::AttachServerFrame frame;
      frame.mutable_output()->set_offset(offset_);
      frame.mutable_output()->set_data(in_.input());
      offset_ += in_.input().size();
      queue_.push_back(std::move(frame));
    }
    Pump();
    absl::MutexLock lock(&mu_);
    if (!finished_) StartRead(&in_);  // under the lock: never after Finish
  }

  void OnWriteDone(bool ok) override {
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      if (!ok) finish_ = true;
    }
    Pump();
  }

  void OnCancel() override {
    {
      absl::MutexLock lock(&mu_);
      finish_ = true;
      status_ = grpc::Status::CANCELLED;
    }
    Pump();
  }

  void OnDone() override {
    {
      absl::MutexLock lock(&seen_->mu);
      ++seen_->attach_done;
    }
    delete this;
  }

 private:
  void Pump() {
    bool write = false;
    bool finish = false;
    {
      absl::MutexLock lock(&mu_);
      if (writing_ || finished_) return;
      if (flood_ && queue_.empty() && !finish_) {
        if (offset_ < kFloodBytes) {
          v1::AttachServerFrame frame;
          frame.mutable_output()->set_offset(offset_);
          std::string data(kChunk, '\0');
          for (size_t i = 0; i < kChunk; ++i) data[i] = static_cast<char>('a' + (offset_ + i) % 26);
          frame.mutable_output()->set_data(std::move(data));
          offset_ += kChunk;
          queue_.push_back(std::move(frame));
        } else if (!exited_sent_) {
          v1::AttachServerFrame frame;
          frame.mutable_exited()->set_exit_code(0);
          queue_.push_back(std::move(frame));
          exited_sent_ = true;
        } else {
          finish_ = true;
          status_ = grpc::Status::OK;
        }
      }
      if (!queue_.empty() && !finish_) {
        out_ = std::move(queue_.front());
        queue_.pop_front();
        writing_ = write = true;
      } else if (finish_) {
        finished_ = finish = true;
        if (!trailer_.empty()) context_->AddTrailingMetadata("termbridge-error-bin", trailer_);
      }
    }
    if (write) StartWrite(&out_);
    if (finish) Finish(status_);
  }

  Seen* const seen_;
  grpc::CallbackServerContext* const context_;
  v1::AttachClientFrame in_;
  absl::Mutex mu_;
  v1::AttachServerFrame out_;
  std::deque<v1::AttachServerFrame> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t offset_ ABSL_GUARDED_BY(mu_) = 0;
  bool flood_ ABSL_GUARDED_BY(mu_) = false;
  bool stall_ ABSL_GUARDED_BY(mu_) = false;
  bool exited_sent_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finish_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status status_ ABSL_GUARDED_BY(mu_);
  std::string trailer_ ABSL_GUARDED_BY(mu_);
};

// ExportRecording: one chunk (a header and one output event), then the end;
// while Seen::hold_exports is set, open until ReleaseExports or cancelled.
class HeldExport final : public grpc::ServerWriteReactor<v1::RecordingChunk> {
 public:
  explicit HeldExport(Seen* seen) : seen_(seen) {
    chunk_.set_asciicast(
        "{\"version\": 2, \"width\": 80, \"height\": 24}\n[0.5, \"o\", \"held\"]\n");
    chunk_.add_output_offsets(7);
    StartWrite(&chunk_);
  }
  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&seen_->mu);
    if (!ok || !seen_->hold_exports) {
      EndLocked(grpc::Status::OK);
      return;
    }
    seen_->held_exports.push_back(this);
  }
  void OnCancel() override {
    absl::MutexLock lock(&seen_->mu);
    EndLocked(grpc::Status::CANCELLED);
  }
  void OnDone() override {
    {
      absl::MutexLock lock(&seen_->mu);
      auto& held = seen_->held_exports;
      held.erase(std::remove(held.begin(), held.end(), this), held.end());
    }
    delete this;
  }
  // Finishes the stream once (gRPC runs OnDone later, on its own thread).
  void EndLocked(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(seen_->mu) {
    if (ended_) return;
    ended_ = true;
    Finish(status);
  }

 private:
  Seen* const seen_;
  v1::RecordingChunk chunk_;
  bool ended_ ABSL_GUARDED_BY(seen_->mu) = false;
};

// A server stream that sends `events` and then stays open until cancelled.
template <typename Event>
class FakeWatch final : public grpc::ServerWriteReactor<Event> {
 public:
  FakeWatch(Seen* seen, std::vector<Event> events) : seen_(seen), events_(std::move(events)) {
    Next();
  }
  void OnWriteDone(bool ok) override {
    if (ok) Next();
  }
  void OnCancel() override { this->Finish(grpc::Status::CANCELLED); }
  void OnDone() override {
    {
      absl::MutexLock lock(&seen_->mu);
      ++seen_->watches_done;
    }
    delete this;
  }

 private:
  void Next() {
    if (next_ < events_.size()) this->StartWrite(&events_[next_++]);
  }
  Seen* const seen_;
  std::vector<Event> events_;
  size_t next_ = 0;
};

class FakeOperator final : public v1::TerminalOperator::CallbackService {
 public:
  Seen seen;

  grpc::ServerBidiReactor<v1::AttachClientFrame, v1::AttachServerFrame>* Attach(
      grpc::CallbackServerContext* context) override {
    return new FakeAttach(&seen, context);
  }

  grpc::ServerWriteReactor<v1::TerminalEvent>* WatchTerminals(
      grpc::CallbackServerContext*, const v1::WatchTerminalsRequest*) override {
    v1::TerminalEvent opened;
    opened.set_kind("opened");
    opened.mutable_terminal()->set_terminal_id("t_echo");
    opened.mutable_terminal()->set_agent_id("agent-1");
    opened.mutable_terminal()->mutable_exit()->set_running(true);
    v1::TerminalEvent done;
    done.set_kind("snapshot_done");
    return new FakeWatch<v1::TerminalEvent>(&seen, {opened, done});
  }

  grpc::ServerWriteReactor<v1::ApprovalEvent>* WatchApprovals(
      grpc::CallbackServerContext*, const v1::ListApprovalsRequest*) override {
    v1::ApprovalEvent requested;
    requested.set_kind("requested");
    requested.mutable_approval()->set_approval_id("a_1");
    requested.mutable_approval()->set_command("touch /tmp/x");
    requested.mutable_approval()->mutable_state()->set_state("pending");
    v1::ApprovalEvent done;
    done.set_kind("snapshot_done");
    return new FakeWatch<v1::ApprovalEvent>(&seen, {requested, done});
  }

  grpc::ServerUnaryReactor* DecideApproval(grpc::CallbackServerContext* context,
                                           const v1::DecideApprovalRequest* request,
                                           v1::DecideApprovalResponse* response) override {
    {
      absl::MutexLock lock(&seen.mu);
      seen.decisions.push_back(*request);
    }
    response->mutable_approval()->set_approval_id(request->approval_id());
    // Echo the decision, so a test can tell the console passed it on.
    response->mutable_approval()->mutable_state()->set_state(
        request->decision() == "deny" ? "denied" : "approved");
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* SetLock(grpc::CallbackServerContext* context,
                                    const v1::SetLockRequest* request,
                                    v1::SetLockResponse* response) override {
    {
      absl::MutexLock lock(&seen.mu);
      seen.locks.push_back(*request);
    }
    response->set_mode(request->mode());
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* GetBrokerInfo(grpc::CallbackServerContext* context,
                                          const v1::BrokerInfoRequest*,
                                          v1::BrokerInfo* response) override {
    {
      absl::MutexLock lock(&seen.mu);
      response->set_audit_log(seen.audit_log);
    }
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerWriteReactor<v1::RecordingChunk>* ExportRecording(
      grpc::CallbackServerContext*, const v1::ExportRecordingRequest*) override {
    return new HeldExport(&seen);
  }

  // Waits until `n` exports are held open.
  bool WaitHeldExports(size_t n) {
    std::pair<Seen*, size_t> arg(&seen, n);
    absl::MutexLock lock(&seen.mu);
    return seen.mu.AwaitWithTimeout(
        absl::Condition(
            +[](std::pair<Seen*, size_t>* a) ABSL_NO_THREAD_SAFETY_ANALYSIS {
              return a->first->held_exports.size() >= a->second;
            },
            &arg),
        absl::Seconds(10));
  }

  // Ends the held exports; later ones end after their chunk.
  void ReleaseExports() {
    absl::MutexLock lock(&seen.mu);
    seen.hold_exports = false;
    for (HeldExport* held : seen.held_exports) held->EndLocked(grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ListAll(grpc::CallbackServerContext* context, const v1::ListRequest*,
                                    v1::ListResponse* response) override {
    response->add_sessions()->set_terminal_id("t_echo");
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

// ---------------------------------------------------------------- clients

struct HttpResult {
  int status = 0;
  std::string body;
  http::response<http::string_body> response;
};

HttpResult Fetch(int port, http::verb method, const std::string& target,
                 std::vector<std::pair<std::string, std::string>> headers = {},
                 std::string body = "") {
  asio::io_context ioc;
  tcp::socket socket(ioc);
  beast::error_code ec;
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  EXPECT_FALSE(ec) << ec.message();
  http::request<http::string_body> request(method, target, 11);
  request.set(http::field::host, absl::StrCat("127.0.0.1:", port));
  for (auto& [name, value] : headers) request.set(name, value);
  request.body() = std::move(body);
  request.prepare_payload();
  http::write(socket, request, ec);
  beast::flat_buffer buffer;
  HttpResult result;
  http::read(socket, buffer, result.response, ec);
  EXPECT_FALSE(ec) << ec.message();
  result.status = result.response.result_int();
  result.body = result.response.body();
  return result;
}

std::pair<std::string, std::string> Bearer() {
  return {"Authorization", absl::StrCat("Bearer ", kToken)};
}

// A WebSocket client whose reads run on their own thread, so a test can
// wait for "at least N bytes" with a deadline.
class PageSocket {
 public:
  ~PageSocket() {
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).shutdown(tcp::socket::shutdown_both, ignored);
    if (reader_.joinable()) reader_.join();
  }

  // Returns the HTTP status of the upgrade (101 on success).
  int Connect(int port, const std::string& target, const std::string& origin, bool with_token) {
    beast::error_code ec;
    beast::get_lowest_layer(ws_).connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port),
                                         ec);
    if (ec) return -1;
    ws_.set_option(
        websocket::stream_base::decorator([origin, with_token](websocket::request_type& r) {
          if (!origin.empty()) r.set(http::field::origin, origin);
          if (with_token) r.set(http::field::authorization, absl::StrCat("Bearer ", kToken));
        }));
    websocket::response_type response;
    ws_.handshake(response, absl::StrCat("127.0.0.1:", port), target, ec);
    if (!ec) reader_ = std::thread([this] { ReadLoop(); });
    return response.result_int();
  }

  void SendText(const std::string& text) {
    absl::MutexLock lock(&write_mu_);
    beast::error_code ec;
    ws_.text(true);
    ws_.write(asio::buffer(text), ec);
  }
  void SendBinary(const std::string& data) {
    absl::MutexLock lock(&write_mu_);
    beast::error_code ec;
    ws_.binary(true);
    ws_.write(asio::buffer(data), ec);
  }

  // Waits until the output received reaches `bytes`; false after `timeout`.
  bool WaitOutput(uint64_t bytes, absl::Duration timeout = absl::Seconds(10)) {
    std::pair<PageSocket*, uint64_t> arg(this, bytes);
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(
        absl::Condition(
            +[](std::pair<PageSocket*, uint64_t>* a)
                 ABSL_NO_THREAD_SAFETY_ANALYSIS { return a->first->output_.size() >= a->second; },
            &arg),
        timeout);
  }
  // Waits for a text message of `type`; returns it or null JSON.
  json WaitText(const std::string& type, absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock lock(&mu_);
    auto found = [&]() -> json {
      for (const json& message : texts_) {
        if (message.value("type", "") == type) return message;
      }
      return nullptr;
    };
    mu_.AwaitWithTimeout(absl::Condition(
                             +[](decltype(found)* f) { return !(*f)().is_null(); }, &found),
                         timeout);
    return found();
  }
  bool WaitClosed(absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&closed_), timeout);
  }
  std::string output() {
    absl::MutexLock lock(&mu_);
    return output_;
  }
  std::vector<json> texts() {
    absl::MutexLock lock(&mu_);
    return texts_;
  }
  uint64_t next_offset() {
    absl::MutexLock lock(&mu_);
    return next_offset_;
  }
  bool offsets_contiguous() {
    absl::MutexLock lock(&mu_);
    return contiguous_;
  }

 private:
  void ReadLoop() {
    for (;;) {
      beast::flat_buffer buffer;
      beast::error_code ec;
      ws_.read(buffer, ec);
      absl::MutexLock lock(&mu_);
      if (ec) {
        closed_ = true;
        return;
      }
      std::string message = beast::buffers_to_string(buffer.data());
      if (ws_.got_text()) {
        texts_.push_back(json::parse(message));
        continue;
      }
      uint64_t offset = 0;
      for (int i = 0; i < 8; ++i) offset = offset << 8 | static_cast<unsigned char>(message[i]);
      if (offset != next_offset_) contiguous_ = false;
      output_ += message.substr(8);
      next_offset_ = offset + message.size() - 8;
    }
  }

  asio::io_context ioc_;
  websocket::stream<tcp::socket> ws_{ioc_};
  std::thread reader_;
  absl::Mutex write_mu_;
  absl::Mutex mu_;
  std::string output_ ABSL_GUARDED_BY(mu_);
  std::vector<json> texts_ ABSL_GUARDED_BY(mu_);
  uint64_t next_offset_ ABSL_GUARDED_BY(mu_) = 0;
  bool contiguous_ ABSL_GUARDED_BY(mu_) = true;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

// ---------------------------------------------------------------- fixture

class ConsoleServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir = ::testing::TempDir() + "tb-console-XXXXXX";  // short: a socket lives here
    ASSERT_NE(mkdtemp(dir.data()), nullptr);
    dir_ = dir;
    socket_ = dir_ + "/operator.sock";
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + socket_, grpc::InsecureServerCredentials());
    builder.RegisterService(&fake_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ConsoleOptions options;
    options.listen = "127.0.0.1:0";
    options.operator_token = kToken;
    options.operator_socket = socket_;
    options.assets_dir = TB_CONSOLE_ASSETS_DIR;
    auto console = ConsoleServer::Start(options);
    ASSERT_TRUE(console.ok()) << console.status();
    console_ = *std::move(console);
    port_ = console_->port();
    origin_ = absl::StrCat("http://127.0.0.1:", port_);
  }

  void TearDown() override {
    if (console_) console_->Stop();
    if (server_) server_->Shutdown();
    std::string command = "rm -rf " + dir_;
    std::system(command.c_str());
  }

  FakeOperator fake_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<ConsoleServer> console_;
  std::string dir_;
  std::string socket_;
  std::string origin_;
  int port_ = 0;
};

TEST_F(ConsoleServerTest, EveryRequestNeedsTheToken) {
  EXPECT_EQ(Fetch(port_, http::verb::get, "/").status, 401);
  EXPECT_EQ(Fetch(port_, http::verb::get, "/app.js").status, 401);
  EXPECT_EQ(Fetch(port_, http::verb::get, "/api/terminals").status, 401);
  EXPECT_EQ(Fetch(port_, http::verb::get, "/?token=wrong").status, 401);
  EXPECT_EQ(Fetch(port_, http::verb::get, "/", {{"Authorization", "Bearer wrong"}}).status, 401);
  HttpResult page = Fetch(port_, http::verb::get, "/", {Bearer()});
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("app.js"), std::string::npos);
  std::string csp(page.response["Content-Security-Policy"]);
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos);
  EXPECT_NE(csp.find(absl::StrCat("ws://127.0.0.1:", port_)), std::string::npos);
}

TEST_F(ConsoleServerTest, TheLinkSwapsTheTokenForACookie) {
  std::string url = console_->login_url();
  EXPECT_EQ(url, absl::StrCat("http://127.0.0.1:", port_, "/?token=", kToken));
  HttpResult login = Fetch(port_, http::verb::get, absl::StrCat("/?token=", kToken));
  ASSERT_EQ(login.status, 303);
  EXPECT_EQ(login.response[http::field::location], "/");
  std::string cookie(login.response[http::field::set_cookie]);
  EXPECT_EQ(cookie.find(kToken), std::string::npos);
  EXPECT_NE(cookie.find("HttpOnly"), std::string::npos);
  cookie = cookie.substr(0, cookie.find(';'));
  EXPECT_EQ(Fetch(port_, http::verb::get, "/", {{"Cookie", cookie}}).status, 200);
  HttpResult xterm = Fetch(port_, http::verb::get, "/xterm.js", {{"Cookie", cookie}});
  EXPECT_EQ(xterm.status, 200);
  EXPECT_EQ(xterm.response[http::field::content_type], "text/javascript; charset=utf-8");
  EXPECT_EQ(Fetch(port_, http::verb::get, "/", {{"Cookie", cookie + "x"}}).status, 401);
}

TEST_F(ConsoleServerTest, OnlyPlainAssetNamesAreServed) {
  EXPECT_EQ(Fetch(port_, http::verb::get, "/../CMakeLists.txt", {Bearer()}).status, 404);
  EXPECT_EQ(Fetch(port_, http::verb::get, "/.hidden.js", {Bearer()}).status, 404);
  EXPECT_EQ(Fetch(port_, http::verb::get, "/nope.js", {Bearer()}).status, 404);
  EXPECT_EQ(Fetch(port_, http::verb::get, "/style.css", {Bearer()}).status, 200);
}

TEST_F(ConsoleServerTest, ForeignOriginsAreRefused) {
  EXPECT_EQ(
      Fetch(port_, http::verb::post, "/api/approvals/decide",
            {Bearer(), {"Origin", "http://127.0.0.1:8080"}, {"Content-Type", "application/json"}},
            R"({"approval_id":"a_1","decision":"once"})")
          .status,
      403);
  PageSocket foreign;
  EXPECT_EQ(foreign.Connect(port_, "/ws/events", "http://evil.example", true), 403);
  PageSocket anonymous;
  EXPECT_EQ(anonymous.Connect(port_, "/ws/events", origin_, false), 401);
  absl::MutexLock lock(&fake_.seen.mu);
  EXPECT_TRUE(fake_.seen.decisions.empty());
}

TEST_F(ConsoleServerTest, DecisionsGoToTheBrokerFromTheConsoleSurface) {
  EXPECT_EQ(Fetch(port_, http::verb::post, "/api/approvals/decide", {Bearer()},
                  R"({"approval_id":"a_1","decision":"once"})")
                .status,
            415);  // not JSON: a cross-site form cannot post here
  EXPECT_EQ(Fetch(port_, http::verb::post, "/api/approvals/decide",
                  {Bearer(), {"Content-Type", "application/json"}},
                  R"({"approval_id":"a_1","decision":"perhaps"})")
                .status,
            400);
  HttpResult decided = Fetch(port_, http::verb::post, "/api/approvals/decide",
                             {Bearer(), {"Origin", origin_}, {"Content-Type", "application/json"}},
                             R"({"approval_id":"a_1","decision":"deny","note":"not today"})");
  ASSERT_EQ(decided.status, 200) << decided.body;
  EXPECT_EQ(json::parse(decided.body)["approval"]["state"]["state"], "denied");
  absl::MutexLock lock(&fake_.seen.mu);
  ASSERT_EQ(fake_.seen.decisions.size(), 1u);
  EXPECT_EQ(fake_.seen.decisions[0].surface(), "console");
  EXPECT_EQ(fake_.seen.decisions[0].decision(), "deny");
  EXPECT_EQ(fake_.seen.decisions[0].note(), "not today");
}

TEST_F(ConsoleServerTest, UnimplementedRpcsAnswer501) {
  HttpResult policy = Fetch(port_, http::verb::get, "/api/policy", {Bearer()});
  EXPECT_EQ(policy.status, 501);
  EXPECT_EQ(json::parse(policy.body)["error"]["status"], "UNIMPLEMENTED");
  HttpResult list = Fetch(port_, http::verb::get, "/api/terminals", {Bearer()});
  EXPECT_EQ(list.status, 200);
  EXPECT_EQ(json::parse(list.body)["sessions"][0]["terminal_id"], "t_echo");
}

// Rename and hand-over pass the same checks as every POST (token, Origin,
// JSON); the recording routes check their parameters before any call.
TEST_F(ConsoleServerTest, RenameHandAndSearchKeepTheAccessRules) {
  for (const char* route : {"/api/terminals/rename", "/api/terminals/hand"}) {
    const std::string body = R"({"terminal_id":"t_echo","name":"n","agent_id":"a"})";
    EXPECT_EQ(
        Fetch(port_, http::verb::post, route, {{"Content-Type", "application/json"}}, body).status,
        401)
        << route;
    EXPECT_EQ(
        Fetch(port_, http::verb::post, route,
              {Bearer(), {"Origin", "http://evil.example"}, {"Content-Type", "application/json"}},
              body)
            .status,
        403)
        << route;
    EXPECT_EQ(Fetch(port_, http::verb::post, route, {Bearer()}, body).status, 415) << route;
    EXPECT_EQ(Fetch(port_, http::verb::post, route,
                    {Bearer(), {"Origin", origin_}, {"Content-Type", "application/json"}}, "{}")
                  .status,
              400)
        << route;
    // Well formed: it reaches the broker (whose fake does not implement it).
    EXPECT_EQ(Fetch(port_, http::verb::post, route,
                    {Bearer(), {"Origin", origin_}, {"Content-Type", "application/json"}}, body)
                  .status,
              501)
        << route;
  }
  EXPECT_EQ(Fetch(port_, http::verb::get, "/api/recordings/search?terminal_id=t_echo&q=x").status,
            401);
  for (const char* bad : {"/api/recordings/search?q=x", "/api/recordings/search?terminal_id=t_echo",
                          "/api/recordings/search?terminal_id=t_echo&q=%1b%5b31m",
                          "/api/recordings/search?terminal_id=t_echo&q=x&from=-1",
                          "/api/recordings/cast?terminal_id=t_echo&at=soon"}) {
    EXPECT_EQ(Fetch(port_, http::verb::get, bad, {Bearer()}).status, 400) << bad;
  }
  // A search that ended frees its place: more than two in a row run.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(
        Fetch(port_, http::verb::get, "/api/recordings/search?terminal_id=t_echo&q=x", {Bearer()})
            .status,
        200);
  }
}

// A page on another port of localhost gets the cookie on its <img src> and
// sends no Origin there: the browser's Sec-Fetch-Site tells it apart.
TEST_F(ConsoleServerTest, ApiRequestsFromAnotherPageAreRefused) {
  const std::string search = "/api/recordings/search?terminal_id=t_echo&q=x";
  for (const char* site : {"same-site", "cross-site"}) {
    HttpResult refused =
        Fetch(port_, http::verb::get, search, {Bearer(), {"Sec-Fetch-Site", site}});
    EXPECT_EQ(refused.status, 403) << site;
    EXPECT_EQ(json::parse(refused.body)["error"]["status"], "PERMISSION_DENIED") << refused.body;
    EXPECT_EQ(Fetch(port_, http::verb::get, "/api/recordings/cast?terminal_id=t_echo",
                    {Bearer(), {"Sec-Fetch-Site", site}})
                  .status,
              403)
        << site;
  }
  // The console's own page, and the person opening an address.
  EXPECT_EQ(
      Fetch(port_, http::verb::get, search, {Bearer(), {"Sec-Fetch-Site", "same-origin"}}).status,
      200);
  EXPECT_EQ(Fetch(port_, http::verb::get, "/api/terminals", {Bearer(), {"Sec-Fetch-Site", "none"}})
                .status,
            200);
}

// Each replay window may hold tens of MiB: a third one waits its turn.
TEST_F(ConsoleServerTest, AtMostTwoReplaysLoadAtOnce) {
  const std::string cast = "/api/recordings/cast?terminal_id=t_echo&at=7";
  {
    absl::MutexLock lock(&fake_.seen.mu);
    fake_.seen.hold_exports = true;
  }
  std::vector<HttpResult> loaded(2);
  std::vector<std::thread> loading;
  for (HttpResult& result : loaded) {
    loading.emplace_back([&] { result = Fetch(port_, http::verb::get, cast, {Bearer()}); });
  }
  ASSERT_TRUE(fake_.WaitHeldExports(2));
  HttpResult third = Fetch(port_, http::verb::get, cast, {Bearer()});
  EXPECT_EQ(third.status, 503);
  EXPECT_EQ(json::parse(third.body)["error"]["status"], "UNAVAILABLE");
  EXPECT_NE(third.body.find("two replays are loading already"), std::string::npos) << third.body;
  fake_.ReleaseExports();
  for (std::thread& t : loading) t.join();
  for (const HttpResult& result : loaded) {
    ASSERT_EQ(result.status, 200) << result.body;
    // The event is where the stream said, not where counting from 0 puts it.
    EXPECT_EQ(json::parse(result.body)["offsets"], json::array({7})) << result.body;
  }
  // Loaded ones free their places.
  EXPECT_EQ(Fetch(port_, http::verb::get, cast, {Bearer()}).status, 200);
  EXPECT_EQ(Fetch(port_, http::verb::get, cast, {Bearer()}).status, 200);
  EXPECT_EQ(Fetch(port_, http::verb::get, cast, {Bearer()}).status, 200);
}

TEST_F(ConsoleServerTest, LockChangesGoToTheBrokerFromTheConsoleSurface) {
  HttpResult set = Fetch(port_, http::verb::post, "/api/terminals/lock",
                         {Bearer(), {"Origin", origin_}, {"Content-Type", "application/json"}},
                         R"({"terminal_id":"t_echo","mode":"user_only"})");
  ASSERT_EQ(set.status, 200) << set.body;
  EXPECT_EQ(json::parse(set.body)["mode"], "user_only");
  EXPECT_EQ(Fetch(port_, http::verb::post, "/api/terminals/lock",
                  {Bearer(), {"Content-Type", "application/json"}},
                  R"({"terminal_id":"t_echo","mode":"everyone"})")
                .status,
            400);
  absl::MutexLock lock(&fake_.seen.mu);
  ASSERT_EQ(fake_.seen.locks.size(), 1u);
  EXPECT_EQ(fake_.seen.locks[0].surface(), "console");
  EXPECT_EQ(fake_.seen.locks[0].terminal_id(), "t_echo");
}

TEST_F(ConsoleServerTest, HistoryIsReadFromTheLogTheBrokerNames) {
  // The fake broker keeps no audit log yet: the page is told so.
  HttpResult off = Fetch(port_, http::verb::get, "/api/history/decisions", {Bearer()});
  EXPECT_EQ(off.status, 412) << off.body;
  EXPECT_EQ(Fetch(port_, http::verb::get, "/api/history/decisions").status, 401);
  EXPECT_EQ(
      Fetch(port_, http::verb::get, "/api/history/decisions?decision=maybe", {Bearer()}).status,
      400);
  std::string log = dir_ + "/audit.jsonl";
  {
    std::FILE* file = std::fopen(log.c_str(), "w");
    ASSERT_NE(file, nullptr);
    std::fputs(
        R"({"index":1,"time":"2027-01-15T08:00:00Z","event":"policy_decided","session_id":"s_1",)"
        R"("trace_id":"tr","agent_id":"ag","terminal_id":"t_1","action":"allow",)"
        R"("decision":{"command":"ls","rule_id":"read-only","reason":"allow"},"surface":"policy"})"
        "\n",
        file);
    std::fclose(file);
  }
  {
    absl::MutexLock lock(&fake_.seen.mu);
    fake_.seen.audit_log = log;
  }
  HttpResult decisions =
      Fetch(port_, http::verb::get, "/api/history/decisions?agent=ag", {Bearer()});
  ASSERT_EQ(decisions.status, 200) << decisions.body;
  json body = json::parse(decisions.body);
  ASSERT_EQ(body["decisions"].size(), 1u) << body;
  EXPECT_EQ(body["decisions"][0]["command"], "ls");
  EXPECT_EQ(body["decisions"][0]["decided_by"], "rule read-only");
  HttpResult timeline =
      Fetch(port_, http::verb::get, "/api/history/timeline?terminal_id=t_1", {Bearer()});
  EXPECT_EQ(timeline.status, 200) << timeline.body;
  EXPECT_EQ(json::parse(timeline.body)["terminal_id"], "t_1");
}

TEST_F(ConsoleServerTest, EventsCarryTerminalsAndApprovals) {
  PageSocket events;
  ASSERT_EQ(events.Connect(port_, "/ws/events", origin_, true), 101);
  json terminal = events.WaitText("terminal");
  ASSERT_FALSE(terminal.is_null());
  EXPECT_EQ(terminal["kind"], "opened");
  EXPECT_EQ(terminal["terminal"]["terminal_id"], "t_echo");
  json approval = events.WaitText("approval");
  ASSERT_FALSE(approval.is_null());
  EXPECT_EQ(approval["approval"]["command"], "touch /tmp/x");
}

TEST_F(ConsoleServerTest, AttachCarriesInputResizeAndSignals) {
  PageSocket page;
  ASSERT_EQ(page.Connect(port_, "/ws/attach?terminal=t_echo", origin_, true), 101);
  ASSERT_TRUE(fake_.seen.WaitFrames([](const auto& frames) { return !frames.empty(); }));
  {
    absl::MutexLock lock(&fake_.seen.mu);
    const auto& resume = fake_.seen.frames[0].resume();
    EXPECT_EQ(resume.terminal_id(), "t_echo");
    EXPECT_EQ(resume.viewer(), "console");
    EXPECT_TRUE(resume.from_start());
  }
  page.SendBinary("echo hello\r");
  ASSERT_TRUE(page.WaitOutput(11));
  EXPECT_EQ(page.output(), "echo hello\r");
  page.SendText(R"({"type":"resize","cols":100,"rows":30})");
  page.SendText(R"({"type":"signal","signal":"SIGINT"})");
  page.SendText(R"({"type":"signal","signal":"SIGKILL"})");  // refused, not forwarded
  ASSERT_TRUE(fake_.seen.WaitFrames(
      [](const auto& frames) { return frames.size() >= 4 && frames[3].has_signal(); }));
  {
    absl::MutexLock lock(&fake_.seen.mu);
    EXPECT_EQ(fake_.seen.frames[2].resize().cols(), 100u);
    EXPECT_EQ(fake_.seen.frames[2].resize().rows(), 30u);
    EXPECT_EQ(fake_.seen.frames[3].signal(), SIGINT);
  }
  EXPECT_FALSE(page.WaitText("error").is_null());
  // The next frame the broker sees is the resize after the refusal, not SIGKILL.
  page.SendText(R"({"type":"resize","cols":90,"rows":20})");
  ASSERT_TRUE(fake_.seen.WaitFrames([](const auto& frames) { return frames.size() >= 5; }));
  {
    absl::MutexLock lock(&fake_.seen.mu);
    EXPECT_TRUE(fake_.seen.frames[4].has_resize()) << fake_.seen.frames[4].DebugString();
    EXPECT_EQ(fake_.seen.frames[4].resize().cols(), 90u);
  }
}

// Pasting into a program that does not read: once the console's queue
// toward the broker is full, a paste is refused whole and the page is told;
// it is never cut in the middle, and the tab stays open.
TEST_F(ConsoleServerTest, APasteThatCannotBeQueuedIsRefusedWholeAndThePageIsTold) {
  PageSocket page;
  ASSERT_EQ(page.Connect(port_, "/ws/attach?terminal=t_stall", origin_, true), 101);
  ASSERT_TRUE(fake_.seen.WaitFrames([](const auto& frames) { return !frames.empty(); }));
  const std::string paste(1 << 20, 'p');  // the largest page message
  // 24 MiB: more than gRPC's flow-control windows and the console's queue hold together.
  for (int i = 0; i < 24; ++i) page.SendBinary(paste);
  json refused = page.WaitText("error");
  ASSERT_FALSE(refused.is_null()) << "the page was not told";
  EXPECT_NE(refused["message"].get<std::string>().find("nothing of it was sent"), std::string::npos)
      << refused.dump();
  EXPECT_FALSE(page.WaitClosed(absl::Milliseconds(300))) << "the tab was closed";
}

TEST_F(ConsoleServerTest, ResumeFromAnOffset) {
  PageSocket page;
  ASSERT_EQ(page.Connect(port_, "/ws/attach?terminal=t_echo&offset=4096", origin_, true), 101);
  ASSERT_TRUE(fake_.seen.WaitFrames([](const auto& frames) { return !frames.empty(); }));
  absl::MutexLock lock(&fake_.seen.mu);
  EXPECT_FALSE(fake_.seen.frames[0].resume().from_start());
  EXPECT_EQ(fake_.seen.frames[0].resume().offset(), 4096u);
}

TEST_F(ConsoleServerTest, FlowControlStopsAtTheWindowUntilThePageAcks) {
  PageSocket page;
  ASSERT_EQ(page.Connect(port_, "/ws/attach?terminal=t_flood", origin_, true), 101);
  constexpr uint64_t kWindow = 1 << 20;
  ASSERT_TRUE(page.WaitOutput(kWindow));
  // Nothing past the window arrives without an ack. (A negative check needs
  // a time bound; 500 ms is many times what the next chunk would take.)
  EXPECT_FALSE(page.WaitOutput(kWindow + 1, absl::Milliseconds(500)));
  EXPECT_EQ(page.output().size(), kWindow);
  // Acking half reopens the window by about half.
  page.SendText(json{{"type", "ack"}, {"bytes", kWindow / 2}}.dump());
  ASSERT_TRUE(page.WaitOutput(kWindow + kWindow / 2));
  EXPECT_FALSE(page.WaitOutput(kWindow + kWindow / 2 + 1, absl::Milliseconds(500)));
  // Acking as it renders lets the whole stream through, in order.
  uint64_t acked = kWindow / 2;
  for (;;) {
    uint64_t have = page.output().size();
    if (have > acked) {
      page.SendText(json{{"type", "ack"}, {"bytes", have - acked}}.dump());
      acked = have;
    }
    if (have >= kFloodBytes) break;
    ASSERT_TRUE(page.WaitOutput(have + 1)) << "stalled at " << have;
  }
  EXPECT_FALSE(page.WaitText("exited").is_null());
  EXPECT_EQ(page.output().size(), kFloodBytes);
  EXPECT_TRUE(page.offsets_contiguous());
  std::string output = page.output();
  for (uint64_t i = 0; i < output.size(); i += 9973) {
    ASSERT_EQ(output[i], static_cast<char>('a' + i % 26)) << "at " << i;
  }
  json end = page.WaitText("end");
  EXPECT_EQ(end["status"], "OK");
  EXPECT_TRUE(page.WaitClosed());
}

TEST_F(ConsoleServerTest, AFailedAttachTellsThePageWhy) {
  PageSocket page;
  ASSERT_EQ(page.Connect(port_, "/ws/attach?terminal=t_missing", origin_, true), 101);
  json end = page.WaitText("end");
  ASSERT_FALSE(end.is_null());
  EXPECT_EQ(end["status"], "NOT_FOUND");
  EXPECT_EQ(end["pm_code"], "PM_TERM_NOT_FOUND");
  EXPECT_TRUE(page.WaitClosed());
  EXPECT_EQ(Fetch(port_, http::verb::get, "/ws/attach",
                  {Bearer(),
                   {"Upgrade", "websocket"},
                   {"Connection", "Upgrade"},
                   {"Sec-WebSocket-Version", "13"},
                   {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}})
                .status,
            400);  // no terminal named
}

TEST_F(ConsoleServerTest, ClosingThePageCancelsItsAttach) {
  {
    PageSocket page;
    ASSERT_EQ(page.Connect(port_, "/ws/attach?terminal=t_echo", origin_, true), 101);
    ASSERT_TRUE(fake_.seen.WaitFrames([](const auto& frames) { return !frames.empty(); }));
  }
  absl::MutexLock lock(&fake_.seen.mu);
  EXPECT_TRUE(fake_.seen.mu.AwaitWithTimeout(
      absl::Condition(
          +[](int* done) { return *done == 1; }, &fake_.seen.attach_done),
      absl::Seconds(10)));
}

TEST_F(ConsoleServerTest, StopEndsEverythingOpen) {
  PageSocket events;
  PageSocket echo;
  PageSocket flood;
  ASSERT_EQ(events.Connect(port_, "/ws/events", origin_, true), 101);
  ASSERT_EQ(echo.Connect(port_, "/ws/attach?terminal=t_echo", origin_, true), 101);
  ASSERT_EQ(flood.Connect(port_, "/ws/attach?terminal=t_flood", origin_, true), 101);
  ASSERT_FALSE(events.WaitText("approval").is_null());
  ASSERT_TRUE(flood.WaitOutput(1 << 20));  // paused at the window
  console_->Stop();
  EXPECT_TRUE(events.WaitClosed());
  EXPECT_TRUE(echo.WaitClosed());
  EXPECT_TRUE(flood.WaitClosed());
  absl::MutexLock lock(&fake_.seen.mu);
  EXPECT_TRUE(fake_.seen.mu.AwaitWithTimeout(absl::Condition(
                                                 +[](Seen* seen) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                                   return seen->attach_done == 2 &&
                                                          seen->watches_done == 2;
                                                 },
                                                 &fake_.seen),
                                             absl::Seconds(10)));
}

TEST(ConsoleServerStart, RefusesWithoutTokenSocketOrAssets) {
  ConsoleOptions options;
  options.listen = "127.0.0.1:0";
  options.operator_socket = "/tmp/none.sock";
  options.assets_dir = TB_CONSOLE_ASSETS_DIR;
  EXPECT_EQ(ConsoleServer::Start(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.operator_token = kToken;
  options.assets_dir = "/nonexistent";
  EXPECT_EQ(ConsoleServer::Start(options).status().code(), absl::StatusCode::kFailedPrecondition);
  options.assets_dir = TB_CONSOLE_ASSETS_DIR;
  options.listen = "127.0.0.1";
  EXPECT_EQ(ConsoleServer::Start(options).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(DefaultAssetsDir, PrefersTheBuildTreeLayout) {
  std::string build = TB_CONSOLE_ASSETS_DIR;
  std::string root = build.substr(0, build.rfind('/'));
  EXPECT_EQ(DefaultAssetsDir(root + "/broker/termbridge-broker"),
            root + "/broker/../console-assets");
}

}  // namespace
}  // namespace termbridge::console
