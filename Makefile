# flexplane — entry points. Each target installs what it needs (Debian 12).
#   make          build the emulator, tests and benchmarks (Release)
#   make demo     the main job: a lab experiment on real TCP through the emulator (root), CSVs + PNGs
#   make demo-virtual  the virtual-time scheduler comparison, CSVs + PNGs
#   make test     every test suite (unit, sanitizers, protocol + fuzz, plots, CLI, lab, kmod VMs)
#   make bench    Google Benchmark: engine speed (router packet-hops/s)
#   make list     schemes and their parameters
#   make kmod     the endpoint kernel module, its tc plugin and fp_rr (build/kmod; docs/kmod.md)
BUILD   ?= build
GEN     := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
RESULTS ?= results/scheduler_comparison

.PHONY: all build deps demo demo-virtual test bench list kmod clean

all: build

deps:
	@scripts/install_deps.sh

build: deps
	@cmake -S . -B $(BUILD) $(GEN) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD)

demo: build
	@scripts/run_demo.sh $(BUILD) results/lab/demo

demo-virtual: build
	@scripts/run_demo_virtual.sh $(BUILD) $(RESULTS)

test: deps
	@scripts/run_tests.sh

# Repetitions interleaved across cases: these VMs drift by +-20% over minutes.
# BENCH_FILTER is a regex passed quoted, so it may contain '|'.
BENCH_ARGS ?= --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
BENCH_FILTER ?= .
bench: build
	@$(BUILD)/flexplane_bench --benchmark_counters_tabular=true --benchmark_filter='$(BENCH_FILTER)' $(BENCH_ARGS)

kmod: deps
	@$(MAKE) -s -C kmod OUT=$(abspath $(BUILD))/kmod

list: build
	@$(BUILD)/flexplane-emulator list

clean:
	rm -rf build build-* results
