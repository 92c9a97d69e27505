// Paths a command could name, and whether any of them reaches the broker's
// files or another process's /proc entries. Errs towards "reaches": a word
// is taken as a path wherever it could be one (whole, after '=', ':', '@' or
// ',', or after an option letter), ~ is expanded even where the shell would
// not, and a glob counts when any name it could match is at or under a
// protected path. Words with other run-time values ($X, `cmd`) are left to
// the allow rules, which never match them.
#include "common/policy/protected_paths.h"

#include <fnmatch.h>
#include <glob.h>
#include <limits.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <deque>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/policy/bounded_glob.h"
#include "common/policy/text.h"

namespace termbridge::policy::internal {

constexpr size_t kMaxCandidates = 4096;  // per command; beyond it the command is denied
constexpr int kMaxLinks = 40;

using Parts = std::vector<std::string>;

bool HasGlobChars(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

Parts SplitPath(std::string_view path) {
  Parts out;
  for (std::string_view p : SplitAny(path, "/", true)) out.emplace_back(p);
  return out;
}

std::string JoinAbs(const Parts& parts, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < std::min(to, parts.size()); ++i) Append(&out, "/", parts[i]);
  return out.empty() ? "/" : out;
}

// An absolute path with ".", ".." and "//" resolved as text.
Parts Lexical(std::string_view abs) {
  Parts out;
  for (std::string& p : SplitPath(abs)) {
    if (p == ".") continue;
    if (p == "..") {
      if (!out.empty()) out.pop_back();
      continue;
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::string UserHome(const std::string& user) {
  if (user.empty()) {
    const char* home = std::getenv("HOME");
    return home != nullptr ? home : "";
  }
  struct passwd pw;
  struct passwd* found = nullptr;
  char buf[4096];
  if (getpwnam_r(user.c_str(), &pw, buf, sizeof(buf), &found) != 0 || found == nullptr) return "";
  return pw.pw_dir;
}

// `word` with a leading ~, ~user, ~+, $HOME, ${HOME}, $PWD or ${PWD}
// expanded ($PWD and ~+ become "." for the bases); nullopt when the path
// still depends on run-time values or names no known directory.
std::optional<std::string> ExpandHome(std::string word) {
  for (auto [var, value] : {std::pair<std::string_view, std::string_view>{"${HOME}", "~"},
                            {"$HOME", "~"},
                            {"${PWD}", "."},
                            {"$PWD", "."}}) {
    if (StartsWith(word, var) && (word.size() == var.size() || word[var.size()] == '/')) {
      word = Cat(value, word.substr(var.size()));
      break;
    }
  }
  if (!word.empty() && word[0] == '~') {
    size_t slash = word.find('/');
    std::string user = word.substr(1, slash == std::string::npos ? std::string::npos : slash - 1);
    std::string rest = slash == std::string::npos ? "" : word.substr(slash);
    if (user == "+") {
      word = Cat(".", rest);
    } else {
      std::string home = user == "-" ? "" : UserHome(user);
      if (home.empty()) return std::nullopt;
      word = Cat(home, rest);
    }
  }
  if (word.find_first_of("$`") != std::string::npos) return std::nullopt;
  return word;
}

namespace {

bool IsDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char ch) {
    return std::isdigit(static_cast<unsigned char>(ch));
  });
}

// /proc/self, /proc/thread-self or /proc/<pid> as p[0..2), and the length of
// the prefix naming one of its tasks (task/<tid>) when there is one.
bool ProcessDirectory(const Parts& p, size_t* task_end) {
  if (p.size() < 2 || p[0] != "proc") return false;
  if (p[1] != "self" && p[1] != "thread-self" && !IsDigits(p[1])) return false;
  *task_end = p.size() >= 4 && p[2] == "task" ? 4 : 2;
  return true;
}

// Whether `p` is the root link of the process that opens it (the command's
// own root, which is "/" for it as for the broker).
bool IsOwnRootLink(const Parts& p) {
  size_t base = 0;
  if (!ProcessDirectory(p, &base) || IsDigits(p[1])) return false;
  return p.size() == base + 1 && p[base] == "root";
}

// Whether `p` is a procfs magic link: /proc/<self|thread-self|pid>[/task/
// <tid>]/{root,cwd,exe,fd/<n>,map_files/<range>}. The kernel resolves them
// for the process that opens them, to wherever that process's files are.
bool IsMagicLink(const Parts& p) {
  size_t base = 0;
  if (!ProcessDirectory(p, &base) || p.size() <= base) return false;
  const std::string& entry = p[base];
  if (p.size() == base + 1) return entry == "root" || entry == "cwd" || entry == "exe";
  return p.size() == base + 2 && (entry == "fd" || entry == "map_files");
}

}  // namespace

// Symlinks resolved for the longest existing prefix; the rest appended as
// text. Every path at which a link was followed goes to *visited, so a
// chain through a protected directory counts even when it ends elsewhere.
// /proc/self and /proc/thread-self are left unresolved: here they would
// name the broker, not the command. With `magic`, the command's own root
// link (/proc/self/root, also repeated or after "..") is "/", and the first
// other procfs magic link on the way goes to *magic, where resolving stops.
std::string Physical(const std::string& abs, Parts* visited, std::string* magic) {
  std::deque<std::string> todo;
  for (std::string& p : SplitPath(abs)) todo.push_back(std::move(p));
  Parts out;
  bool exists = true;
  int links = 0;
  while (!todo.empty()) {
    std::string part = std::move(todo.front());
    todo.pop_front();
    if (part == ".") continue;
    if (part == "..") {
      if (!out.empty()) out.pop_back();
      // Back out of /proc/self (whose entries are procfs files, walked as
      // text): the rest exists on disk again.
      if (magic != nullptr && magic->empty() && !exists) {
        struct stat st;
        size_t base = 0;
        exists = !ProcessDirectory(out, &base) && lstat(JoinAbs(out).c_str(), &st) == 0;
      }
      continue;
    }
    out.push_back(part);
    if (magic != nullptr && magic->empty()) {
      if (IsOwnRootLink(out)) {
        out.clear();
        exists = true;
        continue;
      }
      if (IsMagicLink(out)) {
        *magic = JoinAbs(out);
        exists = false;
        continue;
      }
    }
    if (!exists) continue;
    std::string now = JoinAbs(out);
    if (now == "/proc/self" || now == "/proc/thread-self") {
      exists = false;
      continue;
    }
    struct stat st;
    if (lstat(now.c_str(), &st) != 0) {
      exists = false;
      continue;
    }
    if (!S_ISLNK(st.st_mode) || links >= kMaxLinks) continue;
    char buf[PATH_MAX];
    ssize_t n = readlink(now.c_str(), buf, sizeof(buf));
    if (n <= 0) continue;
    ++links;
    visited->push_back(now);
    std::string target(buf, static_cast<size_t>(n));
    out.pop_back();
    if (target[0] == '/') out.clear();
    Parts tparts = SplitPath(target);
    todo.insert(todo.begin(), tparts.begin(), tparts.end());
  }
  return JoinAbs(out);
}

// The absolute paths a relative or absolute word names, given the bases.
Parts Absolutes(const std::string& word, const Parts& bases) {
  if (word.empty()) return {};
  if (word[0] == '/') return {word};
  Parts out;
  for (const std::string& base : bases) out.push_back(Cat(base, "/", word));
  return out;
}

// /proc/self/root/X is /X and /proc/self/cwd/X is X in the shell's cwd.
Parts SeeThroughSelf(const std::string& abs, const Parts& bases) {
  Parts parts = Lexical(abs);
  bool self =
      parts.size() >= 3 && parts[0] == "proc" && (parts[1] == "self" || parts[1] == "thread-self");
  if (!self || (parts[2] != "root" && parts[2] != "cwd")) return {abs};  // keeps its ..
  std::string rest = parts.size() > 3 ? JoinAbs(parts, 3).substr(1) : ".";
  if (parts[2] == "root") return {Cat("/", rest)};
  return Absolutes(rest, bases);
}

std::string CdTarget(const SimpleCommand& c) {
  for (size_t i = 1; i < c.argv.size(); ++i) {
    if (c.argv[i] == "--" && i + 1 < c.argv.size()) return c.argv[i + 1];
    if (c.argv[i].empty() || c.argv[i][0] != '-' || c.argv[i] == "-") return c.argv[i];
  }
  return "~";
}

// Where the shell may be when the command runs: the cwd given at check
// time and every directory a cd or pushd in the line goes to.
Parts Bases(const ParsedLine& line, const std::string& cwd) {
  Parts bases;
  if (!cwd.empty() && cwd[0] == '/') bases.push_back(JoinAbs(Lexical(cwd)));
  for (const SimpleCommand& c : line.commands) {
    if (c.program != "cd" && c.program != "pushd") continue;
    const std::string target = CdTarget(c);
    std::optional<std::string> expanded = ExpandHome(target);
    if (!expanded || target == "-") continue;
    for (const std::string& abs : Absolutes(*expanded, bases)) {
      std::string norm = JoinAbs(Lexical(abs));
      if (bases.size() < kMaxBases && std::find(bases.begin(), bases.end(), norm) == bases.end()) {
        bases.push_back(norm);
      }
    }
  }
  return bases;
}

namespace {

// Every string in `c` that could be a path.
void Candidates(const SimpleCommand& c, std::set<std::string>* out) {
  auto add_word = [out](const std::string& w) {
    out->insert(w);
    if (w.size() > 2 && w[0] == '-' && w[1] != '-' && w.size() <= 256) {
      for (size_t i = 2; i < w.size(); ++i) out->insert(w.substr(i));  // -fPATH, -abfPATH
    }
    // A suffix longer than PATH_MAX names no file (ENAMETOOLONG); skipping
    // those keeps a huge a=a=a=... word from costing its length squared.
    size_t first = w.size() > PATH_MAX ? w.size() - PATH_MAX : 0;
    for (size_t i = first; i < w.size() && out->size() <= kMaxCandidates; ++i) {
      if (w[i] == '=' || w[i] == ':' || w[i] == '@' || w[i] == ',') out->insert(w.substr(i + 1));
    }
  };
  for (const std::string& a : c.argv) add_word(a);
  for (const std::string& t : c.write_targets) add_word(t);
  for (const std::string& s : c.read_sources) add_word(s);
  for (const std::string& e : c.env) add_word(e);
}

// The forms of one absolute path (no /proc/self left to see through):
// lexical, with symlinks resolved (for a glob, those of its fixed prefix),
// and every link followed on the way. Calls `hit` on each; true when one
// hit. A path still under /proc/self after resolving goes to *again.
bool AnyForm(const std::string& path, const std::function<bool(const Parts&, bool)>& hit,
             Parts* again) {
  bool glob = HasGlobChars(path);
  if (hit(Lexical(path), glob)) return true;
  Parts raw = SplitPath(path);  // with its . and .., which symlinks give meaning
  size_t fixed = 0;
  while (fixed < raw.size() && !HasGlobChars(raw[fixed])) ++fixed;
  Parts visited;
  Parts physical = SplitPath(Physical(JoinAbs(raw, 0, fixed), &visited));
  physical.insert(physical.end(), raw.begin() + static_cast<long>(fixed), raw.end());
  std::string resolved = JoinAbs(Lexical(JoinAbs(physical)));
  if (hit(SplitPath(resolved), glob)) return true;
  for (const std::string& v : visited) {
    if (hit(SplitPath(v), false)) return true;
  }
  if (StartsWith(resolved, "/proc/self/") || StartsWith(resolved, "/proc/thread-self/")) {
    again->push_back(resolved);
  }
  return false;
}

// Calls `hit` with the components of every absolute form of every path the
// command could name (lexical, and with symlinks resolved; a glob also as
// each name it matches on disk now), and whether the form is a glob. True
// when a call returns true, or the command names more paths than can be
// checked.
bool AnyPath(const SimpleCommand& c, const ParsedLine& line, const BuiltinContext& context,
             const std::function<bool(const Parts&, bool)>& hit) {
  std::set<std::string> words;
  Candidates(c, &words);
  if (words.size() > kMaxCandidates) return true;  // more paths than can be checked
  Parts bases = Bases(line, context.cwd);
  size_t checked = 0;
  for (const std::string& word : words) {
    std::optional<std::string> expanded = ExpandHome(word);
    if (!expanded || expanded->empty()) continue;
    Parts todo = Absolutes(*expanded, bases);
    for (size_t k = 0; k < todo.size() && k < 64; ++k) {
      for (const std::string& path : SeeThroughSelf(todo[k], bases)) {
        if (++checked > kMaxCandidates) return true;
        if (AnyForm(path, hit, &todo)) return true;
        if (!HasGlobChars(path)) continue;
        GlobResult matches = BoundedGlob(path, GLOB_NOESCAPE);
        if (matches.truncated) return true;  // more names than can be checked
        for (const std::string& m : matches.paths) {
          if (++checked > kMaxCandidates || AnyForm(m, hit, &todo)) return true;
        }
      }
    }
  }
  return false;
}

}  // namespace

// Whether glob components g[i..] can name a path at or under p[j..]
// (`**` may stand for any number of components); `flags` for fnmatch.
// With one `**` at most, directly (linear, no allocation).
static bool GlobReachesDirect(const Parts& g, size_t i, const Parts& p, size_t j, int flags) {
  if (j == p.size()) return true;
  if (i == g.size()) return false;
  if (g[i] == "**") {
    return GlobReachesDirect(g, i + 1, p, j, flags) || GlobReachesDirect(g, i, p, j + 1, flags);
  }
  return fnmatch(g[i].c_str(), p[j].c_str(), flags) == 0 &&
         GlobReachesDirect(g, i + 1, p, j + 1, flags);
}

// With several `**`, each (component, position) pair is asked once, from the
// end (retrying every split of the path is exponential in the `**`s).
bool GlobReaches(const Parts& g, size_t i0, const Parts& p, size_t j0, bool fold_case) {
  const int flags = fold_case ? FNM_CASEFOLD : 0;
  if (std::count(g.begin() + static_cast<ptrdiff_t>(i0), g.end(), "**") <= 1) {
    return GlobReachesDirect(g, i0, p, j0, flags);
  }
  const size_t n = p.size();
  std::vector<char> next(n + 1), row(n + 1);
  for (size_t j = j0; j <= n; ++j) next[j] = j == n;  // no pattern left: only a used-up path
  for (size_t i = g.size(); i-- > i0;) {
    row[n] = true;  // the path is used up: the pattern names it or a path under it
    for (size_t j = n; j-- > j0;) {
      if (g[i] == "**") {
        row[j] = next[j] || row[j + 1];
      } else {
        row[j] = next[j + 1] && fnmatch(g[i].c_str(), p[j].c_str(), flags) == 0;
      }
    }
    std::swap(row, next);
  }
  return next[j0];
}

bool AtOrUnder(const Parts& path, const Parts& root) {
  return path.size() >= root.size() && std::equal(root.begin(), root.end(), path.begin());
}

namespace {

bool NameMatches(const std::string& component, std::string_view name, bool glob) {
  if (!glob || !HasGlobChars(component)) return component == name;
  return fnmatch(component.c_str(), std::string(name).c_str(), 0) == 0;
}

// A pid, or a glob that might match one.
bool PidLike(const std::string& component, bool glob) {
  if (glob && HasGlobChars(component)) return true;
  return !component.empty() && std::all_of(component.begin(), component.end(), [](char ch) {
    return std::isdigit(static_cast<unsigned char>(ch));
  });
}

bool SensitiveProcEntry(const std::string& component, bool glob) {
  for (std::string_view name :
       {"cwd", "root", "fd", "fdinfo", "environ", "mem", "map_files", "maps", "pagemap"}) {
    if (NameMatches(component, name, glob)) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> ProtectedForms(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  auto add = [&out](std::string p) {
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(std::move(p));
  };
  char cwd[PATH_MAX];
  std::string here = getcwd(cwd, sizeof(cwd)) != nullptr ? cwd : "/";
  for (const std::string& path : paths) {
    if (path.empty()) continue;
    std::optional<std::string> expanded = ExpandHome(path);
    if (!expanded) expanded = path;
    std::string abs = (*expanded)[0] == '/' ? *expanded : Cat(here, "/", *expanded);
    std::string lexical = JoinAbs(Lexical(abs));
    add(lexical);
    Parts visited;
    add(JoinAbs(Lexical(Physical(lexical, &visited))));
  }
  return out;
}

bool TouchesProtectedPath(const SimpleCommand& c, const ParsedLine& line,
                          const BuiltinContext& context) {
  if (context.protected_paths == nullptr || context.protected_paths->empty()) return false;
  std::vector<Parts> roots;
  for (const std::string& p : *context.protected_paths) roots.push_back(SplitPath(p));
  // These carry a whole tree along: naming an ancestor moves or copies the
  // protected path with it (mv ~/.local /tmp/x; tar cf - ~).
  static constexpr std::string_view kTreeMovers[] = {"mv",  "cp", "rsync",  "tar",  "zip",
                                                     "scp", "ln", "rename", "cpio", "pax"};
  bool tree_mover =
      std::find(std::begin(kTreeMovers), std::end(kTreeMovers), c.program) != std::end(kTreeMovers);
  return AnyPath(c, line, context, [&roots, tree_mover](const Parts& path, bool glob) {
    for (const Parts& root : roots) {
      if (glob ? GlobReaches(path, 0, root, 0) : AtOrUnder(path, root)) return true;
      if (tree_mover && !glob && AtOrUnder(root, path)) return true;
    }
    return false;
  });
}

bool TouchesProcessFiles(const SimpleCommand& c, const ParsedLine& line,
                         const BuiltinContext& context) {
  return AnyPath(c, line, context, [](const Parts& p, bool glob) {
    if (p.size() < 3 || !NameMatches(p[0], "proc", glob) || !PidLike(p[1], glob)) return false;
    if (SensitiveProcEntry(p[2], glob)) return true;
    return p.size() >= 5 && NameMatches(p[2], "task", glob) && PidLike(p[3], glob) &&
           SensitiveProcEntry(p[4], glob);
  });
}

}  // namespace termbridge::policy::internal
