// Resolving a command's reads and judging them: inside a read scope or not,
// sensitive or not. A read is inside a scope only when both its written
// form and its symlink-resolved form are; a walk only when the scope covers
// everything below the walked directory. Sensitive names anywhere (`**/.env`)
// are looked for under a walk on the file system, bounded.
#include "common/policy/read_scope.h"

#include <dirent.h>
#include <fnmatch.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "common/policy/bounded_glob.h"
#include "common/policy/reads.h"
#include "common/policy/text.h"
#include "common/workdir/git_discovery.h"

namespace termbridge::policy::internal {
namespace {

constexpr size_t kMaxGlobMatches = 1024;
// Files one command's reads may name before it asks instead.
constexpr size_t kMaxReads = 1024;

bool IsGlobComponent(std::string_view s) { return s.find_first_of("*?[\\") != s.npos; }

bool AnyGlob(const Parts& p) { return std::any_of(p.begin(), p.end(), IsGlobComponent); }

// Whether glob components g[i..] match exactly p[j..]; a `**` component
// stands for any number of components, none included.
// With one `**` at most, directly (linear, no allocation: this runs for
// every entry of a walked tree). `flags` for fnmatch.
bool GlobMatchDirect(const Parts& g, size_t i, const Parts& p, size_t j, int flags) {
  if (i == g.size()) return j == p.size();
  if (g[i] == "**") {
    return GlobMatchDirect(g, i + 1, p, j, flags) ||
           (j < p.size() && GlobMatchDirect(g, i, p, j + 1, flags));
  }
  return j < p.size() && fnmatch(g[i].c_str(), p[j].c_str(), flags) == 0 &&
         GlobMatchDirect(g, i + 1, p, j + 1, flags);
}

// With several `**`, one row of (component, path position) answers at a
// time, from the end: trying every split of the path again and again is
// exponential in the `**`s; this asks each pair once. With `fold_case`,
// letters match in either case (the sensitive names: on a case-insensitive
// file system .ENV opens .env).
bool GlobMatch(const Parts& g, size_t i0, const Parts& p, size_t j0, bool fold_case = false) {
  const int flags = fold_case ? FNM_CASEFOLD : 0;
  if (std::count(g.begin() + static_cast<ptrdiff_t>(i0), g.end(), "**") <= 1) {
    return GlobMatchDirect(g, i0, p, j0, flags);
  }
  const size_t n = p.size();
  std::vector<char> next(n + 1), row(n + 1);
  for (size_t j = j0; j <= n; ++j) next[j] = j == n;  // no pattern left
  for (size_t i = g.size(); i-- > i0;) {
    for (size_t j = n + 1; j-- > j0;) {
      if (g[i] == "**") {
        row[j] = next[j] || (j < n && row[j + 1]);
      } else {
        row[j] = j < n && next[j + 1] && fnmatch(g[i].c_str(), p[j].c_str(), flags) == 0;
      }
    }
    std::swap(row, next);
  }
  return next[j0];
}

std::string Shown(const std::string& abs) {
  std::string_view sentinel = kUnknownCwd;
  if (StartsWith(abs, sentinel) && (abs.size() == sentinel.size() || abs[sentinel.size()] == '/')) {
    return abs.substr(1);
  }
  return abs;
}

// `magic`: a procfs magic link the read goes through before `abs` (a cd
// through one), "" when none.
void AddResolved(const std::string& abs, const FileRead& r, bool walk, ReadPlan* plan,
                 const std::string& magic = "") {
  ResolvedRead out;
  out.lexical = Lexical(abs);
  out.path = JoinAbs(out.lexical);
  out.physical = SplitPath(Physical(abs, &out.links, &out.magic));
  if (!magic.empty()) out.magic = magic;
  out.walk = walk;
  if (r.walk_if_directory && !walk) {
    struct stat st;
    out.walk = stat(JoinAbs(out.physical).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }
  out.follows_links = out.walk && r.follows_links;
  for (ResolvedRead& o : plan->reads) {
    if (!o.pattern && o.path == out.path && o.walk == out.walk) {
      o.follows_links = o.follows_links || out.follows_links;
      return;
    }
  }
  plan->reads.push_back(std::move(out));
}

// A glob word: the pattern itself, the directory it lists, each match now.
void AddGlob(const std::string& abs, const FileRead& r, ReadPlan* plan,
             const std::string& magic = "") {
  ResolvedRead pattern;
  pattern.lexical = Lexical(abs);
  pattern.path = JoinAbs(pattern.lexical);
  pattern.walk = r.walk;
  pattern.pattern = true;
  plan->reads.push_back(pattern);
  Parts raw = SplitPath(abs);
  size_t fixed = 0;
  while (fixed < raw.size() && !HasGlobChars(raw[fixed])) ++fixed;
  AddResolved(JoinAbs(raw, 0, fixed), r, false, plan, magic);
  GlobResult matches = BoundedGlob(abs, 0);
  if (matches.truncated && plan->unknown.empty()) {
    plan->unknown =
        Cat(Shown(abs), " lists more than ", kMaxGlobEntries, " directory entries to match");
  }
  if (matches.paths.size() > kMaxGlobMatches && plan->unknown.empty()) {
    plan->unknown = Cat(Shown(abs), " matches more than ", kMaxGlobMatches, " names");
  }
  for (size_t m = 0; m < matches.paths.size() && m < kMaxGlobMatches; ++m) {
    AddResolved(matches.paths[m], r, r.walk, plan, magic);
  }
}

// `entry` as absolute components: ~ expanded, relative ones under `base`
// (or "**/" for sensitive names), "." and ".." resolved.
Parts EntryParts(const std::string& entry, const std::string& base) {
  std::string e = ExpandHome(entry).value_or(entry);
  if (e.empty()) return {};
  if (e[0] != '/') {
    if (base.empty() && StartsWith(e, "**")) return SplitPath(e);
    e = base.empty() ? Cat("**/", e) : Cat(base, "/", e);
    if (base.empty()) return SplitPath(e);
  }
  return Lexical(e);
}

// `entry` with the symlinks of its fixed (glob-free) prefix resolved.
Parts PhysicalEntry(const Parts& entry) {
  size_t fixed = 0;
  while (fixed < entry.size() && !IsGlobComponent(entry[fixed])) ++fixed;
  Parts visited;
  Parts out = SplitPath(Physical(JoinAbs(entry, 0, fixed), &visited));
  out.insert(out.end(), entry.begin() + static_cast<long>(fixed), entry.end());
  return out;
}

bool Covers(const Parts& scope, const Parts& path, bool walk) {
  if (!AnyGlob(scope)) return AtOrUnder(path, scope);
  if (!walk) return GlobMatch(scope, 0, path, 0);
  if (scope.empty() || scope.back() != "**") return false;
  Parts prefix(scope.begin(), scope.end() - 1);
  for (size_t k = 0; k <= path.size(); ++k) {
    if (GlobMatch(prefix, 0, Parts(path.begin(), path.begin() + static_cast<long>(k)), 0)) {
      return true;
    }
  }
  return false;
}

bool InScope(const ReadScope& scope, const Parts& path, bool walk) {
  for (const Parts& s : scope.entries) {
    if (Covers(s, path, walk)) return true;
  }
  return false;
}

struct Patterns {
  std::vector<Parts> parts;
  std::vector<std::string> written;
};

Patterns CompilePatterns(const std::vector<std::string>& patterns) {
  Patterns out;
  for (const std::string& p : patterns) {
    Parts parts = EntryParts(p, "");
    if (parts.empty()) continue;
    out.parts.push_back(parts);
    out.written.push_back(p);
    if (parts[0] == "**") continue;
    Parts physical = PhysicalEntry(parts);
    if (physical != parts) {
      out.parts.push_back(std::move(physical));
      out.written.push_back(p);
    }
  }
  return out;
}

std::optional<SensitiveHit> MatchOne(const Patterns& ps, const Parts& path, bool walk,
                                     const std::string& shown) {
  for (size_t k = 0; k < ps.parts.size(); ++k) {
    const Parts& p = ps.parts[k];
    // Case folded: a case-insensitive file system (macOS, /mnt/c) opens
    // ID_RSA or .AWS/credentials as the secret itself.
    if (GlobMatch(p, 0, path, 0, true) ||
        (walk && p[0] != "**" && GlobReaches(p, 0, path, 0, true))) {
      return SensitiveHit{shown, ps.written[k]};
    }
  }
  return std::nullopt;
}

// How a WalkBelow ended.
enum class WalkEnd { kDone, kStopped, kTooMany };

// Breadth first over the directories below `root`, each entry once:
// `visit(dir, name, path, d_type, enter)` returns true to stop, and calls
// `enter(dir)` for a directory to list in turn. More than kMaxWalkEntries
// entries end it.
template <typename Visit>
WalkEnd WalkBelow(const std::string& root, Visit visit) {
  std::deque<std::string> dirs = {root};
  auto enter = [&dirs](std::string dir) { dirs.push_back(std::move(dir)); };
  size_t seen = 0;
  while (!dirs.empty()) {
    std::string dir = std::move(dirs.front());
    dirs.pop_front();
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) continue;
    while (struct dirent* e = readdir(d)) {
      std::string_view name = e->d_name;
      if (name == "." || name == "..") continue;
      if (++seen > kMaxWalkEntries) {
        closedir(d);
        return WalkEnd::kTooMany;
      }
      std::string path = dir == "/" ? Cat("/", name) : Cat(dir, "/", name);
      if (visit(dir, name, path, e->d_type, enter)) {
        closedir(d);
        return WalkEnd::kStopped;
      }
    }
    closedir(d);
  }
  return WalkEnd::kDone;
}

// What a read through the procfs magic link `magic` is said to match.
std::string MagicLinkPattern(const std::string& magic) {
  return Cat("a /proc link (", magic, ") that leads wherever the reading process's files are");
}

// Sensitive names below a walked directory, found on the file system.
std::optional<SensitiveHit> ScanWalk(const ResolvedRead& r, const Patterns& ps) {
  bool names =
      std::any_of(ps.parts.begin(), ps.parts.end(), [](const Parts& p) { return p[0] == "**"; });
  if (!names && !r.follows_links) return std::nullopt;
  std::optional<SensitiveHit> hit;
  auto visit = [&](const std::string& dir, std::string_view name, const std::string& path,
                   unsigned char type, const auto& enter) {
    if ((hit = MatchOne(ps, SplitPath(path), false, path))) return true;
    if (type == DT_UNKNOWN) {
      struct stat st;
      if (lstat(path.c_str(), &st) != 0) return false;
      type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
    }
    if (type == DT_DIR) {
      // Object files have hex names, which no name pattern is about.
      bool objects = name == "objects" && dir.size() >= 5 && dir.substr(dir.size() - 5) == "/.git";
      if (!objects) enter(path);
    } else if (type == DT_LNK && r.follows_links) {
      Parts visited;
      std::string magic;
      Parts target = SplitPath(Physical(path, &visited, &magic));
      if (!magic.empty()) {
        hit = SensitiveHit{Cat(path, " -> ", magic), MagicLinkPattern(magic)};
        return true;
      }
      if ((hit = MatchOne(ps, target, true, Cat(path, " -> ", JoinAbs(target))))) return true;
    }
    return false;
  };
  if (WalkBelow(JoinAbs(r.physical), visit) == WalkEnd::kTooMany) {
    return SensitiveHit{
        Shown(r.path), Cat("more than ", kMaxWalkEntries, " entries to check for sensitive names")};
  }
  return hit;
}

bool IsDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char ch) {
    return std::isdigit(static_cast<unsigned char>(ch));
  });
}

