#!/usr/bin/env bash
# flexplane beside htsim (issue 26; docs/validation.md, "Against htsim"):
# 1. Load balancing: the k = 8 permutation of
#    experiments/configs/load_balancing_permutation.yaml (128 flows of 2000
#    packets from t = 0) in htsim's UEC transport in its DCTCP mode, with
#    per-flow ECMP (-paths 1) and per-packet spraying (-paths 64), beside
#    flexplane's ecmp and spray_tolerant variants: per-flow throughput
#    (size / FCT) and wall time of each.
# 2. Speed: the flows of experiments/configs/fat_tree_k8_dctcp_5ms.yaml (k = 8,
#    web-search at 50 % load for 5 ms, DCTCP) in both, whole-process wall
#    times of 5 alternating runs, medians and ranges.
#
#   validation/htsim_compare.sh [--htsim-src DIR] [--work DIR] [--seed N]
#
#   --htsim-src  htsim's sim/ folder (default ../shared/refs/htsim/sim; its
#                REFERENCE.md: BSD-2, built outside the project tree)
#   --work       where htsim is built and run (default /tmp/flexplane-htsim)
#   --seed       htsim's seed (default 13, its own default)
# Needs build/flexplane-emulator (make), cmake and g++. About 2 minutes the
# first time (htsim's build), then ~15 s.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
source validation/htsim_lib.sh
SRC=$REPO/../shared/refs/htsim/sim
WORK=/tmp/flexplane-htsim
SEED=13
while (($#)); do
  htsim_common_option "$@" && { shift "$HTSIM_SHIFT"; continue; }
  case $1 in
    --seed) SEED=$2; shift 2 ;;
    *) htsim_unknown_option "$1" ;;
  esac
done
htsim_check_src
htsim_prepare_work
HTSIM=$WORK/sim/build/datacenter/htsim_uec
if [[ ! -x $HTSIM ]]; then
  rm -rf "$WORK/sim" && cp -r "$SRC" "$WORK/sim"
  cmake -S "$WORK/sim" -B "$WORK/sim/build" -DCMAKE_BUILD_TYPE=Release > "$WORK/build.log" 2>&1
  cmake --build "$WORK/sim/build" --parallel 2 --target htsim_uec >> "$WORK/build.log" 2>&1 ||
    { echo "error: htsim build failed: $WORK/build.log" >&2; exit 1; }
fi

# The same permutation as a connection matrix. htsim's UEC packets carry a
# 64-byte header in their 1500-byte MTU, so 2000 x 1436 bytes of data is
# exactly 2000 packets of 1500 bytes on the wire. Host h sits under ToR h/4 in
# pod h/16 in both simulators.
python3 - "$REPO/experiments/configs/load_balancing_permutation.flows.csv" "$WORK/perm_k8.cm" <<'PY'
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if not l.startswith("#")) if r and r[0] != "flow_id"]
assert sorted(int(r[1]) for r in rows) == list(range(128)) == sorted(int(r[2]) for r in rows)
with open(sys.argv[2], "w") as f:
    print(f"Nodes 128\nConnections {len(rows)}", file=f)
    for fid, src, dst, pkts, start in rows:
        assert start == "0" and src != dst
        print(f"{src}->{dst} id {int(fid) + 1} start 0 size {int(pkts) * 1436}", file=f)
PY

# Every link 10 Gbit/s and 1.2 us (a timeslot), queues of 256 packets marking
# above 65 (flexplane: DropTail 256, DCTCP K = 65); DCTCP-style window control.
ARGS=(-tm "$WORK/perm_k8.cm" -nodes 128 -tiers 3 -linkspeed 10000 -mtu 1500 -hop_latency 0 -q 256
      -ecn 65 65 -sender_cc_only -sender_cc_algo dctcp -load_balancing_algo oblivious -end 100000 -seed "$SEED")
for v in ecmp spray; do
  paths=1; [[ $v == spray ]] && paths=64
  ( cd "$WORK" && /usr/bin/time -f %e -o "$WORK/$v.wall" "$HTSIM" "${ARGS[@]}" -paths $paths -o "$WORK/$v.log" \
      > "$WORK/$v.out" 2> "$WORK/$v.err" ) || { echo "error: htsim $v failed: $WORK/$v.err" >&2; exit 1; }
