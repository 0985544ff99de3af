// Writers for a run's result files; formats are documented in
// docs/output-format.md (keep the two in step).
#pragma once

#include <string>
#include <vector>

#include "emulator/config/config.h"
#include "emulator/engine/engine.h"
#include "emulator/traffic/flow_traffic.h"

namespace flexplane {

void write_flows_csv(const std::string& path, const RunConfig& c, const FlowTraffic& traffic,
                     const std::vector<uint32_t>& lost_per_flow);
void write_occupancy_csv(const std::string& path, const RunConfig& c, const Engine& engine);
void write_counters_csv(const std::string& path, const Engine& engine);
void write_packets_csv(const std::string& path, const Engine& engine, const std::vector<PacketEvent>& events);

}  // namespace flexplane
