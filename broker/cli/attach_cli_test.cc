// Unit tests for the pure parts of attach and watch: key names, the
// keystroke filter, UTF-8 boundaries, watch's per-terminal lines, and what
// reconnecting decides (when to redial, how long to wait, where to resume).
#include "broker/cli/attach_frames.h"
#include "broker/cli/attach_keys.h"
#include "broker/cli/output_text.h"
#include "broker/cli/reconnect.h"
#include "gtest/gtest.h"

namespace termbridge::cli {
namespace {

TEST(ParseKeyTest, ControlKeysInEverySpelling) {
  EXPECT_EQ(ParseKey("^]"), 0x1d);
  EXPECT_EQ(ParseKey("ctrl-]"), 0x1d);
  EXPECT_EQ(ParseKey("C-\\"), 0x1c);
  EXPECT_EQ(ParseKey("^a"), 0x01);
  EXPECT_EQ(ParseKey("Ctrl+Z"), 0x1a);
  EXPECT_EQ(ParseKey("^?"), 0x7f);
  EXPECT_EQ(ParseKey("q"), 'q');
  EXPECT_EQ(ParseKey("none"), -1);
  EXPECT_EQ(ParseKey(""), -1);
  EXPECT_EQ(ParseKey("^1"), std::nullopt);
  EXPECT_EQ(ParseKey("ab"), std::nullopt);
  EXPECT_EQ(KeyName(0x1d), "Ctrl-]");
}

TEST(KeyFilterTest, DetachKeyStopsAndDropsTheRest) {
  KeyFilter keys(0x1d, 0x1c);
  std::string forward;
  EXPECT_EQ(keys.Feed("ls\r\x1dxyz", &forward), KeyAction::kDetach);
  EXPECT_EQ(forward, "ls\r");
}

TEST(KeyFilterTest, CommandKeyThenKClosesAcrossReads) {
  KeyFilter keys(0x1d, 0x1c);
  std::string forward;
  EXPECT_EQ(keys.Feed("a\x1c", &forward), KeyAction::kNone);
  EXPECT_EQ(keys.Feed("k", &forward), KeyAction::kClose);
  EXPECT_EQ(forward, "a");
}

TEST(KeyFilterTest, CommandKeyThenUASSetsTheLock) {
  KeyFilter keys(0x1d, 0x1c);
  std::string forward;
  EXPECT_EQ(keys.Feed("\x1cu", &forward), KeyAction::kLockUser);
  EXPECT_EQ(keys.Feed("\x1c", &forward), KeyAction::kNone);
  EXPECT_EQ(keys.Feed("A", &forward), KeyAction::kLockAgent);
  EXPECT_EQ(keys.Feed("x\x1cs", &forward), KeyAction::kLockShared);
  EXPECT_EQ(forward, "x");
}

TEST(KeyFilterTest, CommandKeyOtherwisePassesThrough) {
  const std::string command = "\x1c";
  KeyFilter keys(0x1d, 0x1c);
  std::string forward;
  EXPECT_EQ(keys.Feed(command + command + "x" + command + "y", &forward), KeyAction::kNone);
  EXPECT_EQ(forward, command + "x" + command + "y");
  forward.clear();
  EXPECT_EQ(keys.Feed(command + "d", &forward), KeyAction::kDetach);
}

TEST(KeyFilterTest, KeysOffForwardEverything) {
  KeyFilter keys(-1, -1);
  std::string forward;
  EXPECT_EQ(keys.Feed("\x1d\x1ck", &forward), KeyAction::kNone);
  EXPECT_EQ(forward, "\x1d\x1ck");
}

TEST(Utf8Test, CarryJoinsACharacterSplitBetweenChunks) {
  Utf8Carry carry;
  Utf8Carry::Text first = carry.Add(10, "x\xe2\x82");
  EXPECT_EQ(first.offset, 10u);
  EXPECT_EQ(first.text, "x");
  Utf8Carry::Text second = carry.Add(13, "\xac!");
  EXPECT_EQ(second.offset, 11u);
  EXPECT_EQ(second.text, "\xe2\x82\xac!");
  Utf8Carry::Text after_gap = carry.Add(100, "z");
  EXPECT_EQ(after_gap.offset, 100u);
  EXPECT_EQ(after_gap.text, "z");
}

TEST(LinePrefixerTest, EveryLineNamesItsTerminal) {
  LinePrefixer lines;
  std::string out = lines.Add("t_1", "hello\r\nwor");
  out += lines.Add("t_2", "other\r\n");
  out += lines.Add("t_1", "ld\n");
  out += lines.Line("t_2", "termbridge > terminal t_2 exited (0)");
  EXPECT_EQ(out,
            "t_1 | hello\n"
            "t_1 | wor\n"
            "t_2 | other\n"
            "t_1 | ld\n"
            "t_2 | termbridge > terminal t_2 exited (0)\n");
}

TEST(EscapeStripperTest, RemovesSequencesSplitAcrossChunks) {
  EscapeStripper strip;
  std::string out = strip.Add("\x1b]133;A\x07$ ls\x1b[1");
  out += strip.Add(";32mfile\x1b[0m\r\n\x1b]0;title\x1b");
  out += strip.Add("\\done\x1b(Bx\x1b=\ty\x07\b\n");
  EXPECT_EQ(out, "$ lsfile\r\ndonex\ty\n");
}

// Each input, whole and a byte at a time, leaves the guard as `kept`.
void ExpectGuarded(const std::vector<std::pair<std::string, std::string>>& cases) {
  for (const auto& [input, kept] : cases) {
    OutputGuard whole;
    EXPECT_EQ(whole.Add(input), kept) << testing::PrintToString(input);
    OutputGuard bytes;
    std::string out;
    for (char c : input) out += bytes.Add(std::string_view(&c, 1));
    EXPECT_EQ(out, kept) << testing::PrintToString(input);
  }
}

// Output cannot set the title attach keeps: OSC 0/1/2 and the title stack
// go, byte by byte split or whole; everything else passes unchanged.
TEST(OutputGuardTest, DropsWhatSetsTheTitleAndPassesEverythingElse) {
  const std::string input =
      "a\x1b]2;termbridge: lock user_only\x07"
      "b\x1b]0;x\x1b\\c\x1b]1;icon\x07"
      "d\x1b[22;2te\x1b[23;0tf\x1b[8;24;80t\x1b]133;A\x07\x1b]22;x\x07\x1b[1;31mg\x1b\x1b(Bh";
  const std::string kept = "abcdef\x1b]133;A\x07\x1b]22;x\x07\x1b[1;31mg\x1b\x1b(Bh";
  OutputGuard whole;
  EXPECT_EQ(whole.Add(input), kept);
  for (size_t cut = 1; cut < input.size(); ++cut) {
    OutputGuard split;
    std::string out = split.Add(input.substr(0, cut));
    out += split.Add(input.substr(cut));
    EXPECT_EQ(out, kept) << "cut at " << cut;
  }
  OutputGuard bytes;
  std::string out;
  for (char c : input) out += bytes.Add(std::string_view(&c, 1));
  EXPECT_EQ(out, kept);
}

// A title that never ends hides no more than a title's worth of output,
// and what follows it is read as a terminal reads it.
TEST(OutputGuardTest, ATitleNeverEndedHidesAtMostItsLimit) {
  OutputGuard filter;
  std::string out = filter.Add("\x1b]2;");
  out += filter.Add(std::string(OutputGuard::kMaxDropped, 'x'));
  out += filter.Add("visible again");
  EXPECT_EQ(out, "visible again");
  OutputGuard after_limit;
  out = after_limit.Add("\x1b]2;" + std::string(OutputGuard::kMaxDropped, ' ') +
                        "\x1b]2;owned\x07shown");
  EXPECT_EQ(out, "shown");
}

// Every way a terminal reads "set the title" is dropped: numbers with
// leading zeros, the empty number, dtterm's l/L, C1 introducers, strings a
// terminal ends with CAN, SUB, C1 ST or another ESC before the title.
TEST(OutputGuardTest, TitlesInAnyFormAreDropped) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a\x1b]02;owned\x07"
       "b",
       "ab"},
      {"a\x1b]0000000000002;owned\x07"
       "b",
       "ab"},
      {"a\x1b];owned\x07"
       "b",
       "ab"},
      {"a\x1b]lowned\x1b\\b", "ab"},
      {"a\xc2\x9d"
       "2;owned\x07"
       "b",
       "ab"},
      {"a\xc2\x9b"
       "23tb",
       "ab"},
      {"a\x1b[023tb\x1b[8;1;1tc", "abc"},
      {"a\x1b]7;x\x18\x1b]2;owned\x07"
       "b",
       "a\x1b]7;x\x18"
       "b"},
      {"a\x1b]7;x\x1b]2;owned\x07"
       "b",
       "a\x1b]7;xb"},
      {"a\x1b]7;x\xc2\x9c\x1b]2;owned\x07"
       "b",
       "a\x1b]7;x\xc2\x9c"
       "b"},
      {"a\x1b]2;owned\x18"
       "b",
       "ab"},
      {"a\x1b]2;owned\x1b[1mb", "a\x1b[1mb"},
      {"\xc2\xa9 caf\xc3\xa9", "\xc2\xa9 caf\xc3\xa9"},  // text with 0xC2 passes
      {"a\x1b]0133;A\x07"
       "b",
       "a\x1b]0133;A\x07"
       "b"},
  };
  ExpectGuarded(cases);
}

