// flexplane-router's configuration, from one YAML file (reference: docs/router.md).
//
//   name: r0                              # router name in the CSVs (default "router")
//   seed: 1                               # the schemes' random streams
//   router: {scheme: dctcp, queue_manager: {k_pkts: 20}}   # the emulator's routers.<name> keys
//   ports:
//     default: {rate_mbps: 0, mtu_bytes: 1500}
//     0: {ip: 10.1.0.1/24}
//     1: {ip: 10.2.0.1/24, rate_mbps: 100, router: {queue_manager: {k_pkts: 10}}}
//   routes: routes.txt                    # relative to this file (routes.h)
//   run: {burst: 64, stats_interval_s: 1, occupancy_interval_us: 0, ...}
//   output: {dir: results/router}
//
// Ports are the DPDK ports the EAL arguments create, by id.
//
// Validation: validate() is the one path that checks a config; `--check` and
// the real start both run it before the EAL starts (with the number of ports
// the EAL arguments imply, when that is known), and the start runs it again
// with the devices the EAL created, before any port is configured.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "emulator/config/router_factory.h"
#include "router/routes.h"

namespace flexplane::router {

struct PortSettings {
  bool has_ip = false;
  uint32_t ip = 0;  // host order
  uint8_t prefix_length = 0;
  bool has_mac = false;
  Mac mac{};
  double rate_mbps = 0;    // output line rate; 0 = unpaced (as fast as the device takes packets)
  uint32_t mtu_bytes = 1500;  // largest IP packet sent on the port
  RouterSpec scheme;       // this port's queueing: `router` then `ports.default.router` then `ports.N.router`
  std::string where;       // "file:line: ports.N" for messages
};

struct RunSettings {
  uint32_t burst = 64;                 // packets per rx/tx burst (1..512)
  double stats_interval_s = 1;         // live counters on stderr and in stats.csv; 0 = off
  double occupancy_interval_us = 0;    // per-port backlog samples in occupancy.csv; 0 = off
  double duration_s = 0;               // stop after this long; 0 = at SIGINT/SIGTERM
  double stop_when_idle_ms = 0;        // stop once nothing arrived for this long and queues are empty; 0 = never
  double drain_timeout_ms = 1000;      // at stop, keep sending queued packets this long
  uint32_t idle_sleep_us = 0;          // a worker with nothing to do sleeps this long; 0 = busy poll
  bool queueing = true;                // false: forward straight to tx, no scheme, no pacing (baseline)
  uint32_t wire_overhead_bytes = 24;   // per frame on the wire beyond the mbuf: FCS 4 + preamble 8 + gap 12
  double pacing_slack_us = 20;         // credit an idle or late port may catch up on
  bool watch_routes = true;            // reload the routes file when it changes (SIGHUP always reloads)
  uint32_t ring_size = 4096;           // hand-off rings between workers (power of two)
  uint32_t mbufs = 0;                  // mbuf pool size; 0 = enough for every queue of every port
};

struct RouterConfig {
  std::string file;
  std::string name = "router";
  uint64_t seed = 1;
  RouterSpec default_scheme;
  YAML::Node default_port;                  // ports.default (may be null)
  std::map<uint16_t, YAML::Node> port_nodes;  // ports.N
  std::string routes_file;                  // absolute or relative to the working directory
  RunSettings run;
  std::string output_dir;
  YAML::Node resolved;  // the file as loaded (for metadata)

  // Settings of port `id` (ports.default, then ports.<id>). Throws ConfigError.
  PortSettings port(uint16_t id) const;
  // Everything checkable without the devices up, given how many ports exist
  // (nullopt: unknown, so the ports are those the config and routes name):
  // ports.N and every `port N` of the routes name an existing port; every
  // port's scheme builds and can run on real packets; the routes file is a
  // readable file whose lines compile against the ports' addresses (gateways
  // in a connected subnet, none the router's own address). Throws ConfigError.
  void validate(std::optional<uint16_t> num_ports) const;
};

// A scheme router mode cannot run (it reads endpoint-stamped custom data
// that real packets do not carry): throws ConfigError naming the port.
void check_router_mode(const PortSettings& port, const ResolvedRouter& built);

// Parse, then validate(num_ports).
RouterConfig load_config(const std::string& path, std::optional<uint16_t> num_ports = std::nullopt);
RouterConfig parse_config(const YAML::Node& root, const std::string& file, const std::string& base_dir,
                          std::optional<uint16_t> num_ports = std::nullopt);

}  // namespace flexplane::router
