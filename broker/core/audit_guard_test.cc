// The broker's promise about its audit log, at the seam every caller uses:
// when the log cannot be written, new work is refused with audit_unavailable
// and the reason; what already happened is not lost but written, before
// anything new, once the disk takes it again. The failure is a real one
// (RLIMIT_FSIZE: write(2) fails with EFBIG), on the real AuditLog.
#include "broker/core/audit_guard.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "broker/core/problem.h"
#include "gtest/gtest.h"

namespace termbridge::core {
namespace {

using nlohmann::json;

// Lowers this process's file-size limit to the log's current size (no byte
// more fits) until destroyed; SIGXFSZ is ignored meanwhile.
class FullDisk {
 public:
  explicit FullDisk(const std::string& path) {
    old_handler_ = signal(SIGXFSZ, SIG_IGN);
    getrlimit(RLIMIT_FSIZE, &old_);
    struct stat st;
    struct rlimit lowered = old_;
    lowered.rlim_cur = stat(path.c_str(), &st) == 0 ? static_cast<rlim_t>(st.st_size) : 0;
    ok_ = setrlimit(RLIMIT_FSIZE, &lowered) == 0;
  }
  ~FullDisk() {
    setrlimit(RLIMIT_FSIZE, &old_);
    signal(SIGXFSZ, old_handler_);
  }
  bool ok() const { return ok_; }

 private:
  struct rlimit old_;
  sighandler_t old_handler_;
  bool ok_ = false;
};

class AuditGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "audit_guard_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/audit.jsonl";
    auto log = audit::AuditLog::Open(path_);
    ASSERT_TRUE(log.ok()) << log.status();
    log_ = std::move(*log);
  }
  void TearDown() override {
    log_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::vector<std::string> Events() const {
    std::vector<std::string> events;
    std::ifstream in(path_);
    std::string line;
    while (std::getline(in, line)) events.push_back(json::parse(line)["event"]);
    return events;
  }

  std::string dir_;
  std::string path_;
  std::unique_ptr<audit::AuditLog> log_;
};

TEST_F(AuditGuardTest, NewWorkIsRefusedWithTheReasonWhileTheLogCannotBeWritten) {
  ASSERT_TRUE(Audit(log_.get(), audit::kTerminalOpened, json{{"terminal_id", "t_1"}}).ok());
  {
    FullDisk full(path_);
    ASSERT_TRUE(full.ok());
    absl::Status refused = Audit(log_.get(), audit::kCommandRequested, json{{"command", "ls"}});
    ASSERT_FALSE(refused.ok());
    std::optional<ProblemInfo> problem = ProblemOf(refused);
    ASSERT_TRUE(problem.has_value()) << refused;
    EXPECT_EQ(problem->kind, Problem::kAuditUnavailable);
    EXPECT_EQ(refused.message(),
              "the audit log cannot be written; the broker refuses to act unaudited");
    EXPECT_NE(problem->details["reason"].get<std::string>().find("File too large"),
              std::string::npos)
        << problem->details;
  }
  EXPECT_TRUE(Audit(log_.get(), audit::kCommandRequested, json{{"command", "ls"}}).ok());
  EXPECT_EQ(Events(), (std::vector<std::string>{"terminal_opened", "command_requested"}));
}

TEST_F(AuditGuardTest, WhatHappenedIsKeptAndWrittenBeforeTheNextWork) {
  ASSERT_TRUE(Audit(log_.get(), audit::kCommandStarted, json{{"session_id", "s_1"}}).ok());
  {
    FullDisk full(path_);
    ASSERT_TRUE(full.ok());
    // The command exited while the disk was full: nothing to refuse.
    AuditAfterTheFact(log_.get(), audit::kCommandExited, json{{"session_id", "s_1"}});
    EXPECT_EQ(log_->PendingRecords(), 1u);
    // Until that record is written, no new work is.
    std::optional<ProblemInfo> problem =
        ProblemOf(Audit(log_.get(), audit::kCommandRequested, json{{"command", "ls"}}));
    ASSERT_TRUE(problem.has_value());
    EXPECT_EQ(problem->kind, Problem::kAuditUnavailable);
  }
  ASSERT_TRUE(Audit(log_.get(), audit::kCommandRequested, json{{"command", "ls"}}).ok());
  EXPECT_EQ(log_->PendingRecords(), 0u);
  EXPECT_EQ(Events(),
            (std::vector<std::string>{"command_started", "command_exited", "command_requested"}));
}

TEST_F(AuditGuardTest, NoSinkRecordsNothingAndRefusesNothing) {
  EXPECT_TRUE(Audit(nullptr, audit::kCommandRequested, json{{"command", "ls"}}).ok());
  AuditAfterTheFact(nullptr, audit::kCommandExited, nullptr);  // does not crash
}

}  // namespace
}  // namespace termbridge::core
