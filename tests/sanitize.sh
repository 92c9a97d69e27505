#!/usr/bin/env bash
# Builds termbridge with AddressSanitizer and UBSan into build-asan/ and runs
# the unit and end-to-end tests against those binaries. Any undefined
# behaviour stops the process that hit it (halt_on_error), so its test fails.
# The container matrix (e2e.parity) builds its agent inside the image, not
# here, so it is left out. Extra arguments go to ctest (-R, -L, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/setup.sh
TERMBRIDGE_BUILD_DIR=build-asan deploy/build.sh -DTERMBRIDGE_SANITIZE=address
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
ctest --test-dir build-asan --output-on-failure -j "$(( $(nproc) * 2 ))" -E '^e2e\.parity$' "$@"
