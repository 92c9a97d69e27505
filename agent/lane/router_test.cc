// Unit tests for the agent's Router (docs/CONTRACT.md, 'Lanes'; the walk is in
// docs/ARCHITECTURE.md, 'The life of an execute') against a fake broker: a
// real gRPC TerminalBroker service in this process that records what it got
// and answers what each test scripts, failures included as the broker's edge
// sends them (an ErrorDetail trailer). No broker and no terminal is started;
// only the ownership test runs one short argv in the headless lane, which
// needs a process to own a session.
#include "agent/lane/router.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/contract/errors.h"
#include "common/contract/gui_unavailable.h"
#include "common/policy/policy.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "termbridge/v1/broker.grpc.pb.h"

namespace termbridge::lane {
namespace {

using contract::ErrorCode;
using contract::PmTermError;
using nlohmann::json;
namespace gui = contract::gui_unavailable;

constexpr char kToken[] = "router-test-token";
constexpr char kAgentId[] = "agent-under-test";
// The fixture's request timeout.
constexpr int kRequestTimeoutMs = 8000;

// A host policy as the broker would send it in GetAgentPolicy.
constexpr char kBrokerPolicy[] = R"(
default_rules = false
[[rule]]
id = "broker-allows-echo"
action = "allow"
exact = ["echo", "hi"]
[[rule]]
id = "broker-denies-ls"
action = "deny"
prefix = ["ls"]
reason = "the broker says no"
)";

// What the fake broker received.
struct Received {
  std::vector<v1::HandshakeRequest> handshakes;
  std::vector<std::string> authorizations;  // the metadata of every call
  std::vector<v1::ExecuteRequest> executes;
  std::vector<v1::ReadOutputRequest> reads;
  std::vector<v1::TerminateRequest> terminates;
  std::vector<v1::ListRequest> lists;
  std::vector<v1::ProposeRuleRequest> proposals;
  std::vector<v1::AgentPolicyRequest> policy_requests;

  size_t Calls() const {
    return executes.size() + reads.size() + terminates.size() + lists.size() + proposals.size() +
           policy_requests.size();
  }
};

// What the fake broker answers. An entry in `errors` (by RPC name: "Execute",
// "ReadOutput", "Terminate", "List", "ProposeRule", "GetAgentPolicy") makes
// that RPC fail with it.
struct Script {
  v1::ExecuteResponse execute;
  v1::ReadOutputResponse read;
  v1::TerminateResponse terminate;
  v1::ListResponse list;
  v1::ProposeRuleResponse propose;
  v1::GetPolicyResponse policy;  // GetAgentPolicy
  std::map<std::string, PmTermError> errors;
  // When set, ReadOutput answers each request with this instead of `read`.
  std::function<void(const v1::ReadOutputRequest&, v1::ReadOutputResponse*)> on_read;
};

class FakeBroker final : public v1::TerminalBroker::Service {
 public:
  void Set(Script script) {
    absl::MutexLock lock(&mu_);
    script_ = std::move(script);
  }
  Received Got() {
    absl::MutexLock lock(&mu_);
    return received_;
  }

  grpc::Status Handshake(grpc::ServerContext* context, const v1::HandshakeRequest* request,
                         v1::HandshakeResponse* response) override {
    absl::MutexLock lock(&mu_);
    received_.handshakes.push_back(*request);
    Authorization(*context);
    response->set_protocol_version(v1::PROTOCOL_VERSION_CURRENT);
    response->set_agent_id(request->agent_id());
    return grpc::Status::OK;
  }
  grpc::Status Execute(grpc::ServerContext* context, const v1::ExecuteRequest* request,
                       v1::ExecuteResponse* response) override {
    return Answer("Execute", context, *request, &Received::executes, &Script::execute, response);
  }
  grpc::Status ReadOutput(grpc::ServerContext* context, const v1::ReadOutputRequest* request,
                          v1::ReadOutputResponse* response) override {
    grpc::Status status =
        Answer("ReadOutput", context, *request, &Received::reads, &Script::read, response);
    absl::MutexLock lock(&mu_);
    if (status.ok() && script_.on_read) script_.on_read(*request, response);
    return status;
  }
  grpc::Status Terminate(grpc::ServerContext* context, const v1::TerminateRequest* request,
                         v1::TerminateResponse* response) override {
    return Answer("Terminate", context, *request, &Received::terminates, &Script::terminate,
                  response);
  }
  grpc::Status List(grpc::ServerContext* context, const v1::ListRequest* request,
                    v1::ListResponse* response) override {
    return Answer("List", context, *request, &Received::lists, &Script::list, response);
  }
  grpc::Status ProposeRule(grpc::ServerContext* context, const v1::ProposeRuleRequest* request,
                           v1::ProposeRuleResponse* response) override {
    return Answer("ProposeRule", context, *request, &Received::proposals, &Script::propose,
                  response);
  }
  grpc::Status GetAgentPolicy(grpc::ServerContext* context, const v1::AgentPolicyRequest* request,
                              v1::GetPolicyResponse* response) override {
    return Answer("GetAgentPolicy", context, *request, &Received::policy_requests, &Script::policy,
                  response);
  }

 private:
  // Records the request, then answers as scripted.
  template <typename Request, typename Response>
  grpc::Status Answer(const std::string& rpc, grpc::ServerContext* context, const Request& request,
                      std::vector<Request> Received::*log, Response Script::*reply,
                      Response* response) {
    absl::MutexLock lock(&mu_);
    (received_.*log).push_back(request);
    Authorization(*context);
    if (auto it = script_.errors.find(rpc); it != script_.errors.end()) {
      return Refuse(context, it->second);
    }
    *response = script_.*reply;
    return grpc::Status::OK;
  }

  void Authorization(const grpc::ServerContext& context) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = context.client_metadata().find("authorization");
    received_.authorizations.push_back(it == context.client_metadata().end()
                                           ? ""
                                           : std::string(it->second.data(), it->second.size()));
  }

  // A PM_TERM failure as the broker's edge sends it (broker/service/wire.cc
  // ToGrpcStatus): the ErrorDetail trailer, the code's canonical status.
  static grpc::Status Refuse(grpc::ServerContext* context, const PmTermError& error) {
    v1::ErrorDetail detail;
    detail.set_code(std::string(contract::CodeName(error.code)));
    detail.set_message(error.message);
    detail.set_details_json(error.details.dump());
    context->AddTrailingMetadata("termbridge-error-bin", detail.SerializeAsString());
    auto code = static_cast<grpc::StatusCode>(contract::Spec(error.code).status_code);
    return grpc::Status(code, absl::StrCat(detail.code(), ": ", error.message));
  }

  absl::Mutex mu_;
  Script script_ ABSL_GUARDED_BY(mu_);
  Received received_ ABSL_GUARDED_BY(mu_);
};

class RouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&broker_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port, 0);
    config_.hosts = {"127.0.0.1"};
    config_.port = port;
    config_.connect_timeout_ms = 5000;
    config_.request_timeout_ms = kRequestTimeoutMs;
    config_.agent_id = kAgentId;
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    config_.token_file =
        absl::StrCat(::testing::TempDir(), "/router_test_token_", getpid(), "_", info->name());
    std::ofstream(config_.token_file) << kToken << "\n";
  }

  void TearDown() override {
    router_.reset();  // kills what the headless lane still runs
    if (server_) server_->Shutdown();
    std::remove(config_.token_file.c_str());
    if (!options_.local_policy_file.empty()) std::remove(options_.local_policy_file.c_str());
  }

  // The router under test, made on first use from options_ and the config.
  Router& router() {
    if (!router_) router_ = std::make_unique<Router>(options_, config_);
    return *router_;
  }
  RouterResult Handle(const json& arguments) { return router().Handle(arguments); }

  FakeBroker broker_;
  std::unique_ptr<grpc::Server> server_;
  bridge::BridgeConfig config_;
  RouterOptions options_;
  std::unique_ptr<Router> router_;
};

