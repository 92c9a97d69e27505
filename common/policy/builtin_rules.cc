// The predicates behind the built-in deny rules. They look at one simple
// command after wrappers were peeled (so `sudo /bin/rm -rf /` is seen as
// rm via sudo), and at the raw line for what the parser refuses to parse
// (function definitions, hence fork bombs). Paths are normalized (//, ., ..,
// ~, $HOME) before they are compared, and globs are matched against the
// protected set, so `rm -rf /*` and `rm -rf /u?r` are caught too.
#include "common/policy/builtin_rules.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "common/policy/options.h"
#include "common/policy/protected_paths.h"
#include "common/policy/shell_parser.h"
#include "common/policy/text.h"
#include "re2/re2.h"

namespace termbridge::policy::internal {
namespace {

bool IsOption(const std::string& a) { return a.size() > 1 && a[0] == '-'; }
bool IsShortCluster(const std::string& a) { return IsOption(a) && a[1] != '-'; }

// Any of `options` as getopt would see it (HasOption: clusters, attached
// values, long prefixes). For the options that make a command dangerous.
bool AnyOption(const SimpleCommand& c, std::initializer_list<std::string_view> options) {
  for (std::string_view o : options) {
    if (HasOption(c, o)) return true;
  }
  return false;
}

// Any of `options` surely given (HasOptionSurely). For the options that
// exempt a command, where an abbreviation or a letter inside a cluster could
// be something else.
bool AnyOptionSurely(const SimpleCommand& c, std::initializer_list<std::string_view> options) {
  for (std::string_view o : options) {
    if (HasOptionSurely(c, o)) return true;
  }
  return false;
}

// True when every option word before `--` is one of `short_flags` (letters
// of flags that take no value, alone or clustered) or exactly one of
// `long_flags`, and at least one is given.
bool OnlyFlagsFrom(const SimpleCommand& c, std::string_view short_flags,
                   std::initializer_list<std::string_view> long_flags) {
  bool any = false;
  for (size_t i = 1; i < c.argv.size(); ++i) {
    const std::string& a = c.argv[i];
    if (a == "--") break;
    if (!IsOption(a)) continue;
    any = true;
    if (IsShortCluster(a)) {
      if (a.find_first_not_of(short_flags, 1) != std::string::npos) return false;
    } else if (std::find(long_flags.begin(), long_flags.end(), a) == long_flags.end()) {
      return false;
    }
  }
  return any;
}

// Arguments that are not options (all of them after `--`).
std::vector<std::string> Operands(const SimpleCommand& c) {
  std::vector<std::string> out;
  bool options = true;
  for (size_t i = 1; i < c.argv.size(); ++i) {
    const std::string& a = c.argv[i];
    if (options && a == "--") {
      options = false;
    } else if (!options || !IsOption(a)) {
      out.push_back(a);
    }
  }
  return out;
}

bool HasGlob(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

// "/usr/../" -> "/", "~user/x" -> "~/x", "${HOME}/" -> "~"; relative paths
// come back with their dots resolved but still relative.
std::string NormalizePath(std::string s) {
  for (std::string_view home : {"${HOME}", "$HOME"}) {
    if (StartsWith(s, home) && (s.size() == home.size() || s[home.size()] == '/')) {
      s = "~" + s.substr(home.size());
    }
  }
  std::string root;
  if (!s.empty() && s[0] == '~') {
    size_t slash = s.find('/');
    s = slash == std::string::npos ? "" : s.substr(slash);
    root = "~";
  } else if (!s.empty() && s[0] == '/') {
    root = "/";
  }
  std::vector<std::string> parts;
  for (std::string_view p : SplitAny(s, "/", true)) {
    if (p == ".") continue;
    if (p == ".." && !parts.empty() && parts.back() != "..") {
      parts.pop_back();
    } else if (p == ".." && root == "~") {
      root = "/";
      parts = {"home"};
    } else if (p != ".." || root.empty()) {
      parts.push_back(std::string(p));
    }
  }
  std::string out = root == "~" ? "~" : "";
  if (root == "/" && parts.empty()) return "/";
  if (root.empty() && parts.empty()) return ".";
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0 || !root.empty()) out += "/";
    out += parts[i];
  }
  return out;
}

const std::vector<std::string>& ProtectedRoots() {
  static const auto* roots = new std::vector<std::string>{"/",
                                                          "~",
                                                          "/home",
                                                          "/root",
                                                          "/bin",
                                                          "/boot",
                                                          "/dev",
                                                          "/etc",
                                                          "/lib",
                                                          "/lib32",
                                                          "/lib64",
                                                          "/libx32",
                                                          "/opt",
                                                          "/proc",
                                                          "/sbin",
                                                          "/srv",
                                                          "/sys",
                                                          "/usr",
                                                          "/var",
                                                          "/snap",
                                                          "/mnt",
                                                          "/media",
                                                          "/run",
                                                          "/tmp",
                                                          "/nix",
                                                          "/Users",
                                                          "/System",
                                                          "/Library",
                                                          "/Applications",
                                                          "/private",
                                                          "/Volumes",
                                                          "/usr/bin",
                                                          "/usr/sbin",
                                                          "/usr/lib",
                                                          "/usr/local",
                                                          "/usr/share",
                                                          "/usr/include",
                                                          "/var/lib",
                                                          "/var/log"};
  return *roots;
}

bool IsProtectedRoot(const std::string& normalized) {
  const auto& roots = ProtectedRoots();
  if (std::find(roots.begin(), roots.end(), normalized) != roots.end()) return true;
  // Someone's home directory: /home/alice, /Users/alice.
  for (std::string_view homes : {"/home/", "/Users/"}) {
    if (StartsWith(normalized, homes) && normalized.find('/', homes.size()) == std::string::npos) {
      return true;
    }
  }
  return false;
}

// The path is a protected root, or a glob that matches one or sits
// directly inside one (/*, /u?r, ~/*, /etc/*.conf).
bool HitsProtected(const std::string& arg) {
  std::string norm = NormalizePath(arg);
  if (IsProtectedRoot(norm)) return true;
  if (!HasGlob(arg)) return false;
  size_t slash = norm.rfind('/');
  if (slash != std::string::npos) {
    std::string dir = slash == 0 ? "/" : norm.substr(0, slash);
    if (IsProtectedRoot(dir) && HasGlob(norm.substr(slash + 1))) return true;
  }
  // A relative glob (*, ?, */) names files in the working directory, not a
  // root: `rm -rf *` is only a root delete after a cd, which RmRoot checks.
  if (norm[0] != '/' && norm[0] != '~') return false;
  for (const std::string& root : ProtectedRoots()) {
    if (fnmatch(norm.c_str(), root.c_str(), FNM_PATHNAME) == 0) return true;
  }
  return false;
}

bool CdsIntoProtected(const ParsedLine& line) {
  for (const SimpleCommand& c : line.commands) {
    if (c.program != "cd" && c.program != "pushd") continue;
    std::vector<std::string> ops = Operands(c);
    if (ops.empty() || HitsProtected(ops[0])) return true;
  }
  return false;
}

bool RmRoot(const SimpleCommand& c, const ParsedLine& line, const BuiltinContext&) {
  if (c.program != "rm") return false;
  if (HasOption(c, "--no-preserve-root")) return true;
  if (!AnyOption(c, {"-r", "-R", "--recursive"})) return false;
  bool cd_protected = CdsIntoProtected(line);
  for (const std::string& op : Operands(c)) {
    if (HitsProtected(op)) return true;
    bool relative_all = op == "." || op == "./" || op == ".." || StartsWith(op, "*") ||
                        StartsWith(op, "./*") || StartsWith(op, ".*");
    if (cd_protected && relative_all) return true;
  }
  return false;
}

bool FindDeleteRoot(const SimpleCommand& c, const ParsedLine&, const BuiltinContext&) {
  if (c.program != "find") return false;
  bool protected_start = false;
  size_t i = 1;
  for (; i < c.argv.size(); ++i) {
    const std::string& a = c.argv[i];
    if (a.empty() || a[0] == '-' || a == "(" || a == "!") break;
    protected_start = protected_start || HitsProtected(a);
  }
  if (!protected_start) return false;
  for (; i < c.argv.size(); ++i) {
    const std::string& a = c.argv[i];
    if (a == "-delete") return true;
    bool exec = a == "-exec" || a == "-execdir" || a == "-ok" || a == "-okdir";
    if (exec && i + 1 < c.argv.size() && Basename(c.argv[i + 1]) == "rm") return true;
  }
  return false;
}

bool DiskFormat(const SimpleCommand& c, const ParsedLine&, const BuiltinContext&) {
  const std::string& p = c.program;
  if (StartsWith(p, "mkfs") || p == "mke2fs" || p == "mkswap" || p == "mkntfs" || p == "mkdosfs" ||
      p == "mkexfatfs" || p == "mformat" || p == "blkdiscard" || p == "lvremove" ||
      p == "vgremove" || p == "pvremove") {
    return true;
  }
  if (p == "wipefs") return !AnyOptionSurely(c, {"-n", "--no-act"});
  if (p == "fdisk" || p == "gdisk" || p == "cfdisk") {
    return !AnyOptionSurely(c, {"-l", "--list", "-V", "--version"});
  }
  if (p == "sfdisk") {
    // Its last command option wins (`sfdisk -l --delete` deletes), so every
    // option must be a read-only one.
    return !OnlyFlagsFrom(
        c, "ldJsgVhFTq",
        {"--list", "--dump", "--json", "--show-size", "--show-geometry", "--verify", "--version",
         "--help", "--list-free", "--list-types", "--quiet"});
  }
  if (p == "sgdisk") {
    for (size_t i = 1; i < c.argv.size(); ++i) {
      const std::string& a = c.argv[i];
      if (!IsOption(a)) continue;
      std::string name = a.substr(0, a.find('='));
      bool read_only = name == "-p" || name == "--print" || name == "-v" || name == "--verify" ||
                       name == "-i" || name == "--info" || name == "-O" || name == "--print-mbr" ||
                       name == "-V" || name == "--version";
      if (!read_only) return true;
    }
    return false;
  }
  if (p == "parted") {
    if (AnyOptionSurely(c, {"-l", "--list", "-v", "--version", "-h", "--help"})) {
      return false;
    }
    std::vector<std::string> ops = Operands(c);
    if (ops.size() < 2) return true;  // interactive: can write anything
    for (size_t i = 1; i < ops.size(); ++i) {
      static constexpr std::string_view kReadOnly[] = {
          "print", "p",   "unit", "s",   "B",   "kB",      "MB",   "GB",   "TB",  "KiB", "MiB",
          "GiB",   "TiB", "%",    "cyl", "chs", "compact", "free", "list", "all", "help"};
      if (std::find(std::begin(kReadOnly), std::end(kReadOnly), ops[i]) == std::end(kReadOnly)) {
        return true;
      }
    }
    return false;
  }
  std::vector<std::string> ops = Operands(c);
  std::string verb = ops.empty() ? "" : ops[0];
  if (p == "cryptsetup") return verb == "luksFormat" || verb == "erase" || verb == "luksErase";
  if (p == "zpool") return verb == "destroy" || verb == "labelclear";
  if (p == "zfs") return verb == "destroy";
  if (p == "badblocks") return AnyOption(c, {"-w", "-n"});
  return false;
}

bool Shutdown(const SimpleCommand& c, const ParsedLine&, const BuiltinContext&) {
  const std::string& p = c.program;
  if (p == "shutdown" || p == "reboot" || p == "halt" || p == "poweroff" || p == "telinit" ||
      p == "kexec") {
    return true;
  }
  std::vector<std::string> ops = Operands(c);
  if (p == "init") return !ops.empty() && (ops[0] == "0" || ops[0] == "6");
  if (p != "systemctl" && p != "loginctl") return false;
  // Every non-option word may be the verb: options that take values (-H
  // host, --prop x, abbreviated or not) would otherwise hide it.
  std::vector<std::string> words;
  for (size_t i = 1; i < c.argv.size(); ++i) {
    if (!IsOption(c.argv[i])) words.push_back(c.argv[i]);
  }
  static constexpr std::string_view kVerbs[] = {
      "poweroff",  "reboot", "halt",        "kexec",
      "emergency", "rescue", "soft-reboot", "suspend-then-hibernate"};
  bool starts = false;
  for (const std::string& w : words) {
    if (std::find(std::begin(kVerbs), std::end(kVerbs), w) != std::end(kVerbs)) return true;
    if (starts) {
      for (std::string_view t : {"poweroff", "reboot", "halt", "rescue", "emergency", "kexec"}) {
        if (StartsWith(w, t)) return true;
      }
    }
    starts = starts || w == "isolate" || w == "start";
  }
  return false;
}

bool IsRawDevice(std::string_view path) {
  if (!StartsWith(path, "/dev/")) return false;
  path.remove_prefix(5);
  if (path == "mem" || path == "kmem" || path == "port") return true;
  if (StartsWith(path, "mapper/") || StartsWith(path, "disk/")) return true;
  static constexpr std::string_view kDisks[] = {"sd", "hd", "vd", "xvd"};
  for (std::string_view d : kDisks) {
    if (StartsWith(path, d) && path.size() > d.size() &&
        std::isalpha(static_cast<unsigned char>(path[d.size()]))) {
      return true;
    }
  }
  static constexpr std::string_view kNumbered[] = {"nvme", "mmcblk", "disk", "rdisk", "md",
                                                   "dm-",  "loop",   "nbd",  "sr",    "zram"};
  for (std::string_view d : kNumbered) {
    if (StartsWith(path, d) && path.size() > d.size() &&
        std::isdigit(static_cast<unsigned char>(path[d.size()]))) {
      return true;
    }
  }
  return false;
}

bool RawDeviceWrite(const SimpleCommand& c, const ParsedLine&, const BuiltinContext&) {
  for (const std::string& t : c.write_targets) {
    if (IsRawDevice(t)) return true;
  }
  const std::string& p = c.program;
  if (p == "dd") {
    for (const std::string& a : c.argv) {
      if (StartsWith(a, "of=") && IsRawDevice(a.substr(3))) return true;
    }
  }
  std::vector<std::string> ops = Operands(c);
  if (p == "shred") {
    for (const std::string& op : ops) {
      if (IsRawDevice(op)) return true;
    }
  }
  if ((p == "cp" || p == "mv" || p == "install" || p == "pv") && !ops.empty()) {
    return IsRawDevice(ops.back());
  }
  return false;
}

bool IsPrivilegeProgram(std::string_view p) {
  static constexpr std::string_view kNames[] = {"sudo", "su",       "doas",    "pkexec",
                                                "run0", "sudoedit", "runuser", "visudo"};
  return std::find(std::begin(kNames), std::end(kNames), p) != std::end(kNames);
}

bool Privilege(const SimpleCommand& c, const ParsedLine&, const BuiltinContext&) {
  if (IsPrivilegeProgram(c.program)) return true;
  for (const std::string& v : c.via) {
    if (IsPrivilegeProgram(v.substr(0, v.find(' ')))) return true;
  }
  return false;
}

// 4755, 2755, u+s, g+s, +s, ug=rwxs: sets the setuid or setgid bit.
bool SetsSetuidBit(const std::string& mode) {
  bool octal = !mode.empty() && std::all_of(mode.begin(), mode.end(),
                                            [](char ch) { return ch >= '0' && ch <= '7'; });
  if (octal) return mode.size() >= 4 && ((mode[mode.size() - 4] - '0') & 6) != 0;
  for (std::string_view clause : SplitAny(mode, ",", false)) {
    size_t op = clause.find_first_of("+=");
    if (op != std::string_view::npos && clause.find('s', op) != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

bool Setuid(const SimpleCommand& c, const ParsedLine&, const BuiltinContext&) {
  if (c.program == "setcap") return true;
  if (c.program == "chmod") {
    std::vector<std::string> ops = Operands(c);  // the mode comes first
    return !ops.empty() && SetsSetuidBit(ops[0]);
  }
  if (c.program == "install") {
    // -m MODE, -mMODE, -sm MODE, --mode=MODE, --mo MODE: getopt's forms.
    for (size_t i = 1; i < c.argv.size(); ++i) {
      const std::string& a = c.argv[i];
      std::string next = i + 1 < c.argv.size() ? c.argv[i + 1] : "";
      if (IsShortCluster(a)) {
        size_t m = a.find('m', 1);
        if (m == std::string::npos) continue;
        std::string attached = a.substr(m + 1);
        if (SetsSetuidBit(attached.empty() ? next : attached)) return true;
      } else if (StartsWith(a, "--") && a.size() > 2) {
        size_t eq = a.find('=');
        std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
        if (!StartsWith("mode", name)) continue;
        if (SetsSetuidBit(eq == std::string::npos ? next : a.substr(eq + 1))) return true;
      }
    }
  }
  return false;
}

bool ChmodRoot(const SimpleCommand& c, const ParsedLine&, const BuiltinContext&) {
  const std::string& p = c.program;
  if (p != "chmod" && p != "chown" && p != "chgrp") return false;
  // Every operand is checked as a path, the mode or owner too: "755" or
  // "me:me" never names a root, and with --reference (abbreviable) there is
  // no mode operand to skip.
  std::vector<std::string> ops = Operands(c);
  bool recursive = AnyOption(c, {"-R", "--recursive"});
  for (size_t i = 0; i < ops.size(); ++i) {
    std::string norm = NormalizePath(ops[i]);
    if (norm == "/" || (recursive && HitsProtected(ops[i]))) return true;
  }
  return false;
}

bool PipeToShell(const SimpleCommand& c, const ParsedLine&, const BuiltinContext&) {
  return c.piped_code;
}

// "-1" as kill's number parsers read it: blanks around, zeros before the 1.
bool IsMinusOne(std::string_view a) {
  size_t first = a.find_first_not_of(" \t\n");
  size_t last = a.find_last_not_of(" \t\n");
  if (first == std::string_view::npos) return false;
  a = a.substr(first, last - first + 1);
  if (a.size() < 2 || a[0] != '-') return false;
  a.remove_prefix(1);
  size_t nonzero = a.find_first_not_of('0');
  return nonzero != std::string_view::npos && a.substr(nonzero) == "1";
}

bool KillAll(const SimpleCommand& c, const ParsedLine&, const BuiltinContext&) {
  if (c.program == "killall5") return true;
  if (c.program != "kill") return false;
  size_t i = 1;
  if (i < c.argv.size()) {
    const std::string& a = c.argv[i];
    if (a == "-s" || a == "-n") {
      i = 3;
    } else if (a == "--") {
      i = 2;
    } else if (IsOption(a)) {
      i = 2;  // the signal: -9, -KILL, -SIGKILL
    }
  }
  for (; i < c.argv.size(); ++i) {
    if (IsMinusOne(c.argv[i])) return true;
  }
  return false;
}

bool IsSystemFile(const std::string& path) {
  std::string n = NormalizePath(path);
  static constexpr std::string_view kFiles[] = {
      "/etc/passwd",  "/etc/shadow",        "/etc/group",     "/etc/gshadow",
      "/etc/sudoers", "/etc/master.passwd", "/etc/sudoers.d", "/proc/sysrq-trigger"};
  if (std::find(std::begin(kFiles), std::end(kFiles), n) != std::end(kFiles)) return true;
  return StartsWith(n, "/etc/sudoers.d/");
}

bool SystemFileWrite(const SimpleCommand& c, const ParsedLine&, const BuiltinContext&) {
  for (const std::string& t : c.write_targets) {
    if (IsSystemFile(t)) return true;
  }
  const std::string& p = c.program;
  if (p == "cp" || p == "mv" || p == "install" || p == "ln" || p == "rsync") {
    std::vector<std::string> ops = Operands(c);
    return ops.size() >= 2 && IsSystemFile(ops.back());
  }
  return false;
}

bool MvRoot(const SimpleCommand& c, const ParsedLine&, const BuiltinContext&) {
  if (c.program != "mv") return false;
  std::vector<std::string> ops = Operands(c);
  bool target_dir = AnyOption(c, {"-t", "--target-directory"});
  size_t sources = target_dir ? ops.size() : (ops.empty() ? 0 : ops.size() - 1);
  for (size_t i = 0; i < sources; ++i) {
    if (HitsProtected(ops[i])) return true;
  }
  return false;
}

// A function whose body calls itself at least twice, or once in the
// background: `:(){ :|:& };:`, `bomb() { bomb | bomb & }; bomb`.
bool ForkBomb(std::string_view raw) {
  static const RE2* def = new RE2(
      R"((?:function\s+)?([^\s(){};|&<>'"]+)\s*\(\s*\)\s*\{|function\s+([^\s(){};|&<>'"]+)\s*\{)");
  re2::StringPiece input(raw.data(), raw.size());
  std::string a, b;
  while (RE2::FindAndConsume(&input, *def, &a, &b)) {
    const std::string& name = a.empty() ? b : a;
    int depth = 1;
    size_t end = 0;
    while (end < input.size() && depth > 0) {
      if (input[end] == '{') ++depth;
      if (input[end] == '}') --depth;
      ++end;
    }
    std::string_view body(input.data(), end);
    int calls = 0;
    for (std::string_view tok : SplitAny(body, " \t\n;|&(){}<>", true)) {
      if (tok == name) ++calls;
    }
    bool background = body.find('&') != std::string_view::npos;
    if (calls >= 2 || (calls >= 1 && background)) return true;
  }
  return false;
}

}  // namespace

const std::vector<BuiltinSpec>& BuiltinSpecs() {
  static const auto* specs = new std::vector<BuiltinSpec>{
      {"builtin.fork-bomb", "a fork bomb", nullptr, ForkBomb},
      {"builtin.rm-root", "recursive delete of a system root or a home directory", RmRoot, nullptr},
      {"builtin.find-delete-root", "find deleting from a system root", FindDeleteRoot, nullptr},
      {"builtin.disk-format", "formats, partitions or wipes a disk", DiskFormat, nullptr},
      {"builtin.raw-device-write", "writes to a raw disk or memory device", RawDeviceWrite,
       nullptr},
      {"builtin.shutdown", "shuts down or reboots the host", Shutdown, nullptr},
      {"builtin.privilege", "runs with elevated privileges", Privilege, nullptr},
      {"builtin.setuid", "sets the setuid/setgid bit or file capabilities", Setuid, nullptr},
      {"builtin.chmod-root", "changes ownership or modes of a system root", ChmodRoot, nullptr},
      {"builtin.pipe-to-shell",
       "pipes code into a shell or interpreter (remote or generated code runs unseen)", PipeToShell,
       nullptr},
      {"builtin.kill-all", "kills every process", KillAll, nullptr},
      {"builtin.system-file-write", "overwrites a system account, sudo or kernel control file",
       SystemFileWrite, nullptr},
      {"builtin.mv-root", "moves a system root or a home directory", MvRoot, nullptr},
      {"builtin.broker-state",
       "reads or writes termbridge's own state (tokens, socket, policy, audit)",
       TouchesProtectedPath, nullptr, /*survives_all_off=*/true},
      {"builtin.process-files",
       "reaches into another process's files or environment (/proc/<pid>/environ, cwd, root, "
       "fd, mem)",
       TouchesProcessFiles, nullptr, /*survives_all_off=*/true},
  };
  return *specs;
}

const BuiltinSpec* FindBuiltin(std::string_view id) {
  for (const BuiltinSpec& s : BuiltinSpecs()) {
    if (s.id == id) return &s;
  }
  return nullptr;
}

const std::vector<std::string>& BuiltinProgramNames() {
  static const auto* names = new std::vector<std::string>{
      "rm",     "mkfs",    "mkfs.ext4", "mkfs.ext3", "mkfs.xfs", "mkfs.btrfs", "mkfs.vfat",
      "mke2fs", "mkswap",  "wipefs",    "fdisk",     "sfdisk",   "gdisk",      "sgdisk",
      "parted", "dd",      "shred",     "shutdown",  "reboot",   "halt",       "poweroff",
      "init",   "telinit", "systemctl", "sudo",      "su",       "doas",       "pkexec",
      "chmod",  "chown",   "chgrp",     "kill",      "killall5", "mv",         "cp",
      "sh",     "bash",    "dash",      "zsh",       "ksh",      "python",     "python3",
      "perl",   "ruby",    "node",      "env",       "xargs",    "find",       "tee"};
  return *names;
}

}  // namespace termbridge::policy::internal
