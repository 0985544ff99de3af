#!/usr/bin/env bash
# Packs what a live run needs on a bare machine (the lent 16-core machine of
# issue 22: no iproute2, ethtool, iptables or DPDK there, no registry to get
# them from) into one folder that travels with the tree: our binaries and
# the tools the netns lab calls, each with every shared library it loads,
# Debian's C library and loader included, so nothing of the other machine's
# libraries is used and its distribution does not matter.
#
#   scripts/device_bundle.sh [BUILD_DIR] [STATIC_BUILD_DIR]     -> .device/
#
# The binaries are rewritten (patchelf) to use the loader and libraries at
# $PREFIX (default /opt/flexplane-device): scripts/device_run.sh copies the
# folder there first. Also carried: the DPDK drivers the lab loads
# (af_packet, af_xdp, vdev bus, ring mempool; device_run.sh links them where
# Debian's EAL looks for plugins), libxdp's programs and iptables'
# extensions (XTABLES_LIBDIR).
# Needs patchelf (apt-get install patchelf). About 40 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
STATIC=${2:-build-static}
PREFIX=${PREFIX:-/opt/flexplane-device}
OUT=.device
command -v patchelf >/dev/null || { echo "device_bundle: needs patchelf (apt-get install patchelf)" >&2; exit 2; }
ARCH_LIB=/usr/lib/x86_64-linux-gnu
PMDS=$(ls -d $ARCH_LIB/dpdk/pmds-* | head -1)
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib" "$OUT/pmds" "$OUT/xtables"

ours=(flexplane-emulator flexplane-nfq-endpoint flexplane-workload flexplane-endpoint)
for p in "${ours[@]}"; do
  [[ -x $BUILD/$p ]] || { echo "device_bundle: $BUILD/$p missing (make build)" >&2; exit 2; }
  cp "$BUILD/$p" "$OUT/bin/"
done
[[ -x $STATIC/flexplane-emulator ]] || { echo "device_bundle: $STATIC/flexplane-emulator missing (make static)" >&2; exit 2; }
cp "$STATIC/flexplane-emulator" "$OUT/bin/flexplane-emulator-static"
tools=(ip ethtool sysctl xtables-nft-multi xtables-legacy-multi time taskset chrt)
for t in "${tools[@]}"; do
  p=$(type -P "$t") || { echo "device_bundle: $t not found here" >&2; exit 2; }
  cp "$(readlink -f "$p")" "$OUT/bin/$t"
done
# iptables and friends dispatch on the name they are called by.
for n in iptables ip6tables; do ln -s xtables-nft-multi "$OUT/bin/$n"; ln -s xtables-legacy-multi "$OUT/bin/$n-legacy"; done
# A driver in pmds/ is a link to its file in lib/, as in Debian's layout: a
# library dlopen()ed as a plugin and needed by another plugin is then one
# file, loaded once (twice, DPDK panics registering its bus again).
for so in bus_vdev mempool_ring net_af_packet net_af_xdp; do
  cp "$PMDS/librte_$so.so.23.0" "$OUT/lib/librte_$so.so.23"
  ln -s "../lib/librte_$so.so.23" "$OUT/pmds/librte_$so.so"
done
cp $ARCH_LIB/xtables/*.so "$OUT/xtables/"
# libxdp's AF_XDP programs (net_af_xdp; device_run.sh sets LIBXDP_OBJECT_PATH).
mkdir -p "$OUT/bpf" && cp $ARCH_LIB/bpf/xsk_def_xdp_prog*.o $ARCH_LIB/bpf/xdp-dispatcher.o "$OUT/bpf/"
# A baseline for A/B runs there: OLD_STATIC=path/to/an/older/static/emulator.
[[ -n ${OLD_STATIC:-} ]] && cp "$OLD_STATIC" "$OUT/bin/flexplane-emulator-static-old"

# Every library any of them loads (the loader too), copied once.
libs() { ldd "$1" 2>/dev/null | awk '/=> \// {print $3} /^\t\/lib64/ {print $1}'; }
for f in "$OUT"/bin/* "$OUT"/lib/* "$OUT"/xtables/*; do
  [[ -L $f ]] && continue
  file -b "$f" | grep -q 'dynamically linked' || continue
  for l in $(libs "$f"); do [[ -e $OUT/lib/$(basename "$l") ]] || cp "$(readlink -f "$l")" "$OUT/lib/$(basename "$l")"; done
done
LOADER=$(basename "$(ls "$OUT"/lib/ld-linux-x86-64.so.*)")
for f in "$OUT"/bin/*; do
  [[ -L $f ]] && continue
  file -b "$f" | grep -q 'dynamically linked' || continue
  patchelf --set-interpreter "$PREFIX/lib/$LOADER" --set-rpath "$PREFIX/lib" --force-rpath "$f"
done
for f in "$OUT"/lib/* "$OUT"/xtables/*; do
  [[ $(basename "$f") == ld-linux* ]] && continue
  patchelf --set-rpath "$PREFIX/lib" --force-rpath "$f"
done
git rev-parse --short HEAD > "$OUT/COMMIT" 2>/dev/null || true
echo "device_bundle: $OUT ($(du -sh "$OUT" | cut -f1)); installs at $PREFIX (scripts/device_run.sh)"