json ExecuteArgs(const std::string& command, const std::string& mode = "interactive") {
  return {{"action", "execute"},
          {"invocation", {{"mode", mode}, {"intent", "execute_command"}}},
          {"execution", {{"command", command}}}};
}

json TargetArgs(const std::string& action, const std::string& session_id) {
  return {{"action", action}, {"target", {{"session_id", session_id}}}};
}

PmTermError Error(ErrorCode code, std::string message, json details) {
  PmTermError error;
  error.code = code;
  error.message = std::move(message);
  error.details = std::move(details);
  return error;
}

std::string BrokerPolicyJson(const char* toml = kBrokerPolicy) {
  absl::StatusOr<policy::Policy> parsed = policy::Policy::FromToml(toml, "broker.toml");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? parsed->ToJson().dump() : "";
}

// ---- fail closed --------------------------------------------------------------

TEST_F(RouterTest, ABridgeConfigErrorIsEveryInteractiveCallsAnswerAndNothingIsSent) {
  absl::Status broken = contract::MakeError(
      ErrorCode::kInvalidMode, "container_bridge mode needs TERMBRIDGE_BRIDGE_TOKEN_FILE",
      {{"field", "TERMBRIDGE_BRIDGE_TOKEN_FILE"}});
  Router router(options_, broken);
  json list = {{"action", "list"}, {"invocation", {{"mode", "interactive"}}}};
  for (const json& call : {ExecuteArgs("make"), TargetArgs("read_output", "s_1"),
                           TargetArgs("terminate", "s_1"), list}) {
    RouterResult result = router.Handle(call);
    SCOPED_TRACE(call.dump());
    EXPECT_TRUE(result.is_error);
    EXPECT_EQ(result.response["success"], false);
    EXPECT_EQ(result.response["status"], "failed");
    EXPECT_EQ(result.response["error"]["code"], "PM_TERM_INVALID_MODE");
    EXPECT_EQ(result.response["error"]["details"]["field"], "TERMBRIDGE_BRIDGE_TOKEN_FILE");
    EXPECT_EQ(result.response["fallback"]["strategy"], "reject_no_retry");
  }
  // update_allowlist needs the broker as well.
  RouterResult proposed =
      router.HandleHeadlessTool({{"action", "update_allowlist"}, {"rule", {"make", "test"}}});
  EXPECT_TRUE(proposed.is_error);
  EXPECT_EQ(proposed.response["error"]["code"], "PM_TERM_INVALID_MODE");
  EXPECT_EQ(proposed.response["tool"], "memory_terminal");
  EXPECT_EQ(broker_.Got().Calls(), 0u);
  EXPECT_TRUE(broker_.Got().handshakes.empty());
}

TEST_F(RouterTest, AListAcrossBothLanesReportsTheBrokenBridgeInLanes) {
  Router router(options_, contract::MakeError(ErrorCode::kInvalidMode, "no token file"));
  RouterResult result = router.Handle({{"action", "list"}});
  ASSERT_FALSE(result.is_error) << result.response.dump();
  const json& lanes = result.response["result"]["lanes"];
  EXPECT_EQ(lanes["interactive"]["available"], false);
  EXPECT_EQ(lanes["interactive"]["error"], "no token file");
  EXPECT_EQ(lanes["headless"]["available"], true);
  EXPECT_EQ(result.response["result"]["items"], json::array());
}

TEST_F(RouterTest, AnUnreachableBrokerFailsClosedWithoutRunningAnythingHeadless) {
  server_->Shutdown();
  server_.reset();  // nothing listens on the port any more
  RouterResult result = Handle(ExecuteArgs("make test"));
  ASSERT_TRUE(result.is_error);
  EXPECT_EQ(result.response["error"]["code"], "PM_TERM_GUI_UNAVAILABLE");
  EXPECT_EQ(result.response["error"]["details"]["reason"], gui::kBrokerUnreachable);
  EXPECT_EQ(result.response["fallback"]["strategy"], "fallback_to_headless_if_allowed");
  EXPECT_EQ(result.response["fallback"]["recommended_mode"], "headless");
  // The fallback is advice: the agent did not run the command in its own lane.
  RouterResult listed = Handle({{"action", "list"}, {"invocation", {{"mode", "headless"}}}});
  ASSERT_FALSE(listed.is_error) << listed.response.dump();
  EXPECT_EQ(listed.response["result"]["items"], json::array());
}

TEST_F(RouterTest, ArgumentsThatDoNotNormalizeAreRefusedBeforeTheBroker) {
  RouterResult unknown = Handle({{"action", "explode"}});
  EXPECT_TRUE(unknown.is_error);
  EXPECT_EQ(unknown.response["error"]["code"], "PM_TERM_INVALID_ACTION");
  EXPECT_EQ(unknown.response["action"], "explode");
  RouterResult relative = Handle({{"action", "execute"},
                                  {"execution", {{"command", "make"}}},
                                  {"runtime", {{"cwd", "relative/dir"}}}});
  EXPECT_TRUE(relative.is_error);
  EXPECT_EQ(relative.response["error"]["code"], "PM_TERM_INVALID_PAYLOAD");
  EXPECT_EQ(relative.response["error"]["details"]["field"], "runtime.cwd");
  EXPECT_EQ(broker_.Got().Calls(), 0u);
}

// ---- what reaches the broker ----------------------------------------------------

TEST_F(RouterTest, ExecuteCopiesTheCanonicalRequestIntoTheBrokerCall) {
  RouterResult result =
      Handle({{"action", "execute"},
              {"invocation", {{"mode", "interactive"}, {"intent", "execute_command"}}},
              {"execution",
               {{"command", "make"}, {"args", {"-j", "2"}}, {"env", {{"LANG", "C"}, {"CI", "1"}}}}},
              {"runtime", {{"cwd", "/srv/work"}, {"timeout_ms", 1500}}},
              {"target", {{"terminal_id", "t_7"}}},
              {"correlation",
               {{"request_id", "req_given"},
                {"trace_id", "trace_given"},
                {"client_request_id", "client_given"}}},
              {"format", "raw"},
              {"max_bytes", 4096}});
  ASSERT_FALSE(result.is_error) << result.response.dump();
  Received got = broker_.Got();
  ASSERT_EQ(got.executes.size(), 1u);
  const v1::ExecuteRequest& call = got.executes[0];
  EXPECT_EQ(call.command(), "make");
  ASSERT_EQ(call.args_size(), 2);
  EXPECT_EQ(call.args(0), "-j");
  EXPECT_EQ(call.args(1), "2");
  EXPECT_EQ(call.cwd(), "/srv/work");
  EXPECT_EQ(call.env().size(), 2u);
  EXPECT_EQ(call.env().at("LANG"), "C");
  EXPECT_EQ(call.env().at("CI"), "1");
  EXPECT_EQ(call.terminal_id(), "t_7");
  EXPECT_FALSE(call.open_only());
  EXPECT_EQ(call.wait_ms(), 1500u);
  EXPECT_EQ(call.format(), v1::OUTPUT_FORMAT_RAW);
  EXPECT_EQ(call.max_bytes(), 2048u);  // the head's half of the budget (output_budget.h)
  EXPECT_EQ(call.lane(), "");          // the broker's default: interactive
  EXPECT_EQ(call.correlation().request_id(), "req_given");
  EXPECT_EQ(call.correlation().trace_id(), "trace_given");
  EXPECT_EQ(call.correlation().client_request_id(), "client_given");
  EXPECT_EQ(call.agent_id(), kAgentId);
  // The handshake came first, and every call carried the token.
  ASSERT_EQ(got.handshakes.size(), 1u);
  EXPECT_EQ(got.handshakes[0].agent_id(), kAgentId);
  EXPECT_EQ(got.handshakes[0].trace_id(), "trace_given");
  for (const std::string& authorization : got.authorizations) {
    EXPECT_EQ(authorization, absl::StrCat("Bearer ", kToken));
  }
  // The response keeps the caller's correlation ids.
  EXPECT_EQ(result.response["correlation"]["request_id"], "req_given");
  EXPECT_EQ(result.response["correlation"]["trace_id"], "trace_given");
  EXPECT_EQ(result.response["correlation"]["client_request_id"], "client_given");
}

