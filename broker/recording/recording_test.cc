// Recording tests: real files under the test's temp dir. Write failures come
// from RLIMIT_FSIZE (with SIGXFSZ ignored, write(2) fails with EFBIG), the way
// a full disk fails a write.
#include "broker/recording/recording.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace termbridge::recording {
namespace {

using nlohmann::json;

std::string FreshDir(const std::string& name) {
  std::string dir = absl::StrCat(::testing::TempDir(), "rec_", name, "_", getpid(), "_",
                                 absl::ToUnixNanos(absl::Now()));
  return dir;
}

std::string Bytes(size_t n, unsigned seed) {
  std::string s(n, '\0');
  unsigned x = seed * 2654435761u + 1;
  for (char& c : s) {
    x = x * 1103515245u + 12345u;
    c = static_cast<char>(x >> 16);
  }
  return s;
}

// Reads everything from `cursor` on: the bytes, and the total gap met.
std::string ReadAll(const session::OutputArchive& a, uint64_t cursor, uint64_t* gap) {
  std::string out;
  *gap = 0;
  for (;;) {
    session::OutputSlice s = a.Read(cursor, 3000);
    *gap += s.gap;
    if (s.data.empty()) break;
    out += s.data;
    cursor = s.next;
  }
  return out;
}

RecordingInfo NewInfo(const std::string& id) {
  RecordingInfo info;
  info.terminal_id = id;
  info.agent_id = "agent-1";
  info.cwd = "/work";
  info.shell = "/bin/bash";
  return info;
}

TEST(RecordingTest, ReadsBackEveryByteAcrossSegments) {
  RecordingLimits limits;
  limits.segment_bytes = 4096;
  auto store = RecordingStore::Open(FreshDir("exact"), limits);
  ASSERT_TRUE(store.ok()) << store.status();
  auto rec = (*store)->Start(NewInfo("t_exact"));
  ASSERT_TRUE(rec.ok()) << rec.status();
  std::string all;
  for (unsigned i = 0; i < 20; ++i) {
    std::string chunk = Bytes(777 + i * 13, i);  // not valid UTF-8, with NULs
    (*rec)->Append(chunk);
    all += chunk;
  }
  uint64_t gap;
  EXPECT_EQ(ReadAll(**rec, 0, &gap), all);
  EXPECT_EQ(gap, 0u);
  EXPECT_EQ(ReadAll(**rec, 5000, &gap), all.substr(5000));
  session::OutputSlice past = (*rec)->Read(all.size() + 10, 100);
  EXPECT_TRUE(past.data.empty());
  RecordingInfo info = (*rec)->Info();
  EXPECT_EQ(info.end, all.size());
  EXPECT_EQ(info.stored, all.size());
  EXPECT_TRUE(info.live);
}

TEST(RecordingTest, FilesArePrivate) {
  const std::string dir = FreshDir("modes");
  auto store = RecordingStore::Open(dir, RecordingLimits{});
  ASSERT_TRUE(store.ok());
  auto rec = (*store)->Start(NewInfo("t_modes"));
  ASSERT_TRUE(rec.ok());
  (*rec)->Append("hello");
  struct stat st;
  ASSERT_EQ(stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(stat((dir + "/t_modes").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(stat((dir + "/t_modes/out.00000000000000000000").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((dir + "/t_modes/meta.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(RecordingTest, RefusesNamesTheBrokerDoesNotMint) {
  auto store = RecordingStore::Open(FreshDir("names"), RecordingLimits{});
  ASSERT_TRUE(store.ok());
  for (const char* bad : {"", "t_", "../t_x", "t_a/b", "x_abc", "t_a b", "t_..", "t_\n"}) {
    RecordingInfo info = NewInfo(bad);
    EXPECT_FALSE((*store)->Start(info).ok()) << bad;
    EXPECT_EQ((*store)->Find(bad).status().code(), absl::StatusCode::kNotFound) << bad;
  }
}

TEST(RecordingTest, PerTerminalCapDropsTheOldestSegmentsAsAGap) {
  RecordingLimits limits;
  limits.segment_bytes = 1000;
  limits.max_terminal_bytes = 3000;
  std::vector<RecordingEvent> events;
  auto store = RecordingStore::Open(FreshDir("cap"), limits,
                                    [&](const RecordingEvent& e) { events.push_back(e); });
  ASSERT_TRUE(store.ok());
  auto rec = (*store)->Start(NewInfo("t_cap"));
  ASSERT_TRUE(rec.ok());
  std::string all;
  for (unsigned i = 0; i < 50; ++i) {
    std::string chunk = Bytes(250, i);
    (*rec)->Append(chunk);
    all += chunk;
  }
  RecordingInfo info = (*rec)->Info();
  EXPECT_LE(info.stored, 3000u + 1000u);  // the cap, plus the segment being written
  EXPECT_GT(info.begin, 0u);
  uint64_t gap;
  std::string kept = ReadAll(**rec, 0, &gap);
  EXPECT_EQ(gap, info.begin);  // only the pruned bytes are a gap
  EXPECT_EQ(kept, all.substr(info.begin));
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front().kind, RecordingEvent::kPruned);
  EXPECT_EQ((*store)->total_bytes(), info.stored);
}

TEST(RecordingTest, TotalCapDropsFinishedRecordingsOldestFirst) {
  RecordingLimits limits;
  limits.segment_bytes = 1000;
  limits.max_terminal_bytes = 100000;
  limits.max_total_bytes = 7000;
  auto store = RecordingStore::Open(FreshDir("total"), limits);
  ASSERT_TRUE(store.ok());
  {
    auto old1 = (*store)->Start(NewInfo("t_01old"));
    auto old2 = (*store)->Start(NewInfo("t_02old"));
    ASSERT_TRUE(old1.ok() && old2.ok());
    (*old1)->Append(Bytes(2000, 1));
    (*old1)->Finish(0, 0);
    (*old2)->Append(Bytes(2000, 2));
    (*old2)->Finish(1, 0);
  }
  auto live = (*store)->Start(NewInfo("t_03live"));
  ASSERT_TRUE(live.ok());
  std::string all;
  for (unsigned i = 0; i < 8; ++i) {
    std::string chunk = Bytes(500, 10 + i);
    (*live)->Append(chunk);
    all += chunk;
  }
  // 4000 + 4000 > 7000: the oldest finished one went first, the next one stayed.
  std::vector<RecordingInfo> list = (*store)->List();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].terminal_id, "t_02old");
  EXPECT_EQ(list[1].terminal_id, "t_03live");
  uint64_t gap;
  EXPECT_EQ(ReadAll(**live, 0, &gap), all);
  EXPECT_LE((*store)->total_bytes(), 7000u);
}

class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    old_handler_ = signal(SIGXFSZ, SIG_IGN);
    getrlimit(RLIMIT_FSIZE, &old_);
    struct rlimit now = old_;
    now.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &now);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    signal(SIGXFSZ, old_handler_);
  }

 private:
  struct rlimit old_;
  sighandler_t old_handler_;
};

TEST(RecordingTest, AFailedWriteLeavesAGapAndWritingResumes) {
  RecordingLimits limits;
  limits.segment_bytes = 1 << 20;
  limits.retry_after = absl::ZeroDuration();
  std::vector<RecordingEvent> events;
  auto store = RecordingStore::Open(FreshDir("fail"), limits,
                                    [&](const RecordingEvent& e) { events.push_back(e); });
  ASSERT_TRUE(store.ok());
  auto rec = (*store)->Start(NewInfo("t_fail"));
  ASSERT_TRUE(rec.ok());
  const std::string a = Bytes(3000, 1), b = Bytes(3000, 2), c = Bytes(3000, 3);
  (*rec)->Append(a);
  {
    FileSizeLimit limit(4000);  // the segment can grow to 4000 bytes: b is cut short
    (*rec)->Append(b);
  }
  (*rec)->Append(c);  // a new segment at offset 6000
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, RecordingEvent::kWriteFailed);
  EXPECT_EQ(events[0].from, 4000u);
  EXPECT_EQ(events[0].to, 6000u);
  uint64_t gap;
  std::string got = ReadAll(**rec, 0, &gap);
  EXPECT_EQ(gap, 2000u);
  EXPECT_EQ(got, a + b.substr(0, 1000) + c);
  session::OutputSlice in_hole = (*rec)->Read(4500, 100);
  EXPECT_EQ(in_hole.gap, 1500u);
  EXPECT_EQ(in_hole.start, 6000u);
  EXPECT_EQ(in_hole.data, c.substr(0, 100));
}

// A cursor past every segment but before the end is in a hole still open
// (the failed write not retried yet): a read there, of any size, reports the
// hole, so a terminal takes its bytes from the ring, never "no gap" here.
TEST(RecordingTest, AReadInAHoleAtTheEndReportsTheHole) {
  RecordingLimits limits;
  limits.retry_after = absl::Hours(1);
  auto store = RecordingStore::Open(FreshDir("open_hole"), limits);
  ASSERT_TRUE(store.ok());
  auto rec = (*store)->Start(NewInfo("t_open_hole"));
  ASSERT_TRUE(rec.ok());
  const std::string a = Bytes(3000, 1);
  (*rec)->Append(a);
  {
    FileSizeLimit limit(4000);
    (*rec)->Append(Bytes(3000, 2));  // 1000 bytes reach the file
  }
  (*rec)->Append(Bytes(3000, 3));  // not retried yet: the hole runs to 9000
  for (size_t max_bytes : {size_t{0}, size_t{100}}) {
    session::OutputSlice in_hole = (*rec)->Read(4500, max_bytes);
    EXPECT_EQ(in_hole.gap, 4500u) << max_bytes;
    EXPECT_EQ(in_hole.start, 9000u) << max_bytes;
    EXPECT_TRUE(in_hole.data.empty());
  }
  session::OutputSlice at_end = (*rec)->Read(9000, 0);
  EXPECT_EQ(at_end.gap, 0u);
  EXPECT_EQ(at_end.start, 9000u);
  session::OutputSlice held = (*rec)->Read(3500, 0);
  EXPECT_EQ(held.gap, 0u);
  EXPECT_EQ(held.start, 3500u);
}

// The export's lines, parsed; `offsets` gets each "o" event's output offset.
std::vector<json> ExportLines(const RecordingStore& store, const std::string& id,
                              std::vector<uint64_t>* offsets = nullptr) {
  std::vector<json> lines;
  absl::Status s =
      store.Export(id, [&](std::string_view line, std::optional<uint64_t> output_offset) {
        EXPECT_EQ(line.back(), '\n');
        lines.push_back(json::parse(line));
        const bool output = lines.back().is_array() && lines.back()[1] == "o";
        EXPECT_EQ(output_offset.has_value(), output) << line;
        if (offsets != nullptr && output_offset) offsets->push_back(*output_offset);
        return true;
      });
  EXPECT_TRUE(s.ok()) << s;
  return lines;
}

// Where byte `index` of an "o" event's text is in the output, counting each
// U+FFFD as the one byte it stands for.
uint64_t StreamOffset(uint64_t event_offset, std::string_view text, size_t index) {
  uint64_t offset = event_offset;
  for (size_t i = 0; i < index; ++offset) i += text.substr(i, 3) == "\xEF\xBF\xBD" ? 3 : 1;
  return offset;
}

// Output that is not UTF-8 is one U+FFFD a byte in the asciicast, and each
// event says where it begins: text after such bytes (and after a U+FFFD the
// output held itself) is placed at its true byte offset.
TEST(RecordingTest, ExportPlacesTextAfterBytesThatAreNotUtf8AtTheirTrueOffset) {
  const std::string dir = FreshDir("binary");
  auto store = RecordingStore::Open(dir, RecordingLimits{});
  ASSERT_TRUE(store.ok());
  auto rec = (*store)->Start(NewInfo("t_binary"));
  ASSERT_TRUE(rec.ok());
  const std::string binary(5000, '\xFF');
  const std::vector<std::string> writes = {
      "a" + binary + "b", "\xE2\x82",  // a euro sign cut in two
      "\xAC \xC3(x\xEF\xBF\xBDy",      // a cut sequence, a U+FFFD printed
      "z first-MARKER\r\n\xF0\x9F",    // and a character that never ends
  };
  std::string raw;
  for (const std::string& w : writes) {
    (*rec)->Append(w);
    raw += w;
  }
  std::vector<uint64_t> offsets;
  std::vector<json> lines = ExportLines(**store, "t_binary", &offsets);
  std::string text;
  std::optional<uint64_t> marker;
  size_t event = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i][1] != "o") continue;
    ASSERT_LT(event, offsets.size());
    const std::string data = lines[i][2].get<std::string>();
    if (size_t at = data.find("first-MARKER"); at != std::string::npos) {
      marker = StreamOffset(offsets[event], data, at);
    }
    text += data;
    ++event;
  }
  EXPECT_EQ(event, offsets.size());
  ASSERT_TRUE(marker.has_value());
  EXPECT_EQ(*marker, raw.find("first-MARKER"));
  std::string fffd5000;
  for (int i = 0; i < 5000; ++i) fffd5000 += "\xEF\xBF\xBD";
  // The asciicast holds what a player shows: one U+FFFD a byte.
  EXPECT_EQ(text, "a" + fffd5000 +
                      "b\xE2\x82\xAC \xEF\xBF\xBD(x\xEF\xBF\xBDyz first-MARKER\r\n"
                      "\xEF\xBF\xBD\xEF\xBF\xBD");
  ASSERT_FALSE(offsets.empty());
  EXPECT_EQ(offsets.front(), 0u);
  for (size_t i = 1; i < offsets.size(); ++i) EXPECT_GT(offsets[i], offsets[i - 1]);
}

