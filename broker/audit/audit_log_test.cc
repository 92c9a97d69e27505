// What an SRE reading the audit file would notice: it is private (0600), its
// indexes are exactly 1..N in file order under concurrent writers and across
// restarts, each record carries the hash of the one before it (across
// restarts and rotation too), a torn last line from a crash or a full disk
// never corrupts the next record or its index, records of what already
// happened are written once the disk takes them again, and callers cannot
// forge the record's own keys. Write failures are real kernel failures
// (RLIMIT_FSIZE), not mocks.
#include "broker/audit/audit_log.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "broker/audit/audit_verify.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace termbridge::audit {
namespace {

using nlohmann::json;

class AuditLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "audit_log_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/audit.jsonl";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string ReadFile() const {
    std::ifstream in(path_, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  void AppendRaw(const std::string& bytes) const {
    std::ofstream out(path_, std::ios::binary | std::ios::app);
    out << bytes;
  }

  // The file's lines; every line must end in '\n' (no torn tail).
  std::vector<std::string> Lines() const {
    std::string text = ReadFile();
    EXPECT_TRUE(text.empty() || text.back() == '\n') << "torn tail: " << text;
    std::vector<std::string> lines = absl::StrSplit(text, '\n');
    if (!lines.empty() && lines.back().empty()) lines.pop_back();
    return lines;
  }

  std::unique_ptr<AuditLog> OpenOrDie() const {
    absl::StatusOr<std::unique_ptr<AuditLog>> log = AuditLog::Open(path_);
    EXPECT_TRUE(log.ok()) << log.status();
    return log.ok() ? std::move(*log) : nullptr;
  }

  std::string dir_;
  std::string path_;
};

uint64_t IndexOf(const std::string& line) {
  json record = json::parse(line, nullptr, false);
  if (!record.is_object() || !record.contains("index")) return 0;
  return record["index"].get<uint64_t>();
}

TEST_F(AuditLogTest, NewFileIsPrivate0600EvenUnderPermissiveUmask) {
  mode_t old_umask = umask(0);
  auto log = OpenOrDie();
  umask(old_umask);
  ASSERT_NE(log, nullptr);
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST_F(AuditLogTest, ExistingWorldReadableFileIsTightenedTo0600) {
  AppendRaw("");
  ASSERT_EQ(chmod(path_.c_str(), 0644), 0);
  auto log = OpenOrDie();
  ASSERT_NE(log, nullptr);
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST_F(AuditLogTest, RecordIsOneLineWithIndexTimeEventThenFields) {
  absl::Time at = absl::FromUnixMillis(1714564800007);  // 2024-05-01T12:00:00.007Z
  auto log = AuditLog::Open(path_, [at] { return at; });
  ASSERT_TRUE(log.ok()) << log.status();
  absl::StatusOr<uint64_t> index =
      (*log)->Append(kInputAccepted, json{{"session_id", "s_1"}, {"bytes", 5}});
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(*index, 1u);
  const std::string first =
      "{\"index\":1,\"time\":\"2024-05-01T12:00:00.007Z\",\"event\":\"input_accepted\","
      "\"prev\":\"" +
      std::string(kGenesisHash) + "\",\"bytes\":5,\"session_id\":\"s_1\"}";
  EXPECT_EQ(ReadFile(), first + "\n");
  ASSERT_TRUE((*log)->Append(kCommandStarted, nullptr).ok());
  EXPECT_EQ(Lines().back(),
            "{\"index\":2,\"time\":\"2024-05-01T12:00:00.007Z\",\"event\":\"command_started\","
            "\"prev\":\"" +
                RecordHash(first) + "\"}");
}

TEST_F(AuditLogTest, ConcurrentAppendsAreGapFreeAndEachLineIsComplete) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 500;
  auto log = OpenOrDie();
  ASSERT_NE(log, nullptr);
  AuditSink* sink = log.get();  // callers hold the interface
  std::vector<std::vector<uint64_t>> returned(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([sink, t, &returned] {
      for (int i = 0; i < kPerThread; ++i) {
        absl::StatusOr<uint64_t> index =
            sink->Append(kInputAccepted, json{{"thread", t}, {"i", i}, {"bytes", 4096}});
        ASSERT_TRUE(index.ok()) << index.status();
        returned[t].push_back(*index);
      }
    });
  }
  for (auto& thread : threads) thread.join();

  // Each thread saw its own indexes increase; together they are 1..N once each.
  std::set<uint64_t> all;
  for (const auto& mine : returned) {
    ASSERT_EQ(mine.size(), static_cast<size_t>(kPerThread));
    EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end()));
    all.insert(mine.begin(), mine.end());
  }
  ASSERT_EQ(all.size(), static_cast<size_t>(kThreads * kPerThread));
  EXPECT_EQ(*all.begin(), 1u);
  EXPECT_EQ(*all.rbegin(), static_cast<uint64_t>(kThreads * kPerThread));

