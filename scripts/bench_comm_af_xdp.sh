#!/usr/bin/env bash
# Throughput of the live emulator's comm core over a veth pair with net_af_xdp
# (or net_af_packet), driven by real flexplane-endpoint processes.
#
#   scripts/bench_comm_af_xdp.sh [BUILD_DIR] [ENDPOINTS] [SECONDS] [af_xdp|af_packet] [LINK_GBPS]
#
# Creates netns fpbx_emu (emulator, veth fpbxe, no IP) and fpbx_ep (all
# endpoints, veth fpbxh with 10.78.0.10+i/24, tx checksum offload off), runs
# `flexplane-emulator live` on one veth end and ENDPOINTS `flexplane-endpoint`s
# (a saturating workload: all-to-all, load 0.95, 64-packet flows), then prints
# the comm core's requests/s from live_stats.csv (peak and mean over the
# middle of the run) and the endpoints' exit codes. Everything stays inside
# the two namespaces, which are deleted at exit. Needs root.
#
# On a 2-CPU machine the endpoints, the kernel and the emulator share the
# CPUs: the figure is a lower bound of what the comm core can do (the in-process
# bound is `flexplane_bench --benchmark_filter=CommCore`).
set -euo pipefail
BUILD=${1:-build-live}
N=${2:-4}
SECS=${3:-10}
VDEV=${4:-af_xdp}
GBPS=${5:-1}
EMU=fpbx_emu; EPN=fpbx_ep
BIN=$(cd "$BUILD" && pwd)
[ -x "$BIN/flexplane-emulator" ] && [ -x "$BIN/flexplane-endpoint" ] || {
  echo "need $BIN/flexplane-emulator and $BIN/flexplane-endpoint" >&2; exit 2; }
WORK=$(mktemp -d /tmp/fp-bench-xdp.XXXXXX)
cleanup() {
  for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done
  ip netns del $EMU 2>/dev/null || true
  ip netns del $EPN 2>/dev/null || true
}
trap cleanup EXIT
cleanup
ip netns add $EMU; ip netns add $EPN
ip link add fpbxe type veth peer name fpbxh
ip link set fpbxe netns $EMU; ip link set fpbxh netns $EPN
ip -n $EMU link set fpbxe up
ip -n $EPN link set lo up
for i in $(seq 0 $((N - 1))); do ip -n $EPN addr add 10.78.0.$((10 + i))/24 dev fpbxh; done
ip -n $EPN link set fpbxh up
ip netns exec $EPN ethtool -K fpbxh tx off >/dev/null   # see docs/live.md

cat > "$WORK/bench.yaml" <<YAML
description: comm core throughput over $VDEV, $N endpoints
seed: 1
network: {link_rate_gbps: $GBPS, abstract_packet_bytes: 1500}
topology: {kind: single_rack, endpoints: $N, link_latency_timeslots: 1}
routers:
  default: {scheme: droptail, queue_manager: {capacity_pkts: 256}}
workload: {kind: poisson, pattern: all_to_all, load: 0.95, fixed_size_pkts: 64}
run: {duration_ms: $((SECS * 1000)), cores: 1}
live:
  emulator_ip: 10.78.0.2
  first_endpoint_ip: 10.78.0.10
  endpoint_queue_pkts: 4096
  stats_interval_s: 0.5
output: {dir: $WORK/emu}
YAML

case $VDEV in
  af_xdp) DEV="--vdev=net_af_xdp0,iface=fpbxe" ;;
  af_packet) DEV="--vdev=net_af_packet0,iface=fpbxe" ;;
  *) echo "vdev must be af_xdp or af_packet" >&2; exit 2 ;;
esac
ip netns exec $EMU "$BIN/flexplane-emulator" live "$WORK/bench.yaml" --out "$WORK/emu" \
  --duration-s $((SECS + 6)) --idle-sleep-us 0 -q -- -l 0-1 --no-huge -m 512 --no-pci --no-shconf \
  --file-prefix fpbx --log-level=warning "$DEV" > "$WORK/emu.log" 2>&1 &
EMU_PID=$!
for _ in $(seq 100); do grep -q "listening on" "$WORK/emu.log" && break; sleep 0.1; done
grep -q "listening on" "$WORK/emu.log" || { cat "$WORK/emu.log"; exit 1; }
START=$(( $(date +%s%N) + 1000000000 ))
PIDS=()
for i in $(seq 0 $((N - 1))); do
  ip netns exec $EPN "$BIN/flexplane-endpoint" --config "$WORK/bench.yaml" --id "$i" \
    --emulator 10.78.0.2 --bind 10.78.0.$((10 + i)) --start-at $START --duration-s $((SECS + 4)) \
    --out "$WORK/ep$i" > "$WORK/ep$i.log" 2>&1 &
  PIDS+=($!)
done
RCS=""
for p in "${PIDS[@]}"; do if wait "$p"; then RCS="$RCS 0"; else RCS="$RCS $?"; fi; done
wait $EMU_PID || true
echo "endpoint exit codes:$RCS"
tail -1 "$WORK/emu.log"
python3 - "$WORK/emu/live_stats.csv" "$SECS" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
secs = float(sys.argv[2])
mid = [r for r in rows if 2.0 <= float(r["time_s"]) <= 1.0 + secs]
rates = [float(r["requests_per_s"]) for r in rows]
mr = [float(r["requests_per_s"]) for r in mid] or [0]
late = [k for k in rows[-1] if k.endswith("_late")]
print(f"comm core requests/s: peak {max(rates):.0f}, mean over the run's middle {sum(mr)/len(mr):.0f}; "
      f"requests {rows[-1]['requests']}, malformed {rows[-1]['malformed']}, "
      + ", ".join(f"{k}={rows[-1][k]}" for k in late))
PY
echo "results in $WORK"
