// The headless lane: policy check, posix_spawn without a shell, pipe capture.
#include "agent/lane/headless_lane.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/contract/errors.h"
#include "common/contract/request.h"
#include "common/thread/named_thread.h"
#include "spdlog/spdlog.h"

extern char** environ;

namespace termbridge::lane {
namespace {

using contract::ErrorCode;
using contract::MakeError;

// A stream kept up to a byte bound: older bytes fall off the front and
// become a gap for readers whose cursor is behind.
class BoundedStream {
 public:
  explicit BoundedStream(size_t max_bytes) : max_bytes_(max_bytes) {}
  void Append(std::string_view bytes) {
    data_.append(bytes);
    if (data_.size() > max_bytes_) {
      size_t drop = data_.size() - max_bytes_;
      data_.erase(0, drop);
      base_ += drop;
    }
  }
  // From `cursor`, within `budget` bytes (head and tail when more is held).
  ShapedSlice Read(uint64_t cursor, size_t budget, bool tail) const {
    return ShapeBytes(data_, base_, cursor, budget, tail);
  }
  // Bytes held from `cursor` to the end.
  uint64_t Available(uint64_t cursor) const { return end() - std::clamp(cursor, base_, end()); }
  uint64_t end() const { return base_ + data_.size(); }

 private:
  size_t max_bytes_;
  std::string data_;
  uint64_t base_ = 0;
};

}  // namespace

struct HeadlessLane::Process {
  explicit Process(size_t max_bytes) : out(max_bytes), err(max_bytes) {}
  std::string session_id;
  std::vector<std::string> argv;
  policy::Decision decision;
  pid_t pid = -1;
  int out_fd = -1;
  int err_fd = -1;
  mutable absl::Mutex mu;
  BoundedStream out ABSL_GUARDED_BY(mu);
  BoundedStream err ABSL_GUARDED_BY(mu);
  bool running ABSL_GUARDED_BY(mu) = true;
  std::optional<int> exit_code ABSL_GUARDED_BY(mu);
  std::optional<int> signal ABSL_GUARDED_BY(mu);
  int64_t exited_at_unix_ms ABSL_GUARDED_BY(mu) = 0;
  uint64_t changes ABSL_GUARDED_BY(mu) = 0;  // bumps on output and exit, for waiters
  thread::NamedThread pump;  // "tb-headless": copies the process's output; joined on reap
};

HeadlessLane::HeadlessLane(Options options) : options_(options) {}

HeadlessLane::~HeadlessLane() {
  std::map<std::string, std::shared_ptr<Process>> all;
  {
    absl::MutexLock lock(&mu_);
    all.swap(processes_);
  }
  for (auto& [id, process] : all) {
    bool running;
    {
      absl::MutexLock lock(&process->mu);
      running = process->running;
    }
    if (running) kill(-process->pid, SIGKILL);
    process->pump.Join();
  }
}

absl::StatusOr<HeadlessView> HeadlessLane::Run(const HeadlessRun& run,
                                               const policy::Policy& policy) {
  if (run.argv.empty() || run.argv[0].empty()) {
    return MakeError(ErrorCode::kInvalidPayload, "a headless run needs a command",
                     {{"field", "execution.command"}});
  }
  // No person can be asked here: a variable that can change what a program
  // runs is refused by name, like one with an unfit value.
  for (const auto& [name, value] : run.env) {
    std::optional<std::string> problem = policy::EnvValueProblem(name, value);
    if (!problem && !policy::EnvNameHarmless(name, {})) {
      problem =
          "it can change what a program runs; the headless lane takes only harmless "
          "names (LANG, LC_*, TZ, NO_COLOR, COLUMNS, LINES)";
    }
    if (problem) {
      return MakeError(ErrorCode::kInvalidPayload,
                       absl::StrCat("environment variable ", name, ": ", *problem),
                       {{"field", absl::StrCat("execution.env.", name)}, {"variable", name}});
    }
  }
  // Judging costs little whatever the command (docs/security.md): the size
  // is bounded before any parsing, and a command past one of the parser's
  // bounds is refused with the bound named.
  size_t bytes = 0;
  for (const std::string& a : run.argv) bytes += a.size() + 1;
  if (bytes > policy::kMaxLineBytes) {
    return MakeError(ErrorCode::kInvalidPayload,
                     absl::StrCat("the command is ", bytes,
                                  " bytes; the headless lane judges at "
                                  "most ",
                                  policy::kMaxLineBytes),
                     {{"field", "execution.command"},
                      {"limit", "line_bytes"},
                      {"value", policy::kMaxLineBytes}});
  }
  policy::Decision decision = policy.CheckHeadless(run.argv);
  if (decision.rule_id == policy::kTooComplexRule) {
    return MakeError(ErrorCode::kInvalidPayload,
                     absl::StrCat("the headless lane refuses this command: ", decision.reason),
                     {{"field", "execution.command"},
                      {"rule", decision.rule_id},
                      {"limit", decision.limit},
                      {"decision", decision.ToJson()}});
  }
  if (decision.action != policy::Action::kAllow) {
    return MakeError(ErrorCode::kBlockedDestructive,
                     absl::StrCat("the headless lane refuses this command: ", decision.reason),
                     {{"rule", decision.rule_id},
                      {"command", absl::StrJoin(run.argv, " ")},
                      {"decision", decision.ToJson()},
                      {"hint", "run it in the interactive lane, where a person can approve it"}});
  }
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return absl::InternalError("pipe failed");
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return absl::InternalError("pipe failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  if (!run.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, run.cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group: kill reaches its children
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    std::string name = entry.substr(0, entry.find('='));
    if (run.env.count(name) == 0) env_strings.push_back(std::move(entry));
  }
  for (const auto& [name, value] : run.env) env_strings.push_back(name + "=" + value);
  std::vector<char*> envp, argv;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = run.argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    return MakeError(
        ErrorCode::kInvalidPayload,
        absl::StrCat("cannot run ", run.argv[0], ": ", std::strerror(rc)),
        {{"field", rc == ENOENT ? "execution.command" : "runtime.cwd"}, {"errno", rc}});
  }
  auto process = std::make_shared<Process>(options_.max_stream_bytes);
  process->session_id = contract::NewId("s_");
  process->argv = run.argv;
  process->decision = decision;
  process->pid = pid;
  process->out_fd = out_pipe[0];
  process->err_fd = err_pipe[0];
  process->pump = thread::NamedThread("tb-headless", [this, process] { Pump(process); });
  spdlog::info("event=headless_started session_id={} pid={} argv=\"{}\" rule={}",
               process->session_id, pid, absl::StrJoin(run.argv, " "), decision.rule_id);
  {
    absl::MutexLock lock(&mu_);
    processes_[process->session_id] = process;
    order_.push_back(process->session_id);
    // Forget the oldest finished sessions beyond the bound.
    for (auto it = order_.begin(); order_.size() > options_.max_sessions && it != order_.end();) {
      auto found = processes_.find(*it);
      bool done = false;
      if (found != processes_.end()) {
        absl::MutexLock process_lock(&found->second->mu);
        done = !found->second->running;
      }
      if (found == processes_.end() || done) {
        if (found != processes_.end()) {
          found->second->pump.Join();
          processes_.erase(found);
        }
        it = order_.erase(it);
      } else {
        ++it;
      }
    }
  }
  {
    absl::MutexLock lock(&process->mu);
    auto exited = [&process]()
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(process->mu) { return !process->running; };
    process->mu.AwaitWithTimeout(absl::Condition(&exited), run.wait);
  }
  return ViewOf(*process, 0, 0, run.budget, run.tail);
}

