#!/usr/bin/env bash
# The ns-3 side of flexplane's transport validation (docs/validation.md):
# builds validation/ns3_star.cc against Debian's ns-3 3.37 and runs the
# reference scenarios, each timed with /usr/bin/time -v.
#
#   validation/run_ns3.sh [--install] [--out DIR] [--trace CSV] [--all | SCENARIO...]
#   validation/run_ns3.sh --list
#   validation/run_ns3.sh --build       (only build it: build-validation/ns3_star)
#
#   --install   install ns3 libns3-dev libgsl-dev with apt if missing (not part
#               of `make test`: ns-3 is only needed here)
#   --out DIR   results root (default results/validation/ns3); one folder per
#               scenario with flows.csv, occupancy.csv, counters.csv,
#               summary.yaml, time.txt (/usr/bin/time -v) and summary.md
#   --trace CSV the web-search scenarios replay this trace instead of the
#               committed one (validation/ensemble.sh: perturbed copies)
#   --all       every scenario in --list (about an hour, plus 4-40 minutes for
#               fat-tree-k8/k16-dctcp; the diagnostics of docs/validation.md's
#               history included)
#   SCENARIO    names from --list (default: the references, 9 scenarios,
#               about 5 minutes: the original set-up and ns-3 set up as
#               flexplane models a host, SACK on; docs/validation.md)
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=results/validation/ns3
INSTALL=0
BUILD_ONLY=0
SCENARIOS=()
BIN=build-validation/ns3_star
TRACE=validation/traces/websearch_star16.csv

# name -> ns3_star arguments. Web-search: the committed trace (16 hosts, 50%
# load, 100 ms of arrivals); -preconnect opens every connection at time 0.
# Incast: 8 hosts send 10 000 packets each to host 0. bidir3: two flows into
# host 0 and one out of it (traces/bidir3.csv).
declare -A ARGS=(
  [websearch-newreno-droptail]="--trace=$TRACE --hosts=16 --transport=newreno --queue=droptail --capacity-pkts=1024 --duration-ms=100 --drain-ms=400 --occupancy-interval-us=12"
  [websearch-dctcp-dctcp]="--trace=$TRACE --hosts=16 --transport=dctcp --queue=dctcp --capacity-pkts=1024 --k-pkts=65 --duration-ms=100 --drain-ms=400 --occupancy-interval-us=12"
  [bidir3-newreno-droptail]="--trace=validation/traces/bidir3.csv --hosts=3 --transport=newreno --queue=droptail --capacity-pkts=1024 --duration-ms=1 --drain-ms=500 --occupancy-interval-us=12"
  [bidir3-dctcp-dctcp]="--trace=validation/traces/bidir3.csv --hosts=3 --transport=dctcp --queue=dctcp --capacity-pkts=1024 --k-pkts=65 --duration-ms=1 --drain-ms=500 --occupancy-interval-us=12"
  [incast-newreno-droptail]="--incast-senders=8 --incast-size-pkts=10000 --hosts=9 --transport=newreno --queue=droptail --capacity-pkts=1024 --duration-ms=1 --drain-ms=500 --occupancy-interval-us=12"
  [incast-dctcp-dctcp]="--incast-senders=8 --incast-size-pkts=10000 --hosts=9 --transport=dctcp --queue=dctcp --capacity-pkts=1024 --k-pkts=65 --duration-ms=1 --drain-ms=500 --occupancy-interval-us=12"
)
for s in websearch-newreno-droptail websearch-dctcp-dctcp; do ARGS[$s-preconnect]="${ARGS[$s]} --preconnect=true"; done
# -ackprio (a diagnostic): ACKs ahead of data everywhere, in no queue's K or capacity.
for s in websearch-newreno-droptail websearch-dctcp-dctcp bidir3-newreno-droptail bidir3-dctcp-dctcp; do
  ARGS[$s-ackprio]="${ARGS[$s]} --ack-priority=true --first-sent=true"
done
for s in websearch-newreno-droptail websearch-dctcp-dctcp; do
  ARGS[$s-preconnect-ackprio]="${ARGS[$s-preconnect]} --ack-priority=true --first-sent=true"
done
# -bytes: switch queues and K counted in bytes, as switch ASICs count them.
for s in websearch-newreno-droptail websearch-dctcp-dctcp bidir3-newreno-droptail bidir3-dctcp-dctcp; do
  ARGS[$s-bytes]="${ARGS[$s]} --queue-bytes=true"
done
# -ackprio-nic / -ackprio-switch: ACKs first at the host NICs only / the switch ports only.
for s in websearch-newreno-droptail websearch-dctcp-dctcp bidir3-newreno-droptail bidir3-dctcp-dctcp; do
  for at in nic switch; do ARGS[$s-ackprio-$at]="${ARGS[$s]} --ack-priority=true --ack-priority-at=$at"; done
done
# -floor2: DCTCP's ssthresh floored at 2 segments, as in Linux (ns-3.37 has no floor).
for s in websearch-dctcp-dctcp websearch-dctcp-dctcp-preconnect websearch-dctcp-dctcp-preconnect-ackprio; do
  ARGS[$s-floor2]="${ARGS[$s]} --dctcp-min-ssthresh-pkts=2"
