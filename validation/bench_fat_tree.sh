#!/usr/bin/env bash
# Speed on fat trees against ns-3 (issue 24; docs/performance.md, "Fat trees
# against ns-3"): the k = 8 and k = 16 web-search traces replayed by ns-3
# (validation/run_ns3.sh fat-tree-k<K>-dctcp) and by each flexplane binary
# given (validation/scenarios/flexplane_fat_tree_k<K>.yaml, --cores 1), the
# programs alternated in one invocation (paired rounds: ns-3, then each
# flexplane binary, the order reversed every other round), each whole process
# under /usr/bin/time. Prints, per k, wall / user / sys / max RSS (median and
# range over the rounds) and the ratio of ns-3's median wall (and CPU) time to
# each binary's.
#
#   validation/bench_fat_tree.sh [--rounds N] [--k "8 16"] [--out DIR] [FLEXPLANE_BIN...]
#
#   FLEXPLANE_BIN  flexplane-emulator binaries to compare (default build/flexplane-emulator),
#                  e.g. a build from before issue 24 and today's; a binary that
#                  predates run.stop_when_done gets the scenario without that key
#                  and so runs to its cap (duration + drain), as it would have
#   --rounds N     rounds per k (default 3)
#   --k LIST       tree sizes (default "8 16")
#   --out DIR      logs, outputs and times.csv (default results/validation/bench_fat_tree)
# Needs ns-3 (validation/run_ns3.sh --install) and /usr/bin/time. Both sides
# write flows.csv, counters.csv and every switch port's occupancy every 600 us.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

ROUNDS=3
KS="8 16"
OUT=results/validation/bench_fat_tree
BINS=()
usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; }
while (($#)); do
  case $1 in
    --rounds) ROUNDS=${2:?}; shift ;;
    --k) KS=${2:?}; shift ;;
    --out) OUT=${2:?}; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "bench_fat_tree: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) BINS+=("$1") ;;
  esac
  shift
