// The console's wire format: what the page receives and what it may send.
#include "broker/surface/console/messages.h"

#include <csignal>

#include "gtest/gtest.h"

namespace termbridge::console {
namespace {

TEST(EncodeOutputFrame, OffsetIsBigEndianBeforeTheData) {
  std::string frame = EncodeOutputFrame(0x0102030405060708ull, "hi");
  ASSERT_EQ(frame.size(), 10u);
  EXPECT_EQ(frame.substr(0, 8), std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8));
  EXPECT_EQ(frame.substr(8), "hi");
}

TEST(AttachFrameText, NonOutputFramesBecomeJson) {
  v1::AttachServerFrame gap;
  gap.mutable_gap()->set_from(10);
  gap.mutable_gap()->set_to(90);
  EXPECT_EQ(nlohmann::json::parse(AttachFrameText(gap)),
            (nlohmann::json{{"type", "gap"}, {"from", 10}, {"to", 90}}));
  v1::AttachServerFrame exited;
  exited.mutable_exited()->set_exit_code(3);
  nlohmann::json exit = nlohmann::json::parse(AttachFrameText(exited));
  EXPECT_EQ(exit["type"], "exited");
  EXPECT_EQ(exit["exit"]["exit_code"], 3);
  EXPECT_FALSE(exit["exit"].contains("signal"));
  v1::AttachServerFrame output;
  output.mutable_output()->set_data("x");
  EXPECT_EQ(AttachFrameText(output), "");
}

TEST(ParsePageMessage, AckResizeSignal) {
  auto ack = ParsePageMessage(R"({"type":"ack","bytes":4096})");
  ASSERT_TRUE(ack.ok());
  EXPECT_EQ(ack->kind, PageMessage::Kind::kAck);
  EXPECT_EQ(ack->bytes, 4096u);
  auto resize = ParsePageMessage(R"({"type":"resize","cols":120,"rows":40})");
  ASSERT_TRUE(resize.ok());
  EXPECT_EQ(resize->cols, 120u);
  EXPECT_EQ(resize->rows, 40u);
  auto signal = ParsePageMessage(R"({"type":"signal","signal":"SIGINT"})");
  ASSERT_TRUE(signal.ok());
  EXPECT_EQ(signal->signal, SIGINT);
}

TEST(ParsePageMessage, RefusesWhatThePageMayNotSend) {
  EXPECT_FALSE(ParsePageMessage("not json").ok());
  EXPECT_FALSE(ParsePageMessage(R"({"type":"ack","bytes":-1})").ok());
  EXPECT_FALSE(ParsePageMessage(R"({"type":"ack"})").ok());
  EXPECT_FALSE(ParsePageMessage(R"({"type":"resize","cols":0,"rows":10})").ok());
  EXPECT_FALSE(ParsePageMessage(R"({"type":"resize","cols":5000,"rows":10})").ok());
  EXPECT_FALSE(ParsePageMessage(R"({"type":"signal","signal":"SIGKILL"})").ok());
  EXPECT_FALSE(ParsePageMessage(R"({"type":"exec"})").ok());
}

TEST(ParseDecision, BuildsAConsoleDecision) {
  auto request = ParseDecision(R"({"approval_id":"a_1","decision":"deny","note":"not now"})");
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->approval_id(), "a_1");
  EXPECT_EQ(request->decision(), "deny");
  EXPECT_EQ(request->note(), "not now");
  EXPECT_EQ(request->surface(), "console");
  for (const char* decision : {"once", "terminal", "always"}) {
    EXPECT_TRUE(
        ParseDecision(nlohmann::json{{"approval_id", "a"}, {"decision", decision}}.dump()).ok());
  }
  EXPECT_FALSE(ParseDecision(R"({"approval_id":"a_1","decision":"maybe"})").ok());
  EXPECT_FALSE(ParseDecision(R"({"decision":"once"})").ok());
  EXPECT_FALSE(ParseDecision(R"({"approval_id":"a","decision":"deny","note":7})").ok());
  EXPECT_FALSE(ParseDecision(nlohmann::json{{"approval_id", "a"},
                                            {"decision", "deny"},
                                            {"note", std::string(5000, 'x')}}
                                 .dump())
                   .ok());
}

