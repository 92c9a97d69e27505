// Rule semantics of Policy: the deny > ask > allow order, how exact, prefix
// and regex rules match, the writes flag, switching built-ins off, the JSON
// snapshot, the "always" helper RulesToAllow and what decisions explain.
#include "common/policy/policy.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "common/text/utf8.h"
#include "gtest/gtest.h"

namespace termbridge::policy {
namespace {

Policy FromTomlOrDie(std::string_view text) {
  absl::StatusOr<Policy> p = Policy::FromToml(text, "test.toml");
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *std::move(p) : Policy::Default();
}

bool HasPrefix(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// The rules are listed allow first on purpose: the order in the file does not
// matter, deny beats ask beats allow.
constexpr char kLayered[] = R"(
default_rules = false
[[rule]]
id = "git-any"
action = "allow"
prefix = ["git"]
[[rule]]
id = "git-push"
action = "ask"
prefix = ["git", "push"]
[[rule]]
id = "git-force-push"
action = "deny"
exact = ["git", "push", "--force"]
)";

// Builtins that set shell variables are assignments, whatever rule allows
// the builtin: `printf -v PS1 %s '$(cmd)'` ran cmd at the next prompt.
TEST(PolicyRules, BuiltinsThatSetShellVariablesAreAssignments) {
  Policy p = FromTomlOrDie(R"(
default_rules = false
[[rule]]
id = "builtins"
action = "allow"
regex = "^(printf|read|mapfile|readarray|getopts|declare|export|local|readonly|typeset)( .*)?$"
)");
  for (const char* line :
       {"printf -v PS1 %s x", "printf -vPROMPT_COMMAND %s x", "command printf -v PATH %s /tmp",
        "read -r PS1", "read", "mapfile -t BASH_ENV", "readarray x", "getopts ab PS1",
        "declare PS1=x", "export PROMPT_COMMAND=x", "local -n r=PS1", "typeset BASH_ENV=/tmp/x"}) {
    Decision d = p.Check(line);
    EXPECT_EQ(d.action, Action::kAsk) << line << ": " << d.reason;
    EXPECT_NE(d.reason.find("changes a shell variable"), std::string::npos) << line << d.reason;
  }
  for (const char* line : {"printf '%s' x", "printf -- -v", "export", "declare -p PS1"}) {
    EXPECT_EQ(p.Check(line).action, Action::kAllow) << line << ": " << p.Check(line).reason;
  }
}

TEST(PolicyRules, DenyBeatsAskBeatsAllow) {
  Policy p = FromTomlOrDie(kLayered);
  Decision d = p.Check("git log");
  EXPECT_EQ(d.action, Action::kAllow);
  EXPECT_EQ(d.rule_id, "git-any");
  d = p.Check("git push");
  EXPECT_EQ(d.action, Action::kAsk);
  EXPECT_EQ(d.rule_id, "git-push");
  d = p.Check("git push --force");
  EXPECT_EQ(d.action, Action::kDeny);
  EXPECT_EQ(d.rule_id, "git-force-push");
}

TEST(PolicyRules, LineTakesItsStrictestCommand) {
  Policy p = FromTomlOrDie(kLayered);
  Decision d = p.Check("git log && git push");
  EXPECT_EQ(d.action, Action::kAsk);
  EXPECT_EQ(d.rule_id, "git-push");
  EXPECT_EQ(d.command, "git push");
  ASSERT_EQ(d.commands.size(), 2u);
  EXPECT_EQ(d.commands[0].action, Action::kAllow);
  EXPECT_EQ(d.commands[1].action, Action::kAsk);

  d = p.Check("git push --force; git log; git push");
  EXPECT_EQ(d.action, Action::kDeny);
  EXPECT_EQ(d.rule_id, "git-force-push");
  EXPECT_EQ(d.commands.size(), 3u);
}

TEST(PolicyRules, ExactPrefixAndRegexMatching) {
  Policy p = FromTomlOrDie(R"(
default_rules = false
[[rule]]
id = "npm-test"
action = "allow"
exact = ["npm", "test"]
[[rule]]
id = "cargo"
action = "allow"
prefix = ["cargo", "build"]
[[rule]]
id = "pytest"
action = "allow"
regex = '^pytest( -k \w+)?$'
[[rule]]
id = "no-push"
action = "deny"
regex = 'push'
)");
  // exact: the whole argv, nothing more.
  EXPECT_EQ(p.Check("npm test").action, Action::kAllow);
  EXPECT_EQ(p.Check("npm test --watch").action, Action::kAsk);
  EXPECT_EQ(p.Check("npm").action, Action::kAsk);
  // prefix: whole words at the start, any arguments after.
  EXPECT_EQ(p.Check("cargo build").action, Action::kAllow);
  EXPECT_EQ(p.Check("cargo build --release").action, Action::kAllow);
  EXPECT_EQ(p.Check("cargo builds").action, Action::kAsk);
  EXPECT_EQ(p.Check("cargo run").action, Action::kAsk);
  // regex: RE2 against the command text (program basename and arguments).
  EXPECT_EQ(p.Check("pytest").action, Action::kAllow);
  EXPECT_EQ(p.Check("pytest -k smoke").action, Action::kAllow);
  EXPECT_EQ(p.Check("/usr/bin/pytest -k smoke").action, Action::kAllow);
  EXPECT_EQ(p.Check("pytest -k 'a or b'").action, Action::kAsk);
  // An unanchored regex matches anywhere in the text.
  EXPECT_EQ(p.Check("git push origin").action, Action::kDeny);
  EXPECT_EQ(p.Check("git push origin").rule_id, "no-push");
}

TEST(PolicyRules, AllowTrustsOnlySystemPathsButDenyMatchesAnyPath) {
  Policy p = FromTomlOrDie(R"(
default_rules = false
[[rule]]
id = "npm"
action = "allow"
prefix = ["npm"]
[[rule]]
id = "no-curl"
action = "deny"
prefix = ["curl"]
[[rule]]
id = "tool"
action = "allow"
exact = ["/opt/tool/bin/tool", "run"]
)");
  EXPECT_EQ(p.Check("npm ci").action, Action::kAllow);
  EXPECT_EQ(p.Check("/usr/bin/npm ci").action, Action::kAllow);
  EXPECT_EQ(p.Check("./npm ci").action, Action::kAsk);
  EXPECT_EQ(p.Check("/tmp/npm ci").action, Action::kAsk);
  EXPECT_EQ(p.Check("./curl x").action, Action::kDeny);
  EXPECT_EQ(p.Check("/opt/bin/curl x").action, Action::kDeny);
  // A rule that names a path matches that path only.
  EXPECT_EQ(p.Check("/opt/tool/bin/tool run").action, Action::kAllow);
  EXPECT_EQ(p.Check("tool run").action, Action::kAsk);
  EXPECT_EQ(p.Check("/tmp/tool run").action, Action::kAsk);
}

TEST(PolicyRules, BadRegexIsRejectedWithItsLine) {
  absl::StatusOr<Policy> p = Policy::FromToml(R"(version = 1
[[rule]]
action = "deny"
regex = "(unclosed"
)",
                                              "bad.toml");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(HasPrefix(std::string(p.status().message()), "bad.toml:4: bad regex")) << p.status();

