// Tests for common/contract: the PM_TERM taxonomy and Status round trip, the
// normalization of canonical and legacy requests with every validation rule
// of docs/CONTRACT.md ('Fields'), id generation, and the exact response
// payloads ('Results', 'Errors').
#include <algorithm>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/contract/errors.h"
#include "common/contract/request.h"
#include "common/contract/response.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace termbridge::contract {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kCrockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

const std::vector<ErrorCode>& AllCodes() {
  static const auto* codes =
      new std::vector<ErrorCode>{ErrorCode::kInvalidAction,  ErrorCode::kInvalidPayload,
                                 ErrorCode::kInvalidMode,    ErrorCode::kDeclined,
                                 ErrorCode::kTimeout,        ErrorCode::kDisconnected,
                                 ErrorCode::kGuiUnavailable, ErrorCode::kBlockedDestructive,
                                 ErrorCode::kNotFound,       ErrorCode::kInternal};
  return *codes;
}

// The failure of a Normalize call that must fail.
PmTermError Failure(const absl::StatusOr<CanonicalRequest>& result) {
  EXPECT_FALSE(result.ok()) << "normalization unexpectedly succeeded";
  if (result.ok()) return PmTermError{};
  return FromStatus(result.status());
}

// Asserts that `arguments` fail with INVALID_PAYLOAD naming `field`.
void ExpectPayloadError(const json& arguments, const std::string& field,
                        DeprecationPhase phase = DeprecationPhase::kA) {
  SCOPED_TRACE(arguments.dump());
  PmTermError error = Failure(Normalize(arguments, phase));
  EXPECT_EQ(error.code, ErrorCode::kInvalidPayload) << error.message;
  EXPECT_EQ(error.details.value("field", ""), field) << error.details.dump();
  EXPECT_THAT(error.message, HasSubstr(field));
}

CanonicalRequest MustNormalize(const json& arguments,
                               DeprecationPhase phase = DeprecationPhase::kA) {
  absl::StatusOr<CanonicalRequest> result = Normalize(arguments, phase);
  EXPECT_TRUE(result.ok()) << arguments.dump() << " -> " << result.status();
  return result.ok() ? *result : CanonicalRequest{};
}

// Milliseconds encoded in the 10 time characters of a ULID.
uint64_t UlidMillis(const std::string& ulid) {
  uint64_t value = 0;
  for (char c : ulid.substr(0, 10)) {
    value = value * 32 + static_cast<uint64_t>(std::string(kCrockford).find(c));
  }
  return value;
}

// ---- errors: taxonomy --------------------------------------------------------

struct ExpectedRow {
  ErrorCode code;
  const char* name;
  const char* category;
  bool retriable;
  const char* strategy;
  absl::StatusCode status_code;
};

TEST(ErrorSpecTest, EveryCodeMatchesTheContractTaxonomyTable) {
  const std::vector<ExpectedRow> rows = {
      {ErrorCode::kInvalidAction, "PM_TERM_INVALID_ACTION", "validation", false, "reject_no_retry",
       absl::StatusCode::kInvalidArgument},
      {ErrorCode::kInvalidPayload, "PM_TERM_INVALID_PAYLOAD", "validation", false,
       "reject_no_retry", absl::StatusCode::kInvalidArgument},
      {ErrorCode::kInvalidMode, "PM_TERM_INVALID_MODE", "validation", false, "reject_no_retry",
       absl::StatusCode::kInvalidArgument},
      {ErrorCode::kDeclined, "PM_TERM_DECLINED", "user_decision", false, "report_decline",
       absl::StatusCode::kPermissionDenied},
      {ErrorCode::kTimeout, "PM_TERM_TIMEOUT", "runtime_timeout", true,
       "suggest_retry_headless_or_interactive", absl::StatusCode::kDeadlineExceeded},
      {ErrorCode::kDisconnected, "PM_TERM_DISCONNECTED", "transport", true,
       "suggest_reconnect_retry", absl::StatusCode::kUnavailable},
      {ErrorCode::kGuiUnavailable, "PM_TERM_GUI_UNAVAILABLE", "runtime_unavailable", true,
       "fallback_to_headless_if_allowed", absl::StatusCode::kUnavailable},
      {ErrorCode::kBlockedDestructive, "PM_TERM_BLOCKED_DESTRUCTIVE", "authorization", false,
       "reject_with_safety_hint", absl::StatusCode::kPermissionDenied},
      {ErrorCode::kNotFound, "PM_TERM_NOT_FOUND", "identity", false, "refresh_list_then_retry",
       absl::StatusCode::kNotFound},
      {ErrorCode::kInternal, "PM_TERM_INTERNAL", "internal", true,
       "deterministic_internal_fallback", absl::StatusCode::kInternal},
  };
  ASSERT_EQ(rows.size(), AllCodes().size());
  for (const ExpectedRow& row : rows) {
    SCOPED_TRACE(row.name);
    const ErrorSpec& spec = Spec(row.code);
    EXPECT_EQ(spec.name, row.name);
    EXPECT_EQ(CodeName(row.code), row.name);
    EXPECT_EQ(spec.category, row.category);
    EXPECT_EQ(spec.retriable, row.retriable);
    EXPECT_EQ(spec.strategy, row.strategy);
    EXPECT_EQ(spec.status_code, row.status_code);
    EXPECT_FALSE(spec.user_message.empty());
  }
}

TEST(ErrorSpecTest, FallbackRowsNameANextActionAndOnlyValidModes) {
  for (ErrorCode code : AllCodes()) {
    const ErrorSpec& spec = Spec(code);
    SCOPED_TRACE(std::string(spec.name));
    EXPECT_THAT(std::vector<std::string>({"execute", "list", "none"}),
                ::testing::Contains(std::string(spec.next_action)));
    EXPECT_THAT(std::vector<std::string>({"", "headless", "interactive"}),
                ::testing::Contains(std::string(spec.recommended_mode)));
    // A non-retriable code never proposes to execute again as is.
    if (!spec.retriable) {
      EXPECT_NE(spec.next_action, "execute");
    }
  }
}

TEST(ErrorSpecTest, TimeoutFallbackIsTheContractExample) {
  const ErrorSpec& spec = Spec(ErrorCode::kTimeout);
  EXPECT_EQ(spec.next_action, "execute");
  EXPECT_EQ(spec.recommended_mode, "headless");
  EXPECT_EQ(spec.user_message,
            "The interactive path timed out. You can retry now or run in headless mode.");
}

TEST(ErrorSpecTest, NotFoundSuggestsListAndGuiUnavailableSuggestsHeadless) {
  EXPECT_EQ(Spec(ErrorCode::kNotFound).next_action, "list");
  EXPECT_EQ(Spec(ErrorCode::kGuiUnavailable).recommended_mode, "headless");
  EXPECT_EQ(Spec(ErrorCode::kDeclined).next_action, "none");
  EXPECT_EQ(Spec(ErrorCode::kBlockedDestructive).next_action, "none");
}

TEST(ErrorSpecTest, ParseCodeRoundTripsEveryCode) {
  for (ErrorCode code : AllCodes()) {
    std::optional<ErrorCode> parsed = ParseCode(CodeName(code));
    ASSERT_TRUE(parsed.has_value()) << CodeName(code);
    EXPECT_EQ(*parsed, code);
  }
}

TEST(ErrorSpecTest, ParseCodeRejectsUnknownAndMiscasedNames) {
  EXPECT_FALSE(ParseCode("PM_TERM_EXPLODED").has_value());
  EXPECT_FALSE(ParseCode("pm_term_timeout").has_value());
  EXPECT_FALSE(ParseCode("TIMEOUT").has_value());
  EXPECT_FALSE(ParseCode("").has_value());
}

// ---- errors: Status round trip -----------------------------------------------

