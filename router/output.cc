// Result files of a router run (docs/output-format.md, "Router mode"):
// counters.csv and occupancy.csv in the emulator's formats (router = the
// configured name, port = the DPDK port, timeslot = the port's tick), plus
// ports.csv, stats.csv (written live) and metadata.yaml.
#include <rte_ethdev.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "api/version.h"
#include "router/router_app.h"

namespace flexplane::router {

namespace fs = std::filesystem;

namespace {

struct File {
  explicit File(const fs::path& path) : f(std::fopen(path.c_str(), "w")) {
    if (!f) throw std::runtime_error(path.string() + ": cannot write");
  }
  ~File() { std::fclose(f); }
  FILE* f;
};

void write_counters(const fs::path& path, const RouterApp& app) {
  File out(path);
  std::fprintf(out.f, "router,port,queue,arrived,enqueued,dequeued,dropped_on_arrival,dropped_at_dequeue,evicted,"
                      "marked,backlog_pkts,backlog_bytes");
  for (unsigned r = 0; r < kNumReasons; ++r) std::fprintf(out.f, ",drops_%s", reason_name(static_cast<Reason>(r)));
  for (unsigned r = 0; r < kNumReasons; ++r) std::fprintf(out.f, ",marks_%s", reason_name(static_cast<Reason>(r)));
  std::fprintf(out.f, "\n");
  for (const PortScheduler* s : app.schedulers()) {
    if (!s->scheme()) continue;
    const QueueBank& b = s->scheme()->bank();
    for (QueueId q = 0; q < b.queues_per_port(); ++q) {
      const QueueCounters& c = b.counters(0, q);
      if (!c.arrived && !c.enqueued) continue;
      std::fprintf(out.f,
                   "%s,%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%u,%" PRIu64,
                   app.config().name.c_str(), s->port(), q, c.arrived, c.enqueued, c.dequeued, c.dropped_on_arrival,
                   c.dropped_at_dequeue, c.evicted, c.marked, b.packets(0, q), b.bytes(0, q));
      for (unsigned r = 0; r < kNumReasons; ++r) std::fprintf(out.f, ",%" PRIu64, c.drops[r]);
      for (unsigned r = 0; r < kNumReasons; ++r) std::fprintf(out.f, ",%" PRIu64, c.marks[r]);
      std::fprintf(out.f, "\n");
    }
  }
}

void write_occupancy(const fs::path& path, const RouterApp& app) {
  struct Row {
    double time_us;
    uint16_t port;
    const OccupancySample* s;
  };
  std::vector<Row> rows;
  for (const PortScheduler* s : app.schedulers())
    for (const OccupancySample& o : s->occupancy()) rows.push_back({o.time_us, s->port(), &o});
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.time_us < b.time_us; });
  File out(path);
  std::fprintf(out.f, "timeslot,time_us,router,port,packets,bytes\n");
  for (const Row& r : rows)
    std::fprintf(out.f, "%" PRIu64 ",%.4f,%s,%u,%u,%" PRIu64 "\n", r.s->tick, r.time_us, app.config().name.c_str(),
                 r.port, r.s->packets, r.s->bytes);
}

// The emulator's scheme_stats.csv (docs/output-format.md), long format.
void write_scheme_stats(const fs::path& path, const RouterApp& app) {
  File out(path);
  std::fprintf(out.f, "timeslot,time_us,router,port,queue,stat,value\n");
  for (const PortScheduler* s : app.schedulers()) {
    if (!s->scheme()) continue;
    const std::vector<StatDesc> descs = s->scheme()->stat_descs();
    for (const SchemeStatSample& v : s->scheme_stats()) {
      const OccupancySample& o = s->occupancy()[v.sample];
      const StatDesc& d = descs[v.stat];
      std::fprintf(out.f, "%" PRIu64 ",%.4f,%s,%u,", o.tick, o.time_us, app.config().name.c_str(), s->port());
      if (d.scope == StatDesc::kPerQueue) std::fprintf(out.f, "%u", v.queue);
      std::fprintf(out.f, ",%s,%.9g\n", d.name.c_str(), v.value);
    }
  }
}

void write_ports(const fs::path& path, const RouterApp& app) {
  File out(path);
  std::fprintf(out.f, "router,port,driver,mac,ip,rate_mbps,rx_packets,rx_bytes,rx_missed,rx_errors,rx_nombuf,"
                      "tx_packets,tx_bytes,tx_errors,tx_refused\n");
  for (const PortInfo& p : app.shared().ports) {
    rte_eth_stats st{};
    rte_eth_stats_get(p.id, &st);
    rte_eth_dev_info info{};
    rte_eth_dev_info_get(p.id, &info);
    uint64_t tx = 0, tx_bytes = 0, refused = 0;
    for (const auto& s : app.all_schedulers())
      if (s->port() == p.id) tx += s->tx_packets(), tx_bytes += s->tx_bytes(), refused += s->tx_refused();
    const PortSettings& ps = app.port_settings()[p.id];
    std::fprintf(out.f, "%s,%u,%s,%s,%s,%g,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
                 app.config().name.c_str(), p.id, info.driver_name, mac_str(p.mac).c_str(),
                 p.addr.has_ip ? (ipv4_str(p.addr.ip) + "/" + std::to_string(p.addr.prefix_length)).c_str() : "",
                 ps.rate_mbps, st.ipackets, st.ibytes, st.imissed, st.ierrors, st.rx_nombuf, tx, tx_bytes, st.oerrors,
                 refused);
  }
}