  // The file holds exactly those records, in index order, each a whole line.
  std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), static_cast<size_t>(kThreads * kPerThread));
  std::vector<int> next_i(kThreads, 0);
  for (size_t n = 0; n < lines.size(); ++n) {
    json record = json::parse(lines[n], nullptr, false);
    ASSERT_TRUE(record.is_object()) << "line " << n + 1 << ": " << lines[n];
    EXPECT_EQ(record["index"].get<uint64_t>(), n + 1);
    EXPECT_EQ(record["event"], "input_accepted");
    int t = record["thread"].get<int>();
    ASSERT_GE(t, 0);
    ASSERT_LT(t, kThreads);
    EXPECT_EQ(record["i"].get<int>(), next_i[t]++);  // one thread's records stay in order
  }
}

TEST_F(AuditLogTest, ReopeningContinuesTheIndex) {
  {
    auto log = OpenOrDie();
    ASSERT_NE(log, nullptr);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(log->Append(kTerminalOpened, nullptr).ok());
  }
  auto log = OpenOrDie();
  ASSERT_NE(log, nullptr);
  absl::StatusOr<uint64_t> index = log->Append(kTerminalClosed, nullptr);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(*index, 4u);
  std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 4u);
  for (size_t n = 0; n < lines.size(); ++n) EXPECT_EQ(IndexOf(lines[n]), n + 1);
}

// logrotate's way: the file is moved, then the broker is told to reopen.
TEST_F(AuditLogTest, ReopenAfterTheFileWasMovedContinuesTheIndexInANewFile) {
  auto log = OpenOrDie();
  ASSERT_NE(log, nullptr);
  ASSERT_TRUE(log->Append(kTerminalOpened, nullptr).ok());
  ASSERT_TRUE(log->Append(kTerminalClosed, nullptr).ok());
  absl::StatusOr<bool> unmoved = log->Reopen();
  ASSERT_TRUE(unmoved.ok()) << unmoved.status();
  EXPECT_FALSE(*unmoved) << "nothing moved the file: nothing to reopen";

  const std::string archived = path_ + ".1";
  ASSERT_EQ(rename(path_.c_str(), archived.c_str()), 0);
  absl::StatusOr<bool> reopened = log->Reopen();
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_TRUE(*reopened);
  absl::StatusOr<uint64_t> next = log->Append(kTerminalOpened, nullptr);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(*next, 4u);  // 3 is the reopen record

  std::vector<std::string> lines = Lines();  // the new file
  ASSERT_EQ(lines.size(), 2u);
  json first = json::parse(lines[0]);
  EXPECT_EQ(first["index"], 3);
  EXPECT_EQ(first["event"], "audit_log_reopened");
  EXPECT_EQ(first["previous_last_index"], 2);
  EXPECT_EQ(IndexOf(lines[1]), 4u);
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  std::ifstream old(archived);
  std::string line;
  int old_lines = 0;
  while (std::getline(old, line)) ++old_lines;
  EXPECT_EQ(old_lines, 2) << "the moved file keeps its records and gets no more";

  // A broker started later continues from the new file.
  log.reset();
  auto again = OpenOrDie();
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(*again->Append(kTerminalClosed, nullptr), 5u);
}

