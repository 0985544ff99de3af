#include "emulator/output/output.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "api/params.h"
#include "api/pfc.h"

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

// One row at a time into a buffer with std::to_chars, written in large
// blocks: flows.csv can have millions of rows, and fprintf's formatting of
// doubles was most of a many-flow run's output phase (docs/performance/
// outputs-memory.md). to_chars with a precision gives exactly printf's
// "%.Nf" (both round the exact binary value), so the file is the same.
class RowWriter {
 public:
  explicit RowWriter(FILE* f) : f_(f), buf_(kFlushAt + 512), p_(buf_.data()) {}
  ~RowWriter() { flush(); }
  RowWriter(const RowWriter&) = delete;
  RowWriter& operator=(const RowWriter&) = delete;
  RowWriter& u(uint64_t v) {
    p_ = std::to_chars(p_, end(), v).ptr;
    return *this;
  }
  RowWriter& fixed(double v, int precision) {
    p_ = std::to_chars(p_, end(), v, std::chars_format::fixed, precision).ptr;
    return *this;
  }
  RowWriter& c(char ch) {
    *p_++ = ch;
    return *this;
  }
  RowWriter& s(const char* text) {
    while (*text) *p_++ = *text++;
    return *this;
  }
  // After each row: out to the file once the buffer is nearly full.
  void end_row() {
    *p_++ = '\n';
    if (static_cast<size_t>(p_ - buf_.data()) >= kFlushAt) flush();
  }
  void flush() {
    std::fwrite(buf_.data(), 1, static_cast<size_t>(p_ - buf_.data()), f_);
    p_ = buf_.data();
  }

 private:
  static constexpr size_t kFlushAt = 1 << 16;  // a row is well under the 512 bytes of slack
  char* end() { return buf_.data() + buf_.size(); }
  FILE* f_;
  std::vector<char> buf_;
  char* p_;
};

void write_flows_csv(const std::string& path, const Topology& topology, double timeslot_ns, uint32_t packet_bytes,
                     const FlowTraffic& traffic, const std::vector<uint32_t>& lost_per_flow) {
  File out(path);
  const double ts_us = timeslot_ns / 1000.0;
  std::fprintf(out.f,
               "flow_id,src,dst,size_pkts,size_bytes,start_timeslot,finish_timeslot,start_us,fct_us,ideal_fct_us,"
               "slowdown,finished,delivered_pkts,marked_pkts,lost_pkts,first_sent_timeslot,network_fct_us,"
               "network_slowdown,sent_pkts,retransmits,timeouts,ecn_reductions\n");
  const std::vector<SenderOutcome>& outcomes = traffic.sender_outcomes();  // empty: open loop
  const auto& flows = traffic.flows();
  const auto& states = traffic.states();
  RowWriter w(out.f);
  for (size_t i = 0; i < flows.size(); ++i) {
    const FlowSpec& f = flows[i];
    const FlowState& s = states[i];
    const bool done = s.delivered == f.size_pkts;
    // Ideal: the flow alone on an idle network = its packets back to back plus path latency
    // (no path: no ideal, the cells stay empty).
    Topology::Path path;
    const bool reachable = topology.find_path(f.src, f.dst, f.id, &path);
    const double ideal = (f.size_pkts + path.latency) * ts_us;
    auto opt = [&](double v, int precision) {
      if (reachable) w.fixed(v, precision);
    };
    w.u(f.id).c(',').u(f.src).c(',').u(f.dst).c(',').u(f.size_pkts).c(',');
    const Timeslot start = traffic.release()[i];  // its start, or when its dependencies released it
    w.u(uint64_t{f.size_pkts} * packet_bytes).c(',').u(start).c(',');
    if (done) {
      const double fct = (s.finish - start + 1) * ts_us;
      w.u(s.finish).c(',').fixed(start * ts_us, 4).c(',').fixed(fct, 4).c(',');
      opt(ideal, 4);
      w.c(',');
      opt(fct / ideal, 6);
      w.s(",1,");
    } else {
      w.c(',').fixed(start * ts_us, 4).s(",,");
      opt(ideal, 4);
      w.s(",,0,");
    }
    w.u(s.delivered).c(',').u(s.marked).c(',').u(lost_per_flow[i]).c(',');
    // In-network view: from the first packet leaving the source NIC, so the
    // wait behind earlier flows in the source's FIFO NIC is excluded.
    const Timeslot sent = traffic.first_sent()[i];
    if (sent == FlowTraffic::kNotSent) {
      w.s(",,,");
    } else if (!done) {
      w.u(sent).s(",,,");
    } else {
      const double net = (s.finish - sent + 1) * ts_us;
      w.u(sent).c(',').fixed(net, 4).c(',');
      opt(net / ideal, 6);
      w.c(',');
    }
    // Closed loop: what the sender did (filled when its last packet was ACKed); open loop: empty.
    if (!outcomes.empty() && outcomes[i].segments_sent)
      w.u(outcomes[i].segments_sent).c(',').u(outcomes[i].retransmits).c(',').u(outcomes[i].timeouts).c(',')
          .u(outcomes[i].ecn_reductions);
    else
      w.s(",,,");
    w.end_row();
  }
}

