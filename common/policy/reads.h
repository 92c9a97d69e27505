// What a simple command reads: the files and directories each program
// opens, as the words name them, and which of them it walks (reads every
// file below). Per program for the read-only programs the default policy
// allows (cat, grep, ls, tree, du, diff, git, ...); any other program is
// taken to read every operand. Resolving the words to absolute paths and
// judging them against a read scope is read_scope.h's job.
#ifndef TERMBRIDGE_COMMON_POLICY_READS_H_
#define TERMBRIDGE_COMMON_POLICY_READS_H_

#include <string>
#include <vector>

#include "common/policy/policy.h"

namespace termbridge::policy::internal {

struct FileRead {
  std::string word;                // the path as written (relative, ~, glob...)
  bool walk = false;               // reads everything below it (grep -r, du, tree)
  bool follows_links = false;      // a walk that follows symlinks it finds (grep -R, du -L)
  bool walk_if_directory = false;  // diff: a directory operand reads the files in it
  // git: the directory git runs in; what it reads is the repository, a walk
  // of the work tree's top level (the nearest directory up holding .git).
  bool repository = false;
  // git --git-dir: a git dir (or a .git file naming one) that git reads as
  // the repository, with its common dir and alternates.
  bool git_dir = false;
  // git: a path inside the repository, relative to its top level (REV:path,
  // :/path), not to the cwd.
  bool from_top = false;
};

struct CommandReads {
  std::vector<FileRead> reads;  // argv reads, then `< file` sources
  // Why the command also reads files whose names are only known when it
  // runs (sha256sum -c, wc --files0-from, file -f); "" when it does not.
  std::string unknown;
};

// The files `command` reads. Known programs are parsed like their own
// getopt would (clusters, attached values, `--`); a long option written
// shorter than its name makes the reads unknown (`unknown`), as the tables
// do not list every option it could be; a program
// this file does not know reads every non-option operand. Programs that
// read no file (echo, pwd, id, ps, ...) read only their `<` sources.
CommandReads ReadsOf(const SimpleCommand& command);

// Whether ReadsOf knows the program (its reads are exact, not every operand).
bool KnowsReads(const std::string& program);

}  // namespace termbridge::policy::internal

#endif  // TERMBRIDGE_COMMON_POLICY_READS_H_
