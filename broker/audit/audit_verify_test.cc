// What `termbridge audit verify` tells an operator about a log someone may
// have tampered with: a removed, reordered or edited record is a problem named
// by line; a torn last line, a torn write in the middle, records older than
// the chain and a log whose older files were rotated away are warnings. The
// logs are written by the real AuditLog, then changed the way a person would.
#include "broker/audit/audit_verify.h"

#include <stdlib.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "broker/audit/audit_log.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace termbridge::audit {
namespace {

using nlohmann::json;

class AuditVerifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "audit_verify_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/audit.jsonl";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes `count` records through AuditLog and returns the file's lines.
  std::vector<std::string> WriteLog(int count) {
    auto log = AuditLog::Open(path_);
    EXPECT_TRUE(log.ok()) << log.status();
    if (!log.ok()) return {};
    for (int i = 0; i < count; ++i) {
      EXPECT_TRUE(
          (*log)->Append(kCommandRequested, json{{"command", "echo " + std::to_string(i)}}).ok());
    }
    return Lines(path_);
  }

  static std::vector<std::string> Lines(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return absl::StrSplit(ss.str(), '\n', absl::SkipEmpty());
  }

  static void Write(const std::string& path, const std::vector<std::string>& lines,
                    const std::string& tail = "") {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    for (const std::string& line : lines) out << line << "\n";
    out << tail;
  }

  static AuditVerification Verify(const std::vector<std::string>& paths) {
    absl::StatusOr<AuditVerification> result = VerifyAuditFiles(paths);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : AuditVerification{};
  }

  std::string dir_;
  std::string path_;
};

TEST_F(AuditVerifyTest, AnUntouchedLogIsIntactAndNamesItsLastRecord) {
  std::vector<std::string> lines = WriteLog(6);
  AuditVerification result = Verify({path_});
  EXPECT_TRUE(result.intact()) << result.problem->message;
  EXPECT_EQ(result.records, 6u);
  EXPECT_EQ(result.first_index, 1u);
  EXPECT_EQ(result.last_index, 6u);
  EXPECT_EQ(result.last_hash, RecordHash(lines.back()));
  EXPECT_TRUE(result.warnings.empty());
}

TEST_F(AuditVerifyTest, ARemovedRecordIsAnIndexGapAtTheLineAfterIt) {
  std::vector<std::string> lines = WriteLog(6);
  lines.erase(lines.begin() + 2);  // record 3
  Write(path_, lines);
  AuditVerification result = Verify({path_});
  ASSERT_FALSE(result.intact());
  EXPECT_EQ(result.problem->kind, kIndexGap);
  EXPECT_EQ(result.problem->line, 3u);
  EXPECT_EQ(result.problem->index, 4u);
  EXPECT_NE(result.problem->message.find("record 3 is missing"), std::string::npos)
      << result.problem->message;
}

TEST_F(AuditVerifyTest, RemovedFirstRecordsAreFound) {
  std::vector<std::string> lines = WriteLog(4);
  lines.erase(lines.begin(), lines.begin() + 2);
  Write(path_, lines);
  AuditVerification result = Verify({path_});
  ASSERT_FALSE(result.intact());
  EXPECT_EQ(result.problem->kind, kStartMissing);
  EXPECT_EQ(result.problem->line, 1u);
}

TEST_F(AuditVerifyTest, ReorderedRecordsAreFound) {
  std::vector<std::string> lines = WriteLog(6);
  std::swap(lines[2], lines[3]);
  Write(path_, lines);
  AuditVerification result = Verify({path_});
  ASSERT_FALSE(result.intact());
  EXPECT_EQ(result.problem->line, 3u);
  EXPECT_EQ(result.problem->kind, kIndexGap) << "record 3 is no longer where it belongs";

  // A record copied back in after later ones: out of order.
  lines = Lines(path_);
  std::swap(lines[2], lines[3]);  // restored
  lines.push_back(lines[1]);
  Write(path_, lines);
  result = Verify({path_});
  ASSERT_FALSE(result.intact());
  EXPECT_EQ(result.problem->kind, kIndexOutOfOrder);
  EXPECT_EQ(result.problem->line, 7u);
}

TEST_F(AuditVerifyTest, AnEditedRecordBreaksTheHashInTheRecordAfterIt) {
  std::vector<std::string> lines = WriteLog(6);
  json edited = json::parse(lines[2]);
  edited["command"] = "echo nothing to see";
  lines[2] = edited.dump();  // still a valid record with the same index and prev
  Write(path_, lines);
  AuditVerification result = Verify({path_});
  ASSERT_FALSE(result.intact());
  EXPECT_EQ(result.problem->kind, kPrevMismatch);
  EXPECT_EQ(result.problem->line, 4u);
  EXPECT_NE(result.problem->message.find("record 3 (line 3)"), std::string::npos)
      << result.problem->message;
}

TEST_F(AuditVerifyTest, ARecordEditedIntoGarbageIsFoundAndTheLineNamed) {
  std::vector<std::string> lines = WriteLog(5);
  lines[1] = lines[1].substr(0, 20);
  Write(path_, lines);
  AuditVerification result = Verify({path_});
  ASSERT_FALSE(result.intact());
  EXPECT_EQ(result.problem->kind, kIndexGap);
  EXPECT_EQ(result.problem->line, 3u);
  EXPECT_NE(result.problem->message.find("line 2 before it is not a record"), std::string::npos)
      << result.problem->message;
}