OccupancyFile parse_occupancy_file(const std::string& name, const std::string& where) {
  if (name == "binary") return OccupancyFile::kBinary;
  if (name == "csv") return OccupancyFile::kCsv;
  if (name == "none") return OccupancyFile::kNone;
  throw ConfigError(where + ": unknown occupancy file '" + name + "' (known: binary, csv, none)");
}

const char* occupancy_file_name(OccupancyFile f) {
  return f == OccupancyFile::kBinary ? "binary" : f == OccupancyFile::kCsv ? "csv" : "none";
}

namespace {

// JSON string body (router names are plain, but never trust a config).
std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

void put(FILE* f, const void* data, size_t bytes, const std::string& path) {
  if (bytes && std::fwrite(data, 1, bytes, f) != bytes) throw std::runtime_error(path + ": write failed");
}

}  // namespace

// Layout (docs/output-format.md, plots/occupancy_io.py): magic, header length,
// JSON header, then per router (header order) times[n] u64, packets[n][ports]
// u32 and, unless the header gives the router a packet_bytes, bytes[n][ports]
// u32; little-endian. Written as the engine holds it: no
// sorting, no formatting, three fwrite calls per router.
void write_occupancy_bin(const std::string& path, double timeslot_ns, Timeslot interval, const Engine& engine) {
  static_assert(std::endian::native == std::endian::little, "occupancy.bin is little-endian");
  File out(path);
  std::string h = "{\"format\": \"flexplane-occupancy\", \"version\": 1, \"timeslot_ns\": " +
                  std::to_string(timeslot_ns) + ", \"interval_timeslots\": " + std::to_string(interval) +
                  ", \"routers\": [";
  for (uint32_t i = 0; i < engine.num_routers(); ++i) {
    const OccupancyTrace& o = engine.occupancy_trace(i);
    const auto& spec = engine.topology().routers[i];
    h += std::string(i ? ", " : "") + "{\"name\": \"" + json_escape(spec.name) + "\", \"tier\": \"" +
         json_escape(spec.tier) + "\", \"ports\": " + std::to_string(o.ports) +
         ", \"samples\": " + std::to_string(o.times.size()) +
         ", \"packet_bytes\": " + std::to_string(o.packet_bytes) + "}";
  }
  h += "]}\n";
  const char magic[8] = {'F', 'P', 'O', 'C', 'C', '1', '\n', '\0'};
  const uint32_t len = static_cast<uint32_t>(h.size());
  put(out.f, magic, sizeof magic, path);
  put(out.f, &len, sizeof len, path);
  put(out.f, h.data(), h.size(), path);
  for (uint32_t i = 0; i < engine.num_routers(); ++i) {
    const OccupancyTrace& o = engine.occupancy_trace(i);
    put(out.f, o.times.data(), o.times.size() * sizeof(Timeslot), path);
    put(out.f, o.packets.data(), o.packets.size() * sizeof(uint32_t), path);
    if (!o.packet_bytes) put(out.f, o.bytes.data(), o.bytes.size() * sizeof(uint32_t), path);
  }
  if (std::fflush(out.f) != 0) throw std::runtime_error(path + ": write failed");
}

