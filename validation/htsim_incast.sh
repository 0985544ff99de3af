#!/usr/bin/env bash
# flexplane's HPCC and DCQCN beside htsim's (issue 26; docs/transports.md,
# "hpcc" and "dcqcn"): an 8 -> 1 incast on a k = 4 fat tree (16 hosts), hosts
# 4..11 (pods 1 and 2) each sending 3000 packets of 1500 bytes to host 0 from
# t = 0, every link 100 Gbit/s (htsim's default) with 0.96 us of propagation
# (flexplane: 9 timeslots of 0.12 us, one of them the packet's transmission).
# HPCC: eta 0.95, 5 stages, W_AI 1 packet, T 12 us (htsim's fixed T; flexplane
# base_rtt_timeslots 100), paced. DCQCN: both sides' defaults (g 1/256, 55 us
# timers, 50 us CNP interval, F 5, R_AI line/20, R_HAI line/10), marking above
# 20 packets. Buffers of 4096 packets; htsim's PFC thresholds raised past the
# run's 24,000 packets so that no pause can happen (one more htsim DCQCN run
# keeps its default PFC thresholds, 12/15 packets). Prints per-flow FCT,
# completion, the receiver's ToR downlink queue, losses, rate cuts, pauses
# and wall time of each run (markdown), then flexplane against htsim.
#
#   validation/htsim_incast.sh [--htsim-src DIR] [--work DIR] [--htsim-runs N]
#
#   --htsim-src   htsim's sim/ folder (default ../shared/refs/htsim/sim; its
#                 REFERENCE.md: BSD-2, built outside the project tree)
#   --work        where htsim is built and both simulators run (default
#                 /tmp/flexplane-htsim-incast)
#   --htsim-runs  htsim HPCC runs (default 3, one second apart: its senders
#                 draw their ECMP path ids after reseeding from the wall clock)
# htsim_roce is built with one change to its dcqcn.cpp: the alpha timer
# restarts when alpha decays (as in DCQCN; flexplane does the same). Unchanged,
# every sender that goes 55 us without a CNP reschedules itself twice per
# event and the run never finishes. Needs build/flexplane-emulator (make),
# cmake, g++, python3 and /usr/bin/time. About 2 minutes the first time
# (htsim's build), then ~30 s (htsim_roce logs every event to stdout).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
source validation/htsim_lib.sh
SRC=$REPO/../shared/refs/htsim/sim
WORK=/tmp/flexplane-htsim-incast
RUNS=3
while (($#)); do
  htsim_common_option "$@" && { shift "$HTSIM_SHIFT"; continue; }
  case $1 in
    --htsim-runs) RUNS=$2; shift 2 ;;
    *) htsim_unknown_option "$1" ;;
  esac
done
htsim_check_src
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "error: --htsim-runs: '$RUNS' is not a positive integer" >&2; exit 2; }
htsim_prepare_work

# The scenario, in one place for both simulators.
PKTS=3000          # packets per flow
SENDERS="4 5 6 7 8 9 10 11"
RECEIVER=0
K_MARK=20          # DCQCN marking threshold, packets
BUF=4096           # switch buffer per port, packets
GBPS=100
LAT_TS=9           # flexplane link latency, timeslots (0.12 us each at 100 Gbit/s)
END_US=5000        # htsim's end of time

# htsim, built outside the tree with the DCQCN timer fix (above).
BUILD=$WORK/sim/build
if [[ ! -x $BUILD/datacenter/htsim_hpcc || ! -x $BUILD/datacenter/htsim_roce || ! -x $BUILD/parse_output ||
      ! -e $WORK/sim/.alpha_timer_fix ]]; then
  htsim_fresh_copy "$WORK/sim"
  python3 - "$WORK/sim" <<'PY'
import sys
sys.path.insert(0, "validation")
from htsim_patch import patcher, restart_alpha_timer
restart_alpha_timer(patcher(sys.argv[1]))
PY
  touch "$WORK/sim/.alpha_timer_fix"
  cmake -S "$WORK/sim" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release > "$WORK/build.log" 2>&1
  cmake --build "$BUILD" --parallel 2 --target htsim_hpcc htsim_roce parse_output >> "$WORK/build.log" 2>&1 ||
    { echo "error: htsim build failed: $WORK/build.log" >&2; exit 1; }
fi

# Connection matrix and flexplane trace (htsim_lib.sh). Host h sits under ToR
# h/2 in pod h/4 in both simulators.
write_incast "$WORK" "$PKTS" "$RECEIVER" $SENDERS
cat > "$WORK/incast.yaml" <<EOF
# Written by validation/htsim_incast.sh: the incast of its header.
seed: 1
network: {link_rate_gbps: $GBPS}
topology: {kind: fat_tree, k: 4, link_latency_timeslots: $LAT_TS}
routers:
  default: {scheme: hpcc, queue_manager: {capacity_pkts: $BUF, base_rtt_timeslots: 100}}
