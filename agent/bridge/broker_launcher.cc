#include "agent/bridge/broker_launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/contract/errors.h"
#include "common/contract/gui_unavailable.h"
#include "common/thread/named_thread.h"
#include "spdlog/spdlog.h"

extern char** environ;

namespace termbridge::bridge {
namespace {

using contract::ErrorCode;
using contract::MakeError;

constexpr char kBrokerName[] = "termbridge-broker";

bool Executable(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// The last lines of the broker's log, for the error.
std::string LogTail(const std::string& log) {
  std::string text = ReadAll(log);
  if (text.size() > 600) text = text.substr(text.size() - 600);
  return text;
}

// Reaps the brokers this agent launched that exit before it, so that none is
// left a zombie: one "tb-reaper" thread per broker waits on its pidfd. At the
// agent's exit (static destruction) the reapers stop waiting, a broker still
// running runs on (it outlives the agent), and every reaper is joined.
class BrokerReaper {
 public:
  static BrokerReaper& Get() {
    static BrokerReaper reaper;
    return reaper;
  }

  ~BrokerReaper() {
    stopping_ = true;
    if (stop_fd_ >= 0) eventfd_write(stop_fd_, 1);  // stays readable: wakes every reaper
    threads_.JoinAll();
    if (stop_fd_ >= 0) close(stop_fd_);
  }

  void Watch(pid_t pid) {
    absl::Status started = threads_.Start([this, pid] { Reap(pid); });
    if (!started.ok()) {
      spdlog::warn("event=broker_not_reaped pid={} reason=\"{}\"", pid,
                   std::string(started.message()));
    }
  }

 private:
  BrokerReaper() : stop_fd_(eventfd(0, EFD_CLOEXEC)), threads_("tb-reaper", 16) {}

  void Reap(pid_t pid) {
    const int exit_fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    pollfd fds[2] = {{stop_fd_, POLLIN, 0}, {exit_fd, POLLIN, 0}};
    // Without a pidfd (a kernel before 5.3) or a stop eventfd: look every 100 ms.
    const int timeout_ms = exit_fd >= 0 && stop_fd_ >= 0 ? -1 : 100;
    while (!stopping_) {
      pid_t reaped = waitpid(pid, nullptr, WNOHANG);
      if (reaped == pid || (reaped < 0 && errno != EINTR)) break;  // gone, or not ours
      poll(fds, 2, timeout_ms);
    }
    if (exit_fd >= 0) close(exit_fd);
  }

  const int stop_fd_;
  std::atomic<bool> stopping_{false};
  thread::ThreadGroup threads_;
};

struct Outcome {
  bool ready = false;
  bool transient = false;  // worth one retry
  int port = 0;
  pid_t pid = 0;
  std::string error;
};

// Spawns one candidate and waits for its ready file (the readiness signal:
// the broker writes it only once it listens). The broker then still has to
// pass the agent's protocol handshake before any command goes to it.
Outcome TryStart(const BridgeConfig& config, const BrokerCandidate& candidate) {
  Outcome out;
  mkdir(config.state_dir.c_str(), 0700);
  std::string ready = absl::StrCat(config.state_dir, "/launched-", getpid(), ".ready.json");
  std::string log = config.state_dir + "/broker.log";
  unlink(ready.c_str());
  std::string listen = absl::StrCat("127.0.0.1:", config.port);
  std::vector<std::string> args = {candidate.path,   "--listen",     listen, "--state-dir",
                                   config.state_dir, "--ready-file", ready};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  // stdout is the agent's MCP channel: the broker must never write there.
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own session: a Ctrl-C meant for the agent's client does not reach it.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  int rc = posix_spawn(&out.pid, candidate.path.c_str(), &actions, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    out.error = absl::StrCat("spawn failed: ", std::strerror(rc));
    return out;
  }
  absl::Time deadline = absl::Now() + absl::Milliseconds(config.spawn_timeout_ms);
  while (absl::Now() < deadline) {
    std::string text = ReadAll(ready);
    nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_object() && parsed.contains("grpc_port")) {
      out.ready = true;
      out.port = parsed["grpc_port"].get<int>();
      unlink(ready.c_str());
      return out;
    }
    int status = 0;
    if (waitpid(out.pid, &status, WNOHANG) == out.pid) {
      std::string tail = LogTail(log);
      out.error = absl::StrCat("exited with ", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                               " before it was ready: ", tail);
      out.transient = tail.find("cannot listen") != std::string::npos ||
                      tail.find("Address already in use") != std::string::npos;
      out.pid = 0;
      return out;
    }
    // The ready file has no change event we can wait on portably.
    absl::SleepFor(absl::Milliseconds(20));
  }
  // Too slow: stop what we started, and only that.
  kill(out.pid, SIGTERM);
  absl::Time grace = absl::Now() + absl::Seconds(2);
  int status = 0;
  while (waitpid(out.pid, &status, WNOHANG) == 0 && absl::Now() < grace) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  if (waitpid(out.pid, &status, WNOHANG) == 0) {
    kill(out.pid, SIGKILL);
    waitpid(out.pid, &status, 0);
  }
  out.error = absl::StrCat("not ready within ", config.spawn_timeout_ms, " ms");
  out.transient = true;
  out.pid = 0;
  return out;
}

}  // namespace

