#!/usr/bin/env bash
# flexplane's Swift beside htsim's (docs/transports.md "swift",
# docs/validation.md "Swift on an incast"): the 8 -> 1 incast of
# validation/htsim_incast.sh (k = 4 fat tree, hosts 4..11 each sending PKTS
# packets of 1500 bytes to host 0 from t = 0, 100 Gbit/s links with 0.96 us of
# propagation per hop; flexplane 9 timeslots of 0.12 us, one of them the
# packet's transmission), 4096-packet buffers, initial window 15 packets
# (htsim_swift's -cwnd default), min RTO 100 us (htsim's). Swift as htsim
# fixes it (no flags): AI 1 packet, beta 0.8, max_mdf 0.5, base target 20 us
# on the whole RTT, plus flow scaling (fs_range 100 us, 0.1..100 packets);
# its hop scaling is lost (Route::clone() zeroes the hop count: 0 us) and it
# paces only below one packet (not reached here: windows stay near 24).
# flexplane has neither scaling; its target is the path's base RTT (103
# timeslots, 12.36 us) + swift_target_delay_us. Three pairs:
#   flow scaling:  htsim unchanged; flexplane's target = htsim's at the fair
#                  share of the window (fixed point of 8 windows over the
#                  bandwidth-delay product + the queue the target allows);
#   no scaling:    htsim -flow_scaling off (patch 4); flexplane's target
#                  20 us in all (swift_target_delay_us = 20 us - base RTT);
#   htsim's split: as the first, the flows numbered so that flexplane's ECMP
#                  splits them 5 / 3 over host 0's pod's aggregation
#                  switches as htsim's paths do (4 / 4 otherwise): what the
#                  first burst queues where (matters for short flows).
# flexplane unpaced (pacing_gain 0: htsim paces only below one packet).
# Prints (markdown) per run: flows done, FCT mean / p99 / min and completion
# (us, to the last ACK), host 0's ToR downlink queue p50 / p99 / max, drops
# (htsim's logs do not count them: none when finished flows resent nothing),
# retransmissions, whole-process wall time; then flexplane against htsim.
#
#   validation/htsim_swift.sh [--htsim-src DIR] [--work DIR] [--pkts N]
#
#   --htsim-src   htsim's sim/ folder (default ../shared/refs/htsim/sim; its
#                 REFERENCE.md: BSD-2, built outside the project tree)
#   --work        where htsim is built and both simulators run (default
#                 /tmp/flexplane-htsim-swift)
#   --pkts        packets per flow (default 3000; at least 2)
# htsim_swift is built from a copy whose datacenter/main_swift.cpp has four
# changes (none in the Swift sender): (1) fat_tree_overload: the fat tree is
# configured through the tiers overload with -hop_latency (us, default 1);
# unchanged, its call binds to the (nodes, linkspeed, queuesize,
# failed_links, ...) overload and builds a tree of 3 nodes; (2) node_count:
# the node count comes from the configuration, since FatTreeTopology does not
# override Topology::no_of_nodes(), which aborts; (3) queue_log: every queue
# is sampled every 10 us (as main_hpcc's -log tor_downqueue) and idmap.txt
# names them; unchanged, no queue is logged; (4) flow_scaling: -flow_scaling
# off zeroes SwiftSrc::_fs_range (used by the second pair only). The flow
# size is -flowsize PKTS - 1 (htsim_swift sends one packet more than it is
# told; the connection matrix's sizes are ignored). Needs
# build/flexplane-emulator (make), cmake, g++, python3 and /usr/bin/time.
# About 4 minutes the first time (htsim's build on 2 busy cores), then ~6 s.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
source validation/htsim_lib.sh
SRC=$REPO/../shared/refs/htsim/sim
WORK=/tmp/flexplane-htsim-swift
PKTS=3000
while (($#)); do
  htsim_common_option "$@" && { shift "$HTSIM_SHIFT"; continue; }
  case $1 in
    --pkts) PKTS=$2; shift 2 ;;
    *) htsim_unknown_option "$1" ;;
  esac
done
htsim_check_src
[[ $PKTS =~ ^[1-9][0-9]{0,8}$ ]] && ((PKTS >= 2)) || { echo "error: --pkts: '$PKTS' is not an integer of at least 2" >&2; exit 2; }
htsim_prepare_work

