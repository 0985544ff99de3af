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

#include "emulator/flow_traffic.h"
#include "emulator/router_factory.h"
#include "emulator/topology.h"
#include "emulator/workload.h"

namespace flexplane {

struct NetworkConfig {
  double link_rate_gbps = 10;
  uint32_t abstract_packet_bytes = 1500;  // one timeslot = this many bytes on one link
  double timeslot_ns() const { return abstract_packet_bytes * 8.0 / link_rate_gbps; }
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
  WorkloadSpec workload;
  Timeslot duration = 0;   // flow arrivals happen in [0, duration)
  Timeslot drain = 0;      // then this long for flows to finish
  uint32_t cores = 1;
  Timeslot occupancy_interval = 0;
  bool packet_log = false;
  std::string output_dir;  // resolved against the current directory
  YAML::Node resolved;     // the merged YAML of this run (for metadata)
};

struct Experiment {
  std::string file;
  std::vector<RunConfig> runs;  // one per variant (or one)
};

// Parse and validate everything (topology, schemes and their parameters,
// workload) without running. Throws ConfigError naming file:line, field, value.
Experiment load_experiment(const std::string& path);
RunConfig parse_run(const YAML::Node& root, const std::string& file, const std::string& base_dir,
                    const std::string& variant);

}  // namespace flexplane
