#!/usr/bin/env bash
# The live capacity sweep in one call, for a lent many-core machine (issue 22;
# docs/live.md, "Capacity"): nothing of ours is installed there and it reaches
# no registry, so this needs only bash, awk, sed and the statically linked
# emulator (`make static`). Rows: engine cores x Poisson load, racks of 32
# endpoints (2 per engine core) under one aggregation switch, synthetic
# endpoints on CPUs of their own (about one driver per 3 engine cores).
# Prints a table like scripts/live_capacity.py and keeps every capacity.yaml.
# About 1.5 s a row; the default grid (5 core counts x 5 loads) takes ~1 min.
#   scripts/device_capacity.sh [EMULATOR] [OUT]
#   CORES="1 2 4 8 12" LOADS="0.05 0.1 0.2" scripts/device_capacity.sh build-static/flexplane-emulator $OUT
set -u
cd "$(dirname "$0")/.."
BIN=${1:-build-static/flexplane-emulator}
OUT=${2:-results/device_capacity}
CPUS=$(nproc)
CORES=${CORES:-"1 2 4 8 12"}
LOADS=${LOADS:-"0.05 0.1 0.15 0.2 0.3"}
DURATION=${DURATION:-1}
[[ -x $BIN ]] || { echo "error: $BIN: no such executable (make static)" >&2; exit 2; }
mkdir -p "$OUT"
field() { awk -v k="$2" '$1 == k":" {print $2; exit}' "$1"; }
sub() { awk -v k="$2" -v s="$3" '$1 == k":" {m=1; next} m && $1 == s":" {print $2; exit} m && !/^  / {m=0}' "$1"; }
echo "machine: $CPUS CPUs, $(uname -r); $BIN"
printf '%5s %7s %5s %6s | %8s %8s %8s Gbit/s | %8s %9s %7s | %7s %8s | %s\n' \
  cores drivers racks load offered deliv. routers "late %" "lag us" "noise %" "p50 us" "p99 us" status
for c in $CORES; do
  d=$(( (c + 2) / 3 )); (( d > 8 )) && d=8
  if (( c + d > CPUS )); then echo "  (skip $c cores: $c + $d drivers > $CPUS CPUs)"; continue; fi
  racks=$(( 2 * c )); (( racks < 2 )) && racks=2
  cfg=$OUT/c$c.yaml
  sed "s/^  racks: .*/  racks: $racks/" experiments/configs/live_capacity.yaml > "$cfg"
  for l in $LOADS; do
    dir=$OUT/c${c}_l$l
    "$BIN" capacity "$cfg" --cores "$c" --drivers "$d" --load "$l" --duration-s "$DURATION" --out "$dir" --quiet \
      > "$dir.log" 2>&1 || { echo "  (c=$c load=$l failed: $(tail -1 "$dir.log"))"; continue; }
    y=$dir/capacity.yaml
    awk -v c="$c" -v d="$d" -v r="$racks" -v l="$l" -v of="$(field "$y" offered_gbps)" -v de="$(field "$y" delivered_gbps)" \
        -v ro="$(field "$y" router_gbps)" -v la="$(field "$y" late_fraction)" -v lag="$(field "$y" max_lag_us)" \
        -v nz="$(sub "$y" cpu_noise gap_fraction)" -v p50="$(sub "$y" latency_us p50)" -v p99="$(sub "$y" latency_us p99)" \
        -v st="$(field "$y" status)" 'BEGIN {
          printf "%5d %7d %5d %6s | %8.1f %8.1f %8.1f        | %8.4f %9.1f %7.2f | %7.1f %8.1f | %s\n",
                 c, d, r, l, of, de, ro, 100 * la, lag, 100 * nz, p50, p99, (st == "ok" ? "ok" : toupper(st)) }'
  done
done
echo "each row: $OUT/c<cores>_l<load>/capacity.yaml"
