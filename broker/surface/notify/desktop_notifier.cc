// DesktopNotifier: finds notify-send and runs it detached with argv (no shell).
#include "broker/surface/notify/desktop_notifier.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/text/utf8.h"
#include "common/text/visible.h"
#include "spdlog/spdlog.h"

namespace termbridge::surface {
namespace {

constexpr size_t kMaxSummaryBytes = 120;
constexpr size_t kMaxBodyBytes = 400;

std::optional<std::string> ProcessEnv(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::string FindOnPath(const std::string& name, const std::string& path) {
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    std::string candidate = absl::StrCat(dir, "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string Clean(const std::string& text, size_t max_bytes) {
  std::string visible = text::Visible(text);
  std::string escaped =
      absl::StrReplaceAll(visible, {{"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}});
  if (escaped.size() <= max_bytes) return escaped;
  std::string cut(text::CutAtCharBoundary(escaped, max_bytes - 3));
  // Never end inside an entity.
  if (size_t amp = cut.rfind('&');
      amp != std::string::npos && cut.find(';', amp) == std::string::npos) {
    cut.resize(amp);
  }
  return cut + "...";
}

}  // namespace

absl::StatusOr<DesktopNotifier> DesktopNotifier::Create(NotifierOptions options) {
  auto env = options.env ? options.env : ProcessEnv;
  if (options.mode == "off") return absl::FailedPreconditionError("desktop notifications are off");
  if (options.mode != "auto") {
    if (access(options.mode.c_str(), X_OK) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("notify program ", options.mode, " is not executable"));
    }
    return DesktopNotifier(options.mode);
  }
  if (!env("DISPLAY") && !env("WAYLAND_DISPLAY")) {
    return absl::FailedPreconditionError("no display (DISPLAY and WAYLAND_DISPLAY are unset)");
  }
  std::string program = FindOnPath("notify-send", env("PATH").value_or("/usr/bin:/bin"));
  if (program.empty()) {
    return absl::FailedPreconditionError("notify-send is not installed (Debian: libnotify-bin)");
  }
  return DesktopNotifier(program);
}

std::vector<std::string> DesktopNotifier::Argv(const std::string& summary,
                                               const std::string& body) const {
  return {program_,
          "--app-name=termbridge",
          "--urgency=critical",
          "--icon=utilities-terminal",
          "--",
          Clean(summary, kMaxSummaryBytes),
          Clean(body, kMaxBodyBytes)};
}

absl::Status DesktopNotifier::Notify(const std::string& summary, const std::string& body) const {
  std::vector<std::string> argv = Argv(summary, body);
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  // Double fork: the notifier gets a session of its own and is reparented
  // to init, so the broker neither waits for it nor leaves a zombie.
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
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return absl::OkStatus();
}

}  // namespace termbridge::surface
