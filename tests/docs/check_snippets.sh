#!/usr/bin/env bash
# Every code block of README.md and docs/*.md that follows a marker line
#   <!-- snippet: examples/readme/hello_queue.cpp -->
# must be that file as it is, from its first #include on (the file's header
# comment is left out of the docs); after
#   <!-- snippet: tests/docs/fragments.cpp#NAME -->
# it must be that file's fragment NAME (between `// docs-snippet-begin: NAME`
# and `// docs-snippet-end`), which the build compiles in its context. A
# ```cpp block without a marker fails: the docs show no code that is not built. The tests build and run those files, so
# the docs show code that compiles and works. tests/docs/update_snippets.py
# rewrites the blocks from the files.
# Usage: check_snippets.sh REPO_ROOT
set -euo pipefail
root=${1:?usage: check_snippets.sh REPO_ROOT}
cd "$root"
checked=0
failed=0
for doc in README.md docs/*.md; do
  [ -f "$doc" ] || continue
  while IFS=: read -r line file; do
    name=
    case $file in *#*)
      name=${file#*#}
      file=${file%%#*}
      ;;
    esac
    if [ ! -f "$file" ]; then
      echo "$doc:$line: snippet names $file, which does not exist"
      failed=$((failed + 1))
      continue
    fi
    # The fenced block right after the marker line.
    block=$(awk -v start="$line" 'NR > start && /^```/ { if (in_block) exit; in_block = 1; next }
                                   in_block { print }' "$doc")
    if [ -n "$name" ]; then
      # FILE#NAME: the lines between `// docs-snippet-begin: NAME` and
      # `// docs-snippet-end` in FILE (tests/docs/fragments.cpp).
      want=$(awk -v name="$name" '$0 == "// docs-snippet-begin: " name { on = 1; found = 1; next }
                                  on && /^\/\/ docs-snippet-end/ { exit }
                                  on { print }
                                  END { if (!found) exit 1 }' "$file") || {
        echo "$doc:$line: $file has no fragment named $name"
        failed=$((failed + 1))
        continue
      }
    else
      # The seed programs' length markers (check_seed_lengths.sh) are left out.
      want=$(awk '/^#include/ { on = 1 } /^[[:space:]]*\/\/ seed-setup-(begin|end)$/ { next }
                  on { print }' "$file")
    fi
    if [ "$block" != "$want" ]; then
      echo "$doc:$line: the block differs from $file (from its first #include):"
      diff <(printf '%s\n' "$want") <(printf '%s\n' "$block") | head -20 || true
      failed=$((failed + 1))
    fi
    checked=$((checked + 1))
  done < <(grep -n '^<!-- snippet: .* -->$' "$doc" | sed -E 's/^([0-9]+):<!-- snippet: (.*) -->$/\1:\2/')
done
# A C++ block with no marker line before it is code nobody compiles.
for doc in README.md docs/*.md; do
  [ -f "$doc" ] || continue
  while IFS=: read -r line _; do
    echo "$doc:$line: a \`\`\`cpp block without a snippet marker (put the code in an"
    echo "  example or in tests/docs/fragments.cpp and mark it)"
    failed=$((failed + 1))
  done < <(awk 'prev !~ /^<!-- snippet: .* -->$/ && /^```cpp/ { print NR ":" } { prev = $0 }' "$doc")
done
if [ "$failed" -gt 0 ]; then
  echo "snippets: $failed of $checked differ from their files"
  exit 1
fi
if [ "$checked" -eq 0 ]; then
  echo "snippets: no snippet markers found"
  exit 1
fi
echo "snippets: $checked checked, each the file it names"
