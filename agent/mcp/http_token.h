// The bearer token that guards the agent's Streamable HTTP endpoint when no
// --http-token-file is given: 256 random bits, hex, in a file of mode 0600
// that the agent creates on its first start and reads on every later one
// (docs/security.md "The agent's HTTP endpoint").
#ifndef TERMBRIDGE_AGENT_MCP_HTTP_TOKEN_H_
#define TERMBRIDGE_AGENT_MCP_HTTP_TOKEN_H_

#include <string>

#include "absl/status/statusor.h"

namespace termbridge::mcp {

struct HttpToken {
  std::string token;
  bool created = false;  // this call made the file
};

// Reads the token in `path`, or creates it (parent directory 0700, file
// 0600, written in full before it appears under `path`, so two agents
// starting together agree on one token). A file that exists but holds fewer
// than 16 characters is FailedPrecondition; I/O errors name the path.
absl::StatusOr<HttpToken> LoadOrCreateHttpToken(const std::string& path);

}  // namespace termbridge::mcp

#endif  // TERMBRIDGE_AGENT_MCP_HTTP_TOKEN_H_