TEST(StatusTest, MakeErrorRoundTripsCodeMessageAndDetails) {
  for (ErrorCode code : AllCodes()) {
    SCOPED_TRACE(std::string(CodeName(code)));
    json details = {{"timeout_ms", 30000}, {"target", "session_id"}, {"nested", {{"a", {1, 2}}}}};
    absl::Status status = MakeError(code, "something specific", details);
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.code(), Spec(code).status_code);
    EXPECT_EQ(status.message(), "something specific");
    EXPECT_TRUE(status.GetPayload(std::string(kPayloadTypeUrl)).has_value());
    PmTermError error = FromStatus(status);
    EXPECT_EQ(error.code, code);
    EXPECT_EQ(error.message, "something specific");
    EXPECT_EQ(error.details, details);
  }
}

TEST(StatusTest, ToStatusAndFromStatusAreInverse) {
  PmTermError error;
  error.code = ErrorCode::kDeclined;
  error.message = "declined by alice: not now";
  error.details = {{"note", "not now"}, {"approver", "alice"}};
  PmTermError back = FromStatus(ToStatus(error));
  EXPECT_EQ(back.code, error.code);
  EXPECT_EQ(back.message, error.message);
  EXPECT_EQ(back.details, error.details);
}

TEST(StatusTest, MakeErrorDefaultsAndNonObjectDetailsBecomeEmptyObject) {
  EXPECT_EQ(FromStatus(MakeError(ErrorCode::kNotFound, "gone")).details, json::object());
  EXPECT_EQ(FromStatus(MakeError(ErrorCode::kNotFound, "gone", json::array({1}))).details,
            json::object());
}

TEST(StatusTest, PayloadWinsOverTheCanonicalCode) {
  // GUI_UNAVAILABLE and DISCONNECTED share UNAVAILABLE; the payload tells them apart.
  absl::Status status = MakeError(ErrorCode::kGuiUnavailable, "no viewer attached");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(FromStatus(status).code, ErrorCode::kGuiUnavailable);
  absl::Status copy = status;  // payloads travel with copies
  EXPECT_EQ(FromStatus(copy).code, ErrorCode::kGuiUnavailable);
}

TEST(StatusTest, PlainStatusesAreClassifiedByCanonicalCode) {
  struct Case {
    absl::Status status;
    ErrorCode code;
  };
  const std::vector<Case> cases = {
      {absl::DeadlineExceededError("slow"), ErrorCode::kTimeout},
      {absl::NotFoundError("no such session"), ErrorCode::kNotFound},
      {absl::InvalidArgumentError("bad field"), ErrorCode::kInvalidPayload},
      {absl::UnavailableError("socket closed"), ErrorCode::kDisconnected},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.status.ToString());
    PmTermError error = FromStatus(c.status);
    EXPECT_EQ(error.code, c.code);
    EXPECT_EQ(error.message, c.status.message());  // our own classified text is kept
  }
}

TEST(StatusTest, UnclassifiedStatusesBecomeSanitizedInternal) {
  for (absl::Status status :
       {absl::UnknownError("boom at /home/alice/secret.cc:42\n  #0 0xdeadbeef in main"),
        absl::PermissionDeniedError("secret"), absl::CancelledError("secret"),
        absl::InternalError("secret"), absl::ResourceExhaustedError("secret")}) {
    SCOPED_TRACE(status.ToString());
    PmTermError error = FromStatus(status);
    EXPECT_EQ(error.code, ErrorCode::kInternal);
    EXPECT_EQ(error.message, "internal error");
    EXPECT_THAT(error.details.dump(), Not(HasSubstr("secret")));
    EXPECT_THAT(error.details.dump(), Not(HasSubstr("0xdeadbeef")));
    EXPECT_EQ(error.details["status_code"], absl::StatusCodeToString(status.code()));
  }
}

TEST(StatusTest, CorruptOrUnknownPayloadFallsBackToClassification) {
  absl::Status garbage = absl::NotFoundError("terminal t_1 not found");
  garbage.SetPayload(std::string(kPayloadTypeUrl), absl::Cord("{not json"));
  EXPECT_EQ(FromStatus(garbage).code, ErrorCode::kNotFound);

  absl::Status unknown = absl::DeadlineExceededError("late");
  unknown.SetPayload(std::string(kPayloadTypeUrl), absl::Cord(R"({"code":"PM_TERM_NOPE"})"));
  EXPECT_EQ(FromStatus(unknown).code, ErrorCode::kTimeout);
}

TEST(StatusTest, FromStatusOnOkIsInternalNotACrash) {
  EXPECT_EQ(FromStatus(absl::OkStatus()).code, ErrorCode::kInternal);
}

// ---- request: canonical shape -----------------------------------------------

TEST(NormalizeTest, CanonicalExecuteMapsEverySection) {
  CanonicalRequest request = MustNormalize({
      {"action", "execute"},
      {"invocation", {{"mode", "interactive"}, {"intent", "execute_command"}}},
      {"correlation",
       {{"request_id", "req_1"}, {"trace_id", "trace_1"}, {"client_request_id", "c-9"}}},
      {"runtime",
       {{"workspace_id", "ws"},
        {"cwd", "/srv"},
        {"timeout_ms", 30000},
        {"adapter_override", "container_bridge"}}},
      {"execution", {{"command", "ls"}, {"args", {"-l", "a b"}}, {"env", {{"LANG", "C"}}}}},
      {"target", {{"terminal_id", "t_1"}}},
      {"compat", {{"caller_surface", "extension"}}},
      {"max_bytes", 4096},
      {"format", "raw"},
  });
  EXPECT_EQ(request.action, Action::kExecute);
  EXPECT_EQ(request.mode, Mode::kInteractive);
  EXPECT_EQ(request.intent, Intent::kExecuteCommand);
  EXPECT_EQ(request.correlation.request_id, "req_1");
  EXPECT_EQ(request.correlation.trace_id, "trace_1");
  EXPECT_EQ(request.correlation.client_request_id, "c-9");
  EXPECT_EQ(request.workspace_id, "ws");
  EXPECT_EQ(request.cwd, "/srv");
  EXPECT_EQ(request.timeout_ms, 30000);
  EXPECT_EQ(request.adapter_override, "container_bridge");
  EXPECT_EQ(request.command, "ls");
  EXPECT_EQ(request.args, (std::vector<std::string>{"-l", "a b"}));
  EXPECT_EQ(request.env, (std::map<std::string, std::string>{{"LANG", "C"}}));
  EXPECT_EQ(request.terminal_id, "t_1");
  EXPECT_EQ(request.session_id, "");
  EXPECT_EQ(request.caller_surface, "extension");
  EXPECT_FALSE(request.alias_applied);
  EXPECT_EQ(request.legacy_action, "");
  EXPECT_EQ(request.deprecation_warning, "");
  EXPECT_EQ(request.max_bytes, 4096);
  EXPECT_EQ(request.output_format, "raw");
}

TEST(NormalizeTest, ReadOptionsPassThrough) {
  CanonicalRequest request = MustNormalize({{"action", "read_output"},
                                            {"target", {{"session_id", "s_1"}}},
                                            {"cursor", 18446744073709551615ULL},
                                            {"wait_ms", 0},
                                            {"format", "clean"}});
  EXPECT_EQ(request.cursor, 18446744073709551615ULL);
  EXPECT_EQ(request.wait_ms, 0);
  EXPECT_FALSE(request.max_bytes.has_value());
  EXPECT_EQ(request.output_format, "clean");
  EXPECT_FALSE(request.tail.has_value());  // absent: the tail comes with output over the budget
  EXPECT_EQ(MustNormalize(
                {{"action", "read_output"}, {"target", {{"session_id", "s_1"}}}, {"tail", false}})
                .tail,
            false);
}

TEST(NormalizeTest, ArgumentsMustBeAnObject) {
  ExpectPayloadError(json::array({"execute"}), "arguments");
  ExpectPayloadError("execute", "arguments");
}