TEST_F(AuditLogTest, TornTrailingLineIsSkippedAndNextRecordStartsOnItsOwnLine) {
  {
    auto log = OpenOrDie();
    ASSERT_NE(log, nullptr);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(log->Append(kCommandRequested, nullptr).ok());
  }
  const std::string torn = "{\"index\":4,\"time\":\"2024-05-01T12:0";  // crash mid-write
  AppendRaw(torn);
  {
    auto log = OpenOrDie();
    ASSERT_NE(log, nullptr);
    absl::StatusOr<uint64_t> index = log->Append(kCommandStarted, nullptr);
    ASSERT_TRUE(index.ok()) << index.status();
    EXPECT_EQ(*index, 4u);
  }
  std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[3], torn);
  EXPECT_EQ(IndexOf(lines[4]), 4u);
  EXPECT_EQ(json::parse(lines[4])["event"], "command_started");

  // The torn line is now in the middle; the next start skips it too.
  auto log = OpenOrDie();
  ASSERT_NE(log, nullptr);
  absl::StatusOr<uint64_t> index = log->Append(kCommandExited, nullptr);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(*index, 5u);
  EXPECT_EQ(Lines().size(), 6u);
}

TEST_F(AuditLogTest, CompleteJsonWithoutNewlineIsStillTorn) {
  {
    auto log = OpenOrDie();
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->Append(kTerminalOpened, nullptr).ok());
  }
  AppendRaw("{\"index\":2,\"time\":\"x\",\"event\":\"terminal_closed\"}");  // no '\n'
  auto log = OpenOrDie();
  ASSERT_NE(log, nullptr);
  absl::StatusOr<uint64_t> index = log->Append(kTerminalClosed, nullptr);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(*index, 2u);
  std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(IndexOf(lines[2]), 2u);
}

TEST_F(AuditLogTest, GarbageLinesBeforeTheEndAreSkippedForTheIndex) {
  {
    auto log = OpenOrDie();
    ASSERT_NE(log, nullptr);
    for (int i = 0; i < 2; ++i) ASSERT_TRUE(log->Append(kAuthFailed, nullptr).ok());
  }
  AppendRaw("not json\n{\"no_index\":true,\"event\":\"x\"}\n\n");
  auto log = OpenOrDie();
  ASSERT_NE(log, nullptr);
  absl::StatusOr<uint64_t> index = log->Append(kAuthFailed, nullptr);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(*index, 3u);
}

TEST_F(AuditLogTest, RecordsLongerThanTheScanChunkAreFoundOnReopen) {
  {
    auto log = OpenOrDie();
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->Append(kCommandRequested, json{{"command", std::string(50000, 'a')}}).ok());
    ASSERT_TRUE(log->Append(kCommandRequested, json{{"command", std::string(300000, 'b')}}).ok());
  }
  AppendRaw(std::string(150000, 'z') + "\n" + "{\"index\":3,\"tim");  // garbage, then torn
  auto log = OpenOrDie();
  ASSERT_NE(log, nullptr);
  absl::StatusOr<uint64_t> index = log->Append(kCommandStarted, nullptr);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(*index, 3u);
  std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(IndexOf(lines[1]), 2u);
  EXPECT_EQ(IndexOf(lines[4]), 3u);
}

