# Sourced by proto/run_fuzz.sh and scripts/fuzz_config.sh: the loop that runs
# built libFuzzer targets for a bounded time and prints one row per target.
#
#   fuzz_targets SECS TARGET...
#
# Runs $BUILD_DIR/fuzz_<target> for SECS seconds on its growing corpus
# ($BUILD_DIR/corpus/<target>) and its seeds ($BUILD_DIR/seeds/<target>, if
# any); extra libFuzzer flags come from the array FUZZ_FLAGS, environment for
# the targets from the caller. Crash inputs land in $BUILD_DIR/artifacts/.
# Returns 1 if any target crashed, tripped a sanitizer, leaked or timed out.
fuzz_targets() {
  local secs=$1; shift
  local t log start rc took execs rate corpus result fail=0
  local -a seeds
  mkdir -p "$BUILD_DIR/artifacts"
  printf '%-10s %8s %12s %10s %7s  %s\n' target seconds execs execs/s corpus result
  for t in "$@"; do
    mkdir -p "$BUILD_DIR/corpus/$t"
    seeds=()
    [ -d "$BUILD_DIR/seeds/$t" ] && seeds=("$BUILD_DIR/seeds/$t")
    log="$BUILD_DIR/fuzz_$t.log"
    start=$(date +%s)
    set +e
    "$BUILD_DIR/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$BUILD_DIR/artifacts/$t-" ${FUZZ_FLAGS[@]+"${FUZZ_FLAGS[@]}"} \
      "$BUILD_DIR/corpus/$t" ${seeds[@]+"${seeds[@]}"} >"$log" 2>&1
    rc=$?
    set -e
    took=$(( $(date +%s) - start ))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    corpus=$(ls "$BUILD_DIR/corpus/$t" | wc -l)
    if [ $rc -eq 0 ]; then result=ok; else result="FAILED (rc=$rc, see $log)"; fail=1; fi
    printf '%-10s %8s %12s %10s %7s  %s\n' "$t" "$took" "${execs:-?}" "${rate:-?}" "$corpus" "$result"
    if [ $rc -ne 0 ]; then grep -E "ERROR|invariant|SUMMARY|Test unit written|==[0-9]+==" "$log" | head -8 || true; fi
  done
  return $fail
}
