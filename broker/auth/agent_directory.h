// AgentDirectory answers "which agent is calling?" from the call's credentials,
// never from a field the agent fills in (docs/security.md "Agent identity").
// Four kinds of credential name an agent:
//   - a token issued by `termbridge agents add NAME`: only its SHA-256 is kept,
//     in the store file (<state_dir>/agents.json, 0600);
//   - a token file NAME.token in the broker's --agent-tokens-dir (how compose
//     stacks give each agent service its own token before the broker runs);
//   - the broker's single shared agent token, which names one agent
//     (`shared_name`, "agent" by default), so older set-ups keep working;
//   - a client certificate the broker verified (mTLS): its common name.
// Revocation is by name and covers every credential of that name at once.
#ifndef TERMBRIDGE_BROKER_AUTH_AGENT_DIRECTORY_H_
#define TERMBRIDGE_BROKER_AUTH_AGENT_DIRECTORY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace termbridge::broker::auth {

struct AgentEntry {
  std::string name;
  std::string source;  // "issued", "token_file", "shared", "certificate"
  int64_t created_unix_ms = 0;
  int64_t revoked_unix_ms = 0;  // 0: not revoked
  int64_t last_seen_unix_ms = 0;
};

// `bytes` random bytes from /dev/urandom, as lower-case hex: what every
// broker secret (agent and operator tokens) is made of.
absl::StatusOr<std::string> RandomHex(size_t bytes);

class AgentDirectory {
 public:
  struct Options {
    std::string store_path;    // JSON store of issued tokens and revocations
    std::string tokens_dir;    // optional: NAME.token files, read at Open
    std::string shared_token;  // optional: the broker's single agent token
    std::string shared_name = "agent";
    bool certificates_name_agents = false;  // true when the broker verifies client certificates
  };

  // Reads the store (a missing store is empty) and the token files. Fails on
  // an unreadable or malformed store, a token file with a bad name or a token
  // shorter than 16 characters, or two credentials giving one token.
  static absl::StatusOr<std::unique_ptr<AgentDirectory>> Open(Options options);

  // The agent the credentials name: `bearer` is the token of the call's
  // "authorization: Bearer" header (empty: none), `certificate_name` the
  // verified client certificate's common name (empty: none). A token wins
  // over a certificate. UNAUTHENTICATED for unknown or revoked credentials.
  absl::StatusOr<std::string> Identify(absl::string_view bearer,
                                       absl::string_view certificate_name);

  // Issues a token for a new agent and stores its hash. ALREADY_EXISTS when
  // an unrevoked credential has that name; adding a revoked name issues a
  // new token (the old ones stay invalid). INVALID_ARGUMENT for a bad name.
  absl::StatusOr<std::string> Add(absl::string_view name);

  // Revokes every credential of `name`, persistently. NOT_FOUND when no
  // credential has that name and no certificate has used it.
  absl::StatusOr<AgentEntry> Revoke(absl::string_view name);

  std::vector<AgentEntry> List() const;

  // Whether `name` is a valid agent name: 1 to 64 of [A-Za-z0-9._-], not
  // starting with '.' or '-'.
  static bool ValidName(absl::string_view name);

 private:
  struct Credential {
    AgentEntry entry;
    std::vector<std::string> hashes;  // hex SHA-256 of each token naming it
  };

  explicit AgentDirectory(Options options) : options_(std::move(options)) {}
  absl::Status Load();
  absl::Status Save() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status AddToken(absl::string_view token, const std::string& name, const std::string& source)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  mutable absl::Mutex mu_;
  std::map<std::string, Credential> agents_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> by_hash_ ABSL_GUARDED_BY(mu_);  // hash -> name
  // Hashes of revoked tokens -> the name they gave: never accepted again,
  // even when the name is added anew or its token file is still there.
  std::map<std::string, std::string> revoked_hashes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace termbridge::broker::auth

#endif  // TERMBRIDGE_BROKER_AUTH_AGENT_DIRECTORY_H_
