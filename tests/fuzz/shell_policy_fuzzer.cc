// Fuzzes the shell parser and policy evaluation (common/policy): the input
// is a command line as an agent would send it to a terminal, judged by the
// default policy and by an operator policy with read_paths and write_paths,
// in a workspace (a small directory made at start, with a secret and a
// symlink out of it) and with no cwd known; the same bytes, split at
// spaces, are also judged as a headless argv. Besides crashes and hangs, it
// checks the promises people rely on: a line that cannot be parsed, or that
// holds a command only known at run time, is never allowed; the headless
// lane only allows or denies; and the rules "always" proposes are valid
// TOML that, appended to the policy, allow the line.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "common/policy/policy.h"

namespace {

namespace policy = termbridge::policy;

[[noreturn]] void Fail(const char* what, std::string_view line, const policy::Decision* d) {
  std::fprintf(stderr, "shell_policy: %s\nline: %.*s\n", what, static_cast<int>(line.size()),
               line.data());
  if (d)
    std::fprintf(
        stderr, "decision: %s\n",
        d->ToJson().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  std::abort();
}

// An operator's policy: allow rules with read and write scopes, an option
// rule and a regex, over the defaults.
constexpr char kOperatorPolicy[] = R"(version = 1
default = "ask"
sensitive_paths = ["**/secrets.txt"]
[[rule]]
id = "make"
action = "allow"
prefix = ["make"]
writes = true
write_paths = ["build/**", "/tmp/*.log"]
read_paths = ["~/data/**", "src"]
[[rule]]
id = "sed-inplace"
action = "ask"
prefix = ["sed"]
options = ["-i", "--in-place"]
[[rule]]
id = "npm"
action = "allow"
regex = "^npm (test|ci|run [a-z]+)$"
[[rule]]
id = "no-curl"
action = "deny"
exact = ["curl"]
)";

struct World {
  std::string workspace;
  policy::Policy defaults = policy::Policy::Default();
  policy::Policy operator_policy = policy::Policy::Default();
  policy::CheckContext in_workspace;
  policy::CheckContext unknown_cwd;
};

void WriteFile(const std::string& path, std::string_view text) { std::ofstream(path) << text; }

World* MakeWorld() {
  auto* world = new World;
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/tb_fuzz_ws.XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) std::abort();
  world->workspace = pattern;
  const std::string& ws = world->workspace;
  for (const char* dir : {"/src", "/build", "/state", "/sub", "/sub/deep"}) {
    mkdir((ws + dir).c_str(), 0700);
  }
  WriteFile(ws + "/README.md", "hello\n");
  WriteFile(ws + "/src/main.c", "int main(void) { return 0; }\n");
  WriteFile(ws + "/.env", "TOKEN=x\n");
  WriteFile(ws + "/sub/deep/secrets.txt", "x\n");
  if (symlink("/etc", (ws + "/etc-link").c_str()) != 0) std::abort();
  world->defaults.SetProtectedPaths({ws + "/state"});
  absl::StatusOr<policy::Policy> op = policy::Policy::FromToml(kOperatorPolicy, "fuzz.toml");
  if (!op.ok()) {
    std::fprintf(stderr, "%s\n", std::string(op.status().message()).c_str());
    std::abort();
  }
  world->operator_policy = *std::move(op);
  world->in_workspace.cwd = ws;
  world->in_workspace.read_roots = {ws};
  return world;
}

World& TheWorld() {
  static World* world = MakeWorld();
  return *world;
}

void CheckInteractive(const policy::Policy& p, std::string_view line,
                      const policy::ParsedLine& parsed, const policy::CheckContext& context) {
  policy::Decision d = p.Check(line, context);
  d.ToJson().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (d.action != policy::Action::kAllow) return;
  if (!d.parsed || parsed.error) Fail("a line that cannot be parsed was allowed", line, &d);
  for (const policy::SimpleCommand& c : parsed.commands) {
    if (c.dynamic || c.opaque) Fail("a run-time or opaque command was allowed", line, &d);
  }
}

// "Always": the proposed rules are valid TOML, and with them the line is allowed.
void CheckAlways(const policy::Policy& p, std::string_view line,
                 const policy::CheckContext& context) {
  absl::StatusOr<std::vector<policy::Rule>> rules = p.RulesToAllow(line, context);
  if (!rules.ok()) return;
  std::string toml = "version = 1\n";
  for (const policy::Rule& rule : *rules) toml += policy::RuleToToml(rule);
  absl::StatusOr<policy::Policy> extended = policy::Policy::FromToml(toml, "always.toml");
  if (!extended.ok()) {
    std::fprintf(stderr, "%s\n%s\n", std::string(extended.status().message()).c_str(),
                 toml.c_str());
    Fail("the rules RulesToAllow proposed are not a valid policy file", line, nullptr);
  }
  extended->SetProtectedPaths(p.protected_paths());
  policy::Decision d = extended->Check(line, context);
  if (d.action != policy::Action::kAllow) {
    std::fprintf(stderr, "%s\n", toml.c_str());
    Fail("the rules RulesToAllow proposed do not allow the line", line, &d);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  World& world = TheWorld();
  std::string_view line(reinterpret_cast<const char*>(data), size);

  // Judging a line costs milliseconds under the sanitizers (most of it the
  // sensitive-path patterns), so each input gets the default policy in the
  // workspace and one more check, chosen by its length.
  policy::ParsedLine parsed = policy::ParseLine(line);
  CheckInteractive(world.defaults, line, parsed, world.in_workspace);
  switch (size % 4) {
    case 0:
      CheckInteractive(world.defaults, line, parsed, world.unknown_cwd);
      break;
    case 1:
      CheckInteractive(world.operator_policy, line, parsed, world.in_workspace);
      break;
    case 2:
      CheckAlways(world.defaults, line, world.in_workspace);
      break;
    case 3: {
      std::vector<std::string> argv;
      for (size_t start = 0; start < line.size();) {
        size_t end = line.find(' ', start);
        if (end == std::string_view::npos) end = line.size();
        if (end > start) argv.emplace_back(line.substr(start, end - start));
        start = end + 1;
      }
      if (argv.empty()) break;
      for (const policy::Policy* p : {&world.defaults, &world.operator_policy}) {
        policy::Decision d = p->CheckHeadless(argv);
        if (d.action == policy::Action::kAsk) Fail("the headless lane asked", line, &d);
      }
      break;
    }
  }
  return 0;
}
