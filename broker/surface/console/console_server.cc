// ConsoleServer: the listener, the I/O thread and the orderly Stop of the
// web console (see console_server.h). One thread ("tb-console-io", joined
// by Stop) runs Beast's io_context; gRPC runs its callbacks on its own
// threads and posts back to connection strands.
#include "broker/surface/console/console_server.h"

#include <sys/stat.h>

#include <exception>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "boost/asio.hpp"
#include "broker/surface/console/console_context.h"
#include "broker/surface/console/http_session.h"
#include "broker/surface/console/static_assets.h"
#include "common/thread/named_thread.h"
#include "spdlog/spdlog.h"

namespace termbridge::console {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

constexpr size_t kMaxConnections = 128;
constexpr absl::Duration kCloseGrace = absl::Seconds(2);

struct ListenAddress {
  std::string host;  // without brackets
  int port = 0;
};

absl::StatusOr<ListenAddress> ParseListen(const std::string& listen) {
  size_t colon = listen.rfind(':');
  ListenAddress address;
  if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &address.port) ||
      address.port < 0 || address.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("console address must be host:port, got ", listen));
  }
  address.host = listen.substr(0, colon);
  if (address.host.size() > 2 && address.host.front() == '[') {
    address.host = address.host.substr(1, address.host.size() - 2);
  }
  if (address.host == "localhost") address.host = "127.0.0.1";
  return address;
}

