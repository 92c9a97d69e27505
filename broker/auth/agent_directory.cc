// Agent credentials: the store file, token files, the shared token and
// certificate names, kept as hashes and looked up per call.
#include "broker/auth/agent_directory.h"

#include <dirent.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace termbridge::broker::auth {
namespace {

constexpr size_t kMinTokenLength = 16;
constexpr size_t kMaxTokenLength = 4096;
constexpr size_t kMaxStoreBytes = 16 << 20;
constexpr char kTokenSuffix[] = ".token";

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

std::string Sha256Hex(absl::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

absl::StatusOr<std::string> RandomToken() {
  absl::StatusOr<std::string> hex = RandomHex(32);
  if (!hex.ok()) return hex.status();
  return "tba_" + *hex;
}

absl::StatusOr<std::string> ReadSmallFile(const std::string& path, size_t limit) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::string content(limit + 1, '\0');
  in.read(content.data(), static_cast<std::streamsize>(content.size()));
  content.resize(static_cast<size_t>(in.gcount()));
  if (content.size() > limit) {
    return absl::FailedPreconditionError(absl::StrCat(path, " is larger than ", limit, " bytes"));
  }
  return content;
}

absl::Status WriteAtomically(const std::string& path, const std::string& content) {
  std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot write ", tmp, ": ", std::strerror(errno)));
  }
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int error = errno;
      close(fd);
      unlink(tmp.c_str());
      return absl::ResourceExhaustedError(
          absl::StrCat("cannot write ", tmp, ": ", std::strerror(error)));
    }
    done += static_cast<size_t>(n);
  }
  bool synced = fdatasync(fd) == 0;
  close(fd);
  if (!synced || rename(tmp.c_str(), path.c_str()) != 0) {
    int error = errno;
    unlink(tmp.c_str());
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot replace ", path, ": ", std::strerror(error)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> RandomHex(size_t bytes) {
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  std::string raw(bytes, '\0');
  if (!urandom.read(raw.data(), static_cast<std::streamsize>(bytes))) {
    return absl::InternalError("cannot read /dev/urandom");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes * 2);
  for (unsigned char c : raw) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

bool AgentDirectory::ValidName(absl::string_view name) {
  if (name.empty() || name.size() > 64 || name.front() == '.' || name.front() == '-') return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return false;
    }
  }
  return true;
}

absl::StatusOr<std::unique_ptr<AgentDirectory>> AgentDirectory::Open(Options options) {
  std::unique_ptr<AgentDirectory> directory(new AgentDirectory(std::move(options)));
  if (absl::Status loaded = directory->Load(); !loaded.ok()) return loaded;
  return directory;
}

absl::Status AgentDirectory::AddToken(absl::string_view token, const std::string& name,
                                      const std::string& source) {
  if (token.size() < kMinTokenLength) {
    return absl::FailedPreconditionError(absl::StrCat("the ", source, " token of agent '", name,
                                                      "' is shorter than ", kMinTokenLength,
                                                      " characters"));
  }
  std::string hash = Sha256Hex(token);
  if (revoked_hashes_.count(hash) != 0) return absl::OkStatus();  // stays revoked
  if (auto it = by_hash_.find(hash); it != by_hash_.end() && it->second != name) {
    return absl::FailedPreconditionError(absl::StrCat("agents '", it->second, "' and '", name,
                                                      "' have the same token; give each its own"));
  }
  by_hash_[hash] = name;
  Credential& credential = agents_[name];
  if (credential.entry.name.empty()) {
    credential.entry.name = name;
    credential.entry.source = source;
    credential.entry.created_unix_ms = NowMs();
  }
  credential.hashes.push_back(std::move(hash));
  return absl::OkStatus();
}

