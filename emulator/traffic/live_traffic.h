// Live traffic: abstract packets requested by real endpoints, verdicts back.
//
// The communication core (one thread) submit()s each request and collect()s
// verdicts; the engine cores run the emulated endpoints. Between them are
// single-producer single-consumer rings only: one request ring per endpoint
// group (comm core -> the group's core), one verdict ring per group
// (deliveries and refusals, from the group's core) and one per engine core
// (drops, from that core's routers). Every accepted request ends in exactly
// one verdict: released, released CE-marked, or dropped with a reason —
// including requests refused because an endpoint's emulated NIC queue is full.
//
// Feeders: with options.feeders = F > 1 the endpoint groups are dealt out to
// F feeding threads (group g to feeder g mod F) and every verdict ring
// becomes F rings, one per feeder (a group's deliveries are for requests of
// any group), so F threads can submit and collect side by side, each for its
// own endpoints only (feeder_of()); the capacity experiment's synthetic
// endpoints (emulator/synthetic/) run that way. The comm core is the one
// feeder of a live run.
//
// With record_arrivals on, each group records the timeslot at which every
// request entered its emulated endpoint; ReplayTraffic replays such a record in
// virtual time through the very same endpoint code, so a live run can be
// checked against a deterministic replay verdict by verdict.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "emulator/traffic/spsc_ring.h"
#include "emulator/topology/topology.h"
#include "emulator/traffic/traffic.h"

namespace flexplane {

struct LiveVerdict {
  enum Action : uint8_t { kRelease = 0, kMark = 1, kDrop = 2 };
  Packet pkt;            // as requested (flags show CE for kMark)
  Timeslot time = 0;     // timeslot of delivery or drop
  Action action = kRelease;
  Reason reason = Reason::kCount;  // drops only
};

// A request as it entered an emulated endpoint (for replay).
struct RecordedArrival {
  Timeslot time;
  Packet pkt;
};

struct LiveTrafficOptions {
  uint32_t endpoint_queue_pkts = 4096;  // emulated NIC queue per endpoint; more is refused (endpoint_overflow)
  uint32_t ring_entries = 4096;         // per ring (bigger rings fall out of cache: docs/performance.md, "Live capacity")
  bool record_arrivals = false;
  uint32_t feeders = 1;                 // threads that submit and collect, each for its own groups
};

// Where emulated endpoints get requests from and send verdicts to.
class ArrivalFeed {
 public:
  virtual ~ArrivalFeed() = default;
  // Requests that arrive at `now` (at most `max`).
  virtual size_t fetch(Timeslot now, Packet* out, size_t max) = 0;
};
class VerdictOut {
 public:
  virtual ~VerdictOut() = default;
  virtual void put(const LiveVerdict& v) = 0;
  virtual void put(const LiveVerdict* v, size_t n) {
    for (size_t i = 0; i < n; ++i) put(v[i]);
  }
};

struct FeederRings;

class LiveTraffic final : public Traffic {
 public:
  LiveTraffic(const Topology& topology, uint32_t engine_cores, LiveTrafficOptions options = {});
  ~LiveTraffic() override;

  // --- communication-core side (one thread per feeder) ---
  // Hand a request to the engine. p.src must be a valid endpoint (the comm
  // core maps addresses to ids) of the calling feeder. Returns false if the
  // request ring is full or src unknown: the caller then answers with a drop
  // itself (and counts it).
  bool submit(const Packet& p);
  // The same for a burst of requests from endpoints of one group (the
  // group_of() of p[0]; the caller sorts): one release of the ring for all.
  // Returns how many, from the front, went in; the rest are refused.
  size_t submit_burst(const Packet* p, size_t n);
  // Endpoint e's group (one per ToR; -1: no such endpoint) and the number of groups.
  int32_t group_of(EndpointId e) const { return e < group_of_.size() ? group_of_[e] : -1; }
  uint32_t num_groups() const { return static_cast<uint32_t>(groups_.size()); }
  // Gather up to `max` verdicts from every ring of feeder `feeder`.
  size_t collect(LiveVerdict* out, size_t max, uint32_t feeder = 0);
  uint32_t feeders() const { return options_.feeders; }
  // The feeder that submits for endpoint `e` and collects its verdicts (-1: no such endpoint).
  int32_t feeder_of(EndpointId e) const {
    return e < group_of_.size() && group_of_[e] >= 0 ? static_cast<int32_t>(group_of_[e] % options_.feeders) : -1;
  }
  // After the engine stopped: every request that entered an endpoint, sorted
  // by (time, group order). Empty unless record_arrivals.
  std::vector<RecordedArrival> arrivals() const;

  // --- engine side ---
  std::unique_ptr<TrafficSource> make_source(const std::vector<EndpointId>& group) override;
  std::unique_ptr<TrafficSink> make_sink(const std::vector<EndpointId>& group, EventLog* log) override;
  EventSink* drop_sink(uint32_t core) override;
  bool record_drops() const override { return false; }

  struct Stats {
    uint64_t submitted = 0, refused = 0, verdicts = 0;
  };
  // Summed over feeders: read it from a feeder thread while the others are idle (or after).
  Stats stats() const;

 private:
  struct Group;
  std::vector<int32_t> group_of_;  // endpoint -> group index
  std::vector<std::unique_ptr<Group>> groups_;
  struct alignas(64) FeederStats : Stats {};
  std::vector<std::unique_ptr<FeederRings>> drop_rings_;  // per engine core: its routers' drops, a ring per feeder
  std::vector<std::unique_ptr<EventSink>> drop_sinks_;    // per engine core, feeding its drop_rings_
  LiveTrafficOptions options_;
  std::vector<FeederStats> stats_;  // per feeder
};

// Virtual-time replay of recorded arrivals; verdicts are kept in memory.
class ReplayTraffic final : public Traffic {
 public:
  ReplayTraffic(const Topology& topology, std::vector<RecordedArrival> arrivals, uint32_t endpoint_queue_pkts,
                uint32_t engine_cores);
  ~ReplayTraffic() override;
  std::unique_ptr<TrafficSource> make_source(const std::vector<EndpointId>& group) override;
  std::unique_ptr<TrafficSink> make_sink(const std::vector<EndpointId>& group, EventLog* log) override;
  EventSink* drop_sink(uint32_t core) override;
  bool record_drops() const override { return false; }
  // All verdicts, sorted by (time, action, flow, seq).
  std::vector<LiveVerdict> verdicts() const;

 private:
  struct Group;
  const Topology& topology_;
  std::vector<RecordedArrival> arrivals_;
  uint32_t queue_limit_;
  std::vector<std::unique_ptr<Group>> groups_;
  std::vector<std::unique_ptr<VerdictOut>> drop_outs_;
  std::vector<std::unique_ptr<EventSink>> drop_sinks_;
};

void sort_verdicts(std::vector<LiveVerdict>& v);

}  // namespace flexplane