bool FileExists(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

absl::Status CheckOptions(const ConsoleOptions& options) {
  if (options.operator_token.empty()) {
    return absl::InvalidArgumentError("the web console needs an operator token");
  }
  if (options.operator_socket.empty()) {
    return absl::InvalidArgumentError("the web console needs the operator socket path");
  }
  for (const char* name : kRequiredAssets) {
    if (!FileExists(absl::StrCat(options.assets_dir, "/", name))) {
      return absl::FailedPreconditionError(absl::StrCat(
          "web console assets missing: no ", name, " in '", options.assets_dir,
          "' (build the tb_console_assets target; it needs `npm ci` in broker/console)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string ErrorDetailOf(const grpc::ClientContext& context) {
  const auto& trailers = context.GetServerTrailingMetadata();
  auto it = trailers.find("termbridge-error-bin");
  if (it == trailers.end()) return "";
  return std::string(it->second.data(), it->second.size());
}

struct ConsoleServer::Impl {
  // Declared before the io_context: connections and calls refer to it until
  // the io_context (which may still hold them) is destroyed.
  ConsoleContext context;
  asio::io_context ioc{1};
  asio::executor_work_guard<asio::io_context::executor_type> work{ioc.get_executor()};
  tcp::acceptor acceptor{ioc};
  thread::NamedThread io_thread;
  ListenAddress address;
  int port = 0;

  absl::Mutex mu;
  bool stopped ABSL_GUARDED_BY(mu) = false;

  absl::Status Listen() {
    boost::system::error_code ec;
    asio::ip::address ip = asio::ip::make_address(address.host, ec);
    if (ec) return absl::InvalidArgumentError(absl::StrCat("bad console address: ", address.host));
    tcp::endpoint endpoint(ip, static_cast<unsigned short>(address.port));
    acceptor.open(endpoint.protocol(), ec);
    if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor.bind(endpoint, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return absl::UnavailableError(
          absl::StrCat("cannot listen on ", context.options.listen, ": ", ec.message()));
    }
    port = acceptor.local_endpoint().port();
    return absl::OkStatus();
  }

  void Accept() {
    acceptor.async_accept(
        asio::make_strand(ioc), [this](boost::system::error_code ec, tcp::socket socket) {
          if (ec) {
            if (ec != asio::error::operation_aborted) {
              spdlog::warn("event=console_accept_failed error=\"{}\"", ec.message());
            }
            if (!acceptor.is_open()) return;  // closed by Stop
          } else if (context.connections.size() >= kMaxConnections) {
            spdlog::warn("event=console_connection_refused reason=max_connections");
            boost::system::error_code ignored;
            socket.close(ignored);
          } else {
            std::make_shared<HttpSession>(std::move(socket), &context)->Run();
          }
          Accept();
        });
  }

  // Runs the io_context until Stop; a handler that throws is logged and
  // the loop goes on (nothing here is expected to throw).
  void RunIo() {
    for (;;) {
      try {
        ioc.run();
        return;
      } catch (const std::exception& e) {
        spdlog::error("event=console_io_error error=\"{}\"", e.what());
      }
    }
  }
};

ConsoleServer::ConsoleServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ConsoleServer::~ConsoleServer() { Stop(); }

absl::StatusOr<std::unique_ptr<ConsoleServer>> ConsoleServer::Start(ConsoleOptions options) {
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  auto impl = std::make_unique<Impl>();
  absl::StatusOr<ListenAddress> address = ParseListen(options.listen);
  if (!address.ok()) return address.status();
  impl->address = *address;
  impl->context.options = std::move(options);
  if (absl::Status s = impl->Listen(); !s.ok()) return s;
  ConsoleContext& context = impl->context;
  context.access =
      std::make_unique<ConsoleAccess>(context.options.operator_token, impl->address.host,
                                      impl->port, context.options.allowed_origins);
  context.channel = grpc::CreateChannel("unix:" + context.options.operator_socket,
                                        grpc::InsecureChannelCredentials());
  context.stub = v1::TerminalOperator::NewStub(context.channel);
  impl->Accept();
  impl->io_thread = thread::NamedThread("tb-console-io", [raw = impl.get()] { raw->RunIo(); });
  spdlog::info("event=console_listening address={} port={} assets={} operator_socket={}",
               impl->address.host, impl->port, context.options.assets_dir,
               context.options.operator_socket);
  return std::unique_ptr<ConsoleServer>(new ConsoleServer(std::move(impl)));
}

int ConsoleServer::port() const { return impl_->port; }

std::string ConsoleServer::login_url() const {
  std::string host = impl_->address.host;
  if (host == "0.0.0.0" || host.empty()) host = "127.0.0.1";
  if (host == "::") host = "::1";
  if (host.find(':') != std::string::npos) host = absl::StrCat("[", host, "]");
  return absl::StrCat("http://", host, ":", impl_->port,
                      "/?token=", impl_->context.options.operator_token);
}

void ConsoleServer::Stop() {
  {
    absl::MutexLock lock(&impl_->mu);
    if (impl_->stopped) return;
    impl_->stopped = true;
  }
  Impl& impl = *impl_;
  asio::post(impl.ioc, [&impl] {
    boost::system::error_code ignored;
    impl.acceptor.close(ignored);
  });
  impl.context.connections.ShutdownAll();  // WebSockets close, their calls get cancelled
  impl.context.calls.ShutdownAll();        // and anything else in flight
  // A cancelled call always ends, so this wait is finite; it must finish
  // before the channel and the reactors' owners go away.
  while (!impl.context.calls.WaitEmpty(absl::Seconds(5))) {
    spdlog::warn("event=console_stop_waiting calls={}", impl.context.calls.size());
  }
  // No call is left to start a reader; those reading finish their file and
  // reply while the io_context still runs.
  impl.context.history_readers.JoinAll();
  if (!impl.context.connections.WaitEmpty(kCloseGrace)) {
    spdlog::info("event=console_stop_forced connections={}", impl.context.connections.size());
  }
  impl.work.reset();
  impl.ioc.stop();
  impl.io_thread.Join();
  spdlog::info("event=console_stopped port={}", impl.port);
}

std::string DefaultAssetsDir(const std::string& executable_path) {
  size_t slash = executable_path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : executable_path.substr(0, slash);
  const std::string candidates[] = {absl::StrCat(dir, "/../console-assets"),
                                    absl::StrCat(dir, "/../share/termbridge/console-assets")};
  for (const std::string& candidate : candidates) {
    if (FileExists(candidate + "/index.html")) return candidate;
  }
  return candidates[0];
}

}  // namespace termbridge::console