void write_occupancy_csv(const std::string& path, double timeslot_ns, const Engine& engine) {
  File out(path);
  const double ts_us = timeslot_ns / 1000.0;
  std::fprintf(out.f, "timeslot,time_us,router,port,packets,bytes\n");
  // Every router samples at the same timeslots, so (time, router, port) order
  // is row i of every router in turn; otherwise fall back to a sorted merge.
  bool aligned = true;
  const OccupancyTrace& first = engine.occupancy_trace(0);
  for (uint32_t r = 1; r < engine.num_routers(); ++r) aligned = aligned && engine.occupancy_trace(r).times == first.times;
  // A row is "timeslot,time_us," (printf's %.4f, formatted once per sample
  // time) then "router,port,packets,bytes" (to_chars); each sample time's
  // rows are written with one fwrite. Identical bytes to one fprintf per
  // row, which took most of the outputs' time on a k = 8 fat tree.
  std::string buf;
  char head[64];
  size_t head_len = 0;
  Timeslot head_time = ~Timeslot{0};
  auto row = [&](Timeslot t, uint32_t router, PortId port, uint32_t packets, uint64_t bytes) {
    if (t != head_time) {
      head_len = static_cast<size_t>(std::snprintf(head, sizeof head, "%llu,%.4f,", static_cast<unsigned long long>(t), t * ts_us));
      head_time = t;
    }
    buf.append(head, head_len);
    buf += engine.topology().routers[router].name;
    for (const uint64_t v : {uint64_t{port}, uint64_t{packets}, bytes}) {
      char d[24];  // 20 digits at most
      buf += ',';
      buf.append(d, std::to_chars(d, d + sizeof d, v).ptr);
    }
    buf += '\n';
  };
  auto flush = [&] {
    if (!buf.empty() && std::fwrite(buf.data(), 1, buf.size(), out.f) != buf.size())
      throw std::runtime_error(path + ": write failed");
    buf.clear();
  };
  if (!aligned) {
    for (const auto& s : engine.occupancy()) {
      row(s.time, s.router, s.port, s.packets, s.bytes);
      if (buf.size() > (size_t{1} << 16)) flush();
    }
    flush();
    return;
  }
  for (size_t i = 0; i < first.times.size(); ++i) {
    for (uint32_t r = 0; r < engine.num_routers(); ++r) {
      const OccupancyTrace& o = engine.occupancy_trace(r);
      for (PortId p = 0; p < o.ports; ++p) row(o.times[i], r, p, o.packets[i * o.ports + p], o.bytes_at(i * o.ports + p));
    }
    flush();
  }
}

uint64_t histogram_percentile(const std::vector<uint64_t>& histogram, uint64_t total, double q) {
  if (!total) return 0;
  const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(total))));
  uint64_t seen = 0;
  for (size_t v = 0; v < histogram.size(); ++v)
    if ((seen += histogram[v]) >= rank) return v;
  return histogram.empty() ? 0 : histogram.size() - 1;
}

void write_occupancy_summary_csv(const std::string& path, const Engine& engine) {
  File out(path);
  std::fprintf(out.f, "router,tier,port,samples,mean_pkts,p50_pkts,p90_pkts,p99_pkts,p999_pkts,max_pkts\n");
  for (uint32_t i = 0; i < engine.num_routers(); ++i) {
    const OccupancyTrace& o = engine.occupancy_trace(i);
    const auto& spec = engine.topology().routers[i];
    for (PortId p = 0; p < o.histogram.size(); ++p) {
      const std::vector<uint64_t>& h = o.histogram[p];
      double sum = 0;
      uint64_t max = 0;
      for (size_t v = 0; v < h.size(); ++v)
        if (h[v]) {
          sum += static_cast<double>(v) * static_cast<double>(h[v]);
          max = v;
        }
      std::fprintf(out.f, "%s,%s,%u,%llu,%.4f,%llu,%llu,%llu,%llu,%llu\n", spec.name.c_str(), spec.tier.c_str(), p,
                   (unsigned long long)o.samples, o.samples ? sum / static_cast<double>(o.samples) : 0.0,
                   (unsigned long long)histogram_percentile(h, o.samples, 0.5),
                   (unsigned long long)histogram_percentile(h, o.samples, 0.9),
                   (unsigned long long)histogram_percentile(h, o.samples, 0.99),
                   (unsigned long long)histogram_percentile(h, o.samples, 0.999), (unsigned long long)max);
    }
  }
}

namespace {
// Nearest-rank percentile of sorted values.
double sorted_percentile(const std::vector<double>& v, double q) {
  if (v.empty()) return NAN;
  const size_t rank = std::max<size_t>(1, static_cast<size_t>(std::ceil(q * static_cast<double>(v.size()))));
  return v[std::min(rank, v.size()) - 1];
}
}  // namespace