void HeadlessLane::Pump(const std::shared_ptr<Process>& process) {
  int fds[2] = {process->out_fd, process->err_fd};
  bool open[2] = {true, true};
  bool reaped = false;
  int status = 0;
  char buffer[16384];
  while (open[0] || open[1]) {
    struct pollfd polls[2];
    int n = 0;
    int which[2];
    for (int i = 0; i < 2; ++i) {
      if (!open[i]) continue;
      polls[n] = {fds[i], POLLIN, 0};
      which[n++] = i;
    }
    // After the exit, give descendants that kept the pipes a moment, then stop.
    int r = poll(polls, n, reaped ? 200 : 100);
    if (r == 0 && reaped) break;
    for (int k = 0; k < n; ++k) {
      if (polls[k].revents == 0) continue;
      ssize_t got = read(polls[k].fd, buffer, sizeof buffer);
      int i = which[k];
      if (got > 0) {
        absl::MutexLock lock(&process->mu);
        (i == 0 ? process->out : process->err).Append(std::string_view(buffer, got));
        ++process->changes;
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        open[i] = false;
      }
    }
    if (!reaped && waitpid(process->pid, &status, WNOHANG) == process->pid) reaped = true;
  }
  close(fds[0]);
  close(fds[1]);
  if (!reaped) waitpid(process->pid, &status, 0);
  absl::MutexLock lock(&process->mu);
  process->running = false;
  if (WIFEXITED(status)) process->exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) process->signal = WTERMSIG(status);
  process->exited_at_unix_ms = absl::ToUnixMillis(absl::Now());
  ++process->changes;
  spdlog::info("event=headless_exited session_id={} exit_code={} signal={}", process->session_id,
               process->exit_code.value_or(-1), process->signal.value_or(0));
}

