#!/usr/bin/env bash
# The endpoint's Debian packages, built with dpkg-deb (no debhelper):
#   flexplane-dkms_<v>-<r>_all.deb    the module's sources + dkms.conf under
#                                     /usr/src/flexplane-<v>; postinst/prerm run dkms
#   flexplane-tc_<v>-<r>_<arch>.deb   q_flexplane.so in tc's plugin folder,
#                                     refused unless the installed iproute2's
#                                     plugin ABI is supported (check_tc_abi.sh)
#
#   packaging/build_debs.sh [OUT_DIR]       (default build/packages; `make packages`)
#
# The version comes from one place: FLEXPLANE_VERSION in api/version.h (the
# emulator's --version); FLEXPLANE_DEB_REVISION (default 1) is the Debian
# revision. The module's files are the ones kmod/Makefile stages (its KSRC and
# PSRC lists), so a file added there is packaged too.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(realpath -m "${1:-$ROOT/build/packages}")
PKG=$ROOT/packaging

VERSION=$(sed -n 's/^#define FLEXPLANE_VERSION "\(.*\)"$/\1/p' "$ROOT/api/version.h")
[[ $VERSION =~ ^[0-9][0-9A-Za-z.+~]*$ ]] || { echo "build_debs: no FLEXPLANE_VERSION in api/version.h" >&2; exit 1; }
DEBVERSION=$VERSION-${FLEXPLANE_DEB_REVISION:-1}
ARCH=$(dpkg --print-architecture)
MULTIARCH=$(gcc -print-multiarch)
TC_MIN=$(sed -n 's/^SUPPORTED_MIN=\([0-9.]*\).*/\1/p' "$PKG/check_tc_abi.sh")
TC_MAX=$(sed -n 's/^SUPPORTED_MAX=\([0-9.]*\).*/\1/p' "$PKG/check_tc_abi.sh")
TC_NEXT=${TC_MAX%.*}.$((${TC_MAX##*.} + 1))    # 6.15 -> 6.16: Depends iproute2 (<< 6.16~)
KSRC=$(sed -n 's/^KSRC := //p' "$ROOT/kmod/Makefile")
PSRC=$(sed -n 's/^PSRC := //p' "$ROOT/kmod/Makefile")
[[ -n $KSRC && -n $PSRC ]] || { echo "build_debs: cannot read KSRC/PSRC from kmod/Makefile" >&2; exit 1; }

mkdir -p "$OUT"
STAGE=$(mktemp -d "${TMPDIR:-/tmp}/flexplane-debs.XXXXXX")   # the package trees; only the .debs stay in $OUT
trap 'rm -rf "$STAGE"' EXIT
rm -f "$OUT"/flexplane-dkms_*.deb "$OUT"/flexplane-tc_*.deb

subst() {  # template -> stdout
  sed -e "s/@VERSION@/$VERSION/g; s/@DEBVERSION@/$DEBVERSION/g; s/@ARCH@/$ARCH/g" \
      -e "s/@TC_MIN@/$TC_MIN/g; s/@TC_MAX@/$TC_MAX/g; s/@TC_NEXT@/$TC_NEXT/g" "$1"
}

finish() {  # package root, name: control fields, md5sums, copyright, build
  local root=$1 name=$2
  install -D -m 644 "$PKG/copyright" "$root/usr/share/doc/$name/copyright"
  local size
  size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
  sed -i "s/@SIZE@/$size/" "$root/DEBIAN/control"
  (cd "$root" && find usr -type f -printf '%P\0' | sort -z |
     xargs -0 -I{} md5sum "usr/{}") >"$root/DEBIAN/md5sums"
  dpkg-deb --root-owner-group -Zxz --build "$root" "$OUT/" >/dev/null
}

# --- flexplane-dkms ---
d=$STAGE/flexplane-dkms
src=$d/usr/src/flexplane-$VERSION
mkdir -p "$src" "$d/DEBIAN"
for f in $KSRC; do cp -r "$ROOT/kmod/$f" "$src/"; done
for f in $PSRC; do cp "$ROOT/proto/$f" "$src/"; done
subst "$PKG/dkms/dkms.conf.in" >"$src/dkms.conf"
# modinfo's "version": the package version, unless the sources declare one
if ! grep -q "MODULE_VERSION" "$ROOT"/kmod/*.c; then
  printf '%s\n' "// SPDX-License-Identifier: GPL-2.0" \
    "/* Written by packaging/build_debs.sh: the package version, for modinfo. */" \
    "#include <linux/module.h>" "" "MODULE_VERSION(\"$VERSION\");" >"$src/flexplane_version.c"
  printf '%s\n' "flexplane-y += flexplane_version.o" >>"$src/Kbuild"
fi
find "$src" -type d -exec chmod 755 {} + && find "$src" -type f -exec chmod 644 {} +
subst "$PKG/dkms/control.in" >"$d/DEBIAN/control"
for s in postinst prerm; do subst "$PKG/dkms/$s" >"$d/DEBIAN/$s"; chmod 755 "$d/DEBIAN/$s"; done
finish "$d" flexplane-dkms

# --- flexplane-tc ---
t=$STAGE/flexplane-tc
mkdir -p "$t/DEBIAN"
make -s -C "$ROOT/kmod" OUT="$STAGE/plugin" plugin   # runs check_tc_abi.sh on the plugin it built
install -D -m 644 "$STAGE/plugin/q_flexplane.so" "$t/usr/lib/$MULTIARCH/tc/q_flexplane.so"
strip --strip-unneeded "$t/usr/lib/$MULTIARCH/tc/q_flexplane.so"
subst "$PKG/tc/control.in" >"$t/DEBIAN/control"
finish "$t" flexplane-tc

for f in "$OUT"/flexplane-*_"$DEBVERSION"_*.deb; do echo "build_debs: $f"; done
