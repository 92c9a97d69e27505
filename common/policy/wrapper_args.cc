#include "common/policy/wrapper_args.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/policy/text.h"

namespace termbridge::policy::internal {

using Names = std::vector<std::string_view>;

// One wrapper: its options as getopt reads them (short ones by letter, long
// ones by their full name) and what some of them do to the command it runs.
struct WrapperSpec {
  std::string_view name;
  std::string_view flags;        // short options without a value
  std::string_view arg_letters;  // short options with a value, attached or the next word
  std::string_view opt_letters;  // short options with an attached value only (script -tFILE)
  Names long_flags;
  Names arg_long;    // --name VALUE or --name=VALUE
  Names opt_long;    // --name or --name=VALUE
  Names no_command;  // after these nothing runs (command -v, ionice -p PID)
  Names code;        // their value is shell code (flock -c CODE)
  Names writes;      // their value is a file the wrapper writes (time -o FILE)
  std::vector<std::pair<Names, std::string_view>> unjudged;  // options the check cannot follow
  int operands = 0;  // timeout DURATION, flock FILE, taskset MASK
  bool runs_command = true;
  bool permutes = false;             // options may follow operands (script FILE -c CODE)
  bool writes_operand = false;       // flock FILE (opened with O_CREAT), script FILE
  std::string_view default_operand;  // what script writes when no FILE is given
  bool code_after_operand = false;   // flock FILE -c CODE
  std::string_view writes_file;      // nohup writes nohup.out
  std::string_view unjudged_always;
  std::string_view opaque;
  bool strict = true;  // an unknown option asks; false where a deny rule decides anyway
};

namespace {

constexpr std::string_view kEnvGone =
    "runs the command without the environment this terminal sets (pagers off, git's "
    "configured programs off)";
constexpr std::string_view kRenames =
    "runs the program under another name, which some programs act on";

// A fluent builder keeps the table readable without C++20's designated
// initializers.
struct Spec {
  WrapperSpec s;
  explicit Spec(std::string_view name) { s.name = name; }
  Spec& Flags(std::string_view v, Names l = {}) {
    s.flags = v;
    s.long_flags = std::move(l);
    return *this;
  }
  Spec& Args(std::string_view v, Names l = {}) {
    s.arg_letters = v;
    s.arg_long = std::move(l);
    return *this;
  }
  Spec& Optional(std::string_view v, Names l = {}) {
    s.opt_letters = v;
    s.opt_long = std::move(l);
    return *this;
  }
  Spec& NoCommand(Names v) {
    s.no_command = std::move(v);
    return *this;
  }
  Spec& Code(Names v) {
    s.code = std::move(v);
    return *this;
  }
  Spec& Writes(Names v) {
    s.writes = std::move(v);
    return *this;
  }
  Spec& Unjudged(Names options, std::string_view why) {
    s.unjudged.emplace_back(std::move(options), why);
    return *this;
  }
  Spec& Operands(int n) {
    s.operands = n;
    return *this;
  }
  operator WrapperSpec() const { return s; }  // NOLINT(google-explicit-constructor)
};

const std::vector<WrapperSpec>& WrapperSpecs() {
  static const auto* specs = [] {
    auto* v = new std::vector<WrapperSpec>();
    const Names kHelp = {"--help", "--version"};
    auto with_help = [&kHelp](Names l) {
      l.insert(l.end(), kHelp.begin(), kHelp.end());
      return l;
    };
    // coreutils env: getopt stops at the first operand; NAME=VALUE words
    // and `-` (as -i) follow the options (PeelEnv reads those).
    v->push_back(Spec("env")
                     .Flags("i0v", with_help({"--ignore-environment", "--null", "--debug",
                                              "--list-signal-handling"}))
                     .Args("uCSa", {"--unset", "--chdir", "--split-string", "--argv0"})
                     .Optional("", {"--block-signal", "--default-signal", "--ignore-signal"})
                     .Code({"-S", "--split-string"})
                     .Unjudged({"-i", "--ignore-environment", "-u", "--unset"}, kEnvGone)
                     .Unjudged({"-C", "--chdir"},
                               "runs the command in another directory (write `cd DIR && ...`)")
                     .Unjudged({"-a", "--argv0"}, kRenames));
    // `nice -5 cmd` is the old form of -n 5.
    v->push_back(Spec("nice").Flags("0123456789", kHelp).Args("n", {"--adjustment"}));
    WrapperSpec nohup = Spec("nohup").Flags("", kHelp);
    nohup.writes_file = "nohup.out";
    v->push_back(nohup);
    v->push_back(Spec("timeout")
                     .Flags("v", with_help({"--foreground", "--preserve-status", "--verbose"}))
                     .Args("sk", {"--signal", "--kill-after"})
                     .Operands(1));
    v->push_back(Spec("stdbuf").Flags("", kHelp).Args("ioe", {"--input", "--output", "--error"}));
    v->push_back(Spec("ionice")
                     .Flags("t", with_help({"--ignore"}))
                     .Args("cnpPu", {"--class", "--classdata", "--pid", "--pgid", "--uid"})
                     .NoCommand({"-p", "-P", "-u", "--pid", "--pgid", "--uid"}));
    WrapperSpec chroot =
        Spec("chroot").Flags("", with_help({"--skip-chdir"})).Args("", {"--userspec", "--groups"});
    chroot.operands = 1;
    chroot.unjudged_always = "runs the command under another root directory";
    v->push_back(chroot);
    v->push_back(Spec("setsid").Flags("cfwhV", with_help({"--ctty", "--fork", "--wait"})));
    v->push_back(Spec("taskset")
                     .Flags("achpV", with_help({"--all-tasks", "--cpu-list", "--pid"}))
                     .NoCommand({"-p", "--pid"})
                     .Operands(1));
    v->push_back(
        Spec("chrt")
            .Flags("abdefiormpRvhV",
                   with_help({"--all-tasks", "--batch", "--deadline", "--ext", "--fifo", "--idle",
                              "--other", "--rr", "--max", "--pid", "--reset-on-fork", "--verbose"}))
            .Args("TPD", {"--sched-runtime", "--sched-period", "--sched-deadline"})
            .NoCommand({"-p", "--pid", "-m", "--max"})
            .Operands(1));
    // bash's exec: -c empties the environment, -a sets argv[0].
    v->push_back(Spec("exec")
                     .Flags("cl")
                     .Args("a")
                     .Unjudged({"-c"}, kEnvGone)
                     .Unjudged({"-a", "-l"}, kRenames));
    // command -p looks the program up in a default PATH, past a terminal's
    // git guard (broker/git_guard/git_guard.h).
    v->push_back(Spec("command")
                     .Flags("pvV")
                     .NoCommand({"-v", "-V"})
                     .Unjudged({"-p"}, "looks the program up in the system's default PATH"));
    v->push_back(Spec("builtin"));
    // GNU time (bash's `time` keyword takes -p only).
    v->push_back(
        Spec("time")
            .Flags("apqvV", with_help({"--append", "--portability", "--quiet", "--verbose"}))
            .Args("fo", {"--format", "--output"})
            .Writes({"-o", "--output"}));
    v->push_back(Spec("busybox"));
    v->push_back(Spec("unbuffer").Flags("p"));
    WrapperSpec flock =
        Spec("flock")
            .Flags("sxunoFhVe", with_help({"--shared", "--exclusive", "--unlock", "--nonblock",
                                           "--nb", "--close", "--no-fork", "--verbose"}))
            .Args("wEc", {"--wait", "--timeout", "--conflict-exit-code", "--command"})
            .Code({"-c", "--command"})
            .Operands(1);
    flock.writes_operand = true;
    flock.code_after_operand = true;
    v->push_back(flock);
    // util-linux script permutes: `script out.txt -qc CODE`. Its file
    // operand ("typescript" when none) and every log file are writes.
    WrapperSpec script =
        Spec("script")
            .Flags("aefqhV", with_help({"--append", "--return", "--flush", "--force", "--quiet"}))
            .Args("IOBTmEoc", {"--log-in", "--log-out", "--log-io", "--log-timing",
                               "--logging-format", "--echo", "--output-limit", "--command"})
            .Optional("t", {"--timing"})
            .Code({"-c", "--command"})
            .Writes({"-I", "-O", "-B", "-T", "-t", "--log-in", "--log-out", "--log-io",
                     "--log-timing", "--timing"});
    script.runs_command = false;
    script.permutes = true;
    script.writes_operand = true;
    script.default_operand = "typescript";
    v->push_back(script);
    // Tracers can change what the traced program does (strace -E sets its
    // environment, -e inject= fakes its system calls, -p attaches to other
    // processes) and write files (-o): the whole line asks. The command is
    // still peeled so that deny rules see it.
    for (std::string_view tracer : {"strace", "ltrace"}) {
      WrapperSpec t = Spec(tracer).Args(tracer == "strace" ? "abeEIoOpPsSuUX" : "aAeEfnoOpsSuxX");
      t.opaque =
          "a tracer can change what the program it runs does (-E, -e inject) and write "
          "files (-o)";
      t.strict = false;
      v->push_back(t);
    }
    // Privilege wrappers are denied by builtin.privilege whatever their
    // options; the command is peeled so that the reason names it.
    auto lenient = [v](WrapperSpec s) {
      s.strict = false;
      v->push_back(std::move(s));
    };
    lenient(Spec("sudo")
                .Args("CDghpRrTtUu", {"--close-from", "--chdir", "--group", "--host", "--prompt",
                                      "--chroot", "--role", "--command-timeout", "--type",
                                      "--other-user", "--user", "--login-class"})
                .NoCommand({"-e", "-K", "-k", "-l", "-L", "-v", "-V"}));
    WrapperSpec sudoedit = Spec("sudoedit");
    sudoedit.runs_command = false;
    lenient(sudoedit);
    lenient(Spec("doas").Args("uC").NoCommand({"-L"}));
    lenient(Spec("pkexec").Args("", {"--user"}));
    lenient(
        Spec("run0").Args("ugD", {"--user", "--group", "--nice", "--chdir", "--setenv", "--unit",
                                  "--property", "--description", "--slice", "--machine"}));
    return v;
  }();
  return *specs;
}

bool In(const Names& names, std::string_view s) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

bool HasLetter(std::string_view letters, char c) {
  return letters.find(c) != std::string_view::npos;
}

}  // namespace

const WrapperSpec* FindWrapper(std::string_view prog) {
  for (const WrapperSpec& s : WrapperSpecs()) {
    if (s.name == prog) return &s;
  }
  return nullptr;
}

WrapperArgs ReadWrapperArgs(const WrapperSpec& spec, const std::vector<Word>& w) {
  WrapperArgs r;
  r.runs_command = spec.runs_command;
  r.opaque = std::string(spec.opaque);
  const std::string prog(spec.name);
  auto unjudged = [&r, &prog](std::string_view option, std::string_view why) {
    if (r.unjudged.empty()) r.unjudged = Cat("`", prog, " ", ShortenWord(option), "` ", why);
  };
  auto unknown = [&](std::string_view option) {
    if (spec.strict) unjudged(option, "is an option this check does not know (write it in full)");
  };
  // What option `name` does, given its value (nullptr: none).
  auto apply = [&](std::string_view name, const Word* value) {
    if (In(spec.no_command, name)) r.no_command = true;
    for (const auto& [options, why] : spec.unjudged) {
      if (In(options, name)) unjudged(value ? Cat(name, " ", value->text) : std::string(name), why);
    }
    if (value == nullptr) return;
    if (In(spec.code, name)) r.code = *value;  // getopt keeps the last
    if (In(spec.writes, name)) r.writes.push_back(value->text);
  };
  std::vector<size_t> operands;
  size_t i = 1;
  bool options_end = false;
  for (; i < w.size(); ++i) {
    // Past the code, the words are the code's arguments; a permuting
    // wrapper (script) reads options on.
    if (r.code && !spec.permutes) break;  // r.after_code is i
    const Word& word = w[i];
    const std::string& a = word.text;
    if (word.Dynamic()) {
      // The command (or an option) is known only at run time; where options
      // may follow operands, it may be an option that writes a file.
      if (spec.permutes) unjudged(a, "may expand to an option; it is known only at run time");
      break;
    }
    if (options_end || a.size() < 2 || a[0] != '-') {
      if (!spec.permutes) break;
      operands.push_back(i);
      continue;
    }
    if (a == "--") {
      if (!spec.permutes) {
        ++i;
        break;
      }
      options_end = true;
      continue;
    }
    if (a[1] == '-') {
      const size_t eq = a.find('=');
      const std::string name = a.substr(0, eq);
      if (In(spec.long_flags, name) && eq == std::string::npos) {
        apply(name, nullptr);
      } else if (In(spec.opt_long, name)) {
        Word value = word.Substr(eq == std::string::npos ? a.size() : eq + 1);
        apply(name, eq == std::string::npos ? nullptr : &value);
      } else if (In(spec.arg_long, name)) {
        if (eq != std::string::npos) {
          Word value = word.Substr(eq + 1);
          apply(name, &value);
        } else if (i + 1 < w.size()) {
          ++i;
          apply(name, &w[i]);
        }
      } else {
        unknown(name);
      }
      continue;
    }
    for (size_t j = 1; j < a.size(); ++j) {
      const char c = a[j];
      const std::string name = Cat("-", std::string(1, c));
      if (HasLetter(spec.opt_letters, c)) {
        Word value = word.Substr(j + 1);
        apply(name, j + 1 < a.size() ? &value : nullptr);
        break;
      }
      if (HasLetter(spec.arg_letters, c)) {
        if (j + 1 < a.size()) {
          Word value = word.Substr(j + 1);
          apply(name, &value);
        } else if (i + 1 < w.size()) {
          ++i;
          apply(name, &w[i]);
        }
        break;
      }
      if (!HasLetter(spec.flags, c)) {
        unknown(name);
        break;
      }
      apply(name, nullptr);
    }
  }
  if (r.code && !spec.permutes) r.after_code = i;
  if (spec.permutes) {
    r.command_at = w.size();
    if (spec.writes_operand) {
      r.writes.push_back(operands.empty() ? std::string(spec.default_operand)
                                          : w[operands[0]].text);
    }
  } else {
    const size_t first_operand = i;
    i += static_cast<size_t>(spec.operands);
    r.command_at = std::min(i, w.size());
    if (spec.writes_operand && spec.operands > 0 && first_operand < w.size()) {
      const std::string& file = w[first_operand].text;
      // `flock 9`: a file descriptor number, with no command.
      const bool fd = !file.empty() && std::all_of(file.begin(), file.end(),
                                                   [](char c) { return c >= '0' && c <= '9'; });
      if (!fd || i < w.size()) r.writes.push_back(file);
    }
    // flock FILE -c CODE: the code option may follow the file.
    if (!r.code && spec.code_after_operand && i + 1 < w.size() && In(spec.code, w[i].text)) {
      r.code = w[i + 1];
      r.after_code = i + 2;
    }
  }
  if (!spec.writes_file.empty() && !r.no_command) r.writes.emplace_back(spec.writes_file);
  if (!spec.unjudged_always.empty() && r.unjudged.empty()) {
    r.unjudged = Cat("`", prog, "` ", spec.unjudged_always);
  }
  return r;
}

}  // namespace termbridge::policy::internal