TEST_F(RouterTest, OpenOnlyAsksForATerminalWithoutACommand) {
  RouterResult result = Handle({{"action", "execute"}, {"invocation", {{"intent", "open_only"}}}});
  ASSERT_FALSE(result.is_error) << result.response.dump();
  Received got = broker_.Got();
  ASSERT_EQ(got.executes.size(), 1u);
  EXPECT_TRUE(got.executes[0].open_only());
  EXPECT_EQ(got.executes[0].command(), "");
  EXPECT_EQ(got.executes[0].format(), v1::OUTPUT_FORMAT_CLEAN);
  EXPECT_EQ(result.response["resolved"]["mode"], "interactive");  // the default mode
}

TEST_F(RouterTest, ReadOutputCopiesItsTargetCursorAndWaitCondition) {
  Script script;
  script.read.set_session_id("s_1");
  script.read.set_terminal_id("t_1");
  script.read.set_wait_result("matched");
  script.read.mutable_exit()->set_running(true);
  script.read.mutable_output()->set_text("$ ");
  script.read.mutable_output()->set_start(10);
  script.read.mutable_output()->set_next_cursor(12);
  script.read.mutable_output()->mutable_screen()->set_cols(80);
  script.read.mutable_output()->mutable_screen()->set_rows(24);
  broker_.Set(script);
  RouterResult result = Handle({{"action", "read_output"},
                                {"target", {{"session_id", "s_1"}}},
                                {"cursor", 10},
                                {"wait_ms", 2500},
                                {"until", "match"},
                                {"match", "\\$ $"},
                                {"max_bytes", 512},
                                {"format", "screen"}});
  ASSERT_FALSE(result.is_error) << result.response.dump();
  Received got = broker_.Got();
  ASSERT_EQ(got.reads.size(), 1u);
  const v1::ReadOutputRequest& call = got.reads[0];
  EXPECT_EQ(call.session_id(), "s_1");
  EXPECT_EQ(call.terminal_id(), "");
  ASSERT_TRUE(call.has_cursor());
  EXPECT_EQ(call.cursor(), 10u);
  EXPECT_EQ(call.wait_ms(), 2500u);
  EXPECT_EQ(call.until(), "match");
  EXPECT_EQ(call.match(), "\\$ $");
  EXPECT_EQ(call.max_bytes(), 512u);
  EXPECT_EQ(call.format(), v1::OUTPUT_FORMAT_SCREEN);
  const json& out = result.response["result"];
  EXPECT_EQ(out["wait_result"], "matched");
  EXPECT_EQ(out["stdout"], "$ ");
  EXPECT_EQ(out["cursor"], 12);
  EXPECT_EQ(out["output_start"], 10);
  EXPECT_EQ(out["running"], true);
  EXPECT_EQ(out["screen"]["cols"], 80);
  EXPECT_EQ(result.response["identity"]["terminal_id"], "t_1");
}

TEST_F(RouterTest, ReadOutputWithoutACursorLeavesItUnset) {
  RouterResult result = Handle({{"action", "read_output"}, {"target", {{"terminal_id", "t_2"}}}});
  ASSERT_FALSE(result.is_error) << result.response.dump();
  Received got = broker_.Got();
  ASSERT_EQ(got.reads.size(), 1u);
  EXPECT_FALSE(got.reads[0].has_cursor());
  EXPECT_EQ(got.reads[0].terminal_id(), "t_2");
  EXPECT_EQ(got.reads[0].wait_ms(), 0u);  // no wait unless asked
}

TEST_F(RouterTest, TerminateCopiesItsTargetAndReportsTheExit) {
  Script script;
  script.terminate.set_session_id("s_3");
  script.terminate.mutable_exit()->set_running(false);
  script.terminate.mutable_exit()->set_signal(15);
  script.terminate.mutable_exit()->set_exited_at_unix_ms(1700000000000);
  broker_.Set(script);
  RouterResult result = Handle({{"action", "terminate"},
                                {"target", {{"session_id", "s_3"}}},
                                {"correlation", {{"trace_id", "trace_kill"}}}});
  ASSERT_FALSE(result.is_error) << result.response.dump();
  Received got = broker_.Got();
  ASSERT_EQ(got.terminates.size(), 1u);
  EXPECT_EQ(got.terminates[0].session_id(), "s_3");
  EXPECT_EQ(got.terminates[0].correlation().trace_id(), "trace_kill");
  const json& out = result.response["result"];
  EXPECT_EQ(out["running"], false);
  EXPECT_EQ(out["signal"], 15);
  EXPECT_EQ(out["exit_code"], nullptr);
  EXPECT_EQ(out["exited_at_unix_ms"], 1700000000000);
  EXPECT_EQ(result.response["status"], "completed");
}

// ---- the wait budget -----------------------------------------------------------

TEST_F(RouterTest, ExecuteWaitsTheDefaultWhateverTheRequestTimeout) {
  options_.default_wait_ms = kRequestTimeoutMs + 2000;  // longer than the request timeout
  Handle(ExecuteArgs("make"));
  options_.default_wait_ms = 400;
  router_.reset();
  Handle(ExecuteArgs("make"));
  Received got = broker_.Got();
  ASSERT_EQ(got.executes.size(), 2u);
  EXPECT_EQ(got.executes[0].wait_ms(), static_cast<uint32_t>(kRequestTimeoutMs + 2000));
  EXPECT_EQ(got.executes[1].wait_ms(), 400u);
}

TEST_F(RouterTest, ARequestedWaitIsKeptUnderTheCapAndCappedAboveIt) {
  json execute = ExecuteArgs("make");
  execute["runtime"] = {{"timeout_ms", 3600000}};
  Handle(execute);
  Handle({{"action", "read_output"}, {"target", {{"session_id", "s_1"}}}, {"wait_ms", 3600000}});
  Handle({{"action", "read_output"}, {"target", {{"session_id", "s_1"}}}, {"wait_ms", 1}});
  router().HandleHeadlessTool(
      {{"action", "update_allowlist"}, {"rule", {"make", "test"}}, {"wait_ms", 3600000}});
  Received got = broker_.Got();
  ASSERT_EQ(got.executes.size(), 1u);
  EXPECT_EQ(got.executes[0].wait_ms(), static_cast<uint32_t>(kMaxWaitMs));
  ASSERT_EQ(got.reads.size(), 2u);
  EXPECT_EQ(got.reads[0].wait_ms(), static_cast<uint32_t>(kMaxWaitMs));
  EXPECT_EQ(got.reads[1].wait_ms(), 1u);
  ASSERT_EQ(got.proposals.size(), 1u);
  EXPECT_EQ(got.proposals[0].wait_ms(), static_cast<uint32_t>(kMaxWaitMs));
}

