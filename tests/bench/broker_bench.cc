// termbridge-bench measures what the broker costs on top of a bare PTY, in
// one process: it starts BrokerServer on 127.0.0.1:0 with a temporary state
// dir and talks to it over a real loopback gRPC channel with the agent token,
// exactly as termbridge-agent does. (a) Throughput: N MiB written by a shell
// pipeline into a PTY, read from a bare forkpty master, from a
// session::Terminal (reader thread + ring, no gRPC) and through Execute +
// Attach; reported as MiB/s and broker/bare ratio. (b) Latency: execute-to-exit
// of `true`, bare (/bin/true and `<shell> -c true` via forkpty + execvp), via
// session::Terminal and via unary Execute; reported as p50/p90/p99 ms and the
// broker's p50 overhead over the matching bare spawn. Not a ctest: run it by hand.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "broker/core/terminal_registry.h"
#include "broker/server/broker_config.h"
#include "broker/server/broker_server.h"
#include "broker/server/process_tuning.h"
#include "broker/session/terminal.h"
#include "grpcpp/grpcpp.h"
#include "nlohmann/json.hpp"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"
#include "termbridge/v1/broker.grpc.pb.h"

namespace termbridge::bench {
namespace {

namespace v1 = ::termbridge::v1;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

constexpr size_t kReadChunk = 64 << 10;
constexpr size_t kMiB = 1 << 20;
constexpr size_t kAttachFrameBytes = 1 << 20;  // the broker's largest Output frame
constexpr double kTargetRatio = 0.8;
constexpr double kTargetOverheadMs = 1.0;

struct Options {
  int mib = 64;
  int iterations = 200;
  int runs = 3;    // throughput repetitions per path; the median is reported
  int cpus = 0;    // > 0: the bench and all it starts run on this many CPUs
  int warmup = 5;  // latency iterations run and discarded before measuring
  bool json = false;
  bool samples = false;  // --json also lists every latency sample, in order
  bool broker_logs = false;
  bool malloc_defaults = false;  // skip the broker's malloc settings (to measure them)
  bool throughput = true;
  bool latency = true;
  bool headline_only = false;  // throughput: only bare and the shipped-ring broker row
  bool writer_cost = false;    // --writer-cost: what a program pays to write lines to a PTY
};

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double MsSince(Clock::time_point start) { return SecondsSince(start) * 1e3; }

// ---------------------------------------------------------------- arguments

void PrintUsage() {
  std::fprintf(stderr,
               "usage: termbridge-bench [--mib N] [--iterations K] [--runs R] [--warmup W]\n"
               "                        [--json] [--samples] [--broker-logs] [--malloc-defaults]\n"
               "                        [--skip-throughput] [--skip-latency] [--cpus C]\n"
               "                        [--headline-only]\n"
               "  --mib N         throughput payload in MiB (default 64)\n"
               "  --iterations K  latency iterations per path (default 200)\n"
               "  --runs R        throughput runs per path; median reported (default 3)\n"
               "  --warmup W      latency iterations discarded first (default 5)\n"
               "  --cpus C        pin the bench, its broker and every program they start to\n"
               "                  C of the CPUs it may use (default: all): the work each path\n"
               "                  adds, apart from how the scheduler spreads it\n"
               "  --json          print one JSON object instead of the table\n"
               "  --samples       with --json, also list every latency sample in order\n"
               "  --broker-logs   keep the broker's info logs (stderr); default: warnings only\n"
               "  --malloc-defaults  keep glibc's malloc defaults instead of the broker's\n"
               "  --skip-throughput, --skip-latency  run only one half\n"
               "  --writer-cost         only what seq pays to write 20 MB of lines into a PTY\n"
               "                        and into a pipe (its own CPU seconds), --runs times\n"
               "  --headline-only throughput: only bare pty and the shipped-ring broker row, so\n"
               "                  many paired runs fit in a few minutes (narrower interval)\n");
}

// Parses "--name V" and "--name=V". Returns false (after printing why) on a bad argument.
bool ParseArgs(int argc, char** argv, Options* options) {
  std::map<std::string, int*> ints = {{"--mib", &options->mib},
                                      {"--iterations", &options->iterations},
                                      {"--runs", &options->runs},
                                      {"--warmup", &options->warmup},
                                      {"--cpus", &options->cpus}};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--json") {
      options->json = true;
      continue;
    }
    if (arg == "--samples") {
      options->samples = true;
      continue;
    }
    if (arg == "--broker-logs") {
      options->broker_logs = true;
      continue;
    }
    if (arg == "--malloc-defaults") {
      options->malloc_defaults = true;
      continue;
    }
    if (arg == "--skip-throughput") {
      options->throughput = false;
      continue;
    }
    if (arg == "--skip-latency") {
      options->latency = false;
      continue;
    }
    if (arg == "--headline-only") {
      options->headline_only = true;
      continue;
    }
    if (arg == "--writer-cost") {
      options->writer_cost = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") return false;
    std::string name = arg, value;
    bool has_value = false;
    if (size_t eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    auto it = ints.find(name);
    if (it == ints.end()) {
      std::fprintf(stderr, "unknown argument: %s\n", arg.c_str());
      return false;
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", name.c_str());
        return false;
      }
      value = argv[++i];
    }
    if (!absl::SimpleAtoi(value, it->second) || *it->second < 0) {
      std::fprintf(stderr, "%s: not a non-negative integer: %s\n", name.c_str(), value.c_str());
      return false;
    }
  }
  if (options->mib < 1 || options->mib > 1000 || options->iterations < 1 || options->runs < 1) {
    std::fprintf(stderr, "--mib must be 1..1000, --iterations and --runs at least 1\n");
    return false;
  }
  return true;
}

// ------------------------------------------------------------------ figures

struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0, min = 0, max = 0, mean = 0;
  double first_mean = 0, last_mean = 0;  // mean of the first and last 10% of iterations
  int failures = 0;                      // iterations that did not see the exit
  std::vector<double> in_order;          // every sample, in iteration order
};