TEST(NormalizeTest, MissingEmptyOrNonStringActionNamesTheActionField) {
  ExpectPayloadError(json::object(), "action");
  ExpectPayloadError({{"action", ""}}, "action");
  ExpectPayloadError({{"action", 7}}, "action");
  EXPECT_EQ(Failure(Normalize({{"action", nullptr}})).details["allowed_actions"],
            json({"execute", "read_output", "terminate", "list"}));
}

TEST(NormalizeTest, UnknownActionIsInvalidActionWithMigrationHint) {
  PmTermError error = Failure(Normalize({{"action", "explode"}}));
  EXPECT_EQ(error.code, ErrorCode::kInvalidAction);
  EXPECT_THAT(error.message, HasSubstr("explode"));
  EXPECT_EQ(error.details["field"], "action");
  EXPECT_EQ(error.details["action"], "explode");
  EXPECT_EQ(error.details["allowed_actions"],
            json({"execute", "read_output", "terminate", "list"}));
  EXPECT_EQ(error.details["legacy_aliases"], json({{"run", "execute"},
                                                   {"kill", "terminate"},
                                                   {"send", "execute"},
                                                   {"close", "terminate"},
                                                   {"create", "execute"}}));
  EXPECT_THAT(error.details["hint"].get<std::string>(), HasSubstr("execute"));
  EXPECT_FALSE(error.details.contains("did_you_mean"));
}

TEST(NormalizeTest, MiscasedActionIsRejectedWithDidYouMean) {
  PmTermError error = Failure(Normalize({{"action", "Execute"}}));
  EXPECT_EQ(error.code, ErrorCode::kInvalidAction);
  EXPECT_EQ(error.details["did_you_mean"], "execute");
}

TEST(NormalizeTest, SectionsMustBeObjects) {
  for (const char* section :
       {"invocation", "correlation", "runtime", "execution", "target", "compat"}) {
    ExpectPayloadError({{"action", "list"}, {section, "oops"}}, section);
  }
}

TEST(NormalizeTest, NullMeansAbsent) {
  CanonicalRequest request =
      MustNormalize({{"action", "read_output"},
                     {"invocation", nullptr},
                     {"target", {{"session_id", nullptr}, {"terminal_id", "t_1"}}},
                     {"execution", nullptr}});
  EXPECT_EQ(request.terminal_id, "t_1");
  EXPECT_EQ(request.session_id, "");
  EXPECT_FALSE(request.mode.has_value());
}

// ---- request: CONTRACT.md 'Fields', action + field coupling -----------------

TEST(ValidationTest, ExecuteRequiresModeAndDefaultsItToInteractive) {
  // docs/CONTRACT.md, 'Fields': interactive is the default mode; headless is explicit only.
  CanonicalRequest request =
      MustNormalize({{"action", "execute"}, {"execution", {{"command", "echo hi"}}}});
  EXPECT_EQ(request.mode, Mode::kInteractive);
  EXPECT_EQ(request.intent, Intent::kExecuteCommand);  // inferred from the command
  EXPECT_EQ(MustNormalize({{"action", "execute"},
                           {"invocation", {{"mode", "headless"}}},
                           {"execution", {{"command", "ls"}}}})
                .mode,
            Mode::kHeadless);
}

TEST(ValidationTest, ExecuteRequiresIntentWhenItCannotBeInferred) {
  ExpectPayloadError({{"action", "execute"}}, "invocation.intent");
  ExpectPayloadError({{"action", "execute"}, {"invocation", {{"mode", "interactive"}}}},
                     "invocation.intent");
}

TEST(ValidationTest, ExecuteCommandIntentRequiresExecutionCommand) {
  ExpectPayloadError({{"action", "execute"}, {"invocation", {{"intent", "execute_command"}}}},
                     "execution.command");
  ExpectPayloadError({{"action", "execute"},
                      {"invocation", {{"intent", "execute_command"}}},
                      {"execution", {{"args", {"x"}}}}},
                     "execution.command");
}

TEST(ValidationTest, ExecuteCommandRejectsBlankCommand) {
  ExpectPayloadError({{"action", "execute"}, {"execution", {{"command", ""}}}},
                     "execution.command");
  ExpectPayloadError({{"action", "execute"}, {"execution", {{"command", " \t\n"}}}},
                     "execution.command");
}

TEST(ValidationTest, OpenOnlyIntentForbidsExecutionCommand) {
  ExpectPayloadError({{"action", "execute"},
                      {"invocation", {{"intent", "open_only"}}},
                      {"execution", {{"command", "ls"}}}},
                     "execution.command");
  ExpectPayloadError({{"action", "execute"},
                      {"invocation", {{"intent", "open_only"}}},
                      {"execution", {{"args", {"-l"}}}}},
                     "execution.args");
}

TEST(ValidationTest, OpenOnlyIntentOpensWithoutCommand) {
  CanonicalRequest request = MustNormalize({{"action", "execute"},
                                            {"invocation", {{"intent", "open_only"}}},
                                            {"execution", {{"command", ""}, {"env", {{"A", "1"}}}}},
                                            {"runtime", {{"cwd", "/tmp"}}}});
  EXPECT_EQ(request.intent, Intent::kOpenOnly);
  EXPECT_EQ(request.mode, Mode::kInteractive);
  EXPECT_FALSE(request.command.has_value());
  EXPECT_EQ(request.env.at("A"), "1");  // env is for the new shell
}

TEST(ValidationTest, ReadOutputRequiresSessionOrTerminalTarget) {
  ExpectPayloadError({{"action", "read_output"}}, "target");
  ExpectPayloadError({{"action", "read_output"}, {"target", {{"session_id", ""}}}}, "target");
  EXPECT_EQ(Failure(Normalize({{"action", "read_output"}})).details["one_of"],
            json({"target.session_id", "target.terminal_id"}));
  EXPECT_EQ(
      MustNormalize({{"action", "read_output"}, {"target", {{"session_id", "s_1"}}}}).session_id,
      "s_1");
  EXPECT_EQ(
      MustNormalize({{"action", "read_output"}, {"target", {{"terminal_id", "t_1"}}}}).terminal_id,
      "t_1");
}

TEST(ValidationTest, TerminateRequiresSessionOrTerminalTarget) {
  ExpectPayloadError({{"action", "terminate"}}, "target");
  ExpectPayloadError({{"action", "terminate"}, {"target", json::object()}}, "target");
  CanonicalRequest both = MustNormalize(
      {{"action", "terminate"}, {"target", {{"session_id", "s_1"}, {"terminal_id", "t_1"}}}});
  EXPECT_EQ(both.session_id, "s_1");
  EXPECT_EQ(both.terminal_id, "t_1");
}

TEST(ValidationTest, ListForbidsExecution) {
  ExpectPayloadError({{"action", "list"}, {"execution", {{"command", "ls"}}}}, "execution");
  ExpectPayloadError({{"action", "list"}, {"command", "ls"}}, "command");
  ExpectPayloadError({{"action", "list"}, {"args", {"x"}}}, "args");
}

TEST(ValidationTest, ListForbidsTarget) {
  ExpectPayloadError({{"action", "list"}, {"target", {{"session_id", "s_1"}}}}, "target");
  ExpectPayloadError({{"action", "list"}, {"terminal_id", "t_1"}}, "terminal_id");
}

TEST(ValidationTest, ListToleratesEmptySections) {
  CanonicalRequest request = MustNormalize(
      {{"action", "list"}, {"target", json::object()}, {"execution", {{"args", json::array()}}}});
  EXPECT_EQ(request.action, Action::kList);
}

// ---- request: CONTRACT.md 'Fields', mode constraints ------------------------

TEST(ValidationTest, HeadlessForbidsTerminalIdForNewExecute) {
  ExpectPayloadError({{"action", "execute"},
                      {"invocation", {{"mode", "headless"}, {"intent", "execute_command"}}},
                      {"execution", {{"command", "ls"}}},
                      {"target", {{"terminal_id", "t_1"}}}},
                     "target.terminal_id");
}