TEST_F(RouterTest, TheRequestTimeoutDoesNotCutAWaitShort) {
  config_.request_timeout_ms = 1000;
  json execute = ExecuteArgs("make");
  execute["runtime"] = {{"timeout_ms", 5000}};
  Handle(execute);
  Received got = broker_.Got();
  ASSERT_EQ(got.executes.size(), 1u);
  EXPECT_EQ(got.executes[0].wait_ms(), 5000u);
}

// ---- shaping the broker's answers ---------------------------------------------------

TEST_F(RouterTest, AFinishedCommandIsCompletedWithItsExitAndOutput) {
  Script script;
  script.execute.set_session_id("s_9");
  script.execute.set_terminal_id("t_9");
  script.execute.mutable_exit()->set_running(false);
  script.execute.mutable_exit()->set_exit_code(2);
  script.execute.mutable_exit()->set_exited_at_unix_ms(1700000000123);
  script.execute.mutable_exit()->set_completion("osc133");
  script.execute.mutable_output()->set_text("make: *** No rule\n");
  script.execute.mutable_output()->set_next_cursor(18);
  script.execute.mutable_approval()->set_state("allowed");
  script.execute.mutable_approval()->set_rule("make-any");
  broker_.Set(script);
  RouterResult result = Handle(ExecuteArgs("make"));
  ASSERT_FALSE(result.is_error) << result.response.dump();
  EXPECT_EQ(result.response["success"], true);
  EXPECT_EQ(result.response["status"], "completed");
  EXPECT_EQ(result.response["identity"]["session_id"], "s_9");
  EXPECT_EQ(result.response["identity"]["terminal_id"], "t_9");
  const json& out = result.response["result"];
  EXPECT_EQ(out["running"], false);
  EXPECT_EQ(out["exit_code"], 2);
  EXPECT_EQ(out["signal"], nullptr);
  EXPECT_EQ(out["exited_at_unix_ms"], 1700000000123);
  EXPECT_EQ(out["completion"], "osc133");
  EXPECT_EQ(out["stdout"], "make: *** No rule\n");
  EXPECT_EQ(out["stderr"], "");
  EXPECT_EQ(out["cursor"], 18);
  EXPECT_EQ(out["authorization"], "allowed");
  EXPECT_EQ(out["approval"]["rule"], "make-any");
}

TEST_F(RouterTest, APendingApprovalIsAcceptedWithTheApprovalState) {
  Script script;
  script.execute.set_session_id("s_4");
  script.execute.set_terminal_id("t_4");
  script.execute.mutable_exit()->set_running(true);
  script.execute.mutable_approval()->set_state("pending");
  script.execute.mutable_approval()->set_approval_id("ap_1");
  script.execute.mutable_approval()->set_reason("git push asks");
  broker_.Set(script);
  RouterResult result = Handle(ExecuteArgs("git push"));
  ASSERT_FALSE(result.is_error) << result.response.dump();
  EXPECT_EQ(result.response["status"], "accepted");
  const json& out = result.response["result"];
  EXPECT_EQ(out["running"], true);
  EXPECT_EQ(out["authorization"], "pending");
  EXPECT_EQ(out["approval"]["state"], "pending");
  EXPECT_EQ(out["approval"]["approval_id"], "ap_1");
  EXPECT_EQ(out["approval"]["reason"], "git push asks");
  EXPECT_FALSE(out["approval"].contains("decided_by"));  // empty fields are left out
  EXPECT_FALSE(out.contains("exited_at_unix_ms"));
}

TEST_F(RouterTest, WithoutAnApprovalStateTheCommandIsAllowed) {
  Script script;
  script.execute.mutable_exit()->set_running(false);
  script.execute.mutable_exit()->set_exit_code(0);
  broker_.Set(script);
  RouterResult result = Handle(ExecuteArgs("true"));
  ASSERT_FALSE(result.is_error) << result.response.dump();
  EXPECT_EQ(result.response["result"]["authorization"], "allowed");
  EXPECT_FALSE(result.response["result"].contains("approval"));
}

// ---- the broker's PM_TERM errors ----------------------------------------------------

TEST_F(RouterTest, ADeclineArrivesAsTheCanonicalErrorWithItsFallback) {
  Script script;
  script.errors["Execute"] = Error(
      ErrorCode::kDeclined, "declined by alice: not now",
      {{"approval_id", "ap_2"}, {"decided_by", "alice"}, {"surface", "cli"}, {"note", "not now"}});
  broker_.Set(script);
  json args = ExecuteArgs("rm -rf build");
  args["correlation"] = {{"trace_id", "trace_declined"}};
  RouterResult result = Handle(args);
  ASSERT_TRUE(result.is_error);
  const json& response = result.response;
  EXPECT_EQ(response["success"], false);
  EXPECT_EQ(response["status"], "failed");
  EXPECT_EQ(response["action"], "execute");
  EXPECT_EQ(response["correlation"]["trace_id"], "trace_declined");
  EXPECT_EQ(response["error"]["code"], "PM_TERM_DECLINED");
  EXPECT_EQ(response["error"]["message"], "declined by alice: not now");
  EXPECT_EQ(response["error"]["details"]["decided_by"], "alice");
  EXPECT_EQ(response["error"]["details"]["approval_id"], "ap_2");
  EXPECT_EQ(response["error"]["retriable"], false);
  EXPECT_EQ(response["fallback"]["strategy"], "report_decline");
  EXPECT_EQ(response["fallback"]["next_action"], "none");
  EXPECT_EQ(response["fallback"]["can_auto_retry"], false);
}

TEST_F(RouterTest, AnApprovalTimeoutArrivesAsTimeoutWithPhaseApproval) {
  Script script;
  script.errors["Execute"] =
      Error(ErrorCode::kTimeout, "no one approved the command within the approval timeout",
            {{"phase", "approval"}, {"timeout_ms", 60000}, {"approval_id", "ap_3"}});
  broker_.Set(script);
  RouterResult result = Handle(ExecuteArgs("git push"));
  ASSERT_TRUE(result.is_error);
  const json& response = result.response;
  EXPECT_EQ(response["error"]["code"], "PM_TERM_TIMEOUT");
  EXPECT_EQ(response["error"]["details"]["phase"], "approval");
  EXPECT_EQ(response["error"]["details"]["timeout_ms"], 60000);
  EXPECT_EQ(response["error"]["retriable"], true);
  EXPECT_EQ(response["fallback"]["strategy"], "suggest_retry_headless_or_interactive");
  EXPECT_EQ(response["fallback"]["next_action"], "execute");
  EXPECT_EQ(response["fallback"]["recommended_mode"], "headless");
}

TEST_F(RouterTest, AnUnknownSessionArrivesAsNotFoundPointingAtList) {
  Script script;
  script.errors["ReadOutput"] =
      Error(ErrorCode::kNotFound, "no session s_gone", {{"session_id", "s_gone"}});
  broker_.Set(script);
  RouterResult result = Handle(TargetArgs("read_output", "s_gone"));
  ASSERT_TRUE(result.is_error);
  EXPECT_EQ(result.response["action"], "read_output");
  EXPECT_EQ(result.response["error"]["code"], "PM_TERM_NOT_FOUND");
  EXPECT_EQ(result.response["error"]["details"]["session_id"], "s_gone");
  EXPECT_EQ(result.response["fallback"]["strategy"], "refresh_list_then_retry");
  EXPECT_EQ(result.response["fallback"]["next_action"], "list");
}