transport: {kind: hpcc, ack_latency: propagation, pacing_gain: 1, hpcc_eta: 0.95, hpcc_max_stage: 5, hpcc_wai_pkts: 1}
workload: {kind: trace, trace: incast.csv}
run: {duration_ms: 1, drain_ms: 20, occupancy_interval_us: 1.2}
output: {occupancy: csv}
variants:
  hpcc: {}
  dcqcn:
    transport: {kind: dcqcn}
    routers: {default: {scheme: dctcp, queue_manager: {k_pkts: $K_MARK, capacity_pkts: $BUF}}}
EOF

# htsim runs. Each writes idmap.txt into its working directory; stdout keeps
# only the lines read below (htsim_roce prints a line per sender event).
COMMON=(-tm "$WORK/incast.cm" -nodes 16 -linkspeed $((GBPS * 1000)) -mtu 1436 -hop_latency 0.96 -q $BUF
        -strat ecmp_host -paths 256 -end $END_US -log tor_downqueue)
NO_PFC=(-pfc_thresholds 99999 100000)
KEEP='finished at|CNP received|^PAUSE|RESUME|LOSSLESS|^New:'
QUEUE_RE="Name LS$((RECEIVER / 2))->DST$RECEIVER\\(0\\)"
PARSE_OUTPUT=$BUILD/parse_output
htsim() {  # name binary args...: a binary of $BUILD/datacenter
  local name=$1 bin=$2; shift 2
  htsim_run "$name" "$BUILD/datacenter/$bin" "$@"
}
for ((r = 1; r <= RUNS; r++)); do
  ((r == 1)) || sleep 1
  htsim hpcc_$r htsim_hpcc "${NO_PFC[@]}"
done
htsim dcqcn htsim_roce -dcqcn $K_MARK "${NO_PFC[@]}"
htsim dcqcn_pfc htsim_roce -dcqcn $K_MARK

# flexplane runs.
rm -rf "$WORK/flexplane"
for v in hpcc dcqcn; do
  /usr/bin/time -f %e -o "$WORK/flexplane_$v.wall" build/flexplane-emulator run "$WORK/incast.yaml" \
    --variant $v --out "$WORK/flexplane" --quiet > /dev/null
done

python3 - "$WORK" "$RUNS" "$PKTS" "$RECEIVER" "$LAT_TS" "$GBPS" <<'PY'
import csv, math, re, statistics, sys
from pathlib import Path
work, runs, pkts, recv, lat_ts, gbps = Path(sys.argv[1]), int(sys.argv[2]), *map(int, sys.argv[3:])
ts_us = 1500 * 8 / (gbps * 1e3)
n_flows = 8
# flexplane's FCT ends when the last packet reaches the receiver, htsim's when
# its ACK reaches the sender: add flexplane's ACK latency (ack_latency:
# propagation over the 6 hops, sum (L - 1) + 1 timeslots).
ack_us = (6 * (lat_ts - 1) + 1) * ts_us

def pct(v, q):  # nearest rank, as occupancy_summary.csv
    v = sorted(v)
    return v[max(0, math.ceil(q * len(v)) - 1)]

def htsim_run(name):
    d = work / "htsim" / name
    out = (d / "out.txt").read_text()
    fct = [float(t) for t in re.findall(r"finished at ([\d.]+)", out)]
    end = max(fct) if fct else None
    samples, qmax = [], 0.0
    for m in re.finditer(r"([\d.]+) Type QUEUE_APPROX ID \d+ Ev RANGE LastQ (-?\d+) MinQ -?\d+ MaxQ (-?\d+)",
                         (d / "queue.txt").read_text()):
        t = float(m[1]) * 1e6
        if end is None or t - 10 < end:      # intervals of 10 us that began before the last completion
            qmax = max(qmax, int(m[3]) / 1500)
            if end is None or t <= end:
                samples.append(int(m[2]) / 1500)
    rtx = re.search(r"^New: \d+ Rtx: (\d+)", out, re.M)
    return dict(done=len(fct), fct=fct, end=end, q=samples, qmax=qmax, sample_us=10,
                drops=f"0 ({out.count('LOSSLESS')} overflows)", rtx=int(rtx[1]) if rtx else None,
                cuts=out.count("CNP received"), pauses=len(re.findall(r"RESUME", out)),
                wall=float((d / "wall").read_text().split()[-1]))

