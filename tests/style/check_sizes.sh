#!/usr/bin/env bash
# The size limits of the actor layers, queues/, coordination/ and net/
# (docs/architecture.md): no file over 500 lines,
# no function over 80. Function sizes come from clang-tidy's
# readability-function-size check, which reads each file as the compiler
# does (the build's compile_commands.json), lambdas and all.
#   check_sizes.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
layers=(queues coordination net)
layer_alt=$(IFS='|'; echo "${layers[*]}")
max_file_lines=500
max_function_lines=${QUERN_MAX_FUNCTION_LINES:-80}

if ! command -v clang-tidy >/dev/null 2>&1; then
  echo "check_sizes: clang-tidy is not installed (tools/install-deps.sh installs it)" >&2
  exit 1
fi
if [ ! -f "$build/compile_commands.json" ]; then
  echo "check_sizes: no $build/compile_commands.json (CMAKE_EXPORT_COMPILE_COMMANDS)" >&2
  exit 1
fi

status=0
while IFS= read -r f; do
  n=$(wc -l <"$f")
  if [ "$n" -gt "$max_file_lines" ]; then
    echo "${f#"$src"/}: $n lines (at most $max_file_lines in ${layers[*]})"
    status=1
  fi
done < <(for l in "${layers[@]}"; do find "$src/$l" -name '*.cpp' -o -name '*.hpp'; done | sort)

# What the build compiles of the layers' src/: each file, or in a unity build
# (QUERN_UNITY_BUILD) the batches that include them, whose functions
# clang-tidy reports as those of included files (-header-filter).
units=$(grep -o '"file": *"[^"]*"' "$build/compile_commands.json" | sed 's/^"file": *"//; s/"$//' |
  grep -E "^$src/($layer_alt)/src/.*\.cpp\$|/quern_($layer_alt)\.dir/Unity/unity_[0-9]+_cxx\.cxx\$" | sort -u)
if [ "$(grep -c . <<<"$units")" -lt 2 ]; then
  echo "check_sizes: $build/compile_commands.json compiles no file of ${layers[*]}" >&2
  exit 1
fi
config="{CheckOptions: [{key: readability-function-size.LineThreshold, value: $max_function_lines}]}"
report=$(echo "$units" |
  xargs -P "$(nproc)" -n 1 clang-tidy -p "$build" --quiet \
    -checks='-*,readability-function-size' -config="$config" \
    -header-filter="$src/($layer_alt)/.*" 2>/dev/null |
  grep -E 'readability-function-size|note: [0-9]+ lines including' || true)
if [ -n "$report" ]; then
  echo "functions of ${layers[*]} over $max_function_lines lines:"
  echo "$report" | sed "s|$src/||" | sort -u
  status=1
fi

if [ "$status" -eq 0 ]; then
  echo "check_sizes: every file of ${layers[*]} has at most $max_file_lines lines and every" \
    "function at most $max_function_lines"
fi
exit $status
