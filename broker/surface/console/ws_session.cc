// The console's WebSocket transport on Boost.Beast (see ws_session.h).
// Beast reports errors through error_code on every call used here; nothing
// in this file throws.
#include "broker/surface/console/ws_session.h"

#include <chrono>

#include "spdlog/spdlog.h"

namespace termbridge::console {
namespace {

namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace asio = boost::asio;

}  // namespace

WsSession::WsSession(beast::tcp_stream stream, ConsoleContext* context)
    : ws_(std::move(stream)), context_(context) {}

WsSession::~WsSession() {
  if (!finished_ && handler_) handler_->OnClosed();
  context_->connections.Remove(live_id_);
}

void WsSession::Run(Request request, std::shared_ptr<WsHandler> handler) {
  handler_ = std::move(handler);
  live_id_ = context_->connections.Add(weak_from_this());
  if (live_id_ == 0) {
    Finish("console stopping");
    return;
  }
  beast::get_lowest_layer(ws_).expires_never();  // websocket timeouts take over
  websocket::stream_base::timeout timeouts =
      websocket::stream_base::timeout::suggested(beast::role_type::server);
  timeouts.handshake_timeout = std::chrono::seconds(10);
  timeouts.idle_timeout = std::chrono::seconds(60);
  timeouts.keep_alive_pings = true;  // a page that vanished is noticed
  ws_.set_option(timeouts);
  ws_.set_option(websocket::stream_base::decorator([](websocket::response_type& response) {
    response.set(beast::http::field::server, "termbridge-console");
  }));
  ws_.read_message_max(kMaxMessageBytes);
  auto shared_request = std::make_shared<Request>(std::move(request));
  ws_.async_accept(*shared_request,
                   [self = shared_from_this(), shared_request](beast::error_code ec) {
                     if (ec) {
                       self->Finish(ec.message());
                       return;
                     }
                     self->open_ = true;
                     self->handler_->OnOpen();
                     if (!self->writing_ && !self->queue_.empty()) self->DoWrite();
                     self->DoRead();
                   });
}

void WsSession::SendText(std::string text) {
  asio::post(ws_.get_executor(), [self = shared_from_this(), text = std::move(text)]() mutable {
    self->Enqueue({std::move(text), false, false});
  });
}

void WsSession::SendBinary(std::string data) {
  asio::post(ws_.get_executor(), [self = shared_from_this(), data = std::move(data)]() mutable {
    self->Enqueue({std::move(data), true, false});
  });
}

void WsSession::CloseAfterSend(bool error, std::string reason) {
  asio::post(ws_.get_executor(), [self = shared_from_this(), error, reason = std::move(reason)] {
    self->Enqueue({reason, false, true,
                   error ? websocket::close_code::internal_error : websocket::close_code::normal});
  });
}

void WsSession::Shutdown() {
  asio::post(ws_.get_executor(), [self = shared_from_this()] {
    if (!self->open_) {
      beast::error_code ignored;
      beast::get_lowest_layer(self->ws_).socket().close(ignored);
      return;
    }
    // Keep only a write in flight, then say goodbye.
    while (self->queue_.size() > (self->writing_ ? 1u : 0u)) {
      self->queued_bytes_ -= self->queue_.back().data.size();
      self->queue_.pop_back();
    }
    self->Enqueue({"broker stopping", false, true, websocket::close_code::going_away});
  });
}

void WsSession::Enqueue(Outgoing message) {
  if (finished_ || closing_) return;
  if (queued_bytes_ + message.data.size() > kMaxQueuedBytes) {
    spdlog::warn("event=console_ws_too_slow queued_bytes={}", queued_bytes_);
    queue_.clear();
    queued_bytes_ = 0;
    closing_ = true;  // nothing more is queued; the failing read calls Finish
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().close(ignored);
    return;
  }
  if (message.close) closing_ = true;
  queued_bytes_ += message.data.size();
  queue_.push_back(std::move(message));
  if (!writing_ && open_) DoWrite();
}

void WsSession::DoWrite() {
  writing_ = true;
  Outgoing& next = queue_.front();
  if (next.close) {
    websocket::close_reason reason(next.code, next.data.substr(0, 120));
    ws_.async_close(reason,
                    [self = shared_from_this()](beast::error_code ec) { self->OnWrite(ec); });
    return;
  }
  ws_.binary(next.binary);
  ws_.async_write(asio::buffer(next.data),
                  [self = shared_from_this()](beast::error_code ec, size_t) { self->OnWrite(ec); });
}

void WsSession::OnWrite(beast::error_code ec) {
  if (queue_.empty()) {  // dropped when the page was too slow
    writing_ = false;
    return;
  }
  queued_bytes_ -= queue_.front().data.size();
  bool was_close = queue_.front().close;
  queue_.pop_front();
  writing_ = false;
  if (ec && ec != websocket::error::closed) {
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().close(ignored);
    return;  // the pending read fails and calls Finish
  }
  if (was_close) return;  // the read loop sees the peer's close
  if (!queue_.empty()) DoWrite();
}

void WsSession::DoRead() {
  ws_.async_read(buffer_,
                 [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
}

void WsSession::OnRead(beast::error_code ec) {
  if (ec) {
    Finish(ec.message());
    return;
  }
  std::string message = beast::buffers_to_string(buffer_.data());
  buffer_.consume(buffer_.size());
  if (!finished_) {
    if (ws_.got_text()) {
      handler_->OnText(message);
    } else {
      handler_->OnBinary(message);
    }
  }
  DoRead();
}

void WsSession::Finish(std::string_view why) {
  if (finished_) return;
  finished_ = true;
  spdlog::debug("event=console_ws_closed reason=\"{}\"", why);
  if (handler_) handler_->OnClosed();
  beast::error_code ignored;
  beast::get_lowest_layer(ws_).socket().close(ignored);
}

}  // namespace termbridge::console
