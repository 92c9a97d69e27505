// The table of options that run programs or write files (program_options.h).
#include "common/policy/program_options.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "common/policy/options.h"
#include "common/policy/text.h"

namespace termbridge::policy::internal {
namespace {

struct ProgramOptions {
  std::string_view program;
  std::vector<std::string_view> runs;    // options whose value (or mere use) runs a program
  std::vector<std::string_view> writes;  // options whose value is a file written
};

// Per program; git's are per subcommand (below).
const std::vector<ProgramOptions>& Table() {
  static const auto* table = new std::vector<ProgramOptions>{
      {"rg", {"--pre"}, {}},
      {"sort", {"--compress-program"}, {"-o", "--output"}},
      {"tar",
       {"--checkpoint-action", "-I", "--use-compress-program", "--to-command", "-F",
        "--info-script", "--new-volume-script", "--rsh-command", "--rmt-command",
        // its volume prompt runs a shell on `!`
        "-M", "--multi-volume"},
       {}},
      // -C names a man-db configuration, whose DEFINE lines name the programs it runs.
      {"man", {"-P", "--pager", "-H", "--html", "-C", "--config-file"}, {}},
      // a lesskey's #env section can set LESSOPEN, a program less runs
      {"less",
       {"-k", "--lesskey-file", "--lesskey-src", "--lesskey-content"},
       {"-o", "-O", "--log-file", "--LOG-FILE"}},
      {"zip", {"--unzip-command"}, {}},
      {"rsync", {"-e", "--rsh", "--rsync-path"}, {}},
      {"install", {"--strip-program"}, {}},
      // libmagic runs gzip, uncompress and the like (through PATH) to look
      // inside compressed files.
      {"file", {"-z", "-Z", "--uncompress", "--uncompress-noreport"}, {}},
      // diff -l pipes its output through pr.
      {"diff", {"-l", "--paginate"}, {}},
  };
  return *table;
}

// The values `option` is given in `argv` (before `--`): -oF, -o F, --output=F,
// --out F and the like; short options inside a cluster too (-no F).
std::vector<std::string> OptionValues(const std::vector<std::string>& argv,
                                      std::string_view option) {
  std::vector<std::string> values;
  const bool is_long = option.size() > 2 && option[1] == '-';
  const size_t end = OptionsEnd(argv);
  for (size_t i = 1; i < end; ++i) {
    const std::string& a = argv[i];
    if (a.size() < 2 || a[0] != '-') continue;
    if (is_long) {
      if (a[1] != '-') continue;
      const size_t eq = a.find('=');
      const std::string given = a.substr(2, eq == std::string::npos ? eq : eq - 2);
      if (given.empty() || !StartsWith(option.substr(2), given)) continue;
      if (eq != std::string::npos) {
        values.push_back(a.substr(eq + 1));
      } else if (i + 1 < end) {
        values.push_back(argv[++i]);
      }
    } else if (a[1] != '-') {
      const size_t at = a.find(option[1], 1);
      if (at == std::string::npos) continue;
      if (at + 1 < a.size()) {
        values.push_back(a.substr(at + 1));
      } else if (i + 1 < end) {
        values.push_back(argv[++i]);
      }
    }
  }
  return values;
}

// git: global options before the subcommand, then the subcommand's own.
void GitEffects(const std::vector<std::string>& argv, OptionEffects* out) {
  size_t sub = 1;
  for (; sub < argv.size() && !argv[sub].empty() && argv[sub][0] == '-'; ++sub) {
    const std::string& a = argv[sub];
    if (StartsWith(a, "-c") || a == "--config-env" || StartsWith(a, "--config-env=") ||
        StartsWith(a, "--exec-path")) {
      out->runs = Cat("git ", a, " sets configuration that can name programs to run");
      return;
    }
    if (a == "-C" || a == "--git-dir" || a == "--work-tree" || a == "--namespace") ++sub;
  }
  if (sub >= argv.size()) return;
  const std::string& name = argv[sub];
  std::vector<std::string> rest(argv.begin() + static_cast<long>(sub), argv.end());
  static constexpr std::string_view kRunners[] = {"difftool", "mergetool",  "filter-branch",
                                                  "instaweb", "send-email", "web--browse"};
  for (std::string_view r : kRunners) {
    if (name == r) {
      out->runs = Cat("git ", name, " runs the programs its options or configuration name");
      return;
    }
  }
  struct SubOption {
    std::string_view sub, option;
  };
  static constexpr SubOption kRuns[] = {
      {"grep", "-O"},
      {"grep", "--open-files-in-pager"},
      {"rebase", "-x"},
      {"rebase", "--exec"},
      {"fetch", "--upload-pack"},
      {"pull", "--upload-pack"},
      {"clone", "--upload-pack"},
      {"clone", "-u"},
      {"ls-remote", "--upload-pack"},
      {"archive", "--exec"},
      {"archive", "--remote"},
      {"push", "--receive-pack"},
      {"push", "--exec"},
      {"help", "--web"},
      {"help", "-w"},
  };
  for (const SubOption& o : kRuns) {
    if (name == o.sub && HasOption(rest, o.option)) {
      out->runs = Cat("git ", name, " ", o.option, " runs a program it names");
      return;
    }
  }
  if ((name == "bisect" && rest.size() > 1 && rest[1] == "run") ||
      (name == "submodule" && std::find(rest.begin(), rest.end(), "foreach") != rest.end())) {
    out->runs = Cat("git ", name, " runs the command it is given");
    return;
  }
  if (HasOption(rest, "--ext-diff")) {
    out->runs = "git --ext-diff runs the external diff program";
    return;
  }
  // Checking a signature runs gpg, gpgsm or ssh-keygen (chosen by the
  // signature the agent may have planted), whatever the configuration.
  if (HasOption(rest, "--show-signature")) {
    out->runs = "git --show-signature runs gpg to check signatures";
    return;
  }
  for (std::string_view format : {"--format", "--pretty"}) {
    for (const std::string& v : OptionValues(rest, format)) {
      if (v.find("%G") != std::string::npos) {
        out->runs = Cat("git ", format, " with %G... runs gpg to check signatures");
        return;
      }
    }
  }
  for (std::string& v : OptionValues(rest, "--output")) out->writes.push_back(std::move(v));
}

}  // namespace

OptionEffects ProgramOptionEffects(std::string_view prog, const std::vector<std::string>& argv) {
  OptionEffects out;
  if (prog == "git") {
    GitEffects(argv, &out);
    return out;
  }
  if (prog == "less" || prog == "more") {
    for (size_t i = 1; i < argv.size(); ++i) {
      if (!argv[i].empty() && argv[i][0] == '+') {
        out.runs = Cat(prog, " runs `", argv[i].substr(0, 32), "` as its first command");
        return out;
      }
    }
  }
  if (prog == "zip") {
    // zip reads -TT as one option, its value attached or not (-TTcmd).
    for (size_t i = 1; i < argv.size(); ++i) {
      if (argv[i].size() > 1 && argv[i][0] == '-' && argv[i][1] != '-' &&
          argv[i].find("TT") != std::string::npos) {
        out.runs = "zip -TT runs the command it names to test the archive";
        return out;
      }
    }
  }
  if (prog == "jq") {
    // jq reads the modules and data files its program (import, include) or
    // its options (-L, --rawfile, --slurpfile, -f) name, as it resolves them.
    // (a module path is a string literal: a word naming a file such as
    // important.json holds no quote)
    for (const std::string& a : argv) {
      if ((a.find("import") != std::string::npos || a.find("include") != std::string::npos) &&
          a.find('"') != std::string::npos) {
        out.runs = "the jq program imports or includes files it names";
        return out;
      }
    }
    for (std::string_view o :
         {"-L", "--library-path", "--rawfile", "--slurpfile", "-f", "--from-file"}) {
      if (HasOption(argv, o)) {
        out.runs = Cat("jq ", o, " reads a file it names");
        return out;
      }
    }
  }
  if (prog == "tar" && argv.size() > 1 && !argv[1].empty() && argv[1][0] != '-' &&
      argv[1].find_first_of("IFM") != std::string::npos) {
    // Old-style first word: `tar tIf CMD x.tar`, `tar tMf x.tar`.
    out.runs = "tar's old-style options run a program (I, F, or M's prompt)";
    return out;
  }
  AddFileUtilityWrites(prog, argv, &out);
  if (!out.runs.empty()) return out;
  if (prog == "date") {
    if (HasOption(argv, "-f") || HasOption(argv, "--file")) {
      out.runs =
          "date -f reads date strings from a file, and a TZ=\"...\" in one names a zone "
          "file to read";
      return out;
    }
    for (std::string_view o : {"-d", "--date"}) {
      for (const std::string& v : OptionValues(argv, o)) {
        if (v.find("TZ=") != std::string::npos) {
          out.runs = "date -d TZ=\"...\" reads the zone file it names";
          return out;
        }
      }
    }
  }
  for (const ProgramOptions& p : Table()) {
    if (p.program != prog) continue;
    for (std::string_view o : p.runs) {
      if (HasOption(argv, o)) {
        out.runs = Cat(prog, " ", o, " runs a program it names");
        return out;
      }
    }
    for (std::string_view o : p.writes) {
      for (std::string& v : OptionValues(argv, o)) out.writes.push_back(std::move(v));
    }
  }
  return out;
}

}  // namespace termbridge::policy::internal