void emit_params(YAML::Emitter& y, const char* key, const std::string& name, const ResolvedParams& params) {
  if (name.empty()) return;
  y << YAML::Key << key << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value << name;
  for (const auto& [k, v] : params) y << YAML::Key << k << YAML::Value << v;
  y << YAML::EndMap;
}

void write_metadata(const fs::path& path, const RouterApp& app) {
  const RouterConfig& c = app.config();
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "flexplane_version" << YAML::Value << FLEXPLANE_VERSION;
  y << YAML::Key << "git_commit" << YAML::Value << FLEXPLANE_GIT_COMMIT;
  y << YAML::Key << "mode" << YAML::Value << "router";
  y << YAML::Key << "config_file" << YAML::Value << c.file;
  y << YAML::Key << "routes_file" << YAML::Value << c.routes_file;
  y << YAML::Key << "name" << YAML::Value << c.name;
  y << YAML::Key << "seed" << YAML::Value << c.seed;
  y << YAML::Key << "eal_args" << YAML::Value << YAML::Flow << app.eal_args();
  y << YAML::Key << "tsc_hz" << YAML::Value << app.tsc_hz();
  y << YAML::Key << "workers" << YAML::Value << YAML::BeginSeq;
  for (size_t i = 0; i < app.workers().size(); ++i) {
    const FastPathCounters& k = app.workers()[i]->counters();
    const int where = i < app.placement().size() ? app.placement()[i] : -1;
    const uint64_t rx = k.rx_packets.get();
    y << YAML::BeginMap;
    y << YAML::Key << "worker" << YAML::Value << i;
    y << YAML::Key << "ran_on" << YAML::Value
      << (where >= 0 ? "lcore " + std::to_string(where) : where == -2 ? std::string("main lcore") : std::string("thread"));
    y << YAML::Key << "rx_packets" << YAML::Value << rx;
    y << YAML::Key << "loops" << YAML::Value << k.loops.get();
    y << YAML::Key << "busy_loops" << YAML::Value << k.busy_loops.get();
    y << YAML::Key << "rx_paused_loops" << YAML::Value << k.rx_paused.get();
    y << YAML::Key << "longest_stall_us" << YAML::Value << k.max_gap_cycles.get() * 1e6 / app.tsc_hz();
    y << YAML::Key << "busy_cycles" << YAML::Value << k.busy_cycles.get();
    y << YAML::Key << "cycles_per_packet" << YAML::Value << (rx ? double(k.busy_cycles.get()) / rx : 0.0);
    y << YAML::Key << "rx_cycles_per_packet" << YAML::Value << (rx ? double(k.rx_cycles.get()) / rx : 0.0);
    y << YAML::Key << "process_cycles_per_packet" << YAML::Value << (rx ? double(k.process_cycles.get()) / rx : 0.0);
    y << YAML::Key << "drain_cycles_per_packet" << YAML::Value << (rx ? double(k.drain_cycles.get()) / rx : 0.0);
    y << YAML::EndMap;
  }
  y << YAML::EndSeq;
  y << YAML::Key << "ports" << YAML::Value << YAML::BeginSeq;
  for (const PortInfo& p : app.shared().ports) {
    const PortSettings& s = app.port_settings()[p.id];
    const PortScheduler* sched = app.schedulers()[p.id];
    rte_eth_dev_info info{};
    rte_eth_dev_info_get(p.id, &info);
    y << YAML::BeginMap;
    y << YAML::Key << "port" << YAML::Value << p.id;
    y << YAML::Key << "driver" << YAML::Value << info.driver_name;
    y << YAML::Key << "mac" << YAML::Value << mac_str(p.mac);
    y << YAML::Key << "ip" << YAML::Value
      << (p.addr.has_ip ? ipv4_str(p.addr.ip) + "/" + std::to_string(p.addr.prefix_length) : std::string());
    y << YAML::Key << "rate_mbps" << YAML::Value << s.rate_mbps;
    y << YAML::Key << "mtu_bytes" << YAML::Value << s.mtu_bytes;
    y << YAML::Key << "ns_per_tick" << YAML::Value << sched->ns_per_tick();
    y << YAML::Key << "owner_worker" << YAML::Value << p.owner;
    y << YAML::Key << "rx_queues" << YAML::Value << p.rx_queues;
    if (const Router* r = sched->scheme()) {
      (void)r;
      const ResolvedRouter& rr = sched->resolved();
      y << YAML::Key << "scheme" << YAML::Value << (rr.scheme.empty() ? "(components)" : rr.scheme);
      emit_params(y, "router", rr.router, rr.router_params);
      emit_params(y, "classifier", rr.classifier, rr.classifier_params);
      emit_params(y, "queue_manager", rr.queue_manager, rr.queue_manager_params);
      emit_params(y, "scheduler", rr.scheduler, rr.scheduler_params);
    } else {
      y << YAML::Key << "scheme" << YAML::Value << "(none: run.queueing false)";
    }
    y << YAML::EndMap;
  }
  y << YAML::EndSeq;

  y << YAML::Key << "fast_path" << YAML::Value << YAML::BeginMap;
  auto sum = [&](auto get) {
    uint64_t n = 0;
    for (const auto& w : app.workers()) n += get(w->counters());
    return n;
  };
  y << YAML::Key << "rx_packets" << YAML::Value << sum([](const FastPathCounters& k) { return k.rx_packets.get(); });
  y << YAML::Key << "forwarded" << YAML::Value << sum([](const FastPathCounters& k) { return k.forwarded.get(); });
  y << YAML::Key << "fragments_forwarded" << YAML::Value
    << sum([](const FastPathCounters& k) { return k.fragments.get(); });
  y << YAML::Key << "ipv4" << YAML::Value << YAML::BeginMap;
  for (unsigned v = 0; v < static_cast<unsigned>(ipv4::Verdict::kCount); ++v)
    y << YAML::Key << ipv4::verdict_name(static_cast<ipv4::Verdict>(v)) << YAML::Value
      << sum([v](const FastPathCounters& k) { return k.ipv4[v].get(); });
  y << YAML::EndMap;
  y << YAML::Key << "drops" << YAML::Value << YAML::BeginMap;
  for (unsigned d = 0; d < static_cast<unsigned>(FastDrop::kCount); ++d)
    y << YAML::Key << fast_drop_name(static_cast<FastDrop>(d)) << YAML::Value
      << sum([d](const FastPathCounters& k) { return k.drops[d].get(); });
  y << YAML::EndMap;
  y << YAML::Key << "exceptions" << YAML::Value << YAML::BeginMap;
  for (unsigned e = 0; e < static_cast<unsigned>(Exception::kCount); ++e)
    y << YAML::Key << exception_name(static_cast<Exception>(e)) << YAML::Value
      << sum([e](const FastPathCounters& k) { return k.exceptions[e].get(); });
  y << YAML::EndMap;
  y << YAML::EndMap;

  y << YAML::Key << "slow_path" << YAML::Value << YAML::BeginMap;
  for (unsigned e = 0; e < static_cast<unsigned>(SlowEvent::kCount); ++e)
    y << YAML::Key << slow_event_name(static_cast<SlowEvent>(e)) << YAML::Value
      << app.slow_path().counters().events[e].get();
  y << YAML::EndMap;

  const RunSummary& s = app.summary();
  y << YAML::Key << "results" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "wall_seconds" << YAML::Value << s.wall_seconds;
  y << YAML::Key << "route_reloads" << YAML::Value << s.route_reloads;
  y << YAML::Key << "route_reload_failures" << YAML::Value << s.route_reload_failures;
  y << YAML::Key << "fib_publications" << YAML::Value << s.fib_publications;
  y << YAML::Key << "held_for_arp_at_exit" << YAML::Value << s.held_at_exit;
  y << YAML::Key << "drain_timed_out" << YAML::Value << (s.drain_timed_out != 0);
  y << YAML::EndMap;
  y << YAML::Key << "config" << YAML::Value << c.resolved;
  y << YAML::EndMap;
  std::ofstream out(path);
  out << "# flexplane-router run metadata (docs/output-format.md)\n" << y.c_str() << "\n";
  if (!out) throw std::runtime_error(path.string() + ": cannot write");
}

}  // namespace

void RouterApp::write_outputs() const {
  const fs::path dir(cfg_.output_dir);
  fs::create_directories(dir);
  write_counters(dir / "counters.csv", *this);
  if (cfg_.run.occupancy_interval_us > 0) {
    write_occupancy(dir / "occupancy.csv", *this);
    bool any_stats = false;
    for (const PortScheduler* s : owner_sched_) any_stats = any_stats || !s->scheme_stats().empty();
    if (any_stats) write_scheme_stats(dir / "scheme_stats.csv", *this);
  }
  write_ports(dir / "ports.csv", *this);
  write_metadata(dir / "metadata.yaml", *this);
}

}  // namespace flexplane::router