done
((${#BINS[@]})) || BINS=(build/flexplane-emulator)
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "bench_fat_tree: --rounds must be a positive integer" >&2; exit 2; }
for b in "${BINS[@]}"; do [[ -x $b ]] || { echo "bench_fat_tree: $b is not an executable" >&2; exit 2; }; done
[[ -x /usr/bin/time ]] || { echo "bench_fat_tree: /usr/bin/time is missing (apt install time)" >&2; exit 2; }
for k in $KS; do
  [[ -f validation/scenarios/flexplane_fat_tree_k$k.yaml ]] || { echo "bench_fat_tree: no scenario for k = $k" >&2; exit 2; }
done

validation/run_ns3.sh --build
NS3=build-validation/ns3_star
rm -rf "$OUT"
mkdir -p "$OUT"
echo "program,k,round,wall_s,user_s,sys_s,maxrss_kb" >"$OUT/times.csv"

# One timed whole process: label, k, round, log file, command...
timed() {
  local label=$1 k=$2 round=$3 log=$4
  shift 4
  /usr/bin/time -f "%e %U %S %M" -o "$log.time" "$@" >"$log" 2>&1 || { echo "bench_fat_tree: $label failed (see $log)" >&2; exit 1; }
  read -r wall user sys rss <"$log.time"
  echo "$label,$k,$round,$wall,$user,$sys,$rss" >>"$OUT/times.csv"
  printf '  %-40s k=%-2s round %s: wall %6.2f s  user %6.2f  sys %5.2f  maxrss %4d MB\n' "$label" "$k" "$round" \
    "$wall" "$user" "$sys" $((rss / 1024))
}

{
  echo "date_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "command: validation/bench_fat_tree.sh --rounds $ROUNDS --k \"$KS\" ${BINS[*]}"
  echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "loadavg_start: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT/info.txt"

# The table over the rounds run so far (rewritten after each round: a long run can be read before its end).
table() {
  python3 - "$OUT" "${BINS[@]}" <<'PY'
import csv, statistics, sys
from pathlib import Path
out, bins = Path(sys.argv[1]), sys.argv[2:]
rows = list(csv.DictReader((out / "times.csv").open()))
names = {"ns-3": "ns-3 3.37 (ns3_star --topology=fat-tree)"}
names.update({f"flexplane{i}": f"flexplane `{b}`" for i, b in enumerate(bins)})

def col(prog, k, key):
    return [float(r[key]) for r in rows if r["program"] == prog and r["k"] == k]

def fmt(v):
    return f"{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})"

print("| k | program | wall s, median (range) | user s | sys s | max RSS MB | ns-3 / this, wall | ns-3 / this, CPU |")
print("|---|---|---|---|---|---|---|---|")
for k in dict.fromkeys(r["k"] for r in rows):
    ns_wall = statistics.median(col("ns-3", k, "wall_s"))
    ns_cpu = statistics.median([u + s for u, s in zip(col("ns-3", k, "user_s"), col("ns-3", k, "sys_s"))])
    for prog in names:
        wall = col(prog, k, "wall_s")
        if not wall:
            continue
        cpu = [u + s for u, s in zip(col(prog, k, "user_s"), col(prog, k, "sys_s"))]
        rss = statistics.median(col(prog, k, "maxrss_kb")) / 1024
        ratio = "" if prog == "ns-3" else f"{ns_wall / statistics.median(wall):.0f}x"
        cratio = "" if prog == "ns-3" else f"{ns_cpu / max(statistics.median(cpu), 1e-9):.0f}x"
        print(f"| {k} | {names[prog]} | {fmt(wall)} | {fmt(col(prog, k, 'user_s'))} | "
              f"{fmt(col(prog, k, 'sys_s'))} | {rss:.0f} | {ratio} | {cratio} |")
PY
}

for k in $KS; do
  cfg=validation/scenarios/flexplane_fat_tree_k$k.yaml
  ns3_args=$(validation/run_ns3.sh --list | sed -n "s/^fat-tree-k$k-dctcp: //p")
  [[ -n $ns3_args ]] || { echo "bench_fat_tree: run_ns3.sh has no fat-tree-k$k-dctcp" >&2; exit 2; }
  # Each binary's config: the scenario, or without stop_when_done for a binary that predates it.
  declare -A CFG=()
  for i in "${!BINS[@]}"; do
    CFG[$i]=$cfg
    if ! "${BINS[$i]}" check "$cfg" >/dev/null 2>&1; then
      CFG[$i]=$OUT/k${k}_bin$i.yaml
      sed -e '/^ *stop_when_done:/d' -e "s|trace: \.\./traces/|trace: $REPO/validation/traces/|" "$cfg" >"${CFG[$i]}"
      "${BINS[$i]}" check "${CFG[$i]}" >/dev/null ||
        { echo "bench_fat_tree: ${BINS[$i]} rejects $cfg even without stop_when_done" >&2; exit 2; }
      echo "  note: ${BINS[$i]} predates run.stop_when_done: it runs k = $k to the cap (duration + drain)" |
        tee -a "$OUT/info.txt"
    fi
  done
  for ((r = 1; r <= ROUNDS; r++)); do
    order=(ns3)
    for i in "${!BINS[@]}"; do order+=("$i"); done
    if ((r % 2 == 0)); then  # reversed every other round
      rev=()
      for ((j = ${#order[@]} - 1; j >= 0; j--)); do rev+=("${order[$j]}"); done
      order=("${rev[@]}")
    fi
    for p in "${order[@]}"; do
      # Outputs go to a fresh folder that replaces the previous round's once the run is complete
      # (an interrupted bench keeps each program's last whole outputs, for compare.py).
      if [[ $p == ns3 ]]; then
        d=$OUT/ns3_k$k
        rm -rf "$d.part"
        # shellcheck disable=SC2086  # ns3_args is a word list
        timed ns-3 "$k" "$r" "$OUT/ns3_k${k}_r$r.log" "$NS3" $ns3_args --out="$d.part"
      else
        d=$OUT/flexplane${p}_k$k
        rm -rf "$d.part"
        timed "flexplane$p" "$k" "$r" "$OUT/flexplane${p}_k${k}_r$r.log" "${BINS[$p]}" run "${CFG[$p]}" --cores 1 \
          --out "$d.part" -q
      fi
      rm -rf "$d"
      mv "$d.part" "$d"
    done
    table >"$OUT/table.md"
  done
  unset CFG
done
echo "loadavg_end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/info.txt"

table | tee "$OUT/table.md"