TEST_F(RouterTest, GuiUnavailableKeepsItsReason) {
  Script script;
  script.errors["Execute"] = Error(ErrorCode::kGuiUnavailable, "no one is watching terminal t_1",
                                   {{"reason", gui::kNoViewer}, {"terminal_id", "t_1"}});
  // An older broker names no reason: the client tells it by the details.
  script.errors["Terminate"] =
      Error(ErrorCode::kGuiUnavailable, "nobody watches", {{"surfaces_tried", {"console: off"}}});
  broker_.Set(script);
  RouterResult result = Handle(ExecuteArgs("make"));
  ASSERT_TRUE(result.is_error);
  EXPECT_EQ(result.response["error"]["code"], "PM_TERM_GUI_UNAVAILABLE");
  EXPECT_EQ(result.response["error"]["details"]["reason"], gui::kNoViewer);
  EXPECT_EQ(result.response["error"]["details"]["terminal_id"], "t_1");
  EXPECT_EQ(result.response["fallback"]["strategy"], "fallback_to_headless_if_allowed");
  RouterResult terminated = Handle(TargetArgs("terminate", "s_1"));
  ASSERT_TRUE(terminated.is_error);
  EXPECT_EQ(terminated.response["error"]["details"]["reason"], gui::kNoViewer);
  // Neither failure ran anything in the headless lane.
  Received got = broker_.Got();
  EXPECT_EQ(got.executes.size(), 1u);
  EXPECT_EQ(got.terminates.size(), 1u);
  EXPECT_TRUE(got.policy_requests.empty());
}

// ---- the output budget (docs/CONTRACT.md, 'Output budget') ----------------------

// Output that is not one byte repeated, so a misplaced cut shows.
std::string BuildLog(size_t bytes) {
  std::string out;
  for (int i = 1; out.size() < bytes; ++i) absl::StrAppend(&out, "step ", i, " done\n");
  out.resize(bytes);
  return out;
}

// A broker whose session `session` has printed `output` and ended: it reads
// as the real one does, from a cursor or the tail, at most max_bytes.
void ServeOutput(Script* script, const std::string& session, const std::string& output) {
  script->on_read = [session, output](const v1::ReadOutputRequest& request,
                                      v1::ReadOutputResponse* response) {
    uint64_t max = request.max_bytes() == 0 ? 65536 : request.max_bytes();
    uint64_t from = request.tail() ? (output.size() > max ? output.size() - max : 0)
                                   : std::min<uint64_t>(request.cursor(), output.size());
    std::string text = output.substr(from, max);
    response->set_session_id(session);
    response->mutable_exit()->set_running(false);
    response->mutable_exit()->set_exit_code(0);
    v1::Output* out = response->mutable_output();
    out->set_text(text);
    out->set_start(from);
    out->set_next_cursor(from + text.size());
    out->set_more(from + text.size() < output.size());
  };
}

TEST_F(RouterTest, ALargeOutputIsItsHeadAndTailWithinTheBudget) {
  const std::string output = BuildLog(100 * 1024);
  Script script;
  script.execute.set_session_id("s_big");
  script.execute.set_terminal_id("t_big");
  script.execute.mutable_exit()->set_running(false);
  script.execute.mutable_exit()->set_exit_code(0);
  // What the broker returns for the head the agent asks for (2048 bytes).
  script.execute.mutable_output()->set_text(output.substr(0, 2048));
  script.execute.mutable_output()->set_next_cursor(2048);
  script.execute.mutable_output()->set_more(true);
  ServeOutput(&script, "s_big", output);
  broker_.Set(script);
  json args = ExecuteArgs("make");
  args["max_bytes"] = 4096;
  RouterResult result = Handle(args);
  ASSERT_FALSE(result.is_error) << result.response.dump();
  Received got = broker_.Got();
  ASSERT_EQ(got.executes.size(), 1u);
  EXPECT_EQ(got.executes[0].max_bytes(), 2048u);
  // One more call: the tail of the session, in the same format, without a wait.
  ASSERT_EQ(got.reads.size(), 1u);
  EXPECT_TRUE(got.reads[0].tail());
  EXPECT_EQ(got.reads[0].session_id(), "s_big");
  EXPECT_EQ(got.reads[0].max_bytes(), 2048u);
  EXPECT_EQ(got.reads[0].wait_ms(), 0u);
  EXPECT_EQ(got.reads[0].format(), v1::OUTPUT_FORMAT_CLEAN);
  const json& out = result.response["result"];
  EXPECT_EQ(result.response["status"], "completed");
  EXPECT_EQ(out["stdout"], output.substr(0, 2048));
  EXPECT_EQ(out["cursor"], 2048);  // reading on from here loses nothing
  EXPECT_EQ(out["more"], true);
  EXPECT_EQ(out["omitted_bytes"], output.size() - 4096);
  EXPECT_EQ(out["tail"]["stdout"], output.substr(output.size() - 2048));
  EXPECT_EQ(out["tail"]["start"], output.size() - 2048);
  EXPECT_EQ(out["tail"]["cursor"], output.size());

  // read_output from that cursor, with the default budget, continues the head.
  RouterResult next = Handle({{"action", "read_output"},
                              {"target", {{"session_id", "s_big"}}},
                              {"cursor", out["cursor"]}});
  ASSERT_FALSE(next.is_error) << next.response.dump();
  got = broker_.Got();
  ASSERT_EQ(got.reads.size(), 3u);
  EXPECT_EQ(got.reads[1].cursor(), 2048u);
  EXPECT_EQ(got.reads[1].max_bytes(), kDefaultOutputBudget / 2);
  EXPECT_TRUE(got.reads[2].tail());
  const json& page = next.response["result"];
  EXPECT_EQ(page["output_start"], 2048);
  EXPECT_EQ(page["stdout"], output.substr(2048, kDefaultOutputBudget / 2));
  EXPECT_EQ(page["omitted_bytes"], output.size() - 2048 - kDefaultOutputBudget);
}

TEST_F(RouterTest, WithoutATailTheBudgetIsOnePageFromTheCursor) {
  const std::string output = BuildLog(100 * 1024);
  Script script;
  script.read.set_session_id("s_page");
  script.read.mutable_output()->set_text(output.substr(8192, 4096));
  script.read.mutable_output()->set_start(8192);
  script.read.mutable_output()->set_next_cursor(8192 + 4096);
  script.read.mutable_output()->set_more(true);
  broker_.Set(script);
  RouterResult result = Handle({{"action", "read_output"},
                                {"target", {{"session_id", "s_page"}}},
                                {"cursor", 8192},
                                {"max_bytes", 4096},
                                {"tail", false}});
  ASSERT_FALSE(result.is_error) << result.response.dump();
  Received got = broker_.Got();
  ASSERT_EQ(got.reads.size(), 1u);  // no tail read
  EXPECT_EQ(got.reads[0].max_bytes(), 4096u);
  const json& out = result.response["result"];
  EXPECT_EQ(out["stdout"], output.substr(8192, 4096));
  EXPECT_EQ(out["cursor"], 8192 + 4096);
  EXPECT_EQ(out["more"], true);
  EXPECT_EQ(out["omitted_bytes"], 0);
  EXPECT_FALSE(out.contains("tail"));
}