# The scenario, in one place for both simulators.
SENDERS="4 5 6 7 8 9 10 11"
RECEIVER=0
BUF=4096           # switch buffer per port, packets
GBPS=100
LAT_TS=9           # flexplane link latency, timeslots (0.12 us each at 100 Gbit/s)
CWND=15            # initial window, packets (htsim_swift's default)
END_US=$((PKTS * 3 + 5000))  # htsim's end of time: well past the link's 8 x PKTS x 0.12 us

# htsim, built outside the tree with the patches of the header. The patch
# script's checksum marks the build, so a changed patch rebuilds it.
BUILD=$WORK/sim/build
cat > "$WORK/patch_main_swift.py" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()

def sub(name, pattern, repl):
    global text
    new, n = re.subn(pattern, repl, text)
    if n != 1:
        sys.exit(f"error: {path}: patch {name}: {pattern!r} found {n} times, expected 1; cannot patch")
    text = new

OPTION = r'(\n([ \t]*)\} else if \(!strcmp\(argv\[i\],"-plb"\)\)\{)'   # new options go before -plb
VARIABLE = r"(\n([ \t]*)char\* topo_file = NULL;\n)"
# (1) fat_tree_overload
sub("fat_tree_overload", r"make_unique<FatTreeTopologyCfg>\(3, no_of_nodes, linkspeed, queuesize,\s*RANDOM, SWIFT_SCHEDULER\);",
    "make_unique<FatTreeTopologyCfg>(3, no_of_nodes, linkspeed, queuesize, hop_latency, 0, RANDOM, SWIFT_SCHEDULER);")
sub("fat_tree_overload", OPTION,
    r'\n\2} else if (!strcmp(argv[i],"-hop_latency")){\n\2    hop_latency = timeFromUs(atof(argv[i+1]));\n\2    i++;\1')
sub("fat_tree_overload", VARIABLE, r"\1\2simtime_picosec hop_latency = timeFromUs(1.0);\n")
# (2) node_count
sub("node_count", r"no_of_nodes = top->no_of_nodes\(\);", "no_of_nodes = topo_cfg->no_of_nodes();")
# (3) queue_log
sub("queue_log", r"make_unique<FatTreeTopology>\(topo_cfg\.get\(\), nullptr, &eventlist, nullptr\);",
    "make_unique<FatTreeTopology>(topo_cfg.get(), qlf, &eventlist, nullptr);")
sub("queue_log", r"(\n([ \t]*)unique_ptr<FatTreeTopology> top;\n)",
    r"\n\2QueueLoggerFactory* qlf = new QueueLoggerFactory(&logfile, QueueLoggerFactory::LOGGER_SAMPLING, eventlist);"
    r"\n\2qlf->set_sample_period(timeFromUs(10.0));\1")
sub("queue_log", r'(\n([ \t]*)cout << "Done" << endl;\n)', r"\1\2Logged::dump_idmap();\n")
# (4) flow_scaling
sub("flow_scaling", OPTION,
    r'\n\2} else if (!strcmp(argv[i],"-flow_scaling")){\n\2    flow_scaling = strcmp(argv[i+1], "off") != 0;\n\2    i++;\1')
sub("flow_scaling", VARIABLE, r"\1\2bool flow_scaling = true;\n")
sub("flow_scaling", r"(\n([ \t]*)swiftSrc->set_cwnd\(cwnd\*Packet::data_packet_size\(\)\);\n)",
    r"\1\2if (!flow_scaling) swiftSrc->_fs_range = 0;\n")
open(path, "w").write(text)
PY
STAMP=$(sha256sum "$WORK/patch_main_swift.py" | cut -d' ' -f1)
if [[ ! -x $BUILD/datacenter/htsim_swift || ! -x $BUILD/parse_output ||
      "$(cat "$WORK/sim/.swift_patches" 2> /dev/null)" != "$STAMP" ]]; then
  htsim_fresh_copy "$WORK/sim"
  python3 "$WORK/patch_main_swift.py" "$WORK/sim/datacenter/main_swift.cpp"
  (cd "$WORK/sim" && diff -u "$SRC/datacenter/main_swift.cpp" datacenter/main_swift.cpp > "$WORK/main_swift.diff" || true)
  cmake -S "$WORK/sim" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release > "$WORK/build.log" 2>&1
  cmake --build "$BUILD" --parallel 2 --target htsim_swift parse_output >> "$WORK/build.log" 2>&1 ||
    { echo "error: htsim build failed: $WORK/build.log" >&2; exit 1; }
  echo "$STAMP" > "$WORK/sim/.swift_patches"
