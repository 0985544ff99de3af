#!/usr/bin/env bash
# flexplane's HPCC and DCQCN beside htsim's on web search (issue 26;
# docs/validation.md, "HPCC and DCQCN on an incast" for the same pairing on
# an incast): one flow list, made by flexplane (poisson, all-to-all, the
# web-search CDF, 50 % load for --ms ms, seed --seed), replayed in both on a
# k = 8 fat tree (128 hosts, host h under ToR h/4 in pod h/16 in both), every
# link 100 Gbit/s (htsim's default) with 0.96 us of propagation per hop
# (flexplane: 9 timeslots of 0.12 us, one of them the packet's transmission).
# HPCC: eta 0.95, 5 stages, W_AI 1 packet, T 12 us (htsim's fixed T; flexplane
# base_rtt_timeslots 100), paced. DCQCN: both sides' defaults (g 1/256, 55 us
# timers, 50 us CNP interval, F 5, R_AI line/20, R_HAI line/10) over htsim's
# marking for -dcqcn K, a step: CE when the queue holds more than K x MTU
# bytes as a packet leaves; flexplane: scheme dctcp, k_pkts K (arrivals that
# find more than K). Buffers of 4096 packets; htsim's PFC thresholds raised
# past them so that nothing pauses; NICs serve their flows in turn in both
# (htsim's fair host queue; flexplane nic: round_robin). Each htsim transport
# runs twice: as it is (patches 1-5 below) and "fixed" (also (a)-(d)). Prints
# (markdown) per flow-size bucket the flows and FCT mean / p99 of each
# simulator (FCT to the sender's last ACK; "within" at 15 %), the ToR
# downlink queues (all 128, sampled every ~10 us up to the end of the
# arrivals; "within" at 20 %), drops, pauses, rate cuts and whole-process
# wall times.
#
#   validation/htsim_websearch.sh [--htsim-src DIR] [--work DIR] [--ms MS] [--seed N] [--k-mark K]
#
#   --htsim-src  htsim's sim/ folder (default ../shared/refs/htsim/sim; its
#                REFERENCE.md: BSD-2, built outside the project tree)
#   --work       where htsim is built and both simulators run (default
#                /tmp/flexplane-htsim-websearch)
#   --ms         arrival window, ms of emulated time (default 2: 911 flows)
#   --seed       flexplane's workload seed (default 1)
#   --k-mark     DCQCN marking threshold, packets (default 20)
# htsim is built from its own copies (each patch checks that its text is
# where expected). Patches to run at all or to read the same flows: (1)
# dcqcn.cpp: the alpha timer restarts when alpha decays (as htsim_incast.sh;
# without it the run never ends); (2) hpcc.cpp: a flow starts at its
# connection-matrix time (HPCCSrc::connect starts every flow at t = 0); (3)
# hpcc.cpp, roce.cpp: start times are read in ns, not us (the matrix keeps
# them as integers: whole us would move flexplane's 0.12 us timeslots); (4)
# roce.cpp: a sender stops pacing once all its packets are out (it compares
# packets with bytes and paces empty slots to the end of the run); (5)
# main_hpcc.cpp, main_roce.cpp: sources are named with their flow id, so that
# "finished at" lines can be told apart. Fixes, in sim_fixed/ only, to follow
# the papers: HPCC (Algorithm 1) (a) the per-hop records are replaced on
# every ACK (htsim keeps the first ACK's), (b) tau / T in floating point (an
# integer division), (c) the window is computed from a reference window Wc
# that changes once per RTT (htsim overwrites its one window on every ACK);
# DCQCN (d) one alpha per sender (htsim's is static: shared, and decayed by
# every sender's timer). htsim's HPCC senders reseed from the wall clock
# (their ECMP path ids change run to run). Needs build/flexplane-emulator,
# cmake, g++, python3, /usr/bin/time. About 10 minutes the first time
# (htsim's two builds on one core), then ~2 minutes (htsim_roce prints a
# line per sender event).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
source validation/htsim_lib.sh
SRC=$REPO/../shared/refs/htsim/sim
WORK=/tmp/flexplane-htsim-websearch
MS=2
SEED=1
K_MARK=20
while (($#)); do
  htsim_common_option "$@" && { shift "$HTSIM_SHIFT"; continue; }
  case $1 in
    --ms) MS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --k-mark) K_MARK=$2; shift 2 ;;
    *) htsim_unknown_option "$1" ;;
  esac
