// Tests for BrokerClient's error mapping against a fake broker (a real gRPC
// server in this process): every cause of PM_TERM_GUI_UNAVAILABLE names itself
// in details.reason (docs/CONTRACT.md "Errors"), and the code stays the same;
// a call's deadline is its own wait plus the request timeout
// (docs/troubleshooting.md "When the broker stops answering").
#include "agent/bridge/broker_client.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "common/contract/errors.h"
#include "common/contract/gui_unavailable.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "termbridge/v1/broker.grpc.pb.h"

namespace termbridge::bridge {
namespace {

using contract::ErrorCode;
namespace gui = contract::gui_unavailable;

// What the fake broker does with a Handshake and with a List.
enum class Behavior {
  kServe,              // answers as a broker of this protocol version
  kRefuseToken,        // UNAUTHENTICATED, as the broker refuses an unknown token
  kRefuseVersion,      // GUI_UNAVAILABLE naming both versions, no reason (older broker)
  kAnswerNewVersion,   // a successful handshake at another protocol version
  kNoViewerOnList,     // List fails as an older broker's "nobody watches" refusal
  kReasonGivenOnList,  // List fails with GUI_UNAVAILABLE and its own reason
};

class FakeBroker final : public v1::TerminalBroker::Service {
 public:
  explicit FakeBroker(Behavior behavior) : behavior_(behavior) {}

  // The max_wait_ms its handshake announces (0: none), and how long its
  // ReadOutput takes to answer.
  uint32_t max_wait_ms = 0;
  absl::Duration read_answers_after = absl::ZeroDuration();

  grpc::Status Handshake(grpc::ServerContext* context, const v1::HandshakeRequest* request,
                         v1::HandshakeResponse* response) override {
    switch (behavior_) {
      case Behavior::kRefuseToken:
        return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "unknown agent token");
      case Behavior::kRefuseVersion:
        return Refuse(context, "protocol version mismatch",
                      {{"agent_protocol_version", request->protocol_version()},
                       {"broker_protocol_version", 7}});
      case Behavior::kAnswerNewVersion:
        response->set_protocol_version(7);
        return grpc::Status::OK;
      default:
        response->set_protocol_version(v1::PROTOCOL_VERSION_CURRENT);
        response->mutable_limits()->set_max_wait_ms(max_wait_ms);
        return grpc::Status::OK;
    }
  }

  grpc::Status List(grpc::ServerContext* context, const v1::ListRequest*,
                    v1::ListResponse*) override {
    if (behavior_ == Behavior::kNoViewerOnList) {
      return Refuse(context, "no one is watching terminal t_1",
                    {{"terminal_id", "t_1"}, {"surfaces_tried", {"console: off"}}});
    }
    if (behavior_ == Behavior::kReasonGivenOnList) {
      return Refuse(context, "nobody watches", {{"reason", "no_viewer"}, {"terminal_id", "t_1"}});
    }
    return grpc::Status::OK;
  }

  grpc::Status ReadOutput(grpc::ServerContext*, const v1::ReadOutputRequest*,
                          v1::ReadOutputResponse*) override {
    absl::SleepFor(read_answers_after);
    return grpc::Status::OK;
  }

 private:
  // A typed refusal, as the broker's edge sends one (the ErrorDetail trailer).
  static grpc::Status Refuse(grpc::ServerContext* context, const std::string& message,
                             nlohmann::json details) {
    v1::ErrorDetail detail;
    detail.set_code("PM_TERM_GUI_UNAVAILABLE");
    detail.set_message(message);
    detail.set_details_json(details.dump());
    context->AddTrailingMetadata("termbridge-error-bin", detail.SerializeAsString());
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, message);
  }

  const Behavior behavior_;
};

class BrokerClientTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (server_) server_->Shutdown();
    if (closed_port_fd_ >= 0) close(closed_port_fd_);
    if (!token_file_.empty()) unlink(token_file_.c_str());
  }

  // Starts a fake broker and returns a configuration that reaches it with a
  // readable token.
  BridgeConfig Serve(Behavior behavior) {
    service_ = std::make_unique<FakeBroker>(behavior);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    EXPECT_NE(port, 0);
    BridgeConfig config;
    config.hosts = {"127.0.0.1"};
    config.port = port;
    config.connect_timeout_ms = 5000;
    config.request_timeout_ms = 5000;
    // A file of this process's own: ctest runs each case as its own process,
    // in parallel, and a shared file is truncated under another's read.
    token_file_ = ::testing::TempDir() + "/broker_client_test_token." + std::to_string(getpid());
    std::ofstream(token_file_) << "t0ken\n";
    config.token_file = token_file_;
    return config;
  }

  // A loopback port that refuses connections: bound, never listening.
  int ClosedPort() {
    closed_port_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(closed_port_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    socklen_t len = sizeof addr;
    getsockname(closed_port_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    return ntohs(addr.sin_port);
  }

  std::unique_ptr<FakeBroker> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string token_file_;
  int closed_port_fd_ = -1;
};

// The PM_TERM error of a failed call; fails the test when the call succeeded.
contract::PmTermError ListError(BrokerClient& client) {
  absl::StatusOr<v1::ListResponse> listed = client.List(v1::ListRequest());
  EXPECT_FALSE(listed.ok());
  if (listed.ok()) return {};
  return contract::FromStatus(listed.status());
}

TEST_F(BrokerClientTest, NothingListeningIsBrokerUnreachable) {
  BridgeConfig config = Serve(Behavior::kServe);
  config.port = ClosedPort();
  BrokerClient client(config);
  contract::PmTermError error = ListError(client);
  EXPECT_EQ(error.code, ErrorCode::kGuiUnavailable);
  EXPECT_EQ(error.details["reason"], gui::kBrokerUnreachable);
  EXPECT_EQ(error.details["aliases_tried"], nlohmann::json({"127.0.0.1"}));
}

TEST_F(BrokerClientTest, ARefusedTokenIsCredentialsRefused) {
  BrokerClient client(Serve(Behavior::kRefuseToken));
  contract::PmTermError error = ListError(client);
  EXPECT_EQ(error.code, ErrorCode::kGuiUnavailable);
  EXPECT_EQ(error.details["reason"], gui::kCredentialsRefused);
  EXPECT_NE(error.message.find("unknown agent token"), std::string::npos);
}

TEST_F(BrokerClientTest, AnUnreadableTokenFileIsAgentTokenUnavailable) {
  BridgeConfig config = Serve(Behavior::kServe);
  config.token_file = ::testing::TempDir() + "/no-such-token";
  BrokerClient client(config);
  contract::PmTermError error = ListError(client);
  EXPECT_EQ(error.code, ErrorCode::kGuiUnavailable);
  EXPECT_EQ(error.details["reason"], gui::kAgentTokenUnavailable);
}

TEST_F(BrokerClientTest, AnUnreadableCaFileIsTlsMaterialUnavailable) {
  BridgeConfig config = Serve(Behavior::kServe);
  config.tls_ca_file = ::testing::TempDir() + "/no-such-ca.pem";
  BrokerClient client(config);
  contract::PmTermError error = ListError(client);
  EXPECT_EQ(error.code, ErrorCode::kGuiUnavailable);
  EXPECT_EQ(error.details["reason"], gui::kTlsMaterialUnavailable);
}

TEST_F(BrokerClientTest, ABrokerRefusingOurVersionIsVersionMismatch) {
  BrokerClient client(Serve(Behavior::kRefuseVersion));
  contract::PmTermError error = ListError(client);
  EXPECT_EQ(error.code, ErrorCode::kGuiUnavailable);
  EXPECT_EQ(error.details["reason"], gui::kVersionMismatch);
  EXPECT_EQ(error.details["broker_protocol_version"], 7);
}

TEST_F(BrokerClientTest, ABrokerAnsweringAnotherVersionIsVersionMismatch) {
  BrokerClient client(Serve(Behavior::kAnswerNewVersion));
  contract::PmTermError error = ListError(client);
  EXPECT_EQ(error.code, ErrorCode::kGuiUnavailable);
  EXPECT_EQ(error.details["reason"], gui::kVersionMismatch);
  EXPECT_EQ(error.details["broker_protocol_version"], 7);
}

TEST_F(BrokerClientTest, AnOlderBrokersViewerRefusalIsNoViewer) {
  BrokerClient client(Serve(Behavior::kNoViewerOnList));
  contract::PmTermError error = ListError(client);
  EXPECT_EQ(error.code, ErrorCode::kGuiUnavailable);
  EXPECT_EQ(error.details["reason"], gui::kNoViewer);
  EXPECT_EQ(error.details["terminal_id"], "t_1");
}

TEST_F(BrokerClientTest, TheBrokersOwnReasonIsKept) {
  BrokerClient client(Serve(Behavior::kReasonGivenOnList));
  contract::PmTermError error = ListError(client);
  EXPECT_EQ(error.code, ErrorCode::kGuiUnavailable);
  EXPECT_EQ(error.details["reason"], "no_viewer");
}

TEST_F(BrokerClientTest, ABrokerThatServesAnswers) {
  BrokerClient client(Serve(Behavior::kServe));
  EXPECT_TRUE(client.List(v1::ListRequest()).ok());
}

// A broker that restarts while no call is in flight: the client lets the
// dead connection go by itself, and the next call reaches the new broker
// instead of failing with PM_TERM_DISCONNECTED on the old connection.
TEST_F(BrokerClientTest, ABrokerRestartedBetweenCallsAnswersTheNextCall) {
  BridgeConfig config = Serve(Behavior::kServe);
  BrokerClient client(config);
  ASSERT_TRUE(client.List(v1::ListRequest()).ok());
  ASSERT_FALSE(client.AwaitNoConnectionForTest(absl::ZeroDuration())) << "connected";
  server_->Shutdown();
  server_.reset();
  EXPECT_TRUE(client.AwaitNoConnectionForTest(absl::Seconds(10)))
      << "the dropped connection is let go while no call is in flight";
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(config.port),
                           grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  ASSERT_NE(server_, nullptr);
  absl::StatusOr<v1::ListResponse> listed = client.List(v1::ListRequest());
  EXPECT_TRUE(listed.ok()) << listed.status();
}

// A read that waits longer than the request timeout: its deadline is its
// wait plus the request timeout, so the broker's answer at the end of the
// wait arrives in time.
TEST_F(BrokerClientTest, AWaitLongerThanTheRequestTimeoutIsNotCutShort) {
  BridgeConfig config = Serve(Behavior::kServe);
  config.request_timeout_ms = 300;
  service_->read_answers_after = absl::Milliseconds(900);
  BrokerClient client(config);
  v1::ReadOutputRequest read;
  read.set_wait_ms(1000);
  absl::StatusOr<v1::ReadOutputResponse> answer = client.ReadOutput(read);
  EXPECT_TRUE(answer.ok()) << answer.status();
}

// A broker that stays silent past the wait and the request timeout: TIMEOUT,
// naming both parts of the deadline.
TEST_F(BrokerClientTest, ABrokerSilentPastTheWaitAndTheRequestTimeoutIsTimeout) {
  BridgeConfig config = Serve(Behavior::kServe);
  config.request_timeout_ms = 300;
  service_->read_answers_after = absl::Milliseconds(2500);
  BrokerClient client(config);
  ASSERT_TRUE(client.List(v1::ListRequest()).ok());  // connected: the deadline alone is timed
  v1::ReadOutputRequest read;
  read.set_wait_ms(500);
  const absl::Time started = absl::Now();
  absl::StatusOr<v1::ReadOutputResponse> answer = client.ReadOutput(read);
  const absl::Duration took = absl::Now() - started;
  ASSERT_FALSE(answer.ok());
  contract::PmTermError error = contract::FromStatus(answer.status());
  EXPECT_EQ(error.code, ErrorCode::kTimeout);
  EXPECT_EQ(error.details["timeout_ms"], 300);
  EXPECT_EQ(error.details["wait_ms"], 500);
  EXPECT_EQ(error.details["phase"], "read");
  EXPECT_GE(took, absl::Milliseconds(790));
  EXPECT_LT(took, absl::Milliseconds(2400));
}

// The broker waits at most its max_wait_ms, so a longer wait adds no more
// than that to the deadline.
TEST_F(BrokerClientTest, TheBrokersMaxWaitBoundsTheDeadline) {
  BridgeConfig config = Serve(Behavior::kServe);
  config.request_timeout_ms = 300;
  service_->max_wait_ms = 200;
  service_->read_answers_after = absl::Milliseconds(2500);
  BrokerClient client(config);
  ASSERT_TRUE(client.List(v1::ListRequest()).ok());
  v1::ReadOutputRequest read;
  read.set_wait_ms(60000);
  const absl::Time started = absl::Now();
  absl::StatusOr<v1::ReadOutputResponse> answer = client.ReadOutput(read);
  const absl::Duration took = absl::Now() - started;
  ASSERT_FALSE(answer.ok());
  contract::PmTermError error = contract::FromStatus(answer.status());
  EXPECT_EQ(error.code, ErrorCode::kTimeout);
  EXPECT_EQ(error.details["wait_ms"], 200);
  EXPECT_LT(took, absl::Milliseconds(2400));
}

}  // namespace
}  // namespace termbridge::bridge
