#!/usr/bin/env bash
# checkpatch.pl --strict on the module's sources (`make -C kmod check`).
#   kmod/checkpatch.sh CACHE_DIR                    fetch (if needed), print its path
#   kmod/checkpatch.sh CACHE_DIR KDIR FILE...       fetch (if needed), check FILEs
# checkpatch is not in Debian's headers packages. Cold: `apt-get download
# linux-source-6.1` (~140 MB) and only scripts/checkpatch.pl, spelling.txt
# and const_structs.checkpatch streamed out of its tarball into CACHE_DIR;
# nothing else is written. Warm: a test for the cached files.
# CHECKPATCH=/path/to/checkpatch.pl skips the fetch.
#
# The check runs in a temporary folder: checkpatch writes its CamelCase
# cache (.checkpatch-camelcase.*) into the current folder, and reads .git
# there. --root names the kernel headers (KDIR, or the -common folder Debian's
# KDIR includes), so kernel identifiers such as struct Qdisc are known, not
# CamelCase of ours. Exit status: 0 only with no error, warning or check.
set -euo pipefail
CACHE=$(realpath -m "${1:?usage: kmod/checkpatch.sh CACHE_DIR [KDIR FILE...]}")
shift
PKG=${CHECKPATCH_PKG:-linux-source-6.1}
FILES3=(checkpatch.pl spelling.txt const_structs.checkpatch)

fetch() {
  local f ok=1 tmp deb
  for f in "${FILES3[@]}"; do [ -f "$CACHE/scripts/$f" ] || ok=0; done
  [ $ok = 1 ] && return 0
  command -v apt-get >/dev/null ||
    { echo "checkpatch.sh: apt-get not found: set CHECKPATCH=/path/to/checkpatch.pl" >&2; return 1; }
  tmp=$(mktemp -d)
  # apt-get download writes into the current folder, as user _apt if it can
  chown _apt "$tmp" 2>/dev/null || true
  if ! (cd "$tmp" && apt-get download -q "$PKG" >&2); then
    rm -rf "$tmp"
    echo "checkpatch.sh: apt-get download $PKG failed (apt-get update? network?)" >&2
    return 1
  fi
  deb=$(ls "$tmp"/*.deb)
  mkdir -p "$tmp/src"
  # The deb holds usr/src/linux-source-X.tar.xz: stream it out and extract three files.
  dpkg-deb --fsys-tarfile "$deb" | tar -xO --wildcards './usr/src/linux-source-*.tar.xz' |
    tar -xJ -C "$tmp/src" --wildcards --strip-components=1 "${FILES3[@]/#/*/scripts/}"
  for f in "${FILES3[@]}"; do
    [ -f "$tmp/src/scripts/$f" ] || { echo "checkpatch.sh: scripts/$f not in $deb" >&2; rm -rf "$tmp"; return 1; }
  done
  mkdir -p "$CACHE/scripts"
  for f in "${FILES3[@]}"; do cp "$tmp/src/scripts/$f" "$CACHE/scripts/"; done
  basename "$deb" > "$CACHE/SOURCE"
  rm -rf "$tmp"
}

if [ -n "${CHECKPATCH:-}" ]; then
  CP=$CHECKPATCH
else
  fetch
  CP=$CACHE/scripts/checkpatch.pl
fi
[ $# -eq 0 ] && { echo "$CP"; exit 0; }

KDIR=$1
shift
ROOT=$KDIR
if [ ! -f "$ROOT/include/linux/netdevice.h" ]; then  # Debian: KDIR/Makefile includes the -common folder
  ROOT=$(sed -n 's|^include \(/.*\)/Makefile$|\1|p' "$KDIR/Makefile" 2>/dev/null | head -1)
  [ -n "$ROOT" ] && [ -f "$ROOT/include/linux/netdevice.h" ] ||
    { echo "checkpatch.sh: no kernel headers with include/linux/netdevice.h at $KDIR" >&2; exit 1; }
fi
files=()
for f in "$@"; do files+=("$(realpath "$f")"); done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
perl "$(realpath "$CP")" --no-tree --root="$ROOT" --strict --terse --show-types -f "${files[@]}"
echo "checkpatch --strict: 0 errors, 0 warnings, 0 checks in ${#files[@]} files ($(cat "$CACHE/SOURCE" 2>/dev/null || echo "$CP"))"
