// Secrets only a person types (Terminal::secret_prompt; docs/security.md):
// while the program reads a line with terminal echo off, an agent's input is
// refused and a person's goes through, and the secret is never in the
// terminal's output. With a fake program whose PTY modes the test sets, and
// with bash's own `read -s` on a real PTY.
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>

#include "absl/synchronization/notification.h"
#include "broker/session/terminal.h"
#include "broker/session/testing/fake_process.h"
#include "gtest/gtest.h"

namespace termbridge::session {
namespace {

using testing::FakeProgram;
using testing::FakeSpawner;

constexpr absl::Duration kWait = absl::Seconds(10);

// Waits until the terminal's secret_prompt() is `want` (the reader thread
// reads the PTY's modes each time output arrives, and when it is quiet).
bool WaitSecret(const Terminal& terminal, bool want) {
  for (absl::Time deadline = absl::Now() + kWait; absl::Now() < deadline;) {
    if (terminal.secret_prompt() == want) return true;
    absl::SleepFor(absl::Milliseconds(5));  // the reader polls every 50 ms when quiet
  }
  return false;
}

// Whether a notice containing `part` was posted within kWait.
bool WaitNotice(const Terminal& terminal, const std::string& part) {
  for (absl::Time deadline = absl::Now() + kWait; absl::Now() < deadline;) {
    for (const TerminalNotice& notice : terminal.NoticesAfter(0)) {
      if (notice.text.find(part) != std::string::npos) return true;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  return false;
}

std::string Everything(const Terminal& terminal) { return terminal.Read(0, 1 << 20).data; }

class SecretPromptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SpawnOptions spawn;
    spawn.argv = {"fake"};
    auto started = Terminal::Start("t_secret", spawn, 1 << 16, {}, nullptr, spawner_.spawner());
    ASSERT_TRUE(started.ok()) << started.status();
    terminal_ = std::move(*started);
    program_ = spawner_.WaitForProgram(1, kWait);
    ASSERT_NE(program_, nullptr);
  }

  FakeSpawner spawner_;
  std::unique_ptr<Terminal> terminal_;
  std::shared_ptr<FakeProgram> program_;
};

TEST_F(SecretPromptTest, EchoOffOnALineIsASecretPromptAndOnlyAPersonsInputGoesThrough) {
  program_->SetInputModes(/*echo=*/false, /*canonical=*/true);
  ASSERT_TRUE(program_->Print("Password: ").ok());
  ASSERT_TRUE(WaitSecret(*terminal_, true));

  absl::Status agent = terminal_->WriteAgentInput("guess\n", terminal_->holder_generation());
  EXPECT_EQ(agent.code(), absl::StatusCode::kPermissionDenied) << agent;
  EXPECT_NE(agent.message().find("secret"), std::string_view::npos);
  ASSERT_TRUE(terminal_->WriteInput("hunter2\n").ok());
  EXPECT_EQ(program_->ReadInput(8, kWait), "hunter2\n") << "the person's line, and nothing else";

  // Viewers are told once that a person must type.
  ASSERT_TRUE(WaitNotice(*terminal_, "waiting for a person to type a secret"));
  EXPECT_EQ(terminal_->NoticesAfter(0).size(), 1u);

  program_->SetInputModes(/*echo=*/true, /*canonical=*/true);
  ASSERT_TRUE(program_->Print("\nok\n").ok());
  ASSERT_TRUE(WaitSecret(*terminal_, false));
  EXPECT_TRUE(terminal_->WriteAgentInput("next\n", terminal_->holder_generation()).ok())
      << "echo back on: agents type again";
  EXPECT_EQ(program_->ReadInput(5, kWait), "next\n");
  EXPECT_EQ(Everything(*terminal_).find("hunter2"), std::string::npos);
}

// A full-screen program (an editor, a pager) reads raw input with echo off:
// that is not a secret prompt, and agents' input reaches it.
TEST_F(SecretPromptTest, RawInputWithoutEchoIsNotASecretPrompt) {
  program_->SetInputModes(/*echo=*/false, /*canonical=*/false);
  ASSERT_TRUE(program_->Print("\x1b[?1049h").ok());
  absl::SleepFor(absl::Milliseconds(120));  // two of the reader's quiet polls
  EXPECT_FALSE(terminal_->secret_prompt());
  EXPECT_TRUE(terminal_->WriteAgentInput(":q\r", terminal_->holder_generation()).ok());
  EXPECT_EQ(program_->ReadInput(3, kWait), ":q\r");
}

// The modes are read at the moment of writing, not only as the reader last
// saw them: input sent right after the program turned echo off is refused.
TEST_F(SecretPromptTest, TheModesAreCheckedWhenTheAgentWritesNotOnlyWhenTheReaderLooked) {
  program_->SetInputModes(/*echo=*/false, /*canonical=*/true);
  EXPECT_EQ(terminal_->WriteAgentInput("guess\n", terminal_->holder_generation()).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(program_->ReadInput(1, absl::Milliseconds(50)), "");
}

// The person's line is held until it ends: a prompt that goes away first
// (the program killed mid-entry, echo turned back on by another process)
// gets none of it, so nothing of the secret is left for a later reader.
TEST_F(SecretPromptTest, APersonsLineIsHeldUntilItEndsAndDroppedIfThePromptChanged) {
  program_->SetInputModes(/*echo=*/false, /*canonical=*/true);
  ASSERT_TRUE(WaitSecret(*terminal_, true));
  ASSERT_TRUE(terminal_->WriteInput("hunter").ok());
  EXPECT_EQ(program_->ReadInput(1, absl::Milliseconds(100)), "") << "held until Enter";
  program_->SetInputModes(/*echo=*/true, /*canonical=*/true);  // as `stty echo` from elsewhere
  ASSERT_TRUE(terminal_->WriteInput("2\n").ok());
  const std::string got = program_->ReadInput(2, absl::Milliseconds(300));
  EXPECT_EQ(got.find("hunter"), std::string::npos) << got;
  EXPECT_TRUE(WaitNotice(*terminal_, "what you typed was not sent"));
}

// What an agent sent before the prompt and the program left unread is
// discarded when the prompt appears: it cannot become the secret.
TEST_F(SecretPromptTest, AgentInputLeftUnreadIsDiscardedWhenAPromptAppears) {
  ASSERT_TRUE(terminal_->WriteAgentInput("agent-line\n", terminal_->holder_generation()).ok());
  program_->SetInputModes(/*echo=*/false, /*canonical=*/true);
  ASSERT_TRUE(program_->Print("Password: ").ok());
  ASSERT_TRUE(WaitNotice(*terminal_, "bytes an agent sent"));
  ASSERT_TRUE(terminal_->WriteInput("person\n").ok());
  EXPECT_EQ(program_->ReadInput(7, kWait), "person\n");
}

TEST_F(SecretPromptTest, TheShellsCommandKeysAreNeverTypedIntoASecret) {
  EXPECT_TRUE(terminal_->WriteCommandTrigger("\x1b[7700~", terminal_->holder_generation()).ok());
  EXPECT_EQ(program_->ReadInput(7, kWait), "\x1b[7700~");
  program_->SetInputModes(/*echo=*/false, /*canonical=*/true);
  EXPECT_EQ(terminal_->WriteCommandTrigger("\x1b[7700~", terminal_->holder_generation()).code(),
            absl::StatusCode::kPermissionDenied);
}

// An agent's bytes carry the holder generation it had when it was allowed to
// write: a terminal that changed hands since, even back, takes none of them.
TEST_F(SecretPromptTest, AnAgentWriteAfterTheTerminalChangedHandsIsRefusedWhole) {
  const uint64_t held = terminal_->holder_generation();
  terminal_->ChangeHolder();
  EXPECT_EQ(terminal_->WriteAgentInput("stale\n", held).code(), absl::StatusCode::kAborted);
  EXPECT_EQ(terminal_->WriteCommandTrigger("\x1b[7700~", held).code(), absl::StatusCode::kAborted);
  EXPECT_EQ(program_->ReadInput(1, absl::Milliseconds(100)), "");
  ASSERT_TRUE(terminal_->WriteAgentInput("fresh\n", terminal_->holder_generation()).ok());
  EXPECT_EQ(program_->ReadInput(6, kWait), "fresh\n");
}

TEST_F(SecretPromptTest, AUserOnlyTerminalTakesThePersonsInputAndNoAgents) {
  terminal_->SetLock(LockMode::kUserOnly);
  EXPECT_EQ(terminal_->WriteAgentInput("agent\n", terminal_->holder_generation()).code(),
            absl::StatusCode::kCancelled);
  ASSERT_TRUE(terminal_->WriteInput("person\n").ok());
  EXPECT_EQ(program_->ReadInput(7, kWait), "person\n");
  terminal_->SetLock(LockMode::kShared);
  EXPECT_TRUE(terminal_->WriteAgentInput("agent\n", terminal_->holder_generation()).ok());
  EXPECT_EQ(program_->ReadInput(6, kWait), "agent\n");
}

// What an agent sent and the program has not read yet (in the PTY, or held
// by the broker behind a full PTY) is not delivered after the agent lost
// the terminal: its new holder's program never reads it.
TEST_F(SecretPromptTest, AgentInputNotYetReadIsDroppedWhenTheTerminalChangesHands) {
  const std::string flood(256 << 10, 'a');  // more than the PTY holds: the rest waits
  ASSERT_TRUE(terminal_->WriteAgentInput(flood, terminal_->holder_generation()).ok());
  terminal_->ChangeHolder();
  ASSERT_TRUE(terminal_->WriteInput("person\n").ok());
  const std::string got = program_->ReadInput(7, kWait);
  EXPECT_EQ(got, "person\n") << got.size() << " bytes, " << std::count(got.begin(), got.end(), 'a')
                             << " of them the agent's";
  EXPECT_EQ(program_->ReadInput(1, absl::Milliseconds(200)), "") << "nothing of it comes later";
}

TEST_F(SecretPromptTest, AgentInputNotYetReadIsDroppedWhenAPersonLocksUserOnly) {
  ASSERT_TRUE(terminal_->WriteAgentInput("agent-line\n", terminal_->holder_generation()).ok());
  terminal_->SetLock(LockMode::kUserOnly);
  ASSERT_TRUE(terminal_->WriteInput("person\n").ok());
  EXPECT_EQ(program_->ReadInput(7, kWait), "person\n");
}

TEST_F(SecretPromptTest, TheNoticeNamesWhatAsksAndSaysToTrustIt) {
  program_->set_foreground({"getpass-demo"});
  program_->SetInputModes(/*echo=*/false, /*canonical=*/true);
  ASSERT_TRUE(WaitNotice(*terminal_, "for getpass-demo"));
  EXPECT_NE(terminal_->SecretPromptNotice().find("only if you trust the program asking"),
            std::string::npos);
}

// bash's own `read -s` on a real PTY, the way sudo, ssh and gpg prompt.
TEST(SecretPromptRealTest, BashReadSilentIsAnsweredByThePersonAndTheSecretIsNeverOutput) {
  if (access("/bin/bash", X_OK) != 0) GTEST_SKIP() << "no /bin/bash";
  SpawnOptions spawn;
  spawn.argv = {"/bin/bash", "--norc", "-c",
                "read -r -s -p 'Password: ' pw; echo; echo \"len=${#pw}\"; read -r line; "
                "echo \"line=$line\""};
  auto started = Terminal::Start("t_bash", spawn, 1 << 16);
  ASSERT_TRUE(started.ok()) << started.status();
  Terminal& terminal = **started;
  ASSERT_TRUE(WaitSecret(terminal, true));
  EXPECT_EQ(terminal.WriteAgentInput("guess\n", terminal.holder_generation()).code(),
            absl::StatusCode::kPermissionDenied);
  ASSERT_TRUE(terminal.WriteInput("s3cret-canary\n").ok());
  ASSERT_TRUE(WaitSecret(terminal, false));
  // Echo is back for the next line: an agent may answer it.
  EXPECT_TRUE(terminal.WriteAgentInput("visible\n", terminal.holder_generation()).ok());
  ASSERT_TRUE(terminal.WaitForExit(kWait));
  const std::string out = Everything(terminal);
  EXPECT_NE(out.find("len=13"), std::string::npos) << out;
  EXPECT_NE(out.find("line=visible"), std::string::npos) << out;
  EXPECT_EQ(out.find("s3cret-canary"), std::string::npos) << out;
  EXPECT_EQ(out.find("guess"), std::string::npos) << "the refused input reached nothing: " << out;
}

}  // namespace
}  // namespace termbridge::session
