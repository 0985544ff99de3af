#!/usr/bin/env bash
# The virtual-time comparison (make demo-virtual): run the built-in experiment (every variant) and plot it.
# Usage: scripts/run_demo_virtual.sh [BUILD_DIR] [RESULTS_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
results=${2:-results/scheduler_comparison}
sweep=$(dirname "$results")/load_sweep

run_and_plot() {  # config, results folder
  echo "== flexplane: $1 -> $2"
  "$build/flexplane-emulator" run "$1" --out "$2"
  echo "== plotting $2"
  .venv/bin/python plots/plot_all.py "$2" | sed 's/^/   wrote /'
}
run_and_plot experiments/configs/scheduler_comparison.yaml "$results"
run_and_plot experiments/configs/load_sweep.yaml "$sweep"
echo "== done. Scheduler comparison: $results ; queue occupancy vs load: $sweep"
