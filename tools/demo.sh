#!/usr/bin/env bash
# Runs quern's flagship example, shows the scalars it logged, and writes their
# charts as one HTML page.
# Usage: tools/demo.sh BUILD_DIR   (make demo calls it after building)
set -euo pipefail
build=${1:-build}
example=csv_pipeline
logdir=runs/$example
board="$build/tools/quern-board"

rm -rf "$logdir"
echo "== running $build/examples/$example (logging to $logdir/)"
"$build/examples/$example" --logdir "$logdir"
echo
echo "== the scalars it logged (quern-board inspect $logdir)"
"$board" inspect "$logdir"
echo
echo "== their charts (quern-board html $logdir)"
"$board" html "$logdir" -o "$logdir/index.html"
echo
echo "Open the report in a browser (no server, no network needed):"
echo "  file://$(cd "$logdir" && pwd)/index.html"