void write_flows_summary_csv(const std::string& path, const Topology& topology, double timeslot_ns,
                             const FlowTraffic& traffic) {
  struct Bucket {
    Bucket(const char* n, uint32_t l, uint32_t h) : name(n), lo(l), hi(h) {}
    const char* name;
    uint32_t lo, hi;  // size_pkts in (lo, hi], as plots/plot_fct.py's default buckets
    uint64_t flows = 0, unfinished = 0;
    std::vector<double> fct, slowdown;
  };
  std::vector<Bucket> buckets = {{"1-10", 0, 10},           {"11-100", 10, 100},      {"101-1000", 100, 1000},
                                 {"1001-10000", 1000, 10000}, {"10001-", 10000, UINT32_MAX}, {"all", 0, UINT32_MAX}};
  const double ts_us = timeslot_ns / 1000.0;
  const auto& flows = traffic.flows();
  const auto& states = traffic.states();
  for (size_t i = 0; i < flows.size(); ++i) {
    const FlowSpec& f = flows[i];
    const bool done = states[i].delivered == f.size_pkts;
    Topology::Path path;
    const bool reachable = topology.find_path(f.src, f.dst, f.id, &path);
    for (Bucket& b : buckets) {
      if (f.size_pkts <= b.lo || f.size_pkts > b.hi) continue;
      ++b.flows;
      if (!done) {
        ++b.unfinished;
        continue;
      }
      const double fct = (states[i].finish - traffic.release()[i] + 1) * ts_us;
      b.fct.push_back(fct);
      if (reachable) b.slowdown.push_back(fct / ((f.size_pkts + path.latency) * ts_us));
    }
  }
  File out(path);
  std::fprintf(out.f,
               "bucket_pkts,flows,unfinished,mean_fct_us,p50_fct_us,p99_fct_us,mean_slowdown,p50_slowdown,"
               "p99_slowdown\n");
  for (Bucket& b : buckets) {
    std::sort(b.fct.begin(), b.fct.end());
    std::sort(b.slowdown.begin(), b.slowdown.end());
    auto mean = [](const std::vector<double>& v) {
      double s = 0;
      for (double x : v) s += x;
      return v.empty() ? NAN : s / static_cast<double>(v.size());
    };
    std::fprintf(out.f, "%s,%llu,%llu,%.4f,%.4f,%.4f,%.6f,%.6f,%.6f\n", b.name, (unsigned long long)b.flows,
                 (unsigned long long)b.unfinished, mean(b.fct), sorted_percentile(b.fct, 0.5),
                 sorted_percentile(b.fct, 0.99), mean(b.slowdown), sorted_percentile(b.slowdown, 0.5),
                 sorted_percentile(b.slowdown, 0.99));
  }
}

void prepare_output_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw ConfigError("output folder " + dir + ": cannot create it: " + ec.message());
  if (!fs::is_directory(dir, ec)) throw ConfigError("output folder " + dir + ": exists and is not a folder");
  const fs::path probe = fs::path(dir) / ".flexplane-write-test";
  FILE* f = std::fopen(probe.c_str(), "w");
  bool ok = f != nullptr;
  if (f) ok = (std::fputs("ok\n", f) >= 0) & (std::fclose(f) == 0);
  if (!ok) throw ConfigError("output folder " + dir + ": cannot write in it: " + std::strerror(errno));
  fs::remove(probe, ec);
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
    const char* name = engine.topology().routers[i].name.c_str();
    for (PortId p = 0; p < engine.num_ports(i); ++p)
      for (QueueId q = 0; q < engine.queues_per_port(i); ++q) {
        const QueueCounters c = engine.queue_counters(i, p, q);
        if (!c.arrived && !c.enqueued) continue;  // keep the file readable: only queues that saw traffic
        std::fprintf(out.f, "%s,%u,%u,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%u,%llu", name, p, q,
                     (unsigned long long)c.arrived, (unsigned long long)c.enqueued, (unsigned long long)c.dequeued,
                     (unsigned long long)c.dropped_on_arrival, (unsigned long long)c.dropped_at_dequeue,
                     (unsigned long long)c.evicted, (unsigned long long)c.marked, engine.backlog_packets(i, p, q),
                     (unsigned long long)engine.backlog_bytes(i, p, q));
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
  for (uint32_t i = 0; i < engine.num_routers(); ++i) descs.push_back(engine.stat_descs(i));
  std::fprintf(out.f, "timeslot,time_us,router,port,queue,stat,value\n");
  for (const auto& s : engine.scheme_stats()) {
    const StatDesc& d = descs[s.router].at(s.stat);
    std::fprintf(out.f, "%llu,%.4f,%s,%u,", static_cast<unsigned long long>(s.time), s.time * ts_us,
                 engine.topology().routers[s.router].name.c_str(), s.port);
    if (d.scope == StatDesc::kPerQueue) std::fprintf(out.f, "%u", s.queue);
    std::fprintf(out.f, ",%s,%.9g\n", d.name.c_str(), s.value);
  }
}

