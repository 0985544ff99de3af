// A run's configuration, loaded from YAML (reference: docs/config.md).
//
// One file describes an experiment: network, topology, the scheme of every
// router, endpoint behaviour, workload, run length and outputs. An optional
// `variants:` map names alternatives that are deep-merged over the base, so
// one file can compare schemes: each variant runs into its own folder.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "emulator/config/router_factory.h"
#include "emulator/topology/topology.h"
#include "emulator/traffic/closed_loop.h"
#include "emulator/workload/workload.h"
#include "net/ipv4_address.h"

namespace flexplane {

struct NetworkConfig {
  double link_rate_gbps = 10;
  uint32_t abstract_packet_bytes = 1500;  // one timeslot = this many bytes on one link
  double timeslot_ns() const { return abstract_packet_bytes * 8.0 / link_rate_gbps; }
};

// Live emulation (`flexplane-emulator live`): where the emulator listens and
// which address each endpoint has. Endpoints are identified by their IPv4
// source address: endpoint i has endpoint_ips[i]. Parsed and checked once, at
// load (unicast, distinct, none equal to emulator_ip; docs/live.md).
struct LiveConfig {
  net::Ipv4 emulator_ip{10, 77, 0, 2};    // answers ARP for this; receives the protocol's UDP
  uint16_t udp_port = 9977;               // docs/protocol.md
  std::vector<net::Ipv4> endpoint_ips;    // index = endpoint id; from `endpoint_ips` (list) or `first_endpoint_ip`
  uint32_t endpoint_queue_pkts = 4096;    // emulated NIC queue per endpoint
  bool sleep_when_ahead = true;           // real-time engine sleeps rather than spins when far ahead
  double max_lead_us = 0;                 // real-time engine may start a timeslot this early
  double stats_interval_s = 1;            // live counters printed and appended to live_stats.csv
};

struct RunConfig {
  std::string file;     // the config file (for messages)
  std::string variant;  // "" when the file has no variants
  uint64_t seed = 1;
  NetworkConfig network;
  Topology topology;
  // Per-router spec, resolved: router name > tier > default.
  std::vector<RouterSpec> router_specs;
  std::string endpoint_priority = "auto";  // auto | none | flow_size | remaining_size
  bool endpoint_ect = true;
  uint32_t endpoint_slack_ns = 0;  // endpoint.slack_us: stamped into Packet::custom[0] (LSTF), 0 = none
  TransportConfig transport;  // `transport:` (docs/config.md); kind none = open loop
  WorkloadSpec workload;
  Timeslot duration = 0;   // flow arrivals happen in [0, duration)
  Timeslot drain = 0;      // then this long for flows to finish
  bool stop_when_done = true;  // end before duration + drain once every flow is done and the network empty
  uint32_t cores = 1;
  bool lookahead = true;  // cores promise idle links ahead (results do not depend on it)
  RouterPlacement placement = RouterPlacement::kGrouped;  // which core runs each router (nor on this)
  Timeslot occupancy_interval = 0;
  std::string occupancy_file = "binary";  // output.occupancy: binary | csv | none (emulator/output/output.h)
  bool packet_log = false;
  std::string output_dir;  // resolved against the current directory
  LiveConfig live;
  YAML::Node resolved;     // the merged YAML of this run (for metadata)
};

struct Experiment {
  std::string file;
  std::vector<std::string> variant_names;  // every variant in the file, in file order (none: empty)
  std::vector<RunConfig> runs;             // one per variant loaded (or one)
};

// Parse the config (topology, schemes and their parameters, workload
// settings) without running; validate_run (emulator/run/setup.h) does the
// rest of what a run checks. Throws ConfigError naming file:line:col, the
// field and the value; an error inside a variant also names the variant.
// `only`: load just these variants (names not in the file are skipped: the
// caller reports them against variant_names); empty: every variant. The
// others' names are checked, their contents are not.
Experiment load_experiment(const std::string& path, const std::vector<std::string>& only = {});
// The same from text already read (`path` names it in messages; relative
// files resolve against base_dir). The fuzz target drives this.
Experiment load_experiment_text(const std::string& text, const std::string& path, const std::string& base_dir,
                                const std::vector<std::string>& only = {});
RunConfig parse_run(const YAML::Node& root, const std::string& file, const std::string& base_dir,
                    const std::string& variant);

// One level of router configuration (a `routers:` default, tier or name; router
// mode's `router:`) applied onto `spec`: keys scheme, classifier,
// queue_manager, scheduler, router. Naming another scheme or component starts
// it afresh; parameters at this level override broader ones. Throws
// ConfigError naming `file`, `path` and the field.
void apply_router_level(const YAML::Node& node, RouterSpec& spec, const std::string& file, const std::string& path);
// One component key (a name, or a map with `name` and parameters) onto `spec`.
void parse_component(const YAML::Node& node, ComponentSpec& spec, const std::string& file, const std::string& path);

}  // namespace flexplane