TEST(ValidationTest, HeadlessAllowsSessionIdForFollowUps) {
  for (const char* action : {"read_output", "terminate"}) {
    CanonicalRequest request = MustNormalize({{"action", action},
                                              {"invocation", {{"mode", "headless"}}},
                                              {"target", {{"session_id", "s_1"}}}});
    EXPECT_EQ(request.mode, Mode::kHeadless);
    EXPECT_EQ(request.session_id, "s_1");
  }
}

TEST(ValidationTest, HeadlessForbidsOpenOnly) {
  ExpectPayloadError(
      {{"action", "execute"}, {"invocation", {{"mode", "headless"}, {"intent", "open_only"}}}},
      "invocation.intent");
}

TEST(ValidationTest, InteractiveAllowsTerminalIdAndOpenOnly) {
  CanonicalRequest send = MustNormalize({{"action", "execute"},
                                         {"invocation", {{"mode", "interactive"}}},
                                         {"execution", {{"command", "ls"}}},
                                         {"target", {{"terminal_id", "t_1"}}}});
  EXPECT_EQ(send.terminal_id, "t_1");
  CanonicalRequest open = MustNormalize(
      {{"action", "execute"}, {"invocation", {{"mode", "interactive"}, {"intent", "open_only"}}}});
  EXPECT_EQ(open.intent, Intent::kOpenOnly);
}

TEST(ValidationTest, UnsupportedModeIsInvalidMode) {
  PmTermError error = Failure(Normalize({{"action", "execute"},
                                         {"invocation", {{"mode", "turbo"}}},
                                         {"execution", {{"command", "ls"}}}}));
  EXPECT_EQ(error.code, ErrorCode::kInvalidMode);
  EXPECT_EQ(error.details["field"], "invocation.mode");
  EXPECT_EQ(error.details["allowed_modes"], json({"interactive", "headless"}));
  EXPECT_EQ(Failure(Normalize({{"action", "list"}, {"invocation", {{"mode", ""}}}})).code,
            ErrorCode::kInvalidMode);
}

TEST(ValidationTest, NonStringModeIsAPayloadError) {
  ExpectPayloadError({{"action", "list"}, {"invocation", {{"mode", 1}}}}, "invocation.mode");
}

TEST(ValidationTest, UnknownIntentNamesTheField) {
  ExpectPayloadError({{"action", "execute"}, {"invocation", {{"intent", "maybe"}}}},
                     "invocation.intent");
}

// ---- request: CONTRACT.md 'Fields', alias validation -------------------------

TEST(ValidationTest, CompatLegacyActionMustBeKnown) {
  PmTermError error =
      Failure(Normalize({{"action", "execute"}, {"compat", {{"legacy_action", "spawn"}}}}));
  EXPECT_EQ(error.code, ErrorCode::kInvalidAction);
  EXPECT_EQ(error.details["field"], "compat.legacy_action");
  EXPECT_EQ(error.details["action"], "spawn");
  EXPECT_TRUE(error.details.contains("allowed_actions"));
}

TEST(ValidationTest, CompatLegacyActionMustMapToTheAction) {
  ExpectPayloadError({{"action", "terminate"},
                      {"compat", {{"legacy_action", "run"}}},
                      {"target", {{"session_id", "s_1"}}}},
                     "compat.legacy_action");
  // Two aliases of the same canonical action still disagree.
  ExpectPayloadError(
      {{"action", "run"}, {"compat", {{"legacy_action", "create"}}}, {"command", "ls"}},
      "compat.legacy_action");
}

TEST(ValidationTest, CompatLegacyActionAppliesItsAlias) {
  CanonicalRequest request = MustNormalize({{"action", "execute"},
                                            {"compat", {{"legacy_action", "send"}}},
                                            {"execution", {{"command", "ls"}}},
                                            {"target", {{"terminal_id", "t_1"}}}});
  EXPECT_TRUE(request.alias_applied);
  EXPECT_EQ(request.legacy_action, "send");
  EXPECT_EQ(request.mode, Mode::kInteractive);
  // ...including what the alias requires.
  ExpectPayloadError({{"action", "execute"},
                      {"compat", {{"legacy_action", "send"}}},
                      {"execution", {{"command", "ls"}}}},
                     "target.terminal_id");
}

TEST(ValidationTest, CompatLegacyListIsRecordedButIsNoAlias) {
  CanonicalRequest request = MustNormalize(
      {{"action", "list"}, {"compat", {{"legacy_action", "list"}}}}, DeprecationPhase::kC);
  EXPECT_EQ(request.legacy_action, "list");
  EXPECT_FALSE(request.alias_applied);
}

// ---- request: field types -------------------------------------------------------

TEST(FieldTest, ExecutionFieldTypesNameTheField) {
  ExpectPayloadError({{"action", "execute"}, {"execution", {{"command", 42}}}},
                     "execution.command");
  ExpectPayloadError({{"action", "execute"}, {"execution", {{"command", "ls"}, {"args", "-l"}}}},
                     "execution.args");
  ExpectPayloadError(
      {{"action", "execute"}, {"execution", {{"command", "ls"}, {"args", {"-l", 3}}}}},
      "execution.args[1]");
  ExpectPayloadError(
      {{"action", "execute"}, {"execution", {{"command", "ls"}, {"env", {{"A", 1}}}}}},
      "execution.env.A");
  ExpectPayloadError(
      {{"action", "execute"}, {"execution", {{"command", "ls"}, {"env", {{"A=B", "1"}}}}}},
      "execution.env.A=B");
  ExpectPayloadError({{"action", "execute"}, {"execution", {{"command", "ls"}, {"env", "A=1"}}}},
                     "execution.env");
}

TEST(FieldTest, NulBytesAreRejected) {
  ExpectPayloadError(
      {{"action", "execute"}, {"execution", {{"command", std::string("ls\0rm", 5)}}}},
      "execution.command");
  ExpectPayloadError({{"action", "execute"},
                      {"execution", {{"command", "ls"}, {"args", {std::string("a\0b", 3)}}}}},
                     "execution.args[0]");
}

TEST(FieldTest, RuntimeFieldsAreChecked) {
  json run = {{"action", "execute"}, {"execution", {{"command", "ls"}}}};
  json bad = run;
  bad["runtime"] = {{"timeout_ms", 0}};
  ExpectPayloadError(bad, "runtime.timeout_ms");
  bad["runtime"] = {{"timeout_ms", "30000"}};
  ExpectPayloadError(bad, "runtime.timeout_ms");
  bad["runtime"] = {{"timeout_ms", 1.5}};
  ExpectPayloadError(bad, "runtime.timeout_ms");
  bad["runtime"] = {{"cwd", "relative/dir"}};
  ExpectPayloadError(bad, "runtime.cwd");
  bad["runtime"] = {{"workspace_id", false}};
  ExpectPayloadError(bad, "runtime.workspace_id");
  bad = run;
  bad["cwd"] = "~/src";
  ExpectPayloadError(bad, "cwd");
}

TEST(FieldTest, CorrelationAndTargetTypesAreChecked) {
  ExpectPayloadError({{"action", "list"}, {"correlation", {{"request_id", 5}}}},
                     "correlation.request_id");
  ExpectPayloadError({{"action", "list"}, {"correlation", {{"trace_id", json::array()}}}},
                     "correlation.trace_id");
  ExpectPayloadError({{"action", "read_output"}, {"target", {{"session_id", 1}}}},
                     "target.session_id");
  ExpectPayloadError({{"action", "list"}, {"compat", {{"caller_surface", 1}}}},
                     "compat.caller_surface");
}