HeadlessView HeadlessLane::ViewOf(const Process& process, uint64_t out_cursor, uint64_t err_cursor,
                                  size_t budget, bool tail) const {
  absl::MutexLock lock(&process.mu);
  HeadlessView view;
  view.session_id = process.session_id;
  view.argv = process.argv;
  view.decision = process.decision;
  view.running = process.running;
  view.exit_code = process.exit_code;
  view.signal = process.signal;
  view.exited_at_unix_ms = process.exited_at_unix_ms;
  auto [out_budget, err_budget] =
      SplitBudget(process.out.Available(out_cursor), process.err.Available(err_cursor), budget);
  view.out = process.out.Read(out_cursor, out_budget, tail);
  view.err = process.err.Read(err_cursor, err_budget, tail);
  return view;
}

absl::StatusOr<std::shared_ptr<HeadlessLane::Process>> HeadlessLane::Find(
    const std::string& session_id) {
  absl::MutexLock lock(&mu_);
  auto it = processes_.find(session_id);
  if (it == processes_.end()) {
    return MakeError(ErrorCode::kNotFound, "unknown headless session_id",
                     {{"session_id", session_id}});
  }
  return it->second;
}

absl::StatusOr<HeadlessView> HeadlessLane::Read(const std::string& session_id, uint64_t out_cursor,
                                                uint64_t err_cursor, size_t budget,
                                                absl::Duration wait, bool tail) {
  absl::StatusOr<std::shared_ptr<Process>> process = Find(session_id);
  if (!process.ok()) return process.status();
  Process& p = **process;
  {
    absl::MutexLock lock(&p.mu);
    auto ready = [&p, out_cursor, err_cursor]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(p.mu) {
      return !p.running || p.out.end() > out_cursor || p.err.end() > err_cursor;
    };
    p.mu.AwaitWithTimeout(absl::Condition(&ready), wait);
  }
  return ViewOf(p, out_cursor, err_cursor, budget, tail);
}

absl::StatusOr<HeadlessView> HeadlessLane::Kill(const std::string& session_id, size_t budget,
                                                absl::Duration grace) {
  absl::StatusOr<std::shared_ptr<Process>> process = Find(session_id);
  if (!process.ok()) return process.status();
  Process& p = **process;
  for (int signo : {SIGTERM, SIGKILL}) {
    absl::MutexLock lock(&p.mu);
    if (!p.running) break;
    kill(-p.pid, signo);
    auto exited = [&p]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(p.mu) { return !p.running; };
    p.mu.AwaitWithTimeout(absl::Condition(&exited), signo == SIGKILL ? absl::Seconds(5) : grace);
  }
  return ViewOf(p, 0, 0, budget);
}

bool HeadlessLane::Owns(const std::string& session_id) {
  absl::MutexLock lock(&mu_);
  return processes_.count(session_id) > 0;
}

std::vector<HeadlessView> HeadlessLane::List() {
  std::vector<std::shared_ptr<Process>> all;
  {
    absl::MutexLock lock(&mu_);
    for (const std::string& id : order_) {
      if (auto it = processes_.find(id); it != processes_.end()) all.push_back(it->second);
    }
  }
  std::vector<HeadlessView> views;
  for (const auto& process : all) views.push_back(ViewOf(*process, 0, 0, 0));
  return views;
}

}  // namespace termbridge::lane