// Nothing the output writes makes the person's terminal answer with text the
// output chose, change what its keys send, touch the clipboard or print:
// control strings (DCS, APC, PM, SOS, by ESC or C1), OSCs other than 7, 8,
// 22 and 133, and media copy are dropped whole; fixed-form queries stay.
TEST(OutputGuardTest, WhatWouldMakeTheTerminalAnswerOrActIsDropped) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a\x1bP$qm\x1b\\b", "ab"},                        // DECRQSS
      {"a\x1bP+q544e\x1b\\b", "ab"},                     // XTGETTCAP
      {"a\x1bP0;1|17/726d202d7266207e0d\x1b\\b", "ab"},  // DECUDK: F6 types a command
      // tmux passthrough: a terminal ends the DCS at the first ESC, as here;
      // the OSC 52 inside goes too, and the lone ST left over does nothing.
      {"a\x1bPtmux;\x1b\x1b]52;c;cm0gLXJmIH4K\x07\x1b\\b", "a\x1b\x1b\\b"},
      {"a\x1b_Gi=1,a=q;\x1b\\b", "ab"},                // APC (kitty graphics query)
      {"a\x1b^privacy\x1b\\b\x1bXsos\x1b\\c", "abc"},  // PM, SOS
      {"a\xc2\x90$qm\xc2\x9c"
       "b",
       "ab"},  // C1 DCS and ST
      {"a\x1b]52;c;cm0gLXJmIH4K\x07"
       "b",
       "ab"},                                     // clipboard
      {"a\x1b]11;?\x07\x1b]4;1;?\x1b\\b", "ab"},  // color queries
      {"a\x1b]1337;ReportVariable=bmFtZQ==\x07"
       "b",
       "ab"},
      {"a\x1b]9;notify\x07\x1b]777;notify;x;y\x07\x1b]52\x07"
       "b",
       "ab"},
      {"a\x1b[5ib\x1b[?5ic\x1b[4i", "abc"},  // media copy
      {"a\x1b[21tb\x1b[20tc", "abc"},        // title and icon reports
      {"a\x1bP$qm\x18"
       "b",
       "ab"},                             // CAN ends the string
      {"a\x1bP$q\x1b[1mb", "a\x1b[1mb"},  // another ESC ends it
      // A C1 control inside a kept string starts its own sequence (as in
      // VTE): the DCS it opens is dropped.
      {"a\x1b]8;;\xc2\x90+q544e\xc2\x9c"
       "b",
       "a\x1b]8;;b"},
      // Raw 8-bit C1 bytes outside any UTF-8 character, and ESC % (leaving
      // UTF-8, where they act), are dropped; characters with such bytes stay.
      {"a\x9d"
       "52;c;x\x07"
       "b",
       "a52;c;x\x07"
       "b"},
      {"\xc4\x9b\xc3\xa9\xe2\x82\xac", "\xc4\x9b\xc3\xa9\xe2\x82\xac"},
      {"a\x1b%@b\x1b%Gc", "abc"},
      {"a\x1bktitle\x1b\\b", "ab"},  // screen's window title
      // What only draws, or is answered in a fixed form, stays.
      {"a\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\b",
       "a\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\b"},
      {"a\x1b]7;file://h/tmp\x07\x1b]133;D;0\x07"
       "b",
       "a\x1b]7;file://h/tmp\x07\x1b]133;D;0\x07"
       "b"},
      {"a\x1b[6n\x1b[c\x1b[>c\x1b[?25l\x1b[2J\x1b"
       "7\x1b"
       "8b",
       "a\x1b[6n\x1b[c\x1b[>c\x1b[?25l\x1b[2J\x1b"
       "7\x1b"
       "8b"},
  };
  ExpectGuarded(cases);
}