TEST(ParseDecision, ANarrowedRuleGoesWithAlwaysAndATimeBoxWithGrants) {
  auto always = ParseDecision(
      R"({"approval_id":"a","decision":"always","rules_toml":"[[rules]]\nid = \"x\"",)"
      R"("expires_in_seconds":3600})");
  ASSERT_TRUE(always.ok()) << always.status();
  EXPECT_EQ(always->rules_toml(), "[[rules]]\nid = \"x\"");
  EXPECT_EQ(always->expires_in_seconds(), 3600u);
  auto terminal =
      ParseDecision(R"({"approval_id":"a","decision":"terminal","expires_in_seconds":60})");
  ASSERT_TRUE(terminal.ok());
  EXPECT_EQ(terminal->expires_in_seconds(), 60u);
  EXPECT_EQ(ParseDecision(R"({"approval_id":"a","decision":"once"})")->expires_in_seconds(), 0u);
  // A rule or a time box where they mean nothing is a mistake, said so.
  EXPECT_FALSE(ParseDecision(R"({"approval_id":"a","decision":"once","rules_toml":"x"})").ok());
  EXPECT_FALSE(
      ParseDecision(R"({"approval_id":"a","decision":"once","expires_in_seconds":60})").ok());
  EXPECT_FALSE(
      ParseDecision(R"({"approval_id":"a","decision":"always","expires_in_seconds":-1})").ok());
  EXPECT_FALSE(
      ParseDecision(R"({"approval_id":"a","decision":"always","expires_in_seconds":99999999})")
          .ok());
}

TEST(ParseSetLock, TheThreeModesFromTheConsole) {
  for (const char* mode : {"shared", "user_only", "agent_only"}) {
    auto request = ParseSetLock(nlohmann::json{{"terminal_id", "t_1"}, {"mode", mode}}.dump());
    ASSERT_TRUE(request.ok()) << mode;
    EXPECT_EQ(request->mode(), mode);
    EXPECT_EQ(request->terminal_id(), "t_1");
    EXPECT_EQ(request->surface(), "console");
  }
  EXPECT_FALSE(ParseSetLock(R"({"terminal_id":"t_1","mode":"nobody"})").ok());
  EXPECT_FALSE(ParseSetLock(R"({"mode":"shared"})").ok());
}

TEST(ParseOpenTerminal, NameAndCwdAreOptional) {
  auto open = ParseOpenTerminal(R"({"name":"scratch","cwd":"/srv"})");
  ASSERT_TRUE(open.ok());
  EXPECT_EQ(open->name(), "scratch");
  EXPECT_EQ(open->cwd(), "/srv");
  EXPECT_EQ(open->surface(), "console");
  EXPECT_TRUE(open->by().empty());  // the broker names the operator
  EXPECT_TRUE(ParseOpenTerminal("{}").ok());
  EXPECT_FALSE(ParseOpenTerminal(R"({"name":3})").ok());
  EXPECT_FALSE(ParseOpenTerminal("[]").ok());
}

TEST(SessionInfoJson, WhatTellsTerminalsApart) {
  v1::SessionInfo info;
  info.set_terminal_id("t_1");
  info.set_name("build");
  info.set_person("alice");
  info.set_lock("user_only");
  info.set_last_exit_code(2);
  info.set_secret_prompt(true);
  info.mutable_exit()->set_running(true);
  info.mutable_exit()->set_secret_prompt(true);
  nlohmann::json json = SessionInfoJson(info);
  EXPECT_EQ(json["name"], "build");
  EXPECT_EQ(json["person"], "alice");
  EXPECT_EQ(json["lock"], "user_only");
  EXPECT_EQ(json["last_exit_code"], 2);
  EXPECT_EQ(json["secret_prompt"], true);
  EXPECT_EQ(json["exit"]["secret_prompt"], true);
  info.clear_last_exit_code();
  EXPECT_FALSE(SessionInfoJson(info).contains("last_exit_code"));  // none finished yet
}