done
OUT=$WORK/flexplane
rm -rf "$OUT"
for v in ecmp spray_tolerant; do
  /usr/bin/time -f %e -o "$WORK/flexplane_$v.wall" build/flexplane-emulator run \
    experiments/configs/load_balancing_permutation.yaml --variant $v --out "$OUT" --quiet > /dev/null
done

python3 - "$WORK" <<'PY'
import csv, re, sys
from pathlib import Path
work = Path(sys.argv[1])
def line(name, gbps, wall, extra):
    g = sorted(gbps)
    q = lambda p: g[min(len(g) - 1, int(p * len(g)))]
    print(f"{name:<30} flows {len(g):>3}  Gbit/s min {g[0]:5.2f} p10 {q(0.1):5.2f} p50 {q(0.5):5.2f} "
          f"mean {sum(g) / len(g):5.2f} max {g[-1]:5.2f}  wall {wall} s  {extra}")
for v in ("ecmp", "spray"):
    text = (work / f"{v}.out").read_text()
    fct = [float(m) for m in re.findall(r"Flow Uec_\d+_\d+ flowId \d+ uecSrc \d+ finished at ([\d.]+)", text)]
    if len(fct) != 128:
        sys.exit(f"error: htsim {v}: {len(fct)} of 128 flows finished ({work / (v + '.out')})")
    line(f"htsim {v}", [3_000_000 * 8 / (t * 1e3) for t in fct], (work / f"{v}.wall").read_text().strip(), "")
for v in ("ecmp", "spray_tolerant"):
    rows = list(csv.DictReader(open(work / "flexplane" / v / "flows.csv")))
    gbps = [int(r["size_bytes"]) * 8 / float(r["fct_us"]) / 1e3 for r in rows if r["finished"] == "1"]
    retx = sum(int(r["retransmits"] or 0) for r in rows)
    line(f"flexplane {v}", gbps, (work / f"flexplane_{v}.wall").read_text().strip(), f"retransmissions {retx}")
PY

# 2. Speed on the web-search fat tree: flexplane's own flow list, replayed in
# htsim (start times in microseconds, sizes as above).
rm -rf "$WORK/websearch"
build/flexplane-emulator run experiments/configs/fat_tree_k8_dctcp_5ms.yaml --out "$WORK/websearch" --quiet > /dev/null
python3 - "$WORK/websearch/flows.csv" "$WORK/websearch.cm" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
with open(sys.argv[2], "w") as f:
    print(f"Nodes 128\nConnections {len(rows)}", file=f)
    for r in rows:
        start_us = int(r["start_timeslot"]) * 1.2
        print(f"{r['src']}->{r['dst']} id {int(r['flow_id']) + 1} start {start_us:.1f} size {int(r['size_pkts']) * 1436}",
              file=f)
PY
ARGS[1]=$WORK/websearch.cm
: > "$WORK/speed.txt"
for round in 1 2 3 4 5; do
  ( cd "$WORK" && /usr/bin/time -f "htsim %e" -a -o "$WORK/speed.txt" "$HTSIM" "${ARGS[@]}" -paths 1 \
      -o "$WORK/websearch.log" > "$WORK/websearch.out" 2> "$WORK/websearch.err" ) ||
    { echo "error: htsim web-search run failed: $WORK/websearch.err" >&2; exit 1; }
  /usr/bin/time -f "flexplane %e" -a -o "$WORK/speed.txt" build/flexplane-emulator run \
    experiments/configs/fat_tree_k8_dctcp_5ms.yaml --out "$WORK/websearch" --quiet > /dev/null
done
python3 - "$WORK" <<'PY'
import re, statistics, sys
from pathlib import Path
work = Path(sys.argv[1])
done = len(re.findall(r"finished at", (work / "websearch.out").read_text()))
flows = sum(1 for _ in open(work / "websearch" / "flows.csv")) - 1
t = {"htsim": [], "flexplane": []}
for line in (work / "speed.txt").read_text().split("\n"):
    if line.strip():
        name, secs = line.split()
        t[name].append(float(secs))
h, f = statistics.median(t["htsim"]), statistics.median(t["flexplane"])
print(f"web-search k = 8 ({flows} flows; htsim finished {done}): wall s, median (range) of 5: "
      f"htsim {h:.2f} ({min(t['htsim']):.2f}-{max(t['htsim']):.2f}), "
      f"flexplane {f:.2f} ({min(t['flexplane']):.2f}-{max(t['flexplane']):.2f}): flexplane {h / f:.1f}x faster")
PY
