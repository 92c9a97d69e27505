// The allow lists behind workdir_config.h: the config keys that are data
// (each checked against Documentation/config/*.txt: none names a program, a
// file of commands, another config file or a hook directory), and the hooks
// that only history-writing or remote commands run. Anything not listed is
// reported; a key is added here only after reading what git does with it.
#include <algorithm>
#include <string_view>

#include "common/workdir/path_text.h"
#include "common/workdir/workdir_config.h"

namespace termbridge::workdir {
namespace {

template <size_t N>
bool OneOf(std::string_view s, const std::string_view (&list)[N]) {
  return std::find(std::begin(list), std::end(list), s) != std::end(list);
}

// core.* without a subsection. Not here on purpose: fsmonitor, pager, editor,
// askpass, sshcommand, gitproxy, hookspath, alternaterefscommand,
// attributesfile and excludesfile (they name files), worktree (judged by
// where it points), protectntfs/protecthfs (safety switches).
bool IsHarmlessCoreKey(std::string_view key) {
  static constexpr std::string_view kKeys[] = {"repositoryformatversion",
                                               "filemode",
                                               "bare",
                                               "logallrefupdates",
                                               "ignorecase",
                                               "precomposeunicode",
                                               "symlinks",
                                               "autocrlf",
                                               "eol",
                                               "safecrlf",
                                               "quotepath",
                                               "sharedrepository",
                                               "compression",
                                               "loosecompression",
                                               "abbrev",
                                               "checkstat",
                                               "trustctime",
                                               "untrackedcache",
                                               "preloadindex",
                                               "splitindex",
                                               "commentchar",
                                               "commentstring",
                                               "whitespace",
                                               "multipackindex",
                                               "commitgraph",
                                               "sparsecheckout",
                                               "sparsecheckoutcone",
                                               "bigfilethreshold",
                                               "warnambiguousrefs"};
  return OneOf(key, kKeys);
}

// extensions.*: partialclone is not here (it makes reads fetch from a remote
// the repository names), nor any extension git does not know yet.
bool IsHarmlessExtension(std::string_view key) {
  static constexpr std::string_view kKeys[] = {"objectformat", "compatobjectformat",
                                               "worktreeconfig", "refstorage", "preciousobjects"};
  return OneOf(key, kKeys);
}

// remote.<name>.*: where to fetch and push. Not here: uploadpack, receivepack,
// vcs (a remote helper), proxy, promisor, partialclonefilter.
bool IsHarmlessRemoteKey(std::string_view key) {
  static constexpr std::string_view kKeys[] = {
      "url",    "pushurl",           "fetch",       "push", "tagopt", "prune", "prunetags",
      "mirror", "skipdefaultupdate", "skipfetchall"};
  return OneOf(key, kKeys);
}

// branch.<name>.*: tracking. Not here: mergeoptions (passes options to merge).
bool IsHarmlessBranchKey(std::string_view key) {
  static constexpr std::string_view kKeys[] = {"remote", "merge", "rebase", "pushremote",
                                               "description"};
  return OneOf(key, kKeys);
}

bool IsHarmlessPlainKey(std::string_view section, std::string_view key) {
  if (section == "core") return IsHarmlessCoreKey(key);
  if (section == "extensions") return IsHarmlessExtension(key);
  if (section == "color" || section == "advice") return true;  // colours and hints only
  if (section == "user") return key == "name" || key == "email";
  if (section == "init") return key == "defaultbranch";
  if (section == "pull") return key == "rebase" || key == "ff";
  if (section == "push") return key == "default" || key == "autosetupremote";
  if (section == "fetch") return key == "prune" || key == "prunetags";
  if (section == "gc") return key == "auto";
  if (section == "lfs") return key == "repositoryformatversion";
  if (section == "index") {
    static constexpr std::string_view kKeys[] = {
        "version", "threads", "skiphash", "sparse", "recordendofindexentries", "recordoffsettable"};
    return OneOf(key, kKeys);
  }
  return false;
}

}  // namespace

bool IsHarmlessGitConfigKey(std::string_view section, bool has_subsection,
                            std::string_view subsection, std::string_view key) {
  if (!has_subsection) return IsHarmlessPlainKey(section, key);
  if (subsection.empty()) return false;
  if (section == "remote") return IsHarmlessRemoteKey(key);
  if (section == "branch") return IsHarmlessBranchKey(key);
  // Written by `git clone --recurse-submodules`; update (which may be "!cmd")
  // is not here.
  if (section == "submodule") return key == "url" || key == "active";
  if (section == "color") return true;           // color.diff.<slot>, color.status.<slot>
  if (section == "lfs") return key == "access";  // lfs."<url>".access = basic
  return false;
}

bool IsHookNotRunByReadOnlyGit(std::string_view name) {
  if (internal::EndsWith(name, ".sample")) return true;
  // Run by commit, merge, rebase, am, checkout/switch/clone, push, gc --auto,
  // send-email, git-p4 and the receiving end of a push. Not here: anything
  // else, notably post-index-change (run when `git status` refreshes the
  // index), reference-transaction and fsmonitor-watchman.
  static constexpr std::string_view kHooks[] = {"applypatch-msg",
                                                "pre-applypatch",
                                                "post-applypatch",
                                                "pre-commit",
                                                "pre-merge-commit",
                                                "prepare-commit-msg",
                                                "commit-msg",
                                                "post-commit",
                                                "pre-rebase",
                                                "post-checkout",
                                                "post-merge",
                                                "pre-push",
                                                "pre-receive",
                                                "update",
                                                "proc-receive",
                                                "post-receive",
                                                "post-update",
                                                "push-to-checkout",
                                                "pre-auto-gc",
                                                "post-rewrite",
                                                "sendemail-validate",
                                                "p4-changelist",
                                                "p4-prepare-changelist",
                                                "p4-post-changelist",
                                                "p4-pre-submit"};
  return OneOf(name, kHooks);
}

}  // namespace termbridge::workdir
