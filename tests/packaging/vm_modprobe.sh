#!/usr/bin/env bash
# Boots the Debian kernel KVER (its linux-image, downloaded and unpacked by
# packaging/kernel_cache.sh, never installed) under QEMU/TCG with a busybox
# initramfs that holds the kernel's own udp_tunnel/ip6_udp_tunnel modules, the
# flexplane.ko DKMS built and installed on this host, depmod's index, tc
# (this host's iproute2) and the packaged q_flexplane.so; its init runs
# `modprobe flexplane` (dependencies from modules.dep only), attaches the
# qdisc with tc, shows it, deletes it, rmmods the module and powers off.
# Prints the guest's "FPK:" lines.
#   vm_modprobe.sh KVER FLEXPLANE_KO Q_FLEXPLANE_SO WORK_DIR
set -euo pipefail
KVER=$1 KO=$(realpath "$2") PLUGIN=$(realpath "$3") WORK=$(realpath -m "$4")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KROOT=$("$ROOT/packaging/kernel_cache.sh" modules "$KVER")
MDIR=$KROOT/lib/modules/$KVER
mkdir -p "$WORK"
W=$(mktemp -d "$WORK/initramfs.XXXXXX")
trap 'rm -rf "$W"' EXIT
mkdir -p "$W"/{bin,sbin,proc,sys,dev,tmp} "$W/usr/lib/x86_64-linux-gnu/tc" \
         "$W/lib/modules/$KVER/updates/dkms"
cp /bin/busybox "$W/bin/busybox"
for a in $("$W/bin/busybox" --list); do [[ $a == tc || $a == busybox ]] || ln -sf busybox "$W/bin/$a"; done
cp /sbin/tc "$W/sbin/tc"
for l in $(ldd /sbin/tc | awk '/=>/ {print $3} /ld-linux/ {print $1}'); do
  mkdir -p "$W$(dirname "$l")"; cp -L "$l" "$W$l"
done
cp "$PLUGIN" "$W/usr/lib/x86_64-linux-gnu/tc/q_flexplane.so"
add_mod() {  # a module of the guest kernel and, first, its dependencies
  local f d
  f=$(find "$MDIR/kernel" -name "$1.ko*" | head -1)
  [[ -n $f ]] || { echo "vm_modprobe: module $1 not in linux-image-$KVER" >&2; exit 1; }
  for d in $(modinfo -F depends "$f" | tr ',' ' '); do add_mod "$d"; done
  mkdir -p "$W/lib/modules/$KVER/$(dirname "${f#"$MDIR"/}")"
  cp "$f" "$W/lib/modules/$KVER/${f#"$MDIR"/}"
}
for m in $(modinfo -F depends "$KO" | tr ',' ' '); do add_mod "$m"; done
cp "$KO" "$W/lib/modules/$KVER/updates/dkms/"
cp "$MDIR"/modules.builtin* "$MDIR"/modules.order "$W/lib/modules/$KVER/"
depmod -b "$W" "$KVER"
cat >"$W/init" <<'EOF'
#!/bin/sh
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
echo "FPK: kernel $(uname -r)"
if modprobe flexplane; then echo "FPK: modprobe ok"; else echo "FPK: modprobe failed"; fi
for m in $(cut -d' ' -f1 /proc/modules); do echo "FPK: loaded $m"; done
ip link set lo up
ip addr add 10.77.0.10/24 dev lo
/sbin/tc qdisc add dev lo root flexplane emulator 10.77.0.2 endpoints 10.77.0.10 count 2 &&
  echo "FPK: qdisc added"
/sbin/tc -s qdisc show dev lo | sed 's/^/FPK: show /'
/sbin/tc qdisc del dev lo root && echo "FPK: qdisc deleted"
rmmod flexplane && echo "FPK: rmmod ok"
echo "FPK: done"
poweroff -f
EOF
chmod +x "$W/init"
(cd "$W" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1) >"$WORK/initrd.gz"
rm -f "$WORK/console.log"
timeout --kill-after=5 "${VM_TIMEOUT:-180}" qemu-system-x86_64 -accel tcg -m 256 -smp 1 \
  -kernel "$KROOT/boot/vmlinuz-$KVER" -initrd "$WORK/initrd.gz" \
  -append "console=ttyS0 quiet panic=-1" -display none -monitor none \
  -serial "file:$WORK/console.log" -no-reboot -nodefaults || true
grep -a "FPK:" "$WORK/console.log" | tr -d '\r' || { echo "vm_modprobe: no output; console:" >&2; tail -30 "$WORK/console.log" >&2; exit 1; }
