// The edge's table: each core problem answers with the PM_TERM code the
// contract gives it, with its message and details intact.
#include "broker/service/errors.h"

#include "broker/core/problem.h"
#include "gtest/gtest.h"

namespace termbridge::broker {
namespace {

using contract::ErrorCode;
using core::Fail;
using core::Problem;

TEST(ContractErrorTest, EachProblemHasItsCode) {
  const std::pair<Problem, ErrorCode> table[] = {
      {Problem::kInvalidRequest, ErrorCode::kInvalidPayload},
      {Problem::kLimitReached, ErrorCode::kInvalidPayload},
      {Problem::kConflict, ErrorCode::kInvalidPayload},
      {Problem::kUnknownId, ErrorCode::kNotFound},
      {Problem::kEnded, ErrorCode::kNotFound},
      {Problem::kDeniedByPolicy, ErrorCode::kBlockedDestructive},
      {Problem::kDeclined, ErrorCode::kDeclined},
      {Problem::kTimedOut, ErrorCode::kTimeout},
      {Problem::kNoViewer, ErrorCode::kGuiUnavailable},
      {Problem::kTerminalFailed, ErrorCode::kDisconnected},
      {Problem::kAuditUnavailable, ErrorCode::kInternal},
      {Problem::kInternal, ErrorCode::kInternal},
  };
  for (const auto& [problem, code] : table) {
    contract::PmTermError error = ContractError(Fail(problem, "why", {{"field", "x"}}));
    EXPECT_EQ(error.code, code) << core::ProblemName(problem);
    EXPECT_EQ(error.message, "why");
    EXPECT_EQ(error.details["field"], "x");
  }
}

TEST(ContractErrorTest, NoViewerSaysWhichCauseOfGuiUnavailable) {
  contract::PmTermError error = ContractError(Fail(Problem::kNoViewer, "no one watches"));
  EXPECT_EQ(error.details["reason"], "no_viewer");
}

// A denial's details quote the agent's line, which may be cut inside a UTF-8
// sequence: the error is still the denial, with the bytes replaced.
TEST(ContractErrorTest, DetailsWithInvalidUtf8StayTheirError) {
  absl::Status denied =
      Fail(Problem::kDeniedByPolicy, "denied", {{"note", std::string("caf\xc3", 4)}});
  contract::PmTermError error = ContractError(denied);
  EXPECT_EQ(error.code, ErrorCode::kBlockedDestructive);
  EXPECT_EQ(error.details["note"], "caf\xef\xbf\xbd");
}

TEST(ContractErrorTest, StatusesWithoutAProblemKeepTheirClassification) {
  EXPECT_EQ(ContractError(contract::MakeError(ErrorCode::kDeclined, "d")).code,
            ErrorCode::kDeclined);
  EXPECT_EQ(ContractError(absl::DeadlineExceededError("slow")).code, ErrorCode::kTimeout);
  EXPECT_EQ(ContractCodeName(Fail(Problem::kEnded, "gone")), "PM_TERM_NOT_FOUND");
}

}  // namespace
}  // namespace termbridge::broker
