#include "emulator/run/run.h"

#include <sys/resource.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "emulator/config/endpoint_contract.h"
#include "emulator/engine/serial.h"
#include "emulator/output/output.h"
#include "emulator/run/setup.h"
#include "api/version.h"

namespace flexplane {

namespace fs = std::filesystem;

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Seconds since this process started: its start time in /proc/self/stat
// (clock ticks since boot) against CLOCK_BOOTTIME; 0 if unreadable.
double seconds_since_process_start() {
  std::ifstream f("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');  // the command name may hold spaces
  if (paren == std::string::npos) return 0;
  std::istringstream rest(stat.substr(paren + 2));
  std::string field;
  for (int i = 3; i < 22 && rest >> field; ++i) {  // fields 3..21; starttime is field 22
  }
  unsigned long long start_ticks = 0;
  if (!(rest >> start_ticks)) return 0;
  timespec up{};
  if (clock_gettime(CLOCK_BOOTTIME, &up) != 0) return 0;
  const double since = up.tv_sec + up.tv_nsec * 1e-9 - static_cast<double>(start_ticks) / sysconf(_SC_CLK_TCK);
  return since > 0 ? since : 0;
}

void emit_params(YAML::Emitter& y, const char* key, const std::string& name, const ResolvedParams& params) {
  if (name.empty()) return;
  y << YAML::Key << key << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value << name;
  for (const auto& [k, v] : params) y << YAML::Key << k << YAML::Value << v;
  y << YAML::EndMap;
}

constexpr const char* kRoutersPlaceholder = "flexplane_routers_section";

// metadata.yaml's `routers:` map, as the emitter writes it (block style, two
// spaces per level), each distinct router block emitted once.
std::string routers_section(const RunConfig& c, const std::vector<ResolvedRouter>& routers) {
  if (routers.empty()) return "routers: {}\n";
  std::string out = "routers:\n";
  std::map<std::string, std::string> blocks;  // a router's resolved fields -> its block, indented
  for (size_t i = 0; i < routers.size(); ++i) {
    const ResolvedRouter& r = routers[i];
    std::string key = r.scheme + '\0' + r.router + '\0' + r.classifier + '\0' + r.queue_manager + '\0' +
                      r.scheduler + '\0' + r.load_balancer + '\0' + (r.pfc ? "1" : "0");
    for (const ResolvedParams* ps : {&r.router_params, &r.classifier_params, &r.queue_manager_params,
                                     &r.scheduler_params, &r.load_balancer_params, &r.pfc_params}) {
      key += '\1';
      for (const auto& [k, v] : *ps) key += k + '\0' + v + '\0';
    }
    auto [it, fresh] = blocks.try_emplace(std::move(key));
    if (fresh) {
      YAML::Emitter b;
      b << YAML::BeginMap;
      b << YAML::Key << "scheme" << YAML::Value << (r.scheme.empty() ? "(components)" : r.scheme);
      emit_params(b, "router", r.router, r.router_params);
      emit_params(b, "classifier", r.classifier, r.classifier_params);
      emit_params(b, "queue_manager", r.queue_manager, r.queue_manager_params);
      emit_params(b, "scheduler", r.scheduler, r.scheduler_params);
      emit_params(b, "load_balancer", r.load_balancer, r.load_balancer_params);
      if (r.pfc) emit_params(b, "pfc", "pfc", r.pfc_params);
      b << YAML::EndMap;
      std::istringstream lines(b.c_str());
      for (std::string l; std::getline(lines, l);) it->second += "    " + l + "\n";
    }
    YAML::Emitter name;
    name << YAML::BeginMap << YAML::Key << c.topology.routers[i].name << YAML::Value << YAML::BeginMap;
    name << YAML::Key << "scheme" << YAML::Value << "x" << YAML::EndMap << YAML::EndMap;
    const std::string n = name.c_str();  // "<name>:\n  scheme: x": the key as the emitter quotes it
    out += "  " + n.substr(0, n.find('\n')) + "\n" + it->second;
  }
  return out;
}

void write_metadata(const std::string& path, const RunConfig& c, const std::vector<ResolvedRouter>& routers,
                    PriorityStamp stamp, const WorkloadStats& wstats, const RunSummary& s) {
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "flexplane_version" << YAML::Value << FLEXPLANE_VERSION;
  y << YAML::Key << "git_commit" << YAML::Value << FLEXPLANE_GIT_COMMIT;
  y << YAML::Key << "config_file" << YAML::Value << c.file;
  y << YAML::Key << "variant" << YAML::Value << c.variant;
  y << YAML::Key << "seed" << YAML::Value << c.seed;
  y << YAML::Key << "timeslot_ns" << YAML::Value << c.network.timeslot_ns();
  y << YAML::Key << "timeslots" << YAML::Value << s.timeslots;
  y << YAML::Key << "arrival_timeslots" << YAML::Value << c.duration;
  y << YAML::Key << "cap_timeslots" << YAML::Value << s.cap;  // duration + drain
  y << YAML::Key << "stop_when_done" << YAML::Value << c.stop_when_done;
  y << YAML::Key << "end_reason" << YAML::Value << (s.all_flows_done ? "all_flows_done" : "cap");
  y << YAML::Key << "emulated_end_ms" << YAML::Value << s.timeslots * c.network.timeslot_ns() / 1e6;
  y << YAML::Key << "cores" << YAML::Value << c.cores;
  if (s.ranks > 1) y << YAML::Key << "ranks" << YAML::Value << s.ranks;  // runs across processes: cores is per rank
  y << YAML::Key << "lookahead" << YAML::Value << c.lookahead;
  y << YAML::Key << "placement" << YAML::Value << router_placement_name(c.placement);
  y << YAML::Key << "endpoint_priority" << YAML::Value << priority_stamp_name(stamp);
  y << YAML::Key << "endpoint_ect" << YAML::Value << c.endpoint_ect;
  y << YAML::Key << "transport" << YAML::Value
    << (c.transport.enabled ? transport_kind_name(c.transport.kind) : "none");
  if (c.transport.enabled) {
    y << YAML::Key << "ack_latency" << YAML::Value << ack_latency_name(c.transport.ack_latency);
    y << YAML::Key << "ack_queueing" << YAML::Value << ack_queueing_name(c.transport.ack_queueing);
    if (c.transport.ack_queueing != AckQueueing::kNone)
      y << YAML::Key << "ack_queueing_nic" << YAML::Value << c.transport.ack_queueing_nic;
    y << YAML::Key << "nic" << YAML::Value << nic_mode_name(c.transport.nic);
    y << YAML::Key << "transport_params" << YAML::Value << YAML::BeginMap;  // every one, defaults included
    for (const auto& [k, v] : transport_param_schema().show(c.transport.params))
      y << YAML::Key << k << YAML::Value << v;
    y << YAML::EndMap;
  }
  // The routers' section is spliced in as text (routers_section) where this
  // placeholder line ends up: emitting it key by key was most of the
  // metadata's cost (2.8 % of a k = 8 web-search run's instructions), for
  // blocks that repeat.
  y << YAML::Key << "routers" << YAML::Value << kRoutersPlaceholder;
  y << YAML::Key << "workload" << YAML::Value;
  describe(c.workload, y);
  y << YAML::Key << "results" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "flows" << YAML::Value << s.flows;
  y << YAML::Key << "finished" << YAML::Value << s.finished;
  y << YAML::Key << "unfinished_lost" << YAML::Value << s.unfinished_lost;
  y << YAML::Key << "unfinished_in_flight" << YAML::Value << s.unfinished_in_flight;
  y << YAML::Key << "drops" << YAML::Value << s.drops;
  y << YAML::Key << "marks" << YAML::Value << s.marks;
  if (s.pfc.routers) {  // lossless: pfc.csv per port and priority
    y << YAML::Key << "pfc" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "routers" << YAML::Value << s.pfc.routers;
    y << YAML::Key << "pauses_sent" << YAML::Value << s.pfc.pauses_sent;
    y << YAML::Key << "pause_time_us" << YAML::Value << s.pfc.paused_sent_ts * c.network.timeslot_ns() / 1000.0;
    y << YAML::Key << "max_ingress_pkts" << YAML::Value << s.pfc.max_ingress_pkts;
    y << YAML::Key << "headroom_overruns" << YAML::Value << s.pfc.headroom_overruns;
    y << YAML::EndMap;
  }
  y << YAML::Key << "losses" << YAML::Value << YAML::BeginMap;  // outside any queue: losses.csv
  for (const auto& k : s.losses.kinds) y << YAML::Key << k.name << YAML::Value << k.packets;
  y << YAML::EndMap;
  // p50 / p90 / p99 of a wait histogram, as one flow map.
  auto percentiles = [&](const char* name, const WaitHistogram& h) {
    y << YAML::Key << name << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (const auto& [label, p] : {std::pair{"p50", 0.5}, std::pair{"p90", 0.9}, std::pair{"p99", 0.99}})
      y << YAML::Key << label << YAML::Value << h.percentile(p);
    y << YAML::EndMap;
  };
  if (c.transport.enabled) {  // data segments' waits in their senders' NICs
    const NicWaitStats& n = s.nic_wait;
    y << YAML::Key << "nic_queueing" << YAML::Value << YAML::BeginMap;
    const uint64_t segments = n.waits.total();
    y << YAML::Key << "segments" << YAML::Value << segments;
    y << YAML::Key << "mean_wait_timeslots" << YAML::Value
      << (segments ? static_cast<double>(n.waited) / static_cast<double>(segments) : 0.0);
    y << YAML::Key << "max_wait_timeslots" << YAML::Value << n.max_wait;
    percentiles("wait_timeslots", n.waits);
    y << YAML::Key << "timeouts_with_data_in_nic" << YAML::Value << n.timeouts_with_data_in_nic;
    y << YAML::EndMap;
  }
  if (c.transport.enabled && c.transport.ack_queueing != AckQueueing::kNone) {
    const AckQueueStats& a = s.ack_queue;
    const uint64_t went_on = a.acks - a.lost;  // the waits are summed over these
    auto mean = [&](uint64_t sum) { return went_on ? static_cast<double>(sum) / static_cast<double>(went_on) : 0.0; };
    y << YAML::Key << "ack_queueing" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "acks" << YAML::Value << a.acks;
    y << YAML::Key << "lost" << YAML::Value << a.lost;
    y << YAML::Key << "mean_wait_timeslots" << YAML::Value << mean(a.waited);
    y << YAML::Key << "mean_nic_wait_timeslots" << YAML::Value << mean(a.waited_nic);
    y << YAML::Key << "max_wait_timeslots" << YAML::Value << a.max_wait;
    percentiles("nic_wait_timeslots", a.nic_waits);
    percentiles("port_wait_timeslots", a.port_waits);
    y << YAML::Key << "unqueued" << YAML::Value << a.unqueued;
    y << YAML::EndMap;
  }
  if (s.collective.iterations) {  // collective.csv has one row per iteration
    const CollectiveSummary& cs = s.collective;
    y << YAML::Key << "collective" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "iterations" << YAML::Value << cs.iterations;
    y << YAML::Key << "completed" << YAML::Value << cs.completed;
    y << YAML::Key << "mean_iteration_us" << YAML::Value << cs.mean_iteration_us;
    y << YAML::Key << "max_iteration_us" << YAML::Value << cs.max_iteration_us;
    y << YAML::Key << "end_us" << YAML::Value << cs.end_us;
    y << YAML::EndMap;
  }
  y << YAML::Key << "offered_load" << YAML::Value << wstats.offered_load;
  y << YAML::Key << "router_packet_hops" << YAML::Value << s.router_packet_hops;
  y << YAML::Key << "wall_seconds" << YAML::Value << s.wall_seconds;
  y << YAML::Key << "peak_rss_mb" << YAML::Value << s.peak_rss_mb;
  if (s.ranks > 1) {  // each rank's, as it sent its results (rank 0's before writing the outputs)
    y << YAML::Key << "peak_rss_mb_by_rank" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (double m : s.peak_rss_mb_by_rank) y << m;
    y << YAML::EndSeq;
  }
  const RunSummary::Phases& ph = s.phase_seconds;
  y << YAML::Key << "phase_seconds" << YAML::Value << YAML::Flow << YAML::BeginMap;
  y << YAML::Key << "before" << YAML::Value << ph.before << YAML::Key << "setup" << YAML::Value << ph.setup;
  y << YAML::Key << "engine" << YAML::Value << ph.engine << YAML::Key << "outputs" << YAML::Value << ph.outputs;
  y << YAML::EndMap;
  y << YAML::EndMap;
  y << YAML::Key << "config" << YAML::Value << c.resolved;
  y << YAML::EndMap;
  std::string text = y.c_str();
  const std::string line = std::string("\nrouters: ") + kRoutersPlaceholder + "\n";
  const size_t at = text.find(line);
  if (at == std::string::npos) throw std::logic_error("metadata: routers placeholder not found");
  text.replace(at + 1, line.size() - 1, routers_section(c, routers));
  std::ofstream out(path);
  out << "# flexplane run metadata (docs/output-format.md)\n" << text << "\n";
  if (!out) throw std::runtime_error(path + ": cannot write");
}

double peak_rss_mb() {
  rusage ru{};
  return getrusage(RUSAGE_SELF, &ru) == 0 ? static_cast<double>(ru.ru_maxrss) / 1024.0 : 0;  // KiB on Linux
}

// Runs across processes, after the run: each rank's share of the results
// (the engine's, the traffic's, its peak RSS so far) to rank 0, which folds
// them in. Returns whether this is rank 0 (the one that writes the outputs).
bool gather_results(const RunConfig& c, Engine& engine, FlowTraffic& traffic, Partition& partition,
                    std::vector<double>* rss_by_rank) {
  std::vector<bool> local(c.topology.num_endpoints);
  for (uint32_t e = 0; e < c.topology.num_endpoints; ++e)  // not EndpointId: 65,536 endpoints at k = 64
    local[e] = engine.runs_router(c.topology.endpoint_port[e].router);
  std::string engine_part, traffic_part, mine;
  engine.pack_results(engine_part);
  traffic.pack_results(local, traffic_part);
  mine.reserve(engine_part.size() + traffic_part.size() + 3 * sizeof(uint64_t));
  serial::Writer w(mine);
  for (std::string* part : {&engine_part, &traffic_part}) {
    w.put(static_cast<uint64_t>(part->size()));
    mine += *part;
    std::string().swap(*part);
  }
  w.put(peak_rss_mb());
  const std::vector<std::string> all = partition.gather(mine);
  if (partition.rank() != 0) return false;
  for (uint32_t r = 0; r < all.size(); ++r) {
    serial::Reader in(all[r]);
    uint64_t n = in.get<uint64_t>();
    const char* engine_bytes = in.bytes(n);
    if (r) engine.unpack_results(engine_bytes, n);
    n = in.get<uint64_t>();
    const char* traffic_bytes = in.bytes(n);
    if (r) traffic.unpack_results(std::string(traffic_bytes, n));
    rss_by_rank->push_back(in.get<double>());
    in.expect_end();
  }
  return true;
}

}  // namespace

RunSummary execute_run(const RunConfig& c, const ProgressFn& progress, Partition* partition) {
  const double before = seconds_since_process_start();
  const double t_setup = now_s();
  const bool writes = !partition || partition->rank() == 0;  // across processes: rank 0 writes the outputs
  if (writes) prepare_output_dir(c.output_dir);  // fail before the run, not after it
  const OccupancyFile occupancy_file = parse_occupancy_file(c.occupancy_file, c.file + ": output.occupancy");
  std::vector<ResolvedRouter> resolved;
  std::vector<std::unique_ptr<Router>> routers = build_routers(c, &resolved);

  const EndpointStamping stamping = endpoint_stamping(c, endpoint_contract(c, resolved));

  WorkloadStats wstats;
  FlowDeps deps;  // a collective's: flows that wait for others
  const FlowList flows = generate_flows(c.workload, c.topology.num_endpoints, &wstats, &deps);
  FlowTraffic traffic(flows, c.topology.num_endpoints, stamping);
  traffic.set_dependencies(&deps);
  traffic.enable_transport(c.topology, c.transport, c.network.timeslot_ns());

  EngineOptions opt = engine_options(c, c.cores);
  opt.stop_when_done = c.stop_when_done;  // virtual time only (not replay, not live)
  if (partition) {  // every rank's cores together; placement spreads the routers over all of them
    opt.cores = c.cores * partition->ranks();
    opt.partition = partition;
  }
  Engine engine(c.topology, std::move(routers), traffic, opt);
  std::function<void(const EngineProgress&)> on_progress;
  if (progress) on_progress = [&](const EngineProgress& p) { progress(c, p); };
  const double t_engine = now_s();
  engine.run(c.duration + c.drain, on_progress);
  const double t_outputs = now_s();

  RunSummary s;
  if (partition && !gather_results(c, engine, traffic, *partition, &s.peak_rss_mb_by_rank)) {
    s.output_dir = c.output_dir;  // not rank 0: the outputs are rank 0's to write
    return s;
  }
  s.ranks = partition ? partition->ranks() : 1;
  s.phase_seconds.before = before;
  s.phase_seconds.setup = t_engine - t_setup;
  s.phase_seconds.engine = t_outputs - t_engine;
  s.output_dir = c.output_dir;
  s.flows = flows.size();
  s.timeslots = engine.now();
  s.cap = c.duration + c.drain;
  s.all_flows_done = engine.stopped_when_done();
  s.wall_seconds = engine.wall_seconds();
  s.router_packet_hops = engine.router_packet_hops();
  s.offered_load = wstats.offered_load;
  s.ack_queue = traffic.ack_queue_stats();
  s.nic_wait = traffic.nic_wait_stats();
  std::vector<uint32_t> lost(flows.size(), 0);
  for (uint32_t core = 0; core < opt.cores; ++core)  // counts: no need to merge and sort millions of drops
    for (const auto& e : engine.core_events(core))
      if (e.kind == PacketEvent::kDropped) {
        ++s.drops;
        if (e.flow < lost.size()) ++lost[e.flow];
      }
  const std::vector<PacketEvent> events = opt.packet_log ? engine.events() : std::vector<PacketEvent>{};  // packets.csv
  for (size_t i = 0; i < flows.size(); ++i) {
    if (traffic.finished(static_cast<uint32_t>(i)))
      ++s.finished;
    else if (lost[i])
      ++s.unfinished_lost;
    else
      ++s.unfinished_in_flight;
  }
  for (uint32_t r = 0; r < engine.num_routers(); ++r)
    for (PortId p = 0; p < engine.num_ports(r); ++p)
      for (QueueId q = 0; q < engine.queues_per_port(r); ++q) s.marks += engine.queue_counters(r, p, q).marked;

  s.losses = losses(engine, traffic.unexpected_arrivals());
  s.pfc = pfc_totals(engine);

  const fs::path dir(c.output_dir);
  write_flows_csv((dir / "flows.csv").string(), c.topology, c.network.timeslot_ns(), c.network.abstract_packet_bytes,
                  traffic, lost);
  write_flows_summary_csv((dir / "flows_summary.csv").string(), c.topology, c.network.timeslot_ns(), traffic);
  if (!deps.empty()) {
    write_send_list((dir / "sends.csv").string(), flows, deps);
    s.collective = write_collective_csv((dir / "collective.csv").string(), c.network.timeslot_ns(), traffic);
  }
  write_engine_outputs(c.output_dir, engine, opt, occupancy_file, traffic.unexpected_arrivals(), events);
  s.peak_rss_mb = peak_rss_mb();
  s.phase_seconds.outputs = now_s() - t_outputs;  // all but metadata.yaml itself
  write_metadata((dir / "metadata.yaml").string(), c, resolved, stamping.priority, wstats, s);
  return s;
}

}  // namespace flexplane
