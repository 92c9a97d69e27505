#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz in their own clang tree and runs
# each one for a bounded time on a copy of its seed corpus (the corpus in the
# repository never grows by itself). Fails when any target finds a crash, a
# leak, a timeout (a unit over 60 s) or an out-of-memory; prints executions,
# exec/s and the final coverage (cov: edges, ft: features) of each. Slow
# units are reported from 60 s too: under the sanitizers and a parallel test
# run a policy check that walks a directory tree to its entry bound takes
# 10-40 s of wall time (release: milliseconds, security.bounds), which is
# not a finding.
#
#   tests/fuzz/run.sh                 # 20 s per target (what ctest runs)
#   tests/fuzz/run.sh 600             # 10 minutes per target
#   tests/fuzz/run.sh 600 shell_policy contract
#
# Environment: FUZZ_SECONDS (default 20, or the first argument),
# FUZZ_BUILD_DIR (default build-fuzz), FUZZ_WORK_DIR (where the grown
# corpora, logs and crash files go and stay; default a temporary directory,
# removed when every target passed), FUZZ_JOBS (targets run at once,
# default 1), FUZZ_NICE (default 10), FUZZ_SEED (libFuzzer's -seed; the test
# command fixes it, so that its short run walks the same inputs every time
# and a red CI means a real finding in that walk, not a lucky draw; unset:
# a new seed each run, for long runs).
set -euo pipefail
cd "$(dirname "$0")/../.."

SECONDS_PER_TARGET=${FUZZ_SECONDS:-20}
if [[ $# -gt 0 && $1 =~ ^[0-9]+$ ]]; then
  SECONDS_PER_TARGET=$1
  shift
fi
ALL_TARGETS=(jsonrpc_framing contract shell_policy policy_toml console_messages)
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=("${ALL_TARGETS[@]}")
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
JOBS=${FUZZ_JOBS:-1}
NICE=${FUZZ_NICE:-10}

if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz: clang++ is missing; deploy/setup.sh installs it (clang, libclang-rt-14-dev)" >&2
  exit 1
fi

export CCACHE_BASEDIR=$PWD
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DTERMBRIDGE_FUZZ=ON \
  -DTERMBRIDGE_WERROR=OFF >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" --target $(printf '%s_fuzzer ' "${TARGETS[@]}")

if [[ -n ${FUZZ_WORK_DIR:-} ]]; then
  WORK=$FUZZ_WORK_DIR
  mkdir -p "$WORK"
else
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/termbridge-fuzz.XXXXXX")
  trap '[[ $failed == 0 ]] && rm -rf "$WORK"' EXIT
fi
failed=1
# Sanitizer reports stop the target (the build has -fno-sanitize-recover).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Runs one target; its summary line goes to $WORK/<name>.summary.
run_target() {
  local name=$1 dir="$WORK/$1"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp -r "tests/fuzz/corpus/$name/." "$dir/corpus/"
  local rc=0
  local seed=()
  [[ -n ${FUZZ_SEED:-} ]] && seed=(-seed="$FUZZ_SEED")
  nice -n "$NICE" "$BUILD_DIR/tests/fuzz/${name}_fuzzer" "${seed[@]}" \
    -max_total_time="$SECONDS_PER_TARGET" -timeout=60 -report_slow_units=60 -rss_limit_mb=2560 \
    -print_final_stats=1 -artifact_prefix="$dir/artifacts/" \
    "$dir/corpus" >"$dir/log" 2>&1 || rc=$?
  local done_line execs rate
  done_line=$(grep -E '^#[0-9]+\s+DONE' "$dir/log" | tail -1 || true)
  [[ -n $done_line ]] || done_line=$(grep -E '^#[0-9]+\s' "$dir/log" | tail -1 || true)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log")
  local cov ft
  cov=$(grep -oE 'cov: [0-9]+' <<<"$done_line" | cut -d' ' -f2)
  ft=$(grep -oE 'ft: [0-9]+' <<<"$done_line" | cut -d' ' -f2)
  local result=ok
  if ((rc != 0)) || [[ -n $(ls -A "$dir/artifacts") ]]; then result="FAILED (exit $rc)"; fi
  printf '%-17s %s  execs=%s exec/s=%s cov=%s ft=%s corpus=%s\n' "$name" "$result" \
    "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$(ls "$dir/corpus" | wc -l)" \
    >"$WORK/$name.summary"
}

echo "fuzz: ${#TARGETS[@]} targets, ${SECONDS_PER_TARGET} s each, $JOBS at a time; work dir $WORK"
for name in "${TARGETS[@]}"; do
  [[ -d tests/fuzz/corpus/$name ]] || { echo "fuzz: no target $name" >&2; exit 2; }
  while (($(jobs -rp | wc -l) >= JOBS)); do wait -n || true; done
  run_target "$name" &
done
wait

failed=0
for name in "${TARGETS[@]}"; do
  cat "$WORK/$name.summary"
  if grep -q FAILED "$WORK/$name.summary"; then
    failed=1
    echo "--- $name: last lines of $WORK/$name/log" >&2
    grep -vE '^#[0-9]+\s' "$WORK/$name/log" | tail -40 >&2
    ls "$WORK/$name/artifacts" | sed "s|^|  artifact: $WORK/$name/artifacts/|" >&2
  fi
done
exit $failed
