# Shared by the htsim comparisons (validation/htsim_*.sh; docs/validation.md):
# sourced, not run.

# htsim_run NAME BINARY ARGS...: runs BINARY "${COMMON[@]}" ARGS in
# $WORK/htsim/NAME and keeps there: out.txt, the stdout lines matching the
# ERE $KEEP (htsim prints a line per ACK or sender event); queue.txt, the
# queue log lines (parse_output $PARSE_OUTPUT) matching the ERE $QUEUE_RE;
# wall, the whole-process wall time. Exits with an error if BINARY fails.
htsim_run() {
  local name=$1 bin=$2; shift 2
  rm -rf "$WORK/htsim/$name" && mkdir -p "$WORK/htsim/$name"
  ( cd "$WORK/htsim/$name" &&
    { /usr/bin/time -f %e -o wall "$bin" "${COMMON[@]}" "$@" -o log.dat 2> err.txt || echo "rc $?" > failed; } |
      { LC_ALL=C grep -E "$KEEP" || true; } > out.txt &&
    "$PARSE_OUTPUT" log.dat -ascii -idmap idmap.txt 2> /dev/null |
      { LC_ALL=C grep -E "$QUEUE_RE" || true; } > queue.txt && rm -f log.dat )
  [[ ! -e $WORK/htsim/$name/failed ]] || { echo "error: htsim $name failed: $WORK/htsim/$name/err.txt" >&2; exit 1; }
}

# write_incast DIR PKTS RECEIVER SENDER...: DIR/incast.cm (htsim's connection
# matrix, 16 nodes) and DIR/incast.csv (flexplane's trace), every sender
# sending PKTS packets to RECEIVER from t = 0. htsim's HPCC and RoCE packets
# carry a 64-byte header over the MTU, so -mtu 1436 puts 1500 bytes on the
# wire, one flexplane packet; a flow of PKTS x 1436 - 1 bytes is PKTS
# packets in both htsim senders (RoCE counts whole packets and would send
# one more at exactly PKTS x 1436).
write_incast() {
  python3 - "$@" <<'PY'
import sys
work, pkts, dst, srcs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), [int(s) for s in sys.argv[4:]]
with open(f"{work}/incast.cm", "w") as f:
    print(f"Nodes 16\nConnections {len(srcs)}", file=f)
    for i, s in enumerate(srcs):
        print(f"{s}->{dst} id {i + 1} start 0 size {pkts * 1436 - 1}", file=f)
with open(f"{work}/incast.csv", "w") as f:
    print("flow_id,src,dst,size_pkts,start_timeslot", file=f)
    for i, s in enumerate(srcs):
        print(f"{i},{s},{dst},{pkts},0", file=f)
PY
}

# The arguments every comparison script takes, and its checks. Its loop:
#   while (($#)); do
#     htsim_common_option "$@" && { shift "$HTSIM_SHIFT"; continue; }
#     case $1 in --its-own) ... ;; *) htsim_unknown_option "$1" ;; esac
#   done
# --htsim-src DIR sets SRC, --work DIR sets WORK, -h/--help prints the
# script's header comment (line 2 up to `set -euo`) and exits.
htsim_common_option() {
  case $1 in
    --htsim-src) SRC=$(realpath "$2"); HTSIM_SHIFT=2 ;;
    --work) WORK=$2; HTSIM_SHIFT=2 ;;
    -h|--help) sed -n '2,/^set -euo/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) return 1 ;;
  esac
}
htsim_unknown_option() { echo "error: unknown argument '$1' (see --help)" >&2; exit 2; }
# SRC must be htsim's sim/ folder.
htsim_check_src() {
  [[ -d $SRC/datacenter ]] || { echo "error: --htsim-src: $SRC is not htsim's sim/ folder" >&2; exit 2; }
}
# flexplane must be built; WORK is made and its path made absolute.
htsim_prepare_work() {
  [[ -x build/flexplane-emulator ]] || { echo "error: build/flexplane-emulator missing: run make" >&2; exit 2; }
  mkdir -p "$WORK"
  WORK=$(realpath "$WORK")
}
# htsim_fresh_copy DIR: DIR becomes a writable copy of $SRC (htsim's sim/,
# whose files may be read-only), replacing what was there.
htsim_fresh_copy() {
  [[ ! -e $1 ]] || chmod -R u+w "$1"
  rm -rf "$1" && cp -r "$SRC" "$1" && chmod -R u+w "$1"
}

# write_websearch DIR SCRIPT: the web search that htsim_websearch.sh and
# htsim_dcqcn_causes.sh replay. flexplane's own poisson web search on the
# k = 8 fat tree (open loop; only its flows.csv is read; uses SEED GBPS
# LAT_TS BUF MS REPO), then DIR/websearch.csv (a trace for flexplane) and
# DIR/websearch.cm (htsim's connection matrix, starts in ns). htsim's HPCC
# and RoCE packets carry a 64-byte header over the MTU, so -mtu 1436 puts
# 1500 bytes on the wire, one flexplane packet; a flow of P x 1436 - 1
# bytes is P packets in both htsim senders.
write_websearch() {
  local dir=$1 script=$2
  mkdir -p "$dir"
  rm -rf "$dir/gen" "$dir/flexplane"
  cat > "$dir/gen.yaml" <<EOF
# Written by $script: the flow list only (open loop).
seed: $SEED
network: {link_rate_gbps: $GBPS}
topology: {kind: fat_tree, k: 8, link_latency_timeslots: $LAT_TS}
routers: {default: {scheme: droptail, queue_manager: {capacity_pkts: $BUF}}}
workload: {kind: poisson, pattern: all_to_all, load: 0.5, size_cdf: $REPO/experiments/data/flow-sizes/web-search.cdf}
run: {duration_ms: $MS, drain_ms: 0.01, occupancy_interval_us: 0}
output: {occupancy: none}
EOF
  build/flexplane-emulator run "$dir/gen.yaml" --out "$dir/gen" --quiet > /dev/null
  python3 - "$dir" "$GBPS" <<'PY'
import csv, sys
work, gbps = sys.argv[1], int(sys.argv[2])
ts_ns = 1500 * 8 // gbps
rows = list(csv.DictReader(open(f"{work}/gen/flows.csv")))
if not rows:
    sys.exit("error: the generated flow list is empty")
with open(f"{work}/websearch.csv", "w") as f:
    print("flow_id,src,dst,size_pkts,start_timeslot", file=f)
    for r in rows:
        print(f"{r['flow_id']},{r['src']},{r['dst']},{r['size_pkts']},{r['start_timeslot']}", file=f)
with open(f"{work}/websearch.cm", "w") as f:
    print(f"Nodes 128\nConnections {len(rows)}", file=f)
    for r in rows:
        ns = int(r["start_timeslot"]) * ts_ns
        assert ns < 2 ** 24, "htsim reads start times as float: keep them below 2^24 ns"
        assert r["src"] != r["dst"]
        print(f"{r['src']}->{r['dst']} id {int(r['flow_id']) + 1} start {ns} size {int(r['size_pkts']) * 1436 - 1}",
              file=f)
PY
}
