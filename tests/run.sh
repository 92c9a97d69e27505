#!/usr/bin/env bash
# Runs every termbridge test: installs what is missing, builds once, then runs
# the unit, integration and end-to-end tests through ctest, in parallel.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/setup.sh
deploy/build.sh
BUILD_DIR=${TERMBRIDGE_BUILD_DIR:-build}
# No test is re-run: a test that fails once fails the run, so a flake is found and fixed.
ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(( $(nproc) * 2 ))" "$@"