TEST(RecordingTest, ExportIsAsciicastWithEveryCharacterAndTheResizes) {
  const std::string dir = FreshDir("export");
  {
    auto store = RecordingStore::Open(dir, RecordingLimits{});
    ASSERT_TRUE(store.ok());
    RecordingInfo info = NewInfo("t_export");
    info.cols = 80;
    info.rows = 24;
    auto rec = (*store)->Start(info);
    ASSERT_TRUE(rec.ok());
    (*rec)->Append("hello \xE2\x82");  // a euro sign cut in two
    (*rec)->Append("\xAC world\r\n");
    (*rec)->Resized(100, 30);
    (*rec)->Append("after resize\r\n");
    (*rec)->Finish(3, 0);
  }
  // A new store (a restarted broker) lists and exports what the old one wrote.
  auto store = RecordingStore::Open(dir, RecordingLimits{});
  ASSERT_TRUE(store.ok());
  std::vector<RecordingInfo> list = (*store)->List();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_TRUE(list[0].finished);
  EXPECT_FALSE(list[0].live);
  EXPECT_EQ(list[0].exit_code, 3);
  EXPECT_EQ(list[0].agent_id, "agent-1");
  EXPECT_EQ(list[0].cols, 100u);
  std::vector<json> lines = ExportLines(**store, "t_export");
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[0]["version"], 2);
  // The header has the size the terminal had at first... the meta has the last: both are fine
  // for players; the resize event is what matters.
  std::string text;
  bool resized = false;
  double last = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    ASSERT_TRUE(lines[i].is_array());
    EXPECT_GE(lines[i][0].get<double>(), last);
    last = lines[i][0].get<double>();
    if (lines[i][1] == "o") text += lines[i][2].get<std::string>();
    if (lines[i][1] == "r") {
      EXPECT_EQ(lines[i][2], "100x30");
      EXPECT_EQ(text, "hello \xE2\x82\xAC world\r\n");  // the resize between the right bytes
      resized = true;
    }
  }
  EXPECT_TRUE(resized);
  EXPECT_EQ(text, "hello \xE2\x82\xAC world\r\nafter resize\r\n");
  EXPECT_EQ((*store)->Export("t_nothere", [](std::string_view, auto) { return true; }).code(),
            absl::StatusCode::kNotFound);
}

