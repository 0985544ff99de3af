#!/usr/bin/env bash
# Fuzz the emulator's input parsers for a bounded time: fuzz_config (an
# experiment config through load_experiment_text and validate_run, what
# `check` does), fuzz_trace (a flow trace through read_flow_trace) and
# fuzz_sends (a collective's send list through read_send_list). Built
# with clang, libFuzzer, ASan and UBSan (-DFLEXPLANE_FUZZ=ON). Exits non-zero if
# a target crashes, trips a sanitizer, leaks, times out or fails to build.
#
#   scripts/fuzz_config.sh            # every target, 20 s each
#   scripts/fuzz_config.sh 60         # 60 s each
#   scripts/fuzz_config.sh 5 trace    # only this target
#
# Environment: BUILD_DIR (default <repo>/build-fuzz), JOBS (default nproc).
# Seeds: every YAML under experiments/ and topologies/ (configs), every flow
# trace in the repo (traces), every send list (sends). The growing corpus stays in
# $BUILD_DIR/corpus/<target>; crash inputs land in $BUILD_DIR/artifacts/
# (reproduce: $BUILD_DIR/fuzz_<target> <file>).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-${FUZZ_SECONDS:-20}}
shift || true
BUILD_DIR=${BUILD_DIR:-$repo/build-fuzz}
JOBS=${JOBS:-$(nproc)}
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(config trace sends)

mkdir -p "$BUILD_DIR/artifacts" "$BUILD_DIR/corpus"
echo "== building in $BUILD_DIR with $(clang++ --version | head -1)"
gen=$(command -v ninja >/dev/null 2>&1 && echo "-G Ninja" || true)
cmake -S "$repo" -B "$BUILD_DIR" $gen -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1" \
  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DFLEXPLANE_WITH_DPDK=OFF \
  -DFLEXPLANE_SANITIZE=address,undefined -DFLEXPLANE_FUZZ=ON >"$BUILD_DIR.configure.log" 2>&1 ||
  { cat "$BUILD_DIR.configure.log"; exit 1; }
cmake --build "$BUILD_DIR" -j "$JOBS" --target $(printf 'fuzz_%s ' "${targets[@]}") >"$BUILD_DIR/build.log" 2>&1 ||
  { grep -E "error|FAILED" -A5 "$BUILD_DIR/build.log" | head -40; exit 1; }

seeds="$BUILD_DIR/seeds"
rm -rf "$seeds" && mkdir -p "$seeds/config" "$seeds/trace" "$seeds/sends"
find "$repo/experiments" "$repo/topologies" "$repo/emulator/live/testdata" -name '*.yaml' \
  -exec cp -t "$seeds/config" {} + 2>/dev/null || true
grep -rl --include='*.csv' '^flow_id,src,dst,size_pkts,start_timeslot' "$repo/validation" "$repo/experiments" |
  while read -r f; do head -c 4096 "$f" >"$seeds/trace/$(basename "$f")"; done
grep -rl --include='*.csv' '^send_id,src,dst,size_pkts,gap_timeslots,iteration,after' "$repo/experiments" |
  while read -r f; do head -c 4096 "$f" >"$seeds/sends/$(basename "$f")"; done

export FLEXPLANE_FUZZ_BASE_DIR="$repo/experiments/configs" ASAN_OPTIONS=detect_leaks=1
FUZZ_FLAGS=(-max_len=8192)
. "$repo/scripts/fuzz_targets.sh"
fuzz_targets "$secs" "${targets[@]}"