TEST(FieldTest, ReadOptionsAreChecked) {
  json read = {{"action", "read_output"}, {"target", {{"session_id", "s_1"}}}};
  json bad = read;
  bad["cursor"] = -1;
  ExpectPayloadError(bad, "cursor");
  bad = read;
  bad["max_bytes"] = -5;
  ExpectPayloadError(bad, "max_bytes");
  bad = read;
  bad["max_bytes"] = 4294967296;  // 2^32 would wrap to 0 on the way to the broker
  ExpectPayloadError(bad, "max_bytes");
  bad = read;
  bad["idle_ms"] = 4294967296;
  ExpectPayloadError(bad, "idle_ms");
  bad = read;
  bad["max_bytes"] = 4294967295;
  EXPECT_EQ(MustNormalize(bad).max_bytes, 4294967295);
  bad = read;
  bad["tail"] = "no";
  ExpectPayloadError(bad, "tail");
  bad = read;
  bad["wait_ms"] = "soon";
  ExpectPayloadError(bad, "wait_ms");
  bad = read;
  bad["format"] = "html";
  ExpectPayloadError(bad, "format");
}

TEST(FieldTest, FlatAndNestedFieldsMustAgree) {
  ExpectPayloadError(
      {{"action", "execute"}, {"command", "rm -rf /"}, {"execution", {{"command", "ls"}}}},
      "command");
  ExpectPayloadError(
      {{"action", "read_output"}, {"session_id", "s_2"}, {"target", {{"session_id", "s_1"}}}},
      "session_id");
  CanonicalRequest same =
      MustNormalize({{"action", "execute"}, {"command", "ls"}, {"execution", {{"command", "ls"}}}});
  EXPECT_EQ(same.command, "ls");
}

// ---- request: legacy aliases (CONTRACT.md 'Flat legacy shape and aliases') ----

TEST(AliasTest, RunMapsToExecuteWithExecuteCommand) {
  CanonicalRequest request = MustNormalize({{"action", "run"},
                                            {"command", "printf"},
                                            {"args", {"%s-%s", "a b", "c'd"}},
                                            {"cwd", "/tmp"},
                                            {"timeout", 5000},
                                            {"workspace_id", "ws"},
                                            {"env", {{"X", "1"}}}});
  EXPECT_EQ(request.action, Action::kExecute);
  EXPECT_EQ(request.intent, Intent::kExecuteCommand);
  EXPECT_EQ(request.mode, Mode::kInteractive);
  EXPECT_EQ(request.command, "printf");
  EXPECT_EQ(request.args, (std::vector<std::string>{"%s-%s", "a b", "c'd"}));
  EXPECT_EQ(request.cwd, "/tmp");
  EXPECT_EQ(request.timeout_ms, 5000);
  EXPECT_EQ(request.workspace_id, "ws");
  EXPECT_EQ(request.env.at("X"), "1");
  EXPECT_TRUE(request.alias_applied);
  EXPECT_EQ(request.legacy_action, "run");
}

TEST(AliasTest, RunKeepsAnExplicitHeadlessMode) {
  CanonicalRequest request =
      MustNormalize({{"action", "run"}, {"command", "ls"}, {"invocation", {{"mode", "headless"}}}});
  EXPECT_EQ(request.mode, Mode::kHeadless);
}

TEST(AliasTest, RunRequiresACommandAndRejectsOpenOnly) {
  ExpectPayloadError({{"action", "run"}}, "execution.command");
  ExpectPayloadError(
      {{"action", "run"}, {"command", "ls"}, {"invocation", {{"intent", "open_only"}}}},
      "invocation.intent");
}

TEST(AliasTest, KillMapsToTerminateWithSessionPassthrough) {
  CanonicalRequest request = MustNormalize({{"action", "kill"}, {"session_id", "s_1"}});
  EXPECT_EQ(request.action, Action::kTerminate);
  EXPECT_EQ(request.session_id, "s_1");
  EXPECT_EQ(request.terminal_id, "");
  EXPECT_EQ(request.legacy_action, "kill");
  EXPECT_TRUE(request.alias_applied);
  // CONTRACT.md 'Flat legacy shape and aliases': terminal/session identity accepted.
  EXPECT_EQ(MustNormalize({{"action", "kill"}, {"terminal_id", "t_1"}}).terminal_id, "t_1");
  ExpectPayloadError({{"action", "kill"}}, "target");
}

TEST(AliasTest, SendMapsToInteractiveExecuteIntoAnExistingTerminal) {
  CanonicalRequest request =
      MustNormalize({{"action", "send"}, {"terminal_id", "t_1"}, {"command", "make test"}});
  EXPECT_EQ(request.action, Action::kExecute);
  EXPECT_EQ(request.mode, Mode::kInteractive);
  EXPECT_EQ(request.intent, Intent::kExecuteCommand);
  EXPECT_EQ(request.terminal_id, "t_1");
  EXPECT_EQ(request.command, "make test");
  EXPECT_EQ(request.legacy_action, "send");
}

TEST(AliasTest, SendRequiresTerminalIdCommandAndInteractive) {
  ExpectPayloadError({{"action", "send"}, {"command", "ls"}}, "target.terminal_id");
  ExpectPayloadError({{"action", "send"}, {"terminal_id", "t_1"}}, "execution.command");
  ExpectPayloadError({{"action", "send"},
                      {"terminal_id", "t_1"},
                      {"command", "ls"},
                      {"invocation", {{"mode", "headless"}}}},
                     "invocation.mode");
}

TEST(AliasTest, CloseMapsToTerminateOfTheTerminal) {
  CanonicalRequest request = MustNormalize({{"action", "close"}, {"terminal_id", "t_1"}});
  EXPECT_EQ(request.action, Action::kTerminate);
  EXPECT_EQ(request.terminal_id, "t_1");
  EXPECT_EQ(request.legacy_action, "close");
  // Closing is terminal-scoped: a session id alone would interrupt a command instead.
  ExpectPayloadError({{"action", "close"}, {"session_id", "s_1"}}, "target.terminal_id");
}

TEST(AliasTest, CreateMapsToInteractiveOpenOnlyExecute) {
  CanonicalRequest request = MustNormalize({{"action", "create"}, {"cwd", "/home"}});
  EXPECT_EQ(request.action, Action::kExecute);
  EXPECT_EQ(request.mode, Mode::kInteractive);
  EXPECT_EQ(request.intent, Intent::kOpenOnly);
  EXPECT_FALSE(request.command.has_value());
  EXPECT_EQ(request.cwd, "/home");
  EXPECT_EQ(request.legacy_action, "create");
  EXPECT_TRUE(request.alias_applied);
}

TEST(AliasTest, CreateRejectsCommandHeadlessAndExecuteCommand) {
  ExpectPayloadError({{"action", "create"}, {"command", "ls"}}, "execution.command");
  ExpectPayloadError({{"action", "create"}, {"invocation", {{"mode", "headless"}}}},
                     "invocation.mode");
  ExpectPayloadError({{"action", "create"}, {"invocation", {{"intent", "execute_command"}}}},
                     "invocation.intent");
}

TEST(AliasTest, ListIsCanonicalNotAnAlias) {
  CanonicalRequest request = MustNormalize({{"action", "list"}}, DeprecationPhase::kC);
  EXPECT_EQ(request.action, Action::kList);
  EXPECT_FALSE(request.alias_applied);
  EXPECT_EQ(request.legacy_action, "");
  EXPECT_FALSE(request.mode.has_value());
}

// ---- request: deprecation phases (CONTRACT.md 'Flat legacy shape and aliases') --

TEST(PhaseTest, PhaseAAcceptsAliasesWithMetadataAndNoWarning) {
  CanonicalRequest request =
      MustNormalize({{"action", "kill"}, {"session_id", "s_1"}}, DeprecationPhase::kA);
  EXPECT_TRUE(request.alias_applied);
  EXPECT_EQ(request.legacy_action, "kill");
  EXPECT_EQ(request.deprecation_warning, "");
}

