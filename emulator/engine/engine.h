// The timeslot engine: routers and endpoint groups connected by links, spread
// over cores, stepped one timeslot at a time.
//
// Principles
//  - Per timeslot every node reads the packets arriving now and sends at most
//    one packet per port; links delay by >= 1 timeslot, so within a timeslot
//    the order in which nodes run does not matter.
//  - Deterministic parallelism: a core runs timeslot t once each upstream
//    neighbour core has run t - latency on its boundary nodes, those with
//    cross-core links (per-core watermarks, no global barrier), or has
//    promised its links idle through t (lookahead.h: where the routing tables
//    and the traffic allow it, so the core reads its neighbour's progress
//    rarely); and it never runs so far ahead that it would overwrite a link
//    slot a downstream core has not read. All randomness is seeded per
//    component.
//    Hence results are identical on 1 or N cores (tested).
//  - Cost in proportion to activity: a node runs a timeslot only when a
//    packet arrives for it, it holds work, or it asked for that timeslot
//    (Router::idles_when_empty, TrafficSource::next_emit); the results are
//    those of running every node every timeslot (EngineOptions::skip_idle).
//  - The engine owns no scheme logic and no traffic logic: routers come from
//    the registry, traffic from a Traffic implementation.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "api/pfc.h"
#include "api/router.h"
#include "emulator/engine/core_launcher.h"
#include "emulator/engine/event_log.h"
#include "emulator/engine/link.h"
#include "emulator/engine/partition.h"
#include "emulator/engine/timeslot_timer.h"
#include "emulator/topology/topology.h"
#include "emulator/traffic/traffic.h"

