// Synthetic endpoints: the load of the live capacity experiment (issue 22;
// docs/live.md, "Capacity").
//
// One SyntheticEndpoints is one feeding thread of LiveTraffic (feeder index
// `feeder`, options.feeders > 1 for several): it makes requests for its
// endpoints exactly as the comm core does for real ones -- submit(), then
// collect() for the verdicts -- so the experiment measures the live path
// behind the comm core: request rings, the emulated endpoints' queues, the
// routers paced in real time, the verdict rings. It leaves out the wire
// (frames, the protocol, the NIC), which docs/live.md measures apart.
//
// Load, per endpoint: Poisson arrivals at `load` packets per timeslot (the
// fraction of its link's rate), or backlogged (`backlog_pkts` requests
// outstanding at all times; each verdict makes room for the next).
// Destinations are uniform over the other endpoints, one flow per (source,
// destination) pair.
//
// Accounting: every request is answered once -- by a verdict from the
// engine, or at once when submit() refuses it (its ring full), which counts
// as a drop here as the comm core answers it with DROP. Once drained,
// offered == released + marked + dropped (tested).
//
// Measurement window: verdicts whose emulated timeslot lies in
// [window_begin, window_end) count towards delivered and router throughput
// and the request->verdict latency (wall clock, submit() to collect()).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "api/reason.h"
#include "api/rng.h"
#include "emulator/engine/pace_clock.h"
#include "emulator/synthetic/latency_histogram.h"
#include "emulator/traffic/live_traffic.h"

namespace flexplane {

struct SyntheticLoad {
  double load = 0.5;          // Poisson: packets per endpoint per timeslot (0 < load; > 1 overloads the NIC queue)
  uint32_t backlog_pkts = 0;  // > 0: backlogged instead, this many requests outstanding per endpoint
  uint16_t packet_bytes = 1500;
  uint64_t seed = 1;
  // Start a loop (offer, collect) at most every poll_ns; 0: busy polling.
  // Polling less often batches more per ring crossing: fewer cache lines
  // bounce between the driver's and the engine's cores, for up to poll_ns
  // more request->verdict latency (docs/performance.md, "Live capacity").
  uint64_t poll_ns = 0;
};

// Routers a packet crosses from one ToR to another (path lengths of the
// topology's routing tables; ECMP does not change them in the shipped kinds).
class HopTable {
 public:
  explicit HopTable(const Topology& t);
  uint32_t hops(EndpointId src, EndpointId dst) const {
    return hops_[router_of_[src] * routers_ + router_of_[dst]];
  }

 private:
  uint32_t routers_;
  std::vector<uint32_t> router_of_;  // endpoint -> its router
  std::vector<uint8_t> hops_;        // [src router][dst router]
};

struct SyntheticStats {
  uint64_t offered = 0;            // requests made (submitted + refused)
  uint64_t submitted = 0, refused = 0;
  uint64_t released = 0, marked = 0, dropped = 0;  // verdicts from the engine (dropped: also refused ones)
  uint64_t drop_reasons[kNumReasons] = {};          // engine drops by reason
  uint64_t offered_bytes = 0;
  uint64_t window_verdicts = 0, window_delivered_bytes = 0, window_router_bytes = 0;
  uint64_t latency_unmatched = 0;  // verdicts whose submit time was overwritten (more outstanding than the table)
  uint64_t max_offer_lag_ns = 0;   // Poisson: worst lateness of the generator behind its own schedule
  LatencyHistogram latency;        // request -> verdict, window only
  uint64_t outstanding() const { return submitted - (released + marked + (dropped - refused)); }
  void merge(const SyntheticStats& o);
};

class SyntheticEndpoints {
 public:
  enum Phase : int { kOffer = 0, kDrain = 1, kQuit = 2 };

  SyntheticEndpoints(LiveTraffic& traffic, uint32_t feeder, const Topology& topology, const HopTable& hops,
                     SyntheticLoad load, double timeslot_ns, Timeslot window_begin, Timeslot window_end);

  // The thread's loop: offers load while `phase` is kOffer, then only
  // collects; returns at kQuit. drained() turns true once draining found
  // nothing outstanding.
  void run(const std::atomic<int>& phase);
  bool drained() const { return drained_.load(std::memory_order_acquire); }
  // Read after run() returned.
  const SyntheticStats& stats() const { return stats_; }
  uint32_t num_endpoints() const { return static_cast<uint32_t>(mine_.size()); }

 private:
  struct Sent {
    uint32_t seq = 0;
    uint64_t at_ns = 0;
  };
  void stage(uint32_t local);
  void flush(uint64_t now);
  void offer_poisson(uint64_t now);
  void offer_backlogged(uint64_t now);
  void collect();

  LiveTraffic& traffic_;
  const uint32_t feeder_;
  const uint32_t num_endpoints_;
  const HopTable& hops_;
  const SyntheticLoad load_;
  const Timeslot window_begin_, window_end_;
  std::vector<EndpointId> mine_;            // this feeder's endpoints
  std::vector<int32_t> local_of_;           // endpoint -> index in mine_, or -1
  std::vector<uint32_t> group_of_local_;    // per local endpoint: index into staged_
  std::vector<std::vector<Packet>> staged_; // per group of this feeder: requests of this loop
  std::vector<uint32_t> next_seq_;          // per local endpoint
  std::vector<uint32_t> outstanding_;       // per local endpoint
  std::vector<Sent> sent_;                  // [local * kSentSlots + seq % kSentSlots]
  double mean_gap_ns_ = 0;                  // Poisson: between two of this feeder's arrivals
  double next_arrival_ns_ = 0;
  uint32_t rr_ = 0;                         // backlogged: next endpoint to top up
  Rng rng_;
  std::vector<LiveVerdict> vbuf_;
  std::atomic<bool> drained_{false};
  SyntheticStats stats_;
  PaceClock clock_;  // read every loop: the TSC kept on CLOCK_MONOTONIC (pace_clock.h)

  static constexpr uint32_t kSentSlots = 2048;
};

}  // namespace flexplane
