#!/usr/bin/env bash
# flexplane's collective workloads beside htsim (issue 26; docs/collectives.md):
# the same send graph in both simulators on the k = 8 fat tree, one iteration,
# no compute gap, DCTCP-style senders, per-flow ECMP, 10 Gbit/s links.
#   ring  ring all-reduce of 2048 packets over 32 ranks, one per edge switch
#         (rank_stride 4): 62 steps of a 64-packet chunk, 1984 sends
#   a2a   all-to-all, 16 packets between every ordered pair of the 128 hosts
# flexplane generates the collective and writes sends.csv; that file becomes
# htsim's connection matrix (flow id = send_id + 1, a dependency = a trigger),
# so both run the exact same sends and dependencies. Prints markdown tables:
# collective completion, per-send FCT (min / mean / max), what htsim's trigger
# semantics add, htsim sensitivity runs, and whole-process wall times
# (median and range of --runs alternating runs).
#
#   validation/htsim_collective.sh [--htsim-src DIR] [--htsim-bin FILE]
#                                  [--work DIR] [--seed N] [--runs N] [--no-a2a]
#
#   --htsim-src  htsim's sim/ folder (default ../shared/refs/htsim/sim; its
#                REFERENCE.md: BSD-2, built outside the project tree)
#   --htsim-bin  an htsim_uec already built from that source (skips the build)
#   --work       where htsim is built and everything runs
#                (default /tmp/flexplane-htsim-collective)
#   --seed       htsim's seed (default 13, its own default)
#   --runs       alternating timed runs of each simulator (default 3)
#   --no-a2a     the ring only (htsim's all-to-all takes ~15 s and 0.5 GB)
# Needs build/flexplane-emulator (make), cmake and g++. htsim's build takes a
# few minutes on one core (--parallel 1); then ~3 minutes with the a2a at
# --runs 3, ~30 s without.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
source validation/htsim_lib.sh
SRC=$REPO/../shared/refs/htsim/sim
HTSIM=
WORK=/tmp/flexplane-htsim-collective
SEED=13
RUNS=3
A2A=1
while (($#)); do
  htsim_common_option "$@" && { shift "$HTSIM_SHIFT"; continue; }
  case $1 in
    --htsim-bin) HTSIM=$(realpath "$2"); shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --no-a2a) A2A=0; shift ;;
    *) htsim_unknown_option "$1" ;;
  esac
done
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "error: --runs: a positive integer" >&2; exit 2; }
htsim_prepare_work
if [[ -z $HTSIM ]]; then
  htsim_check_src
  HTSIM=$WORK/sim/build/datacenter/htsim_uec
  if [[ ! -x $HTSIM ]]; then
    echo "building htsim_uec in $WORK/sim (a few minutes) ..." >&2
    rm -rf "$WORK/sim" && cp -r "$SRC" "$WORK/sim"
    cmake -S "$WORK/sim" -B "$WORK/sim/build" -DCMAKE_BUILD_TYPE=Release > "$WORK/build.log" 2>&1
    cmake --build "$WORK/sim/build" --parallel 1 --target htsim_uec >> "$WORK/build.log" 2>&1 ||
      { echo "error: htsim build failed: $WORK/build.log" >&2; exit 1; }
  fi
fi
[[ -x $HTSIM ]] || { echo "error: --htsim-bin: $HTSIM is not executable" >&2; exit 2; }
VARIANTS=(ring)
((A2A)) && VARIANTS+=(a2a)

# flexplane: experiments/configs/collectives.yaml's ring and all-to-all, one
# iteration without a compute gap (DCTCP senders, marking at K = 65 in
# 256-packet queues, per-flow ECMP, min RTO 1 ms).
cat > "$WORK/collective.yaml" <<'EOF'
description: ring all-reduce and all-to-all, one iteration, beside htsim (validation/htsim_collective.sh)
seed: 1
network: {link_rate_gbps: 10, abstract_packet_bytes: 1500}
topology: {kind: fat_tree, k: 8}
routers:
  default: {scheme: dctcp, queue_manager: {k_pkts: 65, capacity_pkts: 256}}
transport: {kind: dctcp, min_rto_us: 1000}
workload:
  kind: collective
  collective: ring_allreduce
  ranks: 32
  rank_stride: 4
  message_pkts: 2048
  iterations: 1
  compute_gap_timeslots: 0
run: {duration_ms: 1, drain_ms: 200}
output: {dir: flexplane}
variants:
  ring: {}
  a2a:
    workload: {collective: all_to_all, ranks: 128, rank_stride: 1, message_pkts: 16}
  a2a_spray:                         # sensitivity only, as collectives.yaml's a2a_spray
    workload: {collective: all_to_all, ranks: 128, rank_stride: 1, message_pkts: 16}
    routers: {default: {load_balancer: spray}}
    transport: {sack: true, max_reordering_pkts: 300}
