#include "emulator/live/live_run.h"

#include "emulator/endpoint_contract.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <yaml-cpp/yaml.h>

#include <atomic>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "api/params.h"
#include "emulator/config.h"
#include "emulator/engine.h"
#include "emulator/flow_traffic.h"
#include "emulator/output.h"
#include "emulator/live/comm_core.h"
#include "emulator/live/dpdk_launcher.h"
#include "emulator/router_factory.h"

namespace flexplane::live {

namespace fs = std::filesystem;

namespace {

volatile std::sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

struct BadArgs : std::runtime_error {
  using std::runtime_error::runtime_error;
};

RunConfig pick_run(const std::string& file, const std::string& variant) {
  Experiment exp = load_experiment(file);
  if (variant.empty()) {
    if (exp.runs.size() != 1)
      throw BadArgs(file + ": has " + std::to_string(exp.runs.size()) + " variants; choose one with --variant");
    return exp.runs.front();
  }
  for (auto& r : exp.runs)
    if (r.variant == variant) return r;
  throw BadArgs(file + ": no variant named '" + variant + "'");
}

// Same routers, same resolution as a virtual-time run (run.cc).
std::vector<std::unique_ptr<Router>> build_routers(const RunConfig& c, std::vector<ResolvedRouter>* resolved) {
  resolved->assign(c.router_specs.size(), ResolvedRouter{});
  std::vector<std::unique_ptr<Router>> routers;
  for (size_t i = 0; i < c.router_specs.size(); ++i) routers.push_back(build_router(c.router_specs[i], &(*resolved)[i]));
  return routers;
}

EngineOptions engine_options(const RunConfig& c, uint32_t cores) {
  EngineOptions opt;
  opt.cores = cores;
  opt.seed = c.seed;
  opt.mtu_bytes = c.network.abstract_packet_bytes;
  return opt;
}

const char* action_name(LiveVerdict::Action a) {
  switch (a) {
    case LiveVerdict::kRelease: return "release";
    case LiveVerdict::kMark: return "mark";
    default: return "drop";
  }
}

std::string stats_header(uint32_t cores) {
  std::string h = "time_s,requests,requests_per_s,verdicts,verdicts_per_s,releases,marks,drops";
  for (unsigned r = 0; r < kNumReasons; ++r) h += std::string(",drop_") + reason_name(static_cast<Reason>(r));
  h += ",refused_by_engine,bad_dst,malformed";
  for (unsigned i = 0; i < kNumRxDrops; ++i) h += std::string(",rx_drop_") + rx_drop_name(static_cast<RxDrop>(i));
  h += ",pending,rx_frames,tx_frames,tx_failed,sessions";
  for (uint32_t i = 0; i < cores; ++i)
    h += ",core" + std::to_string(i) + "_timeslots,core" + std::to_string(i) + "_late,core" + std::to_string(i) +
         "_max_lag_us";
  return h;
}

}  // namespace

// ------------------------------------------------------------------ CSV ----

void write_arrivals_csv(const std::string& path, const std::vector<RecordedArrival>& arrivals) {
  std::ofstream out(path);
  out << "timeslot,src,dst,flow,seq,size_bytes,flags,dscp,priority,custom0,custom1,custom2\n";
  for (const auto& a : arrivals) {
    const Packet& p = a.pkt;
    out << a.time << ',' << p.src << ',' << p.dst << ',' << p.flow << ',' << p.seq << ',' << p.size_bytes << ','
        << unsigned(p.flags) << ',' << unsigned(p.dscp) << ',' << p.priority << ',' << p.custom[0] << ','
        << p.custom[1] << ',' << p.custom[2] << '\n';
  }
  if (!out) throw std::runtime_error(path + ": cannot write");
}

std::vector<RecordedArrival> read_arrivals_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read");
  std::vector<RecordedArrival> out;
  std::string line;
  size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#' || (lineno == 1 && line.rfind("timeslot", 0) == 0)) continue;
    uint64_t f[12] = {};
    size_t n = 0;
    std::stringstream ss(line);
    std::string cell;
    while (n < 12 && std::getline(ss, cell, ',')) {
      char* end = nullptr;
      f[n] = std::strtoull(cell.c_str(), &end, 10);
      if (cell.empty() || *end) throw std::runtime_error(path + ":" + std::to_string(lineno) + ": bad number '" + cell + "'");
      ++n;
    }
    if (n != 9 && n != 12) throw std::runtime_error(path + ":" + std::to_string(lineno) + ": expected 9 or 12 columns");
    RecordedArrival a{};
    a.time = f[0];
    a.pkt.src = static_cast<EndpointId>(f[1]);
    a.pkt.dst = static_cast<EndpointId>(f[2]);
    a.pkt.flow = static_cast<uint32_t>(f[3]);
    a.pkt.seq = static_cast<uint32_t>(f[4]);
    a.pkt.size_bytes = static_cast<uint16_t>(f[5]);
    a.pkt.flags = static_cast<uint8_t>(f[6]);
    a.pkt.dscp = static_cast<uint8_t>(f[7]);
    a.pkt.priority = static_cast<uint32_t>(f[8]);
    for (int i = 0; i < 3; ++i) a.pkt.custom[i] = static_cast<uint32_t>(f[9 + i]);
    out.push_back(a);
  }
  return out;
}

