#!/bin/bash
# Light-load request -> verdict round trip of live emulation (docs/live.md,
# "Endpoint driver: light-load round trip").
#
#   [LINK_GBPS=10] [VARIANTS="sleep rt-sleep comm-busy"] [VDEVS="net_af_packet0 net_af_xdp0"] [STAGES=1] \
#     scripts/bench_live_rtt.sh [BUILD_DIR] [N_REQUESTS] [SPACING_US]
#
# Runs `flexplane-emulator live` in a namespace on a veth opened by DPDK
# (net_af_packet, then net_af_xdp) and one `flexplane-endpoint` in another
# namespace. The endpoint sends N single-packet flows SPACING_US apart, so
# there is at most one request in flight: each one finds an idle network.
# For every request the driver records when it handed the request to the
# socket and when the verdict came back (flows.csv: network_fct_us); the
# script prints percentiles of that round trip. It contains the emulated
# in-network time of one packet (ideal_fct_us: (1 + path latency) timeslots
# of 1.2 us at 10 Gbit/s) plus the real cost: two veth crossings, the DPDK
# comm core, the engine's real-time pacing and both sides' wake-ups.
#
# STAGES=1 also prints where each round trip went (scripts/live_stages.py:
# the emulator's stages.csv joined with the endpoint's requests.csv).
#
# Variants: default sleeping loops on both sides; then the emulator's comm
# core busy-polling (--idle-sleep-us 0); then the endpoint busy-polling too.
# Needs root. Cleans up its namespaces on exit.
set -eu
BUILD=${1:-build}
N=${2:-2000}
SPACING_US=${3:-1000}
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
EMU=$BUILD/flexplane-emulator
EP=$BUILD/flexplane-endpoint
[ "$(id -u)" = 0 ] || { echo "bench_live_rtt: needs root (network namespaces, DPDK af_packet/af_xdp)" >&2; exit 2; }
[ -x "$EMU" ] && [ -x "$EP" ] || { echo "bench_live_rtt: build $EMU and $EP first" >&2; exit 2; }
PY=python3
[ -x .venv/bin/python ] && PY=.venv/bin/python

P=fprtt$$
WORK=$(mktemp -d /tmp/bench_live_rtt.XXXXXX)
cleanup() {
  [ -n "${EMU_PID:-}" ] && kill -INT "$EMU_PID" 2>/dev/null && sleep 1 && kill -9 "$EMU_PID" 2>/dev/null
  ip netns del ${P}emu 2>/dev/null || true
  ip netns del ${P}ep 2>/dev/null || true
  rm -rf /run/dpdk/${P}*  # the emulators' EAL runtime folders (--file-prefix=${P}<label>)
}
trap cleanup EXIT

ip netns add ${P}emu
ip netns add ${P}ep
ip link add vemu netns ${P}emu type veth peer name veth0 netns ${P}ep
for ns in ${P}emu ${P}ep; do
  ip -n $ns link set lo up
  ip netns exec $ns sysctl -qw net.ipv6.conf.all.disable_ipv6=1
done
ip -n ${P}emu link set vemu up
ip -n ${P}ep addr add 10.77.0.10/24 dev veth0
ip -n ${P}ep link set veth0 up
ip netns exec ${P}ep ethtool -K veth0 tx off >/dev/null  # full UDP checksums (RECIPES.md section 2)

LINK_GBPS=${LINK_GBPS:-10}  # 10: 1.2 us timeslots; a busy machine may need 1 (12 us) for the engine to keep real time
TS_NS=$(( 12000 / LINK_GBPS ))
SPACING_TS=$(( SPACING_US * 1000 / TS_NS ))
DURATION_MS=$(( (N + 2) * SPACING_US / 1000 + 10 ))  # trace flows must start before run.duration
cat > $WORK/rtt.yaml <<EOF
description: light-load round trip (2 endpoints, idle network)
seed: 1
network: {link_rate_gbps: $LINK_GBPS}
topology: {kind: single_rack, endpoints: 2}
routers: {default: {scheme: droptail}}
workload: {kind: trace, trace: rtt_trace.csv}
run: {duration_ms: $DURATION_MS, drain_ms: 1}
live: {sleep_when_ahead: true, stats_interval_s: 10}
EOF
{
  echo "flow_id,src,dst,size_pkts,start_timeslot"
  for ((i = 0; i < N; i++)); do echo "$i,0,1,1,$(( (i + 1) * SPACING_TS ))"; done
} > $WORK/rtt_trace.csv

run_one() {  # vdev label emulator-args endpoint-args [prefix command, e.g. chrt -f 20]
  local vdev=$1 label=$2 emu_args=$3 ep_args=$4 pre=${5:-}
  local out=$WORK/$label
  mkdir -p $out
  ip netns exec ${P}emu $pre $EMU live $WORK/rtt.yaml --out $out/emu --duration-s 600 -q --trace-stages $emu_args -- \
    -l 0-1 --no-huge -m 512 --no-pci --no-shconf --file-prefix=${P}$label --vdev=$vdev,iface=vemu \
    > $out/emu.log 2>&1 &
  EMU_PID=$!
  for _ in $(seq 100); do grep -q "listening on" $out/emu.log && break; sleep 0.1; done
  grep -q "listening on" $out/emu.log || { cat $out/emu.log; exit 1; }
  ip netns exec ${P}ep $pre $EP --config $WORK/rtt.yaml --id 0 --start-at $(( $(date +%s%N) + 300000000 )) \
    --duration-s 120 --out $out/ep -q --trace-stages $ep_args > $out/ep.log 2>&1 || { cat $out/ep.log; exit 1; }
  kill -INT $EMU_PID; wait $EMU_PID || true; EMU_PID=
  [ -n "${STAGES:-}" ] && $PY scripts/live_stages.py $out/emu $out/ep --label "  $label  "
  $PY - "$out/ep/flows.csv" "$vdev" "$label" <<'PYEOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
rtt = sorted(float(r["network_fct_us"]) for r in rows if r["finished"] == "1")
ideal = float(rows[0]["ideal_fct_us"])
rtt = rtt[len(rtt) // 20:]  # skip the first 5% (ARP, session setup, warm-up)
def pct(p): return rtt[min(len(rtt) - 1, int(p / 100 * len(rtt)))]
print(f"{sys.argv[2]:15s} {sys.argv[3]:22s} n={len(rtt):5d}  p50 {pct(50):8.1f} us  p90 {pct(90):8.1f} us  "
      f"p99 {pct(99):8.1f} us  max {rtt[-1]:8.1f} us  (emulated part {ideal:.1f} us)")
PYEOF
}

echo "request -> verdict round trip, $N requests one at a time, ${SPACING_US} us apart, ${LINK_GBPS} Gbit/s links" \
  "($(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg))"
VARIANTS=${VARIANTS:-"sleep rt-sleep comm-busy"}
for vdev in ${VDEVS:-net_af_packet0 net_af_xdp0}; do
  for v in $VARIANTS; do
    case $v in
      sleep) run_one $vdev sleep "" "" ;;                          # defaults: both sides sleep when idle
      rt-sleep) run_one $vdev rt-sleep "" "" "chrt -f 20" ;;       # same, SCHED_FIFO (no waiting behind other jobs)
      comm-busy) run_one $vdev comm-busy "--idle-sleep-us 0" "" ;; # the emulator's comm core busy-polls
      all-busy) run_one $vdev all-busy "--idle-sleep-us 0" "--busy-poll" ;;  # needs >= 4 free cores
    esac
  done
done
echo "(per-run outputs: $WORK)"