fi

# Targets. flexplane's base RTT: the forward path's latency (6 links of
# LAT_TS) + the ACK's (ack_latency: propagation, 6 x (LAT_TS - 1) + 1).
# htsim: 20 us + fs(w), fs(w) = alpha / sqrt(w) + beta in [0, 100 us] for a
# window of w whole packets (htsim divides bytes by the MSS in integers),
# alpha = 100 / (1/sqrt(0.1) - 1/sqrt(100)), beta = -alpha / sqrt(100). With
# flow scaling, w is the fair share of what is in flight (base RTT in
# timeslots + the queue the target allows, in packets) over the senders:
# iterate to the fixed point.
read -r TARGET_FS_TS TARGET_NOFS_TS W_FS FS_US < <(python3 - "$LAT_TS" "$GBPS" $SENDERS <<'PY'
import math, sys
lat, gbps, n = int(sys.argv[1]), int(sys.argv[2]), len(sys.argv) - 3
ts_us = 1500 * 8 / (gbps * 1e3)
base = 6 * lat + 6 * (lat - 1) + 1            # timeslots = packets in flight at line rate
alpha = 100 / (1 / math.sqrt(0.1) - 1 / math.sqrt(100))
beta = -alpha / math.sqrt(100)
fs = lambda w: 100.0 if w < 1 else min(max(alpha / math.sqrt(w) + beta, 0.0), 100.0)
q, seen = 0, set()
while q not in seen:
    seen.add(q)
    w = (base + q) // n
    q = round((20 + fs(w)) / ts_us) - base
print(q, round(20 / ts_us) - base, w, f"{fs(w):.2f}")
PY
)

write_incast "$WORK" "$PKTS" "$RECEIVER" $SENDERS   # the .cm's sizes are ignored: -flowsize
# The same flows numbered so that flexplane's flow hash sends each out of its
# pod through the aggregation switch position htsim's run gives it (hosts
# 4, 6, 7, 8, 9 through position 0, 5, 10, 11 through 1: 5 and 3 flows
# into host 0's pod; write_incast's numbering gives 4 and 4). htsim's paths
# are fixed by its seed (srand(13)); read from a debug print of
# SwiftSrc::_paths[0] (what the sender uses after set_paths), not built
# here. 5 of the 8 core choices agree too (flexplane ids: validation/fat_tree_paths.cc).
python3 - "$WORK/incast_htsim_split.csv" "$PKTS" "$RECEIVER" <<'PY'
import sys
ids = {4: 4, 5: 5, 6: 1, 7: 2, 8: 6, 9: 7, 10: 3, 11: 0}   # source host -> flow id
with open(sys.argv[1], "w") as f:
    print("flow_id,src,dst,size_pkts,start_timeslot", file=f)
    for src, i in sorted(ids.items(), key=lambda x: x[1]):
        print(f"{i},{src},{sys.argv[3]},{sys.argv[2]},0", file=f)
PY
TS_US=$(python3 -c "print(1500 * 8 / ($GBPS * 1e3))")
us() { python3 -c "print(round($1 * $TS_US, 6))"; }
cat > "$WORK/incast.yaml" <<EOF
# Written by validation/htsim_swift.sh: the incast of its header.
seed: 1
network: {link_rate_gbps: $GBPS}
topology: {kind: fat_tree, k: 4, link_latency_timeslots: $LAT_TS}
routers:
  default: {scheme: droptail, queue_manager: {capacity_pkts: $BUF}}
transport: {kind: swift, ack_latency: propagation, initial_cwnd_pkts: $CWND, min_rto_us: 100, pacing_gain: 0,
            swift_ai_pkts: 1, swift_beta: 0.8, swift_max_mdf: 0.5, swift_target_delay_us: $(us "$TARGET_FS_TS")}
