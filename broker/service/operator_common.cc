// What the parts of OperatorService share (operator_common.h).
#include "broker/service/operator_common.h"

#include <cstdlib>

namespace termbridge::broker {

std::string OperatorName(const std::string& given) {
  if (!given.empty()) return given;
  const char* user = std::getenv("USER");
  return user != nullptr && *user != '\0' ? user : "operator";
}

std::string SurfaceName(const std::string& given) { return given.empty() ? "cli" : given; }

grpc::Status RefusedStatus(const absl::Status& refused) {
  return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, std::string(refused.message()));
}

}  // namespace termbridge::broker
