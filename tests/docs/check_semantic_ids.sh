#!/usr/bin/env bash
# Every statement id cited in the repository (tests, comments, docs) must be
# defined in docs/semantics.md by a line starting `- **<id>**`.
#
# Usage: check_semantic_ids.sh REPO_ROOT
# Prints each used id that is not defined, with the file:line of its first
# use, and exits 1; otherwise prints a one-line summary and exits 0.
set -euo pipefail
export LC_ALL=C

root=${1:?usage: check_semantic_ids.sh REPO_ROOT}
cd "$root"

defs=docs/semantics.md
# The prefixes docs/semantics.md uses, no others: a looser pattern would take
# UTF-8, SHA-256 or CRC-32C for ids.
prefixes='C|CC|CK|CO|CSV|IN|NET|Q|QR|RD|RS|SW|TB|TL'
# An id is a whole word; one lowercase letter may follow for a part of a
# statement (QR-8a is QR-8).
use_re="\\b(${prefixes})-[0-9]+[a-z]?\\b"

if [[ ! -f $defs ]]; then
  echo "$defs is missing" >&2
  exit 1
fi

dirs=()
for d in messages runtime queues coordination net actors logging input examples tests \
    tools bench docs; do
  [[ -d $d ]] && dirs+=("$d")
done
files=()
[[ -f README.md ]] && files+=(README.md)

# file:line:id for every use, in file order, then line order.
uses=$(grep -rnoE "$use_re" \
         --include='*.cpp' --include='*.hpp' --include='*.h' --include='*.md' \
         --include='*.txt' --include='*.cmake' --include='*.proto' --include='*.py' \
         "${dirs[@]}" "${files[@]}" 2>/dev/null |
       grep -v "^${defs}:" |
       sed -E 's/[a-z]$//' |
       sort -t: -k1,1 -k2,2n || true)

defined=$(grep -oE "^- \\*\\*(${prefixes})-[0-9]+\\*\\*" "$defs" |
          sed -E 's/^- \*\*//; s/\*\*$//' | sort -u)

# First use of each id.
first=$(awk -F: '!seen[$3]++ { print $3 " " $1 ":" $2 }' <<<"$uses")
used_count=$(grep -c . <<<"$first" || true)

missing=0
while read -r id where; do
  [[ -z $id ]] && continue
  if ! grep -qxF "$id" <<<"$defined"; then
    echo "undefined semantic id $id, first used at $where"
    missing=$((missing + 1))
  fi
done <<<"$first"

if ((missing > 0)); then
  echo "semantic ids: $used_count used, $missing not defined in $defs"
  exit 1
fi
echo "semantic ids: $used_count used, all defined in $defs"
