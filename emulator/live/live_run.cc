#include "emulator/live/live_run.h"

#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <sys/prctl.h>
#include <yaml-cpp/yaml.h>

#include <atomic>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unordered_map>

#include "emulator/config/endpoint_contract.h"
#include "emulator/live/comm_core.h"
#include "emulator/live/dpdk_launcher.h"
#include "emulator/live/dpdk_port.h"
#include "emulator/live/live_stats.h"
#include "emulator/output/live_records.h"
#include "emulator/output/output.h"
#include "emulator/run/setup.h"

namespace flexplane::live {

namespace fs = std::filesystem;

namespace {

volatile std::sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

// What the wire protocol carries: from the scheme registry, exactly as the
// endpoint driver derives it; flags override for experiments.
struct WireFormat {
  bool prio = false;
  uint32_t req_custom = 0, verdict_custom = 0;
};

WireFormat wire_format(const LiveArgs& a, const RunConfig& c, const std::vector<ResolvedRouter>& resolved) {
  if (a.prio != "auto" && a.prio != "on" && a.prio != "off") throw UsageError("--prio must be auto, on or off");
  if (a.req_custom >= 0) check_custom_bytes(a.req_custom, "--req-custom");
  if (a.verdict_custom >= 0) check_custom_bytes(a.verdict_custom, "--verdict-custom");
  const EndpointContract contract = endpoint_contract(c, resolved);
  WireFormat w;
  w.prio = a.prio == "on" || (a.prio == "auto" && contract.priority != PriorityStamp::kNone);
  w.req_custom = a.req_custom >= 0 ? a.req_custom : contract.request_custom_bytes;
  w.verdict_custom = a.verdict_custom >= 0 ? a.verdict_custom : contract.verdict_custom_bytes;
  return w;
}

CommCoreConfig comm_config(const LiveArgs& a, const RunConfig& c, const WireFormat& w) {
  CommCoreConfig cc;
  cc.port_id = a.port;
  cc.emulator_ip = c.live.emulator_ip;
  cc.udp_port = c.live.udp_port;
  cc.endpoint_ips = c.live.endpoint_ips;
  cc.apkt_bytes = static_cast<uint16_t>(std::min<uint32_t>(c.network.abstract_packet_bytes, 65535));
  cc.req_custom_len = static_cast<uint8_t>(w.req_custom);
  cc.verdict_custom_len = static_cast<uint8_t>(w.verdict_custom);
  cc.features = w.prio ? FP_FEAT_PRIO : 0;
  cc.window = a.window;
  if (a.rto_us > 0) {
    cc.rto_ns = static_cast<uint64_t>(a.rto_us * 1000);
    cc.rto_max_ns = std::max<uint64_t>(cc.rto_ns, 50'000'000);
  }
  const double idle_us = a.idle_sleep_us >= 0 ? a.idle_sleep_us : (c.live.sleep_when_ahead ? 20 : 0);
  cc.idle_sleep_ns = static_cast<uint64_t>(idle_us * 1000);
  return cc;
}

// How long the comm core keeps polling after its last event while requests
// are in the engine, instead of napping. With datacenter timeslots (<= 10 us)
// a verdict comes back within a few us on an idle network, and spinning for
// it halved the light-load round trip (docs/live.md, "Where a round trip
// goes"); with the lab's (60-240 us) it would come after hundreds of us, and
// under sustained traffic the comm core then never napped: on 2 CPUs it took
// the endpoints' CPU (one bulk flow at 200 Mbit/s: 2.0-2.5 % of timeslots
// late instead of 0.24-0.44 %). The same condition gives the comm core 1 us
// of timer slack (comm_loop).
uint64_t spin_pending_ns(double timeslot_ns) { return timeslot_ns <= 10'000 ? 100'000 : 0; }

// The comm core's loop: poll, report every interval, stop the engine at a
// signal or after the duration; once the engine has stopped, drain (every
// verdict the engine produced goes out; requests that still arrive are
// answered with DROP) for a short grace period that lets retransmissions and
// acks settle.
void comm_loop(CommCore& core, Engine& engine, LiveStats& stats, const std::atomic<bool>& engine_done, uint64_t t0,
               uint64_t interval_ns, uint64_t duration_ns, uint64_t idle_sleep_ns, uint64_t spin_pending_ns) {
  // The idle nap is 20 us; Linux lets an ordinary thread's timer fire up to
  // its timer slack (50 us by default) late, so a nap lasted ~100 us (48 us with
  // 1 us of slack: flexplane_bench --benchmark_filter=IdleNap) and a
  // request arriving meanwhile waited that long. With datacenter timeslots
  // (the same condition as spin_pending_ns) this thread gets 1 us of slack;
  // with the lab's, twice the wake-ups cost the endpoints CPU on a small
  // machine for a gain well inside a timeslot.
  if (spin_pending_ns) prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  uint64_t next_stats = t0 + interval_ns;
  bool stopping = false;
  uint32_t idle = 0;
  uint64_t last_busy = t0;
  for (;;) {
    const uint64_t now = mono_ns();
    const bool busy = core.poll_once(now);
    if (!stopping && (g_signal || (duration_ns && now - t0 >= duration_ns))) {
      stopping = true;
      engine.request_stop();
    }
    if (engine_done.load(std::memory_order_acquire)) {
      core.set_engine_stopped(true);
      const uint64_t until = mono_ns() + 50'000'000;
      while (mono_ns() < until) {
        if (!core.poll_once(mono_ns())) std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
      stats.report(mono_ns(), core, engine);
      return;
    }
    if (now >= next_stats) {
      stats.report(now, core, engine);
      next_stats += interval_ns;
      if (next_stats < now) next_stats = now + interval_ns;
    }
    // Nap when idle -- but not while a verdict is due soon: a request handed
    // to the engine comes back after its emulated path (a few timeslots when
    // the network is idle), and a nap then adds up to a whole nap to the
    // round trip. So while requests are in the engine, spin on for up to
    // spin_pending_ns after the last event (only with short timeslots: see
    // run_live, where it is chosen).
    if (busy) {
      idle = 0;
      last_busy = now;
    } else if (idle_sleep_ns && ++idle >= 256 && (core.pending() == 0 || now - last_busy > spin_pending_ns)) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(idle_sleep_ns));
    }
  }
}

// Threads and lcores: the comm core on the first idle worker lcore (or a
// thread), engine cores on the remaining workers, the last engine core on
// the main lcore; the monitor is folded into the comm loop. Returns when the
// engine has stopped and the comm core has drained.
void run_cores(Engine& engine, const std::function<void()>& comm, std::atomic<bool>& engine_done, uint64_t t0) {
  std::vector<unsigned> workers = idle_worker_lcores();
  std::thread comm_thread;
  int comm_lcore = -1;
  if (!workers.empty()) {
    comm_lcore = static_cast<int>(workers.front());
    workers.erase(workers.begin());
    if (rte_eal_remote_launch([](void* f) { (*static_cast<const std::function<void()>*>(f))(); return 0; },
                              const_cast<std::function<void()>*>(&comm), static_cast<unsigned>(comm_lcore)) != 0)
      comm_lcore = -1;
  }
  if (comm_lcore < 0) comm_thread = std::thread(comm);
  DpdkLauncher launcher(workers, true);
  std::string engine_error;
  try {
    engine.run(~Timeslot{0} >> 2, {}, 1.0, &launcher);
  } catch (const std::exception& e) {
    engine_error = e.what();
  }
  engine_done.store(true, std::memory_order_release);
  if (comm_lcore >= 0)
    rte_eal_wait_lcore(static_cast<unsigned>(comm_lcore));
  else
    comm_thread.join();
  if (!engine_error.empty()) throw std::runtime_error("engine: " + engine_error);

  std::string placement;
  for (int p : launcher.placement())
    placement += p >= 0 ? " lcore" + std::to_string(p) : (p == -2 ? std::string(" main-lcore") : std::string(" thread"));
  std::fprintf(stderr, "live: stopped at timeslot %" PRIu64 " after %.2f s; comm core on %s, engine cores on%s\n",
               engine.now(), (mono_ns() - t0) / 1e9,
               comm_lcore >= 0 ? ("lcore " + std::to_string(comm_lcore)).c_str() : "a thread", placement.c_str());
}

void write_live_summary(const std::string& path, const RunConfig& c, const Engine& engine, const CommCore& core,
                        double wall_seconds) {
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "config_file" << YAML::Value << c.file;
  y << YAML::Key << "variant" << YAML::Value << c.variant;
  y << YAML::Key << "end_timeslot" << YAML::Value << engine.now();
  y << YAML::Key << "timeslot_ns" << YAML::Value << c.network.timeslot_ns();
  y << YAML::Key << "cores" << YAML::Value << c.cores;
  y << YAML::Key << "wall_seconds" << YAML::Value << wall_seconds;
  y << YAML::Key << "requests" << YAML::Value << core.stats().requests;
  y << YAML::Key << "verdicts" << YAML::Value << core.stats().verdicts_pushed;
  y << YAML::Key << "pending_at_exit" << YAML::Value << core.pending();
  y << YAML::Key << "late_timeslots" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& h : engine.health()) y << h.late_timeslots;
  y << YAML::EndSeq;
  y << YAML::Key << "max_lag_us" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& h : engine.health()) y << h.max_lag_ns / 1000.0;
  y << YAML::EndSeq;
  y << YAML::EndMap;
  std::ofstream out(path);
  out << "# flexplane live run (docs/live.md)\n" << y.c_str() << "\n";
}

