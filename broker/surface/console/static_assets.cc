// Serving the console's files from its assets directory (see static_assets.h).
#include "broker/surface/console/static_assets.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "broker/surface/console/string_views.h"

namespace termbridge::console {
namespace {

constexpr size_t kMaxAssetBytes = 16 << 20;

bool PlainFileName(std::string_view name) {
  if (name.empty() || name.size() > 128 || name.front() == '.') return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> AssetName(std::string_view path) {
  if (path == "/" || path == "/index.html") return "index.html";
  if (path.size() < 2 || path.front() != '/') return std::nullopt;
  std::string_view name = path.substr(1);
  if (!PlainFileName(name) || !ContentType(name)) return std::nullopt;
  return std::string(name);
}

std::optional<std::string_view> ContentType(std::string_view file_name) {
  absl::string_view name = AbslView(file_name);
  if (absl::EndsWith(name, ".html")) return "text/html; charset=utf-8";
  if (absl::EndsWith(name, ".js") || absl::EndsWith(name, ".mjs")) {
    return "text/javascript; charset=utf-8";
  }
  if (absl::EndsWith(name, ".css")) return "text/css; charset=utf-8";
  if (absl::EndsWith(name, ".svg")) return "image/svg+xml";
  if (absl::EndsWith(name, ".png")) return "image/png";
  return std::nullopt;
}

absl::StatusOr<std::string> ReadAsset(const std::string& dir, const std::string& name) {
  std::string path = absl::StrCat(dir, "/", name);
  struct stat info;
  if (stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) {
    return absl::NotFoundError(absl::StrCat("no console asset ", path));
  }
  if (static_cast<size_t>(info.st_size) > kMaxAssetBytes) {
    return absl::FailedPreconditionError(absl::StrCat("console asset too large: ", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) return absl::UnavailableError(absl::StrCat("cannot open ", path));
  std::ostringstream content;
  content << in.rdbuf();
  if (!in.good() && !in.eof()) return absl::UnavailableError(absl::StrCat("cannot read ", path));
  return content.str();
}

}  // namespace termbridge::console
