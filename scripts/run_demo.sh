#!/usr/bin/env bash
# The main job (make demo): a lab experiment on real TCP through the emulator
# (experiments/lab/demo.yaml, docs/lab.md): one rack of 6 network-namespace
# hosts, RPC traffic, DropTail / RED+ECN / DRR / priority / pFabric, then plots.
# Needs root (namespaces, NFQUEUE, DPDK af_packet): re-runs itself under sudo.
# Usage: scripts/run_demo.sh [BUILD_DIR] [RESULTS_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
results=${2:-results/lab/demo}
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "make demo needs root (network namespaces, NFQUEUE, DPDK)" >&2; exit 1; }
  exec sudo "$0" "$@"
fi
echo "== flexplane lab: experiments/lab/demo.yaml -> $results (about 3 minutes)"
scripts/lab run experiments/lab/demo.yaml --out "$results" --bin-dir "$build"
echo "== done: $results (fct_by_size.png, fct_tradeoff.png, queue_timeseries.png, queue_cdf.png, runs.csv)"
echo "   the virtual-time scheduler comparison: make demo-virtual"