double MeanOf(std::vector<double>::const_iterator begin, std::vector<double>::const_iterator end) {
  if (begin == end) return 0;
  double sum = 0;
  for (auto it = begin; it != end; ++it) sum += *it;
  return sum / static_cast<double>(end - begin);
}

// Nearest-rank percentiles of `ms` (in iteration order).
Percentiles Summarize(std::vector<double> ms, int failures) {
  Percentiles out;
  out.failures = failures;
  out.in_order = ms;
  if (ms.empty()) return out;
  size_t tenth = std::max<size_t>(ms.size() / 10, 1);
  out.first_mean = MeanOf(ms.begin(), ms.begin() + tenth);
  out.last_mean = MeanOf(ms.end() - tenth, ms.end());
  out.mean = MeanOf(ms.begin(), ms.end());
  std::sort(ms.begin(), ms.end());
  auto rank = [&](double p) {
    size_t idx = static_cast<size_t>(std::ceil(p / 100.0 * ms.size()));
    return ms[std::min(ms.size(), std::max<size_t>(idx, 1)) - 1];
  };
  out.p50 = rank(50);
  out.p90 = rank(90);
  out.p99 = rank(99);
  out.min = ms.front();
  out.max = ms.back();
  return out;
}

json ToJson(const Percentiles& p, bool samples) {
  json out = {{"p50_ms", p.p50},
              {"p90_ms", p.p90},
              {"p99_ms", p.p99},
              {"min_ms", p.min},
              {"max_ms", p.max},
              {"mean_ms", p.mean},
              {"first_10pct_mean_ms", p.first_mean},
              {"last_10pct_mean_ms", p.last_mean},
              {"samples", p.in_order.size()},
              {"failures", p.failures}};
  if (samples) out["samples_ms"] = p.in_order;
  return out;
}

// One throughput run of one path.
struct Transfer {
  bool ok = false;
  std::string error;
  double seconds = 0;
  uint64_t bytes = 0;      // payload bytes received
  uint64_t gap_bytes = 0;  // bytes the ring dropped before the reader got them
  uint64_t chunks = 0;     // read() calls, ring reads or Attach output frames
  double cpu_seconds = 0;  // user + system time of this process (bench and broker threads)
  int64_t switches = 0;    // context switches of this process, voluntary and not
  int64_t faults = 0;      // minor page faults of this process (fresh pages touched)
  double MiBps() const { return seconds > 0 ? bytes / static_cast<double>(kMiB) / seconds : 0; }
};

// Process-wide CPU time, context switches and page faults (all threads; children excluded).
struct Usage {
  double cpu_seconds = 0;
  int64_t switches = 0;
  int64_t faults = 0;
  static Usage Now() {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    Usage u;
    u.cpu_seconds =
        ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    u.switches = ru.ru_nvcsw + ru.ru_nivcsw;
    u.faults = ru.ru_minflt + ru.ru_majflt;
    return u;
  }
};

// Runs one transfer and records the process's CPU time and context switches during it.
Transfer WithUsage(const std::function<Transfer()>& run) {
  Usage before = Usage::Now();
  Transfer t = run();
  Usage after = Usage::Now();
  t.cpu_seconds = after.cpu_seconds - before.cpu_seconds;
  t.switches = after.switches - before.switches;
  t.faults = after.faults - before.faults;
  return t;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct PathResult {
  std::vector<Transfer> runs;
  double MedianMiBps() const {
    std::vector<double> v;
    for (const Transfer& t : runs) v.push_back(t.MiBps());
    return Median(v);
  }
  // The median over runs of this path's speed divided by `base`'s in the same
  // run. Runs are interleaved, so each pair ran at the same moment: the
  // machine's speed drifting between runs cancels out of each ratio (it does
  // not between two medians taken from different runs).
  double PairedRatio(const PathResult& base) const { return Median(PairedRatios(base)); }
  // Each run's speed divided by `base`'s in the same run.
  std::vector<double> PairedRatios(const PathResult& base) const {
    std::vector<double> v;
    for (size_t i = 0; i < runs.size() && i < base.runs.size(); ++i) {
      if (base.runs[i].MiBps() > 0) v.push_back(runs[i].MiBps() / base.runs[i].MiBps());
    }
    return v;
  }
  // A distribution-free 95 % interval for that median (order statistics of
  // the ratios, from the binomial(n, 1/2) law of how many fall below it).
  // {0, 0} for fewer than 6 runs, which cannot give 95 %.
  std::pair<double, double> PairedRatioInterval(const PathResult& base) const {
    std::vector<double> v = PairedRatios(base);
    const size_t n = v.size();
    // The largest k with P(X <= k - 1) <= 2.5 %: the interval is v[k-1]..v[n-k].
    // P(X == k) in logs, so that 0.5^n does not underflow for large n.
    auto log_term = [n](size_t k) {
      return std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(double(n - k) + 1) -
             double(n) * std::log(2.0);
    };
    size_t k = 0;
    double below = 0;  // P(X <= k - 1)
    for (; k < n / 2; ++k) {
      const double term = std::exp(log_term(k));
      if (below + term > 0.025) break;
      below += term;
    }
    if (k == 0) return {0, 0};
    std::sort(v.begin(), v.end());
    return {v[k - 1], v[n - k]};
  }
  // Every run ended well and delivered all `expected` bytes, with no gap.
  bool Lossless(uint64_t expected) const {
    for (const Transfer& t : runs) {
      if (!t.ok || t.gap_bytes > 0 || t.bytes < expected) return false;
    }
    return !runs.empty();
  }
};

json ToJson(const PathResult& path) {
  json runs = json::array();
  for (const Transfer& t : path.runs) {
    runs.push_back({{"ok", t.ok},
                    {"error", t.error},
                    {"seconds", t.seconds},
                    {"mib_per_s", t.MiBps()},
                    {"bytes", t.bytes},
                    {"gap_bytes", t.gap_bytes},
                    {"chunks", t.chunks},
                    {"mean_chunk_bytes", t.chunks ? t.bytes / t.chunks : 0},
                    {"cpu_seconds", t.cpu_seconds},
                    {"context_switches", t.switches},
                    {"page_faults", t.faults}});
  }
  return {{"median_mib_per_s", path.MedianMiBps()}, {"runs", runs}};
}

double RssMiB() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      int64_t kib = 0;
      std::istringstream(line.substr(6)) >> kib;
      return kib / 1024.0;
    }
  }
  return 0;
}