TEST_F(RouterTest, OutputThatFitsTheBudgetStaysContiguous) {
  const std::string output = BuildLog(3000);
  Script script;
  script.read.set_session_id("s_mid");
  script.read.mutable_output()->set_text(output.substr(0, 2048));
  script.read.mutable_output()->set_next_cursor(2048);
  script.read.mutable_output()->set_more(true);
  // The first read is the scripted head; the ones after it come from the session's output.
  ServeOutput(&script, "s_mid", output);
  script.on_read = [first = true, inner = script.on_read](
                       const v1::ReadOutputRequest& request,
                       v1::ReadOutputResponse* response) mutable {
    if (!first) inner(request, response);
    first = false;
  };
  broker_.Set(script);
  RouterResult result = Handle(
      {{"action", "read_output"}, {"target", {{"session_id", "s_mid"}}}, {"max_bytes", 4096}});
  ASSERT_FALSE(result.is_error) << result.response.dump();
  const json& out = result.response["result"];
  EXPECT_EQ(out["stdout"], output);
  EXPECT_EQ(out["cursor"], output.size());
  EXPECT_EQ(out["more"], false);
  EXPECT_EQ(out["omitted_bytes"], 0);
  EXPECT_FALSE(out.contains("tail"));
}

TEST_F(RouterTest, AHeadlessRunIsShapedTheSameWayAndItsCursorReadsEveryByte) {
  constexpr char kSeqPolicy[] = R"(
default_rules = false
[[rule]]
id = "seq"
action = "allow"
prefix = ["seq"]
)";
  Script script;
  script.policy.set_policy_json(BrokerPolicyJson(kSeqPolicy));
  broker_.Set(script);
  std::string expected;
  for (int i = 1; i <= 40000; ++i) absl::StrAppend(&expected, i, "\n");
  json run = ExecuteArgs("seq", "headless");
  run["execution"]["args"] = {"1", "40000"};
  run["runtime"] = {{"timeout_ms", 5000}};
  RouterResult started = Handle(run);
  ASSERT_FALSE(started.is_error) << started.response.dump();
  ASSERT_EQ(started.response["status"], "completed") << started.response.dump();
  const json& out = started.response["result"];
  const std::string head = out["stdout"].get<std::string>();
  ASSERT_TRUE(out.contains("tail")) << out.dump();
  const std::string tail = out["tail"]["stdout"].get<std::string>();
  EXPECT_LE(head.size() + tail.size(), kDefaultOutputBudget);
  EXPECT_EQ(out["omitted_bytes"], expected.size() - head.size() - tail.size());
  EXPECT_EQ(out["cursor"], head.size());
  EXPECT_EQ(out["more"], true);
  // Read on from the cursor in pages until the tail: the whole output, exact.
  std::string session = started.response["identity"]["session_id"].get<std::string>();
  std::string all = head;
  uint64_t cursor = out["cursor"].get<uint64_t>();
  const uint64_t tail_start = out["tail"]["start"].get<uint64_t>();
  while (cursor < tail_start) {
    RouterResult page = Handle(
        {{"action", "read_output"}, {"target", {{"session_id", session}}}, {"cursor", cursor}});
    ASSERT_FALSE(page.is_error) << page.response.dump();
    ASSERT_EQ(page.response["result"]["output_start"], cursor);
    all += page.response["result"]["stdout"].get<std::string>();
    cursor = page.response["result"]["cursor"].get<uint64_t>();
  }
  all.resize(tail_start);
  EXPECT_EQ(all + tail, expected);
  EXPECT_TRUE(broker_.Got().executes.empty());
}

// ---- lane selection -------------------------------------------------------------

TEST_F(RouterTest, AHeadlessExecuteIsJudgedByTheBrokersPolicyAndNeverSentToIt) {
  Script script;
  script.policy.set_policy_json(BrokerPolicyJson());
  broker_.Set(script);
  json args = ExecuteArgs("ls", "headless");
  args["execution"]["args"] = {"-l"};
  args["correlation"] = {{"trace_id", "trace_headless"}};
  RouterResult result = Handle(args);
  ASSERT_TRUE(result.is_error) << result.response.dump();
  EXPECT_EQ(result.response["error"]["code"], "PM_TERM_BLOCKED_DESTRUCTIVE");
  EXPECT_EQ(result.response["error"]["details"]["rule"], "broker-denies-ls");
  EXPECT_EQ(result.response["error"]["details"]["command"], "ls -l");
  EXPECT_EQ(result.response["resolved"]["mode"], "headless");
  Received got = broker_.Got();
  EXPECT_TRUE(got.executes.empty());
  ASSERT_EQ(got.policy_requests.size(), 1u);
  EXPECT_EQ(got.policy_requests[0].correlation().trace_id(), "trace_headless");
}

TEST_F(RouterTest, WithoutTheBrokersPolicyTheHeadlessLaneUsesTheBuiltInOne) {
  Router broken(options_, contract::MakeError(ErrorCode::kInvalidMode, "no token file"));
  RouterResult result = broken.Handle({{"action", "execute"},
                                       {"invocation", {{"mode", "headless"}}},
                                       {"execution", {{"command", "rm"}, {"args", {"-rf", "/"}}}}});
  ASSERT_TRUE(result.is_error) << result.response.dump();
  EXPECT_EQ(result.response["error"]["code"], "PM_TERM_BLOCKED_DESTRUCTIVE");
  EXPECT_NE(result.response["error"]["details"]["rule"].get<std::string>(), "");
  // A broker that cannot give its policy: the built-in one decides.
  Script script;
  script.errors["GetAgentPolicy"] = Error(ErrorCode::kInternal, "policy unavailable", {});
  broker_.Set(script);
  RouterResult allowlist = router().HandleHeadlessTool({{"action", "get_allowlist"}});
  ASSERT_FALSE(allowlist.is_error) << allowlist.response.dump();
  EXPECT_EQ(allowlist.response["result"]["source"], "builtin");
  EXPECT_EQ(broker_.Got().policy_requests.size(), 1u);
}

TEST_F(RouterTest, ABrokerPolicyThatIsEmptyOrInvalidFallsBackToTheLocalFile) {
  options_.local_policy_file = config_.token_file + ".policy.toml";
  std::ofstream(options_.local_policy_file) << R"(
default_rules = false
[[rule]]
id = "local-allows-make"
action = "allow"
exact = ["make", "test"]
)";
  for (const std::string& snapshot : {std::string(), std::string("{\"rules\": 7")}) {
    SCOPED_TRACE(snapshot);
    Script script;
    script.policy.set_policy_json(snapshot);
    broker_.Set(script);
    RouterResult result = router().HandleHeadlessTool({{"action", "get_allowlist"}});
    ASSERT_FALSE(result.is_error) << result.response.dump();
    EXPECT_EQ(result.response["result"]["source"], "local_file");
    ASSERT_EQ(result.response["result"]["allow"].size(), 1u) << result.response.dump();
    EXPECT_EQ(result.response["result"]["allow"][0]["id"], "local-allows-make");
  }
  EXPECT_EQ(broker_.Got().policy_requests.size(), 2u);
}

