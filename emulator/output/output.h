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
// Sampled backlog (run.occupancy_file): occupancy.bin, compact and written
// straight from the engine's per-router traces (the default); occupancy.csv,
// one row per (time, router, port), for small runs; or none. Either way
// occupancy_summary.csv (per-port percentiles from the histograms) is written.
enum class OccupancyFile { kBinary, kCsv, kNone };
OccupancyFile parse_occupancy_file(const std::string& name, const std::string& where);  // binary | csv | none
const char* occupancy_file_name(OccupancyFile f);
void write_occupancy_bin(const std::string& path, double timeslot_ns, Timeslot interval, const Engine& engine);
void write_occupancy_csv(const std::string& path, double timeslot_ns, const Engine& engine);
void write_occupancy_summary_csv(const std::string& path, const Engine& engine);
// Nearest-rank percentile (0 < q <= 1) of a histogram [value] -> count.
uint64_t histogram_percentile(const std::vector<uint64_t>& histogram, uint64_t total, double q);

// Per-flow FCT summary by flow-size bucket (flows_summary.csv).
void write_flows_summary_csv(const std::string& path, const Topology& topology, double timeslot_ns,
                             const FlowTraffic& traffic);

// A collective's iterations (collective.csv, emulator/output/collective_output.cc):
// per iteration label, when its first flow was released and its last
// received in full. Zeros without dependencies.
struct CollectiveSummary {
  uint32_t iterations = 0;          // labels in the workload
  uint32_t completed = 0;           // iterations whose every flow finished, as did every earlier one's
  double mean_iteration_us = 0;     // over completed ones: end - previous end (the first: from 0)
  double max_iteration_us = 0;
  double end_us = 0;                // the last completed iteration's end
};
CollectiveSummary write_collective_csv(const std::string& path, double timeslot_ns, const FlowTraffic& traffic);

// Creates `dir` (and parents) and checks a file can be written in it, before
// a run starts; throws ConfigError (a bad output.dir / --out) naming the folder and the reason.
void prepare_output_dir(const std::string& dir);
void write_scheme_stats_csv(const std::string& path, double timeslot_ns, const Engine& engine);
void write_counters_csv(const std::string& path, const Engine& engine);
void write_packets_csv(const std::string& path, const Engine& engine, const std::vector<PacketEvent>& events);

// PFC (api/pfc.h): per (router, port, priority) pauses sent and received and
// for how long, where PFC acted (pfc.csv; written when a router has PFC).
void write_pfc_csv(const std::string& path, double timeslot_ns, const Engine& engine);
struct PfcTotals {
  uint32_t routers = 0;  // with PFC
  uint64_t pauses_sent = 0;
  uint64_t paused_sent_ts = 0;  // summed over (port, priority)
  uint64_t headroom_overruns = 0;
  uint32_t max_ingress_pkts = 0;
};
PfcTotals pfc_totals(const Engine& engine);

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
// and, when the options asked for them, the occupancy file (`occupancy`),
// occupancy_summary.csv and scheme_stats.csv (occupancy_interval) and
// packets.csv (packet_log, from `events`).
void write_engine_outputs(const std::string& dir, const Engine& engine, const EngineOptions& options,
                          OccupancyFile occupancy, uint64_t unexpected, const std::vector<PacketEvent>& events);

}  // namespace flexplane
