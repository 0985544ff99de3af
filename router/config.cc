#include "router/config.h"

#include <algorithm>
#include <filesystem>

#include "emulator/config/config.h"
#include "emulator/config/yaml_util.h"
#include "router/fib.h"
#include "router/ipv4.h"

namespace flexplane::router {

namespace fs = std::filesystem;
using namespace yaml;

namespace {

void apply_port_level(const YAML::Node& node, PortSettings& s, const std::string& file, const std::string& path) {
  if (!node || node.IsNull()) return;
  check_keys(node, {"ip", "mac", "rate_mbps", "mtu_bytes", "router"}, file, path);
  if (node["ip"]) {
    const std::string v = get_string(node, "ip", "", file, path);
    if (!parse_prefix(v, &s.ip, &s.prefix_length) || s.prefix_length == 0 || s.prefix_length > 30 ||
        ipv4::martian_source(s.ip))
      throw ConfigError(where(file, node["ip"], path + ".ip") + ": '" + v +
                        "' is not a unicast address with a prefix length 1..30 (e.g. 10.1.0.1/24)");
    const uint32_t host = s.ip & ~(~0u << (32 - s.prefix_length));
    if (host == 0 || host == ~(~0u << (32 - s.prefix_length)))
      throw ConfigError(where(file, node["ip"], path + ".ip") + ": '" + v + "' is the subnet's network or broadcast address");
    s.has_ip = true;
  }
  if (node["mac"]) {
    const std::string v = get_string(node, "mac", "", file, path);
    if (!parse_mac(v, &s.mac) || (s.mac[0] & 1))
      throw ConfigError(where(file, node["mac"], path + ".mac") + ": '" + v + "' is not a unicast MAC address");
    s.has_mac = true;
  }
  s.rate_mbps = get_double(node, "rate_mbps", s.rate_mbps, 0, 1e7, file, path);
  s.mtu_bytes = static_cast<uint32_t>(get_uint(node, "mtu_bytes", s.mtu_bytes, 68, 9000, file, path));
  if (node["router"]) apply_router_level(node["router"], s.scheme, file, path + ".router");
  s.where = where(file, node, path);
}

}  // namespace

PortSettings RouterConfig::port(uint16_t id) const {
  PortSettings s;
  s.scheme = default_scheme;
  s.where = file + ": ports." + std::to_string(id);
  apply_port_level(default_port, s, file, "ports.default");
  auto it = port_nodes.find(id);
  if (it != port_nodes.end()) apply_port_level(it->second, s, file, "ports." + std::to_string(id));
  if (s.scheme.where.empty()) s.scheme.where = file + ": router";
  return s;
}

void check_router_mode(const PortSettings& port, const ResolvedRouter& built) {
  if (built.request_custom_bytes > 0)  // the mbuf travels in custom[0..1] (docs/design.md)
    throw ConfigError(port.scheme.where + ": scheme '" + built.scheme + "' reads " +
                      std::to_string(built.request_custom_bytes) +
                      " bytes of endpoint-stamped custom data, which real packets do not carry: router mode cannot "
                      "run it (run.queueing: false forwards without a scheme)");
  if (!built.load_balancer.empty() && built.load_balancer != "ecmp")  // each port's scheme sees one port
    throw ConfigError(port.scheme.where + ".load_balancer: router mode picks the output port by its route table "
                      "(routes:); a load balancer ('" + built.load_balancer + "') only runs in the emulator");
}

void RouterConfig::validate(std::optional<uint16_t> num_ports) const {
  // Ports: those the devices give, else those this config and its routes name.
  if (num_ports == uint16_t{0})
    throw ConfigError("no DPDK ports: give devices in the EAL arguments (e.g. --vdev net_af_packet0,iface=veth0)");
  if (num_ports)
    for (const auto& [id, node] : port_nodes)
      if (id >= *num_ports)
        throw ConfigError(where(file, node, "ports." + std::to_string(id)) + ": no such port (the EAL arguments " +
                          (*num_ports == 1 ? "create 1 port" : "create " + std::to_string(*num_ports) + " ports") +
                          ")");
  RouteSet routes;
  if (!routes_file.empty()) routes = load_routes(routes_file);
  uint32_t count = 0;
  if (num_ports) {
    count = *num_ports;
  } else {
    for (const auto& [id, node] : port_nodes) count = std::max<uint32_t>(count, id + 1u);
    for (const RouteEntry& r : routes.routes) count = std::max(count, static_cast<uint32_t>(r.port + 1));
    for (const StaticNeighbor& n : routes.neighbors) count = std::max(count, static_cast<uint32_t>(n.port + 1));
  }

  // Each port's scheme: parameters checked by building it once (the
  // default's too, so a bad default fails even with no port named), and
  // refused when router mode cannot run it. Ports not named in ports.N have
  // the default's settings.
  auto check_scheme = [&](const PortSettings& s) {
    ResolvedRouter built;
    build_router(s.scheme, &built);
    if (run.queueing) check_router_mode(s, built);
  };
  {
    PortSettings probe;
    probe.scheme = default_scheme;
    apply_port_level(default_port, probe, file, "ports.default");
    check_scheme(probe);
  }
  std::vector<PortAddress> addresses;
  for (uint32_t id = 0; id < count; ++id) {
    const PortSettings s = port(static_cast<uint16_t>(id));
    const auto node = port_nodes.find(static_cast<uint16_t>(id));
    if (node != port_nodes.end()) check_scheme(s);
    if (s.has_ip)
      for (uint32_t other = 0; other < id; ++other) {
        const PortAddress& o = addresses[other];
        if (!o.has_ip) continue;
        const uint32_t mask = ~0u << (32 - std::min(o.prefix_length, s.prefix_length));  // lengths 1..30
        if ((o.ip & mask) != (s.ip & mask)) continue;
        const bool own = node != port_nodes.end() && node->second["ip"];
        throw ConfigError(where(file, own ? node->second["ip"] : default_port["ip"],
                                own ? "ports." + std::to_string(id) + ".ip" : "ports.default.ip") +
                          ": subnet overlaps port " + std::to_string(other) + "'s " +
                          ipv4_str(o.ip) + "/" + std::to_string(o.prefix_length));
      }
    addresses.push_back({s.has_ip, s.ip, s.prefix_length});
  }

  // The routes against those ports, exactly as the start compiles them.
  NeighborTable neighbors(kRouterNeighbors);
  const size_t entries = compile_routes(routes, addresses, {}, neighbors).size();
  if (entries > kRouterMaxRoutes)
    throw ConfigError(routes_file + ": " + std::to_string(entries) + " routes (with connected and local ones) exceed " +
                      "the table's " + std::to_string(kRouterMaxRoutes));
}

RouterConfig parse_config(const YAML::Node& root, const std::string& file, const std::string& base_dir,
                          std::optional<uint16_t> num_ports) {
  RouterConfig c;
  c.file = file;
  c.resolved = YAML::Clone(root);
  if (!root.IsMap()) throw ConfigError(file + ": expected a mapping at the top level");
  check_keys(root, {"name", "seed", "router", "ports", "routes", "run", "output", "description"}, file, "");
  c.name = get_string(root, "name", "router", file, "name");
  // The name is a CSV cell and goes to terminals: no separators, quotes or control bytes.
  const bool control = std::any_of(c.name.begin(), c.name.end(), [](char ch) { return ch >= 0 && ch < 0x20; }) ||
                       c.name.find('\x7f') != std::string::npos;
  if (c.name.empty() || control || c.name.find_first_of(", \"") != std::string::npos)
    throw ConfigError(where(file, root["name"], "name") + ": '" + c.name +
                      "' must be non-empty, without commas, spaces, quotes or control characters");
  c.seed = get_uint(root, "seed", 1, 0, UINT64_MAX, file, "seed");

  c.default_scheme.where = file + ": router (default droptail)";
  if (const YAML::Node n = root["router"]) apply_router_level(n, c.default_scheme, file, "router");

  if (const YAML::Node n = root["ports"]) {
    require_map(n, file, "ports");
    for (const auto& kv : n) {
      const std::string key = kv.first.as<std::string>();
      if (key == "default") {
        c.default_port = kv.second;
        continue;
      }
      if (key.empty() || key.size() > 4 || key.find_first_not_of("0123456789") != std::string::npos)
        throw ConfigError(where(file, kv.first, "ports." + key) + ": ports are 'default' or a DPDK port id (0, 1, ...)");
      c.port_nodes[static_cast<uint16_t>(std::stoul(key))] = kv.second;
    }
  }
  if (root["routes"]) {
    const std::string rel = get_string(root, "routes", "", file, "routes");
    c.routes_file = fs::path(rel).is_absolute() ? rel : (fs::path(base_dir) / rel).string();
    require_input_file(c.routes_file, where(file, root["routes"], "routes"));
  }

  const YAML::Node run = root["run"] ? root["run"] : YAML::Node(YAML::NodeType::Map);
  check_keys(run, {"burst", "stats_interval_s", "occupancy_interval_us", "duration_s", "stop_when_idle_ms",
                   "drain_timeout_ms", "idle_sleep_us", "queueing", "wire_overhead_bytes", "pacing_slack_us",
                   "watch_routes", "ring_size", "mbufs"},
             file, "run");
  RunSettings& r = c.run;
  r.burst = static_cast<uint32_t>(get_uint(run, "burst", r.burst, 1, 512, file, "run"));
  r.stats_interval_s = get_double(run, "stats_interval_s", r.stats_interval_s, 0, 3600, file, "run");
  r.occupancy_interval_us = get_double(run, "occupancy_interval_us", r.occupancy_interval_us, 0, 1e9, file, "run");
  r.duration_s = get_double(run, "duration_s", r.duration_s, 0, 1e7, file, "run");
  r.stop_when_idle_ms = get_double(run, "stop_when_idle_ms", r.stop_when_idle_ms, 0, 1e7, file, "run");
  r.drain_timeout_ms = get_double(run, "drain_timeout_ms", r.drain_timeout_ms, 0, 1e7, file, "run");
  r.idle_sleep_us = static_cast<uint32_t>(get_uint(run, "idle_sleep_us", r.idle_sleep_us, 0, 1000000, file, "run"));
  r.queueing = get_bool(run, "queueing", r.queueing, file, "run");
  r.wire_overhead_bytes = static_cast<uint32_t>(get_uint(run, "wire_overhead_bytes", r.wire_overhead_bytes, 0, 256, file, "run"));
  r.pacing_slack_us = get_double(run, "pacing_slack_us", r.pacing_slack_us, 0, 1e6, file, "run");
  r.watch_routes = get_bool(run, "watch_routes", r.watch_routes, file, "run");
  r.ring_size = static_cast<uint32_t>(get_uint(run, "ring_size", r.ring_size, 64, 1u << 20, file, "run"));
  if (r.ring_size & (r.ring_size - 1))
    throw ConfigError(where(file, run["ring_size"], "run.ring_size") + ": " + std::to_string(r.ring_size) +
                      " is not a power of two");
  r.mbufs = static_cast<uint32_t>(get_uint(run, "mbufs", r.mbufs, 0, 1u << 24, file, "run"));

  if (const YAML::Node n = root["output"]) {
    check_keys(n, {"dir"}, file, "output");
    c.output_dir = get_string(n, "dir", "", file, "output");
  }
  if (c.output_dir.empty()) c.output_dir = "results/" + fs::path(file).stem().string();
  c.validate(num_ports);
  return c;
}

RouterConfig load_config(const std::string& path, std::optional<uint16_t> num_ports) {
  const YAML::Node root = load_file(path);
  return parse_config(root, path, fs::absolute(path).parent_path().string(), num_ports);
}

}  // namespace flexplane::router