TEST_F(AuditVerifyTest, TornLastLineIsAWarningNotAFailure) {
  std::vector<std::string> lines = WriteLog(3);
  Write(path_, lines, "{\"index\":4,\"time\":\"2024");
  AuditVerification result = Verify({path_});
  EXPECT_TRUE(result.intact()) << result.problem->message;
  ASSERT_EQ(result.warnings.size(), 1u);
  EXPECT_EQ(result.warnings[0].kind, kTornLine);
  EXPECT_EQ(result.warnings[0].line, 4u);
  EXPECT_EQ(result.last_index, 3u);
}

TEST_F(AuditVerifyTest, ATornWriteInTheMiddleThatTheLogSteppedOverIsAWarning) {
  WriteLog(2);
  {
    std::ofstream out(path_, std::ios::binary | std::ios::app);
    out << "{\"index\":3,\"ti";  // what a full disk left
  }
  WriteLog(2);  // the log continues on a line of its own, chained to record 2
  AuditVerification result = Verify({path_});
  EXPECT_TRUE(result.intact()) << result.problem->message;
  EXPECT_EQ(result.records, 4u);
  ASSERT_EQ(result.warnings.size(), 1u);
  EXPECT_EQ(result.warnings[0].kind, kNotARecord);
  EXPECT_EQ(result.warnings[0].line, 3u);
}

TEST_F(AuditVerifyTest, RecordsOlderThanTheChainAreCheckedForTheirIndexOnly) {
  Write(path_, {R"({"index":1,"time":"2024-05-01T12:00:00.000Z","event":"terminal_opened"})",
                R"({"index":2,"time":"2024-05-01T12:00:00.000Z","event":"terminal_closed"})"});
  WriteLog(2);  // the upgraded broker chains on from record 2
  AuditVerification result = Verify({path_});
  EXPECT_TRUE(result.intact()) << result.problem->message;
  EXPECT_EQ(result.records, 4u);
  ASSERT_EQ(result.warnings.size(), 1u);
  EXPECT_EQ(result.warnings[0].kind, kUnchained);

  // A record without "prev" after chained ones was put there by hand.
  std::vector<std::string> lines = Lines(path_);
  lines.push_back(R"({"index":5,"time":"2024-05-01T12:00:00.000Z","event":"terminal_closed"})");
  Write(path_, lines);
  result = Verify({path_});
  ASSERT_FALSE(result.intact());
  EXPECT_EQ(result.problem->kind, kPrevMissing);
  EXPECT_EQ(result.problem->line, 5u);
}

TEST_F(AuditVerifyTest, RotatedFilesAreOneChainEvenCompressed) {
  WriteLog(3);
  const std::string rotated = path_ + ".1";
  const std::string compressed = path_ + ".1.gz";
  {
    auto log = AuditLog::Open(path_);
    ASSERT_TRUE(log.ok()) << log.status();
    ASSERT_EQ(rename(path_.c_str(), rotated.c_str()), 0);
    ASSERT_TRUE((*log)->Reopen().ok());
    ASSERT_TRUE((*log)->Append(kCommandStarted, nullptr).ok());
  }
  // logrotate's compress: the rotated file becomes audit.jsonl.1.gz.
  std::vector<std::string> old_lines = Lines(rotated);
  gzFile gz = gzopen(compressed.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  std::string text = absl::StrJoin(old_lines, "\n") + "\n";
  ASSERT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(gz), Z_OK);

  AuditVerification result = Verify({compressed, path_});
  EXPECT_TRUE(result.intact()) << result.problem->message;
  EXPECT_EQ(result.records, 5u);
  EXPECT_TRUE(result.warnings.empty());

  // The files the wrong way round.
  result = Verify({path_, rotated});
  ASSERT_FALSE(result.intact());
  EXPECT_EQ(result.problem->kind, kIndexOutOfOrder);
  EXPECT_EQ(result.problem->file, rotated);

  // The last record of the rotated file removed: the new file's first record says so.
  old_lines.pop_back();
  Write(rotated, old_lines);
  result = Verify({rotated, path_});
  ASSERT_FALSE(result.intact());
  EXPECT_EQ(result.problem->kind, kIndexGap);
  EXPECT_EQ(result.problem->file, path_);
  EXPECT_EQ(result.problem->line, 1u);
}

TEST_F(AuditVerifyTest, AMissingFileIsAnErrorAndAnEmptyOneHasNoRecords) {
  EXPECT_EQ(VerifyAuditFiles({dir_ + "/nope.jsonl"}).status().code(), absl::StatusCode::kNotFound);
  Write(path_, {});
  AuditVerification result = Verify({path_});
  EXPECT_TRUE(result.intact());
  ASSERT_EQ(result.warnings.size(), 1u);
  EXPECT_EQ(result.warnings[0].kind, kNoRecords);
}

}  // namespace
}  // namespace termbridge::audit
