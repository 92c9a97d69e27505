// Command policy: a shell-aware parser that finds every simple command in a
// command line, and deny/ask/allow rules checked against each of them.
//
// The parser is written by hand because no maintained library parses POSIX
// shell into argv while also seeing through wrappers (sh -c, env, xargs,
// sudo, find -exec, ...) and saying, instead of guessing, when it cannot.
#ifndef TERMBRIDGE_COMMON_POLICY_POLICY_H_
#define TERMBRIDGE_COMMON_POLICY_POLICY_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace re2 {
class RE2;
}  // namespace re2

namespace termbridge::policy {

enum class Action { kAllow, kAsk, kDeny };
std::string_view ActionName(Action action);  // "allow", "ask", "deny"

// One simple command found in a line, after wrappers are peeled off.
struct SimpleCommand {
  std::vector<std::string> argv;           // words after quote removal, as written
  std::string program;                     // basename of argv[0]: "/bin/rm" -> "rm"
  std::vector<std::string> via;            // wrappers that led here: {"sudo", "sh -c"}
  std::vector<std::string> write_targets;  // files written by > >> &> or tee
  std::vector<std::string> read_sources;   // files read by < and <> (`< file`)
  // A word whose value is only known at run time ($VAR, $(...), a command
  // word from a variable, xargs arguments). Allow rules never match these.
  bool dynamic = false;
  // Code the parser cannot see into: interpreter -c/-e code, a shell that
  // reads its script from stdin. Allow rules never match these either.
  bool opaque = false;
  std::string note;          // why dynamic/opaque
  std::string Text() const;  // program and arguments joined by spaces
  // VAR=value assignments the command runs with (leading words, env VAR=v).
  // Allow rules never match a command that sets variables other than the
  // locale and display ones (EnvNameHarmless with sound values).
  std::vector<std::string> env;
  bool stdin_piped = false;  // stdin is a pipe, a here-string or <(...)
  // An opaque shell or interpreter whose code arrives through a pipe, a
  // here-string, a process or command substitution, or a URL.
  bool piped_code = false;
};

// Whether the command carries `option` ("-x" or "--name") before the `--`
// that ends its options, the way GNU getopt_long would find it, erring
// towards true: "-x" is in any short cluster ("-fx", "-xVALUE", "-ax" all
// count, since which letters take values is unknown), and "--name" is any
// "--p" or "--p=value" where p is a non-empty prefix of name ("--se=1" counts
// for "--set"). Options after operands count (GNU permutes). False for a
// malformed `option`.
bool HasOption(const SimpleCommand& command, std::string_view option);

// Whether an agent may set the environment variable `name` without a person
// looking: LANG, LANGUAGE, LC_*, TZ, NO_COLOR, COLUMNS, LINES, and any name
// in `operator_allowed` (an exact name, or a prefix pattern ending in '*':
// "MYAPP_*"). Command lines that set other variables (VAR=v cmd, env VAR=v)
// are never matched by allow rules.
bool EnvNameHarmless(std::string_view name, const std::vector<std::string>& operator_allowed);

// Why `value` is not a sound value for `name`, or nullopt: NUL or other
// control characters, more than 4096 bytes, a '/' in LANG, LANGUAGE or LC_*
// (glibc loads locale files from paths), a ".." component in TZ or a TZ
// (with or without the leading ':') naming a file outside /usr/share/zoneinfo.
std::optional<std::string> EnvValueProblem(std::string_view name, std::string_view value);

struct ParsedLine {
  std::vector<SimpleCommand> commands;
  bool has_operators = false;        // ; && || | & newline, substitutions, redirections
  std::optional<std::string> error;  // set when the line cannot be parsed
  // Set with `error` when judging the line would cost more than its bounds
  // allow: the bound's name ("line_bytes", "brace_words", "brace_bytes",
  // "nesting", "commands", "steps", "argv_words", "argv_bytes").
  std::string limit;
  // Standalone NAME=value words: they change the shell's variables.
  std::vector<std::string> assignments;
};
// The text a line is judged as, and the exact text to deliver to the PTY
// after judging it: "\r\n" and a lone "\r" become "\n"; tabs and newlines
// stay. Returns why the line is refused, or nullopt with *out set: a NUL is
// "NUL byte at column N" (1-based), any other control character (a PTY's
// line editor would act on it) "control character 0xNN at column N (...)".
// On refusal *out is empty.
std::optional<std::string> NormalizeCommandLine(std::string_view line, std::string* out);

// Parses NormalizeCommandLine(line); a refused line is ParsedLine::error.
ParsedLine ParseLine(std::string_view line);
// A command that runs without a shell: the words are literal, and only
// wrappers (sh -c, env, sudo, ...) are peeled. Operators found inside a
// wrapper's code string set has_operators.
ParsedLine ParseArgv(const std::vector<std::string>& argv);

enum class MatchKind { kExact, kPrefix, kRegex, kBuiltin };

struct Rule {
  std::string id;
  Action action = Action::kAsk;
  MatchKind kind = MatchKind::kExact;
  std::vector<std::string> argv;  // kExact, kPrefix: argv[0] matches the program basename
  std::string pattern;            // kRegex: RE2, partial match against SimpleCommand::Text()
  // When not empty, the rule matches only a command that also carries one of
  // these options ("-s", "--set"), as HasOption finds them.
  std::vector<std::string> options;
  bool writes = false;  // an allow rule that may also write files (redirections, tee)
  // With writes: the files it may write, as globs (`**` crosses directories,
  // `*` and `?` stay within a name), matched against the target as written
  // ("build/**", "/tmp/*.log"). Empty: any file (the built-in denies still apply).
  std::vector<std::string> write_paths;
  // Allow rules: where the command may read, as globs in the same syntax,
  // ~ expanded and relative ones taken from the cwd; a plain path covers
  // everything at or under it. Empty: the workspace (CheckContext). A read
  // outside the scope makes the rule not match, so the command asks.
  std::vector<std::string> read_paths;
  // Allow rules with read_paths: every read must also stay inside the
  // workspace (the two scopes intersected), so the rule reads no wider than
  // one without read_paths would (a narrowed "always" rule, docs/operating.md
  // "Grants").
  bool within_workspace = false;
  // Allow rules: the rule matches only where the shell runs at or under one
  // of these (absolute or ~ globs, as read_paths), checked for the cwd and
  // every directory a cd of the line goes to; never for an unknown cwd, a
  // line whose cd cannot be followed, or a command reached through a
  // wrapper (env -C, sudo -D, find -execdir may run it elsewhere).
  std::vector<std::string> cwd;
  // When the rule stops applying, in Unix seconds; 0: never. An expired rule
  // stays in the file (policy show marks it) and Decide skips it.
  int64_t expires_unix_s = 0;
  std::string reason;
  std::string origin;  // "builtin", "default", or "<file>:<line>"
};

// `unix_s` as RFC 3339 in UTC ("2026-11-26T10:00:00Z"), as the policy file
// and its JSON write an expiry.
std::string FormatExpiry(int64_t unix_s);
// The inverse of FormatExpiry (a "Z" or "+hh:mm" offset); nullopt otherwise.
std::optional<int64_t> ParseExpiry(std::string_view text);
// Whether `rule` has an expiry at or before `now_unix_s`.
bool Expired(const Rule& rule, int64_t now_unix_s);

struct CommandDecision {
  std::string command;  // SimpleCommand::Text()
  Action action = Action::kAsk;
  std::string rule_id;
  std::string reason;
  // What the command reads, resolved: absolute paths, a walk (grep -r, du,
  // tree) marked "path (walk)"; "(unknown cwd)/x" when no cwd was known.
  std::vector<std::string> reads;
  // Where the deciding allow rule may read (its read_paths or the workspace).
  std::vector<std::string> read_scope;
  // The read that sent the command to a person (outside the scope, or
  // sensitive); "" when its reads did not.
  std::string read_blocker;
};

// The ids under which reads and process listings ask, whatever rule allowed
// the program (they cannot be switched off; "always" never covers them).
inline constexpr char kSensitiveReadRule[] = "builtin.sensitive-read";
inline constexpr char kProcessListingRule[] = "builtin.process-listing";
// The id under which a line past one of the parser's bounds asks (the
// headless lane refuses it); Decision::limit names the bound.
inline constexpr char kTooComplexRule[] = "builtin.too-complex";
// The longest line (or argv, its bytes summed) either lane parses.
inline constexpr size_t kMaxLineBytes = 64 << 10;

struct Decision {
  Action action = Action::kAsk;
  std::string rule_id;  // the rule that decided the line; "" for the default action
  std::string reason;   // one sentence a person can read
  std::string command;  // the simple command that decided the line
  bool parsed = true;
  std::vector<CommandDecision> commands;
  std::vector<std::string> reads;       // every command's reads, in order
  std::vector<std::string> read_scope;  // the deciding command's read scope
  std::string read_blocker;             // the deciding command's read blocker
  std::string limit;                    // ParsedLine::limit when the line was too complex

