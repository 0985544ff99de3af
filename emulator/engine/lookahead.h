// Lookahead: how far ahead a core can promise that its links to another core
// stay idle, so that the core behind those links reads its progress rarely.
//
// Principles
//  - A cross-core link's content is final for every arrival timeslot before
//    max(sender's watermark + latency, sender's promise). The watermark moves
//    every timeslot, and each re-read by the other core is a cache miss; a
//    promise can reach far ahead (a whole run, for traffic that stays in its
//    rack) and is read once.
//  - A promise is (the earliest timeslot the port may send) + latency. A
//    port may send next timeslot if its queues hold a packet; otherwise not
//    before the first arrival its router can route to it: from its rack (the
//    traffic source's own promise, TrafficSource::remote_quiet_until), over
//    a link from a router on the same core (a packet in flight, or that
//    link's own earliest send + latency), or over a link from another core
//    (what that core has sent so far, and what it has promised). Earliest
//    sends are shortest paths with positive weights, so loops in the
//    topology are fine; across cores, promises build on each other's last
//    published values and only ever grow.
//  - Which inputs can feed which port comes from the routing tables: the
//    destinations each link can carry, computed to a fixed point.
//  - Conservative where it cannot know: a port its rack's own destinations
//    are routed to, or a router that does not forward by table
//    (Router::forwards_by_table), promises nothing beyond the next timeslot.
//  - Results never depend on it: a promise only lets a reader skip a wait
//    whose outcome it already knows. The 1- vs N-core identity tests run with
//    it on and off.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "api/queue_bank.h"
#include "emulator/engine/link.h"
#include "emulator/topology/topology.h"
#include "emulator/traffic/traffic.h"

namespace flexplane {

class Router;

// What an endpoint group has told its ToR about packets leaving the rack.
// Written by the group each timeslot, read by its core's lookahead.
struct RackPromise {
  uint32_t latency = 1;            // of the access links
  Timeslot quiet_from = 0;         // no packet for outside the rack is sent before this
  Timeslot loud_arrivals_end = 0;  // packets that may leave the rack arrive at the ToR before this

  // After the source's emit(now), with its remote_quiet_until(now).
  void update(Timeslot now, Timeslot promise) {
    if (now >= quiet_from) loud_arrivals_end = now + latency + 1;
    quiet_from = promise;
  }
  // The earliest arrival at the ToR after `now` of a packet that may leave the rack.
  Timeslot earliest_remote_arrival(Timeslot now) const {
    return loud_arrivals_end > now + 1 ? now + 1 : quiet_from + latency;
  }
};

// One directed router-to-router link as the engine built it.
struct DirectedLink {
  PortRef from, to;
  const Link* link = nullptr;
};

// What one core publishes for the others: its watermark (first timeslot its
// boundary nodes have not run) and, per core, its promise to that core.
struct CoreProgress {
  const std::atomic<Timeslot>* next = nullptr;
  std::vector<const std::atomic<Timeslot>*> promise_to;  // by core
};

// The links one core sends on, and which of its inputs can feed each.
class LookaheadPlan {
 public:
  // One plan per core (the routing analysis is shared). routers[i]
  // implements topology.routers[i]; racks[i] is router i's rack (null if none).
  // `wanted` (optional, by core): the cores to plan for; the others' plans
  // are left empty (across processes: the cores another process runs).
  static std::vector<LookaheadPlan> build(const Topology& topology, const std::vector<uint32_t>& router_core,
                                          const std::vector<const Router*>& routers,
                                          const std::vector<DirectedLink>& links,
                                          const std::vector<const RackPromise*>& racks,
                                          const std::vector<CoreProgress>& cores,
                                          const std::vector<bool>& wanted = {});

  // After timeslot `now` has run on this core: by_core[c] = the first arrival
  // timeslot on this core's links to core c that is not promised idle
  // (kNoRemoteTraffic if there are none). by_core has one entry per core.
  void promises(Timeslot now, std::vector<Timeslot>& by_core);

  size_t num_ports() const { return ports_.size(); }

 private:
  struct DestinationSet;
  struct Routing;  // what the routing tables allow, shared by all cores' plans
  static LookaheadPlan plan_for(uint32_t core, const Routing& routing, const std::vector<uint32_t>& router_core,
                                const std::vector<const Router*>& routers, const std::vector<DirectedLink>& links,
                                const std::vector<const RackPromise*>& racks, const std::vector<CoreProgress>& cores);

  static LookaheadPlan prune(LookaheadPlan plan, uint32_t core);

  struct Port {                        // one router port on this core with a link to a router
    const QueueBank* bank = nullptr;   // null: no promise (router does not forward by table)
    PortId port = 0;
    const Link* link = nullptr;
    uint32_t to_core = 0;
    const RackPromise* rack = nullptr;  // its rack may send packets to this port
    bool no_promise = false;            // fed by the rack's own destinations
    std::vector<uint32_t> feeders;      // same-core ports whose links can feed this one
    std::vector<uint32_t> remote_feeders;  // links from other cores that can feed this one
    Timeslot earliest_send = 0;         // scratch
  };
  struct RemoteFeeder {
    const Link* link;
    const std::atomic<Timeslot>* next;     // the sending core's watermark
    const std::atomic<Timeslot>* promise;  // its promise to this core
  };
  // The first arrival after `now` on a link from another core that is not
  // known to be empty.
  static Timeslot first_remote_arrival(const RemoteFeeder& f, Timeslot now);

  std::vector<Port> ports_;
  std::vector<RemoteFeeder> remote_;
};

}  // namespace flexplane
