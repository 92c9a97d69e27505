// The web console: a page (xterm.js tabs, one per terminal, and an approvals
// panel) that termbridge-broker serves over HTTP and WebSocket with
// Boost.Beast. The console is an operator client like the termbridge CLI:
// it reaches the broker through the broker's own operator unix socket with
// the termbridge.v1.TerminalOperator service, so it can do nothing the CLI
// cannot. Every request needs the operator token (see access.h), and each
// open tab is an attached viewer (Resume.viewer = "console").
//
// HTTP routes: GET / and the assets (static_assets.h kRequiredAssets, from
// assets_dir); GET /?token=T logs a browser in (cookie, then a redirect to
// /); the JSON API of operator_api.h (terminals, approvals, policy,
// recordings, the audit log's history; decide, close, lock, open);
// WebSocket /ws/events and /ws/attach?terminal=ID[&offset=N] (messages.h).
#ifndef TERMBRIDGE_BROKER_SURFACE_CONSOLE_CONSOLE_SERVER_H_
#define TERMBRIDGE_BROKER_SURFACE_CONSOLE_CONSOLE_SERVER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace termbridge::console {

struct ConsoleOptions {
  std::string listen;           // "127.0.0.1:45460"; port 0 allowed
  std::string operator_token;   // required on every request
  std::string operator_socket;  // the broker's operator unix socket path
  std::string assets_dir;       // where index.html, app.js and the built xterm files are
  std::vector<std::string> allowed_origins;  // besides the console's own origin
};

class ConsoleServer {
 public:
  // Binds `listen` and serves until Stop. Fails when the token or socket
  // path is empty, the address is bad or taken, or the assets are missing.
  static absl::StatusOr<std::unique_ptr<ConsoleServer>> Start(ConsoleOptions options);
  ~ConsoleServer();  // Stop()

  int port() const;
  // The link that logs a browser in: http://HOST:PORT/?token=TOKEN (a
  // wildcard listen host becomes 127.0.0.1). It contains the token.
  std::string login_url() const;
  void Stop();  // closes listeners and every websocket, joins threads

 private:
  struct Impl;
  explicit ConsoleServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Where the built page is, for a broker at `executable_path`: the first of
// <exe dir>/../console-assets (the build tree, where CMake puts it) and
// <exe dir>/../share/termbridge/console-assets (an installed layout) that
// holds index.html, else the first.
std::string DefaultAssetsDir(const std::string& executable_path);

}  // namespace termbridge::console

#endif  // TERMBRIDGE_BROKER_SURFACE_CONSOLE_CONSOLE_SERVER_H_
