// grpc.health.v1.Health for the broker: SERVING while up, NOT_SERVING while
// draining, NOT_FOUND for services the broker doesn't have.
#include "broker/service/health_service.h"

#include "absl/time/time.h"

namespace termbridge::broker {
namespace {

using grpc::health::v1::HealthCheckResponse;

constexpr char kBrokerService[] = "termbridge.v1.TerminalBroker";

}  // namespace

bool HealthService::Known(const std::string& service) const {
  return service.empty() || service == kBrokerService;
}

grpc::Status HealthService::Check(grpc::ServerContext* context,
                                  const grpc::health::v1::HealthCheckRequest* request,
                                  HealthCheckResponse* response) {
  if (!Known(request->service())) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown service: " + request->service());
  }
  absl::MutexLock lock(&mu_);
  response->set_status(serving_ ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING);
  return grpc::Status::OK;
}

grpc::Status HealthService::Watch(grpc::ServerContext* context,
                                  const grpc::health::v1::HealthCheckRequest* request,
                                  grpc::ServerWriter<HealthCheckResponse>* writer) {
  int id;
  {
    absl::MutexLock lock(&mu_);
    id = next_watch_++;
    delivered_[id] = ~uint64_t{0};  // nothing written yet
  }
  auto done = [&](grpc::Status status) {
    absl::MutexLock lock(&mu_);
    delivered_.erase(id);
    return status;
  };
  for (;;) {
    HealthCheckResponse response;
    bool stop;
    uint64_t generation;
    {
      absl::MutexLock lock(&mu_);
      // Wake on a change or shutdown; look at cancellation once a second.
      auto changed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return delivered_[id] != generation_ || shutdown_;
      };
      mu_.AwaitWithTimeout(absl::Condition(&changed), absl::Seconds(1));
      if (!changed()) {
        if (context->IsCancelled()) return done(grpc::Status::CANCELLED);
        continue;
      }
      generation = generation_;
      stop = shutdown_;
      if (!Known(request->service())) {
        response.set_status(HealthCheckResponse::SERVICE_UNKNOWN);
      } else {
        response.set_status(serving_ && !shutdown_ ? HealthCheckResponse::SERVING
                                                   : HealthCheckResponse::NOT_SERVING);
      }
    }
    if (!writer->Write(response)) return done(grpc::Status::CANCELLED);
    {
      absl::MutexLock lock(&mu_);
      delivered_[id] = generation;
    }
    if (stop)
      return done(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the broker is shutting down"));
  }
}

void HealthService::WaitDelivered(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto all = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const auto& [id, seen] : delivered_) {
      if (seen != generation_) return false;
    }
    return true;
  };
  mu_.AwaitWithTimeout(absl::Condition(&all), timeout);
}

void HealthService::SetServing(bool serving) {
  absl::MutexLock lock(&mu_);
  if (serving_ != serving) ++generation_;
  serving_ = serving;
}

void HealthService::Shutdown() {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
  ++generation_;
}

}  // namespace termbridge::broker
