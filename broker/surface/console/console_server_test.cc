// Placeholder replaced below.
#include "broker/surface/console/console_server.h"

#include "gtest/gtest.h"

namespace termbridge::console {
namespace {

TEST(ConsoleServer, RefusesToStartWithoutAToken) {
  ConsoleOptions options;
  options.listen = "127.0.0.1:0";
  options.operator_socket = "/tmp/none.sock";
  options.assets_dir = TB_CONSOLE_ASSETS_DIR;
  EXPECT_EQ(ConsoleServer::Start(options).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace termbridge::console