// A control string that never ends hides no more than the limit, and what
// follows is text again: output cannot hide itself from the person.
TEST(OutputGuardTest, AControlStringNeverEndedHidesAtMostTheLimit) {
  OutputGuard guard;
  std::string out = guard.Add("\x1bP");
  out += guard.Add(std::string(OutputGuard::kMaxDropped, 'x'));
  out += guard.Add("visible again\x1bP$q");
  EXPECT_EQ(out, "visible again");
}

TEST(ReconnectTest, BackoffDoublesFrom100MsToAtMost2s) {
  ReconnectBackoff backoff;
  std::vector<int64_t> waits;
  for (int i = 0; i < 8; ++i) waits.push_back(absl::ToInt64Milliseconds(backoff.Next()));
  EXPECT_EQ(waits, (std::vector<int64_t>{100, 200, 400, 800, 1600, 2000, 2000, 2000}));
  backoff.Reset();
  EXPECT_EQ(backoff.Next(), absl::Milliseconds(100));
}

TEST(ReconnectTest, OnlyABrokerThatWentAwayIsRedialed) {
  for (grpc::StatusCode code : {grpc::StatusCode::OK, grpc::StatusCode::UNAVAILABLE,
                                grpc::StatusCode::CANCELLED, grpc::StatusCode::INTERNAL}) {
    EXPECT_TRUE(BrokerWentAway(grpc::Status(code, ""))) << code;
  }
  // Refusals stay refusals: an unknown terminal, a bad request, no permission.
  for (grpc::StatusCode code :
       {grpc::StatusCode::NOT_FOUND, grpc::StatusCode::INVALID_ARGUMENT,
        grpc::StatusCode::PERMISSION_DENIED, grpc::StatusCode::UNAUTHENTICATED,
        grpc::StatusCode::UNIMPLEMENTED, grpc::StatusCode::FAILED_PRECONDITION}) {
    EXPECT_FALSE(BrokerWentAway(grpc::Status(code, ""))) << code;
  }
}