// A page message or API body nested deep enough to overflow a recursive
// parser gets the same refusal as any other bad message, not a crash.
TEST(ParsePageMessage, RefusesDeepNestingBeforeParsing) {
  std::string deep =
      R"({"type":"ack","bytes":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
  absl::StatusOr<PageMessage> message = ParsePageMessage(deep);
  ASSERT_FALSE(message.ok());
  EXPECT_EQ(message.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(message.status().message().find("nests deeper than 128"), std::string::npos)
      << message.status();
  EXPECT_FALSE(ParseDecision(std::string(100000, '{')).ok());
  EXPECT_FALSE(ParseCloseTerminal(R"({"terminal_id":)" + std::string(200, '[')).ok());
  // Brackets inside strings are text, not nesting.
  EXPECT_TRUE(ParseCloseTerminal(R"({"terminal_id":")" + std::string(200, '[') + "\"}").ok());
}

// nlohmann's parser stops at a NUL byte: a message followed by NUL and
// anything was accepted as if the rest were not there (tests/fuzz).
TEST(ParsePageMessage, RefusesANulByte) {
  std::string ack = std::string(R"({"type":"ack","bytes":1})") + '\0' + "{[junk";
  absl::StatusOr<PageMessage> message = ParsePageMessage(ack);
  ASSERT_FALSE(message.ok());
  EXPECT_EQ(message.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(ParseCloseTerminal(std::string(R"({"terminal_id":"t_1"})") + '\0').ok());
}

TEST(ParseAttachTarget, OffsetOrReplay) {
  auto replay = ParseAttachTarget("terminal=t_1");
  ASSERT_TRUE(replay.ok());
  EXPECT_TRUE(replay->from_start);
  auto resume = ParseAttachTarget("terminal=t%5F1&offset=1234");
  ASSERT_TRUE(resume.ok());
  EXPECT_EQ(resume->terminal_id, "t_1");
  EXPECT_FALSE(resume->from_start);
  EXPECT_EQ(resume->offset, 1234u);
  EXPECT_FALSE(ParseAttachTarget("offset=1").ok());
  EXPECT_FALSE(ParseAttachTarget("terminal=t&offset=x").ok());
}

TEST(QueryParam, DecodesAndSplits) {
  EXPECT_EQ(SplitTarget("/a?b=c").first, "/a");
  EXPECT_EQ(SplitTarget("/a?b=c").second, "b=c");
  EXPECT_EQ(QueryParam("token=a%2Bb&x=1", "token"), "a+b");
  EXPECT_EQ(QueryParam("x=1", "token"), std::nullopt);
  EXPECT_EQ(QueryParam("token", "token"), "");
  EXPECT_EQ(QueryParam("t=%zz%4", "t"), "%zz%4");
}

TEST(StatusJson, CarriesThePmCode) {
  v1::ErrorDetail detail;
  detail.set_code("PM_TERM_NOT_FOUND");
  detail.set_message("no such approval");
  nlohmann::json json =
      StatusJson(grpc::Status(grpc::StatusCode::NOT_FOUND, "x"), detail.SerializeAsString());
  EXPECT_EQ(json["status"], "NOT_FOUND");
  EXPECT_EQ(json["pm_code"], "PM_TERM_NOT_FOUND");
  EXPECT_EQ(json["message"], "no such approval");
  EXPECT_EQ(HttpStatusFor(grpc::StatusCode::NOT_FOUND), 404);
  EXPECT_EQ(HttpStatusFor(grpc::StatusCode::UNIMPLEMENTED), 501);
}

TEST(ApprovalJson, HasWhatTheCardShows) {
  v1::Approval approval;
  approval.set_approval_id("a_1");
  approval.set_command("rm -rf build");
  approval.set_cwd("/work");
  approval.set_agent_id("agent-1");
  approval.set_terminal_id("t_1");
  approval.mutable_state()->set_rule("ask-rm");
  nlohmann::json json = ApprovalJson(approval);
  EXPECT_EQ(json["command"], "rm -rf build");
  EXPECT_EQ(json["cwd"], "/work");
  EXPECT_EQ(json["agent_id"], "agent-1");
  EXPECT_EQ(json["terminal_id"], "t_1");
  EXPECT_EQ(json["state"]["rule"], "ask-rm");
  EXPECT_EQ(json["always_rules_toml"], "");
  approval.set_always_refusal("a compound command");
  EXPECT_EQ(ApprovalJson(approval)["always_refusal"], "a compound command");
}

}  // namespace
}  // namespace termbridge::console
