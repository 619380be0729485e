#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time over a temporary copy of its
# checked-in corpus (new inputs go to the copy, never into the repository).
# Prints the run's final stats line; on failure, the end of the log and where
# the crashing input was written.
#
# Usage: run_fuzzer.sh FUZZER CORPUS_DIR SECONDS [ARTIFACT_DIR]
set -euo pipefail

fuzzer=${1:?usage: run_fuzzer.sh FUZZER CORPUS_DIR SECONDS [ARTIFACT_DIR]}
corpus=${2:?corpus directory}
seconds=${3:?seconds}
artifacts=${4:-$PWD/fuzz-artifacts}
name=$(basename "$fuzzer")

mkdir -p "$artifacts"
work=$(mktemp -d "${TMPDIR:-/tmp}/quern-$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -R "$corpus"/. "$work"/
log=$artifacts/$name.log

# halt_on_error: every UBSan report is fatal, apart from the CAF header
# findings listed in tests/ubsan.supp (the same list the ASan build uses).
here=$(cd "$(dirname "$0")" && pwd)
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:suppressions=$here/../ubsan.supp}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}

# libFuzzer's leak check after an input that allocated more than it freed
# runs LeakSanitizer; the queue target's actors free their memory on CAF's
# threads after the input returned, so that check fires nearly every time
# (a third of the speed) and finds nothing: its leaks are checked at exit.
extra=()
if [[ $name == fuzz_queue_messages ]]; then
  extra=(-detect_leaks=0)
fi

status=0
"$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
  -print_final_stats=1 -artifact_prefix="$artifacts/$name-" "${extra[@]}" "$work" \
  >"$log" 2>&1 || status=$?

# The last status line (`#N DONE cov: .. ft: .. corp: ..`) and libFuzzer's
# `Done N runs in T second(s)`.
stats=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
done_line=$(grep -E '^Done [0-9]+ runs' "$log" | tail -n 1 || true)
if [[ $status -ne 0 ]]; then
  tail -n 60 "$log"
  echo "$name: FAILED (exit $status) after: ${stats:-no stats}; log $log"
  exit "$status"
fi
echo "$name: $stats | $done_line"
