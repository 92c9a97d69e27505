// The syntax of git's configuration files (.git/config, config.worktree),
// read the way git's own parser (config.c) reads it: [section],
// [section "subsection"], the old [section.subsection], key = value, a bare
// key (boolean true), # and ; comments, quoted values, backslash escapes and
// line continuation, CRLF line ends. Section and key names are returned
// lowercased; a quoted subsection keeps its case. It only reads: includes are
// entries like any other, not followed.
#ifndef TERMBRIDGE_COMMON_WORKDIR_GIT_CONFIG_SYNTAX_H_
#define TERMBRIDGE_COMMON_WORKDIR_GIT_CONFIG_SYNTAX_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace termbridge::workdir {

// One `key = value` of a config file.
struct GitConfigEntry {
  std::string section;     // lowercased; "" for a key before any section header
  std::string subsection;  // "" when there is none; [a.b] gives "b" lowercased
  bool has_subsection = false;
  std::string key;    // lowercased
  std::string value;  // unquoted and unescaped; "" for a bare key
  bool bare = false;  // written without '=' (git reads it as boolean true)
  int line = 0;       // 1-based line on which the key starts

  // The dotted name git prints: "remote.origin.url", "core.fsmonitor".
  std::string Name() const;
};

// Every entry of `text`, in file order. InvalidArgument "line N: ..." where
// git itself would refuse the file ("bad config line N").
absl::StatusOr<std::vector<GitConfigEntry>> ParseGitConfig(std::string_view text);

}  // namespace termbridge::workdir

#endif  // TERMBRIDGE_COMMON_WORKDIR_GIT_CONFIG_SYNTAX_H_
