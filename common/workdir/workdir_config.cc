// How FindGitConfigThatRunsCode gets from a directory to its risks:
//   1. the directory, resolved with realpath, and each parent up to "/"
//      (bounded): a .git directory, a .git file ("gitdir: <path>"), or the
//      directory itself being a bare repository, as git's setup.c finds them;
//   2. the git directory and, for a linked worktree, its common directory
//      (the "commondir" file): config and config.worktree of each, each file
//      read with a size cap and parsed by git_config_syntax.h;
//   3. every key outside the allow list (git_allow_list.cc), core.worktree
//      unless it names the directory the repository was found in;
//   4. the hooks directory, for hooks a read-only command can run;
//   5. the index's gitlinks: each populated submodule is checked the same
//      way, recursively, with bounds on depth and count.
// Every file is opened non-blocking and must be a regular file, so a FIFO or
// a device planted in .git cannot stall the broker.
#include "common/workdir/workdir_config.h"

#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/workdir/git_config_syntax.h"
#include "common/workdir/git_discovery.h"
#include "common/workdir/git_index_gitlinks.h"
#include "common/workdir/path_text.h"

namespace termbridge::workdir {
namespace {

using internal::StartsWith;

constexpr size_t kMaxConfigBytes = size_t{1} << 20;
constexpr size_t kMaxIndexBytes = size_t{64} << 20;
constexpr int kMaxWalkLevels = 512;
constexpr int kMaxSubmoduleDepth = 8;
constexpr size_t kMaxSubmodules = 256;
constexpr size_t kMaxHookEntries = 256;

// The status's message without the code prefix: "Permission denied".
std::string Reason(const absl::Status& s) {
  std::string m(s.message());
  if (StartsWith(m, ": ")) m.erase(0, 2);
  return m.empty() ? absl::StatusCodeToString(s.code()) : m;
}

std::string Parent(const std::string& dir) {
  size_t slash = dir.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : dir.substr(0, slash);
}

std::string Join(const std::string& dir, std::string_view name) {
  return dir == "/" ? absl::StrCat("/", std::string(name))
                    : absl::StrCat(dir, "/", std::string(name));
}

struct GitRepo {
  std::string git_dir;     // real path
  std::string common_dir;  // real path; git_dir unless a commondir file says otherwise
  std::string worktree;    // real path; "" for a bare repository
};

GitRepo MakeRepo(const std::string& git_dir, const std::string& worktree) {
  std::string real = RealPath(git_dir).value_or(git_dir);
  return GitRepo{real, CommonDirOf(real), worktree};
}

// Collects risks with a cap, naming files relative to the top worktree.
class RiskCollector {
 public:
  explicit RiskCollector(GitRepoRisks& out) : out_(out) {}

  void SetTop(std::string top) { top_ = std::move(top); }

  void Add(std::string what, std::string where) {
    if (out_.risks.size() >= GitRepoRisks::kMaxRisks) {
      out_.truncated = true;
      return;
    }
    out_.risks.push_back(GitCodeRisk{std::move(what), std::move(where)});
  }

  // `path` relative to the top worktree when inside it.
  std::string Show(const std::string& path) const {
    if (!top_.empty() && top_ != "/" && StartsWith(path, top_ + "/")) {
      return path.substr(top_.size() + 1);
    }
    return path;
  }

  bool full() const { return out_.truncated; }
  // Records `git_dir` as visited; false when it already was.
  bool Visit(const std::string& git_dir) { return visited_.insert(git_dir).second; }
  // Counts one more submodule to check; false past kMaxSubmodules.
  bool CountSubmodule() { return ++submodules_ <= kMaxSubmodules; }

