// HealthService implements grpc.health.v1.Health from the generated protobuf
// service (not gRPC's built-in one), so server reflection can describe it and
// `grpcurl ... grpc.health.v1.Health/Check` works. The overall status ("")
// and the broker's own service name report SERVING until the broker drains.
#ifndef TERMBRIDGE_BROKER_SERVICE_HEALTH_SERVICE_H_
#define TERMBRIDGE_BROKER_SERVICE_HEALTH_SERVICE_H_

#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace termbridge::broker {

class HealthService final : public grpc::health::v1::Health::Service {
 public:
  grpc::Status Check(grpc::ServerContext* context,
                     const grpc::health::v1::HealthCheckRequest* request,
                     grpc::health::v1::HealthCheckResponse* response) override;
  // Sends the current status, then each change, until the client cancels or
  // Shutdown() is called.
  grpc::Status Watch(grpc::ServerContext* context,
                     const grpc::health::v1::HealthCheckRequest* request,
                     grpc::ServerWriter<grpc::health::v1::HealthCheckResponse>* writer) override;

  void SetServing(bool serving);
  // Waits (up to `timeout`) until every Watch stream has written the current
  // status, so a drain's NOT_SERVING reaches watchers before the server stops.
  void WaitDelivered(absl::Duration timeout);
  // Ends every Watch stream (after a final NOT_SERVING) so shutdown need not wait.
  void Shutdown();

 private:
  bool Known(const std::string& service) const;

  absl::Mutex mu_;
  bool serving_ ABSL_GUARDED_BY(mu_) = false;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  // Per active Watch stream: the generation it has written.
  std::map<int, uint64_t> delivered_ ABSL_GUARDED_BY(mu_);
  int next_watch_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace termbridge::broker

#endif  // TERMBRIDGE_BROKER_SERVICE_HEALTH_SERVICE_H_
