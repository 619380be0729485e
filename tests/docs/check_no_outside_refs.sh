#!/usr/bin/env bash
# The repository must not point at documents outside itself: no file of the
# source folders, the docs or the README may name the external reference
# notes or a design.md that the repository does not contain. Statements of
# TensorFlow's behaviour are cited by id from docs/semantics.md instead.
#
# Usage: check_no_outside_refs.sh REPO_ROOT
# Prints each offending file:line and exits 1; otherwise exits 0.
set -euo pipefail
export LC_ALL=C

root=${1:?usage: check_no_outside_refs.sh REPO_ROOT}
cd "$root"

paths=()
for d in messages runtime queues logging coordination input net examples tests tools bench docs cmake; do
  [[ -d $d ]] && paths+=("$d")
done
for f in README.md CMakeLists.txt Makefile; do
  [[ -f $f ]] && paths+=("$f")
done

# This check and its sibling spell the patterns out; they are not references.
exclude=(--exclude=check_no_outside_refs.sh --exclude=check_semantic_ids.sh)

# Names of documents that live outside the repository.
outside_re='tf-semantics|\.\./shared\b|\bshared/(reference|research|seeds)\b|\b[Dd]esign rule [0-9]'

hits=$(grep -rnIE "${exclude[@]}" "$outside_re" "${paths[@]}" 2>/dev/null || true)

# design.md is fine only as a path to a file that exists in the repository
# (relative to the root or to the citing file's folder).
while IFS= read -r line; do
  [[ -z $line ]] && continue
  file=${line%%:*}
  rest=${line#*:}
  lineno=${rest%%:*}
  text=${rest#*:}
  bad=0
  while read -r ref; do
    [[ -z $ref ]] && continue
    if [[ ! -f $ref && ! -f $(dirname "$file")/$ref ]]; then
      bad=1
    fi
  done < <(grep -oE '[A-Za-z0-9_./-]*design\.md' <<<"$text")
  if ((bad)); then
    hits+=$'\n'"$file:$lineno:$text"
  fi
done < <(grep -rnIE "${exclude[@]}" 'design\.md' "${paths[@]}" 2>/dev/null || true)

hits=$(grep -v '^$' <<<"$hits" | sort -t: -k1,1 -k2,2n -u || true)

if [[ -n $hits ]]; then
  while IFS= read -r h; do
    file=${h%%:*}
    rest=${h#*:}
    lineno=${rest%%:*}
    text=${rest#*:}
    text=$(sed -E 's/^[[:space:]]+//' <<<"$text")
    echo "$file:$lineno: $text"
  done <<<"$hits"
  n=$(grep -c . <<<"$hits")
  echo "outside references: $n lines point outside the repository"
  exit 1
fi
echo "outside references: none"
