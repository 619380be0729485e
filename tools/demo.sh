#!/usr/bin/env bash
# Runs quern's flagship example, shows the scalars it logged, writes their
# charts as one HTML page, and says where to go next.
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
# A few of its tags; the pipeline's own figures (runner/, worker/, queue/)
# are on the page.
tags=(--tag loss --tag consumer/shuffle_batch_join/wait_fraction
  --tag input_producer/fraction_of_32_full --tag pipeline/verdict)
echo "== some of the scalars it logged ($board inspect $logdir ${tags[*]}; every tag without --tag)"
"$board" inspect "$logdir" "${tags[@]}"
echo
echo "== their charts ($board html $logdir)"
"$board" html "$logdir" -o "$logdir/index.html"
echo
echo "Open the report in a browser (no server, no network needed):"
echo "  file://$(cd "$logdir" && pwd)/index.html"
echo
echo "Next:"
next() { printf '  %-40s # %s\n' "$1" "$2"; }
next "$board serve runs" "live charts of every run under runs/, on 127.0.0.1:6006"
next "less docs/guide.md" "the user guide: queues, runners, reading files"
next "make examples" "the README's other examples, in $build/examples/"
next "make install PREFIX=\$HOME/.local" "the libraries, quern-board and quern-node, for your projects"
