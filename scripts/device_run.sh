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
#   scripts/device_run.sh RESULTS_DIR [PARTS]      (root; PARTS default "probe capacity lab rtt scaling";
#     also capacity-ab: OLD_STATIC's emulator, bundled, against this one)
# Knobs: BUDGET_S, CORES, LOADS, LAB_5TO1_GBPS, RTT_VARIANTS, VDEVS, SCALING_CORES, SCALING_ROUNDS, SCALING_SHORT.
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
export PATH=$B/bin:$PATH XTABLES_LIBDIR=$B/xtables LIBXDP_OBJECT_PATH=$B/bpf PYTHONUNBUFFERED=1
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
echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource) (of: $(cat /sys/devices/system/clocksource/clocksource0/available_clocksource))"
echo "TSC flags: $(grep -m1 -o -w 'constant_tsc\|nonstop_tsc\|tsc_known_freq\|tsc_reliable' /proc/cpuinfo | tr '\n' ' ')"
# SCHED_FIFO may be refused even to root (a VM's cgroup without real-time
# budget): the lab's runs then go without (emulator.realtime_priority 0).
RT_OK=1; chrt -f 20 true 2>/dev/null || { RT_OK=0; echo "SCHED_FIFO: refused (lab runs use emulator.realtime_priority: 0)"; }
no_rt() { (( RT_OK )) || sed -i 's/^emulator: {/emulator: {realtime_priority: 0, /' "$1"; }

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

if has capacity-ab && [[ -x $B/bin/flexplane-emulator-static-old ]]; then
  part "capacity A/B: the older static emulator against this one, alternated"
  printf '%-4s %5s %5s | %8s %9s %7s %9s | %s\n' bin cores load "late %" "lag us" "noise %" "clock ns" "delivered Gbit/s"
  for round in 1 2; do for cl in "1 0.05" "1 0.1" "2 0.05" "4 0.1"; do set -- $cl
    for bin in old new; do
      exe=$B/bin/flexplane-emulator-static; [[ $bin == old ]] && exe=$exe-old
      sed "s/^  racks: .*/  racks: $(( 2 * $1 ))/" experiments/configs/live_capacity.yaml > "$W/ab.yaml"
      d=$W/ab_${bin}_c$1_l$2_r$round
      box 20 "$exe" capacity "$W/ab.yaml" --cores "$1" --drivers $(( ($1 + 2) / 3 )) --load "$2" --duration-s 1 --out "$d" --quiet > "$d.log" 2>&1
      awk -v b=$bin -v c=$1 -v l=$2 '$1 == "late_fraction:" {la = $2} $1 == "max_lag_us:" {lag = $2} $1 == "gap_fraction:" {nz = $2}
        $1 == "clock_read_ns:" {ck = $2} $1 == "delivered_gbps:" {de = $2}
        END {printf "%-4s %5d %5s | %8.3f %9.1f %7.2f %9s | %.1f\n", b, c, l, 100 * la, lag, 100 * nz, (ck == "" ? "-" : sprintf("%.0f", ck)), de}' "$d/capacity.yaml"
    done
  done; done
fi

if has capacity-diag; then
  part "capacity on several engine cores: cross-core window (link latency) and timeslot length"
  for v in "2 1 10" "2 4 10" "2 16 10" "2 1 1" "4 16 10" "8 16 10"; do set -- $v
    sed -e "s/^  racks: .*/  racks: $(( 2 * $1 ))/" -e "s/link_latency_timeslots: 1/link_latency_timeslots: $2/" \
        -e "s/link_rate_gbps: 10/link_rate_gbps: $3/" experiments/configs/live_capacity.yaml > "$W/diag.yaml"
    d=$W/diag_c$1_lat$2_g$3
    box 20 "$B/bin/flexplane-emulator-static" capacity "$W/diag.yaml" --cores "$1" --drivers $(( ($1 + 2) / 3 )) --load 0.05 \
      --duration-s 1 --out "$d" --quiet > "$d.log" 2>&1
    echo "cores $1, link latency $2 timeslots, $3 Gbit/s: $(tail -1 "$d.log" | cut -d: -f2- | cut -c1-230)"
  done