workload: {kind: trace, trace: incast.csv}
run: {duration_ms: 1, drain_ms: 50, occupancy_interval_us: 1.2}
output: {occupancy: csv}
variants:
  swift: {}
  swift_nofs:
    transport: {swift_target_delay_us: $(us "$TARGET_NOFS_TS")}
  swift_htsim_split:
    workload: {trace: incast_htsim_split.csv}
EOF

# htsim runs (deterministic: srand(13), path choices from rand()).
COMMON=(-tm "$WORK/incast.cm" -nodes 16 -linkspeed $((GBPS * 1000)) -mtu 1500 -hop_latency 0.96 -q $BUF
        -cwnd $CWND -flowsize $((PKTS - 1)) -end $END_US)
KEEP='finished at|retransmit_packet'
QUEUE_RE="RANGE .*Name LS$((RECEIVER / 2))->DST$RECEIVER\\(0\\)"
PARSE_OUTPUT=$BUILD/parse_output
htsim_run swift "$BUILD/datacenter/htsim_swift"
htsim_run swift_nofs "$BUILD/datacenter/htsim_swift" -flow_scaling off

# flexplane runs.
rm -rf "$WORK/flexplane"
for v in swift swift_nofs swift_htsim_split; do
  /usr/bin/time -f %e -o "$WORK/flexplane_$v.wall" build/flexplane-emulator run "$WORK/incast.yaml" \
    --variant $v --out "$WORK/flexplane" --quiet > /dev/null
done

python3 - "$WORK" "$PKTS" "$RECEIVER" "$LAT_TS" "$GBPS" "$TARGET_FS_TS" "$TARGET_NOFS_TS" "$W_FS" "$FS_US" <<'PY'
import csv, math, re, statistics, sys
from collections import defaultdict
from pathlib import Path
work = Path(sys.argv[1])
pkts, recv, lat_ts, gbps, t_fs, t_nofs, w_fs = map(int, sys.argv[2:9])
fs_us = float(sys.argv[9])
ts_us = 1500 * 8 / (gbps * 1e3)
n_flows = 8
base = 6 * lat_ts + 6 * (lat_ts - 1) + 1
# flexplane's FCT ends when the last packet reaches the receiver, htsim's when
# its ACK reaches the sender: add flexplane's ACK latency.
ack_us = (6 * (lat_ts - 1) + 1) * ts_us

def pct(v, q):  # nearest rank, as occupancy_summary.csv
    v = sorted(v)
    return v[max(0, math.ceil(q * len(v)) - 1)]

def htsim_run(name):
    d = work / "htsim" / name
    out = (d / "out.txt").read_text()
    first = {}
    for m in re.finditer(r"Flow (\S+) finished at ([\d.]+)", out):
        first.setdefault(m[1], float(m[2]))
    fct = list(first.values())
    end = max(fct) if fct else None
    samples, qmax = [], 0.0
    for m in re.finditer(r"([\d.]+) Type QUEUE_APPROX ID \d+ Ev RANGE LastQ (-?\d+) MinQ -?\d+ MaxQ (-?\d+)",
                         (d / "queue.txt").read_text()):
        t = float(m[1]) * 1e6
        if end is None or t - 10 < end:      # intervals of 10 us that began before the last completion
            qmax = max(qmax, int(m[3]) / 1500)
            if end is None or t <= end:
                samples.append(int(m[2]) / 1500)
    # htsim's logs count no drops (CUM_TRAFFIC prints its drop time as an integer number of
    # seconds: 0), but a finished flow resent every packet it lost, and htsim_swift prints
    # a line per retransmission: no retransmission in finished flows, no loss.
    rtx = out.count("retransmit_packet")
    drops = "-" if len(fct) < n_flows else "0" if rtx == 0 else f"<= {rtx}"
    return dict(done=len(fct), fct=fct, end=end, q=samples, qmax=qmax, drops=drops,
                rtx=rtx, wall=float((d / "wall").read_text().split()[-1]))