std::vector<BrokerCandidate> BrokerCandidates(const BridgeConfig& config,
                                              const std::string& agent_exe) {
  std::vector<BrokerCandidate> out;
  if (!config.broker_binary.empty()) out.push_back({"configured", config.broker_binary});
  size_t slash = agent_exe.rfind('/');
  if (slash != std::string::npos) {
    std::string dir = agent_exe.substr(0, slash);
    out.push_back({"bundled", absl::StrCat(dir, "/", kBrokerName)});            // installed
    out.push_back({"bundled", absl::StrCat(dir, "/../broker/", kBrokerName)});  // build tree
  }
  for (absl::string_view dir : absl::StrSplit(config.path_env, ':', absl::SkipEmpty())) {
    out.push_back({"PATH", absl::StrCat(std::string(dir), "/", kBrokerName)});
  }
  return out;
}

absl::StatusOr<LaunchedBroker> LaunchBroker(const BridgeConfig& config,
                                            const std::vector<BrokerCandidate>& candidates) {
  LaunchedBroker launched;
  launched.attempts = nlohmann::json::array();
  bool path_seen = false;
  for (const BrokerCandidate& candidate : candidates) {
    if (!Executable(candidate.path)) {
      // Missing PATH entries are the normal case: one line says so for all.
      if (candidate.source != "PATH") {
        launched.attempts.push_back({{"source", candidate.source},
                                     {"path", candidate.path},
                                     {"error", "not an executable file"}});
      }
      continue;
    }
    if (candidate.source == "PATH") path_seen = true;
    for (int attempt = 1; attempt <= 2; ++attempt) {
      Outcome outcome = TryStart(config, candidate);
      if (outcome.ready) {
        // The broker outlives this call (and maybe the agent); when it does
        // exit first, reap it instead of leaving a zombie.
        BrokerReaper::Get().Watch(outcome.pid);
        launched.pid = outcome.pid;
        launched.port = outcome.port;
        launched.candidate = candidate;
        spdlog::info("event=broker_launched source={} path={} pid={} port={} attempts={}",
                     candidate.source, candidate.path, launched.pid, launched.port,
                     launched.attempts.dump());
        return launched;
      }
      launched.attempts.push_back({{"source", candidate.source},
                                   {"path", candidate.path},
                                   {"attempt", attempt},
                                   {"error", outcome.error}});
      spdlog::warn("event=broker_launch_failed source={} path={} attempt={} error=\"{}\"",
                   candidate.source, candidate.path, attempt, outcome.error);
      if (!outcome.transient) break;
    }
  }
  if (!path_seen) {
    launched.attempts.push_back(
        {{"source", "PATH"}, {"path", kBrokerName}, {"error", "not found on PATH"}});
  }
  return MakeError(ErrorCode::kGuiUnavailable,
                   "no termbridge-broker is running, and none could be started",
                   {{"reason", contract::gui_unavailable::kLaunchFailed},
                    {"candidates_tried", launched.attempts},
                    {"port", config.port},
                    {"spawn_timeout_ms", config.spawn_timeout_ms}});
}

}  // namespace termbridge::bridge