fi

if has capacity; then
  part "capacity (issue 22 item 1)"
  CORES=${CORES:-"1 2 4 8 12"} LOADS=${LOADS:-"0.05 0.1 0.15 0.2 0.3"} \
    box 150 scripts/device_capacity.sh "$B/bin/flexplane-emulator-static" "$W/capacity"
fi

if has lab; then
  part "lab: real TCP at speed (issue 22 item 2), queue_at $QUEUE_AT"
  cp experiments/lab/bulk_rates.yaml "$W/bulk_rates.yaml"; no_rt "$W/bulk_rates.yaml"
  [[ $QUEUE_AT == host ]] && printf 'lab: {queue_at: host}\n' >> "$W/bulk_rates.yaml"
  box 120 scripts/lab run "$W/bulk_rates.yaml" --bin-dir "$B/bin" --out "$W/lab_rates" --keep-going
  for g in ${LAB_5TO1_GBPS:-1}; do
    f=$W/bulk_5to1_${g}g.yaml
    sed -e "s/link_rate_gbps: 0.05/link_rate_gbps: $g/" -e 's/^duration_s: .*/duration_s: 8/' \
        -e 's/^warmup_s: .*/warmup_s: 3/' -e 's/^repetitions: .*/repetitions: 1/' \
        experiments/lab/thesis_bulk_5to1.yaml > "$f"
    printf 'drain_s: 2\n' >> "$f"; no_rt "$f"
    [[ $QUEUE_AT == host ]] && printf 'lab: {queue_at: host}\n' >> "$f"
    box 60 scripts/lab run "$f" --bin-dir "$B/bin" --out "$W/lab_5to1_${g}g" --keep-going \
      --variant droptail --variant dctcp_marking_ecn_cubic
  done
fi

if has rtt; then
  part "unloaded round trip on dedicated cores (issue 22 item 3)"
  STAGES=1 VARIANTS=${RTT_VARIANTS:-"sleep comm-busy all-busy"} box 70 scripts/bench_live_rtt.sh "$B/bin" 2000 1000
  cp -r /tmp/bench_live_rtt.* "$W/" 2>/dev/null
fi

if has scaling; then
  part "virtual time on 1..16 cores (issue 24)"
  box 60 scripts/bench_scaling.sh -b "$B/bin/flexplane-emulator-static" -r ${SCALING_ROUNDS:-1} -p grouped \
    experiments/configs/fat_tree_k16_dctcp_5ms.yaml ${SCALING_CORES:-1 2 4 8 16}
  [[ -n ${SCALING_SHORT:-} ]] && SKIP_LONG=1
  [[ -z ${SKIP_LONG:-} ]] && box 30 scripts/bench_scaling.sh -b "$B/bin/flexplane-emulator-static" -r 2 -p grouped \
    experiments/configs/fat_tree_k8_dctcp_5ms.yaml 1 2 4 8 16
  [[ -z ${SKIP_LONG:-} ]] && box 90 scripts/bench_scaling.sh -b "$B/bin/flexplane-emulator-static" -r 1 -p grouped \
    experiments/configs/fat_tree_k16_dctcp.yaml 16 8 4 1
  [[ -z ${SKIP_LONG:-} ]] && box 80 scripts/bench_scaling.sh -b "$B/bin/flexplane-emulator-static" -r 1 -p grouped \
    experiments/configs/fat_tree_k32_dctcp.yaml 16 8
fi

part "packing results"
find "$W" -type f -size +4M -printf '(left out, over 4 MB: %p %s bytes)\n' | head -20
tar -C "$W" --exclude='*.pcap' -czf "$RES/results.tar.gz" --exclude-from=<(find "$W" -type f -size +4M -printf '%P\n') . \
  && ls -la "$RES"
echo "done at t=${SECONDS}s"; sleep 1
