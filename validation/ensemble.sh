#!/usr/bin/env bash
# Perturbed-trace ensembles for the web-search validation (docs/validation.md,
# "Run-to-run spread"): the same comparison as compare.py's, over several
# copies of the committed trace whose flow start times are each moved later by
# 0..J timeslots (seeded, so reruns are identical). Run 0 is the committed
# trace itself. Each copy is replayed by ns-3 (validation/run_ns3.sh --trace)
# and by flexplane; compare.py ensemble pools each side's flows and queue
# samples and prints how much single runs vary on each side.
#
#   validation/ensemble.sh [--runs N] [--first K] [--jitter J] [--out DIR] NS3_SCENARIO FLEXPLANE_VARIANT
#
#   --runs N      copies of the trace, run 0 unperturbed (default 8)
#   --first K     number the runs from K (default 0): two calls with the same
#                 --out, e.g. --first 0 and --first 8, fill one ensemble on two
#                 cores; compare.py ensemble then takes both calls' folders
#   --jitter J    largest start-time shift in timeslots (default 2, 2.4 us;
#                 flows arrive 170 us apart on average)
#   --out DIR     results root (default results/validation/ensemble/NS3_SCENARIO--FLEXPLANE_VARIANT)
#   NS3_SCENARIO  a web-search scenario of validation/run_ns3.sh --list
#   FLEXPLANE_VARIANT a variant of validation/scenarios/flexplane_websearch.yaml
#
# Example (docs/validation.md): NewReno over DropTail, about 8 minutes:
#   validation/ensemble.sh websearch-newreno-droptail-preconnect-sack-bytes newreno-droptail-ackloss-sack
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=8 FIRST=0 JITTER=2 OUT=""
TRACE=validation/traces/websearch_star16.csv
CONFIG=validation/scenarios/flexplane_websearch.yaml
EMULATOR=build/flexplane-emulator
usage() { sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; }

ARGV=()
while (($#)); do
  case $1 in
    --runs) RUNS=${2:?--runs needs a number}; shift ;;
    --first) FIRST=${2:?--first needs a number}; shift ;;
    --jitter) JITTER=${2:?--jitter needs a number of timeslots}; shift ;;
    --out) OUT=${2:?--out needs a folder}; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "ensemble: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) ARGV+=("$1") ;;
  esac
  shift
done
((${#ARGV[@]} == 2)) || { usage >&2; exit 2; }
SCEN=${ARGV[0]} VARIANT=${ARGV[1]}
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "ensemble: --runs must be a positive integer" >&2; exit 2; }
[[ $FIRST =~ ^[0-9]+$ ]] || { echo "ensemble: --first must be a whole number" >&2; exit 2; }
[[ $JITTER =~ ^[0-9]+$ ]] || { echo "ensemble: --jitter must be a whole number of timeslots" >&2; exit 2; }
[[ $SCEN == websearch-* ]] || { echo "ensemble: '$SCEN' does not replay the web-search trace" >&2; exit 2; }
scenarios=$(validation/run_ns3.sh --list)  # not piped into grep -q: its early exit would fail the list under pipefail
grep -q "^$SCEN:" <<<"$scenarios" || { echo "ensemble: unknown ns-3 scenario '$SCEN'" >&2; exit 2; }
grep -q "^  $VARIANT:" "$CONFIG" || { echo "ensemble: $CONFIG has no variant '$VARIANT'" >&2; exit 2; }
[[ -x $EMULATOR ]] || { echo "ensemble: $EMULATOR is missing (make build)" >&2; exit 2; }
OUT=${OUT:-results/validation/ensemble/$SCEN--$VARIANT}
mkdir -p "$OUT/traces" "$OUT/configs"
ABS_OUT=$(cd "$OUT" && pwd)

FX=() NS=()
for ((k = FIRST; k < FIRST + RUNS; k++)); do
  trace=$ABS_OUT/traces/run$k.csv
  python3 - "$TRACE" "$trace" "$k" "$JITTER" <<'EOF'
import csv, random, sys
src, dst, seed, jitter = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed)
with open(src) as f:
    comments = [line for line in f if line.startswith("#")]
with open(src) as f:
    rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
for r in rows:  # run 0: the committed trace as it is
    r["start_timeslot"] = str(int(r["start_timeslot"]) + (rng.randint(0, jitter) if seed else 0))
rows.sort(key=lambda r: (int(r["start_timeslot"]), int(r["flow_id"])))
with open(dst, "w", newline="") as f:
    f.writelines(comments)
    f.write(f"# ensemble run {seed}: start times + uniform 0..{jitter if seed else 0} timeslots\n")
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
EOF
  echo "ensemble: run $k ($FIRST..$((FIRST + RUNS - 1))): ns-3 $SCEN"
  validation/run_ns3.sh --out "$OUT/ns3/run$k" --trace "$trace" "$SCEN" >"$OUT/ns3-run$k.log"
  echo "ensemble: run $k: flexplane $VARIANT"
  sed "s|^  trace: .*|  trace: $trace|" "$CONFIG" >"$OUT/configs/run$k.yaml"
  "$EMULATOR" run "$OUT/configs/run$k.yaml" -q --variant "$VARIANT" --out "$OUT/flexplane/run$k" >"$OUT/flexplane-run$k.log"
  FX+=("$OUT/flexplane/run$k/$VARIANT") NS+=("$OUT/ns3/run$k/$SCEN")
done
python3 validation/compare.py ensemble --flexplane "${FX[@]}" --ns3 "${NS[@]}" --common-window \
  --ns3-queue full_packets | tee "$OUT/compare.md"
