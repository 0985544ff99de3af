#!/usr/bin/env bash
# Why flexplane's DCQCN and htsim's differ in tails and queues (docs/validation.md,
# "DCQCN against htsim, one difference at a time"): htsim_roce run again with one difference
# from flexplane removed at a time, on the scenarios of htsim_incast.sh (8 -> 1
# incast, k = 4 fat tree, 3000 packets per flow) and htsim_websearch.sh (web
# search, k = 8 fat tree, 50 % load for --ms ms, seed --seed), same links,
# buffers, DCQCN parameters and marking threshold (K = 20) as there. htsim_roce
# is built once, from a copy patched as htsim_websearch.sh's (alpha timer
# restarted, start times in ns, pacing stops after the last packet, sources
# named by flow id) plus switches read from the environment, each off unless
# set to 1 (each patch checks its text is where expected):
#   FP_OWN_ALPHA        one alpha per sender (htsim's is static: shared by all
#                       senders and decayed by each one's timer; dcqcn.h)
#   FP_WINDOW           at most the path's bandwidth-delay product in flight,
#                       ceil(hops x (2 x hop latency + packet + ACK time) /
#                       packet time): 35 / 69 / 103 packets over 2 / 4 / 6
#                       hops, flexplane's window (htsim's sender has none)
#   FP_MARK_ARRIVAL     CE on arrivals that find more than K packets queued
#                       (flexplane's dctcp), not on departures that leave with
#                       at least K x 1436 bytes queued (htsim)
#   FP_NO_DEFERRED_CNP  the receiver sends a CNP only for a marked packet that
#                       arrives 50 us or more after its last CNP (flexplane's
#                       sender applies that limit to echoes); htsim also sends
#                       one when the interval ends if packets were marked in it
#   FP_BYTE_COUNTER     the byte counter counts bytes (1500 per packet, one
#                       event per 10 MB = 6667 packets, flexplane's); htsim adds
#                       packets to it, so its 10^7 is never reached
#   FP_RT_CAP           the target rate RT stops at line rate (flexplane);
#                       htsim's grows past it during hyper increase
# Variants: htsim as it ships (alpha shared: the comparison of htsim_incast.sh),
# with FP_OWN_ALPHA (the "fixed htsim" of htsim_websearch.sh and the base of
# the rest), the base plus one switch each, the base plus all of them, and all
# but one (FP_WINDOW, FP_MARK_ARRIVAL, FP_NO_DEFERRED_CNP). flexplane runs as
# the two scripts run it (its defaults: the BDP window, and a CNP at the end of
# an interval in which echoes arrived, as the DCQCN paper's NP and htsim), with
# its byte counter off (dcqcn_byte_counter_pkts 2^30), with
# dcqcn_cnp_deferred: false (echoes inside the interval dropped: flexplane
# before 2026-11-29), with dcqcn_window: false (no window, as htsim), and both.
# Prints one markdown table per scenario: FCT mean / p99 (us, to the last ACK;
# incast: p99 = max of 8), completion, the ToR downlink queue p50 / p99 / max
# (incast: host 0's; web search: all 128), and flexplane against each htsim
# variant in %.
#
#   validation/htsim_dcqcn_causes.sh [--htsim-src DIR] [--work DIR] [--scenario S] [--ms MS] [--seed N]
#
#   --htsim-src  htsim's sim/ folder (default ../shared/refs/htsim/sim; its
#                REFERENCE.md: BSD-2, built outside the project tree)
#   --work       where htsim is built and both simulators run (default
#                /tmp/flexplane-htsim-dcqcn-causes)
#   --scenario   incast, websearch or both (default both)
#   --ms         web search arrival window, ms of emulated time (default 2: 911 flows)
#   --seed       web search workload seed (default 1)
# Needs build/flexplane-emulator (make), cmake, g++, python3 and /usr/bin/time.
# About 4 minutes for htsim's build, then ~1 minute for the incast's 11
# htsim runs and 10-25 minutes for the web search's (htsim_roce prints a
# line per sender event).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
source validation/htsim_lib.sh
SRC=$REPO/../shared/refs/htsim/sim
WORK=/tmp/flexplane-htsim-dcqcn-causes
SCENARIO=both
MS=2
SEED=1
while (($#)); do
  htsim_common_option "$@" && { shift "$HTSIM_SHIFT"; continue; }
  case $1 in
    --scenario) SCENARIO=$2; shift 2 ;;
    --ms) MS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    *) htsim_unknown_option "$1" ;;
  esac