// ---------------------------------------------------------------- bare PTY

// Reads the non-blocking master until EOF/EIO. Returns bytes read; counts read() calls.
uint64_t DrainMaster(int fd, uint64_t* reads) {
  std::string buf(kReadChunk, '\0');
  uint64_t total = 0;
  for (;;) {
    ssize_t n = read(fd, buf.data(), buf.size());
    if (n > 0) {
      total += static_cast<uint64_t>(n);
      ++*reads;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd p = {fd, POLLIN, 0};
      poll(&p, 1, -1);
      continue;
    }
    return total;  // EOF, or EIO once no process holds the slave open
  }
}

// The baseline the broker is measured against: forkpty + execvp and nothing
// else (no signal or fd hygiene, the bench's own environment).
struct BarePty {
  pid_t pid = -1;
  int master = -1;
};

BarePty ForkptyExec(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  BarePty pty;
  pty.pid = forkpty(&pty.master, nullptr, nullptr, nullptr);
  if (pty.pid == 0) {
    execvp(args[0], args.data());
    _exit(127);
  }
  if (pty.pid > 0) fcntl(pty.master, F_SETFL, fcntl(pty.master, F_GETFL) | O_NONBLOCK);
  return pty;
}

// Reads the master until EIO, reaps the child and closes the master.
uint64_t DrainAndReap(const BarePty& pty, uint64_t* reads) {
  uint64_t bytes = DrainMaster(pty.master, reads);
  int status;
  while (waitpid(pty.pid, &status, 0) < 0 && errno == EINTR) {
  }
  close(pty.master);
  return bytes;
}

session::SpawnOptions ShellCommand(const std::string& shell, const std::string& command) {
  session::SpawnOptions spawn;
  spawn.argv = {shell, "-c", command};
  return spawn;
}

Transfer BareThroughput(const std::string& shell, const std::string& command) {
  Transfer t;
  Clock::time_point start = Clock::now();
  BarePty pty = ForkptyExec({shell, "-c", command});
  if (pty.pid < 0) {
    t.error = absl::StrCat("forkpty: ", strerror(errno));
    return t;
  }
  t.bytes = DrainAndReap(pty, &t.chunks);
  t.seconds = SecondsSince(start);
  t.ok = true;
  return t;
}

// What a line-buffered program pays to write `lines` 100-byte lines (seq,
// 20 MB for 200000) into a PTY and into a pipe, each read by an eager
// reader: its own CPU seconds (user + system, from wait4). No reader can
// take lines from a terminal faster than the program can write them, so
// bytes / CPU seconds into the PTY bounds every terminal, termbridge's
// included (tests/bench/README.md, "Why lines stop at the PTY").
struct WriterCost {
  double pty_cpu = 0, pipe_cpu = 0;
  double pty_wall = 0, pipe_wall = 0;
  uint64_t bytes = 0;
};