// An export from an offset skips the segments before the one holding it
// (a replay or search near the end of a long recording reads only that),
// keeps the size the terminal had there, and places every event as the
// whole export does.
TEST(RecordingTest, AnExportFromAnOffsetBeginsAtItsSegmentWithTheSizeThen) {
  RecordingLimits limits;
  limits.segment_bytes = 4096;
  auto store = RecordingStore::Open(FreshDir("from"), limits);
  ASSERT_TRUE(store.ok());
  auto rec = (*store)->Start(NewInfo("t_from"));
  ASSERT_TRUE(rec.ok());
  std::string all;
  for (int i = 0; i < 40; ++i) {
    if (i == 10) (*rec)->Resized(100, 30);
    std::string line = absl::StrCat("line ", i, " ", std::string(300, 'a' + i % 26), "\r\n");
    (*rec)->Append(line);
    all += line;
  }
  std::vector<uint64_t> whole_offsets;
  std::vector<json> whole = ExportLines(**store, "t_from", &whole_offsets);
  const uint64_t from = all.find("line 30 ");
  std::vector<json> part;
  std::vector<uint64_t> part_offsets;
  ASSERT_TRUE((*store)
                  ->Export(
                      "t_from",
                      [&](std::string_view line, std::optional<uint64_t> offset) {
                        part.push_back(json::parse(line));
                        if (offset) part_offsets.push_back(*offset);
                        return true;
                      },
                      from)
                  .ok());
  // The header, then the size from before the skipped segments, then output
  // from the start of the segment holding `from`: less than a segment early.
  ASSERT_GE(part.size(), 3u) << json(part).dump();
  EXPECT_EQ(part[0], whole[0]);
  EXPECT_EQ(part[1][1], "r");
  EXPECT_EQ(part[1][2], "100x30");
  ASSERT_FALSE(part_offsets.empty());
  EXPECT_LE(part_offsets.front(), from);
  EXPECT_GT(part_offsets.front() + limits.segment_bytes, from);
  EXPECT_GT(part_offsets.front(), 0u) << "earlier segments were skipped";
  // From there on, the same events at the same offsets as the whole export.
  std::string text;
  for (const json& line : part) {
    if (line.is_array() && line[1] == "o") text += line[2].get<std::string>();
  }
  EXPECT_EQ(text, all.substr(part_offsets.front()));
  auto same = std::find(whole_offsets.begin(), whole_offsets.end(), part_offsets.front());
  ASSERT_NE(same, whole_offsets.end());
  EXPECT_TRUE(std::equal(part_offsets.begin(), part_offsets.end(), same, whole_offsets.end()));
  // Past the end: the last segment.
  std::vector<uint64_t> last_offsets;
  ASSERT_TRUE((*store)
                  ->Export(
                      "t_from",
                      [&](std::string_view, std::optional<uint64_t> offset) {
                        if (offset) last_offsets.push_back(*offset);
                        return true;
                      },
                      all.size() + 100)
                  .ok());
  ASSERT_FALSE(last_offsets.empty());
  EXPECT_GT(last_offsets.front() + limits.segment_bytes, all.size());
}