done
htsim_check_src
[[ $MS =~ ^[0-9]+(\.[0-9]+)?$ ]] && python3 -c "import sys; sys.exit(not 0 < float('$MS') <= 16)" ||
  { echo "error: --ms: '$MS' is not a number of ms in (0, 16]" >&2; exit 2; }
[[ $SEED =~ ^[0-9]+$ ]] || { echo "error: --seed: '$SEED' is not a non-negative integer" >&2; exit 2; }
[[ $K_MARK =~ ^[1-9][0-9]*$ ]] || { echo "error: --k-mark: '$K_MARK' is not a positive integer" >&2; exit 2; }
htsim_prepare_work

# The scenario, in one place for both simulators.
GBPS=100
LAT_TS=9           # flexplane link latency, timeslots (0.12 us each at 100 Gbit/s)
HOP_US=0.96        # htsim's propagation per hop: (LAT_TS - 1) timeslots
BUF=4096           # switch buffer per port, packets
T_TS=100           # HPCC's T: 12 us, htsim's fixed value
OCC_TS=84          # flexplane's occupancy interval, timeslots (10.08 us; htsim samples every 10 us)
END_US=40000       # htsim's end of time (every flow is done well before)

# htsim, built outside the tree, patched (header): sim/ with patches 1-5,
# sim_fixed/ with them and fixes (a)-(d).
build_htsim() {  # dir fixed(0/1) targets...
  local dir=$WORK/$1 fixed=$2; shift 2
  htsim_fresh_copy "$dir"
  python3 - "$dir" "$fixed" <<'PY'
import sys
sys.path.insert(0, "validation")
from htsim_patch import patcher, restart_alpha_timer, roce_start_in_ns
sim, fixed = sys.argv[1], sys.argv[2] == "1"
patch = patcher(sim)
# (1) restart DCQCN's alpha timer where alpha decays.
restart_alpha_timer(patch)
# (2) HPCC: start at the matrix's time, not at once; (3) start times in ns.
patch("hpcc.cpp", r"(//eventlist\(\)\.sourceIsPending\(\*this,starttime\);\s*)startflow\(\);",
      r"\1eventlist().sourceIsPending(*this, timeFromNs((double)starttime));")
patch("hpcc.cpp", r"/\*if \(!_flow_started\)\{\s*startflow\(\);\s*return;\s*\}\*/",
      "if (!_flow_started) {\n        startflow();\n        return;\n    }")
roce_start_in_ns(patch)
# (4) RoCE: _highest_sent and _last_acked count packets, _flow_size bytes.
patch("roce.cpp", r"if \(_flow_size && _highest_sent >= _flow_size\) \{",
      "if (_flow_size && _highest_sent * _mss >= _flow_size) {")
patch("roce.cpp", r"if \(_flow_size && _highest_sent>=_flow_size && _last_acked < _flow_size\)\{",
      "if (_flow_size && _highest_sent * _mss >= _flow_size && _last_acked * _mss < _flow_size){")
# (5) name sources after their flow id.
for main, prefix, var in (("datacenter/main_hpcc.cpp", "HPCC_", "hpccSrc"), ("datacenter/main_roce.cpp", "Roce_", "roceSrc")):
    patch(main, rf'{var}->setName\("{prefix}" \+ ntoa\(src\) \+ "_" \+ ntoa\(dest\)\);',
          f'{var}->setName("{prefix}" + ntoa(src) + "_" + ntoa(dest) + "_id" + ntoa(crt->flowid));')
if fixed:
    # HPCC's Algorithm 1: (a) L = ack.L after every ACK (htsim keeps the
    # first ACK's hop records); (b) tau / T in floating point (an integer
    # division: 0 or 1); (c) W from the reference window Wc, which changes
    # once per RTT (htsim's _cwnd is both; its _Wc is unused and _incStage
    # uninitialised).
    patch("hpcc.cpp", r"_U = _eta;\n", "_U = _eta;\n    _Wc = _cwnd;\n    _incStage = 0;\n")
    patch("hpcc.cpp", r"_U = \(1 - tau/_T\)\*_U \+ tau/_T\*u;",
          "_U = (1 - (double)tau/_T)*_U + (double)tau/_T*u;\n"
          "        for (i = 0;i<_link_count;i++)\n            _link_info[i] = ack._int_info[i];")
    patch("hpcc.cpp", r"W = _cwnd / \(_U / _eta\) \+ _Wai;", "W = _Wc / (_U / _eta) + _Wai;")
    patch("hpcc.cpp", r"W = _cwnd \+ _Wai;", "W = _Wc + _Wai;")
    patch("hpcc.cpp", r"(if \(updateWc\)\{\n\s*_incStage(?: = 0|\+\+);\n\s*)_cwnd = W;", r"\1_Wc = W;", 2)
    # DCQCN: (d) one alpha per sender (htsim's is static: shared by all
    # senders, and every sender's timer decays it).
    patch("dcqcn.h", r"static double _alpha, _g;", "double _alpha = 1;\n    static double _g;")
    patch("dcqcn.cpp", r"double DCQCNSrc::_alpha = 1;\n", "")
PY
  touch "$dir/.websearch_patches"
  cmake -S "$dir" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release > "$WORK/build.log" 2>&1
  cmake --build "$dir/build" --parallel 1 --target "$@" >> "$WORK/build.log" 2>&1 ||
    { echo "error: htsim build failed: $WORK/build.log" >&2; exit 1; }
}
BUILD=$WORK/sim/build
FIXED=$WORK/sim_fixed/build
[[ -x $BUILD/datacenter/htsim_hpcc && -x $BUILD/datacenter/htsim_roce && -x $BUILD/parse_output &&
   -e $WORK/sim/.websearch_patches ]] || build_htsim sim 0 htsim_hpcc htsim_roce parse_output
