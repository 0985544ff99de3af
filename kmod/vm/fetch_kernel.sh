#!/usr/bin/env bash
# The Debian kernel image matching the headers a module was built against,
# downloaded (not installed) and unpacked into a cache folder.
#   fetch_kernel.sh flexplane.ko CACHE_DIR     -> prints the unpacked root
set -euo pipefail
KO=$1; CACHE=$(realpath -m "$2")
KVER=$(modinfo -F vermagic "$KO" | awk '{print $1}')
ROOT=$CACHE/linux-image-$KVER
if [ ! -f "$ROOT/boot/vmlinuz-$KVER" ]; then
  mkdir -p "$CACHE"
  # the same package version as the headers the module was built with
  VER=$(dpkg-query -W -f '${Version}' "linux-headers-$KVER" 2>/dev/null || true)
  ( cd "$CACHE" && rm -f linux-image-"$KVER"_*.deb &&
    apt-get download -qq "linux-image-$KVER${VER:+=$VER}" >&2 )
  rm -rf "$ROOT.tmp" && dpkg-deb -x "$CACHE"/linux-image-"$KVER"_*.deb "$ROOT.tmp"
  rm -f "$CACHE"/linux-image-"$KVER"_*.deb
  mv "$ROOT.tmp" "$ROOT"
fi
echo "$ROOT"