// stages.csv (docs/live.md, "Where a round trip goes"): one row per accepted
// request, times in CLOCK_MONOTONIC ns. arrival/verdict_due_ns: when the
// engine was due to start the timeslot at which the request entered its
// emulated endpoint / got its verdict (Engine::timeslot_due_ns).
void write_stages_csv(const std::string& path, const std::vector<StageRecord>& stages,
                      const std::vector<RecordedArrival>& arrivals, const Engine& engine) {
  std::unordered_map<TraceKey, Timeslot, TraceKeyHash> entered;
  for (const RecordedArrival& r : arrivals)
    entered[TraceKey{(static_cast<uint64_t>(r.pkt.flow) << 32) | r.pkt.seq, r.pkt.src}] = r.time;
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw std::runtime_error(path + ": cannot write");
  std::fprintf(f, "src,flow,seq,rx_ns,arrival_timeslot,arrival_due_ns,verdict_timeslot,verdict_due_ns,collect_ns,tx_ns,action\n");
  for (const StageRecord& s : stages) {
    const auto it = entered.find(TraceKey{(static_cast<uint64_t>(s.flow) << 32) | s.seq, s.src});
    std::fprintf(f, "%u,%u,%u,%" PRIu64 ",", s.src, s.flow, s.seq, s.rx_ns);
    if (it != entered.end())
      std::fprintf(f, "%" PRIu64 ",%" PRId64 ",", it->second, engine.timeslot_due_ns(it->second));
    else
      std::fprintf(f, ",,");  // refused at its emulated endpoint before entering (endpoint_overflow) or none yet
    if (s.collect_ns)
      std::fprintf(f, "%" PRIu64 ",%" PRId64 ",%" PRIu64 ",%" PRIu64 ",%s\n", s.verdict_time,
                   engine.timeslot_due_ns(s.verdict_time), s.collect_ns, s.tx_ns,
                   s.action == LiveVerdict::kRelease ? "release" : s.action == LiveVerdict::kMark ? "mark" : "drop");
    else
      std::fprintf(f, ",,,,\n");  // no verdict before the run ended
  }
  if (std::fclose(f) != 0) throw std::runtime_error(path + ": write failed");
}