def flexplane_run(v):
    d = work / "flexplane" / v
    rows = list(csv.DictReader(open(d / "flows.csv")))
    done = [r for r in rows if r["finished"] == "1"]
    fct = [float(r["fct_us"]) + ack_us for r in done]
    end = max(float(r["start_us"]) + f for r, f in zip(done, fct)) if done else None
    q = [int(r["packets"]) for r in csv.DictReader(open(d / "occupancy.csv"))
         if r["router"] == f"edge{recv // 4}_{recv // 2 % 2}" and r["port"] == str(recv % 2)
         and (end is None or float(r["time_us"]) <= end)]
    return dict(done=len(done), fct=fct, end=end, q=q, qmax=max(q), drops=sum(int(r["lost_pkts"]) for r in rows),
                rtx=sum(int(r["retransmits"] or 0) for r in rows),
                wall=float((work / f"flexplane_{v}.wall").read_text().split()[-1]))

res = {"htsim Swift": htsim_run("swift"),
       f"flexplane Swift, target +{t_fs * ts_us:.2f} us": flexplane_run("swift"),
       "htsim Swift, -flow_scaling off": htsim_run("swift_nofs"),
       f"flexplane Swift, target +{t_nofs * ts_us:.2f} us": flexplane_run("swift_nofs"),
       f"flexplane Swift, target +{t_fs * ts_us:.2f} us, htsim's split": flexplane_run("swift_htsim_split")}

def f1(x):
    return "-" if x is None else f"{x:.1f}"

ideal = n_flows * pkts * ts_us
print(f"8 -> 1 incast, k = 4 fat tree, {gbps} Gbit/s, {pkts} x 1500 B per flow; the receiver's link alone needs "
      f"{ideal:.0f} us for all of it. flexplane's base RTT {base} timeslots ({base * ts_us:.2f} us); htsim's target "
      f"20 us + flow scaling, {fs_us:.2f} us at the fair-share window of {w_fs} packets, so flexplane's target "
      f"{base * ts_us:.2f} + {t_fs * ts_us:.2f} us; without flow scaling 20 us = {base * ts_us:.2f} + "
      f"{t_nofs * ts_us:.2f} us. Times in us; FCT to the last ACK (p99 of 8 flows: the slowest); queue = host {recv}'s "
      f"ToR downlink, packets, sampled every 10 us (htsim) / 1.2 us (flexplane) up to the last completion.\n")
print("| run | flows done | FCT mean | FCT p99 | FCT min | completion | queue p50 | queue p99 | queue max "
      "| drops | retransmits | wall s |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for k, v in res.items():
    fct = v["fct"]
    print(f"| {k} | {v['done']}/{n_flows} | {f1(statistics.mean(fct) if fct else None)} "
          f"| {f1(pct(fct, 0.99) if fct else None)} | {f1(min(fct, default=None))} | {f1(v['end'])} "
          f"| {pct(v['q'], 0.5):.0f} | {pct(v['q'], 0.99):.0f} | {v['qmax']:.0f} | {v['drops']} | {v['rtx']} "
          f"| {v['wall']:.2f} |")

print("\nflexplane against htsim\n")
print("| pair | metric | flexplane | htsim | difference | tolerance |")
print("|---|---|---|---|---|---|")
names = list(res)
for pair, hs, fp in (("flow scaling", res[names[0]], res[names[1]]), ("no scaling", res[names[2]], res[names[3]]),
                     ("flow scaling, htsim's split", res[names[0]], res[names[4]])):
    if not hs["fct"] or not fp["fct"]:
        print(f"| {pair} | all | - | - | - | not measured (a side finished no flow) |")
        continue
    rows = [("FCT mean", statistics.mean(fp["fct"]), statistics.mean(hs["fct"]), 15),
            ("FCT p99", pct(fp["fct"], 0.99), pct(hs["fct"], 0.99), 15),
            ("FCT min", min(fp["fct"]), min(hs["fct"]), 15),
            ("completion", fp["end"], hs["end"], 15),
            ("queue p50", pct(fp["q"], 0.5), pct(hs["q"], 0.5), 20),
            ("queue p99", pct(fp["q"], 0.99), pct(hs["q"], 0.99), 20)]
    for name, a, b, tol in rows:
        d = (a - b) / b * 100 if b else float("inf")
        ok = "within" if abs(d) <= tol else "**outside**"
        print(f"| {pair} | {name} | {a:.1f} | {b:.1f} | {d:+.1f} % | {ok} {tol} % |")
PY
