#!/usr/bin/env bash
# Writes the checked-in seed corpora of tests/fuzz/corpus/, deterministically.
# The targets whose seeds are structured (events, framed records, serialised
# messages) write their own when QUERN_FUZZ_SEEDS_OUT is set; the others'
# seeds are spelled out here, byte by byte.
#
# Usage: tests/fuzz/make_seeds.sh [FUZZ_BUILD_DIR]   (default build-fuzz)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build-fuzz}
corpus=$root/tests/fuzz/corpus
export ASAN_OPTIONS=detect_leaks=0

for t in record_reader event_parser message_deserialize; do
  rm -rf "${corpus:?}/fuzz_$t"
  mkdir -p "$corpus/fuzz_$t"
  # A target built before it could write seeds would fuzz instead: bounded.
  QUERN_FUZZ_SEEDS_OUT=$corpus/fuzz_$t timeout 60 "$build/tests/fuzz/fuzz_$t" \
    -runs=0 >/dev/null
done

# Inputs that found bugs, kept as seeds so every run replays them:
# a tensor claiming 2^32-1 bytes in a 60-byte message (CAF 0.17 resized its
# byte vector before checking the length: a 4 GiB allocation), and an element
# whose tensor shape's element count overflows int64 (undefined behaviour in
# tensor_shape::num_elements). docs/fuzzing.md, Findings.
regress=$corpus/fuzz_message_deserialize
echo 'AQcBAgAAAAAAAAAC////////////////////////////////////////////AAAAAAAQAAEAAgF4Anl6' |
  base64 -d >"$regress/regress_tensor_4gib_claim"
echo 'AgIDAQIAAAIAAAAAAgAAAB4eHh4eHh4eHh4eHh4eHh4eHh4KCgoKCgoKCgoKCgoKCgoKCgAAAAADGAEAAAACAAAAAwAAAAQAAAAFAAAABgAAAAAHAQEAAAAAAAAAAgACAWECYmM=' |
  base64 -d >"$regress/regress_shape_overflow"

# seed NAME DIR BYTES...: BYTES as printf escapes.
seed() {
  local dir=$corpus/$1 name=$2
  shift 2
  mkdir -p "$dir"
  printf "$@" >"$dir/$name"
}

# decode_csv: the first byte's value modulo 3 is the form (fuzz_decode_csv.cpp).
rm -rf "$corpus/fuzz_decode_csv"
# form 0: 3 columns (int64 with default, string required, float), ',' with
# quotes, na "NA", no select_cols, two records.
seed fuzz_decode_csv anything_ints \
  '\x00\x03\x01\x05\x14\x02\x09\x02\x2c\x0c\x02NA\x00' && \
  printf '1,"a,b",2.5\xff-3,x,NA' >>"$corpus/fuzz_decode_csv/anything_ints"
seed fuzz_decode_csv anything_select '\x00\x02\x04\x01\x00\x03\x2c\x00\x01\x01\x00'
printf 'a,b,c,d' >>"$corpus/fuzz_decode_csv/anything_select"
seed fuzz_decode_csv anything_bad_delim '\x00\x01\x04\x01\x09\x00\x00\x00a;b'
# form 1: quoted fields joined with ';', every field selected.
seed fuzz_decode_csv quoted '\x01;\x00a"b\xff\xffc;d\xff"'
seed fuzz_decode_csv quoted_select '\x01,\x05one\xfftwo\xffthree'
# form 2: unquoted fields against the reference parser.
seed fuzz_decode_csv reference_numbers '\x02,\x00\x04\x00\x07\x01\x02\x02\x05\x03\x09'
printf ' 12,-7, 1e3 ,nan' >>"$corpus/fuzz_decode_csv/reference_numbers"
seed fuzz_decode_csv reference_na '\x02|\x02\x02\x08\x04\x0c\x00NA|'
seed fuzz_decode_csv reference_overflow '\x02,\x00\x02\x00\x01\x01\x02'
printf '2147483648,-9223372036854775808' >>"$corpus/fuzz_decode_csv/reference_overflow"

# queue_messages: kind, capacity, components, shape flag, per component
# dtype/rank/dims (shuffle: min_after_dequeue, seed2), then operations
# (fuzz_queue_messages.cpp, one_step: 0-1 enqueue, 2 bad enqueue,
# 3 enqueue_many, 4 dequeue, 5 dequeue_many, 6 dequeue_up_to, 7 pull,
# 8 pull_batch, 9 give_back, 10 push, 11 unpull, 12 close).
rm -rf "$corpus/fuzz_queue_messages"
ops='\x00\x00\x03\x03\x00\x00\x00\x04\x05\x03\x06\x04\x07\x02\x08\x02\x00\x00\x09\x03\x00\x00\x01\x0a\x02\x00\x0b\x03\x02\x00\x00\x0c\x00\x04\x06\x05\x07\x01\x04'
seed fuzz_queue_messages fifo_int64 "\x00\x04\x00\x01\x05\x00$ops"
seed fuzz_queue_messages fifo_two_components "\x00\x09\x01\x01\x04\x01\x01\x00\x02\x02\x02$ops"
seed fuzz_queue_messages shuffle "\x01\x05\x00\x01\x02\x01\x01\x01\x01$ops"
seed fuzz_queue_messages padding "\x02\x06\x00\x00\x03\x02\x00\x01$ops"
seed fuzz_queue_messages priority "\x03\x05\x00\x01\x05\x00$ops"
seed fuzz_queue_messages no_shapes "\x00\x03\x00\x00\x01\x02\x01\x01$ops"

du -sh "$corpus"/*