[[ -x $FIXED/datacenter/htsim_hpcc && -x $FIXED/datacenter/htsim_roce && -e $WORK/sim_fixed/.websearch_patches ]] ||
  build_htsim sim_fixed 1 htsim_hpcc htsim_roce

# The flow list (htsim_lib.sh, write_websearch; starts in ns: patch 3).
write_websearch "$WORK" validation/htsim_websearch.sh
cat > "$WORK/websearch.yaml" <<EOF
# Written by validation/htsim_websearch.sh: the runs of its header.
seed: $SEED
network: {link_rate_gbps: $GBPS}
topology: {kind: fat_tree, k: 8, link_latency_timeslots: $LAT_TS}
routers:
  default: {scheme: hpcc, queue_manager: {capacity_pkts: $BUF, base_rtt_timeslots: $T_TS}}
transport: {kind: hpcc, ack_latency: propagation, nic: round_robin, pacing_gain: 1, hpcc_eta: 0.95, hpcc_max_stage: 5, hpcc_wai_pkts: 1}
workload: {kind: trace, trace: websearch.csv}
run: {duration_ms: $MS, drain_ms: 100, occupancy_interval_us: $(python3 -c "print($OCC_TS * 0.12)")}
output: {occupancy: csv}
variants:
  hpcc: {}
  dcqcn:
    transport: {kind: dcqcn}
    routers: {default: {scheme: dctcp, queue_manager: {k_pkts: $K_MARK, capacity_pkts: $BUF}}}
EOF

# htsim runs. Each writes idmap.txt into its working directory; stdout keeps
# only the lines read below (both print a line per ACK or sender event).
COMMON=(-tm "$WORK/websearch.cm" -nodes 128 -linkspeed $((GBPS * 1000)) -mtu 1436 -hop_latency $HOP_US -q $BUF
        -strat ecmp_host -paths 256 -end $END_US -log tor_downqueue -pfc_thresholds 99999 100000)
KEEP='finished at|CNP received|^PAUSE|RESUME|LOSSLESS|^New:'
QUEUE_RE='Type QUEUE_APPROX .* Name LS[0-9]+->DST[0-9]+\('
PARSE_OUTPUT=$BUILD/parse_output
htsim_run hpcc "$BUILD/datacenter/htsim_hpcc"
htsim_run hpcc_fixed "$FIXED/datacenter/htsim_hpcc"
htsim_run dcqcn "$BUILD/datacenter/htsim_roce" -dcqcn "$K_MARK"
htsim_run dcqcn_fixed "$FIXED/datacenter/htsim_roce" -dcqcn "$K_MARK"

