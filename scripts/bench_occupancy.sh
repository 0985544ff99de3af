#!/usr/bin/env bash
# What occupancy sampling costs, whole process (docs/performance.md, "Occupancy output").
# Runs each variant of experiments/configs/occupancy_cost.yaml REPS times, interleaved
# (off, binary, summary_only, csv, off, ...), under /usr/bin/time, and prints per variant
# the median and range of wall seconds and of CPU seconds (user + sys: less disturbed by other
# jobs on a shared machine than wall time), the median peak RSS, and the output size.
#   scripts/bench_occupancy.sh [REPS] [VARIANTS...]          # default 5; off binary summary_only csv
#   BASE_BIN=/path/to/older/flexplane-emulator scripts/bench_occupancy.sh 5
#     also times an older binary (no output.occupancy key: variants off and csv only) in the same rounds
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-build/flexplane-emulator}
CFG=experiments/configs/occupancy_cost.yaml
REPS=${1:-5}; shift || true
VARIANTS=("$@"); [[ ${#VARIANTS[@]} -gt 0 ]] || VARIANTS=(off binary summary_only csv)
OUT=$(mktemp -d /tmp/bench_occupancy.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
runs=()
for v in "${VARIANTS[@]}"; do runs+=("new:$v"); done
if [[ -n ${BASE_BIN:-} ]]; then
  # The older binary knows neither output.occupancy nor the summary-only variant.
  sed '/^  binary:/d; /^  summary_only:/d; s/^  csv: .*/  csv: {}/' "$CFG" > "$OUT/base.yaml"
  sed -i "s|size_cdf: ../data|size_cdf: $PWD/experiments/data|" "$OUT/base.yaml"
  runs+=("base:off" "base:csv")
fi
for ((i = 1; i <= REPS; i++)); do
  for r in "${runs[@]}"; do
    kind=${r%%:*}; v=${r#*:}
    bin=$BIN; cfg=$CFG; [[ $kind == base ]] && { bin=$BASE_BIN; cfg=$OUT/base.yaml; }
    rm -rf "$OUT/run"
    /usr/bin/time -f "%e %U %S %M" -o "$OUT/t" "$bin" run "$cfg" --variant "$v" --out "$OUT/run" --quiet >/dev/null
    size=$(du -sb "$OUT/run/$v" | cut -f1)
    echo "$r $(cat "$OUT/t") $size" >> "$OUT/all"
    echo "round $i $r: $(cat "$OUT/t") (wall user sys s, KB), $size bytes" >&2
  done
done
python3 - "$OUT/all" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    r, wall, user, sys_, rss, size = line.split()
    rows.setdefault(r, []).append((float(wall), float(user) + float(sys_), int(rss), int(size)))
print(f"{'binary:variant':20} {'n':>2} {'wall median':>11} {'wall range':>13} {'CPU median':>10} {'CPU range':>13}"
      f" {'RSS MB':>7} {'output MB':>9}")
for r, v in rows.items():
    w = [x[0] for x in v]; c = [x[1] for x in v]; m = [x[2] / 1024 for x in v]
    print(f"{r:20} {len(v):2d} {statistics.median(w):10.2f}s {min(w):6.2f}-{max(w):5.2f}s"
          f" {statistics.median(c):9.2f}s {min(c):6.2f}-{max(c):5.2f}s {statistics.median(m):7.0f} {v[0][3] / 1e6:9.1f}")
PY