EOF
FLEX=(build/flexplane-emulator run "$WORK/collective.yaml" --out "$WORK/flexplane" --quiet)
rm -rf "$WORK/flexplane"
for v in "${VARIANTS[@]}"; do "${FLEX[@]}" --variant "$v" > /dev/null; done
((A2A)) && "${FLEX[@]}" --variant a2a_spray > /dev/null

# sends.csv -> connection matrix. A send and its flow: "src->dst id (send_id +
# 1) size (size_pkts x 1436 bytes)" (UEC's 64-byte header in a 1500-byte MTU:
# one flexplane packet is one 1500-byte htsim packet); host h is under ToR h/4
# in pod h/16 in both. A send without dependencies starts at 0 (gap 0). A
# dependent send starts on a trigger: a oneshot one for a single dependency, a
# barrier counting them for several, fired by each dependency's
# send_done_trigger. That is the only completion trigger htsim_uec fires at
# this commit (main_uec.cpp hands recv_done_trigger to UecSink, which never
# activates it; with -conn_reuse, where a message's RecvdLast status does fire
# at the receiver, every triggered message aborts in UecPdcSes::enque on
# assert(!schedule_event or scheduled_time.has_value())). send_done fires
# when the sender sees the flow's last byte acknowledged: flexplane's
# semantics for a rank's own earlier send, one ACK return later than
# flexplane's "received in full" for a received one (measured below).
for v in "${VARIANTS[@]}"; do
  python3 - "$WORK/flexplane/$v/sends.csv" "$WORK/$v.cm" <<'PY'
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if not l.startswith("#")) if r and r[0] != "send_id"]
sends = {}
for sid, src, dst, pkts, gap, _, after in rows:
    sends[int(sid)] = dict(src=int(src), dst=int(dst), pkts=int(pkts), gap=int(gap), after=[int(a) for a in after.split()])
trig_of_set, fires = {}, {}  # dependency set -> trigger id; send -> the trigger its completion fires
for sid, s in sends.items():
    if not s["after"]:
        if s["gap"]:
            sys.exit(f"send {sid}: start gap {s['gap']}: this script runs gap-free collectives only")
        continue
    if s["gap"]:
        sys.exit(f"send {sid}: gap {s['gap']} after its dependencies: htsim's triggers start a flow at once")
    key = frozenset(s["after"])
    if key not in trig_of_set:
        trig_of_set[key] = len(trig_of_set) + 1
        for d in key:
            if d in fires:
                sys.exit(f"send {d} is a dependency of two different dependency sets: one send_done_trigger per flow")
            fires[d] = trig_of_set[key]
    s["trigger"] = trig_of_set[key]
with open(sys.argv[2], "w") as f:
    print(f"Nodes 128\nConnections {len(sends)}\nTriggers {len(trig_of_set)}", file=f)
    for sid, s in sends.items():
        line = f"{s['src']}->{s['dst']} id {sid + 1}"
        line += f" trigger {s['trigger']}" if "trigger" in s else " start 0"
        line += f" size {s['pkts'] * 1436}"
        if sid in fires:
            line += f" send_done_trigger {fires[sid]}"
        print(line, file=f)
    for key, t in trig_of_set.items():
        print(f"trigger id {t} " + ("oneshot" if len(key) == 1 else f"barrier count {len(key)}"), file=f)
PY
done

# htsim: UEC transport in its DCTCP-style mode (htsim_tcp reads no connection
# matrix and has no triggers). Every link 10 Gbit/s with no propagation delay
# (-hop_latency 0): a 1500-byte packet then takes 1.2 us per hop, store and
# forward, as a flexplane packet takes one 1.2 us timeslot per hop (checked
# below on an isolated flow). An ACK per packet (-sack_threshold 1500), as
# flexplane's receiver by default (htsim's default coalesces 16 KB, which with
# its 1.5 x BDP window cap stalls these short-RTT flows; shown below). Queues
# of 256 packets marking above 65, ECMP (-paths 1: one entropy per flow).
HARGS=(-nodes 128 -tiers 3 -linkspeed 10000 -mtu 1500 -q 256 -ecn 65 65 -sender_cc_only -sender_cc_algo dctcp
       -load_balancing_algo oblivious -paths 1 -end 100000 -seed "$SEED")
