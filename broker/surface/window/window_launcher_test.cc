// Tests for window template resolution: a display is required for "auto",
// "none" turns windows off, and a custom template gets the attach command.
#include "broker/surface/window/window_launcher.h"

#include <map>

#include "gtest/gtest.h"

namespace termbridge::surface {
namespace {

WindowOptions With(std::string command_template, std::map<std::string, std::string> env) {
  WindowOptions options;
  options.command_template = std::move(command_template);
  options.cli_path = "/opt/tb/termbridge";
  options.state_dir = "/var/lib/tb";
  options.env = [env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  return options;
}

TEST(WindowLauncher, AutoNeedsADisplay) {
  absl::StatusOr<WindowLauncher> launcher =
      WindowLauncher::Create(With("auto", {{"PATH", "/usr/bin"}}));
  ASSERT_FALSE(launcher.ok());
  EXPECT_NE(launcher.status().message().find("no display"), absl::string_view::npos);
}

TEST(WindowLauncher, NoneIsOff) {
  EXPECT_FALSE(WindowLauncher::Create(With("none", {{"DISPLAY", ":0"}})).ok());
}

TEST(WindowLauncher, AutoWithADisplayButNoEmulatorSaysSo) {
  absl::StatusOr<WindowLauncher> launcher =
      WindowLauncher::Create(With("auto", {{"DISPLAY", ":0"}, {"PATH", "/nonexistent"}}));
  ASSERT_FALSE(launcher.ok());
  EXPECT_NE(launcher.status().message().find("no terminal emulator"), absl::string_view::npos);
}

TEST(WindowLauncher, CustomTemplateGetsTheQuotedAttachCommand) {
  absl::StatusOr<WindowLauncher> launcher =
      WindowLauncher::Create(With("tmux new-window {attach}", {}));
  ASSERT_TRUE(launcher.ok()) << launcher.status();
  EXPECT_EQ(launcher->CommandFor("t_1"),
            "tmux new-window '/opt/tb/termbridge' attach --state-dir '/var/lib/tb' 't_1'");
}

TEST(WindowLauncher, QuotesHostileIds) { EXPECT_EQ(ShellQuoteWord("a'b"), "'a'\\''b'"); }

}  // namespace
}  // namespace termbridge::surface
