#!/usr/bin/env bash
# Every test suite, as CI runs it (`make test`). Each suite builds what it needs.
# Ends with "suites: N passed, M failed"; exits non-zero if any suite failed.
#   FLEXPLANE_TEST_SUITES="unit cli" scripts/run_tests.sh   # run a subset
set -uo pipefail
cd "$(dirname "$0")/.."
GEN=$(command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
JOBS=${JOBS:-$(nproc)}
SUITES=${FLEXPLANE_TEST_SUITES:-"unit cli lab router plots fuzz kbuild packaging asan-ubsan tsan kmod-vm"}
FUZZ_SECONDS=${FUZZ_SECONDS:-10}
passed=0; failed=0; failed_names=()

configure_build() {  # dir, "targets" ("" = all), extra cmake args...
  local dir=$1 targets=$2; shift 2
  cmake -S . -B "$dir" $GEN "$@" >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; return 1; }
  cmake --build "$dir" -j "$JOBS" ${targets:+--target $targets} 2>&1 | grep -E "error|warning: unused|FAILED" || true
  [[ ${PIPESTATUS[0]} -eq 0 ]]
}

run_suite() {  # name, command...
  local name=$1; shift
  [[ " $SUITES " == *" $name "* ]] || return 0
  echo "=== suite $name"
  local t0=$SECONDS
  if "$@"; then
    passed=$((passed + 1)); echo "=== suite $name: PASS ($((SECONDS - t0)) s)"
  else
    failed=$((failed + 1)); failed_names+=("$name"); echo "=== suite $name: FAIL ($((SECONDS - t0)) s)"
  fi
}

unit() {
  mkdir -p build && configure_build build "" -DCMAKE_BUILD_TYPE=Release &&
    (cd build && ctest --output-on-failure --timeout 600 -j "$JOBS")
}

cli() {
  [[ -x build/flexplane-emulator && -x build/flexplane-endpoint ]] ||
    configure_build build "" -DCMAKE_BUILD_TYPE=Release || return 1
  FLEXPLANE_BIN_DIR=$PWD/build .venv/bin/python -m pytest -q tests/ --ignore=tests/lab --ignore=tests/router --ignore=tests/packaging
}

lab() {  # the lab: NFQUEUE endpoint on real packets, real-TCP runs (netns; qemu: 3 TCG VMs, DCTCP), teardown, bad files
  [[ -x build/flexplane-nfq-endpoint && -x build/flexplane-workload && -x build/flexplane-emulator ]] ||
    configure_build build "" -DCMAKE_BUILD_TYPE=Release || return 1
  FLEXPLANE_BIN_DIR=$PWD/build .venv/bin/python -m pytest -q tests/lab
}

# flexplane-router end to end: pcap in -> pcap out per scheme, and real TCP
# between network namespaces through it (tests/router; needs root).
router() {
  [[ -x build/flexplane-router ]] || configure_build build "" -DCMAKE_BUILD_TYPE=Release || return 1
  FLEXPLANE_BIN_DIR=$PWD/build .venv/bin/python -m pytest -q tests/router
}

plots() { .venv/bin/python -m pytest -q plots/; }

# Sanitizer builds: -O1 with line tables only (-g1: enough for symbolized
# stacks) compiles in ~60 % of RelWithDebInfo's -O2 -g (measured on
# engine.cc: 8.4-8.8 s against 13.9-15.9 s of CPU); these builds are most of
# the suites' time on a 2-core CI machine.
# They are built with clang, which compiles instrumented code faster than
# GCC 12 (engine_test.cc under ASan+UBSan: 8.1 against 12.2 s of CPU;
# config.cc 8.8 against 11.1 s), and so checks the code with a second
# compiler's warnings and sanitizer runtime; the Release build stays GCC's.
SAN_FLAGS=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
           "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
           -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang)

asan_ubsan() {
  mkdir -p build-asan && configure_build build-asan "flexplane_tests proto_tests live_tests router_tests" \
      "${SAN_FLAGS[@]}" -DFLEXPLANE_SANITIZE=address,undefined &&
    (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
       ctest --output-on-failure --timeout 900 -j "$JOBS")
}

# The multicore engine, and closed-loop transports' cross-core ACK channels,
# under ThreadSanitizer. engine_mt_tests holds only the files with these
# cases (CMakeLists.txt); the Release flexplane_tests, which holds every
# file, must list exactly the same cases for the filter.
TSAN_FILTER='[engine],[transports][determinism]'
tsan() {
  [[ -x build/flexplane_tests ]] || configure_build build flexplane_tests -DCMAKE_BUILD_TYPE=Release || return 1
  mkdir -p build-tsan && configure_build build-tsan engine_mt_tests \
      "${SAN_FLAGS[@]}" -DFLEXPLANE_SANITIZE=thread || return 1
  # Sorted: each binary lists its cases in its own source files' link order.
  if ! diff <(build/flexplane_tests --list-test-names-only "$TSAN_FILTER" | LC_ALL=C sort) \
            <(build-tsan/engine_mt_tests --list-test-names-only "$TSAN_FILTER" | LC_ALL=C sort); then
    echo "tsan: engine_mt_tests lacks the cases above; add their files to ENGINE_MT_TEST_SOURCES"
    return 1
  fi
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build-tsan/engine_mt_tests "$TSAN_FILTER"
}

fuzz() {  # every protocol decoder, then the emulator's config and trace parsers; bounded time
  proto/run_fuzz.sh "$FUZZ_SECONDS" && JOBS=$JOBS scripts/fuzz_config.sh "$FUZZ_SECONDS"
}
kbuild() {  # the protocol core builds as a kernel module; kmod/ is checkpatch --strict clean and the check leaves nothing in the tree
  proto/check_kbuild.sh && make -s -C kmod check || return 1
  local left; left=$(git status --porcelain --ignored -- kmod proto)
  [[ -z $left ]] || { echo "kbuild: the checks left files in the tree:"; echo "$left"; return 1; }
}
packaging() { packaging/test.sh build/packaging; }  # .debs installed for real (DKMS), modprobe in Debian's 6.1 kernel, module vs 6.1 + 6.12 headers (docs/deploy.md)
kmod_vm() { kmod/vm/run.sh build; }                # flexplane.ko in Debian's kernel under QEMU/TCG (docs/kmod.md)

run_suite unit unit
run_suite cli cli
run_suite lab lab
run_suite router router
run_suite plots plots
run_suite fuzz fuzz
run_suite kbuild kbuild
run_suite packaging packaging
run_suite asan-ubsan asan_ubsan
run_suite tsan tsan
run_suite kmod-vm kmod_vm

echo
[[ $failed -gt 0 ]] && echo "failed suites: ${failed_names[*]}"
echo "suites: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
