#!/usr/bin/env bash
# Installs what flexplane needs on Debian 12 (bookworm), idempotently:
# apt packages only when one is missing, and the project-local Python venv.
# Usage: scripts/install_deps.sh [--python-only]
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libyaml-cpp-dev libcli11-dev catch2 libbenchmark-dev
  dpdk libdpdk-dev
  clang libclang-rt-14-dev llvm linux-headers-amd64
  openmpi-bin libopenmpi-dev                         # runs across processes (docs/mpi.md)
  iproute2 ethtool nftables
  libnetfilter-queue-dev libmnl-dev iptables
  python3 python3-venv
  qemu-system-x86 busybox-static cpio kmod iperf3   # kmod/vm: the VM tests
  dkms openssh-client dropbear-bin                   # packaging/ and the lab's hosts backend (SSH guests)
  pahole                                             # packaging/: BTF of modules built against 6.12 headers
)

if [[ "${1:-}" != "--python-only" ]]; then
  missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "install_deps: installing ${missing[*]}"
    SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
    $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

bash plots/setup_venv.sh
