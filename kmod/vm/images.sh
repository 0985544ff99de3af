#!/usr/bin/env bash
# What a flexplane endpoint VM boots (shared by the kmod-vm suite, run.sh, and
# the lab's qemu backend, experiments/flexlab/backends/qemu.py): builds
# flexplane.ko, q_flexplane.so and fp_rr (make -C kmod), fetches the Debian
# kernel image matching the headers (fetch_kernel.sh, cached) and builds the
# initramfs (build_initramfs.sh) with flexplane-workload when it is built.
#   kmod/vm/images.sh BUILD_DIR
# Prints three lines: KERNEL=<vmlinuz> INITRD=<initramfs> KVER=<version>.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
BUILD=$(realpath -m "${1:-build}")
VM=$BUILD/kmod-vm
mkdir -p "$VM"
make -s -C kmod OUT="$BUILD/kmod" >&2
KROOT=$(kmod/vm/fetch_kernel.sh "$BUILD/kmod/flexplane.ko" "$VM")
KVER=$(modinfo -F vermagic "$BUILD/kmod/flexplane.ko" | awk '{print $1}')
EXTRA=(); [ -x "$BUILD/flexplane-workload" ] && EXTRA=("$BUILD/flexplane-workload")
kmod/vm/build_initramfs.sh "$VM/initramfs.cpio.gz" "$KROOT" "$BUILD/kmod" "${EXTRA[@]}" >&2
echo "KERNEL=$KROOT/boot/vmlinuz-$KVER"
echo "INITRD=$VM/initramfs.cpio.gz"
echo "KVER=$KVER"