PfcTotals pfc_totals(const Engine& engine) {
  PfcTotals t;
  for (uint32_t i = 0; i < engine.num_routers(); ++i) {
    const uint16_t prios = engine.pfc_priorities(i);
    if (!prios) continue;
    ++t.routers;
    for (PortId p = 0; p < engine.num_ports(i); ++p)
      for (QueueId q = 0; q < prios; ++q) {
        const PfcCounters c = engine.pfc_counters(i, p, q);
        t.pauses_sent += c.pauses_sent;
        t.paused_sent_ts += c.paused_sent_ts;
        t.headroom_overruns += c.headroom_overruns;
        t.max_ingress_pkts = std::max(t.max_ingress_pkts, c.max_ingress_pkts);
      }
  }
  return t;
}

void write_pfc_csv(const std::string& path, double timeslot_ns, const Engine& engine) {
  File out(path);
  const double ts_us = timeslot_ns / 1000.0;
  std::fprintf(out.f,
               "router,port,priority,neighbour,pauses_sent,resumes_sent,paused_sent_us,pauses_received,paused_us,"
               "max_ingress_pkts,headroom_overruns\n");
  const Topology& topo = engine.topology();
  // Who is on each port (a router's name or "host<N>"), for reading the file.
  std::vector<std::vector<std::string>> neighbour(topo.routers.size());
  for (size_t r = 0; r < topo.routers.size(); ++r) neighbour[r].assign(topo.routers[r].num_ports, "");
  for (const auto& l : topo.router_links) {
    neighbour[l.a.router][l.a.port] = topo.routers[l.b.router].name;
    neighbour[l.b.router][l.b.port] = topo.routers[l.a.router].name;
  }
  for (uint32_t e = 0; e < topo.num_endpoints; ++e)
    neighbour[topo.endpoint_port[e].router][topo.endpoint_port[e].port] = "host" + std::to_string(e);
  for (uint32_t i = 0; i < engine.num_routers(); ++i) {
    const uint16_t prios = engine.pfc_priorities(i);
    for (PortId p = 0; p < engine.num_ports(i); ++p)
      for (QueueId q = 0; q < engine.queues_per_port(i) && q < QueueBank::kPfcPriorities; ++q) {
        PfcCounters c;
        if (q < prios) c = engine.pfc_counters(i, p, q);
        if (!c.pauses_sent && !c.pauses_received && !c.max_ingress_pkts) continue;  // only ports PFC touched
        std::fprintf(out.f, "%s,%u,%u,%s,%llu,%llu,%.4f,%llu,%.4f,%u,%llu\n", topo.routers[i].name.c_str(), p, q,
                     neighbour[i][p].c_str(), (unsigned long long)c.pauses_sent, (unsigned long long)c.resumes_sent,
                     c.paused_sent_ts * ts_us, (unsigned long long)c.pauses_received, c.paused_ts * ts_us,
                     c.max_ingress_pkts, (unsigned long long)c.headroom_overruns);
      }
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
    for (uint32_t i = 0; i < engine.num_routers(); ++i) n += engine.router_losses(i).by_reason[static_cast<unsigned>(r)];
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
                   (unsigned long long)engine.router_losses(i).by_reason[static_cast<unsigned>(r)]);
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
                          OccupancyFile occupancy, uint64_t unexpected, const std::vector<PacketEvent>& events) {
  const std::filesystem::path d(dir);
  write_counters_csv((d / "counters.csv").string(), engine);
  write_losses_csv((d / "losses.csv").string(), engine, unexpected);
  if (pfc_totals(engine).routers) write_pfc_csv((d / "pfc.csv").string(), options.timeslot_ns, engine);
  if (options.occupancy_interval) {
    if (occupancy == OccupancyFile::kBinary)
      write_occupancy_bin((d / "occupancy.bin").string(), options.timeslot_ns, options.occupancy_interval, engine);
    else if (occupancy == OccupancyFile::kCsv)
      write_occupancy_csv((d / "occupancy.csv").string(), options.timeslot_ns, engine);
    write_occupancy_summary_csv((d / "occupancy_summary.csv").string(), engine);
    bool stats = false;
    for (uint32_t i = 0; i < engine.num_routers(); ++i) stats = stats || !engine.stat_descs(i).empty();
    if (stats) write_scheme_stats_csv((d / "scheme_stats.csv").string(), options.timeslot_ns, engine);
  }
  if (options.packet_log) write_packets_csv((d / "packets.csv").string(), engine, events);
}

}  // namespace flexplane
