#!/usr/bin/env bash
# Configures (once) and builds termbridge incrementally into build/.
# Extra arguments go to the first CMake configure, for example
# -DTERMBRIDGE_SANITIZE=address.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${TERMBRIDGE_BUILD_DIR:-build}
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja "$@"
fi
cmake --build "$BUILD_DIR" -j "$(nproc)"
