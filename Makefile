# flexplane — entry points. Each target installs what it needs (Debian 12).
#   make          build the emulator, tests and benchmarks (Release)
#   make demo     the main job: a lab experiment on real TCP through the emulator (root), CSVs + PNGs
#   make demo-virtual  the virtual-time scheduler comparison, CSVs + PNGs
#   make test     every test suite (unit, sanitizers, protocol + fuzz, plots, CLI, lab, router, kmod VMs)
#   make bench    Google Benchmark: engine speed (router packet-hops/s), router-mode hot path (cycles/packet)
#   make bench-router   flexplane-router vs dpdk-testpmd on the same devices (Mpps, 1 and 2 cores; root)
#   make list     schemes and their parameters
#   make kmod     the endpoint kernel module, its tc plugin and fp_rr (build/kmod; docs/kmod.md)
#   make packages  the endpoint's Debian packages (flexplane-dkms, flexplane-tc) in build/packages (docs/deploy.md)
#   make static   a statically linked flexplane-emulator (virtual time only) in build-static/, to copy to other machines
BUILD   ?= build
GEN     := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
RESULTS ?= results/scheduler_comparison

.PHONY: all build deps demo demo-virtual test bench bench-router list kmod packages static clean

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
	@$(BUILD)/router_bench --benchmark_counters_tabular=true --benchmark_filter='$(BENCH_FILTER)' $(BENCH_ARGS)

# Whole-process forwarding rates (docs/performance.md "Router mode").
bench-router: build
	@.venv/bin/python scripts/bench_router.py --bin $(BUILD)/flexplane-router $(BENCH_ROUTER_ARGS)

kmod: deps
	@$(MAKE) -s -C kmod OUT=$(abspath $(BUILD))/kmod

packages: deps
	@packaging/build_debs.sh $(abspath $(BUILD))/packages

# No DPDK (live emulation needs the machine's own); scripts/bench_scaling.sh runs it.
static: deps
	@cmake -S . -B build-static $(GEN) -DCMAKE_BUILD_TYPE=Release -DFLEXPLANE_WITH_DPDK=OFF -DFLEXPLANE_STATIC=ON >/dev/null
	@cmake --build build-static --target flexplane-emulator
	@echo "build-static/flexplane-emulator: statically linked, runs on any x86-64 Linux"

list: build
	@$(BUILD)/flexplane-emulator list

clean:
	rm -rf build build-* results