  nlohmann::json j = Policy::Default().ToJson();
  j["rules"].push_back(
      {{"id", "r"}, {"action", "deny"}, {"match", "regex"}, {"pattern", "(unclosed"}});
  absl::StatusOr<Policy> from_json = Policy::FromJson(j);
  ASSERT_FALSE(from_json.ok());
  EXPECT_NE(from_json.status().message().find("bad regex"), std::string::npos);
}

TEST(PolicyRules, TomlErrorsNameFileAndLine) {
  struct Bad {
    const char* text;
    const char* prefix;
  };
  const Bad cases[] = {
      {"version = 2\n", "f.toml:1: version must be 1"},
      {"default = \"maybe\"\n", "f.toml:1: unknown action"},
      {"colour = true\n", "f.toml:1: unknown key"},
      {"\n[[rule]]\naction = \"allow\"\n", "f.toml:2: a rule needs exact, prefix or regex"},
      {"[[rule]]\nprefix = [\"ls\"]\n", "f.toml:1: a rule needs an action"},
      {"[[rule]]\naction = \"allow\"\nprefix = []\n", "f.toml:3: prefix must not be empty"},
      {"[[rule]]\naction = \"allow\"\nprefix = [\"a\"]\nregex = \"a\"\n",
       "f.toml:1: a rule has one matcher"},
      {"[[rule]]\nid = \"x\"\naction = \"allow\"\nprefix = [\"a\"]\n"
       "[[rule]]\nid = \"x\"\naction = \"allow\"\nprefix = [\"b\"]\n",
       "f.toml:5: duplicate rule id"},
      {"disable_builtin = [\"builtin.nope\"]\n", "f.toml:1: unknown built-in rule"},
      {"x = [\n", "f.toml:"},  // TOML syntax error
  };
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<Policy> p = Policy::FromToml(c.text, "f.toml");
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(HasPrefix(std::string(p.status().message()), c.prefix)) << p.status();
  }
}

