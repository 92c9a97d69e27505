// DesktopNotifier tells the person at the host's desktop that a request
// waits for them (docs/operating.md, "When a request waits"): it runs
// notify-send (libnotify) with the request, detached, so the broker never
// waits for it. "auto" notifies only when a display is set and notify-send
// is installed; "off" never; any other value is the path of a program that
// takes notify-send's arguments.
#ifndef TERMBRIDGE_BROKER_SURFACE_NOTIFY_DESKTOP_NOTIFIER_H_
#define TERMBRIDGE_BROKER_SURFACE_NOTIFY_DESKTOP_NOTIFIER_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace termbridge::surface {

struct NotifierOptions {
  std::string mode = "auto";
  // Environment lookup (tests inject it).
  std::function<std::optional<std::string>(const std::string&)> env;
};

class DesktopNotifier {
 public:
  // FailedPrecondition saying why nothing would be shown ("off", no display,
  // notify-send not installed).
  static absl::StatusOr<DesktopNotifier> Create(NotifierOptions options);

  // The argv a notification runs: the program, its options, the summary and
  // the body. Control characters are made visible and markup is escaped
  // (notification servers read <b>, <a href> in bodies), and both are cut
  // to a few hundred bytes.
  std::vector<std::string> Argv(const std::string& summary, const std::string& body) const;
  // Starts it detached (its own session, reparented to init); never waits
  // for the notification server.
  absl::Status Notify(const std::string& summary, const std::string& body) const;
  const std::string& program() const { return program_; }

 private:
  explicit DesktopNotifier(std::string program) : program_(std::move(program)) {}
  std::string program_;
};

}  // namespace termbridge::surface

#endif  // TERMBRIDGE_BROKER_SURFACE_NOTIFY_DESKTOP_NOTIFIER_H_