absl::Status AgentDirectory::Load() {
  absl::MutexLock lock(&mu_);
  // 1. The store: issued tokens (hashes), revocations and revoked hashes.
  std::map<std::string, int64_t> revoked_names;
  if (!options_.store_path.empty()) {
    absl::StatusOr<std::string> text = ReadSmallFile(options_.store_path, kMaxStoreBytes);
    if (text.ok()) {
      nlohmann::json store = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
      if (!store.is_object() || !store.value("agents", nlohmann::json::array()).is_array()) {
        return absl::FailedPreconditionError(
            absl::StrCat("the agent store ", options_.store_path, " is not valid JSON"));
      }
      for (const nlohmann::json& item : store.value("agents", nlohmann::json::array())) {
        if (!item.is_object() || !item.value("name", nlohmann::json()).is_string()) continue;
        std::string name = item["name"].get<std::string>();
        if (!ValidName(name)) continue;
        int64_t revoked = item.value("revoked_unix_ms", int64_t{0});
        if (item.value("source", "") == "issued") {
          Credential& credential = agents_[name];
          credential.entry = {name, "issued", item.value("created_unix_ms", int64_t{0}), revoked,
                              0};
          for (const nlohmann::json& hash : item.value("sha256", nlohmann::json::array())) {
            if (!hash.is_string()) continue;
            credential.hashes.push_back(hash.get<std::string>());
            if (revoked == 0) by_hash_[hash.get<std::string>()] = name;
          }
        }
        if (revoked != 0) revoked_names[name] = revoked;
      }
      for (const nlohmann::json& item : store.value("revoked_sha256", nlohmann::json::array())) {
        if (item.is_object() && item.value("sha256", nlohmann::json()).is_string()) {
          revoked_hashes_[item["sha256"].get<std::string>()] = item.value("name", "");
        }
      }
    } else if (!absl::IsNotFound(text.status())) {
      return text.status();
    }
  }
  // 2. Token files: NAME.token in tokens_dir.
  if (!options_.tokens_dir.empty()) {
    DIR* dir = opendir(options_.tokens_dir.c_str());
    if (dir == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat("cannot read the agent tokens directory ",
                                                        options_.tokens_dir, ": ",
                                                        std::strerror(errno)));
    }
    std::vector<std::string> files;
    while (dirent* item = readdir(dir)) files.emplace_back(item->d_name);
    closedir(dir);
    for (const std::string& file : files) {
      if (!absl::EndsWith(file, kTokenSuffix)) continue;
      std::string name = file.substr(0, file.size() - std::strlen(kTokenSuffix));
      if (!ValidName(name)) {
        return absl::FailedPreconditionError(
            absl::StrCat("agent token file ", file, ": '", name,
                         "' is not an agent name (1 to 64 of A-Z a-z 0-9 . _ -)"));
      }
      absl::StatusOr<std::string> token =
          ReadSmallFile(absl::StrCat(options_.tokens_dir, "/", file), kMaxTokenLength);
      if (!token.ok()) return token.status();
      if (absl::Status added = AddToken(absl::StripAsciiWhitespace(*token), name, "token_file");
          !added.ok()) {
        return added;
      }
    }
  }
  // 3. The shared token names one agent.
  if (!options_.shared_token.empty()) {
    if (absl::Status added = AddToken(options_.shared_token, options_.shared_name, "shared");
        !added.ok()) {
      return added;
    }
  }
  // Revocations of names whose credentials are not issued tokens (a
  // certificate's name, a token file's) stay in force.
  for (const auto& [name, when] : revoked_names) {
    Credential& credential = agents_[name];
    if (credential.entry.name.empty()) credential.entry = {name, "certificate", 0, when, 0};
    if (credential.entry.source == "issued") continue;
    credential.entry.revoked_unix_ms = when;
  }
  return absl::OkStatus();
}

absl::Status AgentDirectory::Save() const {
  if (options_.store_path.empty()) return absl::OkStatus();
  nlohmann::json agents = nlohmann::json::array();
  for (const auto& [name, credential] : agents_) {
    const AgentEntry& entry = credential.entry;
    if (entry.source == "issued") {
      agents.push_back({{"name", name},
                        {"source", "issued"},
                        {"created_unix_ms", entry.created_unix_ms},
                        {"revoked_unix_ms", entry.revoked_unix_ms},
                        {"sha256", entry.revoked_unix_ms != 0 ? std::vector<std::string>{}
                                                              : credential.hashes}});
    } else if (entry.revoked_unix_ms != 0) {
      agents.push_back(
          {{"name", name}, {"source", entry.source}, {"revoked_unix_ms", entry.revoked_unix_ms}});
    }
  }
  nlohmann::json revoked = nlohmann::json::array();
  for (const auto& [hash, name] : revoked_hashes_) {
    revoked.push_back({{"sha256", hash}, {"name", name}});
  }
  nlohmann::json store = {{"version", 1}, {"agents", agents}, {"revoked_sha256", revoked}};
  return WriteAtomically(options_.store_path, store.dump(2) + "\n");
}