# flexplane runs.
for v in hpcc dcqcn; do
  /usr/bin/time -f %e -o "$WORK/flexplane_$v.wall" build/flexplane-emulator run "$WORK/websearch.yaml" \
    --variant $v --out "$WORK/flexplane" --quiet > /dev/null
done

python3 - "$WORK" "$MS" "$LAT_TS" "$GBPS" "$K_MARK" <<'PY'
import csv, math, re, statistics, sys
from pathlib import Path
work, ms, lat_ts, gbps, k_mark = Path(sys.argv[1]), float(sys.argv[2]), *map(int, sys.argv[3:])
ts_us = 1500 * 8 / (gbps * 1e3)
window_us = ms * 1000
trace = {int(r["flow_id"]): r for r in csv.DictReader(open(work / "websearch.csv"))}
BUCKETS = ((1, 10), (11, 100), (101, 1000), (1001, 10000), (10001, None))

def bucket(p):
    return next(i for i, (lo, hi) in enumerate(BUCKETS) if p >= lo and (hi is None or p <= hi))

def hops(s, d):  # links on the path: under one ToR, within a pod, across pods
    return 2 if s // 4 == d // 4 else 4 if s // 16 == d // 16 else 6

def pct(v, q):  # nearest rank, as occupancy_summary.csv
    v = sorted(v)
    return v[max(0, math.ceil(q * len(v)) - 1)] if v else None

def htsim_run(name):
    d = work / "htsim" / name
    out = (d / "out.txt").read_text()
    fct = {}
    for m in re.finditer(r"Flow \S+_id(\d+) .*?finished at ([\d.]+)", out):
        fid = int(m[1]) - 1
        fct[fid] = float(m[2]) - int(trace[fid]["start_timeslot"]) * ts_us
    q = [int(m[2]) / 1500 for m in re.finditer(
        r"([\d.]+) Type QUEUE_APPROX ID \d+ Ev RANGE LastQ (-?\d+) MinQ -?\d+ MaxQ (-?\d+)", (d / "queue.txt").read_text())
        if float(m[1]) * 1e6 <= window_us]
    rtx = re.search(r"^New: \d+ Rtx: (\d+)", out, re.M)
    return dict(fct=fct, q=q, drops=f"0 ({out.count('LOSSLESS')} overflows)", rtx=int(rtx[1]) if rtx else "-",
                cuts=out.count("CNP received"), pauses=len(re.findall("RESUME", out)),
                wall=float((d / "wall").read_text().split()[-1]))

def flexplane_run(v):
    d = work / "flexplane" / v
    rows = list(csv.DictReader(open(d / "flows.csv")))
    # flexplane's FCT ends when the last packet reaches the receiver, htsim's
    # when its ACK reaches the sender: add flexplane's ACK latency
    # (ack_latency: propagation, sum (L - 1) + 1 timeslots over the path).
    fct = {int(r["flow_id"]): float(r["fct_us"]) + (hops(int(r["src"]), int(r["dst"])) * (lat_ts - 1) + 1) * ts_us
           for r in rows if r["finished"] == "1"}
    q = [int(r["packets"]) for r in csv.DictReader(open(d / "occupancy.csv"))
         if r["router"].startswith("edge") and int(r["port"]) < 4 and float(r["time_us"]) <= window_us]
    return dict(fct=fct, q=q, drops=sum(int(r["lost_pkts"]) for r in rows),
                rtx=sum(int(r["retransmits"] or 0) for r in rows),
                cuts=sum(int(r["ecn_reductions"] or 0) for r in rows) if v == "dcqcn" else "-",
                pauses="- (no PFC)", wall=float((work / f"flexplane_{v}.wall").read_text().split()[-1]))

fp = {v: flexplane_run(v) for v in ("hpcc", "dcqcn")}
hs = {name: htsim_run(name) for name in ("hpcc", "hpcc_fixed", "dcqcn", "dcqcn_fixed")}
for name, v in hs.items():
    v["pauses"] = f"{v['pauses']} (thresholds above the buffer)"
    if name.startswith("hpcc"):
        v["cuts"] = "-"
