#!/usr/bin/env bash
# Installs the Debian packages quern builds with, and only those that are missing.
# Nothing is fetched when everything is already present.
#   tools/install-deps.sh          what the library, examples and tests need
#   tools/install-deps.sh --fuzz   also clang and libclang-rt-14-dev (libFuzzer's
#                                  runtime) for the fuzz build (docs/fuzzing.md)
#   tools/install-deps.sh --peers  also python3-numpy for make bench-peers
#                                  (PyTorch, python3-torch, is optional: install it
#                                  yourself to include its DataLoader)
set -euo pipefail

# libjs-dygraphs: the charts quern-board embeds in its pages;
# libjs-marked and node-dompurify: the markdown of text summaries on those pages, made safe;
# node-dagre-layout: the layout of the pipeline view on those pages (dagre);
# chromium-headless-shell and nodejs: the browser tests of those pages;
# pkg-config: the test that builds a program against the installed quern.pc;
# libconcurrentqueue-dev: moodycamel's queue, the peer in bench_queue_throughput;
# libssl-dev: quern's TLS checks its files with OpenSSL before CAF uses them;
# openssl: the command the distributed tests make their CA and certificates with;
# clang-tidy: the test of the sizes of the actor layers' functions (tests/style/check_sizes.sh);
# zlib1g-dev: the readers' and tf_record_writer's GZIP and ZLIB files (quern::input links it);
# python3: the independent writer of the compressed files tests/input reads.
packages=(g++ make cmake libcaf-dev catch2 libprotobuf-dev protobuf-compiler
          libboost-program-options-dev libjs-dygraphs libjs-marked node-dompurify
          node-dagre-layout chromium-headless-shell nodejs pkg-config
          libconcurrentqueue-dev clang-tidy libssl-dev openssl zlib1g-dev python3)
case "${1:-}" in
--fuzz) packages+=(clang libclang-rt-14-dev) ;;
--peers) packages+=(python3-numpy) ;;
"") ;;
*)
  echo "tools/install-deps.sh: unknown option '$1' (--fuzz or --peers)" >&2
  exit 2
  ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "quern: installing missing Debian packages: ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo_cmd=(sudo)
  else
    echo "quern: need root or sudo to install: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
