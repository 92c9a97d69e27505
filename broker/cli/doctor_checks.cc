// termbridge doctor's checks of files and of the viewers: credentials and
// their modes, the policy file, the audit log, and whether a person can see
// a terminal (display, window command, console, watch). Each finding says
// what to do (docs/troubleshooting.md).
#include "broker/cli/doctor_checks.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "broker/audit/audit_verify.h"
#include "broker/surface/window/window_launcher.h"
#include "common/policy/policy.h"

namespace termbridge::doctor {
namespace {

Finding Ok(std::string id, std::string message) {
  return {std::move(id), Status::kOk, std::move(message), ""};
}
Finding Warn(std::string id, std::string message, std::string fix) {
  return {std::move(id), Status::kWarn, std::move(message), std::move(fix)};
}
Finding Fail(std::string id, std::string message, std::string fix) {
  return {std::move(id), Status::kFail, std::move(message), std::move(fix)};
}

std::string ModeText(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

std::string Dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Group and others can neither enter nor list `dir`, and it is ours.
bool PrivateDir(const std::string& dir) {
  struct stat st;
  return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 077) == 0 &&
         st.st_uid == geteuid();
}

std::string Env(const EnvLookup& env, const std::string& name) {
  if (env) return env(name).value_or("");
  const char* value = std::getenv(name.c_str());
  return value == nullptr ? "" : value;
}

bool OnPath(const std::string& program, const std::string& path_var) {
  if (program.find('/') != std::string::npos) return access(program.c_str(), X_OK) == 0;
  for (absl::string_view dir : absl::StrSplit(path_var, ':', absl::SkipEmpty())) {
    if (access(absl::StrCat(dir, "/", program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

// The fix for a reason WindowLauncher gives (or the broker reported).
std::string WindowFix(const std::string& reason) {
  if (reason.find("window_command = none") != std::string::npos) {
    return "windows are switched off; set window_command = \"auto\" (or a command with "
           "{attach}) if you want them, else keep `termbridge watch` or the web console open";
  }
  if (reason.find("no display") != std::string::npos) {
    return "start the broker in your desktop session so it has DISPLAY or WAYLAND_DISPLAY "
           "(systemd: `systemctl --user import-environment DISPLAY WAYLAND_DISPLAY`, then "
           "restart it), or watch with `termbridge watch` or the web console";
  }
  if (reason.find("no terminal emulator") != std::string::npos) {
    return "install one (`apt install xterm`) or set window_command to a command with {attach}";
  }
  if (reason.find("CLI was not found") != std::string::npos) {
    return "install `termbridge` next to termbridge-broker or on the broker's PATH";
  }
  return "see docs/operating.md#seeing-the-terminals";
}

}  // namespace

std::string_view StatusName(Status status) {
  switch (status) {
    case Status::kOk:
      return "ok";
    case Status::kWarn:
      return "warn";
    case Status::kFail:
      return "fail";
  }
  return "fail";
}

bool AnyFailed(const std::vector<Finding>& findings) {
  for (const Finding& finding : findings) {
    if (finding.status == Status::kFail) return true;
  }
  return false;
}

nlohmann::json ReportJson(const std::vector<Finding>& findings) {
  nlohmann::json checks = nlohmann::json::array();
  for (const Finding& f : findings) {
    checks.push_back({{"id", f.id},
                      {"status", std::string(StatusName(f.status))},
                      {"message", f.message},
                      {"fix", f.fix}});
  }
  return {{"checks", checks}, {"ok", !AnyFailed(findings)}};
}

std::string ReportText(const std::vector<Finding>& findings) {
  size_t width = 0;
  for (const Finding& f : findings) width = std::max(width, f.id.size());
  std::string text;
  for (const Finding& f : findings) {
    std::string status(StatusName(f.status));
    absl::StrAppend(&text, status, std::string(6 - status.size(), ' '), f.id,
                    std::string(width + 2 - f.id.size(), ' '), f.message, "\n");
    if (!f.fix.empty()) absl::StrAppend(&text, "      fix: ", f.fix, "\n");
  }
  return text;
}

Finding CheckStateDir(const std::string& dir) {
  const std::string id = "credentials.state_dir";
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return Ok(id,
                absl::StrCat("state dir ", dir, " does not exist yet (the broker makes it, 0700)"));
    }
    return Fail(id, absl::StrCat("cannot look at state dir ", dir, ": ", std::strerror(errno)),
                "make it reachable for this user, or point --state-dir at the broker's");
  }
  if (!S_ISDIR(st.st_mode)) {
    return Fail(id, absl::StrCat("state dir ", dir, " is not a directory"),
                "move that file away, or set state_dir to a directory");
  }
  if (st.st_uid != geteuid()) {
    return Warn(id,
                absl::StrCat("state dir ", dir, " belongs to uid ", st.st_uid, ", not to you (uid ",
                             geteuid(), ")"),
                "run the broker and termbridge as the user who owns it (its socket and tokens are "
                "that user's credentials)");
  }
  if ((st.st_mode & 077) != 0) {
    return Warn(id,
                absl::StrCat("state dir ", dir, " is ", ModeText(st.st_mode),
                             ": group or others can enter it (it holds the tokens, the operator "
                             "socket and the audit log)"),
                absl::StrCat("chmod 700 ", dir));
  }
  return Ok(id, absl::StrCat("state dir ", dir, " is 0700 and yours"));
}

Finding CheckSecretFile(const std::string& id, const std::string& what, const std::string& path,
                        const SecretFileRules& rules) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT && !rules.required) {
      return Ok(id,
                absl::StrCat(what, " ", path, " does not exist yet (the broker makes it, 0600)"));
    }
    return Fail(id, absl::StrCat(what, " ", path, ": ", std::strerror(err)),
                err == ENOENT ? "create it (deploy/make-credentials.sh) or drop the setting that "
                                "names it"
                              : "make it readable for the broker's user");
  }
  if (!S_ISREG(st.st_mode)) {
    return Fail(id, absl::StrCat(what, " ", path, " is not a regular file"),
                "put the file itself there");
  }
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Fail(id, absl::StrCat("cannot read ", what, " ", path, ": ", std::strerror(errno)),
                absl::StrCat("chown it to the broker's user and chmod 600 ", path));
  }
  std::string content;
  char buffer[4096];
  ssize_t n;
  while (content.size() < (64 << 10) && (n = read(fd, buffer, sizeof(buffer))) > 0) {
    content.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  if (rules.token && absl::StripAsciiWhitespace(content).size() < 16) {
    return Fail(
        id, absl::StrCat(what, " ", path, " holds fewer than 16 characters: the broker refuses it"),
        absl::StrCat("write a longer token (`openssl rand -hex 32 > ", path,
                     "`), or drop the setting so the broker makes one"));
  }
  const std::string mode = ModeText(st.st_mode);
  if ((st.st_mode & 022) != 0) {
    return Fail(id,
                absl::StrCat(what, " ", path, " is ", mode,
                             ": group or others can write it, and so replace the credential"),
                absl::StrCat("chmod 600 ", path));
  }
  if (st.st_uid != geteuid()) {
    return Warn(id,
                absl::StrCat(what, " ", path, " belongs to uid ", st.st_uid, ", not to you (uid ",
                             geteuid(), ")"),
                absl::StrCat("chown $USER ", path));
  }
  if ((st.st_mode & 044) != 0) {
    const std::string dir = Dirname(path);
    if (rules.readable_in_private_dir && PrivateDir(dir)) {
      return Ok(id, absl::StrCat(what, " ", path, " is ", mode, " inside the 0700 directory ", dir,
                                 " (readable for a container's user once mounted, by nobody else "
                                 "here)"));
    }
    return Warn(id,
                absl::StrCat(what, " ", path, " is ", mode,
                             ": group or others can read it and use the credential"),
                absl::StrCat("chmod 600 ", path));
  }
  return Ok(id, absl::StrCat(what, " ", path, " is ", mode, " and yours"));
}

Finding CheckAgentTokensDir(const std::string& dir) {
  const std::string id = "credentials.agent_tokens_dir";
  if (dir.empty()) {
    return Ok(id,
              "agent_tokens_dir is not set (agents: the shared token and `termbridge agents "
              "add`)");
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Fail(id, absl::StrCat("agent_tokens_dir ", dir, " is not a readable directory"),
                "make it with deploy/make-credentials.sh --agent NAME, or drop the setting");
  }
  if ((st.st_mode & 077) != 0) {
    return Warn(id,
                absl::StrCat("agent_tokens_dir ", dir, " is ", ModeText(st.st_mode),
                             ": group or others can enter it"),
                absl::StrCat("chmod 700 ", dir));
  }
  std::vector<std::string> names;
  if (std::unique_ptr<DIR, int (*)(DIR*)> handle(opendir(dir.c_str()), closedir); handle) {
    while (dirent* entry = readdir(handle.get())) {
      std::string name = entry->d_name;
      if (absl::EndsWith(name, ".token")) names.push_back(name);
    }
  }
  for (const std::string& name : names) {
    SecretFileRules rules;
    rules.required = true;
    rules.readable_in_private_dir = true;
    rules.token = true;
    Finding file = CheckSecretFile(id, "agent token", dir + "/" + name, rules);
    if (file.status != Status::kOk) return file;
  }
  return Ok(id, absl::StrCat("agent_tokens_dir ", dir, " is 0700 with ", names.size(),
                             " token file(s), none open to others"));
}

Finding CheckPolicyFile(const std::string& path) {
  const std::string id = "policy";
  if (path.empty()) return Ok(id, "no policy file is set: the built-in policy applies");
  policy::PolicyFile file(path);
  if (absl::Status loaded = file.Load(); !loaded.ok()) {
    return Fail(id, absl::StrCat("policy file does not load: ", loaded.message()),
                "fix the line named (docs/operating.md#the-policy-file); a running broker keeps "
                "its last valid version, a starting one refuses to start; `termbridge policy "
                "show` tells which version is in force");
  }
  std::string why_default;
  std::shared_ptr<const policy::Policy> current = file.Current(&why_default);
  if (!why_default.empty()) {
    return Ok(id, absl::StrCat("the built-in policy applies (", why_default, ")"));
  }
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && (st.st_mode & 022) != 0) {
    return Warn(id,
                absl::StrCat("policy file ", path, " is ", ModeText(st.st_mode),
                             ": group or others can write it and allow what it denies"),
                absl::StrCat("chmod 600 ", path));
  }
  return Ok(id, absl::StrCat("policy file ", path, " loads: ", current->rules().size(),
                             " rules (built-ins included), default ",
                             std::string(policy::ActionName(current->default_action()))));
}