TEST(PhaseTest, PhaseBAddsADeterministicWarning) {
  json args = {{"action", "run"}, {"command", "ls"}};
  CanonicalRequest first = MustNormalize(args, DeprecationPhase::kB);
  CanonicalRequest second = MustNormalize(args, DeprecationPhase::kB);
  EXPECT_TRUE(first.alias_applied);
  EXPECT_FALSE(first.deprecation_warning.empty());
  EXPECT_EQ(first.deprecation_warning, second.deprecation_warning);
  EXPECT_THAT(first.deprecation_warning, HasSubstr("\"run\""));
  EXPECT_THAT(first.deprecation_warning, HasSubstr("\"execute\""));
  EXPECT_THAT(first.deprecation_warning, HasSubstr("execute_command"));
  // A canonical caller gets no warning.
  EXPECT_EQ(MustNormalize({{"action", "execute"}, {"execution", {{"command", "ls"}}}},
                          DeprecationPhase::kB)
                .deprecation_warning,
            "");
}

TEST(PhaseTest, PhaseCRejectsEveryAliasWithItsCanonicalMigration) {
  struct Case {
    json arguments;
    const char* canonical;
    json migration;
  };
  const std::vector<Case> cases = {
      {{{"action", "run"}, {"command", "ls"}},
       "execute",
       {{"action", "execute"},
        {"invocation", {{"intent", "execute_command"}}},
        {"execution", {{"command", "<command>"}}}}},
      {{{"action", "kill"}, {"session_id", "s_1"}},
       "terminate",
       {{"action", "terminate"}, {"target", {{"session_id", "<session_id>"}}}}},
      {{{"action", "send"}, {"terminal_id", "t_1"}, {"command", "ls"}},
       "execute",
       {{"action", "execute"},
        {"invocation", {{"mode", "interactive"}, {"intent", "execute_command"}}},
        {"execution", {{"command", "<command>"}}},
        {"target", {{"terminal_id", "<terminal_id>"}}}}},
      {{{"action", "close"}, {"terminal_id", "t_1"}},
       "terminate",
       {{"action", "terminate"}, {"target", {{"terminal_id", "<terminal_id>"}}}}},
      {{{"action", "create"}},
       "execute",
       {{"action", "execute"}, {"invocation", {{"mode", "interactive"}, {"intent", "open_only"}}}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.arguments.dump());
    PmTermError error = Failure(Normalize(c.arguments, DeprecationPhase::kC));
    EXPECT_EQ(error.code, ErrorCode::kInvalidAction);
    EXPECT_EQ(error.details["field"], "action");
    EXPECT_EQ(error.details["legacy_action"], c.arguments["action"]);
    EXPECT_EQ(error.details["canonical_action"], c.canonical);
    EXPECT_EQ(error.details["migration"], c.migration);
    EXPECT_EQ(error.details["deprecation_phase"], "C");
    EXPECT_THAT(error.details["hint"].get<std::string>(), HasSubstr(c.canonical));
    EXPECT_THAT(error.message, HasSubstr(c.canonical));
    // The same request is accepted in phases A and B.
    EXPECT_TRUE(Normalize(c.arguments, DeprecationPhase::kA).ok());
    EXPECT_TRUE(Normalize(c.arguments, DeprecationPhase::kB).ok());
  }
}

TEST(PhaseTest, PhaseCRejectsAliasesSentAsCompatLegacyAction) {
  PmTermError error = Failure(Normalize({{"action", "execute"},
                                         {"compat", {{"legacy_action", "run"}}},
                                         {"execution", {{"command", "ls"}}}},
                                        DeprecationPhase::kC));
  EXPECT_EQ(error.code, ErrorCode::kInvalidAction);
  EXPECT_EQ(error.details["field"], "compat.legacy_action");
}

TEST(PhaseTest, PhaseCAcceptsCanonicalRequestsAndStopsAdvertisingAliases) {
  EXPECT_TRUE(
      Normalize({{"action", "execute"}, {"execution", {{"command", "ls"}}}}, DeprecationPhase::kC)
          .ok());
  PmTermError unknown = Failure(Normalize({{"action", "explode"}}, DeprecationPhase::kC));
  EXPECT_EQ(unknown.code, ErrorCode::kInvalidAction);
  EXPECT_FALSE(unknown.details.contains("legacy_aliases"));
}

// ---- request: correlation ---------------------------------------------------------

TEST(CorrelationTest, IdsAreGeneratedWhenAbsent) {
  CanonicalRequest request = MustNormalize({{"action", "list"}});
  EXPECT_THAT(request.correlation.request_id, ::testing::MatchesRegex("req_[0-9A-Z]{26}"));
  EXPECT_THAT(request.correlation.trace_id, ::testing::MatchesRegex("trace_[0-9A-Z]{26}"));
  EXPECT_EQ(request.correlation.client_request_id, "");
  CanonicalRequest other = MustNormalize({{"action", "list"}});
  EXPECT_NE(request.correlation.request_id, other.correlation.request_id);
  EXPECT_NE(request.correlation.trace_id, other.correlation.trace_id);
}

TEST(CorrelationTest, IdsArePreservedWhenPresent) {
  CanonicalRequest request = MustNormalize({{"action", "list"},
                                            {"correlation",
                                             {{"request_id", "req_caller"},
                                              {"trace_id", "trace_upstream"},
                                              {"client_request_id", "c1"}}}});
  EXPECT_EQ(request.correlation.request_id, "req_caller");
  EXPECT_EQ(request.correlation.trace_id, "trace_upstream");
  EXPECT_EQ(request.correlation.client_request_id, "c1");
}

TEST(CorrelationTest, OnlyTheMissingIdIsGenerated) {
  CanonicalRequest request = MustNormalize(
      {{"action", "list"}, {"correlation", {{"trace_id", "trace_keep"}, {"request_id", ""}}}});
  EXPECT_EQ(request.correlation.trace_id, "trace_keep");
  EXPECT_THAT(request.correlation.request_id, ::testing::StartsWith("req_"));
  EXPECT_EQ(request.correlation.request_id.size(), 4u + 26u);
}

// ---- ids -----------------------------------------------------------------------------

TEST(NewIdTest, PrefixPlus26CrockfordCharacters) {
  for (const char* prefix : {"req_", "trace_", "t_", ""}) {
    std::string id = NewId(prefix);
    ASSERT_EQ(id.size(), std::string(prefix).size() + 26) << id;
    EXPECT_EQ(id.substr(0, std::string(prefix).size()), prefix);
    std::string ulid = id.substr(std::string(prefix).size());
    EXPECT_EQ(ulid.find_first_not_of(kCrockford), std::string::npos) << id;
    EXPECT_LE(ulid[0], '7') << "a 128-bit ULID starts with 0-7";
  }
}

TEST(NewIdTest, EncodesTheCurrentTimeInMilliseconds) {
  uint64_t before = static_cast<uint64_t>(absl::ToUnixMillis(absl::Now()));
  std::string ulid = NewId("x_").substr(2);
  uint64_t after = static_cast<uint64_t>(absl::ToUnixMillis(absl::Now()));
  uint64_t millis = UlidMillis(ulid);
  // Ids made earlier in the same millisecond may have borrowed at most a few ms.
  EXPECT_GE(millis, before);
  EXPECT_LE(millis, after + 1);
}

TEST(NewIdTest, IdsAreStrictlyTimeOrdered) {
  std::string previous = NewId("");
  for (int i = 0; i < 20000; ++i) {
    std::string next = NewId("");
    ASSERT_LT(previous, next) << "at " << i;
    previous = next;
  }
}

TEST(NewIdTest, IdsAreUniqueAcrossThreads) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 5000;
  std::vector<std::vector<std::string>> ids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&ids, t] {
      for (int i = 0; i < kPerThread; ++i) ids[t].push_back(NewId("s_"));
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::set<std::string> all;
  for (const auto& list : ids) {
    EXPECT_TRUE(std::is_sorted(list.begin(), list.end()));
    all.insert(list.begin(), list.end());
  }
  EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kPerThread));
}

// ---- names ---------------------------------------------------------------------------

