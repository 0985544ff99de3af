#!/usr/bin/env bash
# The supported kernel range, checked: builds flexplane.ko against each listed
# kernel's headers (make -C kmod KDIR=... OUT=...), from scratch, each into its
# own folder, and fails on any compiler or modpost warning or error.
#
#   packaging/build_kernels.sh [OUT_BASE]        (default build/kernels)
#   FLEXPLANE_KERNELS="installed:6.1 bookworm-backports:6.12"   (the default)
#
# installed:SERIES   the newest /usr/src/linux-headers-SERIES.*-amd64 (Debian 12: 6.1)
# bookworm-backports:SERIES   the newest linux-headers-SERIES.*-amd64 there,
#                    downloaded and unpacked into the cache, not installed
#                    (packaging/kernel_cache.sh; FLEXPLANE_KERNEL_CACHE)
# Prints one line per kernel (OK / FAIL and the first errors); exits 1 if any failed.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT_BASE=$(realpath -m "${1:-$ROOT/build/kernels}")
KERNELS=${FLEXPLANE_KERNELS:-"installed:6.1 bookworm-backports:6.12"}
JOBS=${JOBS:-2}
export FLEXPLANE_KERNEL_CACHE=${FLEXPLANE_KERNEL_CACHE:-$OUT_BASE/cache}
mkdir -p "$OUT_BASE"

failed=()
for spec in $KERNELS; do
  suite=${spec%%:*} series=${spec#*:}
  if ! kdir=$("$ROOT/packaging/kernel_cache.sh" headers "$suite" "$series"); then
    echo "build_kernels: $spec: FAIL (no headers)"; failed+=("$spec"); continue
  fi
  kver=$(sed -n 's/^override KERNELRELEASE = //p' "$kdir/.kernelvariables" 2>/dev/null)
  [[ -n $kver ]] || kver=$(basename "$kdir" | sed 's/^linux-headers-//')
  out=$OUT_BASE/$kver log=$OUT_BASE/$kver.log
  rm -rf "$out"   # from scratch: an incremental build would not repeat the warnings
  t0=$SECONDS
  make -j"$JOBS" -C "$ROOT/kmod" KDIR="$kdir" OUT="$out" module >"$log" 2>&1
  rc=$?
  # compiler warnings, modpost WARNINGs, errors; "Skipping BTF" is not one
  bad=$(grep -iE "warning|error" "$log" | grep -v "^make.*Leaving directory" || true)
  vermagic=$( [[ -f $out/flexplane.ko ]] && modinfo -F vermagic "$out/flexplane.ko" | awk '{print $1}')
  if [[ $rc -eq 0 && -z $bad && $vermagic == "$kver" ]]; then
    echo "build_kernels: $kver ($spec): OK, no warnings ($((SECONDS - t0)) s; $out/flexplane.ko)"
  else
    echo "build_kernels: $kver ($spec): FAIL (make exit $rc, vermagic '${vermagic}'; log $log):"
    grep -E "error|warning|WARNING" "$log" | head -20 | sed 's/^/    /'
    failed+=("$spec")
  fi
done
if ((${#failed[@]})); then
  echo "build_kernels: FAILED on ${failed[*]}"
  exit 1
fi
echo "build_kernels: all of $KERNELS build without warnings"
