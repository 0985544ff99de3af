#!/usr/bin/env bash
# Builds the initramfs of the flexplane test VMs (docs/kmod.md, "VM tests"):
# busybox, the host's ip / tc / iperf3 with their libraries, the tc plugin,
# fp_rr, the guest kernel's modules the tests need (with dependencies, from
# the unpacked linux-image deb), flexplane.ko, and any further programs named
# (the lab's flexplane-workload: docs/lab.md, backend qemu) into /sbin.
# Beside it, OUT with .ssh.cpio.gz for .cpio.gz: an overlay with the host's
# dropbear SSH server and a root account (key login only), appended to the
# image by vmlab.Lab(ssh_pubkey=...) for VMs booted with fp.ssh=1 (the lab's
# hosts backend tests, docs/lab.md "Backend hosts"); the base image does not
# carry it, so the kmod tests and the qemu backend boot as fast as before.
#   build_initramfs.sh OUT.cpio.gz KERNEL_ROOT KMOD_BUILD_DIR [PROGRAM...]
# KERNEL_ROOT: the linux-image deb unpacked (fetch_kernel.sh); KMOD_BUILD_DIR:
# where `make kmod` put flexplane.ko, q_flexplane.so and fp_rr.
set -euo pipefail
OUT=$(realpath -m "$1"); KROOT=$(realpath "$2"); KB=$(realpath "$3"); shift 3
HERE=$(cd "$(dirname "$0")" && pwd)
KO=$KB/flexplane.ko
KVER=$(modinfo -F vermagic "$KO" | awk '{print $1}')
MDIR=$KROOT/lib/modules/$KVER
[ -d "$MDIR" ] || { echo "build_initramfs: $MDIR missing (kernel $KVER not unpacked)" >&2; exit 1; }
W=$(mktemp -d "${TMPDIR:-/tmp}/fpk-initramfs.XXXXXX")
S=$(mktemp -d "${TMPDIR:-/tmp}/fpk-initramfs-ssh.XXXXXX")
trap 'rm -rf "$W" "$S"' EXIT
mkdir -p "$W"/{bin,sbin,usr/bin,etc,proc,sys,dev,tmp,run,var/run,fp} \
         "$W/lib/modules/$KVER/extra" "$W/usr/lib/x86_64-linux-gnu/tc"
cp /bin/busybox "$W/bin/busybox"
for a in $("$W/bin/busybox" --list); do
  case $a in ip|tc|busybox) ;; *) ln -sf busybox "$W/bin/$a";; esac
done
copy_bin() {  # a host binary and the shared libraries it needs (into ${2:-$W})
  local b r=${2:-$W}; b=$(command -v "$1"); mkdir -p "$r/sbin"; cp "$b" "$r/sbin/"
  for l in $(ldd "$b" | awk '/=>/ {print $3} /ld-linux/ {print $1}'); do
    [ "$r" != "$W" ] && [ -e "$W$l" ] && continue  # the overlay: only what the base image lacks
    mkdir -p "$r$(dirname "$l")"; cp -L "$l" "$r$l"
  done
}
for b in ip tc ss iperf3 "$@"; do copy_bin "$b"; done
# The SSH overlay: dropbear, and root's account (no password: key login
# only, -s); root's shell is busybox sh, which runs its own ip/tc applets
# first: SSH users call /sbin/tc.
for b in dropbear dropbearkey; do
  command -v $b > /dev/null || { echo "build_initramfs: $b not found (apt-get install dropbear-bin)" >&2; exit 1; }
  copy_bin $b "$S"
done
mkdir -p "$S/etc/dropbear" "$S/root"
echo 'root:x:0:0:root:/root:/bin/sh' > "$S/etc/passwd"
echo 'root:x:0:' > "$S/etc/group"
echo '/bin/sh' > "$S/etc/shells"
chmod 700 "$S/root"
cp "$KB/q_flexplane.so" "$W/usr/lib/x86_64-linux-gnu/tc/"
cp "$KB/fp_rr" "$W/sbin/"
declare -A seen
add_mod() {  # a module of the guest kernel and its dependencies
  local m=$1 f d
  [ -n "${seen[$m]:-}" ] && return; seen[$m]=1
  f=$(find "$MDIR/kernel" \( -name "$m.ko*" -o -name "${m//_/-}.ko*" \) | head -1)
  if [ -z "$f" ]; then
    grep -qE "/($m|${m//_/-}).ko" "$MDIR/modules.builtin" && return
    echo "build_initramfs: module $m not found" >&2; exit 1
  fi
  for d in $(modinfo -F depends "$f" | tr ',' ' '); do add_mod "$d"; done
  mkdir -p "$W/lib/modules/$KVER/$(dirname "${f#"$MDIR"/}")"
  cp "$f" "$W/lib/modules/$KVER/${f#"$MDIR"/}"
}
for m in virtio_pci virtio_net virtio_console tcp_dctcp $(modinfo -F depends "$KO" | tr ',' ' '); do
  add_mod "$m"
done
cp "$KO" "$W/lib/modules/$KVER/extra/"
cp "$MDIR"/modules.builtin* "$MDIR"/modules.order "$W/lib/modules/$KVER/" 2>/dev/null || true
depmod -b "$W" "$KVER"
cp "$HERE/guest/init" "$W/init"
cp "$HERE/guest/agent.sh" "$W/fp/agent.sh"
chmod +x "$W/init" "$W/fp/agent.sh"
( cd "$W" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1 ) > "$OUT.tmp"
SSH_OUT=${OUT%.cpio.gz}.ssh.cpio.gz
( cd "$S" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1 ) > "$SSH_OUT.tmp"
mv "$SSH_OUT.tmp" "$SSH_OUT"
mv "$OUT.tmp" "$OUT"  # a reader never sees half an image
echo "initramfs: $OUT ($(du -h "$OUT" | cut -f1), kernel $KVER; SSH overlay $SSH_OUT, $(du -h "$SSH_OUT" | cut -f1))"
