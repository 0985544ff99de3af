#!/usr/bin/env bash
# Debian kernel packages downloaded (never installed) and unpacked into a
# cache folder, for building the module against other kernels' headers and
# for resolving its module dependencies against a real kernel's modules.
#
#   kernel_cache.sh headers SUITE SERIES   -> prints the unpacked headers dir (KDIR)
#       SUITE: bookworm-backports (private apt lists) or installed (/usr/src)
#       SERIES: a kernel series such as 6.12: the newest amd64 flavour of it
#   kernel_cache.sh modules KVER           -> prints a root holding lib/modules/KVER
#       and boot/vmlinuz-KVER (the linux-image package of the installed
#       headers' version)
#   kernel_cache.sh deb bookworm-backports PKG  -> prints a root holding the
#       newest PKG there unpacked (tests: iproute2's tc of another version)
#
# Cache: $FLEXPLANE_KERNEL_CACHE (default build/packages-cache). The private
# apt lists (bookworm-backports only) live there and are refreshed once a
# day; the system's apt sources are left alone. A second run downloads nothing.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=$(realpath -m "${FLEXPLANE_KERNEL_CACHE:-$ROOT/build/packages-cache}")
BPO_URL=${FLEXPLANE_BPO_URL:-http://deb.debian.org/debian}

die() { echo "kernel_cache: $*" >&2; exit 1; }

# apt with its own lists: only bookworm-backports, for downloads only.
bpo_apt() {  # apt-get|apt-cache args...
  local tool=$1; shift
  "$tool" -o Dir::Etc::SourceList="$CACHE/apt/sources.list" -o Dir::Etc::SourceParts=- \
    -o Dir::State::Lists="$CACHE/apt/lists" -o Dir::Cache="$CACHE/apt/cache" \
    -o Dir::State::status=/var/lib/dpkg/status -o APT::Sandbox::User=root "$@"
}

bpo_update() {
  mkdir -p "$CACHE/apt/lists/partial" "$CACHE/apt/cache/archives/partial"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $BPO_URL bookworm-backports main" \
    >"$CACHE/apt/sources.list"
  local stamp=$CACHE/apt/updated
  if [[ ! -f $stamp || -n $(find "$stamp" -mmin +1440) ]]; then
    echo "kernel_cache: apt-get update (bookworm-backports, private lists in $CACHE/apt)" >&2
    bpo_apt apt-get update -qq >&2 || die "apt-get update of bookworm-backports failed (network? $BPO_URL)"
    touch "$stamp"
  fi
}

# Downloads PKG=VER (with the given apt wrapper) and unpacks it into DEST.
fetch_unpack() {  # apt-wrapper pkg ver dest [tar members...]
  local wrap=$1 pkg=$2 ver=$3 dest=$4; shift 4
  local dl=$CACHE/dl
  mkdir -p "$dl" "$dest"
  rm -f "$dl/${pkg}"_*.deb
  (cd "$dl" && $wrap apt-get download -qq "$pkg=$ver" >&2) || die "cannot download $pkg=$ver"
  dpkg-deb --fsys-tarfile "$dl/${pkg}"_*.deb | tar -x -C "$dest" "$@"
  rm -f "$dl/${pkg}"_*.deb
}
sys_apt() { local tool=$1; shift; "$tool" -o APT::Sandbox::User=root "$@"; }
bpo() { bpo_apt "$@"; }

headers_backports() {  # series
  local series=$1
  bpo_update
  # linux-headers-6.12.95+deb12-amd64: the generic amd64 flavour (not cloud/rt)
  local pkg
  pkg=$(bpo_apt apt-cache pkgnames linux-headers- | grep -E "^linux-headers-${series//./\\.}\.[0-9]+[^-]*-amd64$" |
        sort -V | tail -1) || true
  [[ -n $pkg ]] || die "no linux-headers-$series.*-amd64 in bookworm-backports"
  local kver=${pkg#linux-headers-}
  local ver
  ver=$(bpo_apt apt-cache show "$pkg" | sed -n 's/^Version: //p' | sort -V | tail -1)
  local dest=$CACHE/headers/$kver
  if [[ ! -f $dest/.complete-$ver ]]; then
    rm -rf "$dest" && mkdir -p "$dest"
    # the flavour package, the -common one it includes and linux-kbuild (scripts/, tools/)
    local deps common kbuild
    deps=$(bpo_apt apt-cache show "$pkg=$ver" | sed -n 's/^Depends: //p' | head -1)
    common=$(grep -o "linux-headers-[^ ,]*-common" <<<"$deps" | head -1)
    kbuild=$(grep -o "linux-kbuild-[^ ,]*" <<<"$deps" | head -1)
    [[ -n $common && -n $kbuild ]] || die "$pkg: unexpected Depends: $deps"
    echo "kernel_cache: downloading $pkg $common $kbuild ($ver)" >&2
    fetch_unpack bpo "$pkg" "$ver" "$dest"
    fetch_unpack bpo "$common" "$ver" "$dest"
    fetch_unpack bpo "$kbuild" "$ver" "$dest"
    # the flavour's Makefile includes the -common one by its absolute
    # /usr/src path; scripts/ and tools/ are relative links and need nothing
    sed -i "s#^include /usr/src/#include $dest/usr/src/#" "$dest/usr/src/linux-headers-$kver/Makefile"
    touch "$dest/.complete-$ver"
  fi
  echo "$dest/usr/src/linux-headers-$kver"
}

headers_installed() {  # series
  local d
  d=$(ls -d /usr/src/linux-headers-"$1".*-amd64 /usr/src/linux-headers-"$1".*-*-amd64 2>/dev/null | sort -uV | tail -1) || true
  [[ -n $d && -f $d/Makefile ]] ||
    die "no /usr/src/linux-headers-$1.*-amd64 (apt-get install linux-headers-amd64)"
  echo "$d"
}

modules() {  # kver: the image package of the installed headers' version
  local kver=$1 ver
  ver=$(dpkg-query -W -f '${Version}' "linux-headers-$kver" 2>/dev/null) ||
    die "linux-headers-$kver is not installed"
  local dest=$CACHE/image/$kver
  if [[ ! -f $dest/.complete-$ver || ! -f $dest/boot/vmlinuz-$kver ]]; then
    rm -rf "$dest" && mkdir -p "$dest"
    echo "kernel_cache: downloading linux-image-$kver ($ver), modules and vmlinuz" >&2
    fetch_unpack sys_apt "linux-image-$kver" "$ver" "$dest" ./lib/modules "./boot/vmlinuz-$kver"
    touch "$dest/.complete-$ver"
  fi
  echo "$dest"
}

deb_backports() {  # pkg
  local pkg=$1 ver
  bpo_update
  ver=$(bpo_apt apt-cache show "$pkg" 2>/dev/null | sed -n 's/^Version: //p' | sort -V | tail -1)
  [[ -n $ver ]] || die "no $pkg in bookworm-backports"
  local dest=$CACHE/deb/$pkg
  if [[ ! -f $dest/.complete-$ver ]]; then
    rm -rf "$dest" && mkdir -p "$dest"
    echo "kernel_cache: downloading $pkg ($ver)" >&2
    fetch_unpack bpo "$pkg" "$ver" "$dest"
    touch "$dest/.complete-$ver"
  fi
  echo "$dest"
}

case "${1:-}" in
  headers)
    [[ $# -eq 3 ]] || die "usage: kernel_cache.sh headers bookworm-backports|installed SERIES"
    case $2 in
      bookworm-backports) headers_backports "$3" ;;
      installed) headers_installed "$3" ;;
      *) die "unknown suite '$2' (bookworm-backports or installed)" ;;
    esac ;;
  modules)
    [[ $# -eq 2 ]] || die "usage: kernel_cache.sh modules KVER"
    modules "$2" ;;
  deb)
    [[ $# -eq 3 && $2 == bookworm-backports ]] || die "usage: kernel_cache.sh deb bookworm-backports PKG"
    deb_backports "$3" ;;
  *) die "usage: kernel_cache.sh headers SUITE SERIES | modules KVER | deb bookworm-backports PKG" ;;
esac
