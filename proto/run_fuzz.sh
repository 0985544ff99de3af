#!/usr/bin/env bash
# Build the wire-protocol fuzz targets (clang + libFuzzer + ASan/UBSan) and run
# each for a bounded time. Exits non-zero if any target crashes, leaks, times
# out or fails to build.
#
#   proto/run_fuzz.sh                # every target, 20 s each
#   proto/run_fuzz.sh 60             # 60 s each
#   proto/run_fuzz.sh 5 requests hdr # only these targets
#
# Environment: BUILD_DIR (default <repo>/build-proto/fuzz), CC (default clang).
# Needs libFuzzer: on Debian 12 `apt-get install clang libclang-rt-14-dev`.
# The growing corpus is kept in $BUILD_DIR/corpus/<target>; crash inputs land
# in $BUILD_DIR/artifacts/ (reproduce with: $BUILD_DIR/fuzz_<target> <file>).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
secs=${1:-${FUZZ_SECONDS:-20}}
shift || true
BUILD_DIR=${BUILD_DIR:-$repo/build-proto/fuzz}
CC=${CC:-clang}
all_targets=(hdr hello welcome reject reset requests verdicts ep_conn emu_conn)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")

srcs=("$here/fp_wire.c" "$here/fp_gbn.c" "$here/fp_endpoint_conn.c" "$here/fp_emu_conn.c")
flags=(-std=c11 -g -O1 -I"$here" -fno-omit-frame-pointer
       -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)

mkdir -p "$BUILD_DIR/artifacts" "$BUILD_DIR/corpus"
echo "== building in $BUILD_DIR with $($CC --version | head -1)"
$CC -std=c11 -O1 -I"$here" "$here/fuzz/gen_corpus.c" "${srcs[@]}" -o "$BUILD_DIR/gen_corpus"
rm -rf "$BUILD_DIR/seeds"
"$BUILD_DIR/gen_corpus" "$BUILD_DIR/seeds"
for t in "${targets[@]}"; do
  $CC "${flags[@]}" "$here/fuzz/fuzz_$t.c" "${srcs[@]}" -o "$BUILD_DIR/fuzz_$t"
done

. "$repo/scripts/fuzz_targets.sh"
fuzz_targets "$secs" "${targets[@]}"

