// The programs whose input is code: named exactly, or as a family whose
// versioned names share a stem (python3.11, perl5.36, lua5.4).
#include "broker/core/input_readers.h"

#include <algorithm>
#include <cctype>
#include <iterator>

namespace termbridge::core {
namespace {

constexpr std::string_view kExact[] = {
    // shells
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "pdksh", "oksh", "yash", "fish", "csh", "tcsh",
    "ash", "busybox", "rbash", "nu", "elvish", "xonsh", "pwsh",
    // pagers and viewers with shell escapes or editors behind a key
    "less", "more", "most", "pg", "man", "info", "pinfo", "w3m", "lynx", "elinks",
    // editors
    "vi", "vim", "vim.basic", "vim.tiny", "vim.nox", "vim.gtk3", "nvim", "view", "vimdiff", "rvim",
    "ex", "ed", "red", "emacs", "emacs-nox", "emacsclient", "nano", "rnano", "pico", "joe", "jed",
    "mcedit", "micro", "kak", "helix", "hx", "ne", "mg", "zile",
    // REPLs and interpreters reading code from stdin
    "ipython", "ipython3", "bpython", "irb", "pry", "node", "nodejs", "deno", "bun", "php", "R",
    "Rscript", "julia", "ghci", "scala", "jshell", "sbcl", "clisp", "guile", "racket", "ocaml",
    "utop", "erl", "iex", "elixir", "gawk", "awk", "mawk", "nawk", "bc", "dc", "m4", "expect",
    "wish", "gnuplot", "octave", "sage", "maxima", "swipl", "gforth",
    // debuggers
    "gdb", "lldb", "pdb", "jdb", "rr", "radare2", "r2", "strace", "ltrace",
    // clients with shell escapes or remote shells
    "sqlite3", "duckdb", "mysql", "mysqlsh", "mariadb", "psql", "rlwrap", "redis-cli", "mongo",
    "mongosh", "cqlsh", "ssh", "telnet", "ftp", "sftp", "lftp", "tftp", "smbclient", "mail",
    "mailx", "mutt", "neomutt", "nc", "ncat", "netcat", "socat", "openssl", "docker", "podman",
    "kubectl", "nsenter", "chroot", "machinectl", "lxc", "virsh",
    // multiplexers, schedulers and things that run what they read
    "screen", "tmux", "script", "xargs", "parallel", "at", "batch", "crontab", "make", "gmake",
    "sudo", "su", "doas", "sudoedit", "passwd", "top", "htop", "btop", "atop", "mc", "ranger",
    "nnn", "lf", "vifm", "tig", "lazygit", "fzf", "git", "unbuffer"};

// Families whose names carry a version: python3.11, perl5.36, ruby3.1.
constexpr std::string_view kStems[] = {"python", "pypy", "perl", "ruby",  "lua",   "luajit", "php",
                                       "tclsh",  "node", "java", "guile", "emacs", "vim"};

// A known name with a build or version suffix: gdb-multiarch, python3-dbg,
// ipython3.11, vim.athena, nvim-qt, ksh93.
bool KnownWithSuffix(std::string_view program, std::string_view known) {
  if (program.size() <= known.size() || program.substr(0, known.size()) != known) return false;
  const char next = program[known.size()];
  return std::isdigit(static_cast<unsigned char>(next)) || next == '.' || next == '-' ||
         next == '_';
}

}  // namespace

bool RunsCommandsFromInput(std::string_view program) {
  // A process whose file cannot be read names itself (its comm): it could
  // be anything (session/pty_process.cc, ProgramOf).
  if (program.substr(0, 9) == "(unknown ") return true;
  if (std::find(std::begin(kExact), std::end(kExact), program) != std::end(kExact)) return true;
  for (std::string_view known : kExact) {
    if (known.size() >= 2 && KnownWithSuffix(program, known)) return true;
  }
  for (std::string_view stem : kStems) {
    if (KnownWithSuffix(program, stem)) return true;
    if (program.substr(0, stem.size()) != stem) continue;
    std::string_view rest = program.substr(stem.size());
    bool versioned = std::all_of(rest.begin(), rest.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-';
    });
    if (versioned) return true;
  }
  return false;
}

std::optional<std::string> CommandReader(const std::vector<std::string>& programs) {
  for (const std::string& p : programs) {
    if (RunsCommandsFromInput(p)) return p;
  }
  return std::nullopt;
}

}  // namespace termbridge::core
