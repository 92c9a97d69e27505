// LoadOrCreateHttpToken: the token is written to a private temporary file
// and linked into place, so a reader never sees half a token and a second
// agent racing the first reads the winner's.
#include "agent/mcp/http_token.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "openssl/rand.h"

namespace termbridge::mcp {
namespace {

absl::Status Errno(const char* what, const std::string& path) {
  return absl::FailedPreconditionError(absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

// Creates `dir` and its missing parents; the ones made here are 0700.
absl::Status MakeDirs(const std::string& dir) {
  if (dir.empty()) return absl::OkStatus();
  struct stat sb;
  if (stat(dir.c_str(), &sb) == 0) return absl::OkStatus();
  if (size_t slash = dir.rfind('/'); slash != std::string::npos && slash > 0) {
    if (absl::Status s = MakeDirs(dir.substr(0, slash)); !s.ok()) return s;
  }
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return Errno("cannot create", dir);
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Errno("cannot read the HTTP token file", path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(buffer.str()));
  if (token.size() < 16) {
    return absl::FailedPreconditionError(
        absl::StrCat("the HTTP token in ", path, " is shorter than 16 characters"));
  }
  return token;
}

}  // namespace

absl::StatusOr<HttpToken> LoadOrCreateHttpToken(const std::string& path) {
  if (access(path.c_str(), F_OK) == 0) {
    absl::StatusOr<std::string> token = ReadToken(path);
    if (!token.ok()) return token.status();
    return HttpToken{*std::move(token), false};
  }
  size_t slash = path.rfind('/');
  if (slash != std::string::npos) {
    if (absl::Status s = MakeDirs(path.substr(0, slash)); !s.ok()) return s;
  }
  unsigned char raw[32];  // 256 bits
  if (RAND_bytes(raw, sizeof(raw)) != 1) {
    return absl::InternalError("no random bytes for the HTTP token");
  }
  std::string token =
      absl::BytesToHexString(std::string(reinterpret_cast<const char*>(raw), sizeof(raw)));
  std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("cannot create", tmp);
  std::string line = token + "\n";
  bool written = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  written = fsync(fd) == 0 && written;
  close(fd);
  if (!written) {
    unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat("cannot write ", tmp));
  }
  int linked = link(tmp.c_str(), path.c_str());
  int link_errno = errno;
  unlink(tmp.c_str());
  if (linked == 0) return HttpToken{std::move(token), true};
  if (link_errno != EEXIST) {
    errno = link_errno;
    return Errno("cannot create", path);
  }
  absl::StatusOr<std::string> theirs = ReadToken(path);  // another agent was first
  if (!theirs.ok()) return theirs.status();
  return HttpToken{*std::move(theirs), false};
}

}  // namespace termbridge::mcp