 private:
  GitRepoRisks& out_;
  std::string top_;
  std::set<std::string> visited_;
  size_t submodules_ = 0;
};

// What one directory holds, as git's discovery sees it.
struct Probe {
  enum Kind { kNone, kRepo, kBroken } kind = kNone;
  GitRepo repo;
};

// A .git file: "gitdir: <path>", the path relative to the file's directory.
Probe ProbeGitFile(const std::string& dir, const std::string& dot_git, RiskCollector& risks) {
  absl::StatusOr<std::string> git_dir = GitFileTarget(dot_git);
  if (absl::IsInvalidArgument(git_dir.status())) {
    risks.Add(absl::StrCat("cannot parse ", risks.Show(dot_git), ": ", git_dir.status().message()),
              "");
    return {Probe::kBroken, {}};
  }
  if (!git_dir.ok()) {
    risks.Add(absl::StrCat("cannot read ", risks.Show(dot_git), ": ", Reason(git_dir.status())),
              "");
    return {Probe::kBroken, {}};
  }
  if (!IsGitDirectory(*git_dir)) {
    risks.Add(absl::StrCat(risks.Show(dot_git), " names ", *git_dir, ", not a git directory"), "");
    return {Probe::kBroken, {}};
  }
  return {Probe::kRepo, MakeRepo(*git_dir, dir)};
}

// `dir` as one level of git's discovery: its .git, else itself when bare.
Probe ProbeDirectory(const std::string& dir, RiskCollector& risks) {
  std::string dot_git = Join(dir, ".git");
  struct stat st;
  if (stat(dot_git.c_str(), &st) == 0) {
    if (S_ISREG(st.st_mode)) return ProbeGitFile(dir, dot_git, risks);
    if (S_ISDIR(st.st_mode) && IsGitDirectory(dot_git)) {
      return {Probe::kRepo, MakeRepo(dot_git, dir)};
    }
  } else if (errno != ENOENT && errno != ENOTDIR) {
    risks.Add(absl::StrCat("cannot stat ", risks.Show(dot_git), ": ", strerror(errno)), "");
    return {Probe::kBroken, {}};
  }
  if (IsGitDirectory(dir)) return {Probe::kRepo, MakeRepo(dir, "")};
  return {Probe::kNone, {}};
}

void CheckRepo(const GitRepo& repo, int depth, RiskCollector& risks);

// Whether core.worktree = `value` (relative to the git dir) names the
// directory the repository was found in.
bool WorktreeIsHome(const GitRepo& repo, std::string_view value) {
  if (repo.worktree.empty()) return false;
  auto real = RealPath(ResolveFrom(value, repo.git_dir));
  return real.has_value() && *real == repo.worktree;
}

// Adds a risk for each entry of one config file outside the allow list, and
// sets `hash_size` to 32 when the file declares SHA-256 objects.
void CheckConfigFile(const GitRepo& repo, const std::string& path, RiskCollector& risks,
                     size_t& hash_size) {
  auto text = ReadBounded(path, kMaxConfigBytes);
  if (!text.ok()) {
    risks.Add(absl::StrCat("cannot read ", risks.Show(path), ": ", Reason(text.status())), "");
    return;
  }
  if (!text->has_value()) return;
  auto entries = ParseGitConfig(**text);
  if (!entries.ok()) {
    risks.Add(absl::StrCat("cannot parse ", risks.Show(path), ": ", entries.status().message()),
              "");
    return;
  }
  for (const GitConfigEntry& e : *entries) {
    if (e.section == "extensions" && !e.has_subsection && e.key == "objectformat" &&
        absl::AsciiStrToLower(e.value) == "sha256") {
      hash_size = 32;
    }
    bool worktree_key = e.section == "core" && !e.has_subsection && e.key == "worktree";
    if (worktree_key ? WorktreeIsHome(repo, e.value)
                     : IsHarmlessGitConfigKey(e.section, e.has_subsection, e.subsection, e.key)) {
      continue;
    }
    risks.Add(e.Name(), absl::StrCat(risks.Show(path), ":", e.line));
  }
}

// The config files git reads for `repo`, in the order it reads them.
std::vector<std::string> ConfigFiles(const GitRepo& repo) {
  std::vector<std::string> files = {Join(repo.common_dir, "config")};
  if (repo.common_dir != repo.git_dir) files.push_back(Join(repo.git_dir, "config"));
  files.push_back(Join(repo.common_dir, "config.worktree"));
  if (repo.common_dir != repo.git_dir) files.push_back(Join(repo.git_dir, "config.worktree"));
  return files;
}

void CheckHooks(const GitRepo& repo, RiskCollector& risks) {
  std::string hooks = Join(repo.common_dir, "hooks");
  DIR* d = opendir(hooks.c_str());
  if (d == nullptr) {
    if (errno != ENOENT && errno != ENOTDIR) {
      risks.Add(absl::StrCat("cannot list ", risks.Show(hooks), ": ", strerror(errno)), "");
    }
    return;
  }
  size_t seen = 0;
  while (struct dirent* e = readdir(d)) {
    std::string_view name = e->d_name;
    if (name == "." || name == ".." || IsHookNotRunByReadOnlyGit(name)) continue;
    if (++seen > kMaxHookEntries) break;
    risks.Add(absl::StrCat("hook ", std::string(name)), risks.Show(Join(hooks, name)));
  }
  closedir(d);
}

// Gitlink paths of `index_path` and of its split index's shared part.
absl::StatusOr<std::vector<std::string>> ReadGitlinks(const GitRepo& repo,
                                                      const std::string& index_path,
                                                      size_t hash_size, RiskCollector& risks) {
  auto bytes = ReadBounded(index_path, kMaxIndexBytes);
  if (!bytes.ok()) return bytes.status();
  if (!bytes->has_value()) return std::vector<std::string>{};
  auto links = ParseGitIndexGitlinks(**bytes, hash_size);
  if (!links.ok()) return links.status();
  if (links->shared_index.empty()) return std::move(links->paths);
  std::string name = absl::StrCat("sharedindex.", links->shared_index);
  std::string shared = Join(repo.git_dir, name);
  if (!ReadBounded(shared, kMaxIndexBytes).ok()) shared = Join(repo.common_dir, name);
  auto base = ReadBounded(shared, kMaxIndexBytes);
  if (!base.ok()) return base.status();
  if (!base->has_value()) return absl::NotFoundError(absl::StrCat(name, " is missing"));
  auto base_links = ParseGitIndexGitlinks(**base, hash_size);
  if (!base_links.ok()) return base_links.status();
  links->paths.insert(links->paths.end(), base_links->paths.begin(), base_links->paths.end());
  return std::move(links->paths);
}

// git status and git diff run git inside each populated submodule.
void CheckSubmodules(const GitRepo& repo, size_t hash_size, int depth, RiskCollector& risks) {
  if (repo.worktree.empty()) return;
  std::string index = Join(repo.git_dir, "index");
  auto paths = ReadGitlinks(repo, index, hash_size, risks);
  if (!paths.ok()) {
    risks.Add(absl::StrCat("cannot read ", risks.Show(index), ": ", Reason(paths.status())), "");
    return;
  }
  for (const std::string& path : *paths) {
    if (risks.full()) return;
    std::string dir = Join(repo.worktree, path);
    Probe probe = ProbeDirectory(dir, risks);
    if (probe.kind != Probe::kRepo || probe.repo.worktree != dir) continue;  // not populated
    if (depth >= kMaxSubmoduleDepth || !risks.CountSubmodule()) {
      risks.Add("submodules nested too deep or too many to check", risks.Show(dir));
      return;
    }
    CheckRepo(probe.repo, depth + 1, risks);
  }
}

void CheckRepo(const GitRepo& repo, int depth, RiskCollector& risks) {
  if (!risks.Visit(repo.git_dir)) return;
  size_t hash_size = 20;
  for (const std::string& file : ConfigFiles(repo)) CheckConfigFile(repo, file, risks, hash_size);
  CheckHooks(repo, risks);
  CheckSubmodules(repo, hash_size, depth, risks);
}

}  // namespace

std::string GitCodeRisk::ToString() const {
  return where.empty() ? what : absl::StrCat(what, " (", where, ")");
}

std::string GitRepoRisks::Summary() const {
  std::vector<std::string> parts;
  for (const GitCodeRisk& r : risks) parts.push_back(r.ToString());
  if (truncated) parts.push_back("...");
  return absl::StrJoin(parts, "; ");
}

namespace {

// git's discovery from the absolute directory `cwd` up to "/": the first
// directory that holds a repository (kRepo), one whose .git cannot be read
// (kBroken, with the reason in `risks`), or none. Each directory visited is
// the top `risks` names files from.
Probe WalkUp(const std::string& cwd, RiskCollector& risks) {
  std::optional<std::string> dir = RealPath(cwd);
  if (!dir.has_value()) {
    risks.Add(absl::StrCat("cannot resolve ", cwd, ": ", strerror(errno)), "");
    return {Probe::kBroken, {}};
  }
  for (int level = 0; level < kMaxWalkLevels; ++level) {
    risks.SetTop(*dir);
    Probe probe = ProbeDirectory(*dir, risks);
    if (probe.kind != Probe::kNone || *dir == "/") return probe;
    *dir = Parent(*dir);
  }
  risks.Add(absl::StrCat(cwd, " is more than ", kMaxWalkLevels, " directories deep"), "");
  return {Probe::kBroken, {}};
}

}  // namespace

absl::StatusOr<GitRepoRisks> FindGitConfigThatRunsCode(const std::string& cwd) {
  if (!StartsWith(cwd, "/")) {
    return absl::InvalidArgumentError(absl::StrCat("cwd is not absolute: \"", cwd, "\""));
  }
  GitRepoRisks out;
  RiskCollector risks(out);
  Probe probe = WalkUp(cwd, risks);
  if (probe.kind == Probe::kRepo) {
    out.git_dir = probe.repo.git_dir;
    risks.SetTop(probe.repo.worktree);
    CheckRepo(probe.repo, 0, risks);
  }
  return out;
}

absl::StatusOr<std::optional<GitLocation>> FindGitRepository(const std::string& cwd) {
  if (!StartsWith(cwd, "/")) {
    return absl::InvalidArgumentError(absl::StrCat("cwd is not absolute: \"", cwd, "\""));
  }
  GitRepoRisks problems;
  RiskCollector risks(problems);
  Probe probe = WalkUp(cwd, risks);
  if (probe.kind == Probe::kBroken) return absl::FailedPreconditionError(problems.Summary());
  if (probe.kind == Probe::kNone) return std::nullopt;
  return GitLocation{probe.repo.git_dir, probe.repo.common_dir, probe.repo.worktree};
}

}  // namespace termbridge::workdir
