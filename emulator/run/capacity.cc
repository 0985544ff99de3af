#include "emulator/run/capacity.h"

#include <yaml-cpp/yaml.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "emulator/engine/engine.h"
#include "emulator/output/output.h"
#include "emulator/run/setup.h"
#include "emulator/synthetic/synthetic_endpoints.h"
#include "emulator/traffic/live_traffic.h"

namespace flexplane {

namespace fs = std::filesystem;

namespace {

struct Window {
  std::vector<CoreHealth> begin, end;
  // Late timeslots and timeslots of the window, of the core with the largest late fraction.
  uint64_t late = 0, slots = 0;
  double max_lag_ns = 0;  // worst since the window began (Engine::reset_max_lag)
  double late_fraction() const { return slots ? static_cast<double>(late) / static_cast<double>(slots) : 0; }
};

Window window_health(std::vector<CoreHealth> b, std::vector<CoreHealth> e) {
  Window w{std::move(b), std::move(e)};
  double worst = -1;
  for (size_t i = 0; i < w.end.size() && i < w.begin.size(); ++i) {
    const uint64_t slots = w.end[i].timeslots - w.begin[i].timeslots;
    const uint64_t late = w.end[i].late_timeslots - w.begin[i].late_timeslots;
    const double f = slots ? static_cast<double>(late) / static_cast<double>(slots) : 0;
    if (f > worst) {
      worst = f;
      w.late = late;
      w.slots = slots;
    }
    w.max_lag_ns = std::max(w.max_lag_ns, w.end[i].max_lag_ns);
  }
  return w;
}

// How much of a spinning CPU's time this machine takes away (interrupts,
// other tenants, a hypervisor): every CPU the run will use spins for
// `seconds` at once, reading the clock, and gaps over 5 us are summed. A
// timeslot is 1.2 us: each such gap makes timeslots late however fast the
// engine is, so this is the floor under the late fraction here.
struct CpuNoise {
  double gap_fraction = 0;  // of the spin time, worst CPU
  double gaps_per_s = 0;    // worst CPU
  double worst_gap_us = 0;
  double clock_read_ns = 0;  // one clock_gettime(CLOCK_MONOTONIC), mean over the spin, worst CPU
};

CpuNoise measure_cpu_noise(const std::vector<int>& cpus, double seconds) {
  std::vector<CpuNoise> per(cpus.size());
  std::vector<std::thread> spinners;
  for (size_t i = 0; i < cpus.size(); ++i) {
    spinners.emplace_back([&per, i, seconds] {
      using clk = std::chrono::steady_clock;
      const auto t0 = clk::now(), end = t0 + std::chrono::nanoseconds(static_cast<int64_t>(seconds * 1e9));
      auto prev = t0;
      double lost_ns = 0, worst = 0;
      uint64_t gaps = 0, reads = 0;
      for (auto now = clk::now(); now < end; now = clk::now(), ++reads) {
        const double g = std::chrono::duration<double, std::nano>(now - prev).count();
        prev = now;
        if (g > 5000) {
          ++gaps;
          lost_ns += g;
          worst = std::max(worst, g);
        }
      }
      per[i] = CpuNoise{lost_ns / (seconds * 1e9), gaps / seconds, worst / 1000, seconds * 1e9 / std::max<uint64_t>(reads, 1)};
    });
    pin_to_cpu(spinners.back(), cpus[i]);
  }
  for (auto& t : spinners) t.join();
  CpuNoise worst;
  for (const CpuNoise& n : per) {
    worst.gap_fraction = std::max(worst.gap_fraction, n.gap_fraction);
    worst.gaps_per_s = std::max(worst.gaps_per_s, n.gaps_per_s);
    worst.worst_gap_us = std::max(worst.worst_gap_us, n.worst_gap_us);
    worst.clock_read_ns = std::max(worst.clock_read_ns, n.clock_read_ns);
  }
  return worst;
}

void check_args(const CapacityArgs& a) {
  if (a.drivers < 1 || a.drivers > 64) throw UsageError("--drivers must be in [1, 64]");
  if (a.backlog == 0 && !(a.load > 0 && a.load <= 64)) throw UsageError("--load must be in (0, 64] packets per endpoint per timeslot");
  if (!(a.duration_s > 0) || a.duration_s > 3600) throw UsageError("--duration-s must be in (0, 3600]");
  if (!(a.warmup_s >= 0) || a.warmup_s > 60) throw UsageError("--warmup-s must be in [0, 60]");
  if (!(a.late_threshold >= 0) || a.late_threshold > 1) throw UsageError("--late-threshold must be in [0, 1]");
  if (a.ring_entries && (a.ring_entries < 64 || a.ring_entries > (1u << 20)))
    throw UsageError("--ring-entries must be in [64, 1048576]");
  if (!(a.noise_check_s >= 0) || a.noise_check_s > 10) throw UsageError("--noise-check-s must be in [0, 10]");
  if (!(a.poll_us >= 0) || a.poll_us > 1000) throw UsageError("--poll-us must be in [0, 1000]");
  if (!(a.drain_timeout_s > 0) || a.drain_timeout_s > 600) throw UsageError("--drain-timeout-s must be in (0, 600]");
}

int capacity_impl(const CapacityArgs& a) {
  check_args(a);
  RunConfig c = pick_run(a.config, a.variant);
  if (!a.out_dir.empty()) c.output_dir = a.out_dir;
  uint32_t cores = a.cores ? a.cores : c.cores;
  if (cores > c.topology.routers.size()) {
    warn("--cores " + std::to_string(cores) + " > " + std::to_string(c.topology.routers.size()) +
         " routers: using one core per router");
    cores = static_cast<uint32_t>(c.topology.routers.size());
  }
  std::vector<ResolvedRouter> resolved;
  std::vector<std::unique_ptr<Router>> routers = build_routers(c, &resolved);
  prepare_output_dir(c.output_dir);

  const double ts_ns = c.network.timeslot_ns();
  const auto slots_of = [&](double s) { return static_cast<Timeslot>(std::llround(s * 1e9 / ts_ns)); };
  // The engine starts its clock 1 ms after run() (Engine::run); the window is in its timeslots.
  const Timeslot win_begin = slots_of(a.warmup_s), win_end = win_begin + std::max<Timeslot>(1, slots_of(a.duration_s));

  LiveTrafficOptions lopt;
  lopt.endpoint_queue_pkts = c.live.endpoint_queue_pkts;
  lopt.feeders = a.drivers;
  if (a.ring_entries) lopt.ring_entries = a.ring_entries;
  LiveTraffic traffic(c.topology, cores, lopt);
  EngineOptions opt = engine_options(c, cores);
  opt.clock = Clock::kRealTime;
  opt.sleep_when_ahead = false;  // dedicated cores: spin to each timeslot's start
  opt.max_lead_ns = c.live.max_lead_us * 1000.0;
  Engine engine(c.topology, std::move(routers), traffic, opt);

  const HopTable hops(c.topology);
  SyntheticLoad load;
  load.load = a.load;
  load.backlog_pkts = a.backlog;
  load.packet_bytes = static_cast<uint16_t>(std::min<uint32_t>(c.network.abstract_packet_bytes, 65535));
  load.seed = c.seed;
  load.poll_ns = static_cast<uint64_t>(a.poll_us * 1000);
  std::vector<std::unique_ptr<SyntheticEndpoints>> drivers;
  for (uint32_t d = 0; d < a.drivers; ++d)
    drivers.push_back(std::make_unique<SyntheticEndpoints>(traffic, d, c.topology, hops, load, ts_ns, win_begin, win_end));

  // Cores: the engine's on the first allowed CPUs (ThreadLauncher pins them
  // when it has more than one), the drivers on the last ones.
  const std::vector<int> cpus = allowed_cpus();
  const bool dedicated = cpus.size() >= size_t{cores} + a.drivers;
  if (!dedicated)
    warn(std::to_string(cores) + " engine core(s) + " + std::to_string(a.drivers) + " driver(s) on " +
         std::to_string(cpus.size()) + " CPU(s): threads share CPUs, expect late timeslots");
  // The CPUs the run will use: the engine's first ones and the drivers' last ones.
  std::vector<int> used;
  for (size_t i = 0; i < cpus.size(); ++i)
    if (!dedicated || i < cores || i >= cpus.size() - a.drivers) used.push_back(cpus[i]);
  const CpuNoise noise = a.noise_check_s > 0 ? measure_cpu_noise(used, a.noise_check_s) : CpuNoise{};
  std::fprintf(stderr,
               "capacity: %u endpoints, %zu routers, %u engine core(s), %u driver(s), timeslot %.1f ns, %s, "
               "window %.3f s after %.3f s -> %s\n",
               c.topology.num_endpoints, c.topology.routers.size(), cores, a.drivers, ts_ns,
               a.backlog ? ("backlogged " + std::to_string(a.backlog) + " pkts/endpoint").c_str()
                         : ("Poisson load " + std::to_string(a.load)).c_str(),
               a.duration_s, a.warmup_s, c.output_dir.c_str());

  std::atomic<int> phase{SyntheticEndpoints::kOffer};
  std::vector<std::thread> threads;
  for (uint32_t d = 0; d < a.drivers; ++d) {
    threads.emplace_back([&, d] { drivers[d]->run(phase); });
    if (dedicated) {
      pin_to_cpu(threads.back(), cpus[cpus.size() - 1 - d]);
    }
  }

  // The controller: health at the window's edges, then drain, then stop.
  std::atomic<bool> engine_over{false};
  Window win;
  bool drained = false;
  double drain_s = 0;
  std::thread controller([&] {
    using clk = std::chrono::steady_clock;
    // The window's edges are timeslots; their wall times are known once the
    // engine has started (Engine::timeslot_due_ns, on steady_clock).
    for (bool started = false; !started;) {
      if (engine_over.load()) return;  // it failed to start (main reports why)
      for (const CoreHealth& h : engine.health()) started = started || h.timeslots > 0;
      if (!started) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    const auto t0 = clk::time_point(std::chrono::nanoseconds(engine.timeslot_due_ns(0)));
    const auto at = [&](double s) { return t0 + std::chrono::nanoseconds(static_cast<int64_t>(s * 1e9)); };
    std::this_thread::sleep_until(at(win_begin * ts_ns / 1e9));
    engine.reset_max_lag();  // the start's lag is not the window's
    std::vector<CoreHealth> h0 = engine.health();
    for (double next = 1; next * 1e9 < (win_end - win_begin) * ts_ns; next += 1) {
      std::this_thread::sleep_until(at(win_begin * ts_ns / 1e9 + next));
      if (!a.quiet) {
        const Window w = window_health(h0, engine.health());
        std::fprintf(stderr, "capacity: %.0f s, late %.4f %% of timeslots, worst lag %.1f us\n", next,
                     100 * w.late_fraction(), w.max_lag_ns / 1000);
      }
    }
    std::this_thread::sleep_until(at(win_end * ts_ns / 1e9));
    win = window_health(std::move(h0), engine.health());
    phase.store(SyntheticEndpoints::kDrain, std::memory_order_release);
    const auto d0 = clk::now();
    for (;;) {
      bool all = true;
      for (auto& d : drivers) all = all && d->drained();
      drain_s = std::chrono::duration<double>(clk::now() - d0).count();
      if (all || drain_s > a.drain_timeout_s) {
        drained = all;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    engine.request_stop();
  });
  std::string engine_error;
  try {
    engine.run(~Timeslot{0} >> 2);
  } catch (const std::exception& e) {
    engine_error = e.what();
  }
  engine_over.store(true);
  controller.join();
  phase.store(SyntheticEndpoints::kQuit, std::memory_order_release);
  for (auto& t : threads) t.join();
  if (!engine_error.empty()) throw std::runtime_error("engine: " + engine_error);

  SyntheticStats s;
  for (auto& d : drivers) s.merge(d->stats());
  const double window_s = (win_end - win_begin) * ts_ns / 1e9;
  const double offer_s = win_end * ts_ns / 1e9;  // offered from the start to the window's end
  const double offered_gbps = s.offered_bytes * 8 / offer_s / 1e9;
  const double delivered_gbps = s.window_delivered_bytes * 8 / window_s / 1e9;
  const double router_gbps = s.window_router_bytes * 8 / window_s / 1e9;
  const bool accounted = drained && s.offered == s.released + s.marked + s.dropped;
  const bool late = win.late_fraction() > a.late_threshold;
  const double p50 = s.latency.quantile_ns(0.5) / 1000, p99 = s.latency.quantile_ns(0.99) / 1000;

  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "config_file" << YAML::Value << c.file;
  y << YAML::Key << "variant" << YAML::Value << c.variant;
  y << YAML::Key << "endpoints" << YAML::Value << c.topology.num_endpoints;
  y << YAML::Key << "routers" << YAML::Value << c.topology.routers.size();
  y << YAML::Key << "engine_cores" << YAML::Value << cores;
  y << YAML::Key << "drivers" << YAML::Value << a.drivers;
  y << YAML::Key << "cpus" << YAML::Value << cpus.size();
  y << YAML::Key << "dedicated_cpus" << YAML::Value << dedicated;
  y << YAML::Key << "timeslot_ns" << YAML::Value << ts_ns;
  y << YAML::Key << "ring_entries" << YAML::Value << (a.ring_entries ? a.ring_entries : LiveTrafficOptions{}.ring_entries);
  y << YAML::Key << "load" << YAML::Value << (a.backlog ? 0.0 : a.load);
  y << YAML::Key << "backlog_pkts" << YAML::Value << a.backlog;
  y << YAML::Key << "window_seconds" << YAML::Value << window_s;
  y << YAML::Key << "warmup_seconds" << YAML::Value << a.warmup_s;
  y << YAML::Key << "offered_gbps" << YAML::Value << offered_gbps;
  y << YAML::Key << "delivered_gbps" << YAML::Value << delivered_gbps;
  y << YAML::Key << "router_gbps" << YAML::Value << router_gbps;
  y << YAML::Key << "late_timeslots" << YAML::Value << win.late;
  y << YAML::Key << "window_timeslots" << YAML::Value << win.slots;
  y << YAML::Key << "late_fraction" << YAML::Value << win.late_fraction();
  y << YAML::Key << "late_threshold" << YAML::Value << a.late_threshold;
  y << YAML::Key << "max_lag_us" << YAML::Value << win.max_lag_ns / 1000;
  y << YAML::Key << "latency_us" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "p50" << YAML::Value << p50 << YAML::Key << "p99" << YAML::Value << p99;
  y << YAML::Key << "max" << YAML::Value << s.latency.max_ns() / 1000.0;
  y << YAML::Key << "samples" << YAML::Value << s.latency.samples();
  y << YAML::Key << "unmatched" << YAML::Value << s.latency_unmatched << YAML::EndMap;
  y << YAML::Key << "cpu_noise" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "check_seconds" << YAML::Value << a.noise_check_s;
  y << YAML::Key << "gap_fraction" << YAML::Value << noise.gap_fraction;
  y << YAML::Key << "gaps_per_second" << YAML::Value << noise.gaps_per_s;
  y << YAML::Key << "worst_gap_us" << YAML::Value << noise.worst_gap_us;
  y << YAML::Key << "clock_read_ns" << YAML::Value << noise.clock_read_ns << YAML::EndMap;
  y << YAML::Key << "max_offer_lag_us" << YAML::Value << s.max_offer_lag_ns / 1000.0;
  y << YAML::Key << "requests" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "offered" << YAML::Value << s.offered;
  y << YAML::Key << "submitted" << YAML::Value << s.submitted;
  y << YAML::Key << "refused_at_submit" << YAML::Value << s.refused;
  y << YAML::Key << "released" << YAML::Value << s.released;
  y << YAML::Key << "marked" << YAML::Value << s.marked;
  y << YAML::Key << "dropped" << YAML::Value << s.dropped;
  y << YAML::Key << "outstanding_at_exit" << YAML::Value << s.outstanding();
  y << YAML::Key << "drop_reasons" << YAML::Value << YAML::BeginMap;
  for (unsigned r = 0; r < kNumReasons; ++r)
    if (s.drop_reasons[r]) y << YAML::Key << reason_name(static_cast<Reason>(r)) << YAML::Value << s.drop_reasons[r];
  y << YAML::EndMap << YAML::EndMap;
  y << YAML::Key << "drain_seconds" << YAML::Value << drain_s;
  y << YAML::Key << "accounted" << YAML::Value << accounted;
  y << YAML::Key << "status" << YAML::Value << (!accounted ? "unaccounted" : late ? "late" : "ok");
  y << YAML::EndMap;
  {
    std::ofstream out((fs::path(c.output_dir) / "capacity.yaml").string());
    out << "# flexplane capacity run (docs/live.md, \"Capacity\")\n" << y.c_str() << "\n";
    if (!out) throw std::runtime_error("cannot write " + (fs::path(c.output_dir) / "capacity.yaml").string());
  }

  std::printf("capacity: %u core(s) %u endpoints: offered %.1f Gbit/s, delivered %.1f Gbit/s, routers %.1f Gbit/s; "
              "late %.4f %% (worst lag %.1f us; the CPUs alone lost %.2f %% of a spin in gaps > 5 us); "
              "request->verdict p50 %.1f us p99 %.1f us; %s\n",
              cores, c.topology.num_endpoints, offered_gbps, delivered_gbps, router_gbps, 100 * win.late_fraction(),
              win.max_lag_ns / 1000, 100 * noise.gap_fraction, p50, p99,
              !accounted ? "UNACCOUNTED: requests without a verdict"
              : late     ? "LATE: above the late threshold, not a capacity"
                         : "ok");
  std::fflush(stdout);
  if (!accounted) {
    std::fprintf(stderr, "capacity: %" PRIu64 " offered, %" PRIu64 " answered, %" PRIu64 " outstanding after %.1f s of drain\n",
                 s.offered, s.released + s.marked + s.dropped, s.outstanding(), drain_s);
    return 1;
  }
  return 0;
}

}  // namespace

int run_capacity(const CapacityArgs& args) { return exit_status_of([&] { return capacity_impl(args); }, 1); }

}  // namespace flexplane
