// Shared state of closed-loop traffic (closed_loop.cc), owned by FlowTraffic.
// Each field says which core writes it.
#pragma once

#include <atomic>
#include <limits>
#include <memory>
#include <mutex>
#include <vector>

#include "api/endpoint_contract.h"
#include "api/flow.h"
#include "emulator/engine/event_log.h"
#include "emulator/topology/topology.h"
#include "emulator/traffic/closed_loop.h"
#include "emulator/traffic/closed_loop_nic.h"
#include "emulator/traffic/traffic.h"
#include "transports/receiver.h"

namespace flexplane {

struct FlowState;
struct FlowDeps;

inline constexpr Timeslot FlowTrafficNotSent = ~Timeslot{0};

// One ACK on its way back: due = the timeslot it reaches the sender.
struct AckMsg {
  Timeslot due;
  uint32_t flow;
  Ack ack;
};

// ACKs from the receivers of one group to the senders of another. The writer
// appends one batch per deliver() call; the reader takes everything. A mutex
// keeps it unbounded (a bounded ring could fill while its reader waits for
// the writer's core) and each side takes it at most once per timeslot.
// Between two groups of one core (`same_core`, set before the run) there is
// one thread: no mutex (2.6 % of a k = 8 web-search run's instructions on one core).
struct AckChannel {
  Timeslot d_min = std::numeric_limits<Timeslot>::max();  // smallest ACK latency of its flows, >= 1
  bool same_core = false;  // writer and reader run on one engine core (ClosedLoopShared::set_group_clock)
  void append(const std::vector<AckMsg>& batch) {
    if (same_core) {
      acks.insert(acks.end(), batch.begin(), batch.end());
      return;
    }
    std::lock_guard<std::mutex> g(mu);
    acks.insert(acks.end(), batch.begin(), batch.end());
    has.store(true, std::memory_order_release);
  }
  void drain(std::vector<AckMsg>& out) {
    if (same_core) {
      out.insert(out.end(), acks.begin(), acks.end());
      acks.clear();
      return;
    }
    if (!has.load(std::memory_order_acquire)) return;
    std::lock_guard<std::mutex> g(mu);
    out.insert(out.end(), acks.begin(), acks.end());
    acks.clear();
    has.store(false, std::memory_order_relaxed);
  }

 private:
  std::mutex mu;
  std::vector<AckMsg> acks;
  std::atomic<bool> has{false};
};

// Written by the group's source at the start of each emit(): the first
// timeslot whose deliveries (and so whose ACKs) the group has not finished.
// A source that sleeps (next_emit) publishes nothing while it sleeps: its
// core's progress (ClosedLoopShared::core_finished) says as much, later.
struct alignas(64) GroupProgress {
  std::atomic<Timeslot> delivered_before{0};
};

// Written by a group's sink (its core only).
struct alignas(64) GroupAckStats {
  AckQueueStats s;
  uint64_t sent = 0;       // ACKs its receivers sent on (to any group; lost ones not): stop when done
  uint32_t receivers = 0;  // receivers allocated now (a flow's first packet arrived, its last not yet)
};

// Written by a group's source (its core only).
struct alignas(64) GroupNicStats {
  NicWaitStats s;
  uint32_t senders = 0;  // senders allocated now (started, not yet acknowledged in full)
};

// One ACK channel, seen from one end: the group at the other end.
struct ChannelRef {
  uint32_t group;
  AckChannel* channel;
};

// ACKs between a group's own endpoints: written by its sink, read by its
// source, both on the group's core.
struct LocalAcks {
  std::vector<AckMsg> acks;
};

// A group's source answers how many segments wait in an endpoint's NIC FIFO
// (the ACK queueing's NIC term; asked by the group's sink, on the same core).
class NicBacklog {
 public:
  virtual uint32_t nic_backlog(EndpointId e) const = 0;

 protected:
  ~NicBacklog() = default;
};

struct ClosedLoopShared {
  ClosedLoopShared(const FlowList& flows, const Topology& topology, const TransportConfig& config, double timeslot_ns);