MATCH=(-hop_latency 0 -sack_threshold 1500)
htsim() {  # name cm extra-args...: runs htsim into $WORK/name.out
  local name=$1 cm=$2; shift 2
  ( cd "$WORK" && "$HTSIM" -tm "$cm" "${HARGS[@]}" "$@" -o "$WORK/$name.log" > "$WORK/$name.out" 2> "$WORK/$name.err" ) ||
    { echo "error: htsim $name failed: $WORK/$name.err" >&2; exit 1; }
}
# Receive times: htsim -debug prints every data packet's arrival at its sink
# (UecSink processData, in ns); a separate run, filtered as it streams, not timed.
htsim_recv() {  # name cm extra-args...: -> $WORK/name.recv (uecSrc index, last arrival in us)
  local name=$1 cm=$2; shift 2
  ( cd "$WORK" && "$HTSIM" -tm "$cm" "${HARGS[@]}" "$@" -debug -o "$WORK/$name.log" 2> "$WORK/$name.err" |
      awk '/processData: / { for (i = 1; i < NF; i++) { if ($i == "uecSrc") s = $(i + 1); if ($i == "time") t = $(i + 1) }
                             if (t + 0 > last[s] + 0) last[s] = t }
           / finished at / { print > "'"$WORK/$name.out"'" }
           END { for (s in last) printf "%s %.4f\n", s, last[s] / 1000 }' > "$WORK/$name.recv" ) ||
    { echo "error: htsim $name (-debug) failed: $WORK/$name.err" >&2; exit 1; }
}
printf 'Nodes 128\nConnections 2\n0->4 id 1 start 0 size 91904\n12->16 id 2 start 0 size 91904\n' > "$WORK/isolated.cm"
htsim_recv isolated isolated.cm "${MATCH[@]}"
for v in "${VARIANTS[@]}"; do
  htsim "$v" "$v.cm" "${MATCH[@]}"
  htsim_recv "${v}_recv" "$v.cm" "${MATCH[@]}"
done
htsim ring_hop1.2 ring.cm -hop_latency 1.2 -sack_threshold 1500
htsim ring_sack16k ring.cm -hop_latency 0
htsim ring_both ring.cm -hop_latency 1.2
if ((A2A)); then  # ~15 s each
  htsim a2a_spray a2a.cm "${MATCH[@]}" -paths 64
  htsim a2a_drop a2a.cm "${MATCH[@]}" -disable_trim
fi

# Whole-process wall times, alternating.
: > "$WORK/wall.txt"
for ((r = 1; r <= RUNS; r++)); do
  for v in "${VARIANTS[@]}"; do
    /usr/bin/time -f "flexplane $v %e" -a -o "$WORK/wall.txt" "${FLEX[@]}" --variant "$v" > /dev/null
    /usr/bin/time -f "htsim $v %e" -a -o "$WORK/wall.txt" \
      bash -c 'cd "$1" && shift && exec "$@" > "$0.timed.out" 2> /dev/null' "$WORK/$v" "$WORK" \
      "$HTSIM" -tm "$v.cm" "${HARGS[@]}" "${MATCH[@]}" -o "$WORK/$v.log"
  done
done

python3 - "$WORK" "${VARIANTS[@]}" <<'PY'
import csv, re, statistics, sys
from pathlib import Path
work, variants = Path(sys.argv[1]), sys.argv[2:]
SLOT = 1.2

def hops(a, b):
    return 2 if a // 4 == b // 4 else 4 if a // 16 == b // 16 else 6

def stats(xs):
    return f"{min(xs):.1f} / {statistics.mean(xs):.1f} / {max(xs):.1f}"

def pct(a, b):
    return f"{100 * (a - b) / b:+.1f} %"

def htsim_flows(name, n):
    """flow id -> (start, acked) in us, from "starting at" / "finished at" lines; and uecSrc -> flow id."""
    text = (work / f"{name}.out").read_text()
    start = {int(f): float(t) for f, t in re.findall(r"flowId (\d+) uecSrc \d+ starting at ([\d.e+-]+)", text)}
    done = {int(f): (int(s), float(t)) for f, s, t in re.findall(r"flowId (\d+) uecSrc (\d+) finished at ([\d.e+-]+)", text)}
    if len(done) != n:
        sys.exit(f"error: htsim {name}: {len(done)} of {n} flows finished ({work / (name + '.out')})")
    return start, {f: t for f, (_, t) in done.items()}, {s: f for f, (s, _) in done.items()}

def recv_times(name, src_to_flow):
    out = {}
    for line in (work / f"{name}.recv").read_text().split("\n"):
        if line:
            s, t = line.split()
            out[src_to_flow[int(s)]] = float(t)
    return out