TEST_F(AuditLogTest, FieldsCannotOverrideIndexTimeOrEvent) {
  absl::Time at = absl::FromUnixSeconds(0);
  auto log = AuditLog::Open(path_, [at] { return at; });
  ASSERT_TRUE(log.ok()) << log.status();
  for (const char* key : {"index", "time", "event", "prev", "written"}) {
    absl::StatusOr<uint64_t> index =
        (*log)->Append(kApprovalDecided, json{{key, 999}, {"approver", "op"}});
    EXPECT_EQ(index.status().code(), absl::StatusCode::kInvalidArgument) << key;
  }
  EXPECT_EQ((*log)->Append(kApprovalDecided, json::array({1, 2})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*log)->Append("Approval Decided", nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*log)->Append("", nullptr).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadFile(), "");  // nothing was written for a refused record

  absl::StatusOr<uint64_t> index = (*log)->Append(kApprovalDecided, json{{"approver", "op"}});
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(*index, 1u);
  json record = json::parse(Lines().at(0));
  EXPECT_EQ(record["index"], 1);
  EXPECT_EQ(record["time"], "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(record["event"], "approval_decided");
}

TEST_F(AuditLogTest, OversizedRecordIsRefusedWithoutAdvancingTheIndex) {
  auto log = OpenOrDie();
  ASSERT_NE(log, nullptr);
  std::string big(AuditLog::kMaxRecordBytes, 'x');
  EXPECT_EQ(log->Append(kCommandRequested, json{{"command", big}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<uint64_t> index = log->Append(kCommandRequested, json{{"command", "ls"}});
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(*index, 1u);
}

// Lowers this process's file-size limit (a real EFBIG from write(2)) until
// destroyed. SIGXFSZ is ignored meanwhile so the write fails instead.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    old_handler_ = signal(SIGXFSZ, SIG_IGN);
    getrlimit(RLIMIT_FSIZE, &old_);
    struct rlimit lowered = old_;
    lowered.rlim_cur = bytes;
    ok_ = setrlimit(RLIMIT_FSIZE, &lowered) == 0;
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    signal(SIGXFSZ, old_handler_);
  }
  bool ok() const { return ok_; }

 private:
  struct rlimit old_;
  sighandler_t old_handler_;
  bool ok_ = false;
};

off_t FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

TEST_F(AuditLogTest, FailedWriteReturnsErrorAndDoesNotAdvanceTheIndex) {
  auto log = OpenOrDie();
  ASSERT_NE(log, nullptr);
  ASSERT_TRUE(log->Append(kTerminalOpened, nullptr).ok());
  {
    FileSizeLimit full(static_cast<rlim_t>(FileSize(path_)));  // no byte fits
    ASSERT_TRUE(full.ok());
    absl::StatusOr<uint64_t> index = log->Append(kInputAccepted, json{{"bytes", 3}});
    EXPECT_EQ(index.status().code(), absl::StatusCode::kResourceExhausted) << index.status();
  }
  absl::StatusOr<uint64_t> index = log->Append(kInputAccepted, json{{"bytes", 3}});
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(*index, 2u);
  std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(IndexOf(lines[1]), 2u);
}

TEST_F(AuditLogTest, ShortWriteLeavesATornLineThatTheNextRecordStepsOver) {
  auto log = OpenOrDie();
  ASSERT_NE(log, nullptr);
  ASSERT_TRUE(log->Append(kTerminalOpened, nullptr).ok());
  {
    FileSizeLimit almost_full(static_cast<rlim_t>(FileSize(path_) + 10));  // 10 bytes fit
    ASSERT_TRUE(almost_full.ok());
    absl::StatusOr<uint64_t> index = log->Append(kInputRefused, json{{"bytes", 3}});
    EXPECT_EQ(index.status().code(), absl::StatusCode::kResourceExhausted) << index.status();
    // Still full: a second failure must not lose track of the torn tail.
    EXPECT_FALSE(log->Append(kInputRefused, json{{"bytes", 3}}).ok());
  }
  absl::StatusOr<uint64_t> index = log->Append(kInputRefused, json{{"bytes", 3}});
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(*index, 2u);
  std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1], "{\"index\":2");  // the 10 bytes that made it
  EXPECT_EQ(IndexOf(lines[2]), 2u);

  log.reset();
  log = OpenOrDie();
  ASSERT_NE(log, nullptr);
  index = log->Append(kTerminalClosed, nullptr);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(*index, 3u);
}

TEST_F(AuditLogTest, SecondOpenOfAnOpenLogIsRefused) {
  auto log = OpenOrDie();
  ASSERT_NE(log, nullptr);
  absl::StatusOr<std::unique_ptr<AuditLog>> second = AuditLog::Open(path_);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition) << second.status();
}

