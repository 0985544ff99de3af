#!/usr/bin/env bash
# flexplane's PFC beside htsim's on a lossless incast (issue 26; docs/pfc.md,
# docs/validation.md "PFC on a lossless incast"): the 8 -> 1 incast of
# validation/htsim_incast.sh (k = 4 fat tree, hosts 4..11 each sending 3000
# packets of 1500 bytes to host 0 from t = 0, 100 Gbit/s links with 0.96 us of
# propagation per hop; flexplane 9 timeslots of 0.12 us) with PFC on every
# switch port, thresholds matched: htsim's `-pfc_thresholds 12 15` pauses an
# input holding more than 15 x 1436 bytes (15 packets of 1500) and resumes it
# below 12 x 1436 (11 packets); flexplane `xoff_pkts: 15, xon_pkts: 11`.
# Switch queues of 256 packets (htsim counts what would overflow them:
# its lossless queues never drop). Three scenarios:
#   line rate:  no congestion control (htsim_roce without -dcqcn: senders at
#               line rate; flexplane open loop): PFC alone keeps it lossless;
#   DCQCN:      DCQCN over PFC, marking above 20 packets (as htsim_incast.sh);
#   lossy:      flexplane's line-rate senders without PFC (the drops PFC saves).
# Prints (markdown) per run: flows done, FCT mean / min / max and completion
# (us, to the last ACK), host 0's ToR downlink queue, drops, pause frames
# (XOFF) and the pausing ports and pause time by the pausing switch's tier
# and the neighbour paused, and whole-process wall time; then flexplane
# against htsim.
#
#   validation/htsim_pfc.sh [--htsim-src DIR] [--work DIR]
#
#   --htsim-src   htsim's sim/ folder (default ../shared/refs/htsim/sim; its
#                 REFERENCE.md: BSD-2, built outside the project tree)
#   --work        where htsim is built and both simulators run (default
#                 /tmp/flexplane-htsim-pfc)
# htsim_roce is built from a copy with two changes: (1) dcqcn.cpp's alpha
# timer restarts when alpha decays (as htsim_incast.sh; without it the DCQCN
# run never ends); (2) queue_lossless_input.cpp prints a line for every pause
# frame an input sends (htsim has the line, commented out; it prints only
# when a paused sender resumes). Needs build/flexplane-emulator (make), cmake,
# g++, python3 and /usr/bin/time. About 3 minutes the first time (htsim's
# build), then ~20 s (htsim's DCQCN run: minutes; it prints a
# line per sender event).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
source validation/htsim_lib.sh
SRC=$REPO/../shared/refs/htsim/sim
WORK=/tmp/flexplane-htsim-pfc
while (($#)); do
  htsim_common_option "$@" && { shift "$HTSIM_SHIFT"; continue; }
  case $1 in
    *) htsim_unknown_option "$1" ;;
  esac
done
htsim_check_src
htsim_prepare_work

# The scenario, in one place for both simulators.
PKTS=3000          # packets per flow
SENDERS="4 5 6 7 8 9 10 11"
RECEIVER=0
K_MARK=20          # DCQCN marking threshold, packets
BUF=256            # switch queue per port, packets
XOFF=15            # pause an input holding this many packets (htsim: more than 15 x 1436 bytes)
XON=11             # resume it at this many or fewer (htsim: fewer than 12 x 1436 bytes)
HEADROOM=24        # flexplane's headroom_overruns above XOFF: 2 x 9 timeslots of latency + 2, rounded up
GBPS=100
LAT_TS=9           # flexplane link latency, timeslots (0.12 us each at 100 Gbit/s)
END_US=20000       # htsim's end of time

BUILD=$WORK/sim/build
if [[ ! -x $BUILD/datacenter/htsim_roce || ! -x $BUILD/parse_output || ! -e $WORK/sim/.pfc_patches ]]; then
  htsim_fresh_copy "$WORK/sim"
  python3 - "$WORK/sim" <<'PY'
import sys
sys.path.insert(0, "validation")
from htsim_patch import patcher, restart_alpha_timer
patch = patcher(sys.argv[1])
# (1) restart DCQCN's alpha timer where alpha decays.
restart_alpha_timer(patch)
# (2) a line per pause frame: time, the paused neighbour's output queue, wait (0: resume).
patch("queue_lossless_input.cpp", r'//cout << "Ingress link " << getRemoteEndpoint\(\) << " PAUSE " << wait << endl;',
      'cout << "PFC_FRAME " << timeAsUs(eventlist().now()) << " " << _nodename << " " << wait << endl;')
PY
  touch "$WORK/sim/.pfc_patches"
  cmake -S "$WORK/sim" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release > "$WORK/build.log" 2>&1
  cmake --build "$BUILD" --parallel 2 --target htsim_roce parse_output >> "$WORK/build.log" 2>&1 ||
    { echo "error: htsim build failed: $WORK/build.log" >&2; exit 1; }
fi

# Connection matrix and flexplane trace (htsim_lib.sh).
write_incast "$WORK" "$PKTS" "$RECEIVER" $SENDERS
cat > "$WORK/pfc.yaml" <<EOF
# Written by validation/htsim_pfc.sh: the lossless incast of its header.
seed: 1
network: {link_rate_gbps: $GBPS}
topology: {kind: fat_tree, k: 4, link_latency_timeslots: $LAT_TS}
routers:
  default:
    scheme: droptail
    queue_manager: {capacity_pkts: $BUF}
    pfc: {xoff_pkts: $XOFF, xon_pkts: $XON, headroom_pkts: $HEADROOM}
workload: {kind: trace, trace: incast.csv}
run: {duration_ms: 1, drain_ms: 20, occupancy_interval_us: 1.2}
output: {occupancy: csv}
variants:
  line_rate_pfc: {}
  dcqcn_pfc:
    transport: {kind: dcqcn, ack_latency: propagation}
    routers: {default: {scheme: dctcp, queue_manager: {k_pkts: $K_MARK}}}
  line_rate_lossy:
    routers: {default: {pfc: off}}
EOF

COMMON=(-tm "$WORK/incast.cm" -nodes 16 -linkspeed $((GBPS * 1000)) -mtu 1436 -hop_latency 0.96 -q $BUF
        -strat ecmp_host -paths 256 -end $END_US -log tor_downqueue -pfc_thresholds 12 15)
KEEP='finished at|^PFC_FRAME|RESUME|LOSSLESS|^New:'
QUEUE_RE="Name LS$((RECEIVER / 2))->DST$RECEIVER\\(0\\)"
PARSE_OUTPUT=$BUILD/parse_output
htsim_run line_rate_pfc "$BUILD/datacenter/htsim_roce"
htsim_run dcqcn_pfc "$BUILD/datacenter/htsim_roce" -dcqcn $K_MARK

rm -rf "$WORK/flexplane"
for v in line_rate_pfc dcqcn_pfc line_rate_lossy; do
  /usr/bin/time -f %e -o "$WORK/flexplane_$v.wall" build/flexplane-emulator run "$WORK/pfc.yaml" \
    --variant $v --out "$WORK/flexplane" --quiet > /dev/null
done

python3 - "$WORK" "$PKTS" "$RECEIVER" "$LAT_TS" "$GBPS" "$BUF" <<'PY'
import collections, csv, math, re, statistics, sys
from pathlib import Path
work, pkts, recv, lat_ts, gbps, buf = Path(sys.argv[1]), *map(int, sys.argv[2:])
ts_us = 1500 * 8 / (gbps * 1e3)
n_flows = 8
# flexplane's FCT ends when the last packet reaches the receiver, htsim's when
# its ACK reaches the sender: add flexplane's ACK latency (ack_latency:
# propagation over the 6 hops, sum (L - 1) + 1 timeslots).
ack_us = (6 * (lat_ts - 1) + 1) * ts_us
TIERS = ("ToR pauses host", "ToR pauses agg", "agg pauses core", "agg pauses ToR", "core pauses agg")

def pct(v, q):  # nearest rank, as occupancy_summary.csv
    v = sorted(v)
    return v[max(0, math.ceil(q * len(v)) - 1)] if v else None

def htsim_tier(peer):  # the paused neighbour's output queue, as htsim names it
    for pattern, tier in ((r"SRC\d+->LS\d+", 0), (r"US\d+->LS_\d+", 1), (r"CS\d+->US\d+", 2),
                          (r"LS\d+->US\d+", 3), (r"US\d+->CS\d+", 4)):
        if re.fullmatch(pattern + r"\(\d+\)", peer):
            return tier
    sys.exit(f"error: htsim paused an unknown queue {peer!r}")

def flexplane_tier(router, neighbour):
    kinds = (re.match(r"[a-z]+", router)[0], re.match(r"[a-z]+", neighbour)[0])
    return {("edge", "host"): 0, ("edge", "agg"): 1, ("agg", "core"): 2, ("agg", "edge"): 3,
            ("core", "agg"): 4}[kinds]

def htsim_run(name):
    d = work / "htsim" / name
    out = (d / "out.txt").read_text()
    fct = [float(t) for t in re.findall(r"finished at ([\d.]+)", out)]
    end = max(fct) if fct else None
    q = [int(m[1]) / 1500 for m in re.finditer(r"[\d.]+ Type QUEUE_APPROX ID \d+ Ev RANGE LastQ (-?\d+)",
                                                (d / "queue.txt").read_text())]
    qmax = max((int(m[1]) / 1500 for m in re.finditer(r"MaxQ (-?\d+)", (d / "queue.txt").read_text())), default=0)
    xoff, ports, paused = [0] * 5, [set() for _ in range(5)], [0.0] * 5
    since = {}
    for m in re.finditer(r"^PFC_FRAME ([\d.]+) VirtualQueue\((\S+)\) (\d+)$", out, re.M):
        t, peer, wait = float(m[1]), m[2], int(m[3])
        tier = htsim_tier(peer)
        if wait > 0:
            xoff[tier] += 1
            ports[tier].add(peer)
            since[peer] = t
        elif peer in since:
            paused[tier] += t - since.pop(peer)
    for peer, t in since.items():  # still paused at the end of the run: count up to the last completion
        paused[htsim_tier(peer)] += max(0.0, (end or t) - t)
    rtx = re.search(r"^New: \d+ Rtx: (\d+)", out, re.M)
    return dict(done=len(fct), fct=fct, end=end, q=q, qmax=qmax, drops=f"0 ({out.count('LOSSLESS')} over {buf})",
                rtx=int(rtx[1]) if rtx else None, xoff=xoff, ports=[len(p) for p in ports], paused=paused,
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
    xoff, ports, paused = [0] * 5, [0] * 5, [0.0] * 5
    overruns = 0
    if (d / "pfc.csv").exists():
        for r in csv.DictReader(open(d / "pfc.csv")):
            overruns += int(r["headroom_overruns"])
            if int(r["pauses_sent"]):
                tier = flexplane_tier(r["router"], r["neighbour"])
                xoff[tier] += int(r["pauses_sent"])
                ports[tier] += 1
                paused[tier] += float(r["paused_sent_us"])
    drops = sum(int(r["lost_pkts"]) for r in rows)
    return dict(done=len(done), fct=fct, end=end, q=q, qmax=max(q, default=0),
                drops=f"{drops}" + (f" ({overruns} headroom overruns)" if overruns else ""),
                rtx=sum(int(r["retransmits"] or 0) for r in rows) if v.startswith("dcqcn") else "-",
                xoff=xoff, ports=ports, paused=paused,
                wall=float((work / f"flexplane_{v}.wall").read_text().split()[-1]))

res = {"htsim line rate, PFC": htsim_run("line_rate_pfc"), "flexplane line rate, PFC": flexplane_run("line_rate_pfc"),
       "htsim DCQCN, PFC": htsim_run("dcqcn_pfc"), "flexplane DCQCN, PFC": flexplane_run("dcqcn_pfc"),
       "flexplane line rate, no PFC": flexplane_run("line_rate_lossy")}

def f1(x):
    return "-" if x is None else f"{x:.1f}"

ideal = n_flows * pkts * ts_us
print(f"8 -> 1 incast, k = 4 fat tree, {gbps} Gbit/s, {pkts} x 1500 B per flow (the receiver's link alone needs "
      f"{ideal:.0f} us for all of it); PFC XOFF 15 / XON 11 packets; {buf}-packet switch queues. Times in us, "
      f"FCT to the last ACK; queue = host {recv}'s ToR downlink, packets (htsim: every 10 us, flexplane: 1.2 us).\n")
print("| run | flows done | FCT mean | FCT min | FCT max | completion | queue p50 / p99 / max | drops "
      "| retransmits | pause frames (XOFF) | pause time, us (summed over ports) | wall s |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for k, v in res.items():
    fct = v["fct"]
    print(f"| {k} | {v['done']}/{n_flows} | {f1(statistics.mean(fct) if fct else None)} | {f1(min(fct, default=None))} "
          f"| {f1(max(fct, default=None))} | {f1(v['end'])} | {f1(pct(v['q'], 0.5))} / {f1(pct(v['q'], 0.99))} / "
          f"{v['qmax']:.0f} | {v['drops']} | {v['rtx']} | {sum(v['xoff'])} | {sum(v['paused']):.1f} "
          f"| {v['wall']:.2f} |")

print("\nPause frames by where they go: XOFF frames / ports that sent any / pause time (us, summed over those ports)\n")
print("| tier | " + " | ".join(k for k in res if "no PFC" not in k) + " |")
print("|---|" + "---|" * (len(res) - 1))
for t, tier in enumerate(TIERS):
    print(f"| {tier} | " + " | ".join(f"{v['xoff'][t]} / {v['ports'][t]} / {v['paused'][t]:.0f}"
                                      for k, v in res.items() if "no PFC" not in k) + " |")

print("\nflexplane against htsim\n")
print("| scenario | metric | flexplane | htsim | difference |")
print("|---|---|---|---|---|")
for sc in ("line rate", "DCQCN"):
    fp, hs = res[f"flexplane {sc}, PFC"], res[f"htsim {sc}, PFC"]
    for name, a, b in (("FCT mean", statistics.mean(fp["fct"]) if fp["fct"] else None,
                        statistics.mean(hs["fct"]) if hs["fct"] else None),
                       ("completion", fp["end"], hs["end"]),
                       ("queue p99", pct(fp["q"], 0.99), pct(hs["q"], 0.99)),
                       ("pause frames", sum(fp["xoff"]), sum(hs["xoff"])),
                       ("pause time", sum(fp["paused"]), sum(hs["paused"]))):
        d = "-" if a is None or not b else f"{(a - b) / b * 100:+.1f} %"
        print(f"| {sc} | {name} | {f1(a)} | {f1(b)} | {d} |")
PY
