// DesktopNotifier: when it notifies, and what it hands notify-send.
#include "broker/surface/notify/desktop_notifier.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace termbridge::surface {
namespace {

NotifierOptions WithEnv(std::map<std::string, std::string> vars, std::string mode = "auto") {
  NotifierOptions options;
  options.mode = std::move(mode);
  options.env = [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  return options;
}

// A directory with an executable `notify-send` that writes its arguments,
// one per line, to `out`.
std::string FakeNotifySend(const std::string& out) {
  std::string dir =
      absl::StrCat(::testing::TempDir(), "notify_", getpid(), "_", absl::ToUnixNanos(absl::Now()));
  mkdir(dir.c_str(), 0700);
  std::string program = dir + "/notify-send";
  std::ofstream(program) << "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > " << out
                         << ".tmp && mv " << out << ".tmp " << out << "\n";
  chmod(program.c_str(), 0700);
  return dir;
}

TEST(DesktopNotifierTest, OffAndNoDisplayAndNoProgramSayWhy) {
  EXPECT_EQ(DesktopNotifier::Create(WithEnv({{"DISPLAY", ":0"}}, "off")).status().message(),
            "desktop notifications are off");
  EXPECT_NE(DesktopNotifier::Create(WithEnv({{"PATH", "/usr/bin"}}))
                .status()
                .message()
                .find("no display"),
            std::string::npos);
  auto none = DesktopNotifier::Create(WithEnv({{"DISPLAY", ":0"}, {"PATH", "/nonexistent"}}));
  EXPECT_NE(none.status().message().find("libnotify-bin"), std::string::npos);
  EXPECT_FALSE(DesktopNotifier::Create(WithEnv({}, "/nonexistent/notify")).ok());
}

TEST(DesktopNotifierTest, FindsNotifySendWithAWaylandDisplay) {
  std::string out = ::testing::TempDir() + "unused";
  std::string dir = FakeNotifySend(out);
  auto notifier =
      DesktopNotifier::Create(WithEnv({{"WAYLAND_DISPLAY", "wayland-0"}, {"PATH", dir}}));
  ASSERT_TRUE(notifier.ok()) << notifier.status();
  EXPECT_EQ(notifier->program(), dir + "/notify-send");
}

TEST(DesktopNotifierTest, TheTextIsVisibleEscapedAndShort) {
  auto notifier = DesktopNotifier::Create(WithEnv({}, "/bin/true"));
  ASSERT_TRUE(notifier.ok());
  std::vector<std::string> argv = notifier->Argv(
      "approval needed",
      "rm -rf x\r\x1b[2K ls <a href=\"http://evil\">click</a> & " + std::string(1000, 'y'));
  ASSERT_EQ(argv.size(), 7u);
  EXPECT_EQ(argv[4], "--");  // a summary starting with '-' is not an option
  const std::string& body = argv[6];
  EXPECT_EQ(body.find('\x1b'), std::string::npos);
  EXPECT_EQ(body.find('\r'), std::string::npos);
  EXPECT_EQ(body.find('<'), std::string::npos);
  EXPECT_NE(body.find("&lt;a href"), std::string::npos);
  EXPECT_LE(body.size(), 400u);
  EXPECT_EQ(body.substr(body.size() - 3), "...");
}

TEST(DesktopNotifierTest, NotifyRunsTheProgramWithTheArguments) {
  std::string out = absl::StrCat(::testing::TempDir(), "notified_", getpid());
  unlink(out.c_str());
  std::string dir = FakeNotifySend(out);
  auto notifier = DesktopNotifier::Create(WithEnv({{"DISPLAY", ":0"}, {"PATH", dir}}));
  ASSERT_TRUE(notifier.ok());
  ASSERT_TRUE(notifier->Notify("termbridge: approval needed", "make install (agent a1)").ok());
  // Detached: wait for the file it writes (renamed into place when complete).
  std::string text;
  for (int i = 0; i < 500 && access(out.c_str(), F_OK) != 0; ++i) usleep(10000);
  std::ifstream in(out);
  std::getline(in, text, '\0');
  EXPECT_EQ(text,
            "--app-name=termbridge\n--urgency=critical\n--icon=utilities-terminal\n--\n"
            "termbridge: approval needed\nmake install (agent a1)\n");
}

}  // namespace
}  // namespace termbridge::surface