TEST_F(RouterTest, ALocalPolicyFileNotInForceIsReportedAsTheBuiltInPolicyWithItsReason) {
  options_.local_policy_file = config_.token_file + ".policy.toml";
  std::ofstream(options_.local_policy_file) << "version = 1\ncolour = \"red\"\n";
  broker_.Set(Script{});  // the broker has no policy to give: the local one applies
  RouterResult allowlist = router().HandleHeadlessTool({{"action", "get_allowlist"}});
  ASSERT_FALSE(allowlist.is_error) << allowlist.response.dump();
  const json& listed = allowlist.response["result"];
  EXPECT_EQ(listed["source"], "builtin");
  std::string why = listed.value("source_reason", "");
  EXPECT_EQ(why.rfind(options_.local_policy_file + ":2: unknown key \"colour\"", 0), 0u) << why;
  bool lists_default_echo = false;
  for (const json& rule : listed["allow"]) lists_default_echo |= rule["id"] == "default.echo";
  EXPECT_TRUE(lists_default_echo) << listed.dump();

  // A headless execute is judged by the built-in policy, and says so.
  json run = ExecuteArgs("echo", "headless");
  run["execution"]["args"] = {"hi"};
  run["runtime"] = {{"timeout_ms", 5000}};
  RouterResult ran = Handle(run);
  ASSERT_FALSE(ran.is_error) << ran.response.dump();
  const json& policy = ran.response["result"]["policy"];
  EXPECT_EQ(policy["source"], "builtin");
  EXPECT_EQ(policy["rule"], "default.echo");
  EXPECT_EQ(policy.value("source_reason", ""), why);

  // Fixed, the file is in force and there is nothing to explain.
  std::ofstream(options_.local_policy_file) << R"(
default_rules = false
[[rule]]
id = "local-allows-echo"
action = "allow"
exact = ["echo", "hi"]
)";
  ran = Handle(run);
  ASSERT_FALSE(ran.is_error) << ran.response.dump();
  EXPECT_EQ(ran.response["result"]["policy"]["source"], "local_file");
  EXPECT_EQ(ran.response["result"]["policy"]["rule"], "local-allows-echo");
  EXPECT_FALSE(ran.response["result"]["policy"].contains("source_reason"));

  // Removed, the built-in policy applies again.
  std::remove(options_.local_policy_file.c_str());
  allowlist = router().HandleHeadlessTool({{"action", "get_allowlist"}});
  EXPECT_EQ(allowlist.response["result"]["source"], "builtin");
  EXPECT_EQ(allowlist.response["result"].value("source_reason", ""),
            options_.local_policy_file + " does not exist");
}

TEST_F(RouterTest, HeadlessRefusesAVariableThatCanChangeWhatRuns) {
  Script script;
  script.policy.set_policy_json(BrokerPolicyJson());
  broker_.Set(script);
  json args = ExecuteArgs("echo", "headless");
  args["execution"]["args"] = {"hi"};
  args["execution"]["env"] = {{"LD_PRELOAD", "/tmp/evil.so"}};
  RouterResult result = Handle(args);
  ASSERT_TRUE(result.is_error) << result.response.dump();
  EXPECT_EQ(result.response["error"]["code"], "PM_TERM_INVALID_PAYLOAD");
  EXPECT_EQ(result.response["error"]["details"]["field"], "execution.env.LD_PRELOAD");
  EXPECT_TRUE(broker_.Got().executes.empty());
}

TEST_F(RouterTest, AHeadlessReadOrKillOfAnUnknownSessionIsNotFoundLocally) {
  RouterResult read = Handle({{"action", "read_output"},
                              {"invocation", {{"mode", "headless"}}},
                              {"target", {{"session_id", "s_not_here"}}}});
  ASSERT_TRUE(read.is_error);
  EXPECT_EQ(read.response["error"]["code"], "PM_TERM_NOT_FOUND");
  RouterResult kill = Handle({{"action", "terminate"},
                              {"invocation", {{"mode", "headless"}}},
                              {"target", {{"session_id", "s_not_here"}}}});
  ASSERT_TRUE(kill.is_error);
  EXPECT_EQ(kill.response["error"]["code"], "PM_TERM_NOT_FOUND");
  Received got = broker_.Got();
  EXPECT_TRUE(got.reads.empty());
  EXPECT_TRUE(got.terminates.empty());
}

TEST_F(RouterTest, ASessionTheHeadlessLaneOwnsStaysHeadlessWithoutAMode) {
  Script script;
  script.policy.set_policy_json(BrokerPolicyJson());
  v1::SessionInfo* remote = script.list.add_sessions();
  remote->set_session_id("s_remote");
  remote->set_terminal_id("t_remote");
  remote->set_command("make");
  remote->mutable_exit()->set_running(true);
  broker_.Set(script);
  json run = ExecuteArgs("echo", "headless");
  run["execution"]["args"] = {"hi"};
  run["runtime"] = {{"timeout_ms", 5000}};  // long enough for echo to end
  RouterResult started = Handle(run);
  ASSERT_FALSE(started.is_error) << started.response.dump();
  ASSERT_EQ(started.response["status"], "completed") << started.response.dump();
  EXPECT_EQ(started.response["result"]["lane"], "headless");
  EXPECT_EQ(started.response["result"]["policy"]["source"], "broker");
  EXPECT_EQ(started.response["result"]["policy"]["rule"], "broker-allows-echo");
  EXPECT_EQ(started.response["result"]["stdout"], "hi\n");
  std::string session = started.response["identity"]["session_id"].get<std::string>();
  ASSERT_FALSE(session.empty());

  // No mode: the headless lane owns the id, so the broker never hears of it.
  RouterResult read = Handle(TargetArgs("read_output", session));
  ASSERT_FALSE(read.is_error) << read.response.dump();
  EXPECT_EQ(read.response["result"]["lane"], "headless");
  EXPECT_EQ(read.response["result"]["stdout"], "hi\n");
  EXPECT_EQ(read.response["result"]["exit_code"], 0);
  RouterResult killed = Handle(TargetArgs("terminate", session));
  ASSERT_FALSE(killed.is_error) << killed.response.dump();
  EXPECT_EQ(killed.response["identity"]["session_id"], session);
  // An id it does not own goes to the broker.
  Handle(TargetArgs("read_output", "s_remote"));
  Received got = broker_.Got();
  EXPECT_TRUE(got.executes.empty());
  ASSERT_EQ(got.reads.size(), 1u);
  EXPECT_EQ(got.reads[0].session_id(), "s_remote");
  EXPECT_TRUE(got.terminates.empty());

  // list merges both lanes.
  RouterResult listed = Handle({{"action", "list"}});
  ASSERT_FALSE(listed.is_error) << listed.response.dump();
  const json& items = listed.response["result"]["items"];
  ASSERT_EQ(items.size(), 2u) << items.dump();
  EXPECT_EQ(items[0]["session_id"], "s_remote");
  EXPECT_EQ(items[0]["mode"], "interactive");
  EXPECT_EQ(items[0]["adapter"], "broker");
  EXPECT_EQ(items[1]["session_id"], session);
  EXPECT_EQ(items[1]["mode"], "headless");
  EXPECT_EQ(items[1]["command"], "echo hi");
  EXPECT_EQ(items[1]["running"], false);
  EXPECT_EQ(listed.response["result"]["lanes"]["interactive"]["available"], true);
  EXPECT_EQ(listed.response["result"]["lanes"]["headless"]["available"], true);
}

// ---- list -----------------------------------------------------------------------