absl::StatusOr<std::string> AgentDirectory::Identify(absl::string_view bearer,
                                                     absl::string_view certificate_name) {
  absl::MutexLock lock(&mu_);
  if (!bearer.empty()) {
    std::string hash = Sha256Hex(bearer);
    if (auto it = by_hash_.find(hash); it != by_hash_.end()) {
      Credential& credential = agents_[it->second];
      credential.entry.last_seen_unix_ms = NowMs();
      return it->second;
    }
    if (auto it = revoked_hashes_.find(hash); it != revoked_hashes_.end()) {
      return absl::UnauthenticatedError(
          absl::StrCat("the token of agent '", it->second, "' was revoked"));
    }
    return absl::UnauthenticatedError("unknown agent token");
  }
  if (!certificate_name.empty() && options_.certificates_name_agents) {
    if (!ValidName(certificate_name)) {
      return absl::UnauthenticatedError(
          absl::StrCat("the client certificate's common name is not an agent name (1 to 64 of A-Z "
                       "a-z 0-9 . _ -)"));
    }
    Credential& credential = agents_[std::string(certificate_name)];
    if (credential.entry.name.empty()) {
      credential.entry = {std::string(certificate_name), "certificate", NowMs(), 0, 0};
    }
    if (credential.entry.revoked_unix_ms != 0) {
      return absl::UnauthenticatedError(absl::StrCat("agent '", certificate_name, "' was revoked"));
    }
    credential.entry.last_seen_unix_ms = NowMs();
    return std::string(certificate_name);
  }
  return absl::UnauthenticatedError("missing authorization metadata (Bearer agent token)");
}

absl::StatusOr<std::string> AgentDirectory::Add(absl::string_view name) {
  if (!ValidName(name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", name,
        "' is not an agent name: use 1 to 64 of A-Z a-z 0-9 . _ - (not starting with . or -)"));
  }
  absl::StatusOr<std::string> token = RandomToken();
  if (!token.ok()) return token.status();
  absl::MutexLock lock(&mu_);
  auto it = agents_.find(std::string(name));
  if (it != agents_.end() && it->second.entry.revoked_unix_ms == 0) {
    return absl::AlreadyExistsError(absl::StrCat("agent '", name, "' already has credentials (",
                                                 it->second.entry.source,
                                                 "); revoke it first to issue a new token"));
  }
  Credential before = it != agents_.end() ? it->second : Credential{};
  Credential& credential = agents_[std::string(name)];
  credential = Credential{};
  credential.entry = {std::string(name), "issued", NowMs(), 0, 0};
  std::string hash = Sha256Hex(*token);
  credential.hashes.push_back(hash);
  by_hash_[hash] = std::string(name);
  if (absl::Status saved = Save(); !saved.ok()) {
    by_hash_.erase(hash);
    if (before.entry.name.empty()) {
      agents_.erase(std::string(name));
    } else {
      agents_[std::string(name)] = std::move(before);
    }
    return saved;
  }
  return *token;
}

absl::StatusOr<AgentEntry> AgentDirectory::Revoke(absl::string_view name) {
  absl::MutexLock lock(&mu_);
  auto it = agents_.find(std::string(name));
  if (it == agents_.end()) {
    return absl::NotFoundError(absl::StrCat("no agent is named '", name, "'"));
  }
  Credential saved_credential = it->second;
  auto saved_by_hash = by_hash_;
  auto saved_revoked = revoked_hashes_;
  Credential& credential = it->second;
  if (credential.entry.revoked_unix_ms == 0) credential.entry.revoked_unix_ms = NowMs();
  for (const std::string& hash : credential.hashes) {
    by_hash_.erase(hash);
    revoked_hashes_[hash] = credential.entry.name;
  }
  if (absl::Status saved = Save(); !saved.ok()) {
    credential = std::move(saved_credential);
    by_hash_ = std::move(saved_by_hash);
    revoked_hashes_ = std::move(saved_revoked);
    return saved;
  }
  return credential.entry;
}

std::vector<AgentEntry> AgentDirectory::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<AgentEntry> out;
  for (const auto& [name, credential] : agents_) out.push_back(credential.entry);
  return out;
}

}  // namespace termbridge::broker::auth