done
htsim_check_src
[[ $SCENARIO =~ ^(incast|websearch|both)$ ]] ||
  { echo "error: --scenario: '$SCENARIO' is not incast, websearch or both" >&2; exit 2; }
[[ $MS =~ ^[0-9]+(\.[0-9]+)?$ ]] && python3 -c "import sys; sys.exit(not 0 < float('$MS') <= 16)" ||
  { echo "error: --ms: '$MS' is not a number of ms in (0, 16]" >&2; exit 2; }
[[ $SEED =~ ^[0-9]+$ ]] || { echo "error: --seed: '$SEED' is not a non-negative integer" >&2; exit 2; }
htsim_prepare_work

# Both scenarios: as htsim_incast.sh and htsim_websearch.sh.
GBPS=100
LAT_TS=9           # flexplane link latency, timeslots (0.12 us each at 100 Gbit/s)
HOP_US=0.96        # htsim's propagation per hop: (LAT_TS - 1) timeslots
K_MARK=20          # DCQCN marking threshold, packets
BUF=4096           # switch buffer per port, packets

# htsim_roce with the switches of the header.
BUILD=$WORK/sim/build
if [[ ! -x $BUILD/datacenter/htsim_roce || ! -x $BUILD/parse_output || ! -e $WORK/sim/.dcqcn_switches ]]; then
  htsim_fresh_copy "$WORK/sim"
  python3 - "$WORK/sim" <<'PY'
import sys
sys.path.insert(0, "validation")
from htsim_patch import patcher, restart_alpha_timer, roce_start_in_ns
sim = sys.argv[1]
patch = patcher(sim)
# As htsim_websearch.sh: (1) restart the alpha timer where alpha decays;
# (3) start times in ns; (4) stop pacing once every packet is out; (5) names.
restart_alpha_timer(patch)
roce_start_in_ns(patch)
patch("roce.cpp", r"if \(_flow_size && _highest_sent >= _flow_size\) \{",
      "if (_flow_size && _highest_sent * _mss >= _flow_size) {")
patch("roce.cpp", r"if \(_flow_size && _highest_sent>=_flow_size && _last_acked < _flow_size\)\{",
      "if (_flow_size && _highest_sent * _mss >= _flow_size && _last_acked * _mss < _flow_size){")
patch("datacenter/main_roce.cpp", r'roceSrc->setName\("Roce_" \+ ntoa\(src\) \+ "_" \+ ntoa\(dest\)\);',
      'roceSrc->setName("Roce_" + ntoa(src) + "_" + ntoa(dest) + "_id" + ntoa(crt->flowid));')
