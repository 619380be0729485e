#!/usr/bin/env bash
# Runs quern's flagship example and shows the scalars it logged.
# Usage: tools/demo.sh BUILD_DIR   (make demo calls it after building)
set -euo pipefail
build=${1:-build}
example=csv_pipeline
logdir=runs/$example

rm -rf "$logdir"
echo "== running $build/examples/$example (logging to $logdir/)"
"$build/examples/$example" --logdir "$logdir"
echo
echo "== the scalars it logged (quern-board inspect $logdir)"
"$build/tools/quern-board" inspect "$logdir"
echo
echo "Look at them in TensorBoard with:  tensorboard --logdir runs"