# Isolated 64-packet flows: the unloaded models agree.
_, acked, s2f = htsim_flows("isolated", 2)
recv = recv_times("isolated", s2f)
ideal = {(int(r["src"]), int(r["dst"])): float(r["ideal_fct_us"])
         for r in csv.DictReader(open(work / "flexplane" / "ring" / "flows.csv"))}
print("### Unloaded: one 64-packet flow alone (release -> last packet in, us)\n")
print("| path | flexplane ideal_fct_us | flexplane, to a dependent's release (one timeslot less) | htsim received | htsim acked |")
print("|---|---|---|---|---|")
for fid, (a, b) in ((1, (0, 4)), (2, (12, 16))):
    print(f"| {hops(a, b)} hops ({a} -> {b}) | {ideal[(a, b)]:.1f} | {ideal[(a, b)] - SLOT:.1f} | {recv[fid]:.1f} | {acked[fid]:.1f} |")
print("\nflexplane counts a flow's last timeslot in its FCT (finish - start + 1) but releases a dependent send "
      "in that same timeslot.\n")

walls = {}
for line in (work / "wall.txt").read_text().split("\n"):
    if line.strip():
        sim, v, secs = line.split()
        walls.setdefault((sim, v), []).append(float(secs))

def wall(sim, v):
    w = walls[(sim, v)]
    return statistics.median(w), f"{statistics.median(w):.2f} ({min(w):.2f}-{max(w):.2f})"

