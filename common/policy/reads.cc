// Per-program read tables. Each known program has an option table in the
// style of its getopt_long: which short letters and long names take a value,
// which of those values name a file it reads, which options make it walk its
// operands, and which make it read names from a file (unknown reads). Long
// options match by unambiguous prefix as GNU does; an ambiguous or unknown
// long option is taken as a flag, so the next word stays an operand (read).
#include "common/policy/reads.h"

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "common/policy/text.h"

namespace termbridge::policy::internal {
namespace {

using Names = std::vector<std::string_view>;

struct Spec {
  std::string_view value_short;     // take a value that is not a path (-n 5)
  std::string_view file_short;      // take a value that is a file read (-f FILE)
  std::string_view optional_short;  // an attached value only (-I[FMT])
  std::string_view walk_short;      // make operands walks (-r)
  std::string_view follow_short;    // walks follow symlinks (-R, -L)
  std::string_view unknown_short;   // read names from the operands (sha256sum -c)
  Names value_long, file_long, walk_long, follow_long, unknown_long;
  // Follow symlinks when walking, without making a walk (ls -L with -R).
  std::string_view deref_short = "";
  Names deref_long = {};
};

struct Parsed {
  std::vector<std::string> operands;
  std::vector<std::string> files;  // values of file options
  bool walk = false;
  bool follow = false;
  std::string unknown;  // the option that makes reads unknown
  std::vector<std::pair<char, std::string>> short_values;
  std::vector<std::pair<std::string, std::string>> long_values;  // full name, value
};

bool In(const Names& names, std::string_view n) {
  return std::find(names.begin(), names.end(), n) != names.end();
}

// The long option `given` names: its exact name in the table; "" when the
// table does not list it. `*abbreviation` is set when it is only a prefix of
// listed names: getopt takes a prefix as the one option it abbreviates only
// if the program has no option of exactly that name, and the tables do not
// list every flag (grep's --binary is a flag of its own, not --binary-files
// swallowing the next word), so an abbreviation is never resolved here.
std::string ResolveLong(const Spec& s, std::string_view given, bool* abbreviation) {
  *abbreviation = false;
  for (const Names* names : {&s.value_long, &s.file_long, &s.walk_long, &s.follow_long,
                             &s.unknown_long, &s.deref_long}) {
    for (std::string_view n : *names) {
      if (n == given) return std::string(n);
      if (StartsWith(n, given)) *abbreviation = true;
    }
  }
  return "";
}

// Notes in `out` an option it cannot read (an abbreviated long option).
Parsed Parse(const SimpleCommand& c, CommandReads* out, const Spec& s) {
  Parsed p;
  const std::vector<std::string>& a = c.argv;
  bool options = true;
  for (size_t i = 1; i < a.size(); ++i) {
    const std::string& w = a[i];
    if (!options || w.size() < 2 || w[0] != '-') {
      if (w != "-") p.operands.push_back(w);
      continue;
    }
    if (w == "--") {
      options = false;
      continue;
    }
    if (w[1] == '-') {
      size_t eq = w.find('=');
      bool abbreviation = false;
      std::string name = ResolveLong(
          s, std::string_view(w).substr(2, eq == std::string::npos ? std::string::npos : eq - 2),
          &abbreviation);
      if (abbreviation && out->unknown.empty()) {
        out->unknown = Cat(c.program, " ", w.substr(0, eq),
                           ": the start of longer option names, which the program may read as "
                           "one of them or as an option of its own; write it in full");
      }
      if (name.empty()) continue;
      bool file = In(s.file_long, name);
      std::string value;
      if (eq != std::string::npos) {
        value = w.substr(eq + 1);
      } else if ((file || In(s.value_long, name)) && i + 1 < a.size()) {
        value = a[++i];
      }
      if (file) p.files.push_back(value);
      if (In(s.walk_long, name)) p.walk = true;
      if (In(s.follow_long, name)) p.walk = p.follow = true;
      if (In(s.deref_long, name)) p.follow = true;
      if (In(s.unknown_long, name)) p.unknown = Cat("--", name);
      p.long_values.emplace_back(name, value);
      continue;
    }
    for (size_t k = 1; k < w.size(); ++k) {
      char ch = w[k];
      bool file = s.file_short.find(ch) != std::string_view::npos;
      if (file || s.value_short.find(ch) != std::string_view::npos) {
        std::string value = w.substr(k + 1);
        if (value.empty() && i + 1 < a.size()) value = a[++i];
        if (file) p.files.push_back(value);
        p.short_values.emplace_back(ch, value);
        break;
      }
      if (s.optional_short.find(ch) != std::string_view::npos) break;
      if (s.walk_short.find(ch) != std::string_view::npos) p.walk = true;
      if (s.follow_short.find(ch) != std::string_view::npos) p.walk = p.follow = true;
      if (s.deref_short.find(ch) != std::string_view::npos) p.follow = true;
      if (s.unknown_short.find(ch) != std::string_view::npos) p.unknown = Cat("-", ch);
    }
  }
  return p;
}

void Add(CommandReads* out, const std::string& word, bool walk, bool follow) {
  if (word.empty()) return;
  out->reads.push_back(FileRead{word, walk, walk && follow});
}

// Operands read (or walked when `p.walk`), `dot` when there is none.
void Operands(const Parsed& p, CommandReads* out, const char* dot = nullptr) {
  for (const std::string& o : p.operands) Add(out, o, p.walk, p.follow);
  if (p.operands.empty() && dot != nullptr) Add(out, dot, p.walk, p.follow);
  for (const std::string& f : p.files) Add(out, f, false, false);
}

const Spec kGrep = {
    "eABCmdD",
    "f",
    "",
    "r",
    "R",
    "",
    {"regexp", "after-context", "before-context", "context", "max-count", "directories", "devices",
     "label", "include", "exclude", "exclude-dir", "binary-files", "group-separator"},
    {"file", "exclude-from"},
    {"recursive"},
    {"dereference-recursive"},
    {}};

void Grep(const SimpleCommand& c, CommandReads* out) {
  Parsed p = Parse(c, out, kGrep);
  bool pattern_given = false;
  // -d ACTION: only `read` and `skip`, exactly, do not walk; GNU takes any
  // abbreviation of `recurse` (-d rec), so everything else walks.
  auto walks = [](const std::string& action) { return action != "read" && action != "skip"; };
  for (auto& [ch, v] : p.short_values) {
    pattern_given = pattern_given || ch == 'e';
    if (ch == 'd' && walks(v)) p.walk = true;
  }
  for (auto& [name, v] : p.long_values) {
    pattern_given = pattern_given || name == "regexp" || name == "file";
    if (name == "directories" && walks(v)) p.walk = true;
  }
  for (auto& [ch, v] : p.short_values) pattern_given = pattern_given || ch == 'f';
  if (!pattern_given && !p.operands.empty()) p.operands.erase(p.operands.begin());
  Operands(p, out, p.walk ? "." : nullptr);
}

// A path inside the repository, relative to its top level.
void AddFromTop(CommandReads* out, std::string path) {
  while (!path.empty() && path[0] == '/') path.erase(0, 1);
  out->reads.push_back(FileRead{path.empty() ? "." : path});
  out->reads.back().from_top = true;
}

// A --work-tree or --git-dir value: walked; a git dir also as the
// repository it is (read_scope.cc follows its .git file, commondir and
// alternates).
void AddGitPath(CommandReads* out, const std::string& word, bool git_dir) {
  if (word.empty()) return;
  Add(out, word, true, false);
  out->reads.back().git_dir = git_dir;
}

void Git(const SimpleCommand& c, CommandReads* out) {
  const std::vector<std::string>& a = c.argv;
  std::string dir;  // -C: where git runs; relative words are under it
  auto under = [&dir](const std::string& w) {
    if (dir.empty() || w.empty() || w[0] == '/' || w[0] == '~') return w;
    return Cat(dir, "/", w);
  };
  size_t i = 1;
  for (; i < a.size(); ++i) {
    const std::string& w = a[i];
    if (w.empty() || w[0] != '-') break;
    std::string next = i + 1 < a.size() ? a[i + 1] : "";
    if (w == "-C") {
      dir = under(next);
      ++i;
    } else if (w == "-c" || w == "--config-env" || w == "--namespace") {
      ++i;
    } else if (w == "--git-dir" || w == "--work-tree") {
      AddGitPath(out, under(next), w == "--git-dir");
      ++i;
    } else if (StartsWith(w, "--git-dir=") || StartsWith(w, "--work-tree=")) {
      AddGitPath(out, under(w.substr(w.find('=') + 1)), StartsWith(w, "--git-dir="));
    }
  }
  out->reads.push_back(FileRead{dir.empty() ? "." : dir});
  out->reads.back().repository = true;
  std::string sub = i < a.size() ? a[i] : "";
  // diff --no-index compares two paths outside any repository; a directory
  // operand is walked, as diff -r would.
  bool no_index = false;
  if (sub == "diff") {
    for (size_t k = i + 1; k < a.size() && a[k] != "--"; ++k)
      no_index = no_index || a[k] == "--no-index";
  }
  // Outside a repository, or given paths outside it, git diff compares
  // files on its own: every diff operand that is no REV:path counts.
  bool diff = sub == "diff";
  bool paths = false;
  for (++i; i < a.size(); ++i) {
    const std::string& w = a[i];
    if (!paths && w == "--") {
      paths = true;
      continue;
    }
    if (!paths && w.size() > 1 && w[0] == '-') {
      if (StartsWith(w, "-O") && w.size() > 2) Add(out, under(w.substr(2)), false, false);
      continue;
    }
    // Pathspec magic: :/path and :(top)path are the top level; other
    // :(magic)path and :!path, :^path are taken from the top level too.
    if (StartsWith(w, ":/")) {
      AddFromTop(out, w.substr(2));
      continue;
    }
    if (StartsWith(w, ":(")) {
      size_t close = w.find(')');
      AddFromTop(out, close == std::string::npos ? "" : w.substr(close + 1));
      continue;
    }
    if (StartsWith(w, ":!") || StartsWith(w, ":^")) {
      AddFromTop(out, w.substr(2));
      continue;
    }
    size_t colon = paths || no_index ? std::string::npos : w.find(':');
    if (colon == std::string::npos) {
      Add(out, under(w), false, false);
      if (diff && !w.empty()) out->reads.back().walk_if_directory = true;
      continue;
    }
    // git diff takes a word that names a file as that file, colon and all
    // (outside the repository it compares files, as --no-index would).
    if (diff) {
      Add(out, under(w), false, false);
      out->reads.back().walk_if_directory = true;
    }
    // REV:path (and :path, :N:path in the index): the path is from the top
    // level unless it starts with ./ or ../ (then from where git runs).
    std::string path = w.substr(colon + 1);
    if (colon == 0 && path.size() >= 2 && path[0] >= '0' && path[0] <= '3' && path[1] == ':') {
      path = path.substr(2);
    }
    if (path.empty()) continue;
    if (StartsWith(path, "./") || StartsWith(path, "../") || path == "." || path == "..") {
      Add(out, under(path), false, false);
    } else {
      AddFromTop(out, path);
    }
  }
}

// The directory a glob word lists: its components before the first one
// with * ? or [; "." for a relative word with none ("*", "*/x").
std::string GlobDirectory(const std::string& word) {
  size_t glob = word.find_first_of("*?[");
  size_t slash = word.rfind('/', glob);
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : word.substr(0, slash);
}

// Programs that print their operands, or names made from them, without
// opening them: a glob among them shows what its directory holds.
bool PrintsOperands(const std::string& p) {
  static const char* const kPrinters[] = {"echo", "printf",   "basename", "dirname", "which",
                                          "true", "false",    "printenv", "df",      "tee",
                                          "seq",  "hostname", "uname",    "id",      "date"};
  return std::find(std::begin(kPrinters), std::end(kPrinters), p) != std::end(kPrinters);
}

}  // namespace

bool KnowsReads(const std::string& program) {
  static const char* const kKnown[] = {
      "cat",      "head",    "tail",     "wc",       "grep",      "egrep",  "fgrep",
      "stat",     "file",    "du",       "diff",     "sha256sum", "md5sum", "cut",
      "ls",       "tree",    "realpath", "readlink", "date",      "git",    "echo",
      "pwd",      "whoami",  "id",       "uname",    "true",      "seq",    "nproc",
      "basename", "dirname", "uptime",   "hostname", "df",        "which",  "printenv",
      "ps",       "false",   "cd",       "pushd",    "tee",       "printf"};
  return std::find(std::begin(kKnown), std::end(kKnown), program) != std::end(kKnown);
}

CommandReads ReadsOf(const SimpleCommand& c) {
  CommandReads out;
  const std::string& p = c.program;
  if (c.argv.empty()) {
    // A command-less redirection reads its sources only.
  } else if (p == "grep" || p == "egrep" || p == "fgrep") {
    Grep(c, &out);
  } else if (p == "git") {
    Git(c, &out);
  } else if (p == "cat") {
    Operands(Parse(c, &out, {}), &out);
  } else if (p == "head") {
    Operands(Parse(c, &out, {"nc", "", "", "", "", "", {"lines", "bytes"}, {}, {}, {}, {}}), &out);
  } else if (p == "tail") {
    Operands(Parse(c, &out,
                   {"ncs",
                    "",
                    "",
                    "",
                    "",
                    "",
                    {"lines", "bytes", "sleep-interval", "pid", "max-unchanged-stats"},
                    {},
                    {},
                    {},
                    {}}),
             &out);
  } else if (p == "wc") {
    Parsed parsed =
        Parse(c, &out, {"", "", "", "", "", "", {"files0-from"}, {}, {}, {}, {"files0-from"}});
    Operands(parsed, &out);
    for (auto& [name, v] : parsed.long_values) {
      if (name == "files0-from" && v != "-") Add(&out, v, false, false);
    }
    if (!parsed.unknown.empty()) out.unknown = "wc --files0-from reads the files named in a file";
  } else if (p == "stat") {
    Operands(Parse(c, &out, {"c", "", "", "", "", "", {"format", "printf"}, {}, {}, {}, {}}), &out);
  } else if (p == "file") {
    Parsed parsed = Parse(c, &out,
                          {"FeP",
                           "mf",
                           "",
                           "",
                           "",
                           "",
                           {"separator", "exclude", "exclude-quiet", "parameter"},
                           {"magic-file", "files-from"},
                           {},
                           {},
                           {}});
    bool names_file = false;
    for (auto& [ch, v] : parsed.short_values) names_file = names_file || ch == 'f';
    for (auto& [name, v] : parsed.long_values) names_file = names_file || name == "files-from";
    for (const std::string& o : parsed.operands) Add(&out, o, false, false);
    for (const std::string& f : parsed.files) {
      for (std::string_view m : SplitAny(f, ":", true)) Add(&out, std::string(m), false, false);
    }
    if (names_file) out.unknown = "file -f reads the files named in a file";
  } else if (p == "du") {
    Parsed parsed =
        Parse(c, &out,
              {"Bdt",
               "X",
               "",
               "",
               "L",
               "",
               {"block-size", "max-depth", "threshold", "exclude", "time-style", "files0-from"},
               {"exclude-from"},
               {},
               {"dereference"},
               {"files0-from"}});
    parsed.walk = true;
    Operands(parsed, &out, ".");
    for (auto& [name, v] : parsed.long_values) {
      if (name == "files0-from" && v != "-") Add(&out, v, false, false);
    }
    if (!parsed.unknown.empty()) out.unknown = "du --files0-from reads the files named in a file";
  } else if (p == "diff") {
    Parsed parsed = Parse(c, &out,
                          {"CUWIFLDSx",
                           "X",
                           "",
                           "r",
                           "",
                           "",
                           {"width",
                            "ignore-matching-lines",
                            "show-function-line",
                            "label",
                            "ifdef",
                            "starting-file",
                            "exclude",
                            "tabsize",
                            "horizon-lines",
                            "line-format",
                            "old-line-format",
                            "new-line-format",
                            "unchanged-line-format",
                            "old-group-format",
                            "new-group-format",
                            "changed-group-format",
                            "unchanged-group-format",
                            "palette",
                            "from-file",
                            "to-file"},
                           {"exclude-from"},
                           {"recursive"},
                           {},
                           {}});
    for (auto& [name, v] : parsed.long_values) {
      if (name == "from-file" || name == "to-file") parsed.operands.push_back(v);
    }
    // Without -r a directory operand still reads the files directly in it;
    // diff reads what the symlinks among them lead to.
    for (const std::string& o : parsed.operands) {
      if (o.empty()) continue;
      Add(&out, o, parsed.walk, false);
      out.reads.back().walk_if_directory = true;
      out.reads.back().follows_links = true;
    }
    for (const std::string& f : parsed.files) Add(&out, f, false, false);
  } else if (p == "sha256sum" || p == "md5sum") {
    Parsed parsed = Parse(c, &out, {"", "", "", "", "", "c", {}, {}, {}, {}, {"check"}});
    Operands(parsed, &out);
    if (!parsed.unknown.empty()) {
      out.unknown = Cat(p, " ", parsed.unknown, " reads the files named in its list");
    }
  } else if (p == "cut") {
    Operands(Parse(c, &out,
                   {"bcdf",
                    "",
                    "",
                    "",
                    "",
                    "",
                    {"bytes", "characters", "delimiter", "fields", "output-delimiter"},
                    {},
                    {},
                    {},
                    {}}),
             &out);
  } else if (p == "ls") {
    Operands(Parse(c, &out,
                   {"ITw",
                    "",
                    "",
                    "R",
                    "",
                    "",
                    {"ignore", "hide", "width", "tabsize", "block-size", "format", "time-style",
                     "sort", "time", "quoting-style", "indicator-style"},
                    {},
                    {"recursive"},
                    {},
                    {},
                    "L",
                    {"dereference"}}),
             &out, ".");
  } else if (p == "tree") {
    Parsed parsed = Parse(c, &out,
                          {"LPIHTo",
                           "",
                           "",
                           "",
                           "l",
                           "",
                           {"filelimit", "timefmt", "charset", "sort"},
                           {"hintro", "houtro", "gitfile", "infofile"},
                           {"fromfile"},
                           {},
                           {}});
    bool from_file = false;
    for (auto& [name, v] : parsed.long_values) from_file = from_file || name == "fromfile";
    parsed.walk = !from_file;
    parsed.follow = parsed.follow && parsed.walk;
    Operands(parsed, &out, ".");
  } else if (p == "realpath") {
    Operands(
        Parse(c, &out, {"", "", "", "", "", "", {}, {"relative-to", "relative-base"}, {}, {}, {}}),
        &out);
  } else if (p == "readlink") {
    Operands(Parse(c, &out, {}), &out);
  } else if (p == "date") {
    Parsed parsed = Parse(
        c, &out, {"ds", "fr", "I", "", "", "", {"date", "set"}, {"file", "reference"}, {}, {}, {}});
    for (const std::string& f : parsed.files) {
      if (f != "-") Add(&out, f, false, false);
    }
  } else if (!KnowsReads(p)) {
    Operands(Parse(c, &out, {}), &out);
  }
  if (PrintsOperands(p)) {
    for (size_t i = 1; i < c.argv.size(); ++i) {
      const std::string& w = c.argv[i];
      if (w.find_first_of("*?[") != std::string::npos) Add(&out, GlobDirectory(w), false, false);
    }
  }
  for (const std::string& s : c.read_sources) Add(&out, s, false, false);
  return out;
}

}  // namespace termbridge::policy::internal
