// The on-disk index format (Documentation/gitformat-index.txt): a 12-byte
// header "DIRC" version count, the entries, then extensions and a trailing
// hash. Only each entry's mode and path are kept; v4 paths are prefix
// compressed against the previous entry's path.
#include "common/workdir/git_index_gitlinks.h"

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace termbridge::workdir {
namespace {

constexpr uint32_t kModeTypeMask = 0170000;
constexpr uint32_t kModeGitlink = 0160000;
constexpr size_t kStatFieldsSize = 40;  // ctime mtime dev ino mode uid gid size
constexpr uint16_t kFlagExtended = 0x4000;

absl::Status Malformed(const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("malformed index: ", what));
}

uint32_t Be32(std::string_view b, size_t at) {
  auto u = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(b[at + i])); };
  return u(0) << 24 | u(1) << 16 | u(2) << 8 | u(3);
}

uint16_t Be16(std::string_view b, size_t at) {
  auto u = [&](size_t i) { return static_cast<uint16_t>(static_cast<unsigned char>(b[at + i])); };
  return static_cast<uint16_t>(u(0) << 8 | u(1));
}

// git's offset varint (varint.c decode_varint); false when it runs off the end.
bool ReadVarint(std::string_view b, size_t& at, uint64_t& value) {
  if (at >= b.size()) return false;
  unsigned char c = static_cast<unsigned char>(b[at++]);
  value = c & 127;
  while (c & 128) {
    if (at >= b.size() || value > (UINT64_MAX >> 8)) return false;
    c = static_cast<unsigned char>(b[at++]);
    value = ((value + 1) << 7) | (c & 127);
  }
  return true;
}

// Reads one entry at `at` into `path`, leaving `at` after it.
absl::Status ReadEntry(std::string_view b, uint32_t version, size_t hash_size, size_t& at,
                       std::string& path, uint32_t& mode) {
  size_t start = at;
  size_t fixed = kStatFieldsSize + hash_size + 2;
  if (b.size() - at < fixed) return Malformed("entry runs past the end");
  mode = Be32(b, at + 24);
  uint16_t flags = Be16(b, at + kStatFieldsSize + hash_size);
  at += fixed;
  if (version >= 3 && (flags & kFlagExtended)) {
    if (b.size() - at < 2) return Malformed("entry runs past the end");
    at += 2;
  }
  if (version == 4) {
    uint64_t strip;
    if (!ReadVarint(b, at, strip) || strip > path.size()) return Malformed("bad path prefix");
    path.resize(path.size() - strip);
  } else {
    path.clear();
  }
  size_t nul = b.find('\0', at);
  if (nul == std::string_view::npos) return Malformed("unterminated path");
  path.append(b.substr(at, nul - at));
  at = nul + 1;
  if (version != 4) {
    size_t padded = start + ((nul - start + 8) & ~size_t{7});  // 1 to 8 NULs in all
    if (padded > b.size()) return Malformed("entry runs past the end");
    at = padded;
  }
  return absl::OkStatus();
}

// The shared index id from a "link" extension among those starting at `at`.
std::string FindSharedIndex(std::string_view b, size_t at, size_t hash_size) {
  static const char kHex[] = "0123456789abcdef";
  while (b.size() - at >= 8 + hash_size) {
    std::string_view sig = b.substr(at, 4);
    uint32_t size = Be32(b, at + 4);
    at += 8;
    if (size > b.size() - at) break;
    if (sig == "link" && size >= hash_size) {
      std::string hex;
      for (size_t i = 0; i < hash_size; ++i) {
        unsigned char c = static_cast<unsigned char>(b[at + i]);
        hex.push_back(kHex[c >> 4]);
        hex.push_back(kHex[c & 15]);
      }
      return hex;
    }
    at += size;
  }
  return "";
}

}  // namespace

absl::StatusOr<GitIndexGitlinks> ParseGitIndexGitlinks(std::string_view b, size_t hash_size) {
  if (b.size() < 12 + hash_size || b.substr(0, 4) != "DIRC") return Malformed("no DIRC header");
  uint32_t version = Be32(b, 4);
  if (version < 2 || version > 4) return Malformed(absl::StrCat("version ", version));
  uint32_t count = Be32(b, 8);
  GitIndexGitlinks out;
  size_t at = 12;
  std::string path;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t mode = 0;
    absl::Status s = ReadEntry(b, version, hash_size, at, path, mode);
    if (!s.ok()) return s;
    if ((mode & kModeTypeMask) == kModeGitlink) out.paths.push_back(path);
  }
  out.shared_index = FindSharedIndex(b, at, hash_size);
  return out;
}

}  // namespace termbridge::workdir
