// One HTTP connection to the console: reads requests, checks Origin and the
// operator token, and answers with a page file, a JSON API reply, or a
// WebSocket upgrade (which hands the socket to a WsSession). Requests on a
// connection are answered in order; all socket work runs on the
// connection's strand.
#ifndef TERMBRIDGE_BROKER_SURFACE_CONSOLE_HTTP_SESSION_H_
#define TERMBRIDGE_BROKER_SURFACE_CONSOLE_HTTP_SESSION_H_

#include <memory>
#include <optional>

#include "boost/asio.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "broker/surface/console/console_context.h"

namespace termbridge::console {

class HttpSession : public std::enable_shared_from_this<HttpSession>, public Stoppable {
 public:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;
  using Response = boost::beast::http::response<boost::beast::http::string_body>;
  static constexpr size_t kMaxBodyBytes = 64 << 10;

  HttpSession(boost::asio::ip::tcp::socket socket, ConsoleContext* context);
  ~HttpSession() override;

  void Run();
  void Shutdown() override;

 private:
  void DoRead();
  void OnRead(boost::beast::error_code ec);
  void Handle(Request request);
  void Upgrade(Request request);
  void Reply(Response response);
  void OnWrite(bool keep_alive, boost::beast::error_code ec);
  void Close();

  boost::beast::tcp_stream stream_;
  const boost::asio::any_io_executor executor_;  // the strand; outlives a move of stream_
  ConsoleContext* const context_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  uint64_t live_id_ = 0;
  bool upgraded_ = false;  // stream_ was moved into a WsSession
};

}  // namespace termbridge::console

#endif  // TERMBRIDGE_BROKER_SURFACE_CONSOLE_HTTP_SESSION_H_