TEST(NamesTest, EnumNamesAreTheContractVocabulary) {
  EXPECT_EQ(ActionName(Action::kExecute), "execute");
  EXPECT_EQ(ActionName(Action::kReadOutput), "read_output");
  EXPECT_EQ(ActionName(Action::kTerminate), "terminate");
  EXPECT_EQ(ActionName(Action::kList), "list");
  EXPECT_EQ(ModeName(Mode::kInteractive), "interactive");
  EXPECT_EQ(ModeName(Mode::kHeadless), "headless");
  EXPECT_EQ(IntentName(Intent::kOpenOnly), "open_only");
  EXPECT_EQ(IntentName(Intent::kExecuteCommand), "execute_command");
}

// ---- responses (CONTRACT.md 'Results' and 'Errors') ---------------------------------

const json kCorrelation = {{"request_id", "req_A"}, {"trace_id", "trace_B"}};

TEST(SuccessResponseTest, HasExactlyTheContractShape) {
  json args = {{"action", "execute"},
               {"execution", {{"command", "echo hello"}}},
               {"correlation",
                {{"request_id", "req_A"}, {"trace_id", "trace_B"}, {"client_request_id", "c-1"}}}};
  CanonicalRequest request = MustNormalize(args);
  json result = {
      {"authorization", "allowed"}, {"stdout", "hello\n"}, {"exit_code", 0}, {"running", false}};
  json response = SuccessResponse(request, "completed", "s_1", "t_1", result);
  json expected = {
      {"success", true},
      {"action", "execute"},
      {"status", "completed"},
      {"correlation",
       {{"request_id", "req_A"}, {"trace_id", "trace_B"}, {"client_request_id", "c-1"}}},
      {"resolved",
       {{"canonical_action", "execute"},
        {"alias_applied", false},
        {"legacy_action", nullptr},
        {"mode", "interactive"}}},
      {"identity", {{"session_id", "s_1"}, {"terminal_id", "t_1"}}},
      {"result", result},
      {"error", nullptr}};
  EXPECT_EQ(response, expected) << response.dump(2);
  EXPECT_FALSE(response.contains("fallback"));
}

TEST(SuccessResponseTest, ReportsAliasResolution) {
  CanonicalRequest request =
      MustNormalize({{"action", "run"}, {"command", "ls"}, {"correlation", kCorrelation}});
  json response = SuccessResponse(request, "accepted", "s_1", "", json::object());
  EXPECT_EQ(response["action"], "execute");
  EXPECT_EQ(response["status"], "accepted");
  EXPECT_EQ(response["resolved"], json({{"canonical_action", "execute"},
                                        {"alias_applied", true},
                                        {"legacy_action", "run"},
                                        {"mode", "interactive"}}));
  EXPECT_EQ(response["identity"], json({{"session_id", "s_1"}, {"terminal_id", nullptr}}));
  EXPECT_EQ(response["correlation"]["client_request_id"], nullptr);
  EXPECT_FALSE(response["result"].contains("warning"));
}

TEST(SuccessResponseTest, PhaseBPutsTheWarningInResult) {
  CanonicalRequest request =
      MustNormalize({{"action", "kill"}, {"session_id", "s_1"}}, DeprecationPhase::kB);
  json response = SuccessResponse(request, "completed", "s_1", "", json::object());
  EXPECT_EQ(response["result"]["warning"], request.deprecation_warning);
  json with_warning =
      SuccessResponse(request, "completed", "s_1", "", {{"warning", "allowed with warning"}});
  EXPECT_EQ(with_warning["result"]["warning"],
            "allowed with warning; " + request.deprecation_warning);
}

TEST(SuccessResponseTest, ListHasNullIdentityAndModeAndObjectResult) {
  CanonicalRequest request = MustNormalize({{"action", "list"}, {"correlation", kCorrelation}});
  json response = SuccessResponse(request, "completed", "", "", nullptr);
  EXPECT_EQ(response["identity"], json({{"session_id", nullptr}, {"terminal_id", nullptr}}));
  EXPECT_EQ(response["resolved"]["mode"], nullptr);
  EXPECT_EQ(response["result"], json::object());
}

TEST(ErrorResponseTest, MatchesTheContractTimeoutExample) {
  CanonicalRequest request = MustNormalize({{"action", "send"},
                                            {"terminal_id", "t_1"},
                                            {"command", "make"},
                                            {"correlation", kCorrelation}});
  PmTermError error;
  error.code = ErrorCode::kTimeout;
  error.message = "Interactive terminal request timed out while waiting for response.";
  error.details = {{"timeout_ms", 30000}, {"target", "terminal_id"}};
  json expected = {
      {"success", false},
      {"action", "execute"},
      {"status", "failed"},
      {"correlation",
       {{"request_id", "req_A"}, {"trace_id", "trace_B"}, {"client_request_id", nullptr}}},
      {"resolved",
       {{"canonical_action", "execute"},
        {"alias_applied", true},
        {"legacy_action", "send"},
        {"mode", "interactive"}}},
      {"error",
       {{"code", "PM_TERM_TIMEOUT"},
        {"category", "runtime_timeout"},
        {"message", "Interactive terminal request timed out while waiting for response."},
        {"retriable", true},
        {"details", {{"timeout_ms", 30000}, {"target", "terminal_id"}}}}},
      {"fallback",
       {{"strategy", "suggest_retry_headless_or_interactive"},
        {"next_action", "execute"},
        {"recommended_mode", "headless"},
        {"user_message",
         "The interactive path timed out. You can retry now or run in headless mode."},
        {"can_auto_retry", false}}}};
  json response = ErrorResponse(request, error);
  EXPECT_EQ(response, expected) << response.dump(2);
}

TEST(ErrorResponseTest, EveryCodeCarriesTheMandatoryFallbackFromItsSpec) {
  CanonicalRequest request =
      MustNormalize({{"action", "execute"}, {"execution", {{"command", "ls"}}}});
  for (ErrorCode code : AllCodes()) {
    SCOPED_TRACE(std::string(CodeName(code)));
    PmTermError error = FromStatus(MakeError(code, "m"));
    json response = ErrorResponse(request, error);
    const ErrorSpec& spec = Spec(code);
    EXPECT_EQ(response["success"], false);
    EXPECT_EQ(response["status"], "failed");
    EXPECT_EQ(response["error"]["code"], std::string(spec.name));
    EXPECT_EQ(response["error"]["category"], std::string(spec.category));
    EXPECT_EQ(response["error"]["retriable"], spec.retriable);
    ASSERT_TRUE(response.contains("fallback"));
    const json& fallback = response["fallback"];
    EXPECT_EQ(fallback["strategy"], std::string(spec.strategy));
    EXPECT_EQ(fallback["next_action"], std::string(spec.next_action));
    EXPECT_EQ(fallback["user_message"], std::string(spec.user_message));
    if (spec.recommended_mode.empty()) {
      EXPECT_EQ(fallback["recommended_mode"], nullptr);
    } else {
      EXPECT_EQ(fallback["recommended_mode"], std::string(spec.recommended_mode));
    }
    // An execute is never retried automatically: it could run the command twice.
    EXPECT_EQ(fallback["can_auto_retry"], false);
    EXPECT_FALSE(response.contains("identity"));
    EXPECT_FALSE(response.contains("result"));
  }
}

TEST(ErrorResponseTest, SameCodeGivesSameStrategyForEveryRequestClass) {
  std::vector<CanonicalRequest> requests = {
      MustNormalize({{"action", "execute"}, {"execution", {{"command", "ls"}}}}),
      MustNormalize({{"action", "read_output"}, {"target", {{"session_id", "s_1"}}}}),
      MustNormalize({{"action", "terminate"}, {"target", {{"terminal_id", "t_1"}}}}),
      MustNormalize({{"action", "list"}})};
  for (ErrorCode code : AllCodes()) {
    for (const CanonicalRequest& request : requests) {
      PmTermError error;
      error.code = code;
      EXPECT_EQ(ErrorResponse(request, error)["fallback"]["strategy"],
                std::string(Spec(code).strategy));
    }
  }
}

