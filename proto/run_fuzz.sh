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

fail=0
printf '%-10s %8s %12s %10s %7s  %s\n' target seconds execs execs/s corpus result
for t in "${targets[@]}"; do
  mkdir -p "$BUILD_DIR/corpus/$t"
  seeds=()
  [ -d "$BUILD_DIR/seeds/$t" ] && seeds=("$BUILD_DIR/seeds/$t")
  log="$BUILD_DIR/fuzz_$t.log"
  start=$(date +%s)
  set +e
  "$BUILD_DIR/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$BUILD_DIR/artifacts/$t-" \
    "$BUILD_DIR/corpus/$t" "${seeds[@]}" >"$log" 2>&1
  rc=$?
  set -e
  took=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  corpus=$(ls "$BUILD_DIR/corpus/$t" | wc -l)
  if [ $rc -eq 0 ]; then result=ok; else result="FAILED (rc=$rc, see $log)"; fail=1; fi
  printf '%-10s %8s %12s %10s %7s  %s\n' "$t" "$took" "${execs:-?}" "${rate:-?}" "$corpus" "$result"
  if [ $rc -ne 0 ]; then grep -E "ERROR|invariant|SUMMARY|Test unit written" "$log" | head -5 || true; fi
done
exit $fail
