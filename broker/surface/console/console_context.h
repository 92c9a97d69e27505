// What every connection and call of one running console shares: its
// options, the access rules, the gRPC stub for the broker's operator socket,
// and the live sets Stop walks. Owned by ConsoleServer and outlives every
// connection and call.
#ifndef TERMBRIDGE_BROKER_SURFACE_CONSOLE_CONSOLE_CONTEXT_H_
#define TERMBRIDGE_BROKER_SURFACE_CONSOLE_CONSOLE_CONTEXT_H_

#include <atomic>
#include <memory>

#include "broker/surface/console/access.h"
#include "broker/surface/console/console_server.h"
#include "broker/surface/console/live_set.h"
#include "common/thread/named_thread.h"
#include "grpcpp/grpcpp.h"
#include "termbridge/v1/broker.grpc.pb.h"

namespace termbridge::console {

struct ConsoleContext {
  ConsoleOptions options;
  std::unique_ptr<ConsoleAccess> access;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::TerminalOperator::Stub> stub;
  LiveSet connections;  // HTTP and WebSocket sessions
  LiveSet calls;        // gRPC calls to the operator socket
  // Threads that read the audit log for the history views (history_api.h),
  // two at most; joined by ConsoleServer::Stop.
  thread::ThreadGroup history_readers{"tb-console-hist", 2};
  // Whole-history searches running (recording_api.h), two at most.
  std::atomic<int> recording_searches{0};
  // Replay windows loading (recording_api.h), two at most.
  std::atomic<int> recording_casts{0};
};

// The serialized ErrorDetail a failed call carried ("" if none).
std::string ErrorDetailOf(const grpc::ClientContext& context);

}  // namespace termbridge::console

#endif  // TERMBRIDGE_BROKER_SURFACE_CONSOLE_CONSOLE_CONTEXT_H_
