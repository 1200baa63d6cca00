#!/usr/bin/env bash
# Runs the small GPU tests of every crate under compute-sanitizer's memcheck, racecheck,
# synccheck and initcheck, on a machine with an NVIDIA GPU and compute-sanitizer on the
# PATH (it ships with the CUDA toolkit).
#
#   scripts/sanitize.sh [BIN_DIR]          # test binaries from `cargo test --release --no-run`
#   TOOLS="memcheck racecheck" scripts/sanitize.sh target/release/deps
#   SANITIZE_LIST=my.list scripts/sanitize.sh   # another list of tests
#
# BIN_DIR defaults to target/release/deps. The tests run are listed in
# scripts/sanitize.list (one line per test: binary name prefix, then a test-name filter);
# they are the small cases, since a sanitized kernel runs tens to hundreds of times slower.
# Prints one summary line per tool and test, then a line per tool with the totals, and
# exits 1 when any tool found an error or a test failed. Logs go to $OUT (or
# ./sanitize-out).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bins=${1:-target/release/deps}
tools=${TOOLS:-memcheck racecheck synccheck initcheck}
out=${OUT:-./sanitize-out}
per_test=${SANITIZE_TIMEOUT:-300}
mkdir -p "$out"
command -v compute-sanitizer >/dev/null || { echo "sanitize: compute-sanitizer is not on the PATH" >&2; exit 2; }
export GPUDS_REQUIRE_GPU=1
# Kernels compile once (NVRTC), then load from the disk cache for every tool.
export GPUDS_CACHE_DIR=${GPUDS_CACHE_DIR:-${TMPDIR:-/tmp}/gpuds-sanitize-cache}

# The binary named $1-HASH (cargo appends a hash) that holds test $2: several crates may
# have a test file of the same name.
binary() {
  local b
  for b in "$bins/$1"-*; do
    [ -x "$b" ] && [ ! -d "$b" ] || continue
    if "$b" --list --exact "$2" 2>/dev/null | grep -q ': test$'; then
      echo "$b"; return
    fi
  done
}

status=0
for tool in $tools; do
  clean=0 dirty=0 failed=0 missing=0
  while read -r prefix filter; do
    case "$prefix" in ''|'#'*) continue;; esac
    bin=$(binary "$prefix" "$filter")
    if [ -z "$bin" ]; then
      echo "$tool $prefix::$filter: no binary"; missing=$((missing + 1)); continue
    fi
    log="$out/$tool.$prefix.$filter.log"
    timeout "$per_test" compute-sanitizer --tool "$tool" --error-exitcode 99 \
      "$bin" --exact "$filter" --test-threads=1 > "$log" 2>&1
    rc=$?
    summary=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)
    result=$(grep -E '^test result:' "$log" | tail -1)
    echo "$tool $prefix::$filter: rc=$rc ${summary:-no summary} | ${result:-no test result}"
    if [ $rc -eq 0 ] && echo "$result" | grep -q ' 1 passed'; then
      clean=$((clean + 1))
    elif [ $rc -eq 99 ]; then
      dirty=$((dirty + 1)); status=1
    else
      failed=$((failed + 1)); status=1
    fi
  done < "${SANITIZE_LIST:-$here/sanitize.list}"
  echo "sanitize $tool: $clean clean, $dirty with errors, $failed failed or timed out, $missing missing"
done
exit $status