namespace flexplane {

// Virtual time runs as fast as the CPU allows; real time paces timeslot t to
// start at (run start + t * timeslot_ns) on the wall clock (live endpoints).
enum class Clock { kVirtual, kRealTime };

struct EngineOptions {
  uint32_t cores = 1;
  Clock clock = Clock::kVirtual;
  double timeslot_ns = 1200;          // length of a timeslot: the routers' tick (api/time.h); real time: its pace
  double max_lead_ns = 0;             // real time: a core may start a timeslot this early
  bool sleep_when_ahead = false;      // real time: sleep (not spin) when > sleep_threshold_ns ahead
  double sleep_threshold_ns = 100000; //   (long timeslots on small shared machines)
  std::vector<uint32_t> router_core;  // optional: core of each router (size == routers); else `placement` decides
  RouterPlacement placement = RouterPlacement::kGrouped;
  Timeslot occupancy_interval = 0;    // sample every port's backlog every N timeslots (0 = off)
  bool occupancy_samples = true;      // keep every sample (OccupancyTrace); false: only the per-port histograms
  bool packet_log = false;            // record every delivery as well as every drop
  uint32_t max_lead_timeslots = 64;   // how far a core may run ahead of a downstream neighbour
  uint64_t seed = 1;
  uint32_t mtu_bytes = 1500;          // bytes of an abstract packet: what a link sends per timeslot
  bool time_timeslots = false;        // keep per-core timeslot durations (timeslot_timing())
  bool lookahead = true;              // cores promise idle links ahead (emulator/lookahead.h); off: lockstep only
  // Stop when done (virtual time): end run() early once nothing is left to
  // happen -- every source says it is done (TrafficSource::busy_after), no
  // packet is queued in a router or on a link, and every message between
  // sources has arrived -- as seen at the end of a checkpoint timeslot
  // (every `done_check_interval`-th); all cores stop one interval later, at
  // the same timeslot whatever their number (docs/design.md, "Stop when done").
  bool stop_when_done = false;
  Timeslot done_check_interval = 256;
  // Cost in proportion to activity: a node runs a timeslot only when
  // something arrives for it, it holds work, or it asked for that timeslot
  // (Router::idles_when_empty, TrafficSource::next_emit). Results are the
  // same either way (tested); false steps every node every timeslot.
  bool skip_idle = true;
  // Runs split across processes (partition.h; MPI: emulator/engine/mpi/):
  // `cores` counts every rank's cores, and this process runs its own share.
  // Null: one process.
  Partition* partition = nullptr;
};

// One router's results as another process ran it (Engine::unpack_results):
// what the output writers read of it.
struct RouterResults {
  uint16_t ports = 0, queues = 0;  // its bank's shape (queues per port)
  std::vector<StatDesc> stats;     // its scheme statistics' descriptions
  // Per queue (port * queues + queue): its counters, backlog packets and
  // bytes (a QueueCell), as they travelled: zeros left out
  // (serial::put_words), read back by cell().
  std::string cells;
  std::vector<uint32_t> cell_at;  // each queue's offset in `cells`
  RouterLosses losses;
  // PFC (api/pfc.h), if the router has it: per port and priority, at the
  // end of the run.
  uint16_t pfc_priorities = 0;  // 0: no PFC
  std::vector<PfcCounters> pfc;
};

// What the results carry per queue.
struct QueueCell {
  QueueCounters counters;
  uint64_t backlog_pkts = 0;
  uint64_t backlog_bytes = 0;
  static constexpr size_t kWords = sizeof(QueueCounters) / 8 + 2;
};
static_assert(sizeof(QueueCounters) % 8 == 0 && sizeof(QueueCell) == QueueCell::kWords * 8,
              "QueueCell travels as 64-bit words");

// How one core synchronised with the cores that feed it (lookahead).
struct CoreSyncStats {
  uint64_t syncs = 0;              // times it had to look at an upstream core's progress
  uint64_t syncs_by_promise = 0;   // ... and found a promise that covered the timeslot
  uint64_t promises_published = 0; // times it extended a promise to a downstream core
};

struct OccupancySample {
  Timeslot time;
  uint32_t router;
  PortId port;
  uint32_t packets;
  uint64_t bytes;
  bool operator==(const OccupancySample& o) const {
    return time == o.time && router == o.router && port == o.port && packets == o.packets && bytes == o.bytes;
  }
};

// One router's sampled backlog (options.occupancy_interval): a row per sample
// with a column per port, written by the router's own core without locks or
// sorting (8 bytes per port and sample, against 32 for an OccupancySample),
// and every sample also counted in a per-port histogram, so percentiles need
// no samples at all (options.occupancy_samples = false keeps only those).
struct OccupancyTrace {
  uint16_t ports = 0;
  uint64_t samples = 0;                // taken (also when not kept)
  std::vector<Timeslot> times;         // kept samples' timeslots
  std::vector<uint32_t> packets;       // [sample * ports + port]: all queues of the port together
  // Bytes: while every queued packet has the same size (virtual-time flows:
  // the abstract packet's), only that size is kept (packet_bytes > 0, `bytes`
  // empty); the first sample that differs spells out every row in `bytes`.
  uint32_t packet_bytes = 0;
  std::vector<uint32_t> bytes;         // [sample * ports + port], saturating at 2^32 - 1 (if packet_bytes == 0)
  std::vector<std::vector<uint64_t>> histogram;  // [port][backlog in packets]: samples that saw it
  uint32_t bytes_at(size_t i) const {
    return packet_bytes ? static_cast<uint32_t>(std::min<uint64_t>(uint64_t{packets[i]} * packet_bytes, UINT32_MAX))
                        : bytes[i];
  }
};

// One value of a router's scheme statistics (api/scheme_stats.h).
struct SchemeStatSample {
  Timeslot time;
  uint32_t router;
  PortId port;
  QueueId queue;  // per-queue stats; anything for per-port ones
  uint16_t stat;  // index into the router's stat_descs()
  double value;
};

// Real-time health of one core: lateness is counted and reported, never hidden.
struct CoreHealth {
  uint64_t timeslots = 0;       // run so far
  uint64_t late_timeslots = 0;  // started more than one timeslot after their deadline
  double max_lag_ns = 0;        // worst start time past a deadline
};

struct EngineProgress {
  Timeslot done;    // slowest core's finished timeslots
  Timeslot total;
  double wall_seconds;
  std::vector<CoreHealth> health;  // per core (real time only)
};

// The core of every router under `placement` (EngineOptions::router_core empty).
std::vector<uint32_t> place_routers(const Topology& topology, uint32_t cores, RouterPlacement placement);

class Engine {
 public:
  // `routers[i]` implements topology.routers[i]; the engine binds them.
  Engine(Topology topology, std::vector<std::unique_ptr<Router>> routers, Traffic& traffic, EngineOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Run timeslots [now(), end). `progress` (optional) is called about every
  // `progress_period_s` from the launching thread. `launcher` defaults to threads.
  void run(Timeslot end, const std::function<void(const EngineProgress&)>& progress = {},
           double progress_period_s = 1.0, CoreLauncher* launcher = nullptr);

  // Ask a run() in progress to end soon, at the same timeslot on every core.
  // Safe to call from any thread (e.g. a signal-watching monitor).
  void request_stop();

  Timeslot now() const { return now_; }
  // Whether the last run() ended early because everything was done
  // (options.stop_when_done), rather than at its `end`.
  bool stopped_when_done() const { return stopped_when_done_; }
  std::vector<CoreHealth> health() const;
  // Real time: when timeslot t is due on the wall clock (steady_clock ns,
  // i.e. CLOCK_MONOTONIC on Linux), for the run in progress or the last one.
  int64_t timeslot_due_ns(Timeslot t) const {
    return start_ns_ + static_cast<int64_t>((static_cast<double>(t) - static_cast<double>(start_slot_)) * options_.timeslot_ns);
  }
  // Real time: forget each core's worst lag so far, so that health() reports
  // the worst since this call (a measurement window's start; the first
  // timeslots of a run lag while the cores start and touch their memory).
  void reset_max_lag();
  double wall_seconds() const { return wall_seconds_; }
  const Topology& topology() const { return topology_; }
  const Router& router(uint32_t i) const { return *routers_[i]; }
  uint32_t num_routers() const { return static_cast<uint32_t>(routers_.size()); }
  uint32_t core_of_router(uint32_t i) const { return router_core_[i]; }
  uint32_t num_cores() const { return options_.cores; }

  // What output writers read of router `i`, wherever it ran (this process:
  // its bank; another: the results it sent, unpack_results()). A router
  // another process runs is not bound here (no bank): before
  // unpack_results() it reads as having no ports. router(i) is only
  // meaningful for routers this process runs.
  QueueCounters queue_counters(uint32_t i, PortId p, QueueId q) const;
  uint32_t backlog_packets(uint32_t i, PortId p, QueueId q) const;
  uint64_t backlog_bytes(uint32_t i, PortId p, QueueId q) const;
  uint16_t queues_per_port(uint32_t i) const;
  uint16_t num_ports(uint32_t i) const;
  const RouterLosses& router_losses(uint32_t i) const;
  std::vector<StatDesc> stat_descs(uint32_t i) const;
  // PFC: its priorities (0: the router has no PFC), and a port's counters
  // for one priority at the end of the run (now()).
  uint16_t pfc_priorities(uint32_t i) const;
  PfcCounters pfc_counters(uint32_t i, PortId p, QueueId q) const;
  // Runs across processes: this process's share of the results (its
  // routers' counters, backlogs, losses and occupancy; its cores' events and
  // scheme statistics), and, on the process that writes the outputs, every
  // other's share folded in: the accessors above then answer for every router.
  void pack_results(std::string& out) const;
  void unpack_results(const char* in, size_t n);
  void unpack_results(const std::string& in) { unpack_results(in.data(), in.size()); }
  // Whether this process runs router `i` (always, without a partition).
  bool runs_router(uint32_t i) const {
    return !options_.partition || options_.partition->runs_core(router_core_[i]);
  }

  // Packets routers sent, summed over all routers and ports (the
  // "router packet-hops" of the benchmarks).
  uint64_t router_packet_hops() const;
  // Packets routers sent that no link took: a second packet on a port in one
  // timeslot (link_collision), a port with nothing attached (no_link), an
  // endpoint other than the packet's destination (misdelivered; checked for
  // routers that do not vouch for one_packet_per_port); each was also
  // reported as a drop. Summed, and per router by reason.
  uint64_t link_collisions() const;
  const RouterLosses& link_losses(uint32_t router) const;

  // Per core, how long its timeslots took over all runs so far (needs
  // options.time_timeslots; empty samples otherwise).
  std::vector<TimeslotTiming> timeslot_timing() const;
  // Per core, over all runs so far.
  std::vector<CoreSyncStats> sync_stats() const;

  // Drops (always) and deliveries (if packet_log), merged over cores, sorted.
  std::vector<PacketEvent> events() const;
  // The same events core by core, unsorted and uncopied: for counts that do
  // not need the order (a large run's drop log is millions of events).
  const std::vector<PacketEvent>& core_events(uint32_t core) const;
  // Occupancy samples merged over cores, sorted by (time, router, port)
  // (needs options.occupancy_samples; the traces below are the compact form).
  std::vector<OccupancySample> occupancy() const;
  // Router `i`'s occupancy samples and histograms.
  const OccupancyTrace& occupancy_trace(uint32_t i) const;
  // Scheme statistics, sampled with the occupancy, merged and sorted by
  // (time, router, port, stat, queue).
  std::vector<SchemeStatSample> scheme_stats() const;

 private:
  struct Node;
  struct RouterNode;
  struct EndpointGroupNode;
  struct Core;

  void build(Traffic& traffic);
  void build_activity(const std::vector<std::vector<std::pair<PortId, Link*>>>& in_links);
  void run_core(Core& core, Timeslot begin);
  void step_due(Core& core, Timeslot t, size_t lo, size_t hi);
  bool done_check(Core& core, Timeslot t);
  void attach_partition();

  Topology topology_;
  std::vector<std::unique_ptr<Router>> routers_;
  EngineOptions options_;
  std::vector<uint32_t> router_core_;
  // Zero-filled anonymous memory for the wheels of links between cores
  // (engine_build.cc), backed page by page as packets are written.
  class WheelArena {
   public:
    explicit WheelArena(size_t bytes);
    ~WheelArena();
    WheelArena(const WheelArena&) = delete;
    WheelArena& operator=(const WheelArena&) = delete;
    void* data() const { return data_; }

   private:
    void* data_ = nullptr;
    size_t bytes_ = 0;
  };
  std::unique_ptr<WheelArena> wheels_;  // before links_: the links point into it
  std::vector<std::unique_ptr<Link>> links_;
  std::vector<RouterNode*> router_nodes_;  // by router id (owned by the cores)
  std::vector<std::unique_ptr<Core>> cores_;
  uint32_t window_ = 0;
  Timeslot now_ = 0;
  double wall_seconds_ = 0;
  std::atomic<Timeslot> end_{0};  // run() target; lowered by request_stop() and by a stop when done
  std::atomic<Timeslot> done_at_{0};  // stop when done: the timeslot the run stops at (0: not done)
  uint64_t first_done_check_ = 0;     // index of this run's first checkpoint (nothing to decide there)
  bool stopped_when_done_ = false;
  Traffic* traffic_ = nullptr;
  std::vector<PartitionView::CrossLink> cross_links_;  // links between cores
  std::unique_ptr<PartitionView> partition_view_;
  std::vector<std::unique_ptr<RouterResults>> remote_results_;  // by router; set by unpack_results
  const RouterResults* remote(uint32_t i) const { return remote_results_.empty() ? nullptr : remote_results_[i].get(); }
  static QueueCell cell(const RouterResults& r, PortId p, QueueId q);
  int64_t start_ns_ = 0;          // real time: wall clock of timeslot `start_slot_`
  double pace_ns_per_tick_ = 1.0; // real time: the TSC's rate, measured at start (pace_clock.h)
  Timeslot start_slot_ = 0;
};

}  // namespace flexplane
