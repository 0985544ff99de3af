#!/usr/bin/env bash
# The kmod-vm test suite (`make test` runs it; docs/kmod.md, "VM tests"):
# builds flexplane.ko, q_flexplane.so and fp_rr (make -C kmod), fetches the
# Debian kernel image matching the headers, builds the VMs' initramfs, then
# runs kmod/vm/test_kmod_vm.py: three QEMU/TCG VMs on a bridge in a network
# namespace, the live emulator on DPDK af_packet, real TCP between the VMs.
#   kmod/vm/run.sh [BUILD_DIR] [pytest args...]      (root; BUILD_DIR: build)
# Whatever the run leaves (VMs, emulator, namespace) is removed on exit.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
BUILD=$(realpath -m "${1:-build}"); shift || true
VM=$BUILD/kmod-vm
PY=$ROOT/.venv/bin/python; [ -x "$PY" ] || PY=python3
t0=$SECONDS

cleanup() {
  local f
  for f in "$VM/run/lab.pids"; do
    [ -f "$f" ] && while read -r pid; do kill -9 -- "-$pid" 2>/dev/null || true; done < "$f"
  done
  if [ -f "$VM/run/lab.netns" ]; then
    while read -r ns; do ip netns del "$ns" 2>/dev/null || true; done < "$VM/run/lab.netns"
  fi
  rm -f "$VM/run/lab.pids" "$VM/run/lab.netns"
}
trap cleanup EXIT INT TERM

KVER=$(kmod/vm/images.sh "$BUILD" | sed -n 's/^KVER=//p')
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  GEN=$(command -v ninja >/dev/null 2>&1 && echo "-G Ninja" || true)
  cmake -S . -B "$BUILD" $GEN -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$BUILD" -j "${JOBS:-$(nproc)}" --target flexplane-emulator > "$VM/emulator-build.log" 2>&1 ||
  { cat "$VM/emulator-build.log"; exit 1; }   # up to date: a no-op
echo "kmod-vm: built in $((SECONDS - t0)) s"
cleanup  # what a killed earlier run may have left
rm -rf "$VM/run" && mkdir -p "$VM/run"
rc=0
FLEXPLANE_KMOD_VM=$VM FLEXPLANE_KMOD_KVER=$KVER FLEXPLANE_BIN_DIR=$BUILD \
  "$PY" -m pytest -p no:cacheprovider -q kmod/vm "$@" || rc=$?
[ -f "$VM/run/results.json" ] && { echo "kmod-vm: figures ($VM/run/results.json):"; cat "$VM/run/results.json"; }
echo "kmod-vm: $((SECONDS - t0)) s in all"
exit $rc