# The switches, read once from the environment.
open(f"{sim}/fp_switches.h", "w").write("""#pragma once
#include <cstdlib>
#include <cstring>
#define FP_SWITCH(fn, var) inline bool fn() { static const bool on = [] { \\
    const char* v = std::getenv(var); return v && std::strcmp(v, "1") == 0; }(); return on; }
FP_SWITCH(fp_own_alpha, "FP_OWN_ALPHA")
FP_SWITCH(fp_window, "FP_WINDOW")
FP_SWITCH(fp_mark_arrival, "FP_MARK_ARRIVAL")
FP_SWITCH(fp_no_deferred_cnp, "FP_NO_DEFERRED_CNP")
FP_SWITCH(fp_byte_counter, "FP_BYTE_COUNTER")
FP_SWITCH(fp_rt_cap, "FP_RT_CAP")
""")
# FP_OWN_ALPHA: every use of the static _alpha goes through ALPHA.
patch("dcqcn.h", r"static double _alpha, _g;", "static double _alpha, _g;\n    double _alpha_own = 1;")
patch("dcqcn.cpp", r"(?<![:\w])_alpha(?!\w)", "ALPHA", 7)
patch("dcqcn.cpp", r'#include "dcqcn.h"\n',
      '#include "dcqcn.h"\n#include "fp_switches.h"\n#define ALPHA (fp_own_alpha() ? _alpha_own : _alpha)\n')
# FP_WINDOW: RoceSrc stops while _fp_window packets are unacknowledged; the
# ACK that opens the window restarts it.
patch("roce.h", r"(\n\s*PacketFlow _flow;\n)", r"\1    uint64_t _fp_window = 0;\n    bool _fp_blocked = false;\n")
patch("roce.cpp", r'#include "roce.h"\n', '#include "roce.h"\n#include "fp_switches.h"\n')
patch("roce.cpp", r"(\n([ \t]*)if \(_time_last_sent==0 \|\| eventlist\(\)\.now\(\) - _time_last_sent >= _packet_spacing\)\{)",
      lambda m: f"\n{m[2]}if (_fp_window && _highest_sent - _last_acked >= _fp_window) {{\n"
                f"{m[2]}    _fp_blocked = true;\n{m[2]}    return;\n{m[2]}}}{m[1]}")
patch("roce.cpp", r"(\n([ \t]*)_last_acked = ackno;\n)",
      lambda m: f"{m[1]}{m[2]}if (_fp_blocked && _highest_sent - _last_acked < _fp_window) {{\n"
                f"{m[2]}    _fp_blocked = false;\n{m[2]}    eventlist().sourceIsPendingRel(*this, 0);\n{m[2]}}}\n")
patch("datacenter/main_roce.cpp", r'#include "dcqcn.h"\n', '#include "dcqcn.h"\n#include "fp_switches.h"\n')
patch("datacenter/main_roce.cpp", r"(\n([ \t]*)roceSrc->set_dst\(dest\);\n)",
      lambda m: f"{m[1]}{m[2]}if (fp_window()) {{  // the path's bandwidth-delay product, packets\n"
                f"{m[2]}    int hops = topo_cfg->HOST_POD_SWITCH(src) == topo_cfg->HOST_POD_SWITCH(dest) ? 2\n"
                f"{m[2]}             : topo_cfg->HOST_POD(src) == topo_cfg->HOST_POD(dest) ? 4 : 6;\n"
                f"{m[2]}    double pkt = (Packet::data_packet_size() + RocePacket::ACKSIZE) * 8.0 / linkspeed;\n"
                f"{m[2]}    double ack = RocePacket::ACKSIZE * 8.0 / linkspeed;\n"
                f"{m[2]}    roceSrc->_fp_window = (uint64_t)ceil(hops * (2 * timeAsSec(hop_latency) + pkt + ack) / pkt - 1e-9);\n"
                f"{m[2]}}}\n")
# FP_MARK_ARRIVAL: mark arrivals that find more than K packets of 1500 bytes.
patch("queue_lossless_output.cpp", r'#include "queue_lossless_input.h"\n',
      '#include "queue_lossless_input.h"\n#include "rocepacket.h"\n#include "fp_switches.h"\n')
patch("queue_lossless_output.cpp", r"(\n([ \t]*)_queuesize \+= pkt\.size\(\);\n)",
      lambda m: f"\n{m[2]}if (_ecn_enabled && fp_mark_arrival() && _queuesize > (mem_b)(_K / Packet::data_packet_size())"
                f" * (Packet::data_packet_size() + RocePacket::ACKSIZE))\n"
                f"{m[2]}    pkt.set_flags(pkt.flags() | ECN_CE);{m[1]}")
