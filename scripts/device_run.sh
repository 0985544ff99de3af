#!/usr/bin/env bash
# One call's worth of live measurements on a lent many-core machine (issue
# 22; issue 24's scaling rows too), in the order of what they are worth:
#   1. probe   what the kernel offers the netns lab (bridge netfilter,
#              NFQUEUE through iptables-nft or -legacy, AF_XDP)
#   2. capacity  scripts/device_capacity.sh (static emulator, synthetic endpoints)
#   3. lab     real TCP: one bulk flow at 0.1-10 Gbit/s (experiments/lab/bulk_rates.yaml),
#              then the thesis' 5 -> 1 at 1 Gbit/s (DropTail and DCTCP marking)
#   4. rtt     scripts/bench_live_rtt.sh with busy polling on dedicated cores
#   5. scaling scripts/bench_scaling.sh on fat trees, 1..16 cores (issue 24)
# Each part has a time box and is skipped when too little of BUDGET_S is
# left. The machine has nothing of ours: run scripts/device_bundle.sh here
# first and carry .device (it is installed at /opt/flexplane-device).
#   scripts/device_run.sh RESULTS_DIR [PARTS]      (root; PARTS default "probe capacity lab rtt scaling")
# Writes RESULTS_DIR/summary.txt (everything printed) and RESULTS_DIR/results.tar.gz.
set -u
cd "$(dirname "$0")/.."
RES=${1:?usage: device_run.sh RESULTS_DIR [PARTS]}
PARTS=${2:-"probe capacity lab rtt scaling"}
BUDGET_S=${BUDGET_S:-500}
B=/opt/flexplane-device
W=/tmp/flexplane-device-run
mkdir -p "$RES"
exec > >(tee "$RES/summary.txt") 2>&1
rm -rf "$W"; mkdir -p "$W"
[[ -d .device ]] || { echo "device_run: no .device (scripts/device_bundle.sh, then carry it)"; exit 2; }
rm -rf "$B"; cp -a .device "$B"
mkdir -p /usr/lib/x86_64-linux-gnu/dpdk
[[ -e /usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0 ]] || ln -s "$B/pmds" /usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0
[[ -x /usr/bin/time ]] || ln -s "$B/bin/time" /usr/bin/time  # bench_scaling.sh: peak memory from GNU time
export PATH=$B/bin:$PATH XTABLES_LIBDIR=$B/xtables PYTHONUNBUFFERED=1
left() { echo $(( BUDGET_S - SECONDS )); }
part() { echo; echo "=== $1 (t=${SECONDS}s, $(left)s left) ==="; }
has() { [[ " $PARTS " == *" $1 "* ]]; }
box() {  # SECONDS_MAX cmd... : run under a time box no longer than what is left
  local t=$1; shift
  (( t > $(left) - 5 )) && t=$(( $(left) - 5 ))
  (( t < 10 )) && { echo "(skipped, ${t}s left: $*)"; return 1; }
  timeout -k 5 "$t" "$@"; local rc=$?
  (( rc == 124 )) && echo "(time box of ${t}s reached: $*)"
  return $rc
}

part machine
echo "$(nproc) CPUs; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2); $(free -g | awk '/Mem/ {print $2}') GiB; kernel $(uname -r)"
echo "bundle from commit $(cat $B/COMMIT 2>/dev/null); tree at $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
python3 -c 'import sys, yaml; print("python", sys.version.split()[0], "yaml", yaml.__version__)'
lscpu 2>/dev/null | grep -E 'Thread|Core|Socket|NUMA node\(s\)|MHz' | tr -s ' '