# flexplane against htsim as it is, then against htsim with fixes (a)-(c) (HPCC) or (d) (DCQCN).
PAIRS = (("HPCC", "hpcc", "hpcc"), ("HPCC vs fixed htsim", "hpcc", "hpcc_fixed"),
         ("DCQCN", "dcqcn", "dcqcn"), ("DCQCN vs fixed htsim", "dcqcn", "dcqcn_fixed"))

def f1(x):
    return "-" if x is None else f"{x:.1f}"

def diff(a, b, tol):
    if a is None or b is None or b == 0:
        return "-", "-"
    d = (a - b) / b * 100
    return f"{d:+.1f} %", "within" if abs(d) <= tol else "**outside**"

n = len(trace)
print(f"Web search, k = 8 fat tree (128 hosts), {gbps} Gbit/s, 0.96 us per hop, 50 % load for {ms:g} ms: "
      f"{n} flows. FCT in us to the sender's last ACK; differences are flexplane against htsim; "
      f"within = 15 % (FCT), 20 % (queue). \"fixed htsim\": HPCC with fixes (a)-(c), DCQCN with (d) (header).\n")
print("| transport | flow size (pkts) | flows | done flexplane / htsim | FCT mean flexplane | htsim | diff | "
      "FCT p99 flexplane | htsim | diff |")
print("|---|---|---|---|---|---|---|---|---|---|")
for label, f, h in PAIRS:
    for b, (lo, hi) in enumerate(BUCKETS):
        ids = [i for i, r in trace.items() if bucket(int(r["size_pkts"])) == b]
        a = [fp[f]["fct"][i] for i in ids if i in fp[f]["fct"]]
        c = [hs[h]["fct"][i] for i in ids if i in hs[h]["fct"]]
        ma, mc = (statistics.mean(a) if a else None), (statistics.mean(c) if c else None)
        pa, pc = pct(a, 0.99), pct(c, 0.99)
        dm, vm = diff(ma, mc, 15)
        dp, vp = diff(pa, pc, 15)
        size = f"{lo}-{hi}" if hi else f">{lo - 1}"
        print(f"| {label} | {size} | {len(ids)} | {len(a)} / {len(c)} | {f1(ma)} | {f1(mc)} | {dm} {vm} "
              f"| {f1(pa)} | {f1(pc)} | {dp} {vp} |")

print(f"\nToR downlink queues (all 128 ToR -> host ports), packets (htsim: bytes / 1500, its last value every 10 us; "
      f"flexplane: every {84 * ts_us:.2f} us), samples up to t = {window_us:.0f} us (the arrivals):\n")
print("| transport | samples flexplane / htsim | p50 flexplane / htsim | p90 flexplane / htsim | p99 flexplane | htsim "
      "| p99 diff | max flexplane / htsim |")
print("|---|---|---|---|---|---|---|---|")
for label, f, h in PAIRS:
    a, c = fp[f]["q"], hs[h]["q"]
    d, v = diff(pct(a, 0.99), pct(c, 0.99), 20)
    print(f"| {label} | {len(a)} / {len(c)} | {f1(pct(a, 0.5))} / {f1(pct(c, 0.5))} | {f1(pct(a, 0.9))} / {f1(pct(c, 0.9))} "
          f"| {f1(pct(a, 0.99))} | {f1(pct(c, 0.99))} | {d} {v} | {f1(max(a, default=None))} / {f1(max(c, default=None))} |")

print("\n| run | flows done | drops | retransmitted pkts | rate cuts (CNPs) | PFC pauses | wall s |")
print("|---|---|---|---|---|---|---|")
for name, v in [(f"flexplane {k.upper()}", x) for k, x in fp.items()] + \
               [(f"htsim {k.replace('_fixed', '').upper()}{' fixed' if 'fixed' in k else ''}", x) for k, x in hs.items()]:
    print(f"| {name} | {len(v['fct'])}/{n} | {v['drops']} | {v['rtx']} | {v['cuts']} | {v['pauses']} | {v['wall']:.2f} |")

print("\nWhole-process wall times, one run each on this machine:\n")
print("| transport | wall s flexplane | htsim | flexplane faster by |")
print("|---|---|---|---|")
for label, f, h in PAIRS:
    a, c = fp[f]["wall"], hs[h]["wall"]
    print(f"| {label} | {a:.2f} | {c:.2f} | {c / a:.1f} x |" if a > 0 else f"| {label} | {a:.2f} | {c:.2f} | - |")
PY