patch("queue_lossless_output.cpp", r"if \(_ecn_enabled && _queuesize > _K\)",
      "if (_ecn_enabled && !fp_mark_arrival() && _queuesize > _K)")
# FP_NO_DEFERRED_CNP: no CNP when the interval ends.
patch("dcqcn.cpp", r"(void DCQCNSink::doNextEvent\(\)\{\n)", r"\1    if (fp_no_deferred_cnp()) return;\n")
# FP_BYTE_COUNTER: bytes, not packets.
patch("dcqcn.cpp", r"_byte_counter \+= \(_highest_sent - _old_highest_sent\);",
      "_byte_counter += (_highest_sent - _old_highest_sent) *\n"
      "        (fp_byte_counter() ? (uint64_t)(Packet::data_packet_size() + RocePacket::ACKSIZE) : 1);")
# FP_RT_CAP: RT at most line rate.
patch("dcqcn.cpp", r"(\n([ \t]*)(_RT = _RT \+ \(min\(_T,_BC\)-_F\)\* _RHAI;|_RT \+= _RAI;)\n)",
      lambda m: f"{m[1]}{m[2]}if (fp_rt_cap() && _RT > _link) _RT = _link;\n", 2)
PY
  touch "$WORK/sim/.dcqcn_switches"
  nice cmake -S "$WORK/sim" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release > "$WORK/build.log" 2>&1
  nice cmake --build "$BUILD" --parallel 2 --target htsim_roce parse_output >> "$WORK/build.log" 2>&1 ||
    { echo "error: htsim build failed: $WORK/build.log" >&2; exit 1; }
fi

# The variants: name, label, switches.
VARIANTS=(
  "shared|htsim as it ships (alpha shared)|"
  "base|base: one alpha per sender|FP_OWN_ALPHA"
  "window|base + BDP window|FP_OWN_ALPHA FP_WINDOW"
  "arrival|base + marking at arrival|FP_OWN_ALPHA FP_MARK_ARRIVAL"
  "nodefer|base + no deferred CNP|FP_OWN_ALPHA FP_NO_DEFERRED_CNP"
  "bytes|base + byte counter|FP_OWN_ALPHA FP_BYTE_COUNTER"
  "rtcap|base + RT capped|FP_OWN_ALPHA FP_RT_CAP"
  "all|base + all five|FP_OWN_ALPHA FP_WINDOW FP_MARK_ARRIVAL FP_NO_DEFERRED_CNP FP_BYTE_COUNTER FP_RT_CAP"
  "all_but_window|all but the window|FP_OWN_ALPHA FP_MARK_ARRIVAL FP_NO_DEFERRED_CNP FP_BYTE_COUNTER FP_RT_CAP"
  "all_but_arrival|all but marking at arrival|FP_OWN_ALPHA FP_WINDOW FP_NO_DEFERRED_CNP FP_BYTE_COUNTER FP_RT_CAP"
  "all_but_nodefer|all but no deferred CNP|FP_OWN_ALPHA FP_WINDOW FP_MARK_ARRIVAL FP_BYTE_COUNTER FP_RT_CAP"
)
KEEP='finished at|CNP received|LOSSLESS|^New:'
PARSE_OUTPUT=$BUILD/parse_output
run_variants() {  # htsim_roce once per variant (htsim_lib.sh's htsim_run, under $WORK/htsim)
  local v name label switches s
  for v in "${VARIANTS[@]}"; do
    IFS='|' read -r name label switches <<< "$v"
    for s in FP_OWN_ALPHA FP_WINDOW FP_MARK_ARRIVAL FP_NO_DEFERRED_CNP FP_BYTE_COUNTER FP_RT_CAP; do
      if [[ " $switches " == *" $s "* ]]; then export "$s=1"; else unset "$s"; fi
    done
    htsim_run "$name" "$BUILD/datacenter/htsim_roce" -dcqcn $K_MARK
  done
  unset FP_OWN_ALPHA FP_WINDOW FP_MARK_ARRIVAL FP_NO_DEFERRED_CNP FP_BYTE_COUNTER FP_RT_CAP
}
flexplane_runs() {  # yaml: its variants (flexplane_variants)
  local v
  for v in dcqcn dcqcn_nobytes not_deferred nowindow nowindow_not_deferred; do
    build/flexplane-emulator run "$1" --variant $v --out "$WORK/flexplane" --quiet > /dev/null
  done
}
flexplane_variants() {
  cat <<EOF
variants:
  dcqcn: {}
  dcqcn_nobytes: {transport: {dcqcn_byte_counter_pkts: $((1 << 30))}}
  not_deferred: {transport: {dcqcn_cnp_deferred: false}}
  nowindow: {transport: {dcqcn_window: false}}
  nowindow_not_deferred: {transport: {dcqcn_window: false, dcqcn_cnp_deferred: false}}
EOF
}
VARIANT_LIST=$(printf '%s\n' "${VARIANTS[@]}")

