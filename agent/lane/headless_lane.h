// HeadlessLane runs the strict headless subset (docs/CONTRACT.md, 'Lanes') inside
// the agent's own container: argv only, never a shell, and only what the
// host policy's snapshot allows outright (no shell operators, no
// destructive class, an allow rule for every part). Output is captured
// from pipes (stdout and stderr apart), bounded per stream, and readable
// from a cursor. The container is the real boundary here; policy is a
// guardrail, and docs/security.md says so.
#ifndef TERMBRIDGE_AGENT_LANE_HEADLESS_LANE_H_
#define TERMBRIDGE_AGENT_LANE_HEADLESS_LANE_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/lane/output_budget.h"
#include "common/policy/policy.h"

namespace termbridge::lane {

struct HeadlessRun {
  std::vector<std::string> argv;
  std::string cwd;
  std::map<std::string, std::string> env;
  absl::Duration wait = absl::ZeroDuration();  // how long run waits for the exit
  size_t budget = kDefaultOutputBudget;        // output bytes returned (both streams)
  bool tail = true;                            // over the budget: head and tail (false: a page)
};

struct HeadlessView {
  std::string session_id;
  std::vector<std::string> argv;
  bool running = true;
  std::optional<int> exit_code;
  std::optional<int> signal;
  int64_t exited_at_unix_ms = 0;
  // Each stream from its cursor, shaped to its share of the budget
  // (output_budget.h); gap_bytes: dropped because the stream is bounded.
  ShapedSlice out;
  ShapedSlice err;
  policy::Decision decision;  // why it was allowed
};

class HeadlessLane {
 public:
  struct Options {
    size_t max_stream_bytes = 1 << 20;  // kept per stream; older bytes become a gap
    size_t max_sessions = 64;           // finished sessions kept readable
  };
  explicit HeadlessLane(Options options);
  ~HeadlessLane();  // kills whatever still runs

  // Checks `policy` (the broker's snapshot or a local file) and starts argv
  // without a shell. Refusals are PM_TERM_BLOCKED_DESTRUCTIVE naming the rule
  // and the reason; an argv over policy::kMaxLineBytes bytes (checked before
  // any parsing) or past a bound of the parser (builtin.too-complex) is
  // PM_TERM_INVALID_PAYLOAD with details.limit naming the bound.
  absl::StatusOr<HeadlessView> Run(const HeadlessRun& run, const policy::Policy& policy);
  // Output of both streams from their cursors within `budget` bytes (with
  // `tail` false a page, no tail), waiting up to `wait` for new output or the
  // exit. NotFound (PM_TERM_NOT_FOUND) for unknown ids.
  absl::StatusOr<HeadlessView> Read(const std::string& session_id, uint64_t out_cursor,
                                    uint64_t err_cursor, size_t budget, absl::Duration wait,
                                    bool tail = true);
  // SIGTERM to the process group, then SIGKILL after `grace`; the output
  // from offset 0 within `budget` bytes.
  absl::StatusOr<HeadlessView> Kill(const std::string& session_id,
                                    size_t budget = kDefaultOutputBudget,
                                    absl::Duration grace = absl::Milliseconds(500));
  std::vector<HeadlessView> List();
  // True when `session_id` is a headless session of this agent.
  bool Owns(const std::string& session_id);

 private:
  struct Process;
  void Pump(const std::shared_ptr<Process>& process);
  // Both streams split one budget (SplitBudget); 0 returns no output.
  HeadlessView ViewOf(const Process& process, uint64_t out_cursor, uint64_t err_cursor,
                      size_t budget, bool tail = true) const;
  absl::StatusOr<std::shared_ptr<Process>> Find(const std::string& session_id);

  const Options options_;
  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Process>> processes_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> order_ ABSL_GUARDED_BY(mu_);
};

}  // namespace termbridge::lane

#endif  // TERMBRIDGE_AGENT_LANE_HEADLESS_LANE_H_
