#!/usr/bin/env bash
# Builds and runs the README's programs the ways a user's project gets quern:
#   1. `cmake --install BUILD --prefix P`, then find_package(quern) with
#      CMAKE_PREFIX_PATH=P (tests/consumer/CMakeLists.txt, QUERN_ROUTE=package)
#   2. pkg-config: g++ $(pkg-config --cflags --libs quern) with P's quern.pc
#   3. add_subdirectory(quern)                          (QUERN_ROUTE=subdirectory)
#      compiling every file of quern on its own, as a sub-project does
#   4. FetchContent from the source tree, no download   (QUERN_ROUTE=fetchcontent)
#      in a parent that sets CMAKE_UNITY_BUILD (and half the time of 3)
# Each program must print what the README says it prints.
# Usage: tests/consumer/run.sh QUERN_BUILD_DIR WORK_DIR [JOBS]
set -euo pipefail
build=$(realpath "${1:?usage: run.sh QUERN_BUILD_DIR WORK_DIR [JOBS]}")
work=${2:?usage: run.sh QUERN_BUILD_DIR WORK_DIR [JOBS]}
jobs=${3:-2}
root=$(realpath "$(dirname "$0")/../..")
rm -rf "$work"
mkdir -p "$work"
work=$(realpath "$work")

check_programs() { # DIR_WITH_BINARIES ROUTE
  local dir=$1 route=$2 out
  for program in hello_queue shared_handles; do
    [ -x "$dir/$program" ] || continue
    out=$(cd "$work" && timeout 60 "$dir/$program" 2>&1) || {
      echo "consumer ($route): $program failed:"; echo "$out"; exit 1; }
    case $program in
    hello_queue) want="done: FIFOQueue '.*' is closed and has insufficient elements" ;;
    shared_handles) want="4 consumers took every element once: sum 500500" ;;
    esac
    if ! grep -q "$want" <<<"$out"; then
      echo "consumer ($route): $program did not print /$want/:"; echo "$out"; exit 1
    fi
    echo "consumer ($route): $program ok"
  done
}

echo "== install into $work/prefix"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
[ -x "$work/prefix/bin/quern-board" ] || { echo "quern-board was not installed to bin/"; exit 1; }
"$work/prefix/bin/quern-board" --help >/dev/null
[ -x "$work/prefix/bin/quern-node" ] || { echo "quern-node was not installed to bin/"; exit 1; }
"$work/prefix/bin/quern-node" --help >/dev/null

echo "== find_package(quern) from the prefix"
cmake -S "$root/tests/consumer" -B "$work/package" -DQUERN_ROUTE=package \
  -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/package.log"
cmake --build "$work/package" -j "$jobs" >>"$work/package.log" ||
  { tail -30 "$work/package.log"; exit 1; }
check_programs "$work/package" package

echo "== pkg-config quern"
flags=$(PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkg-config --cflags --libs quern)
mkdir -p "$work/pkg-config"
g++ "$root/examples/readme/hello_queue.cpp" -o "$work/pkg-config/hello_queue" $flags
check_programs "$work/pkg-config" pkg-config

for route in subdirectory fetchcontent; do
  echo "== quern as a sub-project ($route)"
  unity=OFF
  [ "$route" = fetchcontent ] && unity=ON
  cmake -S "$root/tests/consumer" -B "$work/$route" -DQUERN_ROUTE=$route \
    -DCMAKE_UNITY_BUILD=$unity >"$work/$route.log" ||
    { tail -30 "$work/$route.log"; exit 1; }
  cmake --build "$work/$route" -j "$jobs" >>"$work/$route.log" ||
    { tail -30 "$work/$route.log"; exit 1; }
  check_programs "$work/$route" $route
done
echo "consumer: every route built and ran the README's programs"