double CpuSeconds(const struct rusage& ru) {
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

WriterCost MeasureWriterCost(int lines) {
  WriterCost cost;
  const std::vector<std::string> argv = {"seq", "-f", "%099.0f", "1", std::to_string(lines)};
  {
    Clock::time_point start = Clock::now();
    BarePty pty = ForkptyExec(argv);
    uint64_t reads = 0;
    cost.bytes = DrainMaster(pty.master, &reads);
    struct rusage ru = {};
    int status;
    while (wait4(pty.pid, &status, 0, &ru) < 0 && errno == EINTR) {
    }
    close(pty.master);
    cost.pty_wall = SecondsSince(start);
    cost.pty_cpu = CpuSeconds(ru);
  }
  int fds[2];
  if (pipe(fds) != 0) return cost;
  Clock::time_point start = Clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  std::string buf(kReadChunk, '\0');
  while (read(fds[0], buf.data(), buf.size()) > 0) {
  }
  close(fds[0]);
  struct rusage ru = {};
  int status;
  while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  cost.pipe_wall = SecondsSince(start);
  cost.pipe_cpu = CpuSeconds(ru);
  return cost;
}

int PrintWriterCost(const Options& options) {
  const int lines = 200000;
  std::printf("writer cost: seq -f %%099.0f 1 %d (%d-byte lines), %d runs\n", lines, 100,
              options.runs);
  std::printf("%-6s %12s %12s %12s %12s %18s\n", "run", "pty cpu s", "pipe cpu s", "pty wall s",
              "pipe wall s", "pty writer MB/s");
  for (int r = 0; r < options.runs; ++r) {
    WriterCost c = MeasureWriterCost(lines);
    std::printf("%-6d %12.3f %12.3f %12.3f %12.3f %18.1f\n", r + 1, c.pty_cpu, c.pipe_cpu,
                c.pty_wall, c.pipe_wall, c.pty_cpu > 0 ? c.bytes / c.pty_cpu / 1e6 : 0.0);
  }
  std::printf(
      "(pty writer MB/s: bytes / the writer's own CPU seconds into the PTY, a bound no "
      "terminal's reader can pass)\n");
  return 0;
}

// forkpty-to-reap wall time of `argv`, in ms; < 0 on failure.
double BareSpawnMs(const std::vector<std::string>& argv) {
  uint64_t reads = 0;
  Clock::time_point start = Clock::now();
  BarePty pty = ForkptyExec(argv);
  if (pty.pid < 0) return -1;
  DrainAndReap(pty, &reads);
  return MsSince(start);
}

// -------------------------------------------------- session::Terminal, no gRPC

Transfer TerminalThroughput(const std::string& shell, const std::string& command,
                            size_t ring_bytes) {
  Transfer t;
  Clock::time_point start = Clock::now();
  auto terminal = session::Terminal::Start("bench", ShellCommand(shell, command), ring_bytes);
  if (!terminal.ok()) {
    t.error = std::string(terminal.status().message());
    return t;
  }
  // Told about output the way an attachment is (Subscribe: in bursts), and
  // reads in the attachment's frame size: Attach without gRPC.
  absl::Mutex mu;
  bool changed = false;
  int subscription = (*terminal)->Subscribe([&] {
    absl::MutexLock lock(&mu);
    changed = true;
  });
  uint64_t cursor = 0;
  for (;;) {
    {
      absl::MutexLock lock(&mu);
      changed = false;
    }
    session::ExitState state = (*terminal)->exit_state();  // before reading, as the service does
    session::OutputSlice slice = (*terminal)->Read(cursor, kAttachFrameBytes);
    t.gap_bytes += slice.gap;
    t.bytes += slice.data.size();
    cursor = slice.next;
    if (!slice.data.empty()) ++t.chunks;
    if (slice.data.empty() && slice.gap == 0) {
      if (!state.running) break;
      absl::MutexLock lock(&mu);
      mu.AwaitWithTimeout(absl::Condition(&changed), absl::Seconds(30));
    }
  }
  (*terminal)->Unsubscribe(subscription);
  t.seconds = SecondsSince(start);
  t.ok = true;
  return t;
}

// Terminal::Start to WaitForExit of `<shell> -c true`, in ms; < 0 on failure.
double TerminalSpawnMs(const std::string& shell, size_t ring_bytes) {
  Clock::time_point start = Clock::now();
  auto terminal = session::Terminal::Start("bench", ShellCommand(shell, "true"), ring_bytes);
  if (!terminal.ok()) return -1;
  if (!(*terminal)->WaitForExit(absl::Seconds(5))) return -1;
  return MsSince(start);
}

// ------------------------------------------------------------------ broker

// One in-process broker with its own temporary state dir and a client stub.
class BrokerHarness {
 public:
  // ring_bytes 0 keeps the configured default.
  static absl::StatusOr<std::unique_ptr<BrokerHarness>> Start(size_t ring_bytes) {
    char dir_template[] = "/tmp/tbbench.XXXXXX";  // short: the operator socket lives here
    if (mkdtemp(dir_template) == nullptr) return absl::InternalError("mkdtemp failed");
    std::unique_ptr<BrokerHarness> h(new BrokerHarness(dir_template));
    // The data path with policy checks on but nothing to decide: every
    // command is allowed (and still parsed and checked), and no person has
    // to watch (the visibility wait is a person's time, not the broker's).
    std::ofstream(h->dir_ + "/policy.toml") << "version = 1\ndefault = \"allow\"\n";
    std::map<std::string, std::string> flags = {{"listen", "127.0.0.1:0"},
                                                {"state_dir", h->dir_},
                                                {"require_viewer", "false"},
                                                {"window_command", "none"},
                                                {"allow_in_container", "true"}};
    if (ring_bytes > 0) flags["ring_bytes"] = std::to_string(ring_bytes);
    absl::StatusOr<broker::BrokerConfig> config =
        broker::ResolveConfig(flags, "", broker::ProcessEnv());
    if (!config.ok()) return config.status();
    h->ring_bytes_ = config->ring_bytes;
    h->recording_ = config->record;
    auto server = broker::BrokerServer::Start(*config);
    if (!server.ok()) return server.status();
    h->server_ = std::move(*server);
    std::ifstream in(h->dir_ + "/agent-token");
    std::stringstream token;
    token << in.rdbuf();
    h->token_ = std::string(absl::StripAsciiWhitespace(token.str()));
    if (h->token_.empty()) return absl::NotFoundError("no agent token in the state dir");
    h->channel_ =
        grpc::CreateChannel(h->server_->grpc_address(), grpc::InsecureChannelCredentials());
    h->stub_ = v1::TerminalBroker::NewStub(h->channel_);
    return h;
  }

  ~BrokerHarness() {
    stub_.reset();
    channel_.reset();
    server_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  v1::TerminalBroker::Stub& stub() { return *stub_; }
  size_t ring_bytes() const { return ring_bytes_; }
  // Whether the broker records every terminal (the default config does), and
  // the bytes its recordings hold now.
  bool recording() const { return recording_; }
  uint64_t recorded_bytes() const {
    uint64_t bytes = 0;
    std::error_code error;
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(dir_ + "/recordings", error)) {
      if (entry.is_regular_file(error)) bytes += entry.file_size(error);
    }
    return bytes;
  }
  void Authorize(grpc::ClientContext* context) const {
    context->AddMetadata("authorization", "Bearer " + token_);
  }

 private:
  explicit BrokerHarness(std::string dir) : dir_(std::move(dir)) {}

  std::string dir_;
  std::string token_;
  size_t ring_bytes_ = 0;
  bool recording_ = false;
  std::unique_ptr<broker::BrokerServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::TerminalBroker::Stub> stub_;
};

// Sends `request` with the agent token (agent_id left empty: the token names
// the agent, and the broker refuses a request that claims another).
absl::StatusOr<v1::ExecuteResponse> Send(BrokerHarness* broker, v1::ExecuteRequest request) {
  grpc::ClientContext context;
  broker->Authorize(&context);
  v1::ExecuteResponse response;
  grpc::Status status = broker->stub().Execute(&context, request, &response);
  if (!status.ok())
    return absl::UnavailableError(absl::StrCat("Execute: ", status.error_message()));
  return response;
}

// Runs `command` in terminal `terminal_id` (empty: the agent's default
// terminal, opened when there is none).
absl::StatusOr<v1::ExecuteResponse> Execute(BrokerHarness* broker, const std::string& command,
                                            uint32_t wait_ms, const std::string& terminal_id = "") {
  v1::ExecuteRequest request;
  request.set_terminal_id(terminal_id);
  request.set_command(command);
  request.set_wait_ms(wait_ms);
  request.set_max_bytes(1);  // the bytes come over Attach; keep the unary reply small
  return Send(broker, std::move(request));
}

// Opens a new terminal for the bench agent (open_only).
absl::StatusOr<v1::ExecuteResponse> OpenTerminal(BrokerHarness* broker) {
  v1::ExecuteRequest request;
  request.set_open_only(true);
  return Send(broker, std::move(request));
}

// Reads Attach frames from offset 0 until `exited`, counting output and gaps.
void ReadAttach(BrokerHarness* broker, const std::string& terminal_id, Transfer* t) {
  grpc::ClientContext context;
  broker->Authorize(&context);
  auto stream = broker->stub().Attach(&context);
  v1::AttachClientFrame first;
  first.mutable_resume()->set_terminal_id(terminal_id);
  first.mutable_resume()->set_offset(0);
  stream->Write(first);
  v1::AttachServerFrame frame;
  bool exited = false;
  while (!exited && stream->Read(&frame)) {
    if (frame.has_output()) {
      t->bytes += frame.output().data().size();
      ++t->chunks;
    } else if (frame.has_gap()) {
      t->gap_bytes += frame.gap().to() - frame.gap().from();
    } else if (frame.has_exited()) {
      exited = true;
    }
  }
  stream->WritesDone();
  grpc::Status status = stream->Finish();
  if (!exited)
    t->error = absl::StrCat("Attach ended without an exited frame: ", status.error_message());
  t->ok = exited;
}

// Live: Attach right after Execute, while the program writes. Replay: the
// program has finished (its output is all in the ring) before Attach starts,
// and only the Attach is timed: gRPC alone, with no PTY competing for the CPUs.
// None: nobody attaches; Execute waits for the program to end (the shell, the
// PTY reader and the ring without any streaming).
enum class AttachMode { kLive, kReplay, kNone };

Transfer BrokerThroughput(BrokerHarness* broker, const std::string& command,
                          AttachMode mode = AttachMode::kLive, uint64_t expected_bytes = 0) {
  Transfer t;
  // A new terminal, its shell started and idle at its prompt before the clock
  // starts: starting an interactive shell is a one-off cost per terminal (the
  // latency half measures Execute in a running shell), not throughput.
  absl::StatusOr<v1::ExecuteResponse> opened = OpenTerminal(broker);
  if (opened.ok()) opened = Execute(broker, "true", 10000, opened->terminal_id());
  if (!opened.ok() || opened->exit().running()) {
    t.error = opened.ok() ? "the terminal's shell did not run `true` within 10 s"
                          : std::string(opened.status().message());
    return t;
  }
  Clock::time_point start = Clock::now();
  // Terminals are persistent shells: "; exit" ends the terminal after the
  // command, so the Attach stream ends with its exited frame.
  absl::StatusOr<v1::ExecuteResponse> response = Execute(
      broker, command + "; exit", mode == AttachMode::kLive ? 0 : 120000, opened->terminal_id());
  if (!response.ok()) {
    t.error = std::string(response.status().message());
    return t;
  }
  if (mode != AttachMode::kLive && response->exit().running()) {
    t.error = "the program did not finish within 120 s";
    return t;
  }
  if (mode == AttachMode::kNone) {
    t.seconds = SecondsSince(start);
    t.bytes = expected_bytes;  // written into the ring; nobody read them
    t.ok = true;
    return t;
  }
  if (mode == AttachMode::kReplay) start = Clock::now();
  ReadAttach(broker, response->terminal_id(), &t);
  t.seconds = SecondsSince(start);
  return t;
}

// Unary Execute of `true` until the reply shows the exit, in ms; < 0 when it did not.
double BrokerExecuteMs(BrokerHarness* broker) {
  Clock::time_point start = Clock::now();
  absl::StatusOr<v1::ExecuteResponse> response = Execute(broker, "true", 5000);
  double ms = MsSince(start);
  if (!response.ok() || response->exit().running()) return -1;
  return ms;
}

double HandshakeMs(BrokerHarness* broker) {
  grpc::ClientContext context;
  broker->Authorize(&context);
  v1::HandshakeRequest request;
  request.set_protocol_version(v1::PROTOCOL_VERSION_CURRENT);
  v1::HandshakeResponse response;
  Clock::time_point start = Clock::now();
  grpc::Status status = broker->stub().Handshake(&context, request, &response);
  return status.ok() ? MsSince(start) : -1;
}

// Runs `sample` warmup + iterations times; negative samples count as failures.
Percentiles Measure(const Options& options, const std::function<double()>& sample) {
  for (int i = 0; i < options.warmup; ++i) sample();
  std::vector<double> ms;
  int failures = 0;
  for (int i = 0; i < options.iterations; ++i) {
    double v = sample();
    if (v < 0) {
      ++failures;
    } else {
      ms.push_back(v);
    }
  }
  return Summarize(std::move(ms), failures);
}

// ------------------------------------------------------------------ suites

struct ThroughputReport {
  uint64_t expected = 0;
  size_t lossless_ring = 0;
  size_t default_ring = 0;
  bool recording = false;       // the headline broker records (docs/operating.md, "Recordings")
  uint64_t recorded_bytes = 0;  // what its recordings held at the end
  PathResult bare, terminal, broker, broker_default_ring, replay, unattached;
};

absl::StatusOr<ThroughputReport> RunThroughput(const Options& options, const std::string& shell) {
  ThroughputReport r;
  r.expected = static_cast<uint64_t>(options.mib) * kMiB;
  // No newlines, so the PTY's ONLCR adds nothing: exactly `expected` bytes arrive.
  std::string command = absl::StrCat("head -c ", r.expected, " /dev/zero | tr '\\0' x");
  // Lossless: the ring holds the whole payload, so a reader behind the PTY never gets a gap.
  r.lossless_ring = r.expected + kMiB;
  absl::StatusOr<std::unique_ptr<BrokerHarness>> lossless;  // not started for the headline alone
  if (!options.headline_only) {
    lossless = BrokerHarness::Start(r.lossless_ring);
    if (!lossless.ok()) return lossless.status();
  }
  // The shipped default ring (8 MiB): shows whether Attach keeps up or gaps.
  auto defaults = BrokerHarness::Start(0);
  if (!defaults.ok()) return defaults.status();
  r.default_ring = (*defaults)->ring_bytes();
  r.recording = (*defaults)->recording();
  // The headline row: the shipped ring, attached live.
  auto headline = [&] {
    return WithUsage([&] { return BrokerThroughput(defaults->get(), command); });
  };
  for (int run = 0; run < options.runs; ++run) {  // interleaved, so drift hits every path
    r.bare.runs.push_back(WithUsage([&] { return BareThroughput(shell, command); }));
    if (options.headline_only) {
      r.broker_default_ring.runs.push_back(headline());
      continue;
    }
    r.terminal.runs.push_back(
        WithUsage([&] { return TerminalThroughput(shell, command, r.default_ring); }));
    r.broker.runs.push_back(WithUsage([&] { return BrokerThroughput(lossless->get(), command); }));
    r.broker_default_ring.runs.push_back(headline());
    r.replay.runs.push_back(
        WithUsage([&] { return BrokerThroughput(lossless->get(), command, AttachMode::kReplay); }));
    r.unattached.runs.push_back(WithUsage(
        [&] { return BrokerThroughput(defaults->get(), command, AttachMode::kNone, r.expected); }));
  }
  r.recorded_bytes = (*defaults)->recorded_bytes();
  return r;
}

struct LatencyReport {
  std::string shell;
  Percentiles bare_true, bare_shell, bare_sh, terminal_shell, broker_small_ring, broker,
      bare_shell_bloated, handshake;
  double rss_start_mib = 0, rss_small_ring_mib = 0, rss_before_mib = 0, rss_after_mib = 0;
  int broker_executes = 0;
};

absl::StatusOr<LatencyReport> RunLatency(const Options& options, const std::string& shell) {
  LatencyReport r;
  r.shell = shell;
  r.rss_start_mib = RssMiB();
  r.bare_true = Measure(options, [] { return BareSpawnMs({"/bin/true"}); });
  r.bare_shell = Measure(options, [&] { return BareSpawnMs({shell, "-c", "true"}); });
  r.bare_sh = Measure(options, [] { return BareSpawnMs({"/bin/sh", "-c", "true"}); });
  r.terminal_shell = Measure(options, [&] { return TerminalSpawnMs(shell, 4096); });
  {
    // The smallest ring the config accepts: separates ring allocation (and the
    // memory the registry keeps) from the rest. Runs first, on a lean process.
    auto small = BrokerHarness::Start(4096);
    if (!small.ok()) return small.status();
    r.broker_small_ring = Measure(options, [&] { return BrokerExecuteMs(small->get()); });
    r.rss_small_ring_mib = RssMiB();
  }
  auto broker = BrokerHarness::Start(0);
  if (!broker.ok()) return broker.status();
  r.handshake = Measure(options, [&] { return HandshakeMs(broker->get()); });
  r.rss_before_mib = RssMiB();
  r.broker = Measure(options, [&] { return BrokerExecuteMs(broker->get()); });
  r.rss_after_mib = RssMiB();  // the registry still holds every finished terminal here
  r.broker_executes = options.warmup + options.iterations;
  // The same bare spawn again, from the now larger process: fork copies its page tables.
  r.bare_shell_bloated = Measure(options, [&] { return BareSpawnMs({shell, "-c", "true"}); });
  return r;
}

// ------------------------------------------------------------------ output

json ThroughputJson(const ThroughputReport& t) {
  double bare = t.bare.MedianMiBps();
  double ratio = bare > 0 ? t.broker_default_ring.MedianMiBps() / bare : 0;
  double paired = t.broker_default_ring.PairedRatio(t.bare);
  auto [low, high] = t.broker_default_ring.PairedRatioInterval(t.bare);
  bool lossless = t.broker_default_ring.Lossless(t.expected);
  return {{"bytes_expected", t.expected},
          {"lossless_ring_bytes", t.lossless_ring},
          {"default_ring_bytes", t.default_ring},
          {"recording", t.recording},
          {"recorded_bytes", t.recorded_bytes},
          {"bare", ToJson(t.bare)},
          {"terminal", ToJson(t.terminal)},
          {"broker", ToJson(t.broker)},
          {"broker_default_ring", ToJson(t.broker_default_ring)},
          {"grpc_replay", ToJson(t.replay)},
          {"broker_unattached", ToJson(t.unattached)},
          {"ratio_terminal_bare", bare > 0 ? t.terminal.MedianMiBps() / bare : 0},
          {"ratio_broker_bare", ratio},
          {"broker_lossless", lossless},
          {"ratio_broker_lossless_ring_bare", bare > 0 ? t.broker.MedianMiBps() / bare : 0},
          {"ratio_grpc_replay_bare", bare > 0 ? t.replay.MedianMiBps() / bare : 0},
          {"ratio_broker_unattached_bare", bare > 0 ? t.unattached.MedianMiBps() / bare : 0},
          {"paired_ratio_terminal_bare", t.terminal.PairedRatio(t.bare)},
          {"paired_ratio_broker_bare", paired},
          {"paired_ratio_broker_lossless_ring_bare", t.broker.PairedRatio(t.bare)},
          {"paired_ratio_grpc_replay_bare", t.replay.PairedRatio(t.bare)},
          {"paired_ratio_broker_unattached_bare", t.unattached.PairedRatio(t.bare)},
          {"paired_ratio_broker_bare_ci95", {low, high}},
          {"target_ratio", kTargetRatio},
          {"meets_target", lossless && paired >= kTargetRatio},
          {"meets_target_ci95", lossless && low >= kTargetRatio}};
}

double GrowthKiB(const LatencyReport& l) {
  return l.broker_executes ? (l.rss_after_mib - l.rss_before_mib) * 1024 / l.broker_executes : 0;
}

json LatencyJson(const LatencyReport& l, bool samples) {
  double overhead = l.broker.p50 - l.bare_shell.p50;
  return {{"bare_bin_true", ToJson(l.bare_true, samples)},
          {"bare_shell_c_true", ToJson(l.bare_shell, samples)},
          {"bare_bin_sh_c_true", ToJson(l.bare_sh, samples)},
          {"terminal_shell_c_true", ToJson(l.terminal_shell, samples)},
          {"broker_execute_true_ring_4k", ToJson(l.broker_small_ring, samples)},
          {"broker_execute_true", ToJson(l.broker, samples)},
          {"bare_shell_c_true_after_broker", ToJson(l.bare_shell_bloated, samples)},
          {"grpc_handshake", ToJson(l.handshake, samples)},
          {"overhead_p50_ms", overhead},
          {"overhead_p50_ms_ring_4k", l.broker_small_ring.p50 - l.bare_shell.p50},
          {"overhead_p50_ms_vs_bin_true", l.broker.p50 - l.bare_true.p50},
          {"target_overhead_ms", kTargetOverheadMs},
          {"meets_target", overhead < kTargetOverheadMs},
          {"memory",
           {{"rss_start_mib", l.rss_start_mib},
            {"rss_after_ring_4k_broker_mib", l.rss_small_ring_mib},
            {"rss_before_executes_mib", l.rss_before_mib},
            {"rss_after_executes_mib", l.rss_after_mib},
            {"executes", l.broker_executes},
            {"rss_growth_per_execute_kib", GrowthKiB(l)}}}};
}

json ReportJson(const Options& options, const std::optional<ThroughputReport>& t,
                const std::optional<LatencyReport>& l) {
  json out = {{"config",
               {{"mib", options.mib},
                {"iterations", options.iterations},
                {"runs", options.runs},
                {"warmup", options.warmup},
                {"cpus", options.cpus},
                {"shell", core::ResolveShell("")},
                {"malloc_defaults", options.malloc_defaults},
                {"headline_only", options.headline_only}}}};
  if (t) out["throughput"] = ThroughputJson(*t);
  if (l) out["latency"] = LatencyJson(*l, options.samples);
  return out;
}

void PrintPath(const std::string& name, const PathResult& path, const PathResult& bare_path) {
  if (path.runs.empty()) return;  // not run (--headline-only)
  const double bare = bare_path.MedianMiBps();
  const Transfer& last = path.runs.back();
  uint64_t gaps = 0;
  bool ok = true;
  for (const Transfer& t : path.runs) {
    gaps += t.gap_bytes;
    ok = ok && t.ok;
  }
  std::string runs;
  for (const Transfer& t : path.runs)
    absl::StrAppend(&runs, runs.empty() ? "" : "/", static_cast<int>(std::lround(t.MiBps())));
  double mib = last.bytes / static_cast<double>(kMiB);
  std::printf(
      "  %-27s %6.1f MiB/s x%.2f p%.2f [%s] bytes=%llu gaps=%llu chunk=%llu B "
      "cpu=%.1f ms/MiB csw=%.0f/MiB flt=%.0f/MiB%s\n",
      name.c_str(), path.MedianMiBps(), bare > 0 ? path.MedianMiBps() / bare : 0,
      path.PairedRatio(bare_path), runs.c_str(), static_cast<unsigned long long>(last.bytes),
      static_cast<unsigned long long>(gaps),
      static_cast<unsigned long long>(last.chunks ? last.bytes / last.chunks : 0),
      mib > 0 ? last.cpu_seconds * 1e3 / mib : 0, mib > 0 ? last.switches / mib : 0,
      mib > 0 ? last.faults / mib : 0, ok ? "" : (" FAILED: " + last.error).c_str());
}

void PrintThroughput(const Options& options, const ThroughputReport& t) {
  std::printf(
      "throughput: %d MiB, %d runs%s [each run]; x = ratio of medians to bare; "
      "p = median of the ratios to bare in the same run; chunk = mean bytes per "
      "read/frame; cpu, csw = this process (last run)\n",
      options.mib, options.runs,
      options.cpus > 0 ? absl::StrCat(", on ", options.cpus, " CPU(s)").c_str() : "");
  std::printf("  recording: %s (%llu MiB recorded by the shipped-ring broker)\n",
              t.recording ? "on, the default" : "OFF",
              static_cast<unsigned long long>(t.recorded_bytes / kMiB));
  PrintPath("bare pty", t.bare, t.bare);
  PrintPath("terminal (no grpc)", t.terminal, t.bare);
  PrintPath(absl::StrCat("broker attach, ring ", t.default_ring / kMiB, " MiB"),
            t.broker_default_ring, t.bare);
  PrintPath(absl::StrCat("broker attach, ring ", t.lossless_ring / kMiB, " MiB"), t.broker, t.bare);
  PrintPath("grpc replay (ring to client)", t.replay, t.bare);
  PrintPath("broker, nobody attached", t.unattached, t.bare);
  const double paired = t.broker_default_ring.PairedRatio(t.bare);
  const auto [low, high] = t.broker_default_ring.PairedRatioInterval(t.bare);
  const bool lossless = t.broker_default_ring.Lossless(t.expected);
  std::printf(
      "  broker/bare = %.3f paired (%.3f of medians; shipped %zu MiB ring, %s; "
      "target >= %.1f): %s\n",
      paired,
      t.bare.MedianMiBps() > 0 ? t.broker_default_ring.MedianMiBps() / t.bare.MedianMiBps() : 0,
      t.default_ring / kMiB, lossless ? "every byte delivered" : "BYTES LOST", kTargetRatio,
      lossless && paired >= kTargetRatio ? "ok" : "MISSED");
  if (high > 0) {
    // Where the true median lies, given how much the runs scatter.
    std::printf("  95%% interval of the paired median: %.3f .. %.3f (%zu runs): %s\n", low, high,
                t.broker_default_ring.runs.size(),
                !lossless             ? "BYTES LOST"
                : low >= kTargetRatio ? "target met with 95% confidence"
                : high < kTargetRatio ? "target MISSED with 95% confidence"
                                      : "undecided: run more (--runs)");
  } else {
    std::printf("  95%% interval of the paired median: needs --runs 6 or more\n");
  }
}

void PrintLatency(const std::string& name, const Percentiles& p) {
  std::printf(
      "  %-30s p50 %7.2f  p90 %7.2f  p99 %7.2f  max %7.2f  first/last10%% %6.1f/%6.1f"
      " ms%s\n",
      name.c_str(), p.p50, p.p90, p.p99, p.max, p.first_mean, p.last_mean,
      p.failures ? absl::StrCat("  failures=", p.failures).c_str() : "");
}

void PrintLatencies(const Options& options, const LatencyReport& l) {
  std::printf("latency, spawn/Execute to exit of `true` (%d iterations after %d warmup)\n",
              options.iterations, options.warmup);
  PrintLatency("bare /bin/true", l.bare_true);
  PrintLatency(absl::StrCat("bare ", l.shell, " -c true"), l.bare_shell);
  PrintLatency("bare /bin/sh -c true", l.bare_sh);
  PrintLatency("terminal (no grpc), ring 4 KiB", l.terminal_shell);
  PrintLatency("broker Execute, ring 4 KiB", l.broker_small_ring);
  PrintLatency("broker Execute, ring 8 MiB", l.broker);
  PrintLatency(absl::StrCat("bare ", l.shell, " -c true, after"), l.bare_shell_bloated);
  PrintLatency("grpc Handshake round trip", l.handshake);
  double overhead = l.broker.p50 - l.bare_shell.p50;
  std::printf(
      "  overhead p50 (broker - bare %s -c true) = %.2f ms; ring 4 KiB: %.2f ms "
      "(target < %.0f): %s\n",
      l.shell.c_str(), overhead, l.broker_small_ring.p50 - l.bare_shell.p50, kTargetOverheadMs,
      overhead < kTargetOverheadMs ? "ok" : "MISSED");
  std::printf(
      "memory: RSS %.0f MiB at start, %.0f -> %.0f MiB over %d Executes "
      "(%.0f KiB each, still held)\n",
      l.rss_start_mib, l.rss_before_mib, l.rss_after_mib, l.broker_executes, GrowthKiB(l));
}

// Keeps this process on the first `count` CPUs it may use. Threads started
// later and every program spawned inherit the mask: the broker's gRPC and
// reader threads, the shells and the pipeline they run.
absl::Status PinToCpus(int count) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
    return absl::InternalError(absl::StrCat("sched_getaffinity: ", strerror(errno)));
  }
  if (count > CPU_COUNT(&allowed)) {
    return absl::InvalidArgumentError(
        absl::StrCat(count, " CPUs asked for, ", CPU_COUNT(&allowed), " allowed"));
  }
  cpu_set_t chosen;
  CPU_ZERO(&chosen);
  for (int cpu = 0, kept = 0; cpu < CPU_SETSIZE && kept < count; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    CPU_SET(cpu, &chosen);
    ++kept;
  }
  if (sched_setaffinity(0, sizeof chosen, &chosen) != 0) {
    return absl::InternalError(absl::StrCat("sched_setaffinity: ", strerror(errno)));
  }
  return absl::OkStatus();
}