TEST(PolicyRules, AllowRuleWritesOnlyWithWritesFlag) {
  Policy p = FromTomlOrDie(R"(
[[rule]]
id = "make"
action = "allow"
prefix = ["make"]
[[rule]]
id = "gen"
action = "allow"
prefix = ["./gen.sh"]
writes = true
)");
  EXPECT_EQ(p.Check("make").action, Action::kAllow);
  Decision d = p.Check("make > build.log");
  EXPECT_EQ(d.action, Action::kAsk);
  EXPECT_NE(d.reason.find("writes = true"), std::string::npos) << d.reason;
  EXPECT_EQ(p.Check("make 2>&1 >/dev/null").action, Action::kAllow);
  EXPECT_EQ(p.Check("./gen.sh > out.txt").action, Action::kAllow);
  EXPECT_EQ(p.Check("./gen.sh >> out.txt").action, Action::kAllow);
  // writes = true does not reach into system files: the built-ins still deny.
  EXPECT_EQ(p.Check("./gen.sh > /etc/passwd").action, Action::kDeny);
}

TEST(PolicyRules, WritePathsLimitWhichFilesARuleMayWrite) {
  Policy p = FromTomlOrDie(R"(
[[rule]]
id = "gen"
action = "allow"
prefix = ["./gen.sh"]
write_paths = ["out/**", "*.log", "/tmp/gen-?.txt"]
)");
  for (const char* line : {"./gen.sh > out/a.txt", "./gen.sh > ./out/sub/b.txt",
                           "./gen.sh > out//c.txt", "./gen.sh >> build.log",
                           "./gen.sh > /tmp/gen-1.txt", "./gen.sh 2>&1 > /dev/null", "./gen.sh"}) {
    EXPECT_EQ(p.Check(line).action, Action::kAllow) << line << ": " << p.Check(line).reason;
  }
  // Outside the globs or climbing out with "..": a person decides.
  for (const char* line :
       {"./gen.sh > out.txt", "./gen.sh > logs/build.log", "./gen.sh > /tmp/gen-12.txt",
        "./gen.sh > out/../../etc/x.log", "./gen.sh > ../out/a"}) {
    Decision d = p.Check(line);
    EXPECT_EQ(d.action, Action::kAsk) << line;
    EXPECT_NE(d.reason.find("write_paths do not cover"), std::string::npos)
        << line << ": " << d.reason;
  }
  // Named at run time: no allow rule matches the command at all.
  for (const char* line : {"./gen.sh > $HOME/x.log", "./gen.sh > *.log", "./gen.sh > `pick`.log"}) {
    Decision d = p.Check(line);
    EXPECT_EQ(d.action, Action::kAsk) << line;
    ASSERT_FALSE(d.commands.empty()) << line;
    const CommandDecision& gen = d.commands.back();  // `pick` runs first
    EXPECT_NE(gen.reason.find("only known at run time"), std::string::npos)
        << line << ": " << gen.reason;
  }
  // The built-in denies still come first.
  EXPECT_EQ(p.Check("./gen.sh > /etc/passwd").action, Action::kDeny);
}