def flexplane_run(v):
    d = work / "flexplane" / v
    rows = list(csv.DictReader(open(d / "flows.csv")))
    done = [r for r in rows if r["finished"] == "1"]
    fct = [float(r["fct_us"]) + ack_us for r in done]
    end = max(float(r["start_us"]) + f for r, f in zip(done, fct)) if done else None
    q = [int(r["packets"]) for r in csv.DictReader(open(d / "occupancy.csv"))
         if r["router"] == f"edge{recv // 4}_{recv // 2 % 2}" and r["port"] == str(recv % 2)
         and (end is None or float(r["time_us"]) <= end)]
    cuts = sum(int(r["ecn_reductions"] or 0) for r in rows)
    return dict(done=len(done), fct=fct, end=end, q=q, qmax=max(q), sample_us=1.2,
                drops=sum(int(r["lost_pkts"]) for r in rows), rtx=sum(int(r["retransmits"] or 0) for r in rows),
                cuts=cuts if v == "dcqcn" else "-", pauses="- (no PFC)",
                wall=float((work / f"flexplane_{v}.wall").read_text().split()[-1]))

res = {}
for r in range(1, runs + 1):
    res[f"htsim HPCC #{r}"] = htsim_run(f"hpcc_{r}")
res["flexplane HPCC"] = flexplane_run("hpcc")
res["htsim DCQCN"] = htsim_run("dcqcn")
res["htsim DCQCN, PFC 12/15 pkts"] = htsim_run("dcqcn_pfc")
res["flexplane DCQCN"] = flexplane_run("dcqcn")
# htsim prints a line when a paused RoCE sender resumes, nothing for pauses
# between switches; above the thresholds of NO_PFC no input can reach them.
for k, v in res.items():
    if k.startswith("htsim"):
        v["pauses"] = f"{v['pauses']} at hosts" if "PFC" in k else "none possible"
    if k.startswith("htsim HPCC"):
        v["cuts"] = "-"

def f1(x):
    return "-" if x is None else f"{x:.1f}"

ideal = n_flows * pkts * ts_us
print(f"8 -> 1 incast, k = 4 fat tree, {gbps} Gbit/s, {pkts} x 1500 B per flow; "
      f"the receiver's link alone needs {ideal:.0f} us for all of it. Times in us; FCT to the last ACK; "
      f"queue = host {recv}'s ToR downlink, packets, sampled every 10 us (htsim) / 1.2 us (flexplane) "
      f"up to the last completion.\n")
print("| run | flows done | FCT mean | FCT min | FCT max | completion | queue p50 | queue p99 | queue max "
      "| drops | retransmits | rate cuts (CNPs) | PFC pauses | wall s |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for k, v in res.items():
    fct = v["fct"]
    print(f"| {k} | {v['done']}/{n_flows} | {f1(statistics.mean(fct) if fct else None)} | {f1(min(fct, default=None))} "
          f"| {f1(max(fct, default=None))} | {f1(v['end'])} | {pct(v['q'], 0.5):.0f} | {pct(v['q'], 0.99):.0f} "
          f"| {v['qmax']:.0f} | {v['drops']} | {v['rtx']} | {v['cuts']} | {v['pauses']} | {v['wall']:.2f} |")

def cmp(name, fp, hs, tol):
    m = statistics.mean(hs)
    d = (fp - m) / m * 100
    spread = f" ({min(hs):.1f}-{max(hs):.1f})" if len(hs) > 1 else ""
    ok = "within" if abs(d) <= tol else "outside"
    return f"| {name} | {fp:.1f} | {m:.1f}{spread} | {d:+.1f} % | {ok} {tol} % |"

print("\nflexplane against htsim (htsim HPCC: mean over its runs, range in brackets; DCQCN: htsim without pauses)\n")
print("| transport | metric | flexplane | htsim | difference | tolerance |")
print("|---|---|---|---|---|---|")
for tr, fp, hs in (("HPCC", res["flexplane HPCC"], [v for k, v in res.items() if k.startswith("htsim HPCC")]),
                   ("DCQCN", res["flexplane DCQCN"], [res["htsim DCQCN"]])):
    rows = [("FCT mean", statistics.mean(fp["fct"]), [statistics.mean(h["fct"]) for h in hs], 15),
            ("FCT min", min(fp["fct"]), [min(h["fct"]) for h in hs], 15),
            ("FCT max", max(fp["fct"]), [max(h["fct"]) for h in hs], 15),
            ("completion", fp["end"], [h["end"] for h in hs], 15),
            ("queue p99", pct(fp["q"], 0.99), [pct(h["q"], 0.99) for h in hs], 20)]
    for name, a, b, tol in rows:
        if a is None or any(x is None for x in b):
            print(f"| {tr} | {name} | {f1(a)} | - | - | not measured |")
        else:
            print(f"| {tr} " + cmp(name, a, b, tol))
PY
