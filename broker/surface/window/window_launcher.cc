// Template resolution and detached spawning for native terminal windows.
#include "broker/surface/window/window_launcher.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "spdlog/spdlog.h"

namespace termbridge::surface {
namespace {

bool Executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

std::optional<std::string> FindOnPath(const std::string& name, const std::string& path_var) {
  for (absl::string_view dir : absl::StrSplit(path_var, ':', absl::SkipEmpty())) {
    std::string candidate = absl::StrCat(std::string(dir), "/", name);
    if (Executable(candidate)) return candidate;
  }
  return std::nullopt;
}

std::string SelfDir() {
  char buffer[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) return ".";
  std::string self(buffer, n);
  return self.substr(0, self.rfind('/'));
}

// The termbridge CLI: configured, next to the broker (install or build tree), or PATH.
std::optional<std::string> FindCli(const WindowOptions& options, const std::string& path_var) {
  if (!options.cli_path.empty()) return options.cli_path;
  std::string dir = SelfDir();
  for (const std::string& candidate : {dir + "/termbridge", dir + "/cli/termbridge"}) {
    if (Executable(candidate)) return candidate;
  }
  return FindOnPath("termbridge", path_var);
}

}  // namespace

std::string ShellQuoteWord(const std::string& word) {
  return absl::StrCat("'", absl::StrReplaceAll(word, {{"'", "'\\''"}}), "'");
}

absl::StatusOr<WindowLauncher> WindowLauncher::Create(WindowOptions options) {
  auto env = [&options](const std::string& name) -> std::string {
    if (options.env) return options.env(name).value_or("");
    const char* value = std::getenv(name.c_str());
    return value == nullptr ? "" : value;
  };
  if (options.command_template == "none") {
    return absl::FailedPreconditionError("windows are off (window_command = none)");
  }
  std::string path_var = env("PATH");
  std::optional<std::string> cli = FindCli(options, path_var);
  if (!cli) return absl::FailedPreconditionError("the termbridge CLI was not found");
  std::string attach = absl::StrCat(ShellQuoteWord(*cli), " attach");
  if (!options.state_dir.empty()) {
    absl::StrAppend(&attach, " --state-dir ", ShellQuoteWord(options.state_dir));
  }
  if (options.command_template != "auto") {
    return WindowLauncher(options.command_template, attach);
  }
#ifdef __APPLE__
  return WindowLauncher("osascript -e 'tell application \"Terminal\" to do script \"{attach}\"'",
                        attach);
#else
  if (env("DISPLAY").empty() && env("WAYLAND_DISPLAY").empty()) {
    return absl::FailedPreconditionError("no display (DISPLAY and WAYLAND_DISPLAY are unset)");
  }
  struct Emulator {
    const char* name;
    const char* args;  // before the attach command
  };
  constexpr Emulator kEmulators[] = {
      {"x-terminal-emulator", "-T {title} -e sh -c {attach_quoted}"},
      {"gnome-terminal", "--title {title} -- sh -c {attach_quoted}"},
      {"konsole", "-p tabtitle={title} -e sh -c {attach_quoted}"},
      {"xterm", "-xrm 'XTerm*utf8Title: true' -T {title} -e sh -c {attach_quoted}"},
  };
  for (const Emulator& emulator : kEmulators) {
    if (std::optional<std::string> found = FindOnPath(emulator.name, path_var)) {
      return WindowLauncher(absl::StrCat(ShellQuoteWord(*found), " ", emulator.args), attach);
    }
  }
  return absl::FailedPreconditionError(
      "no terminal emulator found (x-terminal-emulator, gnome-terminal, konsole, xterm)");
#endif
}

std::string WindowLauncher::CommandFor(const std::string& terminal_id) const {
  std::string attach = absl::StrCat(attach_prefix_, " ", ShellQuoteWord(terminal_id));
  return absl::StrReplaceAll(template_, {{"{attach_quoted}", ShellQuoteWord(attach)},
                                         {"{attach}", attach},
                                         {"{title}", ShellQuoteWord("termbridge " + terminal_id)},
                                         {"{terminal}", ShellQuoteWord(terminal_id)}});
}

absl::Status WindowLauncher::Open(const std::string& terminal_id) const {
  std::string command = CommandFor(terminal_id);
  // Double fork: the window gets a session of its own and is reparented to
  // init, so the broker neither waits for it nor leaves a zombie.
  pid_t child = fork();
  if (child < 0) return absl::InternalError("fork failed");
  if (child == 0) {
    setsid();
    if (fork() != 0) _exit(0);
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, 0);
      dup2(devnull, 1);
      dup2(devnull, 2);
    }
    for (int fd = 3; fd < 1024; ++fd) close(fd);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  spdlog::info("event=window_opened terminal_id={} command=\"{}\"", terminal_id, command);
  return absl::OkStatus();
}

}  // namespace termbridge::surface
