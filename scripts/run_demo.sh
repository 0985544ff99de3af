#!/usr/bin/env bash
# The main job: run the built-in experiment (every variant) and plot it.
# Usage: scripts/run_demo.sh [BUILD_DIR] [RESULTS_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
results=${2:-results/scheduler_comparison}
config=experiments/configs/scheduler_comparison.yaml

echo "== flexplane demo: $config -> $results"
"$build/flexplane-emulator" run "$config" --out "$results"
echo "== plotting"
.venv/bin/python plots/plot_all.py "$results"
echo "== done: CSVs and PNGs in $results"
ls "$results"/*.png "$results"/*.csv 2>/dev/null | sed 's/^/   /'