QUEUE_AT=fabric
if has probe; then
  part probe
  ns=fpprobe
  ip netns add $ns && ip -n $ns link add br0 type bridge && ip -n $ns link set br0 up
  ip -n $ns link add pa type veth peer name pb && ip -n $ns link set pa master br0
  if ip netns exec $ns sysctl -qw net.bridge.bridge-nf-call-iptables=1; then echo "bridge netfilter: yes"
  else echo "bridge netfilter: NO (the lab queues in the hosts' namespaces: lab.queue_at host)"; QUEUE_AT=host; fi
  rule=(-A FORWARD -m physdev --physdev-in pa -j NFQUEUE --queue-num 0)
  [[ $QUEUE_AT == host ]] && rule=(-t mangle -A POSTROUTING -o pa -j NFQUEUE --queue-num 0)
  if ip netns exec $ns iptables "${rule[@]}"; then echo "iptables (nft): NFQUEUE rule ok"
  elif ip netns exec $ns iptables-legacy "${rule[@]}"; then
    echo "iptables (nft) refused; iptables-legacy: ok (used from here on)"
    for n in iptables ip6tables; do ln -sfn xtables-legacy-multi "$B/bin/$n"; done
  else echo "NFQUEUE rule refused by both iptables backends: the lab will fail"; fi
  ip netns exec $ns iptables -S 2>&1 | head -5
  ip netns del $ns
  grep -q xdp /proc/kallsyms 2>/dev/null && echo "kallsyms has xdp symbols"
  cat /proc/sys/net/ipv4/tcp_available_congestion_control
fi

if has capacity; then
  part "capacity (issue 22 item 1)"
  CORES=${CORES:-"1 2 4 8 12"} LOADS=${LOADS:-"0.05 0.1 0.15 0.2 0.3"} \
    box 150 scripts/device_capacity.sh "$B/bin/flexplane-emulator-static" "$W/capacity"
fi

if has lab; then
  part "lab: real TCP at speed (issue 22 item 2), queue_at $QUEUE_AT"
  cp experiments/lab/bulk_rates.yaml "$W/bulk_rates.yaml"
  [[ $QUEUE_AT == host ]] && printf 'lab: {queue_at: host}\n' >> "$W/bulk_rates.yaml"
  box 120 scripts/lab run "$W/bulk_rates.yaml" --bin-dir "$B/bin" --out "$W/lab_rates" --keep-going
  sed -e 's/link_rate_gbps: 0.05/link_rate_gbps: 1/' -e 's/^duration_s: .*/duration_s: 8/' \
      -e 's/^warmup_s: .*/warmup_s: 3/' -e 's/^repetitions: .*/repetitions: 1/' \
      experiments/lab/thesis_bulk_5to1.yaml > "$W/bulk_5to1_1g.yaml"
  printf 'drain_s: 2\n' >> "$W/bulk_5to1_1g.yaml"
  [[ $QUEUE_AT == host ]] && printf 'lab: {queue_at: host}\n' >> "$W/bulk_5to1_1g.yaml"
  box 60 scripts/lab run "$W/bulk_5to1_1g.yaml" --bin-dir "$B/bin" --out "$W/lab_5to1" --keep-going \
    --variant droptail --variant dctcp_marking_ecn_cubic
fi

if has rtt; then
  part "unloaded round trip on dedicated cores (issue 22 item 3)"
  STAGES=1 VARIANTS="sleep comm-busy all-busy" box 70 scripts/bench_live_rtt.sh "$B/bin" 2000 1000
  cp -r /tmp/bench_live_rtt.* "$W/" 2>/dev/null
fi

if has scaling; then
  part "virtual time on 1..16 cores (issue 24)"
  box 60 scripts/bench_scaling.sh -b "$B/bin/flexplane-emulator-static" -r 1 -p grouped \
    experiments/configs/fat_tree_k16_dctcp_5ms.yaml 1 2 4 8 16
  box 30 scripts/bench_scaling.sh -b "$B/bin/flexplane-emulator-static" -r 2 -p grouped \
    experiments/configs/fat_tree_k8_dctcp_5ms.yaml 1 2 4 8 16
  box 90 scripts/bench_scaling.sh -b "$B/bin/flexplane-emulator-static" -r 1 -p grouped \
    experiments/configs/fat_tree_k16_dctcp.yaml 16 8 4 1
  box 80 scripts/bench_scaling.sh -b "$B/bin/flexplane-emulator-static" -r 1 -p grouped \
    experiments/configs/fat_tree_k32_dctcp.yaml 16 8
fi

part "packing results"
find "$W" -type f -size +4M -printf '(left out, over 4 MB: %p %s bytes)\n' | head -20
tar -C "$W" --exclude='*.pcap' -czf "$RES/results.tar.gz" --exclude-from=<(find "$W" -type f -size +4M -printf '%P\n') . \
  && ls -la "$RES"
echo "done at t=${SECONDS}s"; sleep 1