for v in variants:
    sends = {int(r[0]): r for r in csv.reader(l for l in open(work / "flexplane" / v / "sends.csv") if not l.startswith("#"))
             if r and r[0] != "send_id"}
    deps = {sid + 1: [int(a) + 1 for a in r[6].split()] for sid, r in sends.items()}  # htsim flow ids
    n = len(sends)
    fl = list(csv.DictReader(open(work / "flexplane" / v / "flows.csv")))
    assert len(fl) == n and all(r["finished"] == "1" for r in fl)
    coll = next(csv.DictReader(open(work / "flexplane" / v / "collective.csv")))
    f_end = float(coll["end_us"])
    f_fct_of = {int(r["flow_id"]): float(r["fct_us"]) for r in fl}
    f_fct = list(f_fct_of.values())
    f_drops = sum(int(r["lost_pkts"]) for r in fl)
    f_retx = sum(int(r["retransmits"] or 0) for r in fl)
    f_rto = sum(int(r["timeouts"] or 0) for r in fl)
    start, acked, s2f = htsim_flows(v, n)
    start_r, acked_r, s2f_r = htsim_flows(f"{v}_recv", n)
    if max(abs(acked[f] - acked_r[f]) for f in acked) > 1e-3:
        sys.exit(f"error: htsim {v}: the -debug run differs from the plain one")
    recv = recv_times(f"{v}_recv", s2f_r)
    h_end_ack = max(acked.values())
    h_end_recv = max(recv.values())
    h_fct_recv = [recv[f] - start[f] for f in acked]
    h_fct_ack = [acked[f] - start[f] for f in acked]
    m = re.search(r"New: (\d+) Rtx: (\d+) .*NACKs: (\d+)", (work / f"{v}.out").read_text())
    h_rtx, h_nacks = int(m[2]), int(m[3])
    depth = {}
    for f in sorted(deps):
        depth[f] = 1 + max((depth[d] for d in deps[f]), default=0)
    steps = max(depth.values())
    # What htsim's send-done triggers add: a dependent starts when its
    # dependency's sender has the last ACK, not when the last packet arrived.
    lag = [start[f] - max(recv[d] for d in deps[f]) for f in deps if deps[f]]
    chain_lag, f = 0.0, max(recv, key=recv.get)
    while deps[f]:
        d = max(deps[f], key=lambda x: recv[x])
        chain_lag += start[f] - recv[d]
        f = d
    fw, fws = wall("flexplane", v)
    hw, hws = wall("htsim", v)
    title = {"ring": "Ring all-reduce: 32 ranks (one per ToR), 2048 packets, 62 steps of 64 packets",
             "a2a": "All-to-all: 128 ranks x 127 destinations x 16 packets"}[v]
    print(f"### {title} ({n} sends, {steps} dependency level{'s' if steps > 1 else ''})\n")
    print("| quantity | flexplane | htsim (matched) | htsim vs flexplane |")
    print("|---|---|---|---|")
    print(f"| completion: last send received in full, us | {f_end:.1f} | {h_end_recv:.1f} | {pct(h_end_recv, f_end)} |")
    print(f"| completion: last send acknowledged, us | | {h_end_ack:.1f} | |")
    print(f"| per-send FCT, release -> received, min / mean / max us | {stats(f_fct)} | {stats(h_fct_recv)} | "
          f"{pct(statistics.mean(h_fct_recv), statistics.mean(f_fct))} (mean) |")
    print(f"| per-send FCT, release -> acknowledged, min / mean / max us | | {stats(h_fct_ack)} | |")
    if lag:
        print(f"| htsim trigger lag (release - dependency received), min / mean / max us | 0 (same timeslot) | "
              f"{min(lag):.2f} / {statistics.mean(lag):.2f} / {max(lag):.2f} | |")
        print(f"| summed over the critical chain, us | 0 | {chain_lag:.1f} | "
              f"{100 * chain_lag / f_end:.1f} % of the completion |")
    print(f"| packets lost (flexplane: dropped; htsim: trimmed, NACKed) | {f_drops} | {h_nacks} | |")
    print(f"| retransmissions (flexplane: and timeouts) | {f_retx} ({f_rto} timeouts) | {h_rtx} | |")
    nic_wait = [(int(r["first_sent_timeslot"]) - int(r["start_timeslot"])) * SLOT for r in fl]
    print(f"| first packet's wait in the source NIC after release, mean / max us | "
          f"{statistics.mean(nic_wait):.1f} / {max(nic_wait):.1f} | (not printed: its NIC takes one packet per turn, "
          f"round robin over the sources) | |")
    print(f"| wall s, median (range) of {len(walls[('htsim', v)])} | {fws} | {hws} | flexplane {hw / fw:.1f}x faster |")
    if v == "ring":
        by_h = {}
        for r in fl:
            by_h.setdefault(hops(int(r["src"]), int(r["dst"])), []).append(int(r["flow_id"]))
        print("\nPer-send FCT by path length (min / mean / max us):\n")
        print("| path | sends | flexplane | htsim received | htsim acked |")
        print("|---|---|---|---|---|")
        for h in sorted(by_h):
            ids = by_h[h]
            print(f"| {h} hops | {len(ids)} | {stats([f_fct_of[i] for i in ids])} | "
                  f"{stats([recv[i + 1] - start[i + 1] for i in ids])} | "
                  f"{stats([acked[i + 1] - start[i + 1] for i in ids])} |")
        print("\nhtsim sensitivity (ring; completion = last ACK, as printed by htsim):\n")
        print("| htsim setting | completion us | vs flexplane | per-send FCT acked, min / mean / max us |")
        print("|---|---|---|---|")
        for name, label in (("ring", "matched: -hop_latency 0 -sack_threshold 1500"),
                            ("ring_hop1.2", "-hop_latency 1.2 (1.2 us propagation per hop, as htsim_compare.sh)"),
                            ("ring_sack16k", "default ACK coalescing (16 KB), -hop_latency 0"),
                            ("ring_both", "both: -hop_latency 1.2, 16 KB ACKs")):
            s, a, _ = htsim_flows(name, n)
            print(f"| {label} | {max(a.values()):.1f} | {pct(max(a.values()), f_end)} | {stats([a[f] - s[f] for f in a])} |")
    else:
        print("\nAll-to-all sensitivity (completion: flexplane last received, htsim last ACK):\n")
        print("| run | completion us | per-send FCT min / mean / max us | lost | retransmitted |")
        print("|---|---|---|---|---|")
        rows = list(csv.DictReader(open(work / "flexplane" / "a2a_spray" / "flows.csv")))
        end = float(next(csv.DictReader(open(work / "flexplane" / "a2a_spray" / "collective.csv")))["end_us"])
        print(f"| flexplane spray (+ SACK, reordering threshold 300) | {end:.1f} | "
              f"{stats([float(r['fct_us']) for r in rows])} | {sum(int(r['lost_pkts']) for r in rows)} | "
              f"{sum(int(r['retransmits'] or 0) for r in rows)} ({sum(int(r['timeouts'] or 0) for r in rows)} timeouts) |")
        for name, label in (("a2a", "htsim ECMP, trimming (matched, above)"),
                            ("a2a_spray", "htsim spraying (-paths 64), trimming"),
                            ("a2a_drop", "htsim ECMP, -disable_trim (drops, RTO recovery)")):
            s, a, _ = htsim_flows(name, n)
            m = re.search(r"New: (\d+) Rtx: (\d+) .*NACKs: (\d+)", (work / f"{name}.out").read_text())
            print(f"| {label} | {max(a.values()):.1f} | {stats([a[f] - s[f] for f in a])} | "
                  f"{m[3]} NACKed | {m[2]} |")
        print(f"\nline-rate bound: 127 x 16 packets per NIC = {127 * 16 * SLOT:.1f} us")
    print()
PY
