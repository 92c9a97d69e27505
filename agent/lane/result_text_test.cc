// Unit tests for the model-readable text of terminal tool results
// (agent/lane/result_text.h; docs/CONTRACT.md, 'MCP wrapping'): the output and
// one short status line, never the JSON payload again.
#include "agent/lane/result_text.h"

#include <string>

#include "gtest/gtest.h"

namespace termbridge::lane {
namespace {

using nlohmann::json;

json Success(const std::string& action, json result, const std::string& session = "s_1",
             const std::string& terminal = "t_1") {
  return {{"success", true},
          {"action", action},
          {"status", "completed"},
          {"correlation", {{"request_id", "req_1"}, {"trace_id", "trace_1"}}},
          {"resolved", {{"canonical_action", action}, {"mode", "interactive"}}},
          {"identity",
           {{"session_id", session.empty() ? json(nullptr) : json(session)},
            {"terminal_id", terminal.empty() ? json(nullptr) : json(terminal)}}},
          {"result", std::move(result)},
          {"error", nullptr}};
}

TEST(ResultTextTest, ATwoByteEchoIsItsOutputAndAStatusLine) {
  json response = Success("execute", {{"stdout", "hi"},
                                      {"stderr", ""},
                                      {"cursor", 57},
                                      {"output_start", 55},
                                      {"gap_bytes", 0},
                                      {"more", false},
                                      {"omitted_bytes", 0},
                                      {"running", false},
                                      {"exit_code", 0},
                                      {"signal", nullptr},
                                      {"completion", "osc133"},
                                      {"authorization", "allowed"}});
  EXPECT_EQ(ResultText(response),
            "hi\n[exit 0 · 2 bytes · session s_1 · terminal t_1 · cursor 57]");
  EXPECT_TRUE(json::parse(ResultText(response), nullptr, false).is_discarded());
}

TEST(ResultTextTest, OmittedBytesAreMarkedBetweenHeadAndTailWithTheCursorToReadThem) {
  json response = Success("read_output",
                          {{"stdout", "first\n"},
                           {"stderr", ""},
                           {"cursor", 8192},
                           {"output_start", 0},
                           {"gap_bytes", 0},
                           {"more", true},
                           {"omitted_bytes", 188416},
                           {"tail", {{"stdout", "last\n"}, {"start", 196608}, {"cursor", 204800}}},
                           {"running", true},
                           {"exit_code", nullptr},
                           {"signal", nullptr}});
  EXPECT_EQ(ResultText(response),
            "first\n"
            "[… 188416 bytes omitted here; read_output cursor=8192 tail=false reads them …]\n"
            "last\n"
            "[running · 11 bytes · session s_1 · terminal t_1 · cursor 8192]");
}

TEST(ResultTextTest, ASecretPromptSaysAPersonMustType) {
  json response = Success("read_output", {{"stdout", "Password: "},
                                          {"cursor", 10},
                                          {"more", false},
                                          {"running", true},
                                          {"secret_prompt", true}});
  EXPECT_EQ(ResultText(response),
            "Password: \n[running, waiting for a person to type a secret (echo is off: your input "
            "is refused) · 10 bytes · session s_1 · terminal t_1 · cursor 10]");
}

TEST(ResultTextTest, WithoutOutputTheTextIsTheStatusLineCountingEveryStream) {
  json response = Success("read_output",
                          {{"stdout", "first\n"},
                           {"stderr", "oops\n"},
                           {"cursor", 8192},
                           {"more", true},
                           {"omitted_bytes", 188416},
                           {"tail", {{"stdout", "last\n"}, {"start", 196608}, {"cursor", 204800}}},
                           {"running", true}});
  EXPECT_EQ(ResultText(response, /*with_output=*/false),
            "[running · 16 bytes in structuredContent · session s_1 · terminal t_1 · cursor 8192]");
  // Errors and lists keep their text: only output moves to structuredContent.
  json list = Success("list", {{"items", json::array()}, {"lanes", json::object()}});
  EXPECT_EQ(ResultText(list, false), ResultText(list, true));
}

TEST(ResultTextTest, MoreToReadAGapAndAWaitAreInTheStatusLine) {
  json response = Success("read_output", {{"stdout", "abc"},
                                          {"cursor", 900},
                                          {"more", true},
                                          {"omitted_bytes", 0},
                                          {"gap_bytes", 4000},
                                          {"wait_result", "timeout"},
                                          {"running", true}});
  EXPECT_EQ(ResultText(response),
            "abc\n[running · 3 bytes · session s_1 · terminal t_1 · cursor 900 (more to read) · "
            "4000 bytes lost before this output (past the buffer) · wait: timeout]");
}

TEST(ResultTextTest, AHeadlessResultShowsStderrApart) {
  json response = Success("execute",
                          {{"lane", "headless"},
                           {"stdout", "out\n"},
                           {"stderr", "warning: x\n"},
                           {"cursor", 4},
                           {"stderr_cursor", 11},
                           {"omitted_bytes", 0},
                           {"stderr_omitted_bytes", 0},
                           {"running", false},
                           {"exit_code", 1},
                           {"signal", nullptr}},
                          "h_1", "");
  EXPECT_EQ(ResultText(response),
            "out\n[stderr]\nwarning: x\n[exit 1 · 15 bytes · headless · session h_1 · cursor 4]");
}

TEST(ResultTextTest, APendingApprovalSaysWhoItWaitsFor) {
  json response =
      Success("execute", {{"stdout", ""},
                          {"cursor", 0},
                          {"omitted_bytes", 0},
                          {"running", true},
                          {"authorization", "pending"},
                          {"approval", {{"state", "pending"}, {"approval_id", "ap_1"}}}});
  EXPECT_EQ(ResultText(response),
            "[waiting for a person to approve (approval ap_1) · 0 bytes · session s_1 · terminal "
            "t_1 · cursor 0]");
}

TEST(ResultTextTest, AnErrorIsItsCodeMessageDetailsAndWhatToDoNext) {
  json response = {{"success", false},
                   {"action", "read_output"},
                   {"status", "failed"},
                   {"error",
                    {{"code", "PM_TERM_NOT_FOUND"},
                     {"category", "identity"},
                     {"message", "unknown session_id"},
                     {"retriable", false},
                     {"details", {{"session_id", "s_nope"}}}}},
                   {"fallback",
                    {{"strategy", "refresh_list_then_retry"},
                     {"next_action", "list"},
                     {"recommended_mode", nullptr},
                     {"user_message", "List the sessions and retry with a current id."},
                     {"can_auto_retry", false}}}};
  EXPECT_EQ(ResultText(response),
            "PM_TERM_NOT_FOUND: unknown session_id\n"
            "details: {\"session_id\":\"s_nope\"}\n"
            "List the sessions and retry with a current id. [next: list]");
}

TEST(ResultTextTest, AListIsOneLinePerSessionAndTheLanes) {
  json response = Success("list",
                          {{"items",
                            {{{"session_id", "s_1"},
                              {"terminal_id", "t_1"},
                              {"mode", "interactive"},
                              {"command", "make"},
                              {"cwd", "/src"},
                              {"running", true}},
                             {{"session_id", "h_2"},
                              {"terminal_id", ""},
                              {"mode", "headless"},
                              {"command", "echo hi"},
                              {"running", false},
                              {"exit_code", 0}}}},
                           {"lanes",
                            {{"headless", {{"available", true}}},
                             {"interactive", {{"available", false}, {"error", "PM_TERM_X"}}}}}},
                          "", "");
  EXPECT_EQ(ResultText(response),
            "s_1  t_1  interactive  running  make  (in /src)\n"
            "h_2  -  headless  exit 0  echo hi\n"
            "[2 sessions · headless lane available · interactive lane unavailable: PM_TERM_X]");
}

TEST(ResultTextTest, TheAllowlistAndAProposalAreShort) {
  json allow = {
      {"success", true},
      {"tool", "memory_terminal"},
      {"action", "get_allowlist"},
      {"status", "completed"},
      {"result",
       {{"source", "broker"},
        {"read_only", true},
        {"allow", {{{"id", "echo"}, {"argv", {"echo"}}, {"regex", ""}, {"match", "prefix"}}}}}}};
  EXPECT_EQ(ResultText(allow),
            "allow echo: prefix echo\n[1 allow rules · source broker · read only: "
            "update_allowlist proposes a rule for a person to approve]");
  json proposal = {{"success", true},
                   {"action", "update_allowlist"},
                   {"status", "completed"},
                   {"result",
                    {{"proposed", {"make", "test"}},
                     {"approval", {{"state", "pending"}, {"approval_id", "ap_2"}}},
                     {"note", "a person decides"}}}};
  EXPECT_EQ(ResultText(proposal),
            "[proposed: make test · approval pending (ap_2) · a person decides]");
}

TEST(ResultTextTest, TerminateSaysSo) {
  json response = Success("terminate", {{"running", false}, {"exit_code", nullptr}, {"signal", 2}});
  EXPECT_EQ(ResultText(response), "[terminated, signal 2 · session s_1 · terminal t_1]");
}

}  // namespace
}  // namespace termbridge::lane
