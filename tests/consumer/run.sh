#!/usr/bin/env bash
# Builds and runs the README's programs the ways a user's project gets quern.
#   install     (make check) reuses BUILD, compiling only the programs:
#     1. `cmake --install BUILD --prefix P`, then find_package(quern) with
#        CMAKE_PREFIX_PATH=P (tests/consumer/CMakeLists.txt, QUERN_ROUTE=package)
#     2. pkg-config: g++ $(pkg-config --cflags --libs quern) with P's quern.pc
#   subproject  (make test) compiles quern once more, as a sub-project:
#     3. add_subdirectory(quern) in a parent that found Threads, CAF, Protobuf
#        and OpenSSL itself first (QUERN_ROUTE=subdirectory, QUERN_PARENT_FINDS)
#     4. FetchContent from the source tree, no download, configured and
#        generated (every target quern's libraries link resolves in the
#        parent), not built again: in a parent that found nothing, and in one
#        that found only Threads (find_package(Threads REQUIRED) first)
# Each program must print what the README says it prints.
# Usage: tests/consumer/run.sh QUERN_BUILD_DIR WORK_DIR [JOBS] [install|subproject|all]
set -euo pipefail
usage="usage: run.sh QUERN_BUILD_DIR WORK_DIR [JOBS] [install|subproject|all]"
build=$(realpath "${1:?$usage}")
work=${2:?$usage}
jobs=${3:-2}
routes=${4:-all}
root=$(realpath "$(dirname "$0")/../..")
case $routes in
install | subproject | all) ;;
*) echo "$usage" >&2; exit 2 ;;
esac
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

if [ "$routes" != subproject ]; then
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
fi

if [ "$routes" != install ]; then
  echo "== quern as a sub-project (add_subdirectory, the parent found its dependencies)"
  cmake -S "$root/tests/consumer" -B "$work/subdirectory" -DQUERN_ROUTE=subdirectory \
    -DQUERN_PARENT_FINDS=all -DCMAKE_UNITY_BUILD=ON >"$work/subdirectory.log" ||
    { tail -30 "$work/subdirectory.log"; exit 1; }
  cmake --build "$work/subdirectory" -j "$jobs" >>"$work/subdirectory.log" ||
    { tail -30 "$work/subdirectory.log"; exit 1; }
  check_programs "$work/subdirectory" subdirectory

  for finds in none threads; do
    echo "== quern as a sub-project (FetchContent; the parent found: $finds)"
    cmake -S "$root/tests/consumer" -B "$work/fetchcontent-$finds" \
      -DQUERN_ROUTE=fetchcontent -DQUERN_PARENT_FINDS=$finds >"$work/fetchcontent-$finds.log" ||
      { tail -30 "$work/fetchcontent-$finds.log"; exit 1; }
    echo "consumer (fetchcontent, parent found $finds): configured and generated"
  done
fi
echo "consumer ($routes): every route built and ran the README's programs"