  nlohmann::json ToJson() const;
};

// What the broker knows about where a line will run.
struct CheckContext {
  std::string cwd;  // the shell's working directory (absolute); "" when unknown
  // The workspace, where allow rules without read_paths may read: the
  // terminal's cwd_roots, or the cwd it was opened in. Empty: `cwd` (and
  // with that unknown too, only relative paths below the unknown cwd).
  std::vector<std::string> read_roots = {};
  // The time rules' expiry is judged at, in Unix seconds; 0: now.
  int64_t now_unix_s = 0;
};

namespace internal {
struct ReadPlan;
}  // namespace internal

class Policy {
 public:
  // The out-of-the-box policy: the built-in deny set, a small set of
  // read-only commands allowed, everything else asks.
  static Policy Default();
  // Parses a policy file. Errors are InvalidArgument("<origin>:<line>: <reason>").
  static absl::StatusOr<Policy> FromToml(std::string_view text, std::string_view origin);
  // The snapshot the broker sends in the handshake, and its inverse.
  nlohmann::json ToJson() const;
  static absl::StatusOr<Policy> FromJson(const nlohmann::json& json);

  // The interactive lane: a line that cannot be parsed asks. Relative paths
  // are resolved against context.cwd (and the line's own cd targets) when
  // the built-ins look for protected paths.
  Decision Check(std::string_view line, const CheckContext& context) const;
  Decision Check(std::string_view line) const;  // an empty context
  // The strict headless lane: argv runs without a shell. Allowed only when
  // an allow rule matches every part and nothing is destructive; the
  // result is kAllow or kDeny, never kAsk.
  Decision CheckHeadless(const std::vector<std::string>& argv) const;

