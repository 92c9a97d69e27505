// Options with which a program the policy may allow runs another program or
// writes a file: `rg --pre CMD`, `sort --compress-program=CMD`, `tar
// --checkpoint-action=exec=CMD`, `git grep -O CMD`, `man -P CMD`, `less
// +!CMD`, `sort -o FILE`, `git log --output=FILE`, `find -delete`. A rule
// that allows `rg` or `tar -tf` by prefix never saw them; the parser makes
// such a command opaque (it runs a program) or adds the file to its write
// targets, whatever the policy. Options are spotted as getopt finds them
// (HasOption: clusters, attached values, abbreviations, after operands).
#ifndef TERMBRIDGE_COMMON_POLICY_PROGRAM_OPTIONS_H_
#define TERMBRIDGE_COMMON_POLICY_PROGRAM_OPTIONS_H_

#include <string>
#include <string_view>
#include <vector>

namespace termbridge::policy::internal {

struct OptionEffects {
  std::string runs;                 // why the command runs a program it names; "" when not
  std::vector<std::string> writes;  // files it writes through an option
};

// What the options of `argv` (argv[0] is the program, `prog` its basename)
// make the program do beyond its own work.
OptionEffects ProgramOptionEffects(std::string_view prog, const std::vector<std::string>& argv);

// The files the file utilities write through their operands and options
// (file_writes.cc): cp/mv/ln/install destinations (and mv's sources and
// backups), touch/mkdir/rm/rmdir/unlink/shred/truncate operands, the files
// chmod/chown/chgrp change, what tar extracts ("DIR/") or creates, what
// unzip extracts, and what curl and wget save; curl and wget options that
// read a file they name (-K, -T, @file, file:, -e) set `runs`.
void AddFileUtilityWrites(std::string_view prog, const std::vector<std::string>& argv,
                          OptionEffects* out);

}  // namespace termbridge::policy::internal

#endif  // TERMBRIDGE_COMMON_POLICY_PROGRAM_OPTIONS_H_