done
# -ackwait: the same run, also measuring each ACK's wait in the host NIC and the switch port
# (summary.yaml's ack_wait_*; tracing only, the flows are the base scenario's).
for s in websearch-dctcp-dctcp websearch-newreno-droptail websearch-dctcp-dctcp-preconnect-floor2 bidir3-dctcp-dctcp; do
  ARGS[$s-ackwait]="${ARGS[$s]} --ack-wait=true"
done
# -sack: SACK on, so ns-3 keeps a real scoreboard instead of guessing one from duplicate ACKs
# (with --ack-wait: data_frames per flow, retransmissions included).
for s in websearch-dctcp-dctcp websearch-dctcp-dctcp-preconnect websearch-dctcp-dctcp-preconnect-floor2 \
         websearch-dctcp-dctcp-preconnect-ackprio websearch-dctcp-dctcp-preconnect-ackprio-floor2 \
         websearch-newreno-droptail websearch-newreno-droptail-preconnect \
         bidir3-dctcp-dctcp bidir3-newreno-droptail incast-dctcp-dctcp incast-newreno-droptail; do
  ARGS[$s-sack]="${ARGS[$s]} --sack=true --ack-wait=true"
done
# -bytes after -sack: switch queues and K in bytes too (ACKs weigh their 40 bytes, as in switch ASICs).
for s in websearch-dctcp-dctcp-preconnect-floor2 websearch-newreno-droptail-preconnect; do
  ARGS[$s-sack-bytes]="${ARGS[$s-sack]} --queue-bytes=true"
done
# Fat trees (issue 24): flexplane's k = 8 / k = 16 fat tree with its per-flow ECMP (the same routing
# tables and flow hash: ns3_fat_tree.h), the committed 5 ms web-search traces, DCTCP at K = 65 over
# 256-packet ports, set up as flexplane models a host (the star's best-agreeing reference: connections
# open before the flows, ACKs ahead of data, Linux's ssthresh floor, SACK); flexplane side:
# validation/scenarios/flexplane_fat_tree_k*.yaml; speed: validation/bench_fat_tree.sh.
for k in 8 16; do
  ARGS[fat-tree-k$k-dctcp]="--topology=fat-tree --k=$k --trace=validation/traces/websearch_fat_tree_k$k.csv --transport=dctcp --queue=dctcp --capacity-pkts=256 --k-pkts=65 --duration-ms=5 --drain-ms=95 --occupancy-interval-us=600 --preconnect=true --ack-priority=true --dctcp-min-ssthresh-pkts=2 --sack=true"
done
# The references (docs/validation.md, status table): what a plain run gives.
DEFAULT=(websearch-dctcp-dctcp-preconnect-ackprio-floor2-sack websearch-dctcp-dctcp-preconnect-floor2-sack-bytes
         websearch-newreno-droptail-preconnect-sack-bytes incast-dctcp-dctcp-sack incast-newreno-droptail-sack
         bidir3-dctcp-dctcp websearch-dctcp-dctcp websearch-newreno-droptail incast-dctcp-dctcp)
ORDER=(websearch-newreno-droptail websearch-dctcp-dctcp websearch-newreno-droptail-preconnect
       websearch-dctcp-dctcp-preconnect incast-newreno-droptail incast-dctcp-dctcp bidir3-newreno-droptail
       bidir3-dctcp-dctcp websearch-newreno-droptail-ackprio websearch-dctcp-dctcp-ackprio
       websearch-newreno-droptail-preconnect-ackprio websearch-dctcp-dctcp-preconnect-ackprio
       bidir3-newreno-droptail-ackprio bidir3-dctcp-dctcp-ackprio websearch-dctcp-dctcp-floor2
       websearch-dctcp-dctcp-preconnect-floor2 websearch-dctcp-dctcp-preconnect-ackprio-floor2 websearch-newreno-droptail-bytes websearch-dctcp-dctcp-bytes
       bidir3-newreno-droptail-bytes bidir3-dctcp-dctcp-bytes websearch-newreno-droptail-ackprio-nic
       websearch-dctcp-dctcp-ackprio-nic bidir3-newreno-droptail-ackprio-nic bidir3-dctcp-dctcp-ackprio-nic
       websearch-newreno-droptail-ackprio-switch websearch-dctcp-dctcp-ackprio-switch
       bidir3-newreno-droptail-ackprio-switch bidir3-dctcp-dctcp-ackprio-switch websearch-dctcp-dctcp-ackwait
       websearch-newreno-droptail-ackwait websearch-dctcp-dctcp-preconnect-floor2-ackwait bidir3-dctcp-dctcp-ackwait
       websearch-dctcp-dctcp-sack websearch-dctcp-dctcp-preconnect-sack websearch-dctcp-dctcp-preconnect-floor2-sack
       websearch-dctcp-dctcp-preconnect-ackprio-sack websearch-dctcp-dctcp-preconnect-ackprio-floor2-sack
       websearch-newreno-droptail-sack
       websearch-newreno-droptail-preconnect-sack bidir3-dctcp-dctcp-sack bidir3-newreno-droptail-sack
       incast-dctcp-dctcp-sack incast-newreno-droptail-sack websearch-dctcp-dctcp-preconnect-floor2-sack-bytes
       websearch-newreno-droptail-preconnect-sack-bytes fat-tree-k8-dctcp fat-tree-k16-dctcp)

