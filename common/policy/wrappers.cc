// Peels wrappers off a simple command so that rules see the command that
// really runs: shells with -c (their code is parsed again), env, sudo, doas,
// nice, timeout, xargs, find -exec, eval, watch and friends. Interpreters
// given code on the command line, and shells or interpreters that read code
// from stdin, are marked opaque; when that stdin is a pipe the code is
// "piped" (curl ... | sh). The resulting simple commands, with the wrappers
// they came through in `via`, are appended to the parse state.
#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/policy/builtin_rules.h"
#include "common/policy/options.h"
#include "common/policy/portable_line.h"
#include "common/policy/program_options.h"
#include "common/policy/sed_script.h"
#include "common/policy/shell_parser.h"
#include "common/policy/text.h"
#include "common/policy/wrapper_args.h"
#include "common/text/utf8.h"

namespace termbridge::policy::internal {
namespace {

// What Emit adds to a command beyond its words and its context.
struct Traits {
  bool opaque = false;
  bool piped_code = false;
  bool dynamic = false;
  std::string note;
  std::vector<std::string> writes;
};

std::vector<Word> Tail(const std::vector<Word>& w, size_t from, size_t to = std::string::npos) {
  to = std::min(to, w.size());
  if (from >= to) return {};
  return std::vector<Word>(w.begin() + static_cast<long>(from), w.begin() + static_cast<long>(to));
}

// The words' texts: the argv the program gets.
std::vector<std::string> Texts(const std::vector<Word>& w) {
  std::vector<std::string> texts;
  texts.reserve(w.size());
  for (const Word& x : w) texts.push_back(x.text);
  return texts;
}

std::string Joined(const std::vector<Word>& w) { return Join(Texts(w), " "); }

bool IsIgnoredTarget(std::string_view t) {
  return t == "/dev/null" || t == "/dev/stdout" || t == "/dev/stderr" || t == "/dev/tty";
}

bool IsStdinPath(std::string_view s) {
  return s == "-" || s == "/dev/stdin" || StartsWith(s, "/dev/fd/") ||
         StartsWith(s, "/proc/self/fd/");
}

bool IsUrl(std::string_view s) {
  return StartsWith(s, "http://") || StartsWith(s, "https://") || StartsWith(s, "ftp://");
}

// A script operand whose code arrives through a pipe or the network.
bool IsPipedScript(const Word& w) {
  return w.IsProcessSubstitution() || w.IsOneSubstitution() || IsStdinPath(w.text) || IsUrl(w.text);
}

void Emit(const Invocation& inv, const std::vector<Word>& words, const Traits& t, ParseState* st) {
  if (st->out->commands.size() >= kMaxCommands) {
    st->FailLimit("commands", Cat("the line runs more than ", kMaxCommands, " commands"));
    return;
  }
  st->argv_words += words.size();
  for (const Word& w : words) st->argv_bytes += w.text.size();
  if (st->argv_words > kMaxArgvWords) {
    st->FailLimit("argv_words",
                  Cat("the line's commands have more than ", kMaxArgvWords, " words"));
    return;
  }
  if (st->argv_bytes > kMaxArgvBytes) {
    st->FailLimit("argv_bytes",
                  Cat("the line's commands have more than ", kMaxArgvBytes >> 10, " KiB of words"));
    return;
  }
  SimpleCommand c;
  c.argv = Texts(words);
  c.program = c.argv.empty() ? "" : Basename(c.argv[0]);
  c.via = inv.via;
  c.write_targets = inv.writes;
  c.write_targets.insert(c.write_targets.end(), t.writes.begin(), t.writes.end());
  c.read_sources = inv.reads;
  c.env = inv.env;
  c.stdin_piped = inv.stdin_piped;
  c.opaque = t.opaque;
  c.piped_code = t.piped_code;
  const Word* dynamic_word = nullptr;
  for (const Word& w : words) {
    if (dynamic_word == nullptr && w.Dynamic()) dynamic_word = &w;
  }
  c.dynamic =
      inv.forced_dynamic || t.dynamic || dynamic_word != nullptr || !inv.hidden_expansion.empty();
  std::vector<std::string> notes;
  if (inv.forced_dynamic) notes.push_back(inv.forced_note);
  if (dynamic_word != nullptr) notes.push_back(RunTimeNote(dynamic_word->text));
  if (!inv.hidden_expansion.empty()) notes.push_back(RunTimeNote(inv.hidden_expansion));
  if (!t.note.empty()) notes.push_back(t.note);
  if (words.empty()) notes.push_back("a redirection without a command");
  c.note = Join(notes, "; ");
  st->out->commands.push_back(std::move(c));
  if (dynamic_word != nullptr && !inv.is_variant) {
    Invocation pending = inv;
    pending.words = words;
    st->pending.push_back(std::move(pending));
  }
}

Invocation Inner(const Invocation& inv, std::vector<Word> words, std::string via) {
  Invocation next = inv;
  next.words = std::move(words);
  next.via.push_back(std::move(via));
  next.depth++;
  next.strip_assignments = true;
  return next;
}

// Parses a code string (sh -c CODE, eval ARGS, watch CMD) and, when the
// string refers to variables this line assigned, each resolved version too.
// `positionals` are the $0, $1, ... the code sees (sh -c CODE ARG0 ARG1).
void ParseCodeWord(const Word& code, const Invocation& inv, const std::string& via, ParseState* st,
                   std::shared_ptr<const Positionals> positionals = nullptr) {
  Invocation nested = Inner(inv, {}, via);
  if (positionals) nested.positionals = std::move(positionals);
  std::string label = Cat("in `", via, "` code");
  ParseCode(code.text, nested, label, st);
  if (!code.Dynamic() || inv.is_variant) return;
  for (Variant& v : ResolveVariables({code}, *st, inv.positionals.get(), 16)) {
    if (st->failed()) return;
    Invocation resolved = nested;
    resolved.is_variant = true;
    resolved.forced_dynamic = true;
    resolved.forced_note = Cat("assumes ", v.assumption, ", as assigned in this line");
    ParseCode(Joined(v.words), resolved, label, st);
  }
}

void EmitSubstitutedCode(const Invocation& inv, const Word& code, ParseState* st) {
  Traits t;
  t.opaque = t.piped_code = true;
  t.note = Cat("runs the output of `", ShortenWord(code.text), "` as code");
  Emit(inv, inv.words, t, st);
}

// ---- shells ---------------------------------------------------------------

bool IsShell(std::string_view p) {
  static constexpr std::string_view kShells[] = {"sh",   "bash", "dash", "zsh",   "ksh",
                                                 "mksh", "ash",  "yash", "posh",  "rbash",
                                                 "fish", "csh",  "tcsh", "ksh93", "oksh"};
  return std::find(std::begin(kShells), std::end(kShells), p) != std::end(kShells);
}

// Forces every command `inv` leads to to ask, with `why` (the first reason
// given wins).
void Unjudged(Invocation* inv, std::string why) {
  if (inv->forced_dynamic) return;
  inv->forced_dynamic = true;
  inv->forced_note = std::move(why);
}

// bash is the dialect the parser reads; code for any other shell is judged
// only when every shell reads it alike (portable_line.h), else every
// command found in it asks; fish also reads `\` inside single quotes. Code
// in which bash finds nothing to run may still run something in that shell
// (zsh runs a pager for `< file`): then the wrapper itself is emitted, known
// only at run time.
void ParseShellCode(std::string_view shell, const Word& code, Invocation inv,
                    const std::string& via, ParseState* st,
                    std::shared_ptr<const Positionals> positionals = nullptr) {
  std::optional<std::string> problem;
  if (shell != "bash" && shell != "rbash") {
    problem = PortableLineProblem(code.text, /*posix_quotes=*/shell != "fish" && shell != "$SHELL");
  }
  if (problem) Unjudged(&inv, Cat(shell, " may read this code otherwise than bash: ", *problem));
  const size_t before = st->out->commands.size();
  ParseCodeWord(code, inv, via, st, std::move(positionals));
  if (problem && !st->failed() && st->out->commands.size() == before) {
    Traits t;
    t.dynamic = true;
    t.note = inv.forced_note;
    Emit(inv, inv.words, t, st);
  }
}

// Shell options that change nothing about how the code is read or what else
// runs: errexit, nounset, xtrace, verbose, noglob, noclobber, allexport,
// errtrace, functrace, physical, pipefail; -c and -s say where code comes
// from. Others (-i and -l read start-up files, -k moves assignments into the
// environment, -O/+O shell options change the grammar, --rcfile) ask.
bool HarmlessShellLetter(std::string_view shell, char c) {
  // zsh and ksh give other letters other meanings (zsh -P is
  // RC_EXPAND_PARAM); these few mean the same in every sh-like shell.
  if (shell != "bash" && shell != "rbash") {
    return std::string_view("euxvfcs").find(c) != std::string_view::npos;
  }
  return std::string_view("euxvfCaETPcsp").find(c) != std::string_view::npos;
}

bool HarmlessShellOption(std::string_view name) {
  static constexpr std::string_view kNames[] = {"errexit",   "nounset",   "xtrace",    "verbose",
                                                "noglob",    "noclobber", "allexport", "errtrace",
                                                "functrace", "physical",  "pipefail"};
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

void PeelShell(Invocation inv, ParseState* st) {
  const std::vector<Word>& w = inv.words;
  std::string prog = Basename(w[0].text);
  if (prog == "fish" || prog == "csh" || prog == "tcsh") {
    // Not sh-like: fish reads options after its -c code (-C runs more code).
    Traits t;
    t.opaque = true;
    t.note = Cat(prog, " is not a shell this check reads");
    return Emit(inv, w, t, st);
  }
  size_t i = 1;
  bool c_flag = false, s_flag = false;
  while (i < w.size() && !w[i].Dynamic()) {
    const std::string& a = w[i].text;
    if (a == "--" || a == "-") {
      ++i;
      break;
    }
    if (StartsWith(a, "--")) {
      if (a != "--norc" && a != "--noprofile" && a != "--noediting") {
        Unjudged(&inv,
                 Cat("`", prog, " ", ShortenWord(a), "` changes what the shell reads or runs"));
      }
      i += (a == "--rcfile" || a == "--init-file") ? 2 : 1;
      continue;
    }
    if ((a[0] != '-' && a[0] != '+') || a.size() < 2) break;
    size_t extra = 0;
    for (size_t j = 1; j < a.size(); ++j) {
      if (a[j] == 'c') c_flag = true;
      if (a[j] == 's') s_flag = true;
      if (a[j] == 'o' || a[j] == 'O') {
        const size_t value = i + 1 + extra;
        ++extra;
        const bool known = a[j] == 'o' && value < w.size() && !w[value].Dynamic() &&
                           HarmlessShellOption(w[value].text);
        if (!known) {
          Unjudged(&inv, Cat("`", prog, " ", std::string(1, a[0]), std::string(1, a[j]),
                             value < w.size() ? Cat(" ", ShortenWord(w[value].text)) : "",
                             "` changes how the shell reads or runs code"));
        }
      } else if (!HarmlessShellLetter(prog, a[j])) {
        Unjudged(&inv, Cat("`", prog, " ", std::string(1, a[0]), std::string(1, a[j]),
                           "` changes what the shell reads or runs"));
      }
    }
    i += 1 + extra;
  }
  Traits t;
  t.opaque = true;
  if (c_flag) {
    if (i >= w.size()) {
      t.note = "a shell -c without code";
      Emit(inv, w, t, st);
      return;
    }
    if (w[i].IsOneSubstitution()) return EmitSubstitutedCode(inv, w[i], st);
    auto positionals = std::make_shared<Positionals>();
    for (size_t k = i + 1; k < w.size(); ++k) {
      if (w[k].Dynamic()) {
        positionals->push_back(std::nullopt);
      } else {
        positionals->push_back(w[k].text);
      }
    }
    return ParseShellCode(prog, w[i], inv, prog + " -c", st, std::move(positionals));
  }
  if (!s_flag && i < w.size()) {
    t.piped_code = IsPipedScript(w[i]);
    t.note = t.piped_code ? Cat("runs shell code from `", ShortenWord(w[i].text), "`")
                          : Cat("runs the script `", ShortenWord(w[i].text),
                                "`, which the parser cannot see");
  } else {
    t.piped_code = inv.stdin_piped;
    t.note = inv.stdin_piped ? "reads its commands from a pipe" : "reads its commands from stdin";
  }
  Emit(inv, w, t, st);
}

// su [-] [user] -c CODE, runuser -u USER -- CMD...
void PeelSu(Invocation inv, ParseState* st) {
  const std::vector<Word>& w = inv.words;
  std::string prog = Basename(w[0].text);
  const Word* code = nullptr;
  Word attached;
  bool user_flag = false;
  size_t command_at = std::string::npos;
  for (size_t i = 1; i < w.size(); ++i) {
    const std::string& a = w[i].text;
    if (a == "--") {
      if (user_flag) command_at = i + 1;
      break;
    }
    if ((a == "-c" || a == "--command") && i + 1 < w.size()) {
      code = &w[++i];
    } else if (StartsWith(a, "--command=")) {
      attached = w[i].Substr(10);
      code = &attached;
    } else if (a == "-s" || a == "--shell" || a == "-g" || a == "--group" || a == "-G" ||
               a == "--supp-group" || a == "-w" || a == "--whitelist-environment") {
      ++i;
    } else if (a == "-u" || a == "--user") {
      user_flag = true;
      ++i;
    } else if (a.size() > 1 && a[0] == '-') {
      continue;
    } else if (user_flag) {
      command_at = i;
      break;
    }
  }
  if (code != nullptr) return ParseCodeWord(*code, inv, prog + " -c", st);
  if (command_at < w.size()) {
    AnalyzeCommand(Inner(inv, Tail(w, command_at), prog), st);
    return;
  }
  Emit(inv, w, {}, st);
}

// ---- option-table wrappers ------------------------------------------------

bool Contains(const std::vector<std::string_view>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Puts what a wrapper's options do into the invocation of what it runs.
void ApplyWrapperArgs(const WrapperArgs& r, Invocation* inv) {
  for (const std::string& file : r.writes) {
    if (!IsIgnoredTarget(file)) inv->writes.push_back(file);
  }
  if (!r.unjudged.empty()) Unjudged(inv, r.unjudged);
}

// nice, timeout, time, flock, script, exec, strace, sudo, ...
// (wrapper_args.h). A tracer is emitted itself, opaque, beside what it runs.
void PeelWrapper(const WrapperSpec& spec, Invocation inv, ParseState* st) {
  const std::vector<Word>& w = inv.words;
  const WrapperArgs r = ReadWrapperArgs(spec, w);
  const std::string name = Basename(w[0].text);
  if (!r.opaque.empty()) {
    Traits t;
    t.opaque = true;
    t.note = r.opaque;
    Emit(inv, w, t, st);
  }
  ApplyWrapperArgs(r, &inv);
  if (r.code) {
    // flock and script run their code with $SHELL, which may not be bash.
    return ParseShellCode("$SHELL", *r.code, inv, name + " -c", st);
  }
  if (r.no_command || !r.runs_command || r.command_at >= w.size()) {
    if (r.opaque.empty()) Emit(inv, w, {}, st);
    return;
  }
  AnalyzeCommand(Inner(inv, Tail(w, r.command_at), name), st);
}

// env [OPTION]... [-] [NAME=VALUE]... [COMMAND [ARG]...]: the options come
// first (getopt stops at the first operand), then `-` (as -i), the
// assignments and the command.
void PeelEnv(Invocation inv, ParseState* st) {
  const std::vector<Word>& w = inv.words;
  const WrapperArgs r = ReadWrapperArgs(*FindWrapper("env"), w);
  ApplyWrapperArgs(r, &inv);
  if (r.code) {
    // env -S splits its string into words by its own rules (quotes, `\_`,
    // `#`, `${VAR}`) and reads them as its own arguments again, options
    // first. A string of plain words split at blanks reads the same; any
    // other asks.
    const std::string& text = r.code->text;
    const bool plain = !r.code->Dynamic() && std::all_of(text.begin(), text.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) ||
             std::string_view(" \t_-=.,/:+@%").find(c) != std::string_view::npos;
    });
    std::vector<Word> words = {w[0]};
    for (std::string_view piece : SplitAny(text, " \t", /*skip_empty=*/true)) {
      words.push_back(Word::Literal(std::string(piece)));
    }
    for (size_t k = r.after_code; k < w.size(); ++k) words.push_back(w[k]);
    Invocation split = Inner(inv, std::move(words), "env -S");
    if (!plain) {
      Unjudged(&split, Cat("`env -S ", ShortenWord(text),
                           "` splits its string by env's own rules (quotes, \\_, #, $)"));
    }
    return AnalyzeCommand(std::move(split), st);
  }
  size_t i = r.command_at;
  if (i < w.size() && w[i].text == "-" && !w[i].Dynamic()) {
    Unjudged(&inv,
             "`env -` runs the command without the environment this terminal sets (pagers off, "
             "git's configured programs off)");
    ++i;
  }
  for (; i < w.size(); ++i) {
    // env itself reads NAME=VALUE from its argv, so quoting does not matter:
    // `env 'X=1' rm` and a literal argv {"env", "X=1", "rm"} both set X.
    const std::string& a = w[i].text;
    size_t eq = a.find('=');
    bool assignment = eq != std::string::npos && eq > 0 && w[i].marks.find_first_of("exEX") > eq;
    if (!assignment) break;
    RecordAssignment(w[i], st);
    inv.env.push_back(a);
  }
  if (i >= w.size()) {
    Emit(inv, w, {}, st);
    return;
  }
  AnalyzeCommand(Inner(inv, Tail(w, i), "env"), st);
}

void PeelXargs(Invocation inv, ParseState* st) {
  const std::vector<Word>& w = inv.words;
  static const std::vector<std::string_view> kArgLong = {
      "--arg-file",  "--delimiter", "--max-lines",       "--max-args",
      "--max-procs", "--max-chars", "--process-slot-var"};
  size_t i = 1;
  while (i < w.size() && !w[i].Dynamic()) {
    const std::string& a = w[i].text;
    if (a == "--") {
      ++i;
      break;
    }
    if (StartsWith(a, "--")) {
      bool takes = a.find('=') == std::string::npos && Contains(kArgLong, a);
      i += takes ? 2 : 1;
      continue;
    }
    if (a[0] != '-' || a.size() < 2) break;
    bool takes_next = false;
    for (size_t j = 1; j < a.size(); ++j) {
      if (std::string_view("iel").find(a[j]) != std::string_view::npos) break;
      if (std::string_view("adEILnPs").find(a[j]) != std::string_view::npos) {
        takes_next = j + 1 == a.size();
        break;
      }
    }
    i += takes_next ? 2 : 1;
  }
  if (i >= w.size()) {
    Emit(inv, w, {}, st);
    return;
  }
  Invocation next = Inner(inv, Tail(w, i), "xargs");
  next.forced_dynamic = true;
  next.forced_note = "xargs adds arguments it reads from stdin";
  next.stdin_piped = false;
  AnalyzeCommand(std::move(next), st);
}

// find's starting points: the words after its -H/-L/-P/-D/-O options and
// before the first expression word (-name, (, !).
std::vector<std::string> FindStartingPoints(const std::vector<Word>& w) {
  size_t i = 1;
  while (i < w.size() && (w[i].text == "-H" || w[i].text == "-L" || w[i].text == "-P" ||
                          w[i].text == "-D" || StartsWith(w[i].text, "-O"))) {
    i += w[i].text == "-D" ? 2 : 1;
  }
  std::vector<std::string> starts;
  for (; i < w.size(); ++i) {
    const std::string& a = w[i].text;
    if (!a.empty() && (a[0] == '-' || a == "(" || a == "!")) break;
    starts.push_back(a);
  }
  return starts;
}

void PeelFind(Invocation inv, ParseState* st) {
  const std::vector<Word>& w = inv.words;
  Traits t;
  std::vector<Invocation> inner;
  for (size_t i = 1; i < w.size(); ++i) {
    const std::string& a = w[i].text;
    bool writes = a == "-fprint" || a == "-fprint0" || a == "-fls" || a == "-fprintf";
    if (writes && i + 1 < w.size() && !IsIgnoredTarget(w[i + 1].text)) {
      t.writes.push_back(w[i + 1].text);
    }
    // -delete removes whatever it finds below each starting point: a write
    // to the directory itself ("DIR/"), which no write_paths glob covers (so
    // a rule needs writes = true and no paths).
    if (a == "-delete") {
      std::vector<std::string> starts = FindStartingPoints(w);
      if (starts.empty()) starts.push_back(".");
      for (const std::string& s : starts) {
        t.writes.push_back(!s.empty() && s.back() == '/' ? s : Cat(s, "/"));
      }
    }
    if (a != "-exec" && a != "-execdir" && a != "-ok" && a != "-okdir") continue;
    size_t end = i + 1;
    while (end < w.size() && w[end].text != ";" && w[end].text != "+") ++end;
    if (end >= w.size()) {
      st->Fail(Cat("`find ", a, "` has no terminating `;` or `+`"));
      break;
    }
    if (end > i + 1) {
      Invocation next = Inner(inv, Tail(w, i + 1, end), "find " + a);
      next.stdin_piped = false;
      for (const Word& x : next.words) {
        if (x.text.find("{}") != std::string::npos) {
          next.forced_dynamic = true;
          next.forced_note = "find puts each path it finds in place of {}";
        }
      }
      inner.push_back(std::move(next));
    }
    i = end;
  }
  Emit(inv, w, t, st);
  for (Invocation& next : inner) AnalyzeCommand(std::move(next), st);
}

void PeelEval(Invocation inv, ParseState* st) {
  const std::vector<Word>& w = inv.words;
  if (w.size() == 1) {
    Emit(inv, w, {}, st);
    return;
  }
  for (size_t i = 1; i < w.size(); ++i) {
    if (w[i].IsOneSubstitution()) return EmitSubstitutedCode(inv, w[i], st);
  }
  Word code;
  for (size_t i = 1; i < w.size(); ++i) {
    if (i > 1) code.Append(" ", kQuoted);
    code.text += w[i].text;
    code.marks += w[i].marks;
  }
  ParseCodeWord(code, inv, "eval", st);
}

// watch [options] COMMAND...: the words joined and run by `sh -c`, or
// exec'd as they are with -x/--exec.
void PeelWatch(Invocation inv, ParseState* st) {
  const std::vector<Word>& w = inv.words;
  static constexpr std::string_view kLongFlags[] = {
      "--beep",        "--color",   "--no-color", "--differences", "--errexit",
      "--chgexit",     "--precise", "--no-rerun", "--no-title",    "--no-wrap",
      "--no-linewrap", "--exec",    "--help",     "--version"};
  size_t i = 1;
  bool exec = false;
  while (i < w.size() && !w[i].Dynamic()) {
    const std::string& a = w[i].text;
    if (a == "--") {
      ++i;
      break;
    }
    if (StartsWith(a, "--")) {
      const std::string name = a.substr(0, a.find('='));
      const bool value = name.size() < a.size();
      if (name == "--interval" || name == "--equexit") {
        i += value ? 1 : 2;
        continue;
      }
      if (std::find(std::begin(kLongFlags), std::end(kLongFlags), name) == std::end(kLongFlags) ||
          (value && name != "--differences")) {
        Unjudged(&inv, Cat("`watch ", ShortenWord(a),
                           "` is an option this check does not know (write it in full)"));
      }
      exec = exec || name == "--exec";
      ++i;
      continue;
    }
    if (a[0] != '-' || a.size() < 2) break;
    bool takes_next = false;
    for (size_t j = 1; j < a.size(); ++j) {
      if (a[j] == 'x') exec = true;
      if (a[j] == 'n' || a[j] == 'q') {
        takes_next = j + 1 == a.size();
        break;
      }
      if (a[j] == 'd') break;  // -d[=permanent]
      if (std::string_view("bcCegprtwxhv").find(a[j]) == std::string_view::npos) {
        Unjudged(&inv,
                 Cat("`watch -", std::string(1, a[j]), "` is an option this check does not know"));
      }
    }
    i += takes_next ? 2 : 1;
  }
  if (i >= w.size()) {
    Emit(inv, w, {}, st);
    return;
  }
  if (exec) {
    AnalyzeCommand(Inner(inv, Tail(w, i), "watch"), st);
    return;
  }
  Word code;
  for (size_t k = i; k < w.size(); ++k) {
    if (k > i) code.Append(" ", kQuoted);
    code.text += w[k].text;
    code.marks += w[k].marks;
  }
  ParseShellCode("sh", code, inv, "watch", st);
}

// ---- interpreters -----------------------------------------------------------

struct InterpreterSpec {
  std::string_view code_letters;            // -c CODE, -e CODE
  std::vector<std::string_view> code_long;  // --eval CODE, -Command CODE
  std::string_view arg_letters;             // options that take a value
  std::vector<std::string_view> arg_long;
  std::string_view script_letters;            // python -m MOD, php -f FILE: not stdin
  std::vector<std::string_view> script_long;  // pwsh -File FILE
  bool case_insensitive = false;
};

const InterpreterSpec* FindInterpreter(std::string_view p) {
  static const InterpreterSpec kPython{"c", {}, "WX", {"--check-hash-based-pycs"}, "m", {}};
  static const InterpreterSpec kPerl{"eE", {}, "IMmxil0CdDV", {}, "", {}};
  static const InterpreterSpec kRuby{"e", {}, "IrCEFKTWx0", {}, "", {}};
  static const InterpreterSpec kNode{"ep",
                                     {"--eval", "--print"},
                                     "rC",
                                     {"--require", "--import", "--loader", "--experimental-loader",
                                      "--conditions", "--input-type", "--env-file"},
                                     "",
                                     {}};
  static const InterpreterSpec kPhp{"rBRE", {}, "cdztS", {}, "fF", {}};
  static const InterpreterSpec kLua{"e", {}, "l", {}, "", {}};
  static const InterpreterSpec kR{"e", {}, "", {}, "", {}};
  static const InterpreterSpec kOsascript{"e", {}, "l", {}, "", {}};
  static const InterpreterSpec kExpect{"c", {}, "", {}, "f", {}};
  static const InterpreterSpec kTcl{"", {}, "", {}, "", {}};
  static const InterpreterSpec kPwsh{
      "",
      {"-c", "-command", "--command", "-encodedcommand", "-ec", "-e", "-enc"},
      "",
      {"-executionpolicy", "-ex", "-ep", "-inputformat", "-outputformat", "-workingdirectory",
       "-wd", "-configurationname", "-settingsfile", "-windowstyle"},
      "",
      {"-f", "-file", "--file"},
      true};
  auto versioned = [p](std::string_view base) {
    if (!StartsWith(p, base)) return false;
    return std::all_of(p.begin() + static_cast<long>(base.size()), p.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
    });
  };
  if (versioned("python") || versioned("pypy")) return &kPython;
  if (versioned("perl")) return &kPerl;
  if (versioned("ruby")) return &kRuby;
  if (p == "node" || p == "nodejs" || p == "bun") return &kNode;
  if (versioned("php")) return &kPhp;
  if (versioned("lua") || p == "luajit") return &kLua;
  if (p == "Rscript" || p == "R") return &kR;
  if (p == "osascript") return &kOsascript;
  if (p == "expect") return &kExpect;
  if (versioned("tclsh") || versioned("wish")) return &kTcl;
  if (p == "pwsh" || p == "powershell" || p == "powershell.exe") return &kPwsh;
  return nullptr;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void AnalyzeInterpreter(const InterpreterSpec& spec, Invocation inv, ParseState* st) {
  const std::vector<Word>& w = inv.words;
  std::string prog = Basename(w[0].text);
  size_t i = 1;
  bool code = false, script = false;
  while (i < w.size() && !w[i].Dynamic() && !code && !script) {
    std::string a = spec.case_insensitive ? Lower(w[i].text) : w[i].text;
    std::string name = a.substr(0, a.find('='));
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-" || a.size() < 2 || a[0] != '-') break;
    if (Contains(spec.code_long, name)) {
      code = true;
    } else if (Contains(spec.script_long, name)) {
      script = true;
    } else if (StartsWith(a, "--") || spec.case_insensitive) {
      i += (name == a && Contains(spec.arg_long, name)) ? 2 : 1;
    } else {
      bool takes_next = false;
      for (size_t j = 1; j < a.size(); ++j) {
        if (spec.code_letters.find(a[j]) != std::string_view::npos) code = true;
        if (spec.script_letters.find(a[j]) != std::string_view::npos) script = true;
        if (code || script) break;
        if (spec.arg_letters.find(a[j]) != std::string_view::npos) {
          takes_next = j + 1 == a.size();
          break;
        }
      }
      if (!code && !script) i += takes_next ? 2 : 1;
    }
  }
  Traits t;
  if (code) {
    t.opaque = true;
    t.note = Cat("runs ", prog, " code given on the command line");
  } else if (!script && (i >= w.size() || IsPipedScript(w[i]))) {
    t.opaque = true;
    t.piped_code = i < w.size() ? true : inv.stdin_piped;
    if (i < w.size() && w[i].text == "-") t.piped_code = inv.stdin_piped;
    t.note = t.piped_code ? Cat(prog, " reads code from a pipe or the network")
                          : Cat(prog, " reads code from stdin");
  }
  Emit(inv, w, t, st);
}

bool IsAwk(std::string_view p) {
  return p == "awk" || p == "gawk" || p == "mawk" || p == "nawk" || p == "busybox-awk" ||
         p == "original-awk";
}

// Why the awk program text `p` may run commands, write files, load code or
// read files it names (system, getline, |, >, every @: @load, @include and
// gawk's indirect calls, which reach builtins: f = "sys" "tem"; @f("cmd");
// and ARGV/ARGC, whose files awk reads next); nullopt when it cannot.
std::optional<std::string> AwkProgramProblem(std::string_view p) {
  for (std::string_view risky : {"system", "getline", "|", ">", "@", "ARGV", "ARGC"}) {
    if (p.find(risky) != std::string_view::npos) {
      return Cat("the awk program holds `", risky,
                 "`, so it can run commands, write files or read files it names");
    }
  }
  return std::nullopt;
}

// awk's options as gawk, mawk and busybox read them, strictly: a program
// from a file (-f, -E, -i, -l, mawk's -W exec), output files (-d, -o, -p
// and their long forms) or any option not known here make the command
// opaque; -e/--source texts and the program operand are checked. Options
// after the program are read the same way, in case the awk permutes them.
void AnalyzeAwk(Invocation inv, ParseState* st) {
  const std::vector<Word>& w = inv.words;
  Traits t;
  auto opaque = [&t](std::string note) {
    if (t.opaque) return;
    t.opaque = true;
    t.note = std::move(note);
  };
  std::vector<Word> programs;
  bool program_operand = false, options = true;
  static constexpr std::string_view kFlags = "bcCghMNnOPrsStVY";
  static const char* const kLongFlags[] = {"--characters-as-bytes",
                                           "--traditional",
                                           "--copyright",
                                           "--gen-pot",
                                           "--help",
                                           "--usage",
                                           "--bignum",
                                           "--use-lc-numeric",
                                           "--non-decimal-data",
                                           "--optimize",
                                           "--no-optimize",
                                           "--posix",
                                           "--re-interval",
                                           "--sandbox",
                                           "--lint-old",
                                           "--version"};
  for (size_t i = 1; i < w.size(); ++i) {
    const std::string& a = w[i].text;
    if (w[i].Dynamic()) {
      if (!program_operand && options)
        opaque("the awk program or an option is known only at run time");
      if (!program_operand) program_operand = true;
      continue;
    }
    if (!options || a.size() < 2 || a[0] != '-') {
      if (!program_operand && programs.empty()) programs.push_back(w[i]);
      program_operand = true;
      continue;
    }
    if (a == "--") {
      options = false;
      continue;
    }
    if (a[1] == '-') {
      const std::string name = a.substr(0, a.find('='));
      const bool attached = name.size() < a.size();
      if (name == "--source") {
        if (attached) {
          programs.push_back(w[i].Substr(name.size() + 1));
        } else if (i + 1 < w.size()) {
          programs.push_back(w[++i]);
        }
      } else if (name == "--field-separator" || name == "--assign") {
        if (!attached) ++i;
      } else if (name == "--file" || name == "--exec" || name == "--include" || name == "--load") {
        opaque("awk runs a program from a file");
      } else if (std::find(std::begin(kLongFlags), std::end(kLongFlags), a) ==
                 std::end(kLongFlags)) {
        opaque(Cat("awk takes `", ShortenWord(a), "` as an option this check does not know"));
      }
      continue;
    }
    for (size_t j = 1; j < a.size(); ++j) {
      const char c = a[j];
      if (kFlags.find(c) != std::string_view::npos) continue;
      const bool rest = j + 1 < a.size();
      if (c == 'F' || c == 'v' || c == 'e') {
        if (c == 'e') {
          if (rest) {
            programs.push_back(w[i].Substr(j + 1));
          } else if (i + 1 < w.size()) {
            programs.push_back(w[i + 1]);
          }
        }
        if (!rest) ++i;
      } else if (c == 'f' || c == 'E' || c == 'i' || c == 'l') {
        opaque("awk runs a program from a file");
      } else if (c == 'W') {
        opaque("mawk's -W options can run a program from a file");
      } else {
        // -d, -o, -p write the variables, the program or a profile to a
        // file; -D debugs; others are unknown.
        opaque(Cat("awk takes `-", std::string(1, c), "`, which this check does not allow"));
      }
      break;
    }
  }
  const bool sandbox = std::any_of(
      w.begin(), w.end(), [](const Word& x) { return x.text == "--sandbox" || x.text == "-S"; });
  for (const Word& program : programs) {
    if (program.Dynamic()) {
      opaque("the awk program is known only at run time");
    } else if (std::optional<std::string> problem = AwkProgramProblem(program.text);
               problem && !sandbox) {
      opaque(*problem);
    }
  }
  Emit(inv, w, t, st);
}

void AnalyzeDeno(Invocation inv, ParseState* st) {
  const std::vector<Word>& w = inv.words;
  Traits t;
  if (w.size() > 1 && w[1].text == "eval") {
    t.opaque = true;
    t.note = "runs deno code given on the command line";
  } else if (w.size() > 1 && w[1].text == "run") {
    for (size_t i = 2; i < w.size(); ++i) {
      if (w[i].text.empty() || w[i].text[0] == '-') continue;
      t.opaque = t.piped_code = IsPipedScript(w[i]);
      if (t.opaque) t.note = "deno runs code from the network";
      break;
    }
  }
  Emit(inv, w, t, st);
}

void AnalyzeSource(Invocation inv, ParseState* st) {
  const std::vector<Word>& w = inv.words;
  Traits t;
  t.opaque = true;
  if (w.size() < 2) {
    t.note = "source without a file";
  } else {
    t.piped_code = IsPipedScript(w[1]);
    t.note = t.piped_code ? Cat("runs shell code from `", ShortenWord(w[1].text), "`")
                          : Cat("runs `", ShortenWord(w[1].text), "` in the current shell");
  }
  Emit(inv, w, t, st);
}

void AddTarget(const std::string& t, Traits* traits) {
  if (!IsIgnoredTarget(t)) traits->writes.push_back(t);
}

// GNU sed's argv as its getopt_long reads it: options anywhere before `--`
// (permuted), short ones clustered, long ones by their full name only.
struct SedArgs {
  std::vector<Word> scripts;  // -e/--expression values, and the script operand
  std::vector<Word> files;    // input files, which -i rewrites
  bool in_place = false;
  std::optional<Word> suffix;  // -iSUFFIX, --in-place=SUFFIX: each file's backup
  bool from_file = false;      // -f, --file
  bool sandbox = false;
  std::string unknown;  // a long option spelled otherwise ("" when none)
};

SedArgs ParseSedArgs(const std::vector<Word>& w) {
  SedArgs out;
  std::vector<Word> operands;
  bool script_option = false, options = true;
  bool operand_first = false;  // an operand came before any -e or -f
  std::vector<Word> late;      // option-like words after the first operand
  for (size_t i = 1; i < w.size(); ++i) {
    const std::string& a = w[i].text;
    if (!options || a.size() < 2 || a[0] != '-') {
      operand_first = operand_first || (operands.empty() && !script_option);
      operands.push_back(w[i]);
      continue;
    }
    if (!operands.empty() && a != "--") late.push_back(w[i]);
    if (a == "--") {
      options = false;
    } else if (a == "--sandbox") {
      out.sandbox = true;
    } else if (a == "--expression" || a == "--file" || a == "--line-length") {
      script_option = script_option || a != "--line-length";
      out.from_file = out.from_file || a == "--file";
      if (a == "--expression" && i + 1 < w.size()) out.scripts.push_back(w[i + 1]);
      ++i;
    } else if (StartsWith(a, "--expression=")) {
      script_option = true;
      out.scripts.push_back(w[i].Substr(13));
    } else if (StartsWith(a, "--file=")) {
      script_option = out.from_file = true;
    } else if (a == "--in-place" || StartsWith(a, "--in-place=")) {
      out.in_place = true;
      if (a.size() > 11) out.suffix = w[i].Substr(11);
    } else if (a[1] == '-') {
      // Long options by their full name only: getopt takes any unambiguous
      // prefix (--e=SCRIPT is --expression), so another spelling is unknown.
      static const char* const kPlain[] = {"--quiet",           "--silent",          "--debug",
                                           "--follow-symlinks", "--null-data",       "--posix",
                                           "--separate",        "--regexp-extended", "--unbuffered",
                                           "--binary",          "--zero-terminated", "--help",
                                           "--version"};
      if (!StartsWith(a, "--line-length=") &&
          std::find(std::begin(kPlain), std::end(kPlain), a) == std::end(kPlain)) {
        if (out.unknown.empty()) out.unknown = a;
      }
    } else {
      for (size_t j = 1; j < a.size(); ++j) {
        const char c = a[j];
        if (c == 'e' || c == 'f') {
          script_option = true;
          out.from_file = out.from_file || c == 'f';
          if (j + 1 < a.size()) {
            if (c == 'e') out.scripts.push_back(w[i].Substr(j + 1));
          } else if (i + 1 < w.size()) {
            if (c == 'e') out.scripts.push_back(w[i + 1]);
            ++i;
          }
          break;
        }
        if (c == 'l') {
          if (j + 1 == a.size()) ++i;
          break;
        }
        if (c == 'i') {  // -i[SUFFIX]
          out.in_place = true;
          if (j + 1 < a.size()) out.suffix = w[i].Substr(j + 1);
          break;
        }
      }
    }
  }
  // Without -e or -f the first operand is the script. With them, it is a
  // file, unless it came before them and getopt stops at the first operand
  // (POSIXLY_CORRECT): then it may be the script, so it counts as both.
  // There, the option-like words after it are files too.
  if ((!script_option || operand_first) && !operands.empty()) {
    out.scripts.push_back(operands.front());
  }
  for (size_t k = script_option ? 0 : 1; k < operands.size(); ++k) {
    out.files.push_back(operands[k]);
  }
  out.files.insert(out.files.end(), late.begin(), late.end());
  return out;
}

// sed runs commands (e, s///e), writes (w, W, s///w) and reads (r, R) what
// its script names, which no rule about sed sees (sed_script.h): such a
// script, a script from a file or one known only at run time makes the
// command opaque. --sandbox makes sed refuse all of them. -i rewrites each
// file and renames the original to its backup: FILE+SUFFIX, or, when SUFFIX
// holds a `*` or a `/`, a path built from it anywhere (-i'../x/*' writes
// ../x/FILE), which is opaque too.
void SedTraits(const std::vector<Word>& w, Traits* t) {
  const SedArgs args = ParseSedArgs(w);
  if (!args.unknown.empty()) {
    t->opaque = true;
    t->note =
        Cat("sed takes `", ShortenWord(args.unknown), "` as an option this check does not know");
    return;
  }
  if (args.in_place) {
    if (args.suffix &&
        (args.suffix->Dynamic() || args.suffix->text.find_first_of("*/") != std::string::npos)) {
      t->opaque = true;
      t->note = Cat("sed -i puts each file's backup at a path built from `",
                    ShortenWord(args.suffix->text), "`");
      return;
    }
    for (const Word& file : args.files) {
      AddTarget(file.text, t);
      if (args.suffix && !args.suffix->text.empty()) AddTarget(file.text + args.suffix->text, t);
    }
  }
  if (args.sandbox) return;
  if (args.from_file) {
    t->opaque = true;
    t->note = "sed runs a script from a file";
    return;
  }
  for (const Word& script : args.scripts) {
    if (script.Dynamic()) {
      t->opaque = true;
      t->note = "the sed script is known only at run time";
      return;
    }
    if (std::optional<std::string> problem = SedScriptProblem(script.text)) {
      t->opaque = true;
      t->note = Cat("the sed script ", *problem);
      return;
    }
  }
}

// ---- commands that write files --------------------------------------------

Traits WriteTraits(const std::string& prog, const std::vector<Word>& w) {
  Traits t;
  if (prog == "tee") {
    bool options = true;
    for (size_t i = 1; i < w.size(); ++i) {
      const std::string& a = w[i].text;
      if (options && a == "--") {
        options = false;
      } else if (!options || a.size() < 2 || a[0] != '-') {
        AddTarget(a, &t);
      }
    }
  } else if (prog == "dd") {
    for (const Word& x : w) {
      if (StartsWith(x.text, "of=")) AddTarget(x.text.substr(3), &t);
    }
  }
  return t;
}

// The argument of a builtin that names a variable, when it holds a subscript:
// bash evaluates a[...] there as arithmetic, and arithmetic can run commands
// (`test -v 'a[$(id)]'`, `printf -v 'a[$(id)]' x`, `declare 'a[$(id)]=1'`).
// let evaluates every argument as arithmetic. nullptr when there is none.
const Word* SubscriptedName(const std::string& prog, const std::vector<Word>& w) {
  static constexpr std::string_view kAnyArgument[] = {"declare",   "typeset", "local", "export",
                                                      "readonly",  "read",    "unset", "mapfile",
                                                      "readarray", "let"};
  static constexpr std::string_view kOptionValue[] = {"printf", "test", "[", "wait"};
  bool any =
      std::find(std::begin(kAnyArgument), std::end(kAnyArgument), prog) != std::end(kAnyArgument);
  bool option =
      std::find(std::begin(kOptionValue), std::end(kOptionValue), prog) != std::end(kOptionValue);
  if (!any && !option) return nullptr;
  for (size_t i = 1; i < w.size(); ++i) {
    bool named = any || w[i - 1].text == "-v" || w[i - 1].text == "-R" || w[i - 1].text == "-p";
    if (!named) continue;
    if (prog == "let" || w[i].text.find('[') != std::string::npos) return &w[i];
  }
  return nullptr;
}

// Whether the builtin `prog` with words `w` sets shell variables as an
// assignment does: `printf -v NAME`, `read`, `mapfile`/`readarray`,
// `getopts`, and declare/typeset/local/export/readonly with NAME=value.
// Such a command is judged as a bare assignment (no rule can allow it):
// `printf -v PS1 %s '$(cmd)'` would run cmd at the next prompt.
bool SetsShellVariables(const std::string& prog, const std::vector<Word>& w) {
  if (prog == "read" || prog == "mapfile" || prog == "readarray" || prog == "getopts") return true;
  if (prog == "printf") {
    for (size_t i = 1; i < w.size() && !w[i].text.empty() && w[i].text[0] == '-'; ++i) {
      if (w[i].text == "--") break;
      if (StartsWith(w[i].text, "-v")) return true;
    }
    return false;
  }
  if (prog == "declare" || prog == "typeset" || prog == "local" || prog == "export" ||
      prog == "readonly") {
    for (size_t i = 1; i < w.size(); ++i) {
      if (w[i].text.find('=') != std::string::npos) return true;
    }
  }
  return false;
}

void RecordDeclarations(const std::vector<Word>& w, ParseState* st) {
  for (size_t i = 1; i < w.size(); ++i) {
    if (IsAssignment(w[i])) RecordAssignment(w[i], st);
  }
}

// A command word that is a glob (/bin/r?, /???/rm) may name any program
// whose name it matches; deny rules check each one the built-ins know.
void EmitGlobCommand(Invocation inv, ParseState* st) {
  const Word& w0 = inv.words[0];
  Traits t;
  t.dynamic = true;
  t.note = Cat("the command word `", ShortenWord(w0.text), "` is a glob pattern");
  Emit(inv, inv.words, t, st);
  if (inv.is_variant) return;
  std::string pattern = Basename(w0.text);
  for (const std::string& name : BuiltinProgramNames()) {
    if (fnmatch(pattern.c_str(), name.c_str(), 0) != 0) continue;
    Invocation v = inv;
    v.words[0] = Word::Literal(name);
    v.is_variant = true;
    v.forced_dynamic = true;
    v.forced_note = Cat("assumes the glob `", ShortenWord(w0.text), "` is `", name, "`");
    AnalyzeCommand(std::move(v), st);
  }
}

// bash's `time` keyword, not GNU time: it takes -p only, and any other word
// is the command (`time -v ls` runs a program named -v).
void PeelTimeKeyword(Invocation inv, ParseState* st) {
  size_t at = 1;
  if (at < inv.words.size() && inv.words[at].text == "-p") ++at;
  if (at < inv.words.size() && inv.words[at].text == "--") ++at;
  if (at >= inv.words.size()) return Emit(inv, inv.words, {}, st);
  AnalyzeCommand(Inner(inv, Tail(inv.words, at), "time"), st);
}

using Peeler = std::function<void(Invocation, ParseState*)>;

// What peels `inv`, a command named `prog` that runs another command (a
// shell, a wrapper, an interpreter, ...); nullptr for any other program.
Peeler PeelerFor(const std::string& prog, const Invocation& inv) {
  if (IsShell(prog)) return PeelShell;
  if (prog == "su" || prog == "runuser") return PeelSu;
  if (prog == "env") return PeelEnv;
  if (prog == "xargs") return PeelXargs;
  if (prog == "find") return PeelFind;
  if (prog == "eval") return PeelEval;
  if (prog == "watch") return PeelWatch;
  if (prog == "source" || prog == ".") return AnalyzeSource;
  if (prog == "deno") return AnalyzeDeno;
  if (IsAwk(prog)) return AnalyzeAwk;
  // The keyword only where the shell reads a command line (not after
  // `command`, `env` or `nice`, which run /usr/bin/time).
  const bool at_line_start = inv.via.empty() || EndsWith(inv.via.back(), " -c") ||
                             inv.via.back() == "eval" || inv.via.back() == "watch";
  if (at_line_start && inv.words[0].text == "time" &&
      inv.words[0].marks.find_first_not_of(kLiteral) == std::string::npos) {
    return PeelTimeKeyword;
  }
  if (const WrapperSpec* spec = FindWrapper(prog)) {
    return [spec](Invocation i, ParseState* s) { PeelWrapper(*spec, std::move(i), s); };
  }
  if (const InterpreterSpec* spec = FindInterpreter(prog)) {
    return [spec](Invocation i, ParseState* s) { AnalyzeInterpreter(*spec, std::move(i), s); };
  }
  return nullptr;
}

void Dispatch(Invocation inv, ParseState* st) {
  std::string prog = Basename(inv.words[0].text);
  if (Peeler peel = PeelerFor(prog, inv)) {
    // ./nice is whatever the agent put there: what it runs is still found
    // (for deny rules), but nothing it leads to is allowed.
    if (!IsTrustedProgramPath(inv.words[0].text)) {
      Unjudged(&inv, Cat("`", ShortenWord(inv.words[0].text), "` is not the system's ", prog));
    }
    return peel(std::move(inv), st);
  }
  if (prog == "export" || prog == "declare" || prog == "typeset" || prog == "local" ||
      prog == "readonly") {
    RecordDeclarations(inv.words, st);
  }
  if (SetsShellVariables(prog, inv.words)) st->out->assignments.push_back(Joined(inv.words));
  Traits t = WriteTraits(prog, inv.words);
  if (prog == "sed" || prog == "gsed") SedTraits(inv.words, &t);
  OptionEffects effects = ProgramOptionEffects(prog, Texts(inv.words));
  for (const std::string& file : effects.writes) AddTarget(file, &t);
  if (!effects.runs.empty() && !t.opaque) {
    t.opaque = true;
    t.note = std::move(effects.runs);
  }
  if (const Word* name = SubscriptedName(prog, inv.words)) {
    t.opaque = true;
    t.note =
        Cat("`", ShortenWord(name->text), "` is evaluated as arithmetic, which can run commands");
  }
  Emit(inv, inv.words, t, st);
}

}  // namespace

// bash expands a `~` in an argument that looks like an assignment (NAME=,
// NAME+=, NAME[...]=, unquoted) right after the `=` and after each `:`:
// `cat a=~/x` reads a=/home/u/x, which as written would be a relative path.
// Such a tilde is marked as an expansion, so the word counts as known only
// at run time.
void MarkAssignmentTildes(Word* w) {
  const std::string& t = w->text;
  auto literal = [&](size_t k) { return k < t.size() && w->marks[k] == kLiteral; };
  size_t i = 0;
  if (!literal(0) || !(std::isalpha(static_cast<unsigned char>(t[0])) || t[0] == '_')) return;
  while (literal(i) && (std::isalnum(static_cast<unsigned char>(t[i])) || t[i] == '_')) ++i;
  if (literal(i) && t[i] == '[') {
    // bash pairs the subscript's brackets and skips its quotes (a[x[1]]=,
    // a["]"]=); rather than follow it, every unquoted ~ after any `=`
    // counts as expanded.
    const size_t eq = t.find('=', i);
    if (eq == std::string::npos) return;
    for (size_t k = eq + 1; k < t.size(); ++k) {
      if (t[k] == '~' && literal(k)) w->marks[k] = kExpStart;
    }
    return;
  }
  if (literal(i) && t[i] == '+') ++i;
  if (!literal(i) || t[i] != '=') return;
  for (size_t k = i + 1; k < t.size(); ++k) {
    const bool after = k == i + 1 || (t[k - 1] == ':' && w->marks[k - 1] == kLiteral);
    if (after && t[k] == '~' && literal(k)) w->marks[k] = kExpStart;
  }
}

// Whether the unquoted glob `w` can expand to a name starting with `-`,
// which the program then takes as an option: a planted file `--output=x`
// or `-r` turns `git log *` or `grep k *` into another command.
bool GlobMayBeAnOption(const Word& w) {
  if (w.text.empty() || !w.HasGlob()) return false;
  const char c = w.text[0];
  return c == '-' || (w.marks[0] == kLiteral && (c == '*' || c == '?' || c == '['));
}

void AnalyzeCommand(Invocation inv, ParseState* st) {
  if (++st->steps > kMaxSteps) {
    st->FailLimit("steps", Cat("the line takes more than ", kMaxSteps, " steps to analyze"));
    return;
  }
  if (inv.depth > kMaxDepth) {
    st->FailLimit("depth",
                  Cat("the line nests wrappers and code strings more than ", kMaxDepth, " deep"));
    return;
  }
  size_t i = 0;
  if (inv.strip_assignments) {
    for (; i < inv.words.size() && IsAssignment(inv.words[i]); ++i) {
      RecordAssignment(inv.words[i], st);
      inv.env.push_back(inv.words[i].text);
    }
  }
  if (i == inv.words.size()) {
    // Assignments alone change the shell's variables; after bash's `time`
    // keyword too (time PATH=/x assigns), unlike after a program.
    bool shell_level = std::all_of(inv.via.begin(), inv.via.end(),
                                   [](const std::string& v) { return v == "time"; });
    if (!shell_level) {
      // After a program (command, nice, sudo...) x=y is the program's name.
      Invocation named = inv;
      named.env.clear();
      return Emit(named, named.words, {}, st);
    }
    for (const Word& w : inv.words) st->out->assignments.push_back(w.text);
    if (!inv.writes.empty() || !inv.hidden_expansion.empty()) Emit(inv, {}, {}, st);
    return;
  }
  // VAR=$X cmd: the value is only known at run time, like an argument's.
  for (size_t k = 0; k < i && inv.hidden_expansion.empty(); ++k) {
    const Word& a = inv.words[k];
    if (a.Substr(a.text.find('=') + 1).Dynamic()) inv.hidden_expansion = a.raw;
  }
  inv.words.erase(inv.words.begin(), inv.words.begin() + static_cast<long>(i));
  inv.strip_assignments = true;
  for (size_t k = 1; k < inv.words.size(); ++k) MarkAssignmentTildes(&inv.words[k]);
  // Programs whose every option only changes how they print what they were
  // given (echo -n -e, cat -A -n, head/tail -c -n -v -q -z -f): a planted
  // option name cannot make them run, write or read anything else.
  const std::string& name = inv.words[0].text;
  const bool options_harmless = name == "echo" || name == "cat" || name == "head" || name == "tail";
  // Up to the `--` that ends the options (not one that is an option's value:
  // in `grep -e -- *` the `*` still names options).
  const size_t options_end = options_harmless ? 0 : OptionsEnd(Texts(inv.words));
  for (size_t k = 1; k < options_end; ++k) {
    if (!inv.forced_dynamic && GlobMayBeAnOption(inv.words[k])) {
      inv.forced_dynamic = true;
      inv.forced_note =
          Cat("`", ShortenWord(inv.words[k].raw), "` may expand to a file named like an ",
              "option (-r, --output=...); write ./", ShortenWord(inv.words[k].raw), " instead");
    }
  }
  const Word& w0 = inv.words[0];
  if (w0.Dynamic()) {
    Emit(inv, inv.words, {}, st);
    return;
  }
  if (w0.HasGlob()) return EmitGlobCommand(std::move(inv), st);
  Dispatch(std::move(inv), st);
}

}  // namespace termbridge::policy::internal
