#!/usr/bin/env bash
# Multi-core scaling of virtual-time runs: one config at several core counts
# and placements, whole-process wall time, CPU time and peak memory per run,
# and a check that every run wrote the same outputs as the first.
#
#   scripts/bench_scaling.sh [-b BINARY] [-r ROUNDS] [-p "grouped round_robin"] CONFIG CORES...
#
# Prints one CSV row per run on stdout (header first):
#   config,placement,cores,round,wall_s,user_s,sys_s,maxrss_mb,engine_s,same_outputs
# wall/user/sys/maxrss come from GNU time when it is installed (else bash's
# times and no maxrss); engine_s is metadata.yaml's engine wall time;
# same_outputs compares every output file but metadata.yaml with the first
# run's. Rounds alternate over the whole grid, so a noisy spell hits every
# core count alike. Built for a many-core machine without our packages:
# `make static` builds build-static/flexplane-emulator (docs/performance.md).
set -euo pipefail

bin=build/flexplane-emulator
rounds=2
placements="grouped"
while getopts "b:r:p:h" o; do
  case $o in
    b) bin=$OPTARG ;;
    r) rounds=$OPTARG ;;
    p) placements=$OPTARG ;;
    *) sed -n '2,15p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || { sed -n '2,15p' "$0" >&2; exit 2; }
config=$1
shift
[ -x "$bin" ] || { echo "bench_scaling: no executable $bin (build it, or -b)" >&2; exit 2; }
[ -f "$config" ] || { echo "bench_scaling: no config $config" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gnu_time=""
[ -x /usr/bin/time ] && /usr/bin/time -f "%e" true 2>/dev/null && gnu_time=/usr/bin/time

echo "config,placement,cores,round,wall_s,user_s,sys_s,maxrss_mb,engine_s,same_outputs"
ref=""
for round in $(seq 1 "$rounds"); do
  for p in $placements; do
    for c in "$@"; do
      out="$work/out"
      rm -rf "$out"
      if [ -n "$gnu_time" ]; then
        $gnu_time -o "$work/t" -f "%e %U %S %M" "$bin" run "$config" --cores "$c" --placement "$p" --quiet --out "$out" >/dev/null
        read -r wall user sys rss <"$work/t"
        rss=$((rss / 1024))
      else
        TIMEFORMAT="%R %U %S"
        { time "$bin" run "$config" --cores "$c" --placement "$p" --quiet --out "$out" >/dev/null; } 2>"$work/t"
        read -r wall user sys <"$work/t"
        rss=""
      fi
      engine=$(awk '/^ *wall_seconds:/ {print $2; exit}' "$out/metadata.yaml")
      (cd "$out" && find . -type f ! -name metadata.yaml | sort | xargs md5sum) >"$work/sums"
      if [ -z "$ref" ]; then
        ref="$work/ref"
        cp "$work/sums" "$ref"
      fi
      same=$([ "$(cat "$ref")" = "$(cat "$work/sums")" ] && echo yes || echo NO)
      echo "$(basename "$config"),$p,$c,$round,$wall,$user,$sys,$rss,$engine,$same"
    done
  done
done