int Run(int argc, char** argv) {
  Options options;
  if (!ParseArgs(argc, argv, &options)) {
    PrintUsage();
    return 2;
  }
  // stdout carries the report; the broker's logs go to stderr.
  spdlog::set_default_logger(spdlog::stderr_color_mt("broker"));
  spdlog::set_level(options.broker_logs ? spdlog::level::info : spdlog::level::warn);
  // What termbridge-broker's main does before it serves.
  broker::SkipMutexDeadlockDetection();
  if (!options.malloc_defaults && !broker::KeepFreedMemoryForReuse()) {
    std::fprintf(stderr, "malloc refused the broker's settings\n");
    return 1;
  }
  if (options.cpus > 0) {
    absl::Status pinned = PinToCpus(options.cpus);
    if (!pinned.ok()) {
      std::fprintf(stderr, "--cpus: %s\n", std::string(pinned.message()).c_str());
      return 1;
    }
  }
  if (options.writer_cost) return PrintWriterCost(options);
  const std::string shell = core::ResolveShell("");  // what the broker runs `-c` with
  std::optional<ThroughputReport> throughput;
  std::optional<LatencyReport> latency;
  if (options.throughput) {
    absl::StatusOr<ThroughputReport> t = RunThroughput(options, shell);
    if (!t.ok()) {
      std::fprintf(stderr, "throughput: %s\n", t.status().ToString().c_str());
      return 1;
    }
    throughput = std::move(*t);
  }
  if (options.latency) {
    absl::StatusOr<LatencyReport> l = RunLatency(options, shell);
    if (!l.ok()) {
      std::fprintf(stderr, "latency: %s\n", l.status().ToString().c_str());
      return 1;
    }
    latency = std::move(*l);
  }
  if (options.json) {
    std::printf("%s\n", ReportJson(options, throughput, latency).dump(2).c_str());
    return 0;
  }
  std::printf("termbridge-bench: broker shell %s, malloc %s\n", shell.c_str(),
              options.malloc_defaults ? "glibc defaults" : "as termbridge-broker sets it");
  if (throughput) PrintThroughput(options, *throughput);
  if (latency) PrintLatencies(options, *latency);
  return 0;
}

}  // namespace
}  // namespace termbridge::bench

int main(int argc, char** argv) { return termbridge::bench::Run(argc, argv); }
