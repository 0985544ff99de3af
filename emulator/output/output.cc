#include "emulator/output/output.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "api/params.h"

namespace flexplane {

namespace {

// Buffered C stdio: result files can have millions of rows.
struct File {
  explicit File(const std::string& path) : f(std::fopen(path.c_str(), "w")) {
    if (!f) throw std::runtime_error(path + ": cannot write");
    std::setvbuf(f, nullptr, _IOFBF, 1 << 20);
  }
  ~File() {
    if (f) std::fclose(f);
  }
  FILE* f;
};

}  // namespace

void write_flows_csv(const std::string& path, const Topology& topology, double timeslot_ns, uint32_t packet_bytes,
                     const FlowTraffic& traffic, const std::vector<uint32_t>& lost_per_flow) {
  File out(path);
  const double ts_us = timeslot_ns / 1000.0;
  std::fprintf(out.f,
               "flow_id,src,dst,size_pkts,size_bytes,start_timeslot,finish_timeslot,start_us,fct_us,ideal_fct_us,"
               "slowdown,finished,delivered_pkts,marked_pkts,lost_pkts,first_sent_timeslot,network_fct_us,"
               "network_slowdown\n");
  const auto& flows = traffic.flows();
  const auto& states = traffic.states();
  for (size_t i = 0; i < flows.size(); ++i) {
    const FlowSpec& f = flows[i];
    const FlowState& s = states[i];
    const bool done = s.delivered == f.size_pkts;
    // Ideal: the flow alone on an idle network = its packets back to back plus path latency
    // (no path: no ideal, the cells stay empty).
    Topology::Path path;
    const bool reachable = topology.find_path(f.src, f.dst, f.id, &path);
    const double ideal = (f.size_pkts + path.latency) * ts_us;
    auto opt = [&](double v, const char* fmt) {
      if (reachable) std::fprintf(out.f, fmt, v);
    };
    std::fprintf(out.f, "%u,%u,%u,%u,%llu,%llu,", f.id, f.src, f.dst, f.size_pkts,
                 static_cast<unsigned long long>(f.size_pkts) * packet_bytes,
                 static_cast<unsigned long long>(f.start));
    if (done) {
      const double fct = (s.finish - f.start + 1) * ts_us;
      std::fprintf(out.f, "%llu,%.4f,%.4f,", static_cast<unsigned long long>(s.finish), f.start * ts_us, fct);
      opt(ideal, "%.4f");
      std::fprintf(out.f, ",");
      opt(fct / ideal, "%.6f");
      std::fprintf(out.f, ",1,");
    } else {
      std::fprintf(out.f, ",%.4f,,", f.start * ts_us);
      opt(ideal, "%.4f");
      std::fprintf(out.f, ",,0,");
    }
    std::fprintf(out.f, "%u,%u,%u,", s.delivered, s.marked, lost_per_flow[i]);
    // In-network view: from the first packet leaving the source NIC, so the
    // wait behind earlier flows in the source's FIFO NIC is excluded.
    const Timeslot sent = traffic.first_sent()[i];
    if (sent == FlowTraffic::kNotSent)
      std::fprintf(out.f, ",,\n");
    else if (!done)
      std::fprintf(out.f, "%llu,,\n", static_cast<unsigned long long>(sent));
    else {
      const double net = (s.finish - sent + 1) * ts_us;
      std::fprintf(out.f, "%llu,%.4f,", static_cast<unsigned long long>(sent), net);
      opt(net / ideal, "%.6f");
      std::fprintf(out.f, "\n");
    }
  }
}

void write_occupancy_csv(const std::string& path, double timeslot_ns, const Engine& engine) {
  File out(path);
  const double ts_us = timeslot_ns / 1000.0;
  std::fprintf(out.f, "timeslot,time_us,router,port,packets,bytes\n");
  for (const auto& s : engine.occupancy())
    std::fprintf(out.f, "%llu,%.4f,%s,%u,%u,%llu\n", static_cast<unsigned long long>(s.time), s.time * ts_us,
                 engine.topology().routers[s.router].name.c_str(), s.port, s.packets,
                 static_cast<unsigned long long>(s.bytes));
}

void write_counters_csv(const std::string& path, const Engine& engine) {
  File out(path);
  std::fprintf(out.f,
               "router,port,queue,arrived,enqueued,dequeued,dropped_on_arrival,dropped_at_dequeue,evicted,marked,"
               "backlog_pkts,backlog_bytes");
  for (unsigned r = 0; r < kNumReasons; ++r) std::fprintf(out.f, ",drops_%s", reason_name(static_cast<Reason>(r)));
  for (unsigned r = 0; r < kNumReasons; ++r) std::fprintf(out.f, ",marks_%s", reason_name(static_cast<Reason>(r)));
  std::fprintf(out.f, "\n");
  for (uint32_t i = 0; i < engine.num_routers(); ++i) {
    const QueueBank& b = engine.router(i).bank();
    const char* name = engine.topology().routers[i].name.c_str();
    for (PortId p = 0; p < b.num_ports(); ++p)
      for (QueueId q = 0; q < b.queues_per_port(); ++q) {
        const QueueCounters& c = b.counters(p, q);
        if (!c.arrived && !c.enqueued) continue;  // keep the file readable: only queues that saw traffic
        std::fprintf(out.f, "%s,%u,%u,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%u,%llu", name, p, q,
                     (unsigned long long)c.arrived, (unsigned long long)c.enqueued, (unsigned long long)c.dequeued,
                     (unsigned long long)c.dropped_on_arrival, (unsigned long long)c.dropped_at_dequeue,
                     (unsigned long long)c.evicted, (unsigned long long)c.marked, b.packets(p, q),
                     (unsigned long long)b.bytes(p, q));
        for (unsigned r = 0; r < kNumReasons; ++r) std::fprintf(out.f, ",%llu", (unsigned long long)c.drops[r]);
        for (unsigned r = 0; r < kNumReasons; ++r) std::fprintf(out.f, ",%llu", (unsigned long long)c.marks[r]);
        std::fprintf(out.f, "\n");
      }
  }
}

void write_scheme_stats_csv(const std::string& path, double timeslot_ns, const Engine& engine) {
  File out(path);
  const double ts_us = timeslot_ns / 1000.0;
  std::vector<std::vector<StatDesc>> descs;
  for (uint32_t i = 0; i < engine.num_routers(); ++i) descs.push_back(engine.router(i).stat_descs());
  std::fprintf(out.f, "timeslot,time_us,router,port,queue,stat,value\n");
  for (const auto& s : engine.scheme_stats()) {
    const StatDesc& d = descs[s.router].at(s.stat);
    std::fprintf(out.f, "%llu,%.4f,%s,%u,", static_cast<unsigned long long>(s.time), s.time * ts_us,
                 engine.topology().routers[s.router].name.c_str(), s.port);
    if (d.scope == StatDesc::kPerQueue) std::fprintf(out.f, "%u", s.queue);
    std::fprintf(out.f, ",%s,%.9g\n", d.name.c_str(), s.value);
  }
}

namespace {
// The losses outside queues, in losses.csv order.
constexpr Reason kRouterLosses[] = {Reason::kNoRoute, Reason::kClassifierRange};
constexpr Reason kLinkLosses[] = {Reason::kLinkCollision, Reason::kNoLink, Reason::kMisdelivered};
}  // namespace

uint64_t Losses::total() const {
  uint64_t n = 0;
  for (const auto& k : kinds) n += k.packets;
  return n;
}

Losses losses(const Engine& engine, uint64_t unexpected) {
  Losses out;
  for (Reason r : kRouterLosses) {
    uint64_t n = 0;
    for (uint32_t i = 0; i < engine.num_routers(); ++i) n += engine.router(i).losses().by_reason[static_cast<unsigned>(r)];
    out.kinds.push_back({reason_name(r), n});
  }
  for (Reason r : kLinkLosses) {
    uint64_t n = 0;
    for (uint32_t i = 0; i < engine.num_routers(); ++i) n += engine.link_losses(i).by_reason[static_cast<unsigned>(r)];
    out.kinds.push_back({reason_name(r), n});
  }
  out.kinds.push_back({"unexpected_arrivals", unexpected});
  return out;
}

void write_losses_csv(const std::string& path, const Engine& engine, uint64_t unexpected) {
  File out(path);
  std::fprintf(out.f, "where,kind,packets\n");
  for (uint32_t i = 0; i < engine.num_routers(); ++i) {
    const char* name = engine.topology().routers[i].name.c_str();
    for (Reason r : kRouterLosses)
      std::fprintf(out.f, "%s,%s,%llu\n", name, reason_name(r),
                   (unsigned long long)engine.router(i).losses().by_reason[static_cast<unsigned>(r)]);
    for (Reason r : kLinkLosses)
      std::fprintf(out.f, "%s,%s,%llu\n", name, reason_name(r),
                   (unsigned long long)engine.link_losses(i).by_reason[static_cast<unsigned>(r)]);
  }
  std::fprintf(out.f, "endpoints,unexpected_arrivals,%llu\n", (unsigned long long)unexpected);
}

void write_packets_csv(const std::string& path, const Engine& engine, const std::vector<PacketEvent>& events) {
  File out(path);
  std::fprintf(out.f, "timeslot,event,flow,seq,src,dst,router,port,reason,ce\n");
  for (const auto& e : events) {
    if (e.kind == PacketEvent::kDelivered)
      std::fprintf(out.f, "%llu,delivered,%u,%u,%u,%u,,,,%d\n", (unsigned long long)e.time, e.flow, e.seq, e.src,
                   e.dst, e.ce ? 1 : 0);
    else
      std::fprintf(out.f, "%llu,dropped,%u,%u,%u,%u,%s,%u,%s,\n", (unsigned long long)e.time, e.flow, e.seq, e.src,
                   e.dst, engine.topology().routers[e.router].name.c_str(), e.port, reason_name(e.reason));
  }
}

void write_engine_outputs(const std::string& dir, const Engine& engine, const EngineOptions& options,
                          uint64_t unexpected, const std::vector<PacketEvent>& events) {
  const std::filesystem::path d(dir);
  write_counters_csv((d / "counters.csv").string(), engine);
  write_losses_csv((d / "losses.csv").string(), engine, unexpected);
  if (options.occupancy_interval) {
    write_occupancy_csv((d / "occupancy.csv").string(), options.timeslot_ns, engine);
    bool stats = false;
    for (uint32_t i = 0; i < engine.num_routers(); ++i) stats = stats || !engine.router(i).stat_descs().empty();
    if (stats) write_scheme_stats_csv((d / "scheme_stats.csv").string(), options.timeslot_ns, engine);
  }
  if (options.packet_log) write_packets_csv((d / "packets.csv").string(), engine, events);
}

}  // namespace flexplane