TEST_F(AuditLogTest, SymlinkOrDeviceIsRefused) {
  ASSERT_EQ(symlink("/dev/full", path_.c_str()), 0);
  EXPECT_EQ(AuditLog::Open(path_).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(AuditLog::Open("/dev/full").status().code(), absl::StatusCode::kFailedPrecondition);
}

std::string PrevOf(const std::string& line) {
  json record = json::parse(line, nullptr, false);
  return record.is_object() && record.contains("prev") ? record["prev"].get<std::string>() : "";
}

// Every record's "prev" is the hash of the line before it, the first one's
// the genesis hash; the chain is what VerifyAuditFiles checks.
void ExpectChained(const std::vector<std::string>& lines) {
  for (size_t n = 0; n < lines.size(); ++n) {
    EXPECT_EQ(PrevOf(lines[n]), n == 0 ? std::string(kGenesisHash) : RecordHash(lines[n - 1]))
        << "line " << n + 1;
  }
}

TEST(RecordHashTest, IsHexSha256OfTheLine) {
  EXPECT_EQ(RecordHash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(RecordHash(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_F(AuditLogTest, EachRecordCarriesTheHashOfTheOneBeforeAcrossRestarts) {
  {
    auto log = OpenOrDie();
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->Append(kTerminalOpened, json{{"terminal_id", "t_1"}}).ok());
    ASSERT_TRUE(log->Append(kCommandRequested, json{{"command", "ls"}}).ok());
  }
  AppendRaw("{\"index\":3,\"time\":\"2024-05-01T12:0");  // a crash mid-write
  {
    auto log = OpenOrDie();  // continues from record 2, past the torn line
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->Append(kCommandStarted, nullptr).ok());
  }
  std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(PrevOf(lines[0]), std::string(kGenesisHash));
  EXPECT_EQ(PrevOf(lines[1]), RecordHash(lines[0]));
  EXPECT_EQ(IndexOf(lines[3]), 3u);
  EXPECT_EQ(PrevOf(lines[3]), RecordHash(lines[1])) << "the torn line is not in the chain";

  absl::StatusOr<AuditVerification> verified = VerifyAuditFiles({path_});
  ASSERT_TRUE(verified.ok()) << verified.status();
  EXPECT_TRUE(verified->intact()) << verified->problem->message;
  EXPECT_EQ(verified->records, 3u);
  EXPECT_EQ(verified->last_hash, RecordHash(lines[3]));
}

TEST_F(AuditLogTest, RotationChainsTheNewFileToTheLastRecordOfTheOld) {
  auto log = OpenOrDie();
  ASSERT_NE(log, nullptr);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(log->Append(kCommandRequested, json{{"i", i}}).ok());
  const std::string archived = path_ + ".1";
  ASSERT_EQ(rename(path_.c_str(), archived.c_str()), 0);
  absl::StatusOr<bool> reopened = log->Reopen();
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  ASSERT_TRUE(*reopened);
  ASSERT_TRUE(log->Append(kCommandStarted, nullptr).ok());

  std::vector<std::string> old_lines = absl::StrSplit(
      [&] {
        std::ifstream in(archived);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
      }(),
      '\n', absl::SkipEmpty());
  ASSERT_EQ(old_lines.size(), 3u);
  std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 2u);
  json first = json::parse(lines[0]);
  EXPECT_EQ(first["event"], "audit_log_reopened");
  EXPECT_EQ(first["previous_last_index"], 3);
  EXPECT_EQ(first["prev"], RecordHash(old_lines[2])) << "names the old file's last record";
  EXPECT_EQ(PrevOf(lines[1]), RecordHash(lines[0]));

  absl::StatusOr<AuditVerification> both = VerifyAuditFiles({archived, path_});
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_TRUE(both->intact()) << both->problem->message;
  EXPECT_EQ(both->records, 5u);
  EXPECT_TRUE(both->warnings.empty());
  // The live file alone: intact, and it says that older records were not checked.
  absl::StatusOr<AuditVerification> live = VerifyAuditFiles({path_});
  ASSERT_TRUE(live.ok()) << live.status();
  EXPECT_TRUE(live->intact()) << live->problem->message;
  ASSERT_EQ(live->warnings.size(), 1u);
  EXPECT_EQ(live->warnings[0].kind, kStartsAfterRotation);
}

TEST_F(AuditLogTest, RecordsOfWhatHappenedAreWrittenInOrderOnceTheDiskRecovers) {
  absl::Time now = absl::FromUnixSeconds(1714564800);
  auto opened = AuditLog::Open(path_, [&now] { return now; });
  ASSERT_TRUE(opened.ok()) << opened.status();
  AuditLog& log = **opened;
  ASSERT_TRUE(log.Append(kCommandStarted, json{{"session_id", "s_1"}}).ok());
  {
    FileSizeLimit full(static_cast<rlim_t>(FileSize(path_)));  // no byte fits
    ASSERT_TRUE(full.ok());
    absl::Status exited = log.AppendAfterTheFact(kCommandExited, json{{"exit_code", 0}});
    EXPECT_EQ(exited.code(), absl::StatusCode::kResourceExhausted) << exited;
    EXPECT_NE(exited.message().find("kept"), std::string_view::npos) << exited;
    now += absl::Seconds(1);
    EXPECT_FALSE(log.AppendAfterTheFact(kTerminalClosed, json{{"reason", "exited"}}).ok());
    EXPECT_EQ(log.PendingRecords(), 2u);
    // New work is still refused while what happened cannot be written.
    now += absl::Seconds(1);
    EXPECT_EQ(log.Append(kCommandRequested, json{{"command", "ls"}}).status().code(),
              absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(Lines().size(), 1u);
  }
  now += absl::Seconds(7);
  absl::StatusOr<uint64_t> next = log.Append(kCommandRequested, json{{"command", "ls"}});
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(*next, 4u) << "the kept records took 2 and 3";
  EXPECT_EQ(log.PendingRecords(), 0u);

  std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 4u);
  ExpectChained(lines);
  json exited = json::parse(lines[1]);
  EXPECT_EQ(exited["event"], "command_exited");
  EXPECT_EQ(exited["index"], 2);
  EXPECT_EQ(exited["time"], "2024-05-01T12:00:00.000Z") << "when it happened";
  EXPECT_EQ(exited["written"], "2024-05-01T12:00:09.000Z") << "when it reached the file";
  EXPECT_EQ(exited["exit_code"], 0);
  json closed = json::parse(lines[2]);
  EXPECT_EQ(closed["event"], "terminal_closed");
  EXPECT_EQ(closed["time"], "2024-05-01T12:00:01.000Z");
  json requested = json::parse(lines[3]);
  EXPECT_EQ(requested["event"], "command_requested");
  EXPECT_FALSE(requested.contains("written"));
  absl::StatusOr<AuditVerification> verified = VerifyAuditFiles({path_});
  ASSERT_TRUE(verified.ok()) << verified.status();
  EXPECT_TRUE(verified->intact()) << verified->problem->message;
}

TEST_F(AuditLogTest, AfterTheFactRecordIsWrittenAtOnceWhenTheDiskIsFine) {
  auto log = OpenOrDie();
  ASSERT_NE(log, nullptr);
  EXPECT_TRUE(log->AppendAfterTheFact(kCommandExited, json{{"exit_code", 1}}).ok());
  EXPECT_EQ(log->PendingRecords(), 0u);
  std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_FALSE(json::parse(lines[0]).contains("written"));
  EXPECT_EQ(log->AppendAfterTheFact("Bad Name", nullptr).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(log->PendingRecords(), 0u) << "a refused record is not kept";
}

TEST_F(AuditLogTest, KeptRecordsAreWrittenWhenTheLogCloses) {
  auto log = OpenOrDie();
  ASSERT_NE(log, nullptr);
  ASSERT_TRUE(log->Append(kTerminalOpened, nullptr).ok());
  {
    FileSizeLimit full(static_cast<rlim_t>(FileSize(path_)));
    ASSERT_TRUE(full.ok());
    EXPECT_FALSE(log->AppendAfterTheFact(kTerminalClosed, json{{"reason", "closed"}}).ok());
  }
  log.reset();  // a broker that stops once the disk is fine again
  std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(json::parse(lines[1])["event"], "terminal_closed");
  ExpectChained(lines);
}

TEST_F(AuditLogTest, WhatDoesNotFitInMemoryIsCountedInADroppedRecord) {
  auto log = OpenOrDie();
  ASSERT_NE(log, nullptr);
  ASSERT_TRUE(log->Append(kTerminalOpened, nullptr).ok());
  // Records close to the largest there can be: 8 fill the memory for kept ones.
  const std::string big(AuditLog::kMaxRecordBytes - 300, 'x');
  const int fit = static_cast<int>(AuditLog::kMaxPendingBytes / (big.size() + 20));
  ASSERT_EQ(fit, 8);
  {
    FileSizeLimit full(static_cast<rlim_t>(FileSize(path_)));
    ASSERT_TRUE(full.ok());
    for (int i = 0; i < fit; ++i) {
      EXPECT_FALSE(log->AppendAfterTheFact(kCommandExited, json{{"i", i}, {"note", big}}).ok());
    }
    absl::Status dropped = log->AppendAfterTheFact(kCommandExited, json{{"i", fit}, {"note", big}});
    EXPECT_NE(dropped.message().find("audit_records_dropped"), std::string_view::npos) << dropped;
    EXPECT_FALSE(log->AppendAfterTheFact(kTerminalClosed, json{{"reason", "x"}}).ok());
    EXPECT_EQ(log->PendingRecords(), static_cast<size_t>(fit));
  }
  ASSERT_TRUE(log->Append(kCommandRequested, nullptr).ok());
  std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), static_cast<size_t>(fit + 3));
  for (int i = 0; i < fit; ++i) EXPECT_EQ(json::parse(lines[1 + i])["i"], i);
  json dropped = json::parse(lines[1 + fit]);
  EXPECT_EQ(dropped["event"], "audit_records_dropped");
  EXPECT_EQ(dropped["count"], 2);
  EXPECT_EQ(dropped["events"], json({{"command_exited", 1}, {"terminal_closed", 1}}));
  EXPECT_EQ(json::parse(lines[2 + fit])["event"], "command_requested");
  ExpectChained(lines);
}

TEST_F(AuditLogTest, RotationWhileTheDiskIsFullStillOpensTheNewFileWithTheReopenRecord) {
  auto log = OpenOrDie();
  ASSERT_NE(log, nullptr);
  ASSERT_TRUE(log->Append(kTerminalOpened, nullptr).ok());
  const std::string archived = path_ + ".1";
  {
    FileSizeLimit full(0);  // no file can grow
    ASSERT_TRUE(full.ok());
    EXPECT_FALSE(log->AppendAfterTheFact(kTerminalClosed, json{{"reason", "exited"}}).ok());
    ASSERT_EQ(rename(path_.c_str(), archived.c_str()), 0);
    absl::StatusOr<bool> reopened = log->Reopen();
    EXPECT_EQ(reopened.status().code(), absl::StatusCode::kResourceExhausted) << reopened.status();
    EXPECT_EQ(log->PendingRecords(), 2u);
  }
  ASSERT_TRUE(log->Append(kCommandRequested, nullptr).ok());
  std::vector<std::string> lines = Lines();
  ASSERT_EQ(lines.size(), 3u);
  json first = json::parse(lines[0]);
  EXPECT_EQ(first["event"], "audit_log_reopened");
  EXPECT_EQ(first["index"], 2);
  EXPECT_EQ(first["previous_last_index"], 1);
  EXPECT_EQ(json::parse(lines[1])["event"], "terminal_closed");
  EXPECT_EQ(json::parse(lines[2])["index"], 4);
  absl::StatusOr<AuditVerification> verified = VerifyAuditFiles({archived, path_});
  ASSERT_TRUE(verified.ok()) << verified.status();
  EXPECT_TRUE(verified->intact()) << verified->problem->message;
  EXPECT_EQ(verified->records, 4u);
}

}  // namespace
}  // namespace termbridge::audit