TEST(ReconnectTest, DialingASocketNobodyListensOnFailsAtOnce) {
  CliOptions options;
  options.operator_socket = ::testing::TempDir() + "/tb-no-broker.sock";
  absl::Notification stop;
  const absl::Time started = absl::Now();
  auto stub = DialOperator(options, absl::Seconds(10), stop);
  EXPECT_EQ(stub.status().code(), absl::StatusCode::kUnavailable) << stub.status();
  EXPECT_LT(absl::Now() - started, absl::Seconds(5));
}

TEST(AttachFramesTest, ANewStreamResumesAfterTheLastByteOrGap) {
  v1::AttachServerFrame output;
  output.mutable_output()->set_offset(100);
  output.mutable_output()->set_data("hello");
  EXPECT_EQ(CursorAfter(output, 90), 105);
  v1::AttachServerFrame gap;
  gap.mutable_gap()->set_from(105);
  gap.mutable_gap()->set_to(4096);
  EXPECT_EQ(CursorAfter(gap, 105), 4096);
  v1::AttachServerFrame notice;
  notice.mutable_notice()->set_text("lock shared");
  EXPECT_EQ(CursorAfter(notice, 4096), 4096);
  EXPECT_EQ(CursorAfter(notice, -1), -1);  // nothing received yet: replay the ring
  EXPECT_TRUE(ResumeFrame("t_1", -1, "attach").resume().from_start());
  EXPECT_EQ(ResumeFrame("t_1", 4096, "watch").resume().offset(), 4096u);
}

}  // namespace
}  // namespace termbridge::cli