std::vector<Finding> CheckAuditLog(const std::string& path) {
  std::vector<Finding> findings;
  const std::string dir = Dirname(path);
  const std::string writable_id = "audit.writable";
  const std::string fix_owner = absl::StrCat("make it the broker user's and writable: chown $USER ",
                                             path, " && chmod 600 ", path);
  struct stat st;
  bool exists = stat(path.c_str(), &st) == 0;
  struct stat dir_st;
  if (!exists && errno != ENOENT) {
    findings.push_back(
        Fail(writable_id, absl::StrCat("audit log ", path, ": ", std::strerror(errno)), fix_owner));
  } else if (!exists && stat(dir.c_str(), &dir_st) != 0) {
    findings.push_back(
        Ok(writable_id,
           absl::StrCat("audit log ", path, " does not exist yet (made with the state dir)")));
  } else if (!exists && access(dir.c_str(), W_OK) != 0) {
    findings.push_back(Fail(
        writable_id,
        absl::StrCat("audit log ", path, " cannot be created: ", dir, ": ", std::strerror(errno)),
        absl::StrCat("chmod 700 ", dir, " as its owner")));
  } else if (exists && !S_ISREG(st.st_mode)) {
    findings.push_back(Fail(writable_id, absl::StrCat("audit log ", path, " is not a regular file"),
                            "move it away: the broker appends its records to a file there"));
  } else {
    // Opened for appending and closed unwritten: the broker's lock is an
    // flock, which this does not take.
    int fd = exists ? open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC) : -2;
    const int open_errno = errno;
    struct statvfs fs;
    bool have_fs = statvfs(dir.c_str(), &fs) == 0;
    const uint64_t free_bytes = have_fs ? uint64_t{fs.f_bavail} * fs.f_frsize : 0;
    if (fd == -1) {
      findings.push_back(
          Fail(writable_id,
               absl::StrCat("cannot append to audit log ", path, ": ", std::strerror(open_errno)),
               fix_owner));
    } else if (have_fs && (fs.f_flag & ST_RDONLY) != 0) {
      findings.push_back(Fail(writable_id,
                              absl::StrCat("audit log ", path, " is on a read-only file system"),
                              "give the broker a state dir on a writable file system"));
    } else if (have_fs && free_bytes < (16u << 20)) {
      findings.push_back(
          Fail(writable_id,
               absl::StrCat("only ", free_bytes >> 10, " KiB free for audit log ", path,
                            ": the broker refuses new commands while it cannot write a record"),
               "free space on that file system (docs/operating.md#audit-log)"));
    } else if (exists && (st.st_mode & 044) != 0) {
      findings.push_back(Warn(writable_id,
                              absl::StrCat("audit log ", path, " is ", ModeText(st.st_mode),
                                           ": group or others can read every command line"),
                              absl::StrCat("chmod 600 ", path)));
    } else {
      findings.push_back(
          Ok(writable_id,
             absl::StrCat("audit log ", path, exists ? " can be appended to" : " can be created",
                          have_fs ? absl::StrCat(" (", free_bytes >> 20, " MiB free)") : "")));
    }
    if (fd >= 0) close(fd);
  }

  const std::string chain_id = "audit.chain";
  if (!exists) {
    findings.push_back(Ok(chain_id, "no audit records yet"));
    return findings;
  }
  absl::StatusOr<audit::AuditVerification> verified = audit::VerifyAuditFiles({path});
  if (!verified.ok()) {
    findings.push_back(
        Fail(chain_id, absl::StrCat("cannot read the audit log: ", verified.status().message()),
             fix_owner));
  } else if (!verified->intact()) {
    const audit::AuditFinding& problem = *verified->problem;
    findings.push_back(
        Fail(chain_id,
             absl::StrCat("audit log chain broken at ", problem.file, " line ", problem.line, ": ",
                          problem.message),
             "keep a copy as evidence and find out who changed the file; `termbridge audit verify` "
             "with the rotated files (oldest first) checks the whole log "
             "(docs/operating.md#audit-log)"));
  } else if (verified->records == 0) {
    findings.push_back(Ok(chain_id, "the audit log has no records yet"));
  } else {
    std::string message = absl::StrCat("audit chain intact: ", verified->records, " records");
    if (verified->warnings_total > 0) {
      absl::StrAppend(&message, ", ", verified->warnings_total,
                      " warning(s) (`termbridge audit verify` lists them)");
    }
    findings.push_back(Ok(chain_id, message));
  }
  return findings;
}

