#!/usr/bin/env bash
# Builds the unit tests that exercise concurrency (tests/tsan/CMakeLists.txt)
# in a clang tree of their own with -fsanitize=thread and runs them. Fails on
# any ThreadSanitizer report (halt_on_error) as on any failed test.
#
# abseil is built in that tree from Debian's source of the installed libabsl
# (same version, same Debian patches): absl::Mutex locks with its own atomics
# and futex calls, so TSan sees its synchronization only when abseil itself is
# instrumented. `apt-get source` fetches that source once into the tree with a
# private apt state of deb-src entries for where libabsl-dev came from; the
# system's apt configuration is not touched.
#
#   tests/tsan/run.sh                      # build (incrementally) and run all
#   tests/tsan/run.sh tb_core_test         # only the named test binaries
#
# Environment: TSAN_BUILD_DIR (default build-tsan), TSAN_JOBS (binaries run
# at once, default 2), TSAN_NICE (default 10), TSAN_OPTIONS (added to ours).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BUILD_DIR=$(realpath -m "${TSAN_BUILD_DIR:-build-tsan}")
JOBS=${TSAN_JOBS:-2}
NICE=${TSAN_NICE:-10}

for tool in clang++ apt-get dpkg-source dpkg-query; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "tsan: $tool is missing; deploy/setup.sh installs it (clang, libclang-rt-14-dev, dpkg-dev)" >&2
    exit 1
  }
done

# --- abseil's source, the version of the installed libabsl-dev -------------
absl_package=$(dpkg-query -W -f='${source:Package}' libabsl-dev)
absl_version=$(dpkg-query -W -f='${source:Version}' libabsl-dev)
ABSL_DIR=$BUILD_DIR/abseil-source/$absl_version
if [[ ! -f $ABSL_DIR/.unpacked ]]; then
  echo "tsan: fetching $absl_package $absl_version (Debian source) into $ABSL_DIR" >&2
  apt_dir=$BUILD_DIR/abseil-source/apt
  rm -rf "$apt_dir" "$ABSL_DIR"
  mkdir -p "$apt_dir/sources.list.d" "$apt_dir/state/lists/partial" \
    "$apt_dir/cache/archives/partial" "$ABSL_DIR"
  # deb-src lines for the archives the installed version came from, as
  # `apt-cache policy` lists them under the installed (***) version.
  apt-cache policy libabsl-dev | awk '
    /^ \*\*\* / { mine = 1; next }
    /^     [^ ]/ { mine = 0 }
    mine && $2 ~ /^[a-z+]+:\/\// { split($3, sc, "/"); print "deb-src " $2 " " sc[1] " " sc[2] }' | sort -u >"$apt_dir/sources.list"
  if [[ ! -s $apt_dir/sources.list ]]; then
    echo "tsan: apt-cache policy names no archive for the installed libabsl-dev $absl_version" >&2
    exit 1
  fi
  apt_opts=(-q -o "Dir::Etc::SourceList=$apt_dir/sources.list"
    -o "Dir::Etc::SourceParts=$apt_dir/sources.list.d" -o "Dir::State=$apt_dir/state"
    -o "Dir::State::status=/var/lib/dpkg/status" -o "Dir::Cache=$apt_dir/cache"
    -o Debug::NoLocking=1 -o APT::Sandbox::User="$(id -un)")
  apt-get "${apt_opts[@]}" update >"$apt_dir/update.log" 2>&1 ||
    { cat "$apt_dir/update.log" >&2; exit 1; }
  (cd "$ABSL_DIR/.." && apt-get "${apt_opts[@]}" source "$absl_package=$absl_version" \
    >"$apt_dir/source.log" 2>&1) || { cat "$apt_dir/source.log" >&2; exit 1; }
  upstream=${absl_version#*:}
  upstream=${upstream%-*}
  rmdir "$ABSL_DIR"
  mv "$BUILD_DIR/abseil-source/$absl_package-$upstream" "$ABSL_DIR"
  rm -rf "$apt_dir" "$BUILD_DIR/abseil-source/${absl_package}_"*
  touch "$ABSL_DIR/.unpacked"
fi

# --- the instrumented tree --------------------------------------------------
export CCACHE_BASEDIR=$ROOT
# A fresh clone elsewhere (CI) still hits the cache: the working directory is
# not hashed (it only names where the line tables say the sources were).
export CCACHE_NOHASHDIR=1
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DTERMBRIDGE_TSAN=ON \
  -DTERMBRIDGE_WERROR=OFF -DTERMBRIDGE_ABSL_SOURCE="$ABSL_DIR" >/dev/null
nice -n "$NICE" cmake --build "$BUILD_DIR" -j "$(nproc)" --target tsan_tests

# --- the runs ---------------------------------------------------------------
# halt_on_error: the first report fails its binary. The suppressions name
# third-party internals only (each one says why).
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 history_size=4 \
suppressions=$ROOT/tests/tsan/suppressions.txt ${TSAN_OPTIONS:-}"
# A kernel with more mmap randomization than this TSan runtime knows (vm.mmap_rnd_bits
# above 28) makes it die at start-up with "unexpected memory mapping"; without
# ASLR it runs.
no_aslr=()
if setarch "$(uname -m)" -R true 2>/dev/null; then no_aslr=(setarch "$(uname -m)" -R); fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/termbridge-tsan.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
declare -a names
while IFS=$'\t' read -r binary filter; do
  name=$(basename "$binary")
  if (($#)) && [[ " $* " != *" $name "* ]]; then continue; fi
  while (($(jobs -rp | wc -l) >= JOBS)); do wait -n || true; done
  names+=("$name")
  (
    rc=0
    TMPDIR=$WORK nice -n "$NICE" "${no_aslr[@]}" "$binary" ${filter:+--gtest_filter="-$filter"} \
      </dev/null >"$WORK/$name.log" 2>&1 || rc=$?
    echo "$rc" >"$WORK/$name.rc"
  ) &
done <"$BUILD_DIR/tsan_tests.txt"
wait
((${#names[@]})) || { echo "tsan: no test binary named $*" >&2; exit 2; }

passed=0 failed=0 bad=0
for name in "${names[@]}"; do
  rc=$(cat "$WORK/$name.rc")
  p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\?\.$/\1/p' "$WORK/$name.log")
  f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) tests\?, listed below:$/\1/p' "$WORK/$name.log")
  passed=$((passed + ${p:-0}))
  failed=$((failed + ${f:-0}))
  if [[ $rc != 0 ]] || grep -q 'WARNING: ThreadSanitizer' "$WORK/$name.log"; then
    bad=1
    echo "tsan: $name FAILED (exit $rc)" >&2
    if grep -q 'ThreadSanitizer' "$WORK/$name.log"; then
      sed -n '/^==================$/,/^==================$/p' "$WORK/$name.log" >&2
      grep -E '^\[ RUN      \]' "$WORK/$name.log" | tail -1 >&2
    else
      tail -60 "$WORK/$name.log" >&2
    fi
  else
    echo "tsan: $name ok (${p:-0} tests)"
  fi
done
if ((bad)) && ((failed == 0)); then failed=1; fi
echo "tsan: $passed passed, $failed failed"
exit $bad