TEST(PolicyRules, WritePathsAreCheckedWhenTheFileIsRead) {
  struct Case {
    const char* toml;
    const char* error;
  } cases[] = {
      {"[[rule]]\naction = \"deny\"\nexact = [\"x\"]\nwrite_paths = [\"a\"]\n",
       "p.toml:4: write_paths is for allow rules"},
      {"[[rule]]\naction = \"allow\"\nexact = [\"x\"]\nwrites = false\nwrite_paths = [\"a\"]\n",
       "p.toml:5: write_paths with writes = false"},
      {"[[rule]]\naction = \"allow\"\nexact = [\"x\"]\nwrite_paths = [\"\"]\n",
       "p.toml:4: write_paths must not hold \"\""},
      {"[[rule]]\naction = \"allow\"\nexact = [\"x\"]\nwrite_paths = \"a\"\n", "p.toml:4:"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Policy> p = Policy::FromToml(c.toml, "p.toml");
    ASSERT_FALSE(p.ok()) << c.toml;
    EXPECT_NE(p.status().message().find(c.error), std::string::npos) << p.status();
  }
  // write_paths alone means writes = true.
  Policy p = FromTomlOrDie(
      "[[rule]]\naction = \"allow\"\nexact = [\"x\"]\n"
      "write_paths = [\"a\"]\n");
  EXPECT_EQ(p.Check("x > a").action, Action::kAllow);
}

TEST(PolicyRules, WritePathsSurviveTomlAndJson) {
  Rule r;
  r.id = "w";
  r.action = Action::kAllow;
  r.kind = MatchKind::kExact;
  r.argv = {"gen"};
  r.writes = true;
  r.write_paths = {"a b/*.txt", "x\\*y", "/tmp/**"};
  absl::StatusOr<Policy> from_toml = Policy::FromToml(RuleToToml(r), "x.toml");
  ASSERT_TRUE(from_toml.ok()) << from_toml.status() << "\n" << RuleToToml(r);
  absl::StatusOr<Policy> from_json = Policy::FromJson(from_toml->ToJson());
  ASSERT_TRUE(from_json.ok()) << from_json.status();
  for (const Policy* p : {&*from_toml, &*from_json}) {
    const Rule* found = nullptr;
    for (const Rule& x : p->rules()) {
      if (x.id == r.id) found = &x;
    }
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(found->write_paths, r.write_paths);
    EXPECT_EQ(p->Check("gen > 'x*y'").action, Action::kAsk);  // a glob in the target asks
    EXPECT_EQ(p->Check("gen > '/tmp/a/b'").action, Action::kAllow);
    EXPECT_EQ(p->Check("gen > 'a b/c.txt'").action, Action::kAllow);
  }
}

TEST(PolicyRules, BuiltinsCanBeSwitchedOffById) {
  Policy p = FromTomlOrDie("disable_builtin = [\"builtin.shutdown\"]\n");
  EXPECT_EQ(p.Check("reboot").action, Action::kAsk);
  EXPECT_EQ(p.Check("rm -rf /").action, Action::kDeny);
  EXPECT_EQ(p.disabled_builtins(), std::vector<std::string>{"builtin.shutdown"});
}

TEST(PolicyRules, AllBuiltinsCanBeSwitchedOff) {
  Policy p = FromTomlOrDie("builtin_deny = false\n");
  EXPECT_EQ(p.disabled_builtins(), std::vector<std::string>{"*"});
  EXPECT_EQ(p.Check("rm -rf /").action, Action::kAsk);
  EXPECT_EQ(p.Check("reboot").action, Action::kAsk);
  EXPECT_EQ(p.Check(":(){ :|:& };:").action, Action::kAsk);
  EXPECT_EQ(p.Check("ls").action, Action::kAllow);
  // Only the built-ins that protect the broker itself stay; their own ids
  // switch them off.
  for (const Rule& r : p.rules()) {
    if (r.kind != MatchKind::kBuiltin) continue;
    EXPECT_TRUE(r.id == "builtin.broker-state" || r.id == "builtin.process-files") << r.id;
  }
  EXPECT_EQ(p.Check("cat /proc/1/environ").rule_id, "builtin.process-files");
  Policy none = FromTomlOrDie(
      "builtin_deny = false\n"
      "disable_builtin = [\"builtin.broker-state\", \"builtin.process-files\"]\n");
  for (const Rule& r : none.rules()) EXPECT_NE(r.kind, MatchKind::kBuiltin) << r.id;
  // Not denied; it asks because /proc is outside the workspace.
  EXPECT_EQ(none.Check("cat /proc/1/environ").action, Action::kAsk);
  EXPECT_EQ(none.Check("cat /proc/1/environ").rule_id, "");
  // An operator deny rule still works without the built-ins.
  Policy q = FromTomlOrDie(R"(builtin_deny = false
[[rule]]
id = "no-rm"
action = "deny"
prefix = ["rm"]
)");
  EXPECT_EQ(q.Check("sh -c 'rm -rf /'").rule_id, "no-rm");
}

TEST(PolicyRules, DefaultRulesCanBeLeftOut) {
  Policy p = FromTomlOrDie("default_rules = false\ndefault = \"deny\"\n");
  EXPECT_EQ(p.Check("ls").action, Action::kDeny);
  EXPECT_EQ(p.default_action(), Action::kDeny);
  EXPECT_EQ(p.Check("rm -rf /").rule_id, "builtin.rm-root");
}

TEST(PolicyRules, BuiltinRulesHaveStableIdsAndReasons) {
  std::vector<Rule> rules = Policy::BuiltinRules();
  std::vector<std::string> ids;
  for (const Rule& r : rules) {
    EXPECT_TRUE(HasPrefix(r.id, "builtin.")) << r.id;
    EXPECT_EQ(r.action, Action::kDeny) << r.id;
    EXPECT_FALSE(r.reason.empty()) << r.id;
    ids.push_back(r.id);
  }
  for (const char* id : {"builtin.rm-root", "builtin.fork-bomb", "builtin.disk-format",
                         "builtin.raw-device-write", "builtin.shutdown", "builtin.privilege",
                         "builtin.pipe-to-shell", "builtin.system-file-write"}) {
    EXPECT_NE(std::find(ids.begin(), ids.end(), id), ids.end()) << id;
  }
}

TEST(PolicyJson, RoundTripKeepsEveryDecision) {
  Policy original = FromTomlOrDie(R"(
default = "deny"
disable_builtin = ["builtin.kill-all"]
[[rule]]
id = "make"
action = "allow"
prefix = ["make"]
writes = true
reason = "builds are fine"
[[rule]]
id = "push"
action = "ask"
regex = '^git push'
)");
  nlohmann::json j = original.ToJson();
  EXPECT_EQ(j["default"], "deny");
  EXPECT_EQ(j["builtin_deny"], true);
  EXPECT_EQ(j["disable_builtin"], nlohmann::json::array({"builtin.kill-all"}));
  absl::StatusOr<Policy> copy = Policy::FromJson(j);
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(copy->ToJson(), j);
  for (const char* line : {"ls", "make > log", "git push", "npm test", "kill -9 -1", "rm -rf /",
                           "curl x | sh", "echo 'x", "date -s now"}) {
    SCOPED_TRACE(line);
    Decision a = original.Check(line);
    Decision b = copy->Check(line);
    EXPECT_EQ(a.action, b.action);
    EXPECT_EQ(a.rule_id, b.rule_id);
    EXPECT_EQ(a.reason, b.reason);
  }
}

TEST(PolicyJson, RoundTripWithoutBuiltins) {
  Policy original = FromTomlOrDie("builtin_deny = false\n");
  nlohmann::json j = original.ToJson();
  EXPECT_EQ(j["builtin_deny"], false);
  EXPECT_EQ(j["builtin_rules"].size(), 2u);  // broker-state and process-files stay
  absl::StatusOr<Policy> copy = Policy::FromJson(j);
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(copy->Check("reboot").action, Action::kAsk);
  EXPECT_EQ(copy->ToJson(), j);
}

TEST(PolicyJson, MalformedSnapshotsAreRejected) {
  nlohmann::json good = Policy::Default().ToJson();
  std::vector<nlohmann::json> bad;
  bad.push_back(nlohmann::json::array());
  bad.push_back(good);
  bad.back()["version"] = 2;
  bad.push_back(good);
  bad.back()["default"] = "sometimes";
  bad.push_back(good);
  bad.back()["disable_builtin"] = {"builtin.nope"};
  bad.push_back(good);
  bad.back()["rules"] = {{{"id", "x"}, {"action", "allow"}, {"match", "glob"}}};
  bad.push_back(good);
  bad.back()["rules"] = {{{"id", "x"}, {"action", "allow"}, {"match", "exact"}}};  // no argv
  bad.push_back(good);
  bad.back()["rules"] = {{{"action", "allow"}, {"match", "exact"}, {"argv", {"ls"}}}};
  for (const nlohmann::json& j : bad) {
    SCOPED_TRACE(j.dump());
    absl::StatusOr<Policy> p = Policy::FromJson(j);
    EXPECT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(PolicyRulesToAllow, SimpleLineGivesExactRulesThatAllowIt) {
  Policy p = Policy::Default();
  absl::StatusOr<std::vector<Rule>> rules = p.RulesToAllow("npm test -- --watch");
  ASSERT_TRUE(rules.ok()) << rules.status();
  ASSERT_EQ(rules->size(), 1u);
  const Rule& r = (*rules)[0];
  EXPECT_EQ(r.action, Action::kAllow);
  EXPECT_EQ(r.kind, MatchKind::kExact);
  EXPECT_EQ(r.argv, (std::vector<std::string>{"npm", "test", "--", "--watch"}));
  EXPECT_FALSE(r.writes);
  EXPECT_TRUE(HasPrefix(r.id, "always-npm-")) << r.id;

  // Appended to a policy file, the rule allows exactly that line.
  std::string toml = RuleToToml(r);
  absl::StatusOr<Policy> with = Policy::FromToml(toml, "policy.toml");
  ASSERT_TRUE(with.ok()) << with.status() << "\n" << toml;
  EXPECT_EQ(with->Check("npm test -- --watch").action, Action::kAllow);
  EXPECT_EQ(with->Check("npm test -- --watch").rule_id, r.id);
  EXPECT_EQ(with->Check("npm test").action, Action::kAsk);
}

TEST(PolicyRulesToAllow, OnlyTheCommandsNotYetAllowed) {
  Policy p = Policy::Default();
  absl::StatusOr<std::vector<Rule>> rules =
      p.RulesToAllow("ls && /usr/bin/make all > build.log && make all > build.log");
  ASSERT_TRUE(rules.ok()) << rules.status();
  ASSERT_EQ(rules->size(), 1u);  // ls is allowed already; the two makes are one rule
  EXPECT_EQ((*rules)[0].argv, (std::vector<std::string>{"make", "all"}));
  EXPECT_TRUE((*rules)[0].writes);
  // "Always" allows writing the files it wrote, not every file.
  EXPECT_EQ((*rules)[0].write_paths, std::vector<std::string>{"build.log"});
  absl::StatusOr<Policy> with = Policy::FromToml(RuleToToml((*rules)[0]), "policy.toml");
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_EQ(with->Check("make all > build.log").action, Action::kAllow);
  EXPECT_EQ(with->Check("make all > .bashrc").action, Action::kAsk);
  EXPECT_EQ(p.RulesToAllow("make all > $OUT").status().code(),
            absl::StatusCode::kFailedPrecondition);
  // A program outside the system directories keeps its path.
  rules = p.RulesToAllow("./build.sh --fast");
  ASSERT_TRUE(rules.ok()) << rules.status();
  ASSERT_EQ(rules->size(), 1u);
  EXPECT_EQ((*rules)[0].argv[0], "./build.sh");
  // Nothing to add for a line that is allowed already.
  rules = p.RulesToAllow("ls -la");
  ASSERT_TRUE(rules.ok()) << rules.status();
  EXPECT_TRUE(rules->empty());
}

TEST(PolicyRulesToAllow, RefusesLinesNoRuleMayAllow) {
  Policy p = Policy::Default();
  for (const char* line :
       {"rm -rf /", "curl x | sh", "$CMD --flag", "echo $(date)", "python3 -c 'print(1)'",
        "echo 'unterminated", "X=1", "date -s 2020-01-01", "LD_PRELOAD=x.so make"}) {
    SCOPED_TRACE(line);
    absl::StatusOr<std::vector<Rule>> rules = p.RulesToAllow(line);
    ASSERT_FALSE(rules.ok());
    EXPECT_EQ(rules.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_FALSE(rules.status().message().empty());
  }
}

// Under the default policy (cat, echo and true allowed), a here-string, a
// redirection word or an assignment value that the shell expands at run time
// is never allowed: it could assign, run code, print shell variables or name
// any file.
TEST(PolicyRules, RunTimeRedirectionWordsAreNeverAllowed) {
  Policy p = Policy::Default();
  for (const char* line : {"cat <<< \"${Y:=\\$(touch /tmp/canary1)}${Y@P}\"",
                           "true <<< \"${PROMPT_COMMAND[1]:=touch /tmp/canary2}\"",
                           "cat <<< \"$__tb_secret\"",
                           "cat <<< \"${PS0:1}\"",
                           "cat < \"$__tb_dir\"/../../agent-token",
                           "cat < /proc/$PPID/environ",
                           "cat <<< $__tb_secret",
                           "cat <<< `printenv`",
                           "cat <<< \"$(id)\"",
                           "cat < $F",
                           "cat < ~/$F",
                           "cat < *.key",
                           "cat < <(id)",
                           "echo hi > $OUT",
                           "echo hi >> \"${OUT}\"",
                           "echo hi 2>\"$(touch x)\"",
                           "echo hi 2>$ERR",
                           "echo hi &> $OUT",
                           "echo hi >&$FD",
                           "{ cat; } <<< \"$X\"",
                           "(cat) < $F",
                           "<<< \"${PS1@P}\"",
                           "< $F",
                           "cat <<< \"${x@E}\"",
                           "cat <<< \"${!x}\"",
                           "cat <<< \"${x[$(touch y)]}\"",
                           "cat <<< $[1+1]",
                           "cat <<< \"${x:i}\"",
                           "echo ${x@P}",
                           "LANG=$X ls",
                           "LANG=\"${X:=C}\" ls",
                           "a[$(touch x)]=1",
                           "true <<< \"${x=1}\""}) {
    SCOPED_TRACE(line);
    Decision d = p.Check(line);
    EXPECT_NE(d.action, Action::kAllow) << d.reason;
    EXPECT_FALSE(p.RulesToAllow(line).ok());
  }
  // Literal words keep their decisions.
  for (const char* line :
       {"cat <<< hello", "cat <<< $'a\\nb'", "cat <<< 'x $y'", "cat < README.md", "echo hi 2>&1",
        "echo hi > /dev/null", "echo ${x@Q} 2>/dev/null | cat"}) {
    SCOPED_TRACE(line);
    Decision d = p.Check(line);
    bool dynamic = std::string_view(line).find("${") != std::string_view::npos;
    EXPECT_EQ(d.action, dynamic ? Action::kAsk : Action::kAllow) << d.reason;
  }
  // A refused form does not hide the rest of the command from deny rules.
  for (const char* line : {"a[i]=1 rm -rf /", "rm -rf / {fd}>/dev/null", "rm -rf / ${x@P}"}) {
    SCOPED_TRACE(line);
    EXPECT_EQ(p.Check(line).action, Action::kDeny) << p.Check(line).reason;
  }
  Decision d = p.Check("echo hi > out.txt");
  EXPECT_EQ(d.action, Action::kAsk);
  EXPECT_NE(d.reason.find("no writes = true"), std::string::npos) << d.reason;
}

TEST(PolicyDecision, ToJsonHasEveryField) {
  Decision d = Policy::Default().Check("ls && make");
  nlohmann::json j = d.ToJson();
  EXPECT_EQ(j["action"], "ask");
  EXPECT_EQ(j["rule_id"], "");
  EXPECT_EQ(j["command"], "make");
  EXPECT_EQ(j["parsed"], true);
  EXPECT_FALSE(j["reason"].get<std::string>().empty());
  ASSERT_EQ(j["commands"].size(), 2u);
  EXPECT_EQ(j["commands"][0]["command"], "ls");
  EXPECT_EQ(j["commands"][0]["action"], "allow");
  EXPECT_EQ(j["commands"][0]["rule_id"], "default.ls");
  EXPECT_FALSE(j["commands"][0]["reason"].get<std::string>().empty());

  nlohmann::json bad = Policy::Default().Check("echo 'x").ToJson();
  EXPECT_EQ(bad["parsed"], false);
  EXPECT_EQ(bad["action"], "ask");
}

TEST(PolicyDecision, ReasonsNameTheRuleTheCommandAndTheWrappers) {
  Policy p = Policy::Default();
  Decision d = p.Check("sudo sh -c 'rm -rf /'");
  EXPECT_EQ(d.rule_id, "builtin.rm-root");
  EXPECT_EQ(d.command, "rm -rf /");
  EXPECT_NE(d.reason.find("builtin.rm-root"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("`rm -rf /`"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("via sudo, sh -c"), std::string::npos) << d.reason;

  d = p.Check("echo $HOME");
  EXPECT_NE(d.reason.find("$HOME"), std::string::npos) << d.reason;

  d = p.Check("echo 'x");
  EXPECT_NE(d.reason.find("unterminated single quote"), std::string::npos) << d.reason;

  d = p.Check("");
  EXPECT_EQ(d.action, Action::kAllow);
  EXPECT_FALSE(d.reason.empty());
}

TEST(PolicyDecision, LongCommandsAreShortenedOnACharacterBoundary) {
  // "echo ééé…" of 300 bytes: a reason quotes the command shortened to 200
  // bytes with "...", and a line that cannot be parsed is its decision's
  // command, shortened the same way; at either parity no character is cut.
  for (std::string line : {"echo ", "echo x"}) {
    while (line.size() < 300) line += "\xc3\xa9";
    Decision d = Policy::Default().Check(line);
    EXPECT_TRUE(text::ValidUtf8(d.reason)) << d.reason;
    EXPECT_NE(d.reason.find("...`"), std::string::npos) << d.reason;
    Decision unparsed = Policy::Default().Check(line + " 'x");
    EXPECT_FALSE(unparsed.parsed);
    EXPECT_TRUE(text::ValidUtf8(unparsed.command)) << unparsed.command;
    EXPECT_LE(unparsed.command.size(), 200u);
  }
}

TEST(PolicyRuleToToml, EscapesAndRoundTrips) {
  Rule r;
  r.id = "odd \"id\"";
  r.action = Action::kAllow;
  r.kind = MatchKind::kExact;
  r.argv = {"printf", "a\\b\n\"c\"\t"};
  r.writes = true;
  r.reason = "line one\nline two";
  absl::StatusOr<Policy> p = Policy::FromToml(RuleToToml(r), "x.toml");
  ASSERT_TRUE(p.ok()) << p.status() << "\n" << RuleToToml(r);
  const Rule* found = nullptr;
  for (const Rule& x : p->rules()) {
    if (x.id == r.id) found = &x;
  }
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->argv, r.argv);
  EXPECT_TRUE(found->writes);
  EXPECT_EQ(found->reason, r.reason);

  Rule re;
  re.id = "re";
  re.action = Action::kDeny;
  re.kind = MatchKind::kRegex;
  re.pattern = R"(^curl\s.*\|)";
  p = Policy::FromToml(RuleToToml(re), "x.toml");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Check("curl -s example.com '|'").rule_id, "re");
}

}  // namespace
}  // namespace termbridge::policy