// Whether `users` (a ps user list) names only the user running this.
bool OnlyMe(std::string_view users) {
  struct passwd pw;
  struct passwd* found = nullptr;
  char buf[4096];
  uid_t uid = geteuid();
  if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) != 0 || found == nullptr) return false;
  for (std::string_view u : SplitAny(users, ", ", true)) {
    if (u != pw.pw_name && u != std::to_string(uid)) return false;
  }
  return !users.empty();
}

}  // namespace

std::vector<std::string> ReadPlan::Shown() const {
  std::vector<std::string> out;
  for (const ResolvedRead& r : reads) {
    if (r.pattern) continue;
    std::string s = internal::Shown(r.path);
    if (r.walk) s.append(" (walk)");
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

// The path `word` of a command's argv names. The parser has removed quotes
// and left run-time values only in dynamic commands (which no allow rule
// matches), so a $ or ` elsewhere is a literal character of the name; only
// a leading ~ or ~user is expanded (nullopt when it names no directory
// known here: ~-, ~nosuchuser). In a dynamic command $HOME and $PWD are
// expanded too and any other run-time value is nullopt.
std::optional<std::string> LiteralPath(const std::string& word, bool dynamic) {
  if (dynamic) return ExpandHome(word);
  if (word.empty() || word[0] != '~') return word;
  size_t slash = word.find('/');
  std::optional<std::string> home = ExpandHome(word.substr(0, slash));
  if (!home) return std::nullopt;
  return slash == std::string::npos ? *home : Cat(*home, word.substr(slash));
}

constexpr size_t kMaxGitDirs = 64;     // git dirs, common dirs, alternates
constexpr int kMaxAlternateDepth = 5;  // git's own bound

// Where git finds the repository it reads from a directory.
struct Repository {
  Parts tops;  // work tree top levels (walked)
  // The repository itself: its git dir, the common dir a commondir file
  // names (a linked worktree), and the object directories its alternates
  // name, each walked following symlinks (git opens what they lead to).
  Parts git_dirs;
  std::string problem;  // why where it is cannot be known; "" when it can
};

// The directories git reads as the repository at `git_dir`, a directory
// or a .git file ("gitdir: <path>", relative to the file's directory):
// the git dir, its common dir and the alternates' object directories.
void AddGitDirs(const std::string& git_dir, Repository* repo) {
  std::string dir = git_dir;
  struct stat st;
  if (stat(git_dir.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    absl::StatusOr<std::string> target = workdir::GitFileTarget(git_dir);
    if (!target.ok()) {
      repo->problem = Cat(git_dir, " is a .git file that names no git directory (",
                          target.status().message(), ")");
      return;
    }
    dir = *std::move(target);
  }
  auto add = [repo](std::string d) {
    if (std::find(repo->git_dirs.begin(), repo->git_dirs.end(), d) != repo->git_dirs.end()) {
      return true;
    }
    if (repo->git_dirs.size() >= kMaxGitDirs) {
      repo->problem = Cat("the repository names more than ", kMaxGitDirs, " object directories");
      return false;
    }
    repo->git_dirs.push_back(std::move(d));
    return true;
  };
  add(dir);
  std::string common = workdir::CommonDirOf(dir);
  add(common);
  // objects/info/alternates: object directories, and theirs in turn,
  // kMaxAlternateDepth deep. One that cannot be read whole is a problem.
  Parts level = {Cat(common, "/objects")};
  for (int depth = 0; depth < kMaxAlternateDepth && !level.empty(); ++depth) {
    Parts next;
    for (const std::string& objects : level) {
      absl::StatusOr<std::vector<std::string>> alternates = workdir::AlternateObjectDirs(objects);
      if (!alternates.ok()) {
        repo->problem = std::string(alternates.status().message());
        return;
      }
      for (std::string& alternate : *alternates) {
        if (!add(alternate)) return;
        next.push_back(std::move(alternate));
      }
    }
    level = std::move(next);
  }
}

// The repository git reads from `dir`, found as git's discovery finds it:
// from `dir` (symlinks resolved) up, at each level a .git (a directory that
// is a git directory, a symlink to one, or a .git file), else the level
// itself as a bare repository. A .git that is no repository to git (an
// empty directory) still makes its level a work tree top, as it always
// did; git looks further up, and so does this.
Repository FindRepository(const std::string& dir) {
  Repository repo;
  Parts visited;
  Parts p = SplitPath(Physical(dir, &visited));
  for (size_t n = p.size() + 1; n-- > 0;) {
    std::string candidate = JoinAbs(p, 0, n);
    std::string dot_git = Cat(candidate == "/" ? "" : candidate, "/.git");
    struct stat st;
    if (lstat(dot_git.c_str(), &st) == 0) {
      bool file = stat(dot_git.c_str(), &st) == 0 && S_ISREG(st.st_mode);
      if (file || workdir::IsGitDirectory(dot_git)) {
        if (std::find(repo.tops.begin(), repo.tops.end(), candidate) == repo.tops.end()) {
          repo.tops.push_back(candidate);
        }
        AddGitDirs(dot_git, &repo);
        return repo;
      }
      if (repo.tops.empty()) repo.tops.push_back(candidate);
    }
    if (workdir::IsGitDirectory(candidate)) {
      AddGitDirs(candidate, &repo);
      return repo;
    }
  }
  return repo;
}

// Submodules: git opens each nested work tree's .git (a directory, a
// symlink, or a file naming its git dir anywhere) and the repositories
// under a common dir's modules/ (git status, diff --submodule=diff,
// submodule.recurse). Each is a repository git reads, with its own common
// dir and alternates. A work tree or modules/ too big to look through is a
// problem: where git would read cannot be known.
void AddNestedRepositories(Repository* repo) {
  auto is_dir = [](const std::string& path, unsigned char type) {
    if (type != DT_UNKNOWN) return type == DT_DIR;
    struct stat st;
    return lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  };
  for (const std::string& top : Parts(repo->tops)) {
    WalkEnd end = WalkBelow(top, [&](const std::string& dir, std::string_view name,
                                     const std::string& path, unsigned char type, auto enter) {
      if (name == ".git") {
        if (dir != top) AddGitDirs(path, repo);
        return !repo->problem.empty();
      }
      if (is_dir(path, type)) enter(path);
      return false;
    });
    if (end == WalkEnd::kTooMany && repo->problem.empty()) {
      repo->problem = Cat(top, " holds more than ", kMaxWalkEntries,
                          " entries: the repositories git would open in it cannot be checked");
    }
  }
  for (const std::string& git_dir : Parts(repo->git_dirs)) {
    WalkEnd end = WalkBelow(
        Cat(git_dir, "/modules"), [&](const std::string&, std::string_view name,
                                      const std::string& path, unsigned char type, auto enter) {
          if (!is_dir(path, type) || name == "objects" || name == "refs" || name == "logs") {
            return false;
          }
          if (workdir::IsGitDirectory(path)) AddGitDirs(path, repo);
          enter(path);
          return !repo->problem.empty();
        });
    if (end == WalkEnd::kTooMany && repo->problem.empty()) {
      repo->problem = Cat(git_dir, "/modules holds more than ", kMaxWalkEntries,
                          " entries: the repositories in it cannot be checked");
    }
  }
}

}  // namespace

// A cd, pushd or popd of `line` that goes where Bases cannot follow (cd -,
// popd, a target that does not resolve), as written; "" when none does.
std::string UnknownDirectoryChange(const ParsedLine& line) {
  for (const SimpleCommand& c : line.commands) {
    if (c.program == "popd") return Cat("`", c.Text(), "`");
    if (c.program != "cd" && c.program != "pushd") continue;
    const std::string target = CdTarget(c);
    if (target == "-" || !ExpandHome(target)) return Cat("`", c.Text(), "`");
  }
  return "";
}

ReadPlan PlanReads(const SimpleCommand& c, const ParsedLine& line, const std::string& cwd) {
  CommandReads cr = ReadsOf(c);
  ReadPlan plan;
  plan.unknown = cr.unknown;
  Parts bases = Bases(line, cwd.empty() || cwd[0] != '/' ? kUnknownCwd : cwd);
  std::string moved = UnknownDirectoryChange(line);
  if (moved.empty() && bases.size() >= kMaxBases) {
    moved = Cat("the line's cd commands (more than ", kMaxBases - 1, " places)");
  }
  Parts tops;  // the repositories' top levels (git)
  // A cd of the line through a procfs magic link (cd /proc/self/cwd/..):
  // relative reads are wherever it led, "" when none does.
  std::string cd_magic;
  for (const SimpleCommand& cd : line.commands) {
    if (cd.program != "cd" && cd.program != "pushd") continue;
    std::optional<std::string> target = ExpandHome(CdTarget(cd));
    if (!target) continue;
    for (const std::string& abs : Absolutes(*target, bases)) {
      Parts visited;
      std::string magic;
      Physical(abs, &visited, &magic);
      if (!magic.empty() && cd_magic.empty()) cd_magic = magic;
    }
  }
  if (cr.reads.size() > kMaxReads && plan.unknown.empty()) {
    plan.unknown = Cat("it names more than ", kMaxReads, " files to read");
  }
  for (const FileRead& r : cr.reads) {
    if (plan.reads.size() > kMaxReads) {
      if (plan.unknown.empty()) plan.unknown = Cat("it reads more than ", kMaxReads, " files");
      break;
    }
    std::optional<std::string> expanded = LiteralPath(r.word, c.dynamic);
    // A word that does not resolve (~-, ~nosuchuser, a run-time value)
    // names a file no scope can check: fail closed.
    if (!expanded) {
      if (plan.unknown.empty())
        plan.unknown = Cat("`", r.word, "` names a path that does not resolve here");
      continue;
    }
    if (expanded->empty()) continue;
    if ((*expanded)[0] != '/' && !moved.empty()) {
      if (plan.unknown.empty()) {
        plan.unknown =
            Cat("`", r.word, "` is relative to where ", moved, " go, which is not known here");
      }
      continue;
    }
    if (r.from_top) {
      for (const std::string& top : tops) {
        std::string abs = Cat(top, "/", *expanded);
        if (HasGlobChars(*expanded)) {
          AddGlob(abs, r, &plan);
        } else {
          AddResolved(abs, r, r.walk, &plan);
        }
      }
      continue;
    }
    // A relative word after a cd through a procfs magic link is wherever
    // that link led.
    const std::string& magic = (*expanded)[0] == '/' ? std::string() : cd_magic;
    for (const std::string& abs : Absolutes(*expanded, bases)) {
      if (r.repository || r.git_dir) {
        Repository repo;
        if (r.repository) {
          repo = FindRepository(abs);
          AddNestedRepositories(&repo);
        } else {
          AddGitDirs(abs, &repo);
        }
        if (!repo.problem.empty() && plan.unknown.empty()) plan.unknown = repo.problem;
        // The work tree, all of it; without one, the directory git runs in.
        Parts at = repo.tops;
        if (at.empty()) at.push_back(abs);
        if (r.repository) {
          for (const std::string& top : at) {
            if (std::find(tops.begin(), tops.end(), top) == tops.end()) tops.push_back(top);
            AddResolved(top, r, !repo.tops.empty(), &plan, magic);
          }
        } else {
          AddResolved(abs, r, r.walk, &plan, magic);
        }
        // The repository wherever it is: git opens its files through
        // whatever symlinks they are.
        FileRead linked = r;
        linked.follows_links = true;
        for (const std::string& git_dir : repo.git_dirs) {
          AddResolved(git_dir, linked, true, &plan, magic);
        }
        continue;
      }
      if (HasGlobChars(abs)) {
        AddGlob(abs, r, &plan, magic);
      } else {
        AddResolved(abs, r, r.walk, &plan, magic);
      }
    }
  }
  return plan;
}

namespace {

// Why a workspace root at `physical` (symlinks resolved) is too broad to
// be read freely; "" when it is not.
std::string TooBroad(const Parts& physical) {
  if (physical.empty()) return "the root directory";
  Parts visited;
  std::optional<std::string> home_word = ExpandHome("~");
  Parts home;
  if (home_word && !home_word->empty() && (*home_word)[0] == '/') {
    home = SplitPath(Physical(*home_word, &visited));
  }
  if (!home.empty()) {
    if (physical == home) return "the home directory";
    if (AtOrUnder(home, physical)) return "an ancestor of the home directory";
    if (physical.size() > home.size() && AtOrUnder(physical, home) &&
        StartsWith(physical[home.size()], ".")) {
      return Cat("a dot-directory of the home (", JoinAbs(home), "/", physical[home.size()], ")");
    }
  }
  // macOS keeps /etc, /var and /tmp under /private.
  Parts p = physical;
  if (p.size() > 1 && p[0] == "private") p.erase(p.begin());
  // At or under these: system and other users' files.
  static constexpr std::string_view kUnder[] = {"etc",  "usr", "proc", "sys", "dev",
                                                "boot", "run", "snap", "bin", "sbin"};
  // Under /var: at or under these; /var itself; other /var/x (www,
  // macOS's per-user temp /var/folders) may hold workspaces.
  static constexpr std::string_view kVarUnder[] = {"log",   "lib",   "cache",   "spool", "mail",
                                                   "run",   "db",    "backups", "root",  "lock",
                                                   "audit", "empty", "agentx",  "vm"};
  // Only these themselves: directories that hold workspaces.
  static constexpr std::string_view kItself[] = {"tmp", "home",  "opt",   "srv",
                                                 "mnt", "media", "Users", "Volumes"};
  auto in = [](const auto& list, std::string_view name) {
    return std::find(std::begin(list), std::end(list), name) != std::end(list);
  };
  const std::string& top = p[0];
  bool broad = StartsWith(top, "lib") || in(kUnder, top);
  // /root is the home of root: the home rules above decide for that user.
  if (top == "root" && (home.empty() || home[0] != "root")) broad = true;
  if (top == "var") {
    broad = p.size() == 1 || in(kVarUnder, p[1]) || (p.size() == 2 && p[1] == "tmp");
  }
  if (p.size() == 1 && in(kItself, top)) broad = true;
  if (broad) {
    return Cat("a system directory (",
               JoinAbs(Parts(p.begin(), p.begin() + (top == "var" && p.size() > 1 ? 2 : 1))), ")");
  }
  return "";
}

}  // namespace

ReadScope MakeReadScope(const std::vector<std::string>& read_paths, const CheckContext& context) {
  std::string base = context.cwd.empty() || context.cwd[0] != '/' ? kUnknownCwd : context.cwd;
  std::vector<std::string> entries = read_paths;
  bool workspace = entries.empty();
  if (entries.empty()) entries = context.read_roots;
  if (entries.empty()) entries = {base};
  ReadScope scope;
  for (const std::string& e : entries) {
    if (e.empty()) continue;
    Parts parts = EntryParts(e, base);
    if (workspace && JoinAbs(parts) != kUnknownCwd) {
      Parts visited;
      std::string why = TooBroad(SplitPath(Physical(JoinAbs(parts), &visited)));
      if (why.empty()) why = TooBroad(parts);
      if (!why.empty()) {
        if (scope.too_broad.empty()) {
          scope.too_broad = Cat("the workspace ", JoinAbs(parts), " is ", why);
        }
        continue;
      }
    }
    scope.shown.push_back(Shown(JoinAbs(parts)));
    Parts physical = PhysicalEntry(parts);
    if (physical != parts) scope.entries.push_back(std::move(physical));
    scope.entries.push_back(std::move(parts));
  }
  return scope;
}

bool RunsWithin(const std::vector<std::string>& cwd_globs, const SimpleCommand& c,
                const ParsedLine& line, const CheckContext& context) {
  if (context.cwd.empty() || context.cwd[0] != '/' || !c.via.empty()) return false;
  if (!UnknownDirectoryChange(line).empty()) return false;
  Parts bases = Bases(line, context.cwd);
  if (bases.empty() || bases.size() >= kMaxBases) return false;
  ReadScope scope = MakeReadScope(cwd_globs, context);
  for (const std::string& base : bases) {
    Parts visited;
    if (!InScope(scope, Lexical(base), false) ||
        !InScope(scope, SplitPath(Physical(base, &visited)), false)) {
      return false;
    }
  }
  return true;
}

namespace {

// The components of `glob` before its first glob component.
size_t FixedPrefix(const Parts& glob) {
  size_t fixed = 0;
  while (fixed < glob.size() && !IsGlobComponent(glob[fixed])) ++fixed;
  return fixed;
}

}  // namespace

bool GlobWithin(const std::string& inner, const std::string& outer) {
  std::optional<std::string> in = ExpandHome(inner);
  std::optional<std::string> out = ExpandHome(outer);
  if (!in || !out || in->empty() || out->empty() || (*in)[0] != '/' || (*out)[0] != '/') {
    return false;
  }
  Parts in_parts = SplitPath(*in);
  for (const std::string& part : in_parts) {
    if (part == ".." || part == ".") return false;
  }
  if (*in == *out) return true;
  Parts out_parts = SplitPath(*out);
  // `outer` must cover a whole tree: a plain path, or a plain path and "**".
  if (!out_parts.empty() && out_parts.back() == "**") out_parts.pop_back();
  if (FixedPrefix(out_parts) != out_parts.size()) return false;
  if (!AtOrUnder(in_parts, out_parts)) return false;
  // The fixed part of `inner` must not lead elsewhere through a symlink.
  Parts fixed(in_parts.begin(), in_parts.begin() + static_cast<long>(FixedPrefix(in_parts)));
  Parts visited;
  Parts in_physical = SplitPath(Physical(JoinAbs(fixed), &visited));
  Parts out_physical = SplitPath(Physical(JoinAbs(out_parts), &visited));
  return AtOrUnder(in_physical, out_physical);
}

// Devices every program may read whatever the scope: they hold no one's
// data (tail -f /dev/null, head -c N /dev/zero, cat /dev/stdin).
static bool HarmlessDevice(const ResolvedRead& r) {
  static constexpr std::string_view kDevices[] = {"/dev/null",    "/dev/zero",  "/dev/random",
                                                  "/dev/urandom", "/dev/stdin", "/dev/tty"};
  if (r.walk) return false;
  for (std::string_view device : kDevices) {
    if (r.path == device) return true;
  }
  return false;
}

// A symlink below the walk `r` (which follows links) that leads outside
// `scope`, as "link -> target"; a directory it leads to is a walk of its
// own, scanned in turn. More than kMaxWalkEntries entries count as outside.
static std::optional<std::string> LinkOutside(const ResolvedRead& r, const ReadScope& scope) {
  std::vector<std::string> entered = {JoinAbs(r.physical)};
  std::optional<std::string> outside;
  auto visit = [&](const std::string&, std::string_view, const std::string& path, unsigned char,
                   const auto& enter) {
    struct stat st;
    if (lstat(path.c_str(), &st) != 0) return false;
    if (S_ISDIR(st.st_mode)) {
      enter(path);
      return false;
    }
    if (!S_ISLNK(st.st_mode)) return false;
    Parts visited;
    std::string magic;
    std::string target = Physical(path, &visited, &magic);
    if (!magic.empty()) {
      outside = Cat(path, " (a symlink through ", magic, ")");
      return true;
    }
    struct stat ts;
    bool is_dir = stat(target.c_str(), &ts) == 0 && S_ISDIR(ts.st_mode);
    if (!InScope(scope, SplitPath(target), is_dir)) {
      outside = Cat(path, " (a symlink to ", target, ")");
      return true;
    }
    if (is_dir && std::find(entered.begin(), entered.end(), target) == entered.end()) {
      entered.push_back(target);
      enter(target);
    }
    return false;
  };
  if (WalkBelow(entered.front(), visit) == WalkEnd::kTooMany) {
    return Cat(Shown(r.path), " (more than ", kMaxWalkEntries, " entries to check for symlinks)");
  }
  return outside;
}

std::optional<std::string> FirstReadOutside(const ReadPlan& plan, const ReadScope& scope,
                                            bool* walk) {
  for (const ResolvedRead& r : plan.reads) {
    if (r.pattern || HarmlessDevice(r)) continue;
    *walk = r.walk;
    // Wherever the reading process's cwd, files or root lead: no scope
    // covers that.
    if (!r.magic.empty()) return Cat(Shown(r.path), " (through ", r.magic, ")");
    if (!InScope(scope, r.lexical, r.walk)) return Shown(r.path);
    if (!InScope(scope, r.physical, r.walk)) {
      return Cat(Shown(r.path), " (a symlink to ", JoinAbs(r.physical), ")");
    }
  }
  // Walks that follow symlinks read where the links lead.
  for (const ResolvedRead& r : plan.reads) {
    if (r.pattern || !r.walk || !r.follows_links) continue;
    if (std::optional<std::string> out = LinkOutside(r, scope)) {
      *walk = true;
      return out;
    }
  }
  return std::nullopt;
}

// The secrets a home holds, relative to it: the one list of them. Each is
// sensitive under ~ and wherever else it appears, for a copy of a home is
// as secret as the home (another user's home when the broker runs as root,
// a backup, /mnt/c/Users/x on WSL).
constexpr std::string_view kHomeSecrets[] = {".ssh/**",
                                             ".gnupg/**",
                                             ".aws/**",
                                             ".azure/**",
                                             ".config/gcloud/**",
                                             ".kube/**",
                                             ".docker/config.json",
                                             ".netrc",
                                             ".git-credentials",
                                             ".config/git/credentials",
                                             ".pgpass",
                                             ".pypirc",
                                             ".npmrc",
                                             ".config/gh/hosts.yml",
                                             ".password-store/**"};

const std::vector<std::string>& DefaultSensitivePaths() {
  static const auto* paths = [] {
    auto* out = new std::vector<std::string>;
    for (std::string_view s : kHomeSecrets) out->push_back(Cat("~/", s));
    for (const char* p :
         {"**/.env", "**/.env.*", "**/*.pem", "**/*.key", "**/id_rsa*", "**/id_dsa*",
          "**/id_ecdsa*", "**/id_ed25519*", "/etc/shadow", "/etc/gshadow", "/etc/sudoers*",
          "/etc/sudoers.d/**", "/root/**",
          // The same names wherever they are (a copied dotfile, a
          // container's home), and more of them: environment files, key
          // stores, tokens, shell and client histories, database passwords.
          "**/.envrc", "**/*.env", "**/*.p12", "**/*.pfx", "**/*.jks", "**/*.keystore",
          "**/credentials.json", "**/*.tfvars", "**/*.tfstate", "**/*.tfstate.backup",
          "**/.vault-token", "**/.bash_history", "**/.zsh_history", "**/.*_history", "**/.my.cnf",
          // Secrets files in data formats; secrets.go or secrets.py is code.
          "**/secrets.yml", "**/secrets.yaml", "**/secrets.json", "**/secrets.toml",
          "**/secrets.env", "**/secrets.ini"}) {
      out->push_back(p);
    }
    for (std::string_view s : kHomeSecrets) out->push_back(Cat("**/", s));
    return out;
  }();
  return *paths;
}

std::optional<SensitiveHit> FirstSensitiveRead(const ReadPlan& plan,
                                               const std::vector<std::string>& patterns) {
  Patterns ps = CompilePatterns(patterns);
  if (ps.parts.empty()) return std::nullopt;
  for (const ResolvedRead& r : plan.reads) {
    std::string shown = Shown(r.path);
    if (auto hit = MatchOne(ps, r.lexical, r.walk, shown)) return hit;
    if (r.pattern) continue;
    if (auto hit = MatchOne(ps, r.physical, r.walk,
                            Cat(shown, " (a symlink to ", JoinAbs(r.physical), ")"))) {
      return hit;
    }
    for (const std::string& link : r.links) {
      if (auto hit = MatchOne(ps, SplitPath(link), false, link)) return hit;
    }
    // Through /proc/self/cwd, /proc/<pid>/root, /proc/self/fd/N, ...: the
    // path says nothing of the file it opens.
    if (!r.magic.empty() && !HarmlessDevice(r)) {
      return SensitiveHit{Cat(shown, " (through ", r.magic, ")"), MagicLinkPattern(r.magic)};
    }
  }
  for (const ResolvedRead& r : plan.reads) {
    if (!r.walk || r.pattern) continue;
    if (auto hit = ScanWalk(r, ps)) return hit;
  }
  return std::nullopt;
}

std::optional<std::string> ProcessListingProblem(const SimpleCommand& c) {
  if (c.program != "ps") return std::nullopt;
  const std::vector<std::string>& a = c.argv;
  static constexpr std::string_view kOthers = "it lists other users' or all processes";
  for (size_t i = 1; i < a.size(); ++i) {
    const std::string& w = a[i];
    std::string next = i + 1 < a.size() ? a[i + 1] : "";
    if (w == "--") continue;
    if (StartsWith(w, "--")) {
      size_t eq = w.find('=');
      std::string name = w.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      std::string value = eq == std::string::npos ? next : w.substr(eq + 1);
      for (std::string_view n : {"user", "User"}) {
        if (name == n) {
          if (!OnlyMe(value)) return Cat("--", name, " ", value, ": ", kOthers);
          if (eq == std::string::npos) ++i;
        }
      }
      for (std::string_view n :
           {"deselect", "pid", "ppid", "sid", "tty", "group", "Group", "quick-pid"}) {
        if (name == n) return Cat("--", name, ": ", kOthers);
      }
      for (std::string_view n :
           {"format", "sort", "cols", "columns", "width", "lines", "rows", "context"}) {
        if (name == n && eq == std::string::npos) ++i;
      }
      continue;
    }
    if (w[0] == '-') {
      for (size_t k = 1; k < w.size(); ++k) {
        char ch = w[k];
        std::string value = k + 1 < w.size() ? w.substr(k + 1) : next;
        if (std::string_view("AadeNx").find(ch) != std::string_view::npos) {
          return Cat("-", ch, ": ", kOthers);
        }
        if (std::string_view("CGgpqst").find(ch) != std::string_view::npos) {
          return Cat("-", ch, " ", value, ": ", kOthers);
        }
        if (ch == 'U' || ch == 'u') {
          if (!OnlyMe(value)) return Cat("-", ch, " ", value, ": ", kOthers);
        }
        if (std::string_view("UuoOk").find(ch) != std::string_view::npos) {
          if (k + 1 == w.size()) ++i;
          break;
        }
      }
      continue;
    }
    if (IsDigits(w)) return Cat(w, ": it lists another process by its pid");
    // BSD options: a word without a dash.
    for (size_t k = 0; k < w.size(); ++k) {
      char ch = w[k];
      std::string value = k + 1 < w.size() ? w.substr(k + 1) : next;
      if (ch == 'e') return "BSD option e: it prints processes' environments";
      if (std::string_view("axgpqUt").find(ch) != std::string_view::npos) {
        return Cat("BSD option ", ch, ": ", kOthers);
      }
      if (std::string_view("Ook").find(ch) != std::string_view::npos) {
        if (k + 1 == w.size()) ++i;
        break;
      }
    }
  }
  return std::nullopt;
}

std::vector<std::string> ReadPathsFor(const ReadPlan& plan) {
  std::vector<std::string> out;
  auto add = [&out](const Parts& parts, bool walk) {
    std::string path = JoinAbs(parts);
    std::string_view sentinel = kUnknownCwd;
    std::string glob;
    if (path == sentinel) {
      glob = ".";
    } else if (StartsWith(path, Cat(sentinel, "/"))) {
      glob = EscapeReadGlob(path.substr(sentinel.size() + 1));
    } else {
      glob = EscapeReadGlob(path);
    }
    if (walk) glob = glob == "/" ? "/**" : Cat(glob, "/**");
    if (std::find(out.begin(), out.end(), glob) == out.end()) out.push_back(std::move(glob));
  };
  for (const ResolvedRead& r : plan.reads) {
    if (r.pattern) continue;
    add(r.lexical, r.walk);
    if (r.physical != r.lexical) add(r.physical, r.walk);
  }
  return out;
}

std::string EscapeReadGlob(std::string_view path) {
  std::string out;
  for (char c : path) {
    if (c == '*' || c == '?' || c == '[' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

}  // namespace termbridge::policy::internal