void write_verdicts_csv(const std::string& path, std::vector<LiveVerdict> v) {
  sort_verdicts(v);
  std::ofstream out(path);
  out << "timeslot,action,reason,src,dst,flow,seq\n";
  for (const auto& x : v)
    out << x.time << ',' << action_name(x.action) << ','
        << (x.action == LiveVerdict::kDrop ? reason_name(x.reason) : "-") << ',' << x.pkt.src << ',' << x.pkt.dst
        << ',' << x.pkt.flow << ',' << x.pkt.seq << '\n';
  if (!out) throw std::runtime_error(path + ": cannot write");
}

// ----------------------------------------------------------------- live ----

namespace {

int live_impl(const LiveArgs& a) {
  // 1. Configuration first: a bad file fails fast, before the EAL.
  RunConfig c = pick_run(a.config, a.variant);
  if (!a.out_dir.empty()) c.output_dir = a.out_dir;
  if (a.prio != "auto" && a.prio != "on" && a.prio != "off") throw BadArgs("--prio must be auto, on or off");
  if (a.req_custom > int{FP_MAX_CUSTOM} || a.verdict_custom > int{FP_MAX_CUSTOM}) throw BadArgs("custom sizes must be <= 16");
  std::vector<ResolvedRouter> resolved;
  std::vector<std::unique_ptr<Router>> routers = build_routers(c, &resolved);
  // Priority and custom-data sizes come from the scheme registry, exactly as
  // the endpoint driver derives them; flags override for experiments.
  const EndpointContract contract = endpoint_contract(c, resolved);
  const bool prio = a.prio == "on" || (a.prio == "auto" && contract.priority != PriorityStamp::kNone);
  const uint32_t req_custom = a.req_custom >= 0 ? a.req_custom : contract.request_custom_bytes;
  const uint32_t verdict_custom = a.verdict_custom >= 0 ? a.verdict_custom : contract.verdict_custom_bytes;

  // 2. EAL and the port.
  std::vector<std::string> eal = {"flexplane-emulator"};
  eal.insert(eal.end(), a.eal_args.begin(), a.eal_args.end());
  std::vector<char*> argv;
  for (auto& s : eal) argv.push_back(s.data());
  argv.push_back(nullptr);
  if (rte_eal_init(static_cast<int>(eal.size()), argv.data()) < 0)
    throw BadArgs(std::string("DPDK EAL init failed: ") + rte_strerror(rte_errno) +
                  " (EAL arguments go after '--', e.g. -- -l 0-1 --no-huge -m 512 --no-pci --no-shconf "
                  "--vdev=net_af_packet0,iface=veth0)");
  struct EalGuard {
    ~EalGuard() { rte_eal_cleanup(); }
  } eal_guard;
  if (rte_eth_dev_count_avail() == 0)
    throw BadArgs("no DPDK ports: give a device after '--', e.g. --vdev=net_af_packet0,iface=veth0");
  if (!rte_eth_dev_is_valid_port(a.port))
    throw BadArgs("--port " + std::to_string(a.port) + ": no such DPDK port (" +
                  std::to_string(rte_eth_dev_count_avail()) + " available)");
  rte_mempool* pool = rte_pktmbuf_pool_create("fp_live", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
  if (!pool) throw std::runtime_error(std::string("mbuf pool: ") + rte_strerror(rte_errno) + " (more EAL memory: -m 512)");
  if (const std::string err = setup_port(a.port, pool); !err.empty()) throw BadArgs(err);

  // 3. Traffic, engine, comm core.
  LiveTrafficOptions lopt;
  lopt.endpoint_queue_pkts = c.live.endpoint_queue_pkts;
  lopt.record_arrivals = a.record;
  LiveTraffic traffic(c.topology, c.cores, lopt);
  EngineOptions opt = engine_options(c, c.cores);
  opt.clock = Clock::kRealTime;
  opt.timeslot_ns = c.network.timeslot_ns();
  opt.sleep_when_ahead = c.live.sleep_when_ahead;
  opt.max_lead_ns = c.live.max_lead_us * 1000.0;
  Engine engine(c.topology, std::move(routers), traffic, opt);

  CommCoreConfig cc;
  cc.port_id = a.port;
  cc.emulator_ip = c.live.emulator_ip;
  cc.udp_port = c.live.udp_port;
  cc.endpoint_ips = c.live.endpoint_ips;
  cc.apkt_bytes = static_cast<uint16_t>(std::min<uint32_t>(c.network.abstract_packet_bytes, 65535));
  cc.req_custom_len = static_cast<uint8_t>(req_custom);
  cc.verdict_custom_len = static_cast<uint8_t>(verdict_custom);
  cc.features = prio ? FP_FEAT_PRIO : 0;
  cc.window = a.window;
  if (a.rto_us > 0) {
    cc.rto_ns = static_cast<uint64_t>(a.rto_us * 1000);
    cc.rto_max_ns = std::max<uint64_t>(cc.rto_ns, 50'000'000);
  }
  const double idle_us = a.idle_sleep_us >= 0 ? a.idle_sleep_us : (c.live.sleep_when_ahead ? 20 : 0);
  cc.idle_sleep_ns = static_cast<uint64_t>(idle_us * 1000);
  CommCore core(cc, traffic, pool);
  std::vector<LiveVerdict> recorded;
  if (a.record) core.record_verdicts(&recorded);

  fs::create_directories(c.output_dir);
  const fs::path dir(c.output_dir);
  std::ofstream stats_csv((dir / "live_stats.csv").string());
  if (!stats_csv) throw std::runtime_error((dir / "live_stats.csv").string() + ": cannot write");
  stats_csv << stats_header(c.cores) << '\n';

  char mac[RTE_ETHER_ADDR_FMT_SIZE];
  rte_ether_format_addr(mac, sizeof mac, &core.mac());
  rte_eth_dev_info info{};
  rte_eth_dev_info_get(a.port, &info);
  std::fprintf(stderr,
               "live: %u endpoints, %zu routers, %u engine core(s), timeslot %.1f ns; port %u (%s) mac %s, "
               "listening on %s:%u; features %s, custom %u/%u -> %s\n",
               c.topology.num_endpoints, c.topology.routers.size(), c.cores, c.network.timeslot_ns(), a.port,
               info.driver_name ? info.driver_name : "?", mac, c.live.emulator_ip.c_str(), c.live.udp_port,
               prio ? "PRIO" : "none", req_custom, verdict_custom, c.output_dir.c_str());

  g_signal = 0;
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);

  // 4. Threads and lcores: the comm core on the first idle worker lcore (or a
  // thread), engine cores on the remaining workers, the last engine core on
  // the main lcore; the monitor is folded into the comm loop.
  std::atomic<bool> engine_done{false};
  const uint64_t t0 = mono_ns();
  const uint64_t interval_ns = static_cast<uint64_t>(c.live.stats_interval_s * 1e9);
  const uint64_t duration_ns = static_cast<uint64_t>(a.duration_s * 1e9);
  uint64_t last_req = 0, last_verd = 0, last_t = t0;
  auto report = [&](uint64_t now) {
    const CommStats& s = core.stats();
    const double t = (now - t0) / 1e9, dt = std::max(1e-9, (now - last_t) / 1e9);
    const double rps = (s.requests - last_req) / dt, vps = (s.verdicts_pushed - last_verd) / dt;
    last_req = s.requests;
    last_verd = s.verdicts_pushed;
    last_t = now;
    const std::vector<CoreHealth> health = engine.health();
    const fp_emu_stats ps = core.proto_stats();
    stats_csv << t << ',' << s.requests << ',' << rps << ',' << s.verdicts_pushed << ',' << vps << ',' << s.releases
              << ',' << s.marks << ',' << s.drops;
    for (unsigned r = 0; r < kNumReasons; ++r) stats_csv << ',' << s.drop_reasons[r];
    stats_csv << ',' << s.refused_by_engine << ',' << s.bad_dst << ',' << s.malformed();
    for (unsigned i = 0; i < kNumRxDrops; ++i) stats_csv << ',' << s.rx_drops[i];
    stats_csv << ',' << core.pending() << ',' << s.rx_frames << ',' << s.tx_frames << ',' << s.tx_failed << ','
              << ps.sessions;
    for (uint32_t i = 0; i < c.cores; ++i) {
      const CoreHealth h = i < health.size() ? health[i] : CoreHealth{};
      stats_csv << ',' << h.timeslots << ',' << h.late_timeslots << ',' << h.max_lag_ns / 1000.0;
    }
    stats_csv << '\n';
    stats_csv.flush();
    if (a.quiet) return;
    std::string drops, bad, cores;
    for (unsigned r = 0; r < kNumReasons; ++r)
      if (s.drop_reasons[r]) drops += std::string(drops.empty() ? "" : ",") + reason_name(static_cast<Reason>(r)) + "=" + std::to_string(s.drop_reasons[r]);
    if (s.refused_by_engine) drops += std::string(drops.empty() ? "" : ",") + "refused=" + std::to_string(s.refused_by_engine);
    if (s.bad_dst) drops += std::string(drops.empty() ? "" : ",") + "bad_dst=" + std::to_string(s.bad_dst);
    for (unsigned i = 0; i < kNumRxDrops; ++i)
      if (s.rx_drops[i]) bad += std::string(bad.empty() ? "" : ",") + rx_drop_name(static_cast<RxDrop>(i)) + "=" + std::to_string(s.rx_drops[i]);
    for (size_t i = 0; i < health.size(); ++i) {
      char buf[96];
      std::snprintf(buf, sizeof buf, " core%zu: ts=%" PRIu64 " late=%" PRIu64 " worst_lag=%.1fus", i, health[i].timeslots,
                    health[i].late_timeslots, health[i].max_lag_ns / 1000.0);
      cores += buf;
    }
    std::fprintf(stderr,
                 "live t=%.1fs req/s=%.0f verdicts/s=%.0f requests=%" PRIu64 " release=%" PRIu64 " mark=%" PRIu64
                 " drop=%" PRIu64 "%s%s%s pending=%" PRIu64 " sessions=%" PRIu64 " rx_dropped=%" PRIu64 "%s%s%s%s\n",
                 t, rps, vps, s.requests, s.releases, s.marks, s.drops + s.refused_by_engine + s.bad_dst,
                 drops.empty() ? "" : " (", drops.c_str(), drops.empty() ? "" : ")", core.pending(), ps.sessions,
                 s.rx_dropped(), bad.empty() ? "" : " (", bad.c_str(), bad.empty() ? "" : ")", cores.c_str());
  };

  std::function<void()> comm_loop = [&] {
    uint64_t next_stats = t0 + interval_ns;
    bool stopping = false;
    uint32_t idle = 0;
    for (;;) {
      const uint64_t now = mono_ns();
      const bool busy = core.poll_once(now);
      if (!stopping && (g_signal || (duration_ns && now - t0 >= duration_ns))) {
        stopping = true;
        engine.request_stop();
      }
      if (engine_done.load(std::memory_order_acquire)) {
        // Drain: every verdict the engine produced goes out; requests that
        // still arrive are answered with DROP. A short grace period lets
        // retransmissions and acks settle.
        core.set_engine_stopped(true);
        const uint64_t until = mono_ns() + 50'000'000;
        while (mono_ns() < until) {
          if (!core.poll_once(mono_ns())) std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
        report(mono_ns());
        return;
      }
      if (now >= next_stats) {
        report(now);
        next_stats += interval_ns;
        if (next_stats < now) next_stats = now + interval_ns;
      }
      if (busy) {
        idle = 0;
      } else if (cc.idle_sleep_ns && ++idle >= 256) {
        std::this_thread::sleep_for(std::chrono::nanoseconds(cc.idle_sleep_ns));
      }
    }
  };

  std::vector<unsigned> workers = idle_worker_lcores();
  std::thread comm_thread;
  int comm_lcore = -1;
  if (!workers.empty()) {
    comm_lcore = static_cast<int>(workers.front());
    workers.erase(workers.begin());
    if (rte_eal_remote_launch([](void* f) { (*static_cast<std::function<void()>*>(f))(); return 0; }, &comm_loop,
                              static_cast<unsigned>(comm_lcore)) != 0)
      comm_lcore = -1;
  }
  if (comm_lcore < 0) comm_thread = std::thread(comm_loop);
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
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (!engine_error.empty()) throw std::runtime_error("engine: " + engine_error);

  std::string placement;
  for (int p : launcher.placement())
    placement += p >= 0 ? " lcore" + std::to_string(p) : (p == -2 ? std::string(" main-lcore") : std::string(" thread"));
  std::fprintf(stderr, "live: stopped at timeslot %" PRIu64 " after %.2f s; comm core on %s, engine cores on%s\n",
               engine.now(), (mono_ns() - t0) / 1e9,
               comm_lcore >= 0 ? ("lcore " + std::to_string(comm_lcore)).c_str() : "a thread", placement.c_str());

  // 5. Outputs.
  core.write_counters_csv((dir / "comm_counters.csv").string());
  {
    YAML::Emitter y;
    y << YAML::BeginMap;
    y << YAML::Key << "config_file" << YAML::Value << c.file;
    y << YAML::Key << "variant" << YAML::Value << c.variant;
    y << YAML::Key << "end_timeslot" << YAML::Value << engine.now();
    y << YAML::Key << "timeslot_ns" << YAML::Value << c.network.timeslot_ns();
    y << YAML::Key << "cores" << YAML::Value << c.cores;
    y << YAML::Key << "wall_seconds" << YAML::Value << (mono_ns() - t0) / 1e9;
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
    std::ofstream out((dir / "live_summary.yaml").string());
    out << "# flexplane live run (docs/live.md)\n" << y.c_str() << "\n";
  }
  if (a.record) {
    write_arrivals_csv((dir / "arrivals.csv").string(), traffic.arrivals());
    write_verdicts_csv((dir / "verdicts.csv").string(), recorded);
  }
  rte_eth_dev_stop(a.port);
  rte_eth_dev_close(a.port);
  std::printf("live: %" PRIu64 " requests, %" PRIu64 " verdicts (release %" PRIu64 ", mark %" PRIu64 ", drop %" PRIu64
              "), %" PRIu64 " rx dropped (%" PRIu64 " malformed) -> %s\n",
              core.stats().requests, core.stats().verdicts_pushed, core.stats().releases, core.stats().marks,
              core.stats().drops + core.stats().refused_by_engine + core.stats().bad_dst, core.stats().rx_dropped(),
              core.stats().malformed(), c.output_dir.c_str());
  std::fflush(stdout);
  return 0;
}

int replay_impl(const ReplayArgs& a) {
  RunConfig c = pick_run(a.config, a.variant);
  const uint32_t cores = a.cores ? a.cores : c.cores;
  std::vector<RecordedArrival> arrivals = read_arrivals_csv(a.arrivals);
  for (const auto& x : arrivals)
    if (x.pkt.src >= c.topology.num_endpoints || x.pkt.dst >= c.topology.num_endpoints)
      throw BadArgs(a.arrivals + ": endpoint out of range for " + a.config);
  int64_t end = a.end_timeslot;
  if (end < 0) {
    const fs::path summary = fs::path(a.arrivals).parent_path() / "live_summary.yaml";
    if (fs::exists(summary)) end = YAML::LoadFile(summary.string())["end_timeslot"].as<int64_t>();
  }
  if (end < 0) end = static_cast<int64_t>((arrivals.empty() ? 0 : arrivals.back().time) + 1000000);
  std::vector<ResolvedRouter> resolved;
  std::vector<std::unique_ptr<Router>> routers = build_routers(c, &resolved);
  const size_t n = arrivals.size();
  ReplayTraffic replay(c.topology, std::move(arrivals), c.live.endpoint_queue_pkts, cores);
  EngineOptions eopt = engine_options(c, cores);
  eopt.occupancy_interval = c.occupancy_interval;  // run.occupancy_interval_us: queues of the live run
  Engine engine(c.topology, std::move(routers), replay, eopt);
  engine.run(static_cast<Timeslot>(end));
  const std::string out_dir = a.out_dir.empty() ? c.output_dir : a.out_dir;
  fs::create_directories(out_dir);
  if (c.occupancy_interval) write_occupancy_csv((fs::path(out_dir) / "occupancy.csv").string(), c, engine);
  const std::vector<LiveVerdict> v = replay.verdicts();
  write_verdicts_csv((fs::path(out_dir) / "verdicts.csv").string(), v);
  std::printf("replay: %zu arrivals, %zu verdicts, %" PRId64 " timeslots on %u core(s) -> %s\n", n, v.size(), end,
              cores, (fs::path(out_dir) / "verdicts.csv").c_str());
  return 0;
}

}  // namespace

namespace {
// Runs `body`, turning errors into a message and an exit status: 2 for bad
// arguments or configuration, `other` for anything else.
template <class Fn>
int report_errors(Fn&& body, int other) {
  try {
    return body();
  } catch (const BadArgs& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return other;
  }
}
}  // namespace

int run_live(const LiveArgs& args) { return report_errors([&] { return live_impl(args); }, 1); }

// An unreadable arrivals file is a bad argument too: exit 2.
int run_replay(const ReplayArgs& args) { return report_errors([&] { return replay_impl(args); }, 2); }

}  // namespace flexplane::live