TEST(RecordingTest, AKilledBrokersRecordingIsListedWithWhatItsFilesHold) {
  const std::string dir = FreshDir("killed");
  {
    auto store = RecordingStore::Open(dir, RecordingLimits{});
    ASSERT_TRUE(store.ok());
    auto rec = (*store)->Start(NewInfo("t_killed"));
    ASSERT_TRUE(rec.ok());
    (*rec)->Append(std::string(5000, 'x'));
    // No Finish: the broker died.
  }
  auto store = RecordingStore::Open(dir, RecordingLimits{});
  ASSERT_TRUE(store.ok());
  std::vector<RecordingInfo> list = (*store)->List();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_FALSE(list[0].finished);
  EXPECT_EQ(list[0].end, 5000u);
  auto found = (*store)->Find("t_killed");
  ASSERT_TRUE(found.ok());
  uint64_t gap;
  EXPECT_EQ(ReadAll(**found, 0, &gap), std::string(5000, 'x'));
}

// The reader thread appends while others read, list and export, and
// retention drops segments under them: every byte read is the byte written
// at that offset.
TEST(RecordingTest, ReadsListsAndPruningRunBesideTheWriter) {
  RecordingLimits limits;
  limits.segment_bytes = 4096;
  limits.max_terminal_bytes = 16384;
  auto store = RecordingStore::Open(FreshDir("threads"), limits);
  ASSERT_TRUE(store.ok());
  auto rec = (*store)->Start(NewInfo("t_threads"));
  ASSERT_TRUE(rec.ok());
  const std::string all = Bytes(400000, 7);
  std::atomic<bool> done{false};
  std::atomic<int> mismatches{0};
  std::thread writer([&] {
    for (size_t at = 0; at < all.size(); at += 1000) (*rec)->Append(all.substr(at, 1000));
    (*rec)->Finish(0, 0);
    done = true;
  });
  std::thread reader([&] {
    while (!done) {
      const uint64_t end = (*rec)->Info().end;
      session::OutputSlice s = (*rec)->Read(end > 10000 ? end - 10000 : 0, 5000);
      if (!s.data.empty() && all.compare(s.start, s.data.size(), s.data) != 0) ++mismatches;
    }
  });
  std::thread lister([&] {
    while (!done) {
      (*store)->List();
      (*store)->Export("t_threads", [](std::string_view, auto) { return true; }).IgnoreError();
    }
  });
  writer.join();
  reader.join();
  lister.join();
  EXPECT_EQ(mismatches.load(), 0);
  uint64_t gap;
  const RecordingInfo info = (*rec)->Info();
  EXPECT_EQ(ReadAll(**rec, info.begin, &gap), all.substr(info.begin));
  EXPECT_EQ(gap, 0u);
}

}  // namespace
}  // namespace termbridge::recording