  const FlowList& flows;
  TransportSettings settings;
  std::vector<uint32_t> group_of;       // by endpoint: its group (routers with endpoints, in router order)
  std::vector<uint32_t> local_index;    // by endpoint: its index in its group (endpoints in id order)
  uint32_t num_groups = 0;
  std::vector<uint32_t> arrival_index;  // by flow: its index among its source group's flows
  // Each group's flows as a source, in flow order: group_flows[group_flow_begin[g] ...
  // group_flow_begin[g + 1]) (so a source reads its own flows, not the whole list).
  std::vector<uint32_t> group_flow_begin;  // num_groups + 1
  std::vector<uint32_t> group_flows;
  std::vector<Timeslot> ack_delay;      // by flow: receiver -> sender, timeslots (>= 1)
  std::vector<Timeslot> base_rtt;       // by flow: forward path latency + ack_delay
  AckQueueing ack_queueing = AckQueueing::kNone;
  std::vector<PortId> ack_port;         // by flow: first port of the ACK's path, on the destination's ToR (kNoRoute: none)
  std::vector<const Router*> tor;       // by group: its ToR (Traffic::set_group_router), read by the group's sink
  bool ack_wait_nic = true;             // ACK queueing: also behind the receiver's own NIC FIFO
  NicMode nic_mode{};                   // transport.nic: how a host's NIC serves its flows
  std::vector<const NicBacklog*> nics;  // by group: its source's NICs (set by the source, read by the group's sink)
  std::unique_ptr<GroupAckStats[]> ack_stats;           // by group
  std::unique_ptr<GroupNicStats[]> nic_stats;           // by group
  std::unique_ptr<GroupProgress[]> progress;            // by group
  // By group: its core's progress (Traffic::set_group_clock); null when the
  // engine gave none, and then the group's source never sleeps.
  std::vector<const std::atomic<Timeslot>*> core_finished;
  // Group g runs on the core whose progress is `finished` (before the run):
  // also marks its channels whose other end is on the same core.
  void set_group_clock(uint32_t g, const std::atomic<Timeslot>* finished);
  // The first timeslot whose deliveries group g has not finished, as far as
  // is known: its own progress or its core's, whichever is further.
  Timeslot delivered_before(uint32_t g) const {
    const Timeslot own = progress[g].delivered_before.load(std::memory_order_acquire);
    const std::atomic<Timeslot>* c = core_finished[g];
    return c ? std::max(own, c->load(std::memory_order_acquire)) : own;
  }
  std::vector<LocalAcks> local;                         // by group
  // One channel per ordered pair of groups that some flow connects (not
  // num_groups^2 slots: 4 M at k = 64), listed by writer and by reader,
  // each sorted by the other end's group.
  std::vector<std::unique_ptr<AckChannel>> channels;
  std::vector<uint32_t> out_begin, in_begin;  // num_groups + 1 each, into out_refs / in_refs
  std::vector<ChannelRef> out_refs;           // by writer: (reader, channel)
  std::vector<ChannelRef> in_refs;            // by reader: (writer, channel)
  // Which channels into a group hold ACKs, so a source drains those only (not
  // all of its up to num_groups - 1 channels every timeslot): bit w of
  // mail[reader * mail_words + w / 64] is set by writer w after it appends.
  uint32_t mail_words = 0;
  std::unique_ptr<std::atomic<uint64_t>[]> mail;
  // By flow, written by the destination's core: allocated at the flow's
  // first packet and freed at its last (Receiver::complete_ack answers any
  // later duplicate, from the one bit kept in complete_ece).
  std::vector<std::unique_ptr<Receiver>> receivers;
  std::vector<uint8_t> complete_ece;                    // by flow: the freed receiver's latched ECE
  std::vector<SenderOutcome> outcomes;                  // by flow: written by the source's core when done

  // Flows that wait for others (emulator/workload/collective.h); all empty
  // without. A flow's waiters start at its source's or its destination's
  // endpoint, so each completion is handled on the core that saw it.
  void set_dependencies(const FlowDeps& d, std::vector<Timeslot>& release_out);
  const FlowDeps* deps = nullptr;
  std::vector<uint32_t> rx_begin, rx_waiters;  // by flow: flows from its destination waiting for its last packet
  std::vector<uint32_t> tx_begin, tx_waiters;  // by flow: flows from its source waiting for its last ACK
  std::vector<std::vector<uint32_t>> received;  // by group: flows with rx waiters received in full this timeslot (its sink, then its source)
  std::vector<Timeslot>* release = nullptr;     // by flow: when a dependent flow was released (its source's core)
  bool has_rx_waiters(uint32_t flow) const { return !rx_begin.empty() && rx_begin[flow + 1] != rx_begin[flow]; }
};

std::unique_ptr<TrafficSource> make_closed_loop_source(ClosedLoopShared& sh, const std::vector<EndpointId>& group,
                                                       EndpointStamping stamping, std::vector<Timeslot>& first_sent);
std::unique_ptr<TrafficSink> make_closed_loop_sink(ClosedLoopShared& sh, std::vector<FlowState>& states,
                                                   const std::vector<EndpointId>& group, EventLog* log,
                                                   uint64_t* unexpected);

}  // namespace flexplane
