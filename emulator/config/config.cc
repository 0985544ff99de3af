#include "emulator/output/output.h"
#include "emulator/config/config.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "api/endpoint_contract.h"
#include "emulator/config/yaml_util.h"
#include "net/ipv4_address.h"
#include "emulator/workload/collective.h"
#include "emulator/workload/traffic_pattern.h"

namespace flexplane {

namespace fs = std::filesystem;
using namespace yaml;

namespace {

Timeslot us_to_timeslots(double us, const NetworkConfig& net) {
  return static_cast<Timeslot>(std::llround(us * 1000.0 / net.timeslot_ns()));
}

Topology parse_topology(const YAML::Node& node, const std::string& file, const std::string& base_dir) {
  const std::string path = "topology";
  if (!node) throw ConfigError(file + ": missing 'topology' section");
  require_map(node, file, path);
  YAML::Node t = node;
  std::string tfile = file;
  if (node["file"]) {  // a topology file, with optional overrides beside `file:`
    const std::string rel = get_string(node, "file", "", file, path);
    const fs::path p = fs::path(rel).is_absolute() ? fs::path(rel) : fs::path(base_dir) / rel;
    require_input_file(p.string(), where(file, node["file"], path + ".file"));
    YAML::Node over(YAML::NodeType::Map);  // the overrides, sharing the config's nodes (their marks)
    for (const auto& kv : node)
      if (kv.first.Scalar() != "file") over.force_insert(kv.first, kv.second);
    t = load_file(p.string());
    merge_into(t, over);
    check_merged(t, p.string());
    tfile = p.string();
  }
  require_map(t, tfile, path);
  const std::string kind = get_string(t, "kind", "", tfile, path);
  const ComponentInfo<TopologyKind>& info =
      Registry<TopologyKind>::instance().get(kind, where(tfile, t["kind"], path + ".kind"));
  // Every other key is a parameter of the kind (`description` is a comment).
  ParamValues values = to_params(t, "kind", tfile, path);
  std::erase_if(values.entries, [](const auto& kv) { return kv.first == "description"; });
  values.where = where(tfile, t, path);
  Topology topo = info.make(values, nullptr)->build();
  topo.kind = kind;
  return topo;
}


std::vector<RouterSpec> parse_routers(const YAML::Node& node, const Topology& topo, const std::string& file) {
  std::vector<RouterSpec> specs(topo.routers.size());
  if (!node) {
    for (auto& s : specs) s.where = file + ": routers (default droptail)";
    return specs;
  }
  require_map(node, file, "routers");
  for (const auto& kv : node) {  // every key must be default, a tier or a router name
    const std::string key = kv.first.as<std::string>();
    bool known = key == "default";
    for (const auto& r : topo.routers) known = known || key == r.name || key == r.tier;
    if (!known) {
      std::string names = "default", tiers;
      for (const auto& r : topo.routers) names += ", " + r.name;
      for (const auto& t : topo.tiers()) tiers += (tiers.empty() ? "" : ", ") + t;
      throw ConfigError(where(file, kv.first, "routers." + key) + ": no router or tier named '" + key +
                        "' in this topology (tiers: " + tiers + "; routers: " + names + ")");
    }
  }
  for (size_t i = 0; i < topo.routers.size(); ++i) {
    const auto& r = topo.routers[i];
    specs[i].where = file + ": routers";
    for (const std::string& level : {std::string("default"), r.tier, r.name})
      if (node[level]) apply_router_level(node[level], specs[i], file, "routers." + level);
  }
  return specs;
}

// live: addresses, read with the one strict parser (net/ipv4_address.h) and
// checked here, before anything starts: each a unicast address, endpoint i =
// first_endpoint_ip + i without running past 255.255.255.255, no address
// twice (the endpoints' among themselves and against emulator_ip).
net::Ipv4 live_address(const YAML::Node& node, const std::string& text, const std::string& file,
                       const std::string& field) {
  const auto a = net::parse_ipv4(text);
  if (!a)
    throw ConfigError(where(file, node, field) + ": '" + text +
                      "' is not an IPv4 address (a.b.c.d, each 0..255 without leading zeros)");
  if (const char* why = net::not_unicast(*a)) throw ConfigError(where(file, node, field) + ": " + text + " is " + why);
  return *a;
}

LiveConfig parse_live(const YAML::Node& n, uint32_t num_endpoints, const std::string& file) {
  LiveConfig live;
  net::Ipv4 first(10, 77, 0, 10);  // endpoint i at 10.77.0.10 + i unless told otherwise
  YAML::Node at;                    // where endpoint address errors point
  if (n) at.reset(n);
  std::string field = "live.first_endpoint_ip";
  bool listed = false;
  if (n) {
    check_keys(n, {"emulator_ip", "udp_port", "endpoint_ips", "first_endpoint_ip", "endpoint_queue_pkts",
                   "sleep_when_ahead", "max_lead_us", "stats_interval_s"},
               file, "live");
    if (n["emulator_ip"])
      live.emulator_ip = live_address(n["emulator_ip"], get_string(n, "emulator_ip", "", file, "live"), file,
                                      "live.emulator_ip");
    live.udp_port = static_cast<uint16_t>(get_uint(n, "udp_port", live.udp_port, 1, 65535, file, "live"));
    live.endpoint_queue_pkts = static_cast<uint32_t>(get_uint(n, "endpoint_queue_pkts", 4096, 1, 1 << 24, file, "live"));
    live.sleep_when_ahead = get_bool(n, "sleep_when_ahead", true, file, "live");
    live.max_lead_us = get_double(n, "max_lead_us", 0, 0, 1e6, file, "live");
    live.stats_interval_s = get_double(n, "stats_interval_s", 1, 0.01, 3600, file, "live");
    if (n["endpoint_ips"] && n["first_endpoint_ip"])
      throw ConfigError(where(file, n, "live") + ": give endpoint_ips or first_endpoint_ip, not both");
    if (const YAML::Node list = n["endpoint_ips"]) {
      if (!list.IsSequence() || list.size() != num_endpoints)
        throw ConfigError(where(file, list, "live.endpoint_ips") + ": expected a list of " +
                          std::to_string(num_endpoints) + " addresses (one per endpoint)");
      listed = true;
    } else if (n["first_endpoint_ip"]) {
      at.reset(n["first_endpoint_ip"]);  // reset rebinds; `=` would overwrite the node it refers to
      first = live_address(at, get_string(n, "first_endpoint_ip", "", file, "live"), file, field);
    }
  }
  std::map<net::Ipv4, uint32_t> owner;  // address -> endpoint
  for (uint32_t e = 0; e < num_endpoints; ++e) {
    net::Ipv4 a;
    if (listed) {
      at.reset(n["endpoint_ips"][e]);
      field = "live.endpoint_ips[" + std::to_string(e) + "]";
      a = live_address(at, at.IsScalar() ? at.Scalar() : std::string("(not a single value)"), file, field);
    } else {
      const uint64_t v = uint64_t{first.host} + e;
      if (v > 0xFFFFFFFFu)
        throw ConfigError(where(file, at, field) + ": " + first.str() + " + " + std::to_string(num_endpoints - 1) +
                          " (endpoint i is first_endpoint_ip + i) runs past 255.255.255.255");
      a = net::Ipv4(static_cast<uint32_t>(v));
      if (const char* why = net::not_unicast(a))
        throw ConfigError(where(file, at, field) + ": endpoint " + std::to_string(e) + " would be " + a.str() +
                          ", " + why);
    }
    const std::string is = listed ? a.str() + " is" : "endpoint " + std::to_string(e) + " would be " + a.str() + ",";
    if (a == live.emulator_ip) {
      if (!listed && !(n && n["first_endpoint_ip"]))  // the default endpoints meet a given emulator_ip
        throw ConfigError(where(file, n["emulator_ip"], "live.emulator_ip") + ": " + a.str() + " is endpoint " +
                          std::to_string(e) + "'s address (first_endpoint_ip defaults to 10.77.0.10)");
      throw ConfigError(where(file, at, field) + ": " + is + " live.emulator_ip's address");
    }
    const auto [it, fresh] = owner.emplace(a, e);
    if (!fresh)
      throw ConfigError(where(file, at, field) + ": " + is + " endpoint " + std::to_string(it->second) +
                        "'s address too");
    live.endpoint_ips.push_back(a);
  }
  return live;
}

// `transport: {kind: none|newreno|reno|ecn|dctcp|pfabric, ack_latency: data_path|propagation,
//              ack_queueing: none|delay|delay_and_loss, ack_queueing_nic: bool, nic: fifo|round_robin,
//              <TransportParams>}`.
TransportConfig parse_transport(const YAML::Node& n, const NetworkConfig& net, const std::string& file) {
  TransportConfig t;
  if (!n) return t;
  require_map(n, file, "transport");
  std::string kind = get_string(n, "kind", "none", file, "transport");
  if (kind == "none") return t;  // other keys are ignored, so a variant can switch a base's transport off
  if (kind == "newreno") kind = "reno";
  t.enabled = true;
  try {
    t.kind = parse_transport_kind(kind, where(file, n["kind"], "transport.kind"));
  } catch (const ConfigError& e) {
    throw ConfigError(std::string(e.what()) + "; or none, newreno");
  }
  t.ack_latency = parse_ack_latency(get_string(n, "ack_latency", "data_path", file, "transport"),
                                    where(file, n["ack_latency"] ? n["ack_latency"] : n, "transport.ack_latency"));
  t.ack_queueing = parse_ack_queueing(get_string(n, "ack_queueing", "none", file, "transport"),
                                      where(file, n["ack_queueing"] ? n["ack_queueing"] : n, "transport.ack_queueing"));
  t.ack_queueing_nic = get_bool(n, "ack_queueing_nic", true, file, "transport");
  t.nic = parse_nic_mode(get_string(n, "nic", "fifo", file, "transport"),
                         where(file, n["nic"] ? n["nic"] : n, "transport.nic"));
  YAML::Node params(YAML::NodeType::Map);  // the parameters, sharing the config's nodes (a Clone says 1:1)
  for (const auto& kv : n) {
    const std::string key = kv.first.Scalar();
    if (key != "ack_latency" && key != "ack_queueing" && key != "ack_queueing_nic" && key != "nic")
      params.force_insert(kv.first, kv.second);
  }
  ParamValues values = to_params(params, "kind", file, "transport");
  values.where = where(file, n, "transport");
  t.params = transport_param_schema().parse(values, std::string("transport ") + transport_kind_name(t.kind));
  if (t.params.ack_every_pkts != 1)
    throw ConfigError(where(file, n["ack_every_pkts"], "transport.ack_every_pkts") +
                      ": delayed ACKs are modelled (transports/receiver.h) but not yet driven by the engine; use 1");
  t.params.validate_for(t.kind, where(file, n["sack"] ? n["sack"] : n, "transport.sack"));
  // Timers count whole timeslots (rounded up): a timeout shorter than one
  // timeslot cannot mean what it says (most likely a unit slip), so it is an
  // error, not a silent round-up. 0 means "derive it" where the doc says so.
  const double ts_us = net.timeslot_ns() / 1000.0;
  const struct {
    const char* key;
    double us;
    bool zero_derives;
  } timers[] = {{"min_rto_us", t.params.min_rto_us, false},
                {"max_rto_us", t.params.max_rto_us, false},
                {"initial_rto_us", t.params.initial_rto_us, true},
                {"pfabric_rto_us", t.params.pfabric_rto_us, true}};
  for (const auto& timer : timers)
    if (timer.us < ts_us && !(timer.zero_derives && timer.us == 0)) {
      std::ostringstream os;
      os << where(file, n[timer.key] ? n[timer.key] : n, std::string("transport.") + timer.key) << ": " << timer.us
         << " us" << (n[timer.key] ? "" : " (the default)") << " is shorter than one timeslot (" << ts_us
         << " us at " << net.link_rate_gbps << " Gb/s and " << net.abstract_packet_bytes
         << " bytes): timeouts count whole timeslots";
      throw ConfigError(os.str());
    }
  return t;
}

}  // namespace

void parse_component(const YAML::Node& node, ComponentSpec& spec, const std::string& file, const std::string& path) {
  // Naming a (different) component starts its parameters afresh: values set
  // at a broader level were meant for the component named there.
  auto rename = [&](const std::string& name) {
    if (name != spec.name) spec.params = ParamValues{};
    spec.name = name;
  };
  if (node.IsScalar()) {  // shorthand: `scheduler: drr`
    rename(node.Scalar());
    return;
  }
  require_map(node, file, path);
  if (node["name"]) rename(get_string(node, "name", "", file, path));
  ParamValues extra = to_params(node, "name", file, path);
  for (auto& kv : extra.entries) spec.params.set(kv.first, kv.second, extra.where_of(kv.first));  // later levels override earlier
}

// Apply one level of router config (default, tier or name) onto `spec`.
void apply_router_level(const YAML::Node& node, RouterSpec& spec, const std::string& file, const std::string& path) {
  check_keys(node, {"scheme", "classifier", "queue_manager", "scheduler", "router", "load_balancer", "pfc"}, file, path);
  if (node["scheme"]) {
    const std::string scheme = get_string(node, "scheme", "", file, path);
    // Switching scheme resets the components (names and parameters) chosen at
    // broader levels: they belonged to the other scheme.
    if (scheme != spec.scheme) spec.classifier = spec.queue_manager = spec.scheduler = ComponentSpec{};
    spec.scheme = scheme;
  }
  if (node["classifier"]) parse_component(node["classifier"], spec.classifier, file, path + ".classifier");
  if (node["queue_manager"]) parse_component(node["queue_manager"], spec.queue_manager, file, path + ".queue_manager");
  if (node["scheduler"]) parse_component(node["scheduler"], spec.scheduler, file, path + ".scheduler");
  // Not part of a scheme: a scheme switch keeps it.
  if (node["load_balancer"]) parse_component(node["load_balancer"], spec.load_balancer, file, path + ".load_balancer");
  // Lossless (api/pfc.h): `pfc: {xoff_pkts: 32, ...}` (parameters merge over
  // broader levels'), `pfc: on` for the defaults, `pfc: off` to leave it out.
  if (const YAML::Node pfc = node["pfc"]) {
    if (pfc.IsScalar()) {
      spec.pfc = get_bool(node, "pfc", false, file, path);
    } else {
      spec.pfc = true;
      ParamValues extra = to_params(pfc, nullptr, file, path + ".pfc");
      for (auto& kv : extra.entries) spec.pfc_params.set(kv.first, kv.second, extra.where_of(kv.first));
    }
  }
  if (node["router"]) {
    ComponentSpec generic;
    parse_component(node["router"], generic, file, path + ".router");
    spec.router = generic.name;
    spec.router_params = generic.params;
  }
  spec.where = where(file, node, path);
}

RunConfig parse_run(const YAML::Node& root, const std::string& file, const std::string& base_dir,
                    const std::string& variant) {
  RunConfig c;
  c.file = file;
  c.variant = variant;
  c.resolved = YAML::Clone(root);
  check_keys(root, {"seed", "network", "topology", "routers", "endpoint", "workload", "run", "output", "variants",
                    "description", "live", "transport"},
             file, "");
  c.seed = get_uint(root, "seed", 1, 0, UINT64_MAX, file, "seed");

  if (const YAML::Node n = root["network"]) {
    check_keys(n, {"link_rate_gbps", "abstract_packet_bytes"}, file, "network");
    c.network.link_rate_gbps = get_double(n, "link_rate_gbps", 10, 1e-3, 1e4, file, "network");
    c.network.abstract_packet_bytes =
        static_cast<uint32_t>(get_uint(n, "abstract_packet_bytes", 1500, 64, 65535, file, "network"));
  }

  c.topology = parse_topology(root["topology"], file, base_dir);
  c.router_specs = parse_routers(root["routers"], c.topology, file);
  // Build every router once now so unknown schemes and bad parameters fail at load time.
  for (const auto& spec : c.router_specs) build_router(spec);

  if (const YAML::Node n = root["endpoint"]) {
    check_keys(n, {"priority", "ect", "slack_us"}, file, "endpoint");
    c.endpoint_priority = get_string(n, "priority", "auto", file, "endpoint");
    if (c.endpoint_priority != "auto") parse_priority_stamp(c.endpoint_priority, where(file, n["priority"], "endpoint.priority"));
    c.endpoint_ect = get_bool(n, "ect", true, file, "endpoint");
    c.endpoint_slack_ns = static_cast<uint32_t>(std::llround(get_double(n, "slack_us", 0, 0, 4e6, file, "endpoint") * 1e3));
  }

  c.transport = parse_transport(root["transport"], c.network, file);

  if (const YAML::Node n = root["run"]) {
    check_keys(n, {"duration_ms", "drain_ms", "cores", "lookahead", "placement", "occupancy_interval_us", "packet_log",
                   "stop_when_done"}, file, "run");
  }
  const YAML::Node run = root["run"] ? root["run"] : YAML::Node(YAML::NodeType::Map);
  const double duration_ms = get_double(run, "duration_ms", 5, 1e-6, 1e6, file, "run");
  const double drain_ms = get_double(run, "drain_ms", duration_ms, 0, 1e6, file, "run");
  c.duration = std::max<Timeslot>(1, us_to_timeslots(duration_ms * 1000, c.network));
  c.drain = us_to_timeslots(drain_ms * 1000, c.network);
  c.cores = static_cast<uint32_t>(get_uint(run, "cores", 1, 1, 256, file, "run"));
  c.lookahead = get_bool(run, "lookahead", true, file, "run");
  const std::string placement = get_string(run, "placement", "grouped", file, "run");
  if (!parse_router_placement(placement, &c.placement))
    throw ConfigError(where(file, run["placement"], "run.placement") + ": must be grouped or round_robin, got '" +
                      placement + "'");
  const double occ_us = get_double(run, "occupancy_interval_us", 0, 0, 1e9, file, "run");
  c.occupancy_interval = occ_us > 0 ? std::max<Timeslot>(1, us_to_timeslots(occ_us, c.network)) : 0;
  c.packet_log = get_bool(run, "packet_log", false, file, "run");
  c.stop_when_done = get_bool(run, "stop_when_done", true, file, "run");

  if (!root["workload"]) throw ConfigError(file + ": missing 'workload' section");
  require_map(root["workload"], file, "workload");
  YAML::Node wl(YAML::NodeType::Map);  // shares the config's nodes (their marks), plus the run's defaults
  for (const auto& kv : root["workload"]) wl.force_insert(kv.first, kv.second);
  // A collective has neither arrivals nor draws: run.duration_ms + drain_ms only caps it.
  const YAML::Node& cwl = wl;
  const bool collective = cwl["kind"] && cwl["kind"].IsScalar() && cwl["kind"].Scalar() == "collective";
  if (!wl["duration_timeslots"] && !collective) wl["duration_timeslots"] = c.duration;
  if (!wl["seed"] && !collective) wl["seed"] = c.seed;
  c.workload = parse_workload(wl, where(file, root["workload"], "workload"), base_dir, file);
  if (c.workload.kind == WorkloadKind::kCollective && c.workload.sends_path.empty() && c.workload.shape.ranks == 0)
    c.workload.shape.ranks = (c.topology.num_endpoints - 1) / c.workload.shape.rank_stride + 1;  // as many as fit

  c.live = parse_live(root["live"], c.topology.num_endpoints, file);

  if (const YAML::Node n = root["output"]) {
    check_keys(n, {"dir", "occupancy"}, file, "output");
    c.output_dir = get_string(n, "dir", "", file, "output");
    if (n["dir"] && c.output_dir.empty())
      throw ConfigError(where(file, n["dir"], "output.dir") + ": empty (leave the key out for results/<config name>)");
    c.occupancy_file = get_string(n, "occupancy", "binary", file, "output");
    parse_occupancy_file(c.occupancy_file, where(file, n["occupancy"], "output.occupancy"));
  }
  if (c.output_dir.empty()) c.output_dir = "results/" + fs::path(file).stem().string();
  if (!variant.empty()) c.output_dir = (fs::path(c.output_dir) / variant).string();
  return c;
}

namespace {

// What a variant makes stale in the base before the two merge: naming
// another scheme, component, topology kind or traffic pattern starts it
// afresh (as apply_router_level does across router levels), so the base's
// settings for the old one do not follow it into the variant.
void drop_stale(YAML::Node& base, const YAML::Node& over, const std::string& path) {
  auto switches = [&](const char* key) {
    const YAML::Node& cb = base;
    return over[key] && over[key].IsScalar() && !(cb[key] && cb[key].IsScalar() && cb[key].Scalar() == over[key].Scalar());
  };
  auto drop = [&](const std::function<bool(const std::string&)>& stale) {
    std::vector<std::string> keys;
    for (const auto& kv : base)
      if (stale(kv.first.Scalar())) keys.push_back(kv.first.Scalar());
    for (const auto& k : keys) base.remove(k);
  };
  const size_t dots = static_cast<size_t>(std::count(path.begin(), path.end(), '.'));
  const std::string head = path.substr(0, path.find('.'));
  if (head == "routers" && dots == 1 && switches("scheme")) {  // routers.<level>
    drop([](const std::string& k) { return k == "classifier" || k == "queue_manager" || k == "scheduler" || k == "router"; });
  } else if (head == "routers" && dots == 2 && switches("name")) {  // routers.<level>.<component>
    drop([](const std::string&) { return true; });
  } else if (path == "topology" && switches("kind")) {
    drop([](const std::string&) { return true; });
  } else if (path == "workload") {
    const YAML::Node& cb = base;
    const std::string old_pattern = cb["pattern"] && cb["pattern"].IsScalar() ? cb["pattern"].Scalar() : "all_to_all";
    const auto* info = Registry<TrafficPattern>::instance().find(old_pattern);
    auto pattern_param = [&](const std::string& k) {
      if (!info) return false;
      for (const auto& d : info->params)
        if (d.name == k) return true;
      return false;
    };
    const bool to_trace = switches("kind") && over["kind"].Scalar() == "trace";
    const bool to_collective = switches("kind") && over["kind"].Scalar() == "collective";
    const bool to_poisson = switches("kind") && !to_trace && !to_collective;
    if (switches("pattern") || to_trace || to_collective) drop(pattern_param);
    if (to_trace || to_collective)
      drop([](const std::string& k) {
        return k == "pattern" || k == "load" || k == "size_cdf" || k == "fixed_size_pkts" || k == "max_flows" ||
               k == "trace";
      });
    if (to_poisson || to_trace)  // a collective's keys and its parameters
      drop([](const std::string& k) {
        static const char* kKeys[] = {"collective", "sends", "ranks", "rank_stride", "message_pkts", "iterations",
                                      "compute_gap_timeslots"};
        if (std::find(std::begin(kKeys), std::end(kKeys), k) != std::end(kKeys)) return true;
        for (const auto& [name, info] : Registry<Collective>::instance().all())
          for (const auto& d : info.params)
            if (d.name == k) return true;
        return false;
      });
    if (to_poisson || to_collective) drop([](const std::string& k) { return k == "trace"; });
    // Within kind collective: a send list replaces a generated collective and the reverse.
    if (over["sends"] && !to_poisson && !to_trace)
      drop([](const std::string& k) {
        if (k == "collective" || k == "ranks" || k == "rank_stride" || k == "message_pkts" || k == "iterations" ||
            k == "compute_gap_timeslots")
          return true;
        for (const auto& [name, info] : Registry<Collective>::instance().all())
          for (const auto& d : info.params)
            if (d.name == k) return true;
        return false;
      });
    if (over["collective"] && !to_poisson && !to_trace) drop([](const std::string& k) { return k == "sends"; });
  }
}

void check_variant_name(const std::string& name, const YAML::Node& key, const std::string& file) {
  if (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") !=
                          std::string::npos || name[0] == '.')
    throw ConfigError(where(file, key, "variants." + name) +
                      ": variant names may use letters, digits, '_', '-' and '.' only (they name folders)");
}

}  // namespace

Experiment load_experiment(const std::string& path, const std::vector<std::string>& only) {
  return load_experiment_text(read_file_text(path), path, fs::absolute(path).parent_path().string(), only);
}

Experiment load_experiment_text(const std::string& text, const std::string& path, const std::string& base_dir,
                                const std::vector<std::string>& only) {
  Experiment e;
  e.file = path;
  const YAML::Node root = parse_yaml(text, path);
  if (!root.IsMap()) throw ConfigError(path + ": expected a mapping at the top level");
  const YAML::Node variants = root["variants"];
  if (!variants) {
    e.runs.push_back(parse_run(root, path, base_dir, ""));
    return e;
  }
  require_map(variants, path, "variants");
  if (variants.size() == 0) throw ConfigError(where(path, variants, "variants") + ": empty");
  for (const auto& kv : variants) {
    const std::string name = kv.first.Scalar();
    check_variant_name(name, kv.first, path);
    if (!kv.second.IsNull() && !kv.second.IsMap())
      throw ConfigError(where(path, kv.second, "variants." + name) + ": expected a mapping of overrides");
    e.variant_names.push_back(name);
  }
  for (const std::string& name : e.variant_names) {
    if (!only.empty() && std::find(only.begin(), only.end(), name) == only.end()) continue;
    // A fresh parse per variant: merge_into changes the base in place and
    // shares the variant's nodes, so every value keeps its line and column.
    YAML::Node base = parse_yaml(text, path);
    const YAML::Node over = base["variants"][name];
    base.remove("variants");
    merge_into(base, over, "", drop_stale);
    try {
      check_merged(base, path);
      e.runs.push_back(parse_run(base, path, base_dir, name));
    } catch (const ConfigError& err) {
      throw ConfigError(std::string(err.what()) + " (in variant '" + name + "')");
    }
  }
  return e;
}

}  // namespace flexplane
