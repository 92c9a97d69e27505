// The files the file utilities write through their operands and options
// (program_options.h, AddFileUtilityWrites): cp, mv, ln, install, touch,
// mkdir, rm, rmdir, unlink, shred, truncate, chmod, chown, chgrp, tar, unzip,
// curl, wget, gzip and its kin, uniq, split, csplit, patch, rmdir -p, zip and
// rsync. A rule without `writes = true` never allows them to write.
#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/policy/options.h"
#include "common/policy/program_options.h"
#include "common/policy/text.h"

namespace termbridge::policy::internal {
namespace {

// argv split as getopt_long reads it, for options whose values are listed:
// `short_values` are the letters that take a value (attached or the next
// word), `long_values` the long options that do (`--name=v`, `--name v`, or
// any prefix of the name). Values are keyed "-x" or "--name".
struct Split {
  std::vector<std::string> operands;
  std::map<std::string, std::vector<std::string>> values;
  std::vector<std::string> Values(std::initializer_list<std::string_view> keys) const {
    std::vector<std::string> out;
    for (std::string_view k : keys) {
      auto it = values.find(std::string(k));
      if (it != values.end()) out.insert(out.end(), it->second.begin(), it->second.end());
    }
    return out;
  }
};

Split SplitArgs(const std::vector<std::string>& argv, std::string_view short_values,
                const std::vector<std::string_view>& long_values, size_t from = 1) {
  Split out;
  bool options = true;
  for (size_t i = from; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (!options || a.size() < 2 || a[0] != '-') {
      out.operands.push_back(a);
    } else if (a == "--") {
      options = false;
    } else if (a[1] == '-') {
      const size_t eq = a.find('=');
      const std::string name = a.substr(0, eq);
      for (std::string_view full : long_values) {
        if (name.size() < 3 || !StartsWith(full, name)) continue;
        if (eq != std::string::npos) {
          out.values[std::string(full)].push_back(a.substr(eq + 1));
        } else if (i + 1 < argv.size()) {
          out.values[std::string(full)].push_back(argv[++i]);
        }
        break;
      }
    } else {
      for (size_t j = 1; j < a.size(); ++j) {
        if (short_values.find(a[j]) == std::string_view::npos) continue;
        const std::string key = {'-', a[j]};
        if (j + 1 < a.size()) {
          out.values[key].push_back(a.substr(j + 1));
        } else if (i + 1 < argv.size()) {
          out.values[key].push_back(argv[++i]);
        }
        break;
      }
    }
  }
  return out;
}

std::string Base(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  const size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

std::string Under(const std::string& dir, const std::string& name) {
  return !dir.empty() && dir.back() == '/' ? dir + name : Cat(dir, "/", name);
}

void Add(std::vector<std::string>* out, std::string file) {
  if (!file.empty() && file != "-") out->push_back(std::move(file));
}

// cp, mv, ln, install: the destination, or each source's name in the
// target directory; a backup (-b, --backup, -S) next to each.
void CopyLike(std::string_view prog, const std::vector<std::string>& argv, OptionEffects* out) {
  const Split s = SplitArgs(argv, prog == "install" ? "mogSt" : "St",
                            {"--target-directory", "--suffix", "--mode", "--owner", "--group"});
  std::vector<std::string> written;
  std::vector<std::string> sources = s.operands;
  const std::vector<std::string> dirs = s.Values({"-t", "--target-directory"});
  if (prog == "install" && (HasOption(argv, "-d") || HasOption(argv, "--directory"))) {
    for (const std::string& d : s.operands) Add(&written, d);
  } else if (!dirs.empty()) {
    for (const std::string& src : sources) Add(&written, Under(dirs.back(), Base(src)));
  } else if (prog == "ln" && sources.size() == 1) {
    Add(&written, Base(sources.front()));
  } else if (sources.size() >= 2) {
    const std::string dest = sources.back();
    sources.pop_back();
    // One source: DEST, or DEST/NAME when DEST is a directory (which the
    // parser cannot know): both are judged.
    if (sources.size() == 1 && dest.back() != '/') Add(&written, dest);
    for (const std::string& src : sources) Add(&written, Under(dest, Base(src)));
  }
  // A recursive copy (or --parents) writes a whole tree, whose files a
  // glob cannot pin: each destination counts as a directory.
  if (prog == "cp" && (HasOption(argv, "-r") || HasOption(argv, "-R") || HasOption(argv, "-a") ||
                       HasOption(argv, "--recursive") || HasOption(argv, "--archive") ||
                       HasOption(argv, "--parents"))) {
    for (std::string& w : written) {
      if (w.back() != '/') w.push_back('/');
    }
  }
  const bool backup =
      HasOption(argv, "-b") || HasOption(argv, "--backup") || !s.Values({"-S", "--suffix"}).empty();
  std::vector<std::string> suffixes = s.Values({"-S", "--suffix"});
  if (backup && suffixes.empty()) suffixes.push_back("~");
  for (size_t i = 0, n = written.size(); i < n; ++i) {
    for (const std::string& suffix : suffixes) Add(&written, written[i] + suffix);
  }
  if (prog == "mv") {
    for (const std::string& src : sources) Add(&written, src);  // removed from there
  }
  for (std::string& w : written) out->writes.push_back(std::move(w));
}

// chmod, chown, chgrp: every operand after the mode or owner (none with
// --reference). A mode may look like an option (chmod -w f), so only the
// known flags are skipped.
void ChangeAttributes(const std::vector<std::string>& argv, OptionEffects* out) {
  static constexpr std::string_view kFlags[] = {"-R",
                                                "-v",
                                                "-c",
                                                "-f",
                                                "-h",
                                                "-H",
                                                "-L",
                                                "-P",
                                                "--recursive",
                                                "--verbose",
                                                "--changes",
                                                "--silent",
                                                "--quiet",
                                                "--dereference",
                                                "--no-dereference",
                                                "--preserve-root",
                                                "--no-preserve-root"};
  bool reference = false, options = true, first = true;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (options && a == "--") {
      options = false;
      continue;
    }
    if (options && StartsWith(a, "--reference")) {
      reference = true;
      if (a.find('=') == std::string::npos) ++i;
      continue;
    }
    if (options && StartsWith(a, "--from")) {
      if (a.find('=') == std::string::npos) ++i;
      continue;
    }
    bool flag = false;
    for (std::string_view f : kFlags) flag = flag || (options && a == f);
    if (flag) continue;
    if (first && !reference) {
      first = false;  // the mode or owner
      continue;
    }
    Add(&out->writes, a);
  }
}

// tar: extracting writes under -C (or the cwd); creating, appending or
// updating writes the -f archive. Old-style `tar xf a.tar` is read as
// `tar -x -f a.tar`.
void Tar(const std::vector<std::string>& argv, OptionEffects* out) {
  std::vector<std::string> words = {argv[0]};
  size_t rest = 1;
  if (argv.size() > 1 && !argv[1].empty() && argv[1][0] != '-') {
    static constexpr std::string_view kTakes = "bCfFgHIKLNTVX";
    rest = 2;
    for (char l : argv[1]) {
      words.push_back(std::string{'-', l});
      if (kTakes.find(l) != std::string_view::npos && rest < argv.size()) {
        words.push_back(argv[rest++]);
      }
    }
  }
  words.insert(words.end(), argv.begin() + static_cast<long>(std::min(rest, argv.size())),
               argv.end());
  const Split s = SplitArgs(words, "bCfFgHIKLNTVX",
                            {"--file", "--directory", "--files-from", "--exclude-from",
                             "--blocking-factor", "--starting-file", "--newer", "--label",
                             "--listed-incremental", "--format", "--tape-length", "--index-file"});
  // What tar writes besides the members: the index, the snapshot file, and
  // the sources --remove-files deletes.
  for (const std::string& f : s.Values({"--index-file", "-g", "--listed-incremental"})) {
    Add(&out->writes, f);
  }
  if (HasOption(words, "--remove-files")) {
    for (const std::string& f : s.operands) Add(&out->writes, f);
  }
  // An exemption counts only when tar surely sees it (-O, not an O inside
  // a value such as -XO).
  if ((HasOption(words, "-x") || HasOption(words, "--extract") || HasOption(words, "--get")) &&
      !HasOptionSurely(words, "-O") && !HasOptionSurely(words, "--to-stdout")) {
    // Each -C applies to the members named after it: every one counts.
    std::vector<std::string> dirs = s.Values({"-C", "--directory"});
    if (dirs.empty()) dirs.push_back(".");
    for (const std::string& d : dirs) Add(&out->writes, Under(d, ""));
  }
  for (std::string_view mode : {"-c", "-r", "-u", "-A", "--create", "--append", "--update",
                                "--catenate", "--concatenate", "--delete"}) {
    if (!HasOption(words, mode)) continue;
    for (const std::string& f : s.Values({"-f", "--file"})) Add(&out->writes, f);
    break;
  }
}

void Unzip(const std::vector<std::string>& argv, OptionEffects* out) {
  // unzip's own parser: a listing option is a word of its own here (-l, not
  // the l inside -d/tmp/l), anything less sure still extracts.
  for (std::string_view listing : {"-l", "-t", "-v", "-p", "-c", "-Z", "-z"}) {
    if (std::find(argv.begin() + 1, argv.end(), listing) != argv.end()) return;
  }
  const Split s = SplitArgs(argv, "dP", {});
  std::vector<std::string> dirs = s.Values({"-d"});
  Add(&out->writes, Under(dirs.empty() ? "." : dirs.back(), ""));
}

void Curl(const std::vector<std::string>& argv, OptionEffects* out) {
  for (std::string_view o : {"-K", "--config", "-T", "--upload-file"}) {
    if (HasOption(argv, o)) {
      out->runs = Cat("curl ", o, " reads a file it names (options or an upload)");
      return;
    }
  }
  for (const std::string& a : argv) {
    std::string lower = a;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (lower.find("file:") != std::string::npos) {
      out->runs = "curl reads a local file through a file: URL";
      return;
    }
  }
  const Split s = SplitArgs(
      argv, "oDcdFbeEHuXxAmrwzYyQ",
      {"--output", "--dump-header", "--cookie-jar", "--trace", "--trace-ascii", "--libcurl",
       "--stderr", "--etag-save", "--hsts", "--alt-svc", "--output-dir", "--data", "--data-binary",
       "--data-urlencode", "--data-ascii", "--form", "--json"});
  for (const std::string& v : s.Values({"-d", "--data", "--data-binary", "--data-urlencode",
                                        "--data-ascii", "-F", "--form", "--json"})) {
    if (v.find('@') != std::string::npos || v.find('<') != std::string::npos) {
      out->runs = "curl sends a file it names (@file, <file)";
      return;
    }
  }
  for (const std::string& f :
       s.Values({"-o", "--output", "-D", "--dump-header", "-c", "--cookie-jar", "--trace",
                 "--trace-ascii", "--libcurl", "--stderr", "--etag-save", "--hsts", "--alt-svc"})) {
    Add(&out->writes, f);
  }
  // --output-dir puts every saved file below it (and --create-dirs makes
  // the way): the directory counts.
  for (const std::string& d : s.Values({"--output-dir"})) Add(&out->writes, Under(d, ""));
  if (HasOption(argv, "-O") || HasOption(argv, "--remote-name") ||
      HasOption(argv, "--remote-name-all") || HasOption(argv, "-J")) {
    std::vector<std::string> dirs = s.Values({"--output-dir"});
    Add(&out->writes, Under(dirs.empty() ? "." : dirs.back(), ""));
  }
}

void Wget(const std::vector<std::string>& argv, OptionEffects* out) {
  for (std::string_view o :
       {"-e", "--execute", "--config", "--post-file", "--body-file", "--use-askpass"}) {
    if (HasOption(argv, o)) {
      out->runs = Cat("wget ", o, " runs commands or sends a file it names");
      return;
    }
  }
  const Split s =
      SplitArgs(argv, "OoaPiBTtwQUeY",
                {"--output-document", "--output-file", "--append-output", "--directory-prefix",
                 "--input-file", "--save-cookies", "--rejected-log", "--warc-file"});
  for (const std::string& f : s.Values(
           {"-o", "--output-file", "-a", "--append-output", "--save-cookies", "--rejected-log"})) {
    Add(&out->writes, f);
  }
  for (const std::string& f : s.Values({"--warc-file"})) Add(&out->writes, f + "*");
  std::vector<std::string> documents = s.Values({"-O", "--output-document"});
  for (const std::string& f : documents) Add(&out->writes, f);
  if (documents.empty()) {
    std::vector<std::string> dirs = s.Values({"-P", "--directory-prefix"});
    Add(&out->writes, Under(dirs.empty() ? "." : dirs.back(), ""));
  }
}

// gzip and its kin replace each file with its compressed (or, with -d,
// decompressed) copy, unless they write to stdout, test or list.
void Compressor(std::string_view prog, const std::vector<std::string>& argv, OptionEffects* out) {
  for (std::string_view o : {"-c", "--stdout", "--to-stdout", "-t", "--test", "-l", "--list"}) {
    if (HasOptionSurely(argv, o)) return;
  }
  static const std::map<std::string_view, std::string_view> kSuffix = {
      {"gzip", ".gz"},   {"gunzip", ".gz"},  {"bzip2", ".bz2"}, {"bunzip2", ".bz2"},
      {"xz", ".xz"},     {"unxz", ".xz"},    {"zstd", ".zst"},  {"unzstd", ".zst"},
      {"lzma", ".lzma"}, {"compress", ".Z"}, {"lz4", ".lz4"}};
  const Split split = SplitArgs(argv, "bSTLM", {"--suffix", "--threads", "--memlimit"});
  const std::vector<std::string> given = split.Values({"-S", "--suffix"});
  const std::string suffix = given.empty() ? std::string(kSuffix.at(prog)) : given.back();
  for (const std::string& f : split.operands) {
    Add(&out->writes, f);
    if (f.size() > suffix.size() &&
        f.compare(f.size() - suffix.size(), suffix.size(), suffix) == 0) {
      Add(&out->writes, f.substr(0, f.size() - suffix.size()));
    } else {
      Add(&out->writes, f + suffix);
    }
  }
}

}  // namespace

void AddFileUtilityWrites(std::string_view prog, const std::vector<std::string>& argv,
                          OptionEffects* out) {
  if (argv.empty()) return;
  if (prog == "cp" || prog == "mv" || prog == "ln" || prog == "install") {
    return CopyLike(prog, argv, out);
  }
  if (prog == "chmod" || prog == "chown" || prog == "chgrp") return ChangeAttributes(argv, out);
  if (prog == "tar") return Tar(argv, out);
  if (prog == "unzip") return Unzip(argv, out);
  if (prog == "curl") return Curl(argv, out);
  if (prog == "wget") return Wget(argv, out);
  if (prog == "gzip" || prog == "gunzip" || prog == "bzip2" || prog == "bunzip2" || prog == "xz" ||
      prog == "unxz" || prog == "zstd" || prog == "unzstd" || prog == "lzma" ||
      prog == "compress" || prog == "lz4") {
    return Compressor(prog, argv, out);
  }
  if (prog == "uniq") {  // uniq [OPTION]... [INPUT [OUTPUT]]
    const Split s = SplitArgs(argv, "fsw", {"--skip-fields", "--skip-chars", "--check-chars"});
    if (s.operands.size() >= 2) Add(&out->writes, s.operands[1]);
    return;
  }
  if (prog == "split" || prog == "csplit") {
    // The pieces are PREFIX followed by a suffix: a name no glob can pin.
    const Split s = SplitArgs(argv, prog == "split" ? "abCdlnt" : "bfn",
                              {"--prefix", "--suffix-format", "--digits", "--bytes", "--lines",
                               "--line-bytes", "--number", "--additional-suffix"});
    std::vector<std::string> prefix = s.Values({"-f", "--prefix"});
    std::string base = prog == "csplit" ? (prefix.empty() ? "xx" : prefix.back())
                                        : (s.operands.size() >= 2 ? s.operands[1] : "x");
    Add(&out->writes, base + "*");
    return;
  }
  if (prog == "patch") {
    if (!HasOptionSurely(argv, "--dry-run")) Add(&out->writes, "./");  // the files the patch names
    return;
  }
  if (prog == "rmdir") {  // -p removes each parent too
    const bool parents = HasOption(argv, "-p") || HasOption(argv, "--parents");
    for (const std::string& f : SplitArgs(argv, "", {}).operands) {
      Add(&out->writes, f);
      for (size_t slash = f.rfind('/'); parents && slash != std::string::npos && slash > 0;
           slash = f.rfind('/', slash - 1)) {
        Add(&out->writes, f.substr(0, slash));
      }
    }
    return;
  }
  if (prog == "zip") {  // the archive, or -O's copy
    const Split s = SplitArgs(argv, "bInOtx", {"--output-file", "--temp-path", "--exclude"});
    std::vector<std::string> copy = s.Values({"-O", "--output-file"});
    if (!copy.empty()) {
      Add(&out->writes, copy.back());
    } else if (!s.operands.empty()) {
      Add(&out->writes, s.operands.front());
    }
    return;
  }
  if (prog == "rsync" && argv.size() > 2) {  // a tree under the destination
    const Split s = SplitArgs(argv, "eBfT",
                              {"--rsh", "--filter", "--exclude", "--include", "--temp-dir",
                               "--backup-dir", "--log-file"});
    if (s.operands.size() >= 2) Add(&out->writes, Under(s.operands.back(), ""));
    for (const std::string& f : s.Values({"--backup-dir", "--log-file"})) Add(&out->writes, f);
    return;
  }
  struct Operands {
    std::string_view prog, short_values;
    std::vector<std::string_view> long_values;
  };
  static const auto* kOperands = new std::vector<Operands>{
      {"touch", "drt", {"--date", "--reference"}},
      {"mkdir", "m", {"--mode"}},
      {"rmdir", "", {}},
      {"rm", "", {}},
      {"unlink", "", {}},
      {"shred", "ns", {"--iterations", "--size", "--random-source"}},
      {"truncate", "sr", {"--size", "--reference"}},
  };
  for (const Operands& o : *kOperands) {
    if (o.prog != prog) continue;
    for (const std::string& f : SplitArgs(argv, o.short_values, o.long_values).operands) {
      Add(&out->writes, f);
    }
  }
}

}  // namespace termbridge::policy::internal
