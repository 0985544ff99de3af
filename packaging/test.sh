#!/usr/bin/env bash
# The packaging suite (tests/packaging; root): builds the .debs, installs
# flexplane-dkms (the DKMS build) and flexplane-tc for real with apt, boots
# Debian's 6.1 kernel under QEMU to `modprobe flexplane` and attach the qdisc
# with the packaged plugin, purges both packages and checks nothing is left,
# checks check_tc_abi.sh's refusals and builds the module against each
# supported kernel's headers (packaging/build_kernels.sh).
#   packaging/test.sh [OUT_DIR] [pytest args...]     (default build/packaging)
# Downloads (kernel headers and image, backports iproute2) are cached in
# OUT_DIR/cache (FLEXPLANE_KERNEL_CACHE): a second run downloads nothing.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(realpath -m "${1:-$ROOT/build/packaging}"); shift || true
export FLEXPLANE_PKG_OUT=$OUT
export FLEXPLANE_KERNEL_CACHE=${FLEXPLANE_KERNEL_CACHE:-$OUT/cache}
PY=$ROOT/.venv/bin/python
[[ -x $PY ]] || PY=python3
mkdir -p "$OUT"
exec "$PY" -m pytest -q -p no:cacheprovider "$ROOT/tests/packaging" "$@"