  // The exact allow rules that would make `line` allowed ("always"), or
  // FailedPrecondition when it can never be (denied, unparseable, dynamic).
  absl::StatusOr<std::vector<Rule>> RulesToAllow(std::string_view line,
                                                 const CheckContext& context) const;
  absl::StatusOr<std::vector<Rule>> RulesToAllow(std::string_view line) const;

  // One simple command of `line` against the rules, in the order deny, ask,
  // allow; the default action when none matches.
  CommandDecision Decide(const SimpleCommand& command, const ParsedLine& line,
                         const CheckContext& context) const;
  CommandDecision Decide(const SimpleCommand& command, const ParsedLine& line) const;

  // The broker's own files and directories (state dir, policy file, audit
  // log, socket, credentials): builtin.broker-state denies any command that
  // names a path at or under one of them. ~ and $HOME are expanded, relative
  // paths taken from the process cwd, symlinks resolved now. Not part of
  // the JSON snapshot.
  void SetProtectedPaths(std::vector<std::string> paths);
  const std::vector<std::string>& protected_paths() const { return protected_paths_; }

  // Every built-in deny rule (id and reason), whether enabled or not.
  static std::vector<Rule> BuiltinRules();

  // Paths whose reads always ask (builtin.sensitive-read): the built-in
  // list, and the operator's `sensitive_paths` added to it. Globs as in
  // Rule::read_paths; a relative one is a name anywhere ("**/x").
  static const std::vector<std::string>& DefaultSensitivePaths();
  const std::vector<std::string>& sensitive_paths() const { return sensitive_paths_; }

  // This policy with `extra` rules added (as if appended to its file):
  // the same default, built-in switches, sensitive and protected paths.
  // InvalidArgument when a rule is malformed or repeats an id.
  absl::StatusOr<Policy> WithRules(std::vector<Rule> extra) const;

  const std::vector<Rule>& rules() const { return rules_; }
  Action default_action() const { return default_action_; }
  const std::vector<std::string>& disabled_builtins() const { return disabled_builtins_; }