TEST(ErrorResponseTest, RetriableFollowUpsRetryTheSameActionWithoutAMode) {
  CanonicalRequest read =
      MustNormalize({{"action", "read_output"}, {"target", {{"session_id", "s_1"}}}});
  PmTermError timeout;
  timeout.code = ErrorCode::kTimeout;
  json fallback = ErrorResponse(read, timeout)["fallback"];
  EXPECT_EQ(fallback["next_action"], "read_output");
  EXPECT_EQ(fallback["recommended_mode"], nullptr);
  EXPECT_EQ(fallback["can_auto_retry"], true);  // reading again is harmless

  CanonicalRequest terminate =
      MustNormalize({{"action", "terminate"}, {"target", {{"session_id", "s_1"}}}});
  PmTermError disconnected;
  disconnected.code = ErrorCode::kDisconnected;
  fallback = ErrorResponse(terminate, disconnected)["fallback"];
  EXPECT_EQ(fallback["next_action"], "terminate");
  EXPECT_EQ(fallback["can_auto_retry"], false);

  PmTermError not_found;
  not_found.code = ErrorCode::kNotFound;
  fallback = ErrorResponse(read, not_found)["fallback"];
  EXPECT_EQ(fallback["next_action"], "list");
  EXPECT_EQ(fallback["can_auto_retry"], false);
}

TEST(ErrorResponseTest, DeclineIsNeverAutoRetried) {
  for (json args : {json{{"action", "execute"}, {"execution", {{"command", "ls"}}}},
                    json{{"action", "read_output"}, {"target", {{"session_id", "s"}}}},
                    json{{"action", "list"}}}) {
    PmTermError declined;
    declined.code = ErrorCode::kDeclined;
    json response = ErrorResponse(MustNormalize(args), declined);
    EXPECT_EQ(response["fallback"]["strategy"], "report_decline");
    EXPECT_EQ(response["fallback"]["can_auto_retry"], false);
    EXPECT_EQ(response["error"]["retriable"], false);
  }
}

TEST(ErrorResponseTest, HeadlessTimeoutRecommendsTheInteractiveLane) {
  CanonicalRequest request = MustNormalize({{"action", "execute"},
                                            {"invocation", {{"mode", "headless"}}},
                                            {"execution", {{"command", "ls"}}}});
  PmTermError timeout;
  timeout.code = ErrorCode::kTimeout;
  json fallback = ErrorResponse(request, timeout)["fallback"];
  EXPECT_EQ(fallback["strategy"], "suggest_retry_headless_or_interactive");
  EXPECT_EQ(fallback["recommended_mode"], "interactive");
  EXPECT_THAT(fallback["user_message"].get<std::string>(), HasSubstr("interactive mode"));
}

TEST(ErrorResponseTest, InternalIsSanitizedAndTraceLinked) {
  CanonicalRequest request = MustNormalize({{"action", "list"}, {"correlation", kCorrelation}});
  json response = ErrorResponse(request, FromStatus(absl::UnknownError("segv in /src/x.cc:9")));
  EXPECT_EQ(response["error"]["code"], "PM_TERM_INTERNAL");
  EXPECT_EQ(response["error"]["message"], "internal error");
  EXPECT_EQ(response["error"]["details"]["trace_id"], "trace_B");
  EXPECT_THAT(response.dump(), Not(HasSubstr("/src/x.cc")));
  EXPECT_EQ(response["fallback"]["strategy"], "deterministic_internal_fallback");
}

TEST(ErrorResponseTest, PartialRequestStillGetsCorrelationIds) {
  CanonicalRequest partial;  // nothing known
  PmTermError error;
  error.code = ErrorCode::kInternal;
  json response = ErrorResponse(partial, error);
  EXPECT_THAT(response["correlation"]["request_id"].get<std::string>(),
              ::testing::MatchesRegex("req_[0-9A-Z]{26}"));
  EXPECT_THAT(response["correlation"]["trace_id"].get<std::string>(),
              ::testing::MatchesRegex("trace_[0-9A-Z]{26}"));
  EXPECT_EQ(response["error"]["details"]["trace_id"], response["correlation"]["trace_id"]);
}

TEST(ErrorResponseTest, PhaseBWarningReachesFailedAliasCalls) {
  CanonicalRequest request =
      MustNormalize({{"action", "kill"}, {"session_id", "s_1"}}, DeprecationPhase::kB);
  PmTermError error;
  error.code = ErrorCode::kNotFound;
  json response = ErrorResponse(request, error);
  EXPECT_EQ(response["error"]["details"]["deprecation_warning"], request.deprecation_warning);
}

// ---- errors for arguments that did not normalize ---------------------------------------

json FailedResponse(const json& arguments, DeprecationPhase phase = DeprecationPhase::kA) {
  absl::StatusOr<CanonicalRequest> request = Normalize(arguments, phase);
  EXPECT_FALSE(request.ok());
  return ErrorResponseForArguments(arguments, FromStatus(request.status()));
}

TEST(ErrorForArgumentsTest, UnknownActionIsReportedAsSent) {
  json response = FailedResponse({{"action", "explode"}, {"correlation", kCorrelation}});
  EXPECT_EQ(response["success"], false);
  EXPECT_EQ(response["action"], "explode");
  EXPECT_EQ(response["status"], "failed");
  EXPECT_EQ(
      response["correlation"],
      json({{"request_id", "req_A"}, {"trace_id", "trace_B"}, {"client_request_id", nullptr}}));
  EXPECT_EQ(response["resolved"], json({{"canonical_action", nullptr},
                                        {"alias_applied", false},
                                        {"legacy_action", nullptr},
                                        {"mode", nullptr}}));
  EXPECT_EQ(response["error"]["code"], "PM_TERM_INVALID_ACTION");
  EXPECT_EQ(response["error"]["category"], "validation");
  EXPECT_EQ(response["error"]["retriable"], false);
  EXPECT_TRUE(response["error"]["details"].contains("allowed_actions"));
  EXPECT_EQ(response["fallback"]["strategy"], "reject_no_retry");
  EXPECT_EQ(response["fallback"]["next_action"], "none");
  EXPECT_EQ(response["fallback"]["can_auto_retry"], false);
}

TEST(ErrorForArgumentsTest, MissingActionIsUnknownWithFreshIds) {
  json response = FailedResponse(json::object());
  EXPECT_EQ(response["action"], "unknown");
  EXPECT_EQ(response["error"]["code"], "PM_TERM_INVALID_PAYLOAD");
  EXPECT_EQ(response["error"]["details"]["field"], "action");
  EXPECT_THAT(response["correlation"]["request_id"].get<std::string>(),
              ::testing::StartsWith("req_"));
  EXPECT_EQ(ErrorResponseForArguments("not an object", PmTermError{})["action"], "unknown");
}

TEST(ErrorForArgumentsTest, PayloadErrorOfAnAliasShowsTheResolution) {
  json response = FailedResponse({{"action", "run"},
                                  {"execution", {{"command", 42}}},
                                  {"invocation", {{"mode", "headless"}}}});
  EXPECT_EQ(response["action"], "execute");
  EXPECT_EQ(response["resolved"], json({{"canonical_action", "execute"},
                                        {"alias_applied", true},
                                        {"legacy_action", "run"},
                                        {"mode", "headless"}}));
  EXPECT_EQ(response["error"]["code"], "PM_TERM_INVALID_PAYLOAD");
  EXPECT_EQ(response["error"]["details"]["field"], "execution.command");
  EXPECT_EQ(response["fallback"]["strategy"], "reject_no_retry");
}

TEST(ErrorForArgumentsTest, PhaseCRejectionIsNotReportedAsApplied) {
  json response = FailedResponse({{"action", "create"}}, DeprecationPhase::kC);
  EXPECT_EQ(response["action"], "execute");
  EXPECT_EQ(response["resolved"]["legacy_action"], "create");
  EXPECT_EQ(response["resolved"]["alias_applied"], false);
  EXPECT_EQ(response["error"]["code"], "PM_TERM_INVALID_ACTION");
  EXPECT_EQ(response["error"]["details"]["canonical_action"], "execute");
}

}  // namespace
}  // namespace termbridge::contract