TEST_F(RouterTest, AnInteractiveListIsTheBrokersSessions) {
  Script script;
  v1::SessionInfo* info = script.list.add_sessions();
  info->set_session_id("s_1");
  info->set_terminal_id("t_1");
  info->set_command("make");
  info->set_cwd("/srv/work");
  info->set_started_at_unix_ms(1700000000000);
  info->set_output_bytes(42);
  info->mutable_exit()->set_running(false);
  info->mutable_exit()->set_exit_code(0);
  broker_.Set(script);
  RouterResult result = Handle({{"action", "list"},
                                {"invocation", {{"mode", "interactive"}}},
                                {"correlation", {{"trace_id", "trace_list"}}}});
  ASSERT_FALSE(result.is_error) << result.response.dump();
  const json& out = result.response["result"];
  ASSERT_EQ(out["items"].size(), 1u);
  const json& item = out["items"][0];
  EXPECT_EQ(item["session_id"], "s_1");
  EXPECT_EQ(item["terminal_id"], "t_1");
  EXPECT_EQ(item["mode"], "interactive");
  EXPECT_EQ(item["command"], "make");
  EXPECT_EQ(item["cwd"], "/srv/work");
  EXPECT_EQ(item["started_at_unix_ms"], 1700000000000);
  EXPECT_EQ(item["output_bytes"], 42);
  EXPECT_EQ(item["exit_code"], 0);
  EXPECT_EQ(out["lanes"], json({{"interactive", {{"available", true}, {"adapter", "broker"}}}}));
  Received got = broker_.Got();
  ASSERT_EQ(got.lists.size(), 1u);
  EXPECT_EQ(got.lists[0].correlation().trace_id(), "trace_list");
}

TEST_F(RouterTest, AHeadlessListNeverAsksTheBroker) {
  RouterResult result = Handle({{"action", "list"}, {"invocation", {{"mode", "headless"}}}});
  ASSERT_FALSE(result.is_error) << result.response.dump();
  EXPECT_EQ(result.response["result"]["lanes"],
            json({{"headless", {{"available", true}, {"adapter", "headless_process"}}}}));
  EXPECT_EQ(broker_.Got().Calls(), 0u);
  EXPECT_TRUE(broker_.Got().handshakes.empty());
}

TEST_F(RouterTest, AFailingBrokerListFailsAnInteractiveListButNotAMergedOne) {
  Script script;
  script.errors["List"] = Error(ErrorCode::kDisconnected, "the broker restarted", {});
  broker_.Set(script);
  RouterResult interactive =
      Handle({{"action", "list"}, {"invocation", {{"mode", "interactive"}}}});
  ASSERT_TRUE(interactive.is_error);
  EXPECT_EQ(interactive.response["error"]["code"], "PM_TERM_DISCONNECTED");
  EXPECT_EQ(interactive.response["fallback"]["can_auto_retry"], true);  // list is idempotent
  RouterResult merged = Handle({{"action", "list"}});
  ASSERT_FALSE(merged.is_error) << merged.response.dump();
  const json& lanes = merged.response["result"]["lanes"];
  EXPECT_EQ(lanes["interactive"]["available"], false);
  EXPECT_EQ(lanes["interactive"]["error"], "PM_TERM_DISCONNECTED");
  EXPECT_EQ(lanes["headless"]["available"], true);
}

// ---- memory_terminal (the strict headless tool) ----------------------------------------

TEST_F(RouterTest, MemoryTerminalRefusesAnUnknownAction) {
  RouterResult result = router().HandleHeadlessTool({{"action", "shell"}});
  ASSERT_TRUE(result.is_error);
  EXPECT_EQ(result.response["tool"], "memory_terminal");
  EXPECT_EQ(result.response["error"]["code"], "PM_TERM_INVALID_ACTION");
  EXPECT_EQ(result.response["error"]["details"]["allowed_actions"].size(), 5u);
  RouterResult not_object = router().HandleHeadlessTool(json::array());
  ASSERT_TRUE(not_object.is_error);
  EXPECT_EQ(not_object.response["error"]["code"], "PM_TERM_INVALID_ACTION");
  EXPECT_EQ(broker_.Got().Calls(), 0u);
}

TEST_F(RouterTest, UpdateAllowlistNeedsAnArrayOfStrings) {
  for (const json& rule : {json(), json("make test"), json::array(), json({"make", 1})}) {
    json args = {{"action", "update_allowlist"}};
    if (!rule.is_null()) args["rule"] = rule;
    SCOPED_TRACE(args.dump());
    RouterResult result = router().HandleHeadlessTool(args);
    ASSERT_TRUE(result.is_error);
    EXPECT_EQ(result.response["error"]["code"], "PM_TERM_INVALID_PAYLOAD");
    EXPECT_EQ(result.response["error"]["details"]["field"], "rule");
  }
  EXPECT_TRUE(broker_.Got().proposals.empty());
}

TEST_F(RouterTest, UpdateAllowlistProposesTheRuleToAPerson) {
  Script script;
  script.propose.mutable_approval()->set_state("pending");
  script.propose.mutable_approval()->set_approval_id("ap_rule");
  broker_.Set(script);
  RouterResult result = router().HandleHeadlessTool(
      {{"action", "update_allowlist"}, {"rule", {"make", "test"}}, {"reason", "CI needs it"}});
  ASSERT_FALSE(result.is_error) << result.response.dump();
  EXPECT_EQ(result.response["tool"], "memory_terminal");
  EXPECT_EQ(result.response["success"], true);
  const json& out = result.response["result"];
  EXPECT_EQ(out["proposed"], json({"make", "test"}));
  EXPECT_EQ(out["approval"]["state"], "pending");
  EXPECT_EQ(out["approval"]["approval_id"], "ap_rule");
  EXPECT_EQ(out["authorization"], "pending");
  Received got = broker_.Got();
  ASSERT_EQ(got.proposals.size(), 1u);
  ASSERT_EQ(got.proposals[0].argv_size(), 2);
  EXPECT_EQ(got.proposals[0].argv(0), "make");
  EXPECT_EQ(got.proposals[0].argv(1), "test");
  EXPECT_EQ(got.proposals[0].reason(), "CI needs it");
  EXPECT_EQ(got.proposals[0].wait_ms(), 0u);
  EXPECT_EQ(got.proposals[0].agent_id(), kAgentId);
}

TEST_F(RouterTest, GetAllowlistListsTheBrokersAllowRules) {
  Script script;
  script.policy.set_policy_json(BrokerPolicyJson());
  broker_.Set(script);
  RouterResult result = router().HandleHeadlessTool({{"action", "get_allowlist"}});
  ASSERT_FALSE(result.is_error) << result.response.dump();
  const json& out = result.response["result"];
  EXPECT_EQ(out["source"], "broker");
  EXPECT_EQ(out["read_only"], true);
  ASSERT_EQ(out["allow"].size(), 1u) << out.dump();  // the deny rule is not listed
  EXPECT_EQ(out["allow"][0]["id"], "broker-allows-echo");
  EXPECT_EQ(out["allow"][0]["argv"], json({"echo", "hi"}));
  EXPECT_EQ(out["allow"][0]["match"], "exact");
}

TEST_F(RouterTest, MemoryTerminalRunIsAHeadlessExecute) {
  Script script;
  script.policy.set_policy_json(BrokerPolicyJson());
  broker_.Set(script);
  RouterResult result = router().HandleHeadlessTool(
      {{"action", "run"}, {"command", "ls"}, {"wait_ms", 10}, {"reason", "ignored"}});
  ASSERT_TRUE(result.is_error) << result.response.dump();
  EXPECT_EQ(result.response["error"]["code"], "PM_TERM_BLOCKED_DESTRUCTIVE");
  EXPECT_EQ(result.response["error"]["details"]["rule"], "broker-denies-ls");
  EXPECT_EQ(result.response["resolved"]["mode"], "headless");
  EXPECT_TRUE(broker_.Got().executes.empty());
}

}  // namespace
}  // namespace termbridge::lane
