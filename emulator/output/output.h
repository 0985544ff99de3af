// Writers for a run's result files; formats are documented in
// docs/output-format.md (keep the two in step). Virtual-time runs write them
// all; live runs write those that do not need flows (counters, losses,
// occupancy, scheme statistics, packets).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "emulator/engine/engine.h"
#include "emulator/topology/topology.h"
#include "emulator/traffic/flow_traffic.h"

namespace flexplane {

void write_flows_csv(const std::string& path, const Topology& topology, double timeslot_ns, uint32_t packet_bytes,
                     const FlowTraffic& traffic, const std::vector<uint32_t>& lost_per_flow);
void write_occupancy_csv(const std::string& path, double timeslot_ns, const Engine& engine);
void write_scheme_stats_csv(const std::string& path, double timeslot_ns, const Engine& engine);
void write_counters_csv(const std::string& path, const Engine& engine);
void write_packets_csv(const std::string& path, const Engine& engine, const std::vector<PacketEvent>& events);

// Packets lost outside any queue, by kind (losses.csv, metadata.yaml).
struct Losses {
  struct Kind {
    const char* name;
    uint64_t packets;
  };
  // no_route, classifier_out_of_range, link_collision, no_link, misdelivered, unexpected_arrivals
  std::vector<Kind> kinds;
  uint64_t total() const;
};
// `unexpected`: packets that reached an endpoint where no flow expected them
// (FlowTraffic::unexpected_arrivals(); 0 where there are no flows).
Losses losses(const Engine& engine, uint64_t unexpected);
void write_losses_csv(const std::string& path, const Engine& engine, uint64_t unexpected);

// What every run writes from its engine into `dir`: counters.csv, losses.csv,
// and, when the options asked for them, occupancy.csv and scheme_stats.csv
// (occupancy_interval) and packets.csv (packet_log, from `events`).
void write_engine_outputs(const std::string& dir, const Engine& engine, const EngineOptions& options,
                          uint64_t unexpected, const std::vector<PacketEvent>& events);

}  // namespace flexplane