for s in "${DEFAULT[@]}"; do
  [[ -n ${ARGS[$s]:-} ]] || { echo "run_ns3: default scenario '$s' is not defined" >&2; exit 2; }
done

usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; }

while (($#)); do
  case $1 in
    --install) INSTALL=1 ;;
    --out) OUT=${2:?--out needs a folder}; shift ;;
    --trace) [[ -f ${2:-} ]] || { echo "run_ns3: --trace needs an existing trace file" >&2; exit 2; }
             for k in "${!ARGS[@]}"; do ARGS[$k]=${ARGS[$k]//--trace=$TRACE /--trace=$2 }; done; shift ;;
    --list) for s in "${ORDER[@]}"; do echo "$s: ${ARGS[$s]}"; done; exit 0 ;;
    --build) BUILD_ONLY=1 ;;
    --all) SCENARIOS=("${ORDER[@]}") ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "run_ns3: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) [[ -n ${ARGS[$1]:-} ]] || { echo "run_ns3: unknown scenario '$1' (see --list)" >&2; exit 2; }
       SCENARIOS+=("$1") ;;
  esac
  shift
done
((${#SCENARIOS[@]})) || SCENARIOS=("${DEFAULT[@]}")

have_ns3() { pkg-config --exists ns3-core 2>/dev/null && [[ -e /usr/lib/x86_64-linux-gnu/libgsl.so ]]; }
if ! have_ns3; then
  if ((INSTALL)); then
    SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
    $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends ns3 libns3-dev libgsl-dev >/dev/null
  else
    echo "run_ns3: ns-3 is not installed; run with --install (apt: ns3 libns3-dev libgsl-dev)" >&2
    exit 2
  fi
fi
[[ -x /usr/bin/time ]] || { echo "run_ns3: /usr/bin/time is missing (apt install time)" >&2; exit 2; }

# ns-3.37's headers need C++17 (they do not compile as C++20). The flow-trace
# reader is flexplane's own, so both simulators parse traces the same way.
SRC=(validation/ns3_star.cc emulator/workload/flow_trace.cc)
DEPS=(emulator/workload/flow_trace.h api/flow.h api/packet.h api/routing_table.h api/rng.h validation/ns3_fat_tree.h
      validation/fat_tree_routes.h)
if [[ ! -x $BIN || -n $(find "${SRC[@]}" "${DEPS[@]}" -newer "$BIN" 2>/dev/null) ]]; then
  mkdir -p "$(dirname "$BIN")"
  echo "run_ns3: building $BIN"
  g++ -std=c++17 -O2 -I. "${SRC[@]}" -o "$BIN" -Wl,--no-as-needed \
    $(pkg-config --libs ns3-core ns3-network ns3-internet ns3-point-to-point ns3-applications ns3-traffic-control)
fi

((BUILD_ONLY)) && exit 0
mkdir -p "$OUT"
for s in "${SCENARIOS[@]}"; do
  dir=$OUT/$s
  rm -rf "$dir"
  mkdir -p "$dir"
  echo "run_ns3: $s"
  # shellcheck disable=SC2086  # ARGS values are word lists
  /usr/bin/time -v -o "$dir/time.txt" "$BIN" ${ARGS[$s]} --out="$dir" | tee "$dir/stdout.txt"
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$dir/time.txt")
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$dir/time.txt")
  sim=$(awk '/^simulated_ms:/ {print $2}' "$dir/summary.yaml")
  fin=$(awk '/^finished:/ {f=$2} /^flows:/ {n=$2} END {print f "/" n}' "$dir/summary.yaml")
  window=()
  # Incast: the receiver's port from 10 to 80 ms (after start-up, all senders active).
  [[ $s == incast-* ]] && window=(--port 0 --from-us 10000 --until-us 80000)
  python3 validation/compare.py summary "$dir" "${window[@]}" >"$dir/summary.md"
  printf '| %s | %s | %s | %s | %s |\n' "$s" "$fin" "$sim" "$wall" "$rss" >"$dir/run.md"
done
# The table covers every scenario whose results are in OUT (this run's and earlier ones).
{
  printf '| scenario | flows finished | simulated ms | wall (m:ss) | max RSS MiB |\n|---|---|---|---|---|\n'
  for s in "${ORDER[@]}"; do [[ -f $OUT/$s/run.md ]] && cat "$OUT/$s/run.md"; done
} >"$OUT/runs.md"
echo
cat "$OUT/runs.md"
for s in "${SCENARIOS[@]}"; do echo; cat "$OUT/$s/summary.md"; done