# The analysis, shared: $1 scenario, then what it needs (see the two calls).
analyse() {
  VARIANT_LIST=$VARIANT_LIST python3 - "$@" <<'PY'
import csv, math, os, re, statistics, sys
from pathlib import Path
scenario, work = sys.argv[1], Path(sys.argv[2])
lat_ts, ts_us = 9, 1500 * 8 / 100e3
variants = [line.split("|")[:2] for line in os.environ["VARIANT_LIST"].splitlines() if line]

def pct(v, q):  # nearest rank, as occupancy_summary.csv
    v = sorted(v)
    return v[max(0, math.ceil(q * len(v)) - 1)] if v else None

QUEUE = re.compile(r"([\d.]+) Type QUEUE_APPROX ID \d+ Ev RANGE LastQ (-?\d+) MinQ -?\d+ MaxQ (-?\d+)")
if scenario == "incast":
    recv = int(sys.argv[3])
    starts, hops = None, lambda s, d: 6
else:
    window_us = float(sys.argv[3]) * 1000
    trace = {int(r["flow_id"]): r for r in csv.DictReader(open(work / "websearch.csv"))}
    starts = {fid: int(r["start_timeslot"]) * ts_us for fid, r in trace.items()}
    hops = lambda s, d: 2 if s // 4 == d // 4 else 4 if s // 16 == d // 16 else 6

def htsim(name):
    d = work / "htsim" / name
    out = (d / "out.txt").read_text()
    if scenario == "incast":
        fct = {i: float(t) for i, t in enumerate(re.findall(r"finished at ([\d.]+)", out))}
        end = max(fct.values()) if fct else None
        q, qmax = [], 0.0
        for m in QUEUE.finditer((d / "queue.txt").read_text()):
            t = float(m[1]) * 1e6
            if end is None or t - 10 < end:  # intervals of 10 us that began before the last completion
                qmax = max(qmax, int(m[3]) / 1500)
                if end is None or t <= end:
                    q.append(int(m[2]) / 1500)
    else:
        fct = {}
        for m in re.finditer(r"Flow \S+_id(\d+) .*?finished at ([\d.]+)", out):
            fct[int(m[1]) - 1] = float(m[2]) - starts[int(m[1]) - 1]
        end = max(float(m) for m in re.findall(r"finished at ([\d.]+)", out))
        q = [int(m[2]) / 1500 for m in QUEUE.finditer((d / "queue.txt").read_text()) if float(m[1]) * 1e6 <= window_us]
        qmax = max(q, default=0)
    return dict(fct=fct, end=end, q=q, qmax=qmax, cuts=out.count("CNP received"))

def flexplane(v):
    d = work / "flexplane" / v
    rows = list(csv.DictReader(open(d / "flows.csv")))
    # FCT to the last ACK, as htsim's: add flexplane's ACK latency
    # (ack_latency: propagation, sum (L - 1) + 1 timeslots over the path).
    fct = {int(r["flow_id"]): float(r["fct_us"]) + (hops(int(r["src"]), int(r["dst"])) * (lat_ts - 1) + 1) * ts_us
           for r in rows if r["finished"] == "1"}
    end = max(float(r["start_us"]) + fct[int(r["flow_id"])] for r in rows if r["finished"] == "1")
    occ = csv.DictReader(open(d / "occupancy.csv"))
    if scenario == "incast":
        q = [int(r["packets"]) for r in occ if r["router"] == f"edge{recv // 4}_{recv // 2 % 2}"
             and r["port"] == str(recv % 2) and float(r["time_us"]) <= end]
    else:
        q = [int(r["packets"]) for r in occ
             if r["router"].startswith("edge") and int(r["port"]) < 4 and float(r["time_us"]) <= window_us]
    return dict(fct=fct, end=end, q=q, qmax=max(q), cuts=sum(int(r["ecn_reductions"] or 0) for r in rows))

runs = [(f"htsim: {label}", htsim(name)) for name, label in variants]
fp = flexplane("dcqcn")
runs += [("flexplane", fp), ("flexplane, byte counter off", flexplane("dcqcn_nobytes")),
         ("flexplane, CNP not deferred (before 2026-11-29)", flexplane("not_deferred")),
         ("flexplane, no window", flexplane("nowindow")),
         ("flexplane, no window, CNP not deferred", flexplane("nowindow_not_deferred"))]
def size_in(lo, hi):  # flows of lo..hi packets (web search)
    return lambda r: [v for k, v in r["fct"].items() if lo <= int(trace[k]["size_pkts"]) <= hi]

def diff(a, b):
    return "-" if a is None or not b else f"{(a - b) / b * 100:+.0f} %"

def f1(x):
    return "-" if x is None else f"{x:.1f}" if isinstance(x, float) and x != int(x) else f"{x:.0f}"

if scenario == "incast":
    print("8 -> 1 incast (htsim_incast.sh's). FCT in us to the last ACK (p99 = max of 8); queue = host 0's ToR "
          "downlink, packets, every 10 us (htsim) / 1.2 us (flexplane) up to the last completion; "
          "diff = flexplane against that row.\n")
    print("| run | FCT mean | FCT p99 | completion | queue p50 / p99 / max | rate cuts | "
          "diff FCT mean | diff FCT p99 | diff completion | diff queue p99 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
else:
    n = len(trace)
    print(f"Web search (htsim_websearch.sh's, {n} flows). FCT in us to the sender's last ACK: all flows, p99 of "
          f"those of 1-100 and 101-1000 packets, mean of 1001-10000; queue = all 128 ToR downlinks, packets, every "
          f"~10 us up to {window_us:.0f} us; diff = flexplane against that row.\n")
    print("| run | flows done | FCT mean | FCT p99 | p99 1-100 | p99 101-1000 | mean 1001-10000 | queue p50 / p99 / max "
          "| rate cuts | diff FCT mean | diff p99 1-100 | diff p99 101-1000 | diff mean 1001-10000 | diff queue p99 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    metrics = (lambda r: pct(size_in(1, 100)(r), 0.99), lambda r: pct(size_in(101, 1000)(r), 0.99),
               lambda r: statistics.mean(size_in(1001, 10000)(r)))
fmean, fp99, fq99 = statistics.mean(fp["fct"].values()), pct(fp["fct"].values(), 0.99), pct(fp["q"], 0.99)
for label, r in runs:
    vals = list(r["fct"].values())
    mean, p99, q99 = statistics.mean(vals), pct(vals, 0.99), pct(r["q"], 0.99)
    queue = f"{f1(pct(r['q'], 0.5))} / {f1(q99)} / {f1(r['qmax'])}"
    if scenario == "incast":
        print(f"| {label} | {mean:.1f} | {p99:.1f} | {r['end']:.1f} | {queue} | {r['cuts']} | {diff(fmean, mean)} "
              f"| {diff(fp99, p99)} | {diff(fp['end'], r['end'])} | {diff(fq99, q99)} |")
    else:
        m = [f(r) for f in metrics]
        print(f"| {label} | {len(vals)}/{n} | {mean:.1f} | {p99:.1f} | " + " | ".join(f"{x:.1f}" for x in m) +
              f" | {queue} | {r['cuts']} | {diff(fmean, mean)} | " +
              " | ".join(diff(f(fp), x) for f, x in zip(metrics, m)) + f" | {diff(fq99, q99)} |")
print()
PY
}

if [[ $SCENARIO != websearch ]]; then
  # The incast of htsim_incast.sh (htsim_lib.sh writes the matrix and trace).
  W=$WORK/incast
  mkdir -p "$W"
  write_incast "$W" 3000 0 4 5 6 7 8 9 10 11
  cat > "$W/incast.yaml" <<EOF
# Written by validation/htsim_dcqcn_causes.sh: htsim_incast.sh's DCQCN run.
seed: 1
network: {link_rate_gbps: $GBPS}
topology: {kind: fat_tree, k: 4, link_latency_timeslots: $LAT_TS}
routers: {default: {scheme: dctcp, queue_manager: {k_pkts: $K_MARK, capacity_pkts: $BUF}}}
transport: {kind: dcqcn, ack_latency: propagation}
workload: {kind: trace, trace: incast.csv}
run: {duration_ms: 1, drain_ms: 20, occupancy_interval_us: 1.2}
output: {occupancy: csv}
$(flexplane_variants)
EOF
  COMMON=(-tm "$W/incast.cm" -nodes 16 -linkspeed $((GBPS * 1000)) -mtu 1436 -hop_latency $HOP_US -q $BUF
          -strat ecmp_host -paths 256 -end 5000 -log tor_downqueue -pfc_thresholds 99999 100000)
  QUEUE_RE='Name LS0->DST0\(0\)'
  WORK=$W run_variants
  rm -rf "$W/flexplane"
  WORK=$W flexplane_runs "$W/incast.yaml"
  WORK=$W analyse incast "$W" 0
fi

if [[ $SCENARIO != incast ]]; then
  # The web search of htsim_websearch.sh: flexplane's flow list, replayed.
  W=$WORK/websearch
  write_websearch "$W" validation/htsim_dcqcn_causes.sh
  cat > "$W/websearch.yaml" <<EOF
# Written by validation/htsim_dcqcn_causes.sh: htsim_websearch.sh's DCQCN run.
seed: $SEED
network: {link_rate_gbps: $GBPS}
topology: {kind: fat_tree, k: 8, link_latency_timeslots: $LAT_TS}
routers: {default: {scheme: dctcp, queue_manager: {k_pkts: $K_MARK, capacity_pkts: $BUF}}}
transport: {kind: dcqcn, ack_latency: propagation, nic: round_robin}
workload: {kind: trace, trace: websearch.csv}
run: {duration_ms: $MS, drain_ms: 100, occupancy_interval_us: 10.08}
output: {occupancy: csv}
$(flexplane_variants)
EOF
  COMMON=(-tm "$W/websearch.cm" -nodes 128 -linkspeed $((GBPS * 1000)) -mtu 1436 -hop_latency $HOP_US -q $BUF
          -strat ecmp_host -paths 256 -end 40000 -log tor_downqueue -pfc_thresholds 99999 100000)
  QUEUE_RE='Type QUEUE_APPROX .* Name LS[0-9]+->DST[0-9]+\('
  WORK=$W run_variants
  WORK=$W flexplane_runs "$W/websearch.yaml"
  WORK=$W analyse websearch "$W" "$MS"
fi
