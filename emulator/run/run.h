// Executes one RunConfig end to end: builds topology, routers, flows and the
// engine, runs arrivals + drain in virtual time, writes the outputs
// (docs/output-format.md) into the run's folder.
#pragma once

#include <functional>
#include <string>

#include "emulator/config/config.h"
#include "emulator/engine/engine.h"
#include "emulator/output/output.h"

namespace flexplane {

struct RunSummary {
  uint64_t flows = 0;
  uint32_t ranks = 1;  // processes the run was split across (docs/mpi.md)
  std::vector<double> peak_rss_mb_by_rank;  // ranks > 1: each one's peak RSS when it sent its results
  uint64_t finished = 0;
  uint64_t unfinished_lost = 0;        // a packet was dropped: open loop never resends it
  uint64_t unfinished_in_flight = 0;   // still being sent or queued when the run ended
  uint64_t drops = 0;                  // every drop, in queues and outside them
  uint64_t marks = 0;
  Losses losses;                       // the drops outside queues, and misdelivered packets, by kind
  PfcTotals pfc;                       // routers with PFC and their pauses (pfc.csv)
  uint64_t router_packet_hops = 0;
  AckQueueStats ack_queue;             // closed loop with transport.ack_queueing; zeros otherwise
  NicWaitStats nic_wait;               // closed loop; zeros otherwise
  Timeslot timeslots = 0;              // emulated: where the run ended
  Timeslot cap = 0;                    // duration + drain: where it ends at the latest
  bool all_flows_done = false;         // ended early: every flow done, nothing left in the network (stop_when_done)
  double peak_rss_mb = 0;              // the process's peak resident set so far (getrusage ru_maxrss)
  double wall_seconds = 0;              // the engine's run (Engine::wall_seconds)
  // Where the process's wall time went, in seconds (steady clock): before
  // this run started (process start to execute_run: loading the config and
  // topology, and any variants run before this one), setting up (routers,
  // flows, the engine), the engine's run, and writing the outputs.
  struct Phases {
    double before = 0, setup = 0, engine = 0, outputs = 0;
  } phase_seconds;
  double offered_load = 0;
  CollectiveSummary collective;        // a collective workload's iterations; zeros otherwise
  std::string output_dir;
};

using ProgressFn = std::function<void(const RunConfig&, const EngineProgress&)>;

// `partition`: a run across processes (docs/mpi.md); every rank calls this,
// rank 0 gathers the results and writes the outputs (the others write none).
RunSummary execute_run(const RunConfig& config, const ProgressFn& progress = {}, Partition* partition = nullptr);

}  // namespace flexplane