std::vector<Finding> CheckViewer(const ViewerInputs& in) {
  std::vector<Finding> findings;

  // The display of this shell: what a broker started from here would get.
  const std::string display = Env(in.env, "DISPLAY");
  const std::string wayland = Env(in.env, "WAYLAND_DISPLAY");
  const std::string display_id = "viewer.display";
  if (!wayland.empty()) {
    std::string socket =
        wayland[0] == '/' ? wayland : absl::StrCat(Env(in.env, "XDG_RUNTIME_DIR"), "/", wayland);
    struct stat st;
    if (stat(socket.c_str(), &st) == 0) {
      findings.push_back(
          Ok(display_id, absl::StrCat("WAYLAND_DISPLAY=", wayland, " (", socket, ")")));
    } else {
      findings.push_back(Warn(
          display_id, absl::StrCat("WAYLAND_DISPLAY=", wayland, " but ", socket, " does not exist"),
          "run from your desktop session, or unset WAYLAND_DISPLAY"));
    }
  } else if (!display.empty()) {
    // ":N", ":N.S" or "unix:N" is a local X server with a socket; "host:N"
    // (ssh -X) goes over the network and is not looked at.
    absl::string_view rest = display;
    bool local = absl::ConsumePrefix(&rest, ":") || absl::ConsumePrefix(&rest, "unix:");
    std::string number(rest.substr(0, rest.find('.')));
    if (!local) {
      findings.push_back(Ok(display_id, absl::StrCat("DISPLAY=", display, " (a network display)")));
    } else {
      std::string socket = absl::StrCat(in.x11_socket_dir, "/X", number);
      struct stat st;
      if (stat(socket.c_str(), &st) == 0) {
        findings.push_back(Ok(display_id, absl::StrCat("DISPLAY=", display, " (", socket, ")")));
      } else {
        findings.push_back(Warn(
            display_id, absl::StrCat("DISPLAY=", display, " but no X server socket at ", socket),
            "start the X session, or set DISPLAY to the one you sit at"));
      }
    }
  } else {
    findings.push_back(Warn(display_id,
                            "no display in this shell (DISPLAY and WAYLAND_DISPLAY are unset): no "
                            "window can open on this host from here",
                            "run the broker from your desktop session, or watch with `termbridge "
                            "watch` or the web console"));
  }

  // The window command: the running broker's, or resolved as it would be.
  const std::string window_id = "viewer.window";
  std::string template_text;
  std::string unavailable;
  if (in.broker_window_command) {
    template_text = *in.broker_window_command;
    unavailable = in.broker_window_unavailable;
  } else {
    surface::WindowOptions options;
    options.command_template = in.window_command;
    options.state_dir = in.state_dir;
    options.env = in.env;
    absl::StatusOr<surface::WindowLauncher> launcher = surface::WindowLauncher::Create(options);
    if (launcher.ok()) {
      template_text = launcher->command_template();
    } else {
      unavailable = std::string(launcher.status().message());
    }
  }
  const std::string whose = in.broker_window_command ? "the broker" : "a broker started here";
  if (!template_text.empty()) {
    std::string program;
    std::vector<std::string> words = absl::StrSplit(template_text, ' ', absl::SkipEmpty());
    if (!words.empty())
      program = std::string(absl::StripPrefix(absl::StripSuffix(words[0], "'"), "'"));
    if (!program.empty() && program.find('{') == std::string::npos &&
        !OnPath(program, Env(in.env, "PATH"))) {
      findings.push_back(Warn(
          window_id, absl::StrCat("window command starts ", program, ", which is not on PATH here"),
          "install it, or set window_command to a command that exists"));
    } else {
      findings.push_back(
          Ok(window_id, absl::StrCat(whose, " opens windows with: ", template_text)));
    }
  } else {
    findings.push_back(Warn(window_id, absl::StrCat(whose, " opens no windows: ", unavailable),
                            WindowFix(unavailable)));
  }

  const std::string console_id = "viewer.console";
  const bool console_on = !in.console.empty();
  if (!console_on) {
    findings.push_back(Ok(console_id,
                          "the web console is off (set console = \"127.0.0.1:45460\" "
                          "to see terminals in a browser)"));
  } else if (!in.broker_running) {
    findings.push_back(Ok(console_id, absl::StrCat("the web console is set to ", in.console,
                                                   " (it starts with the broker)")));
  } else if (in.console_answers) {
    findings.push_back(
        Ok(console_id, absl::StrCat("the web console answers at http://", in.console,
                                    "/ (log in with the link in the broker's log or ready file)")));
  } else {
    findings.push_back(Fail(
        console_id,
        absl::StrCat("the web console should be at ", in.console, " but nothing answers there"),
        "look at the broker's log (event=serving names the console), restart it"));
  }

  const std::string watch_id = "viewer.watch";
  if (!in.broker_running) {
    findings.push_back(Warn(watch_id, "`termbridge watch` cannot run: no broker answers",
                            "start the broker (see the broker check)"));
  } else if (!in.require_viewer) {
    findings.push_back(Warn(watch_id,
                            "require_viewer is off: commands run whether or not anyone watches",
                            "set require_viewer = true outside test rigs (docs/security.md)"));
  } else if (template_text.empty() && !console_on) {
    findings.push_back(Warn(watch_id,
                            "no window opens and the console is off: a command runs only while "
                            "`termbridge watch` or `termbridge attach` shows its terminal",
                            "keep `termbridge watch` running in a terminal you look at, or set "
                            "console"));
  } else {
    findings.push_back(Ok(watch_id, "`termbridge watch` can follow every terminal from here"));
  }
  return findings;
}

}  // namespace termbridge::doctor
