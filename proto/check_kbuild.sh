#!/usr/bin/env bash
# Build check: compile the protocol core, unchanged, as an out-of-tree kernel
# module against installed kernel headers (kbuild, -Werror, W=1). Nothing is
# loaded. Skips (exit 0) when no headers are installed.
#
#   proto/check_kbuild.sh [kernel build dir]
# default: /lib/modules/$(uname -r)/build, else the newest /usr/src/linux-headers-*-amd64
# (Debian 12: apt-get install linux-headers-amd64).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kdir=${1:-}
if [ -z "$kdir" ]; then
  if [ -d "/lib/modules/$(uname -r)/build" ]; then
    kdir=/lib/modules/$(uname -r)/build
  else
    kdir=$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -1 || true)
  fi
fi
if [ -z "$kdir" ] || [ ! -d "$kdir" ]; then
  echo "check_kbuild: no kernel headers found, skipping"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for f in fp_platform.h fp_wire.h fp_wire.c fp_gbn.h fp_gbn.c fp_endpoint_conn.h \
         fp_endpoint_conn.c fp_emu_conn.h fp_emu_conn.c; do
  cp "$here/$f" "$work/"
done
cat >"$work/fpk_main.c" <<'C'
// The protocol core inside a module: one handshake between two connections.
#include <linux/module.h>
#include <linux/kernel.h>
#include "fp_endpoint_conn.h"
#include "fp_emu_conn.h"

static struct fp_ep_slot slots[8];
static struct fp_verdict ring[8];
static struct fp_ep_conn ep;
static struct fp_emu_conn emu;

static int __init fpk_init(void)
{
	struct fp_ep_config ec;
	struct fp_emu_config mc;
	u8 buf[128];
	int n;

	fp_ep_config_default(&ec);
	ec.instance = get_random_u32() | 1;
	fp_emu_config_default(&mc);
	if (fp_ep_conn_init(&ep, &ec, slots, 8, 0) || fp_emu_conn_init(&emu, &mc, ring, 8, 0))
		return -EINVAL;
	n = fp_ep_poll(&ep, 0, buf, sizeof(buf));
	if (n > 0)
		fp_emu_rx(&emu, buf, n, 0, NULL, NULL);
	n = fp_emu_poll(&emu, 0, buf, sizeof(buf));
	if (n > 0)
		fp_ep_rx(&ep, buf, n, 0, NULL, NULL);
	pr_info("fpk: endpoint state %d (%s)\n", ep.state, fp_strerror(0));
	return 0;
}

static void __exit fpk_exit(void) {}
module_init(fpk_init);
module_exit(fpk_exit);
MODULE_LICENSE("Dual MIT/GPL");
C
cat >"$work/Kbuild" <<'K'
obj-m := fpk.o
fpk-y := fpk_main.o fp_wire.o fp_gbn.o fp_endpoint_conn.o fp_emu_conn.o
ccflags-y := -Werror
K
echo "check_kbuild: building against $kdir"
make -C "$kdir" M="$work" W=1 modules
test -f "$work/fpk.ko"
echo "check_kbuild: ok"
