// One WebSocket connection of the console. It finishes the upgrade, reads
// what the page sends and hands it to a WsHandler (an attached terminal, or
// the events feed), and writes what the handler sends, in order, one write
// at a time. All socket work runs on the connection's strand; Send* and
// Close* may be called from any thread (gRPC callbacks do). The outgoing
// queue is bounded: a page that does not keep up is disconnected rather
// than buffered without limit (terminal output is also bounded earlier, by
// the flow window).
#ifndef TERMBRIDGE_BROKER_SURFACE_CONSOLE_WS_SESSION_H_
#define TERMBRIDGE_BROKER_SURFACE_CONSOLE_WS_SESSION_H_

#include <deque>
#include <memory>
#include <string>
#include <string_view>

#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "boost/beast/websocket.hpp"
#include "broker/surface/console/console_context.h"

namespace termbridge::console {

// What a WebSocket carries, seen from the console's side. Called on the
// connection's strand, one call at a time.
class WsHandler {
 public:
  virtual ~WsHandler() = default;
  virtual void OnOpen() = 0;  // the upgrade completed
  virtual void OnText(std::string_view text) = 0;
  virtual void OnBinary(std::string_view data) = 0;
  // Exactly once, when the connection ends for any reason (after OnOpen, or
  // instead of it when the upgrade failed). The handler stops its calls.
  virtual void OnClosed() = 0;
};

class WsSession : public std::enable_shared_from_this<WsSession>, public Stoppable {
 public:
  using Request = boost::beast::http::request<boost::beast::http::string_body>;
  static constexpr size_t kMaxQueuedBytes = 8 << 20;
  static constexpr size_t kMaxMessageBytes = 1 << 20;

  WsSession(boost::beast::tcp_stream stream, ConsoleContext* context);
  ~WsSession() override;

  // Completes the upgrade `request` and serves the connection with `handler`.
  void Run(Request request, std::shared_ptr<WsHandler> handler);
  void SendText(std::string text);
  void SendBinary(std::string data);
  // A close frame after everything queued so far (code 1000, or 1011 for an error).
  void CloseAfterSend(bool error, std::string reason);
  // Stop: going-away close frame, queued output dropped.
  void Shutdown() override;

 private:
  struct Outgoing {
    std::string data;
    bool binary = false;
    bool close = false;
    boost::beast::websocket::close_code code = boost::beast::websocket::close_code::normal;
  };

  void Enqueue(Outgoing message);  // on the strand
  void DoWrite();
  void OnWrite(boost::beast::error_code ec);
  void DoRead();
  void OnRead(boost::beast::error_code ec);
  void Finish(std::string_view why);

  boost::beast::websocket::stream<boost::beast::tcp_stream> ws_;
  ConsoleContext* const context_;
  std::shared_ptr<WsHandler> handler_;
  uint64_t live_id_ = 0;
  boost::beast::flat_buffer buffer_;
  std::deque<Outgoing> queue_;
  size_t queued_bytes_ = 0;
  bool open_ = false;  // the upgrade completed
  bool writing_ = false;
  bool closing_ = false;   // a close frame is queued or sent
  bool finished_ = false;  // handler_->OnClosed was called
};

}  // namespace termbridge::console

#endif  // TERMBRIDGE_BROKER_SURFACE_CONSOLE_WS_SESSION_H_
