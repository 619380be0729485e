#!/usr/bin/env bash
# The shipped examples of the project's seed programs are at most 1.2 times as
# long as TensorFlow's programs (issue of the first hour): lines that are not
# blank and not only a comment, leaving out the blocks between
# `// seed-setup-begin` and `// seed-setup-end` (command-line parsing, and
# writing the data files that TensorFlow's program reads as given).
# TensorFlow's programs, counted the same way: seed 000 (five asynchronous
# groups) 42 lines, seed 003 (the reading-data recipe with its CSV pipeline)
# 42 lines.
# Usage: check_seed_lengths.sh REPO_ROOT
set -euo pipefail
root=${1:?usage: check_seed_lengths.sh REPO_ROOT}
cd "$root"
failed=0
check() {
  local file=$1 tf=$2
  local n
  n=$(awk '
    /\/\/ seed-setup-begin/ { skip = 1; next }
    /\/\/ seed-setup-end/ { skip = 0; next }
    skip { next }
    /^[[:space:]]*$/ { next }
    /^[[:space:]]*\/\// { next }
    { n++ }
    END { print n + 0 }' "$file")
  local limit=$((tf * 12 / 10))
  if ((n > limit)); then
    echo "$file: $n lines, more than 1.2 x TensorFlow's $tf ($limit)"
    failed=1
  else
    echo "$file: $n lines (TensorFlow $tf, limit $limit)"
  fi
}
check examples/asynchronous/five_groups.cpp 42
check examples/guide/input_pipeline.cpp 42
exit $failed