int live_impl(const LiveArgs& a) {
  // 1. Configuration first: a bad file fails fast, before the EAL.
  RunConfig c = pick_run(a.config, a.variant);
  if (!a.out_dir.empty()) c.output_dir = a.out_dir;
  std::vector<ResolvedRouter> resolved;
  std::vector<std::unique_ptr<Router>> routers = build_routers(c, &resolved);
  const WireFormat wire = wire_format(a, c, resolved);
  prepare_output_dir(c.output_dir);  // an unwritable folder fails before the EAL and the endpoints start
  const OccupancyFile occupancy_file = parse_occupancy_file(c.occupancy_file, c.file + ": output.occupancy");

  // 2. EAL and the port.
  EalSession eal(a.eal_args);
  rte_mempool* pool = open_port(a.port);

  // 3. Traffic, engine, comm core.
  LiveTrafficOptions lopt;
  lopt.endpoint_queue_pkts = c.live.endpoint_queue_pkts;
  lopt.record_arrivals = a.record || a.trace_stages;  // stages.csv needs each request's entry timeslot
  LiveTraffic traffic(c.topology, c.cores, lopt);
  EngineOptions opt = engine_options(c, c.cores);
  opt.clock = Clock::kRealTime;
  opt.sleep_when_ahead = c.live.sleep_when_ahead;
  opt.max_lead_ns = c.live.max_lead_us * 1000.0;
  Engine engine(c.topology, std::move(routers), traffic, opt);
  const CommCoreConfig cc = comm_config(a, c, wire);
  CommCore core(cc, traffic, pool);
  std::vector<LiveVerdict> recorded;
  if (a.record) core.record_verdicts(&recorded);
  std::vector<StageRecord> stages;
  if (a.trace_stages) core.trace_stages(&stages);

  const fs::path dir(c.output_dir);
  const uint64_t t0 = mono_ns();
  LiveStats stats((dir / "live_stats.csv").string(), c.cores, a.quiet, t0);

  char mac[RTE_ETHER_ADDR_FMT_SIZE];
  rte_ether_format_addr(mac, sizeof mac, &core.mac());
  rte_eth_dev_info info{};
  rte_eth_dev_info_get(a.port, &info);
  std::fprintf(stderr,
               "live: %u endpoints, %zu routers, %u engine core(s), timeslot %.1f ns; port %u (%s) mac %s, "
               "listening on %s:%u; features %s, custom %u/%u -> %s\n",
               c.topology.num_endpoints, c.topology.routers.size(), c.cores, c.network.timeslot_ns(), a.port,
               info.driver_name ? info.driver_name : "?", mac, c.live.emulator_ip.str().c_str(), c.live.udp_port,
               wire.prio ? "PRIO" : "none", wire.req_custom, wire.verdict_custom, c.output_dir.c_str());

  // 4. Run until a signal or the duration.
  g_signal = 0;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::atomic<bool> engine_done{false};
  const std::function<void()> comm = [&] {
    comm_loop(core, engine, stats, engine_done, t0, static_cast<uint64_t>(c.live.stats_interval_s * 1e9),
              static_cast<uint64_t>(a.duration_s * 1e9), cc.idle_sleep_ns, spin_pending_ns(c.network.timeslot_ns()));
  };
  try {
    run_cores(engine, comm, engine_done, t0);
  } catch (...) {
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    throw;
  }
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);

  // 5. Outputs: the engine's as in virtual time, and the live run's own.
  write_engine_outputs(c.output_dir, engine, opt, occupancy_file, 0, c.packet_log ? engine.events() : std::vector<PacketEvent>{});
  core.write_counters_csv((dir / "comm_counters.csv").string());
  write_live_summary((dir / "live_summary.yaml").string(), c, engine, core, (mono_ns() - t0) / 1e9);
  if (a.trace_stages) write_stages_csv((dir / "stages.csv").string(), stages, traffic.arrivals(), engine);
  if (a.record) {
    write_arrivals_csv((dir / "arrivals.csv").string(), traffic.arrivals());
    write_verdicts_csv((dir / "verdicts.csv").string(), recorded);
  }
  rte_eth_dev_stop(a.port);
  rte_eth_dev_close(a.port);
  const CommStats& s = core.stats();
  std::printf("live: %" PRIu64 " requests, %" PRIu64 " verdicts (release %" PRIu64 ", mark %" PRIu64 ", drop %" PRIu64
              "), %" PRIu64 " rx dropped (%" PRIu64 " malformed) -> %s\n",
              s.requests, s.verdicts_pushed, s.releases, s.marks, s.drops + s.refused_by_engine + s.bad_dst,
              s.rx_dropped(), s.malformed(), c.output_dir.c_str());
  std::fflush(stdout);
  return 0;
}

}  // namespace

int run_live(const LiveArgs& args) { return exit_status_of([&] { return live_impl(args); }, 1); }

}  // namespace flexplane::live