 private:
  // Orders rules (built-ins, deny, ask, allow), adds the enabled built-ins
  // and compiles the regexes. Fails on a bad regex.
  static absl::StatusOr<Policy> Assemble(std::vector<Rule> rules, Action default_action,
                                         std::vector<std::string> disabled_builtins,
                                         std::vector<std::string> sensitive_paths = {});
  // Every sensitive glob: the defaults, the operator's, the broker's files.
  std::vector<std::string> SensitiveGlobs() const;
  // Turns an allow, or an ask by the default action, into an ask when the
  // command lists other processes or reads a sensitive path.
  void GuardReads(const SimpleCommand& command, const internal::ReadPlan& plan,
                  CommandDecision* decision) const;
  bool Matches(size_t index, const SimpleCommand& command, const ParsedLine& line,
               const CheckContext& context) const;
  // The argv or regex part of a non-built-in rule, without its options.
  bool MatchesArgv(size_t index, const SimpleCommand& command) const;

  std::vector<Rule> rules_;                               // deny, ask, allow, built-ins included
  std::vector<std::shared_ptr<const re2::RE2>> regexes_;  // per rule; null unless kRegex
  // Per rule: its write_paths as one compiled pattern; null when it has none.
  std::vector<std::shared_ptr<const re2::RE2>> write_regexes_;
  Action default_action_ = Action::kAsk;
  // Built-in rule ids the operator switched off, or "*" for all of them.
  std::vector<std::string> disabled_builtins_;
  std::vector<std::string> protected_paths_;  // as given to SetProtectedPaths
  std::vector<std::string> protected_forms_;  // internal::ProtectedForms of them
  std::vector<std::string> sensitive_paths_;  // the operator's, beyond the defaults
};

// The TOML text of one [[rule]] table, for appending to a policy file.
std::string RuleToToml(const Rule& rule);

// Rules given as TOML [[rule]] tables alone (a narrowed "always" rule):
// the same keys and errors as a policy file's rules ("<origin>:<line>:
// reason"); anything but [[rule]] tables is refused. A rule without an `id`
// gets an empty one, for the caller to name.
absl::StatusOr<std::vector<Rule>> RulesFromToml(std::string_view text, std::string_view origin);

// Whether `candidate` may be written instead of `proposed` (the rules
// RulesToAllow gave for `line` in `context`): every candidate is an allow
// rule that matches no command, cwd, read or write that some proposed rule
// would not (a longer argv prefix, an exact argv, added options, a cwd,
// a smaller read or write scope, an earlier expiry), and `policy` with the
// candidates added allows `line` in `context`. FailedPrecondition naming
// the rule and why otherwise.
absl::Status CheckNarrowing(const Policy& policy, std::string_view line,
                            const CheckContext& context, const std::vector<Rule>& proposed,
                            const std::vector<Rule>& candidate);

// The policy file on the host. Current() notices a changed file and reloads
// it; a bad file is rejected and the previous policy stays in force.
class PolicyFile {
 public:
  // An empty path means the default policy, with nothing to reload.
  explicit PolicyFile(std::string path);
  // The first load. A missing file is the default policy; a bad one is an error.
  absl::Status Load();
  std::shared_ptr<const Policy> Current();
  // Current(), and in *why_default why it is the built-in default rather
  // than a version of the file: "no policy file is set", "<path> does not
  // exist", or the error that kept every version of it out; "" when it came
  // from the file (its last valid version, when a newer one is rejected).
  std::shared_ptr<const Policy> Current(std::string* why_default);
  // Policy::SetProtectedPaths for the current policy and every one loaded
  // (or defaulted) from now on.
  void SetProtectedPaths(std::vector<std::string> paths);
  // Appends rules to the file atomically (temp file, fsync, rename) and reloads.
  absl::Status AppendRules(const std::vector<Rule>& rules);
  const std::string& path() const { return path_; }
  uint64_t generation();     // bumps on every successful (re)load
  std::string last_error();  // why the newest file was rejected, or ""

 private:
  void ReloadIfChangedLocked();
  // `policy` with protected_paths_, shared.
  std::shared_ptr<const Policy> Protect(Policy policy) const;
  std::string path_;
  std::mutex mu_;
  std::shared_ptr<const Policy> current_;
  std::vector<std::string> protected_paths_;
  uint64_t generation_ = 0;
  std::string last_error_;
  bool from_file_ = false;  // current_ was read from the file, not defaulted
  struct Stamp {
    int64_t mtime_ns = -1;
    int64_t size = -1;
    uint64_t inode = 0;
    bool operator==(const Stamp& o) const {
      return mtime_ns == o.mtime_ns && size == o.size && inode == o.inode;
    }
  } stamp_;
};

}  // namespace termbridge::policy

#endif  // TERMBRIDGE_COMMON_POLICY_POLICY_H_
