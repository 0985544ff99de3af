// One output port: the registered scheme (classify -> enqueue -> schedule)
// applied to real packets, and the port drained at its line rate.
//
// Principles
//  - The scheme is the emulator's: build_router() from the same config keys
//    gives a Router (PatternRouter for every preset) with one port. This file
//    is the adapter between it and DPDK (docs/design.md "Router mode"):
//      * each mbuf travels as an abstract Packet whose custom[0..1] hold the
//        mbuf pointer and whose size_bytes is the real frame length;
//      * `now` is the port's tick, one nanosecond of the TSC clock since the
//        start, and RouterEnv::time says so (ns_per_tick 1, the port's line
//        rate as link_bytes_per_tick): schemes state their parameters in
//        time units (api/time.h) and so keep their meaning on a real link;
//      * a drop reported to the EventSink frees the mbuf; a CE flag set by
//        Verdicts::mark_ecn is written into the real IP header (checksum
//        updated) as the packet leaves.
//  - Byte-accurate pacing: a departure reserves (frame + wire overhead) bytes
//    of link time; the scheduler is asked for a packet only when the link is
//    free, so the backlog sits in the scheme's queues, where the emulator has
//    it, and not in the device's ring. A device that takes fewer packets than
//    offered keeps the rest (no loss) and the port waits.
//  - Owned by one worker: no locks. Other workers hand packets over by ring.
#pragma once

#include <rte_mbuf.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/router.h"
#include "api/routing_table.h"
#include "emulator/config/router_factory.h"
#include "router/config.h"

namespace flexplane::router {

// Where a Packet keeps its mbuf.
inline void attach_mbuf(Packet& p, rte_mbuf* m) {
  const uintptr_t v = reinterpret_cast<uintptr_t>(m);
  p.custom[0] = static_cast<uint32_t>(v);
  p.custom[1] = static_cast<uint32_t>(v >> 32);
}
inline rte_mbuf* mbuf_of(const Packet& p) {
  return reinterpret_cast<rte_mbuf*>(static_cast<uintptr_t>(p.custom[0]) | (static_cast<uintptr_t>(p.custom[1]) << 32));
}

// The abstract view of a forwarded frame (Ethernet + valid IPv4 header at
// l2_len): flow = CRC32C of addresses, protocol and ports (addresses and
// protocol only for fragments, so a datagram's fragments stay together);
// src = the low 16 bits of the IPv4 source (by_source queues); dst = 0;
// size_bytes = frame length; ECT/CE from the ECN bits; dscp; priority 0.
void describe_packet(rte_mbuf* m, uint32_t seq, Packet* out);

struct PortTiming {
  uint64_t tsc_hz = 0;
  uint64_t tsc_start = 0;           // tick 0
  double nominal_rate_mbps = 10000;  // for ticks when the port is unpaced
};

// Counters a port publishes for the live display (owner writes, anyone reads).
struct PortSnapshot {
  std::atomic<uint64_t> arrived{0}, sent{0}, sent_bytes{0}, dropped{0}, marked{0}, backlog_pkts{0}, backlog_bytes{0};
};

// One value a scheme exported (api/scheme_stats.h) at an occupancy sample.
struct SchemeStatSample {
  uint32_t sample;  // index into occupancy()
  uint16_t stat;    // index into scheme()->stat_descs()
  uint16_t queue;   // ignored for per-port statistics
  double value;
};

struct OccupancySample {
  uint64_t tick;
  double time_us;
  uint32_t packets;
  uint64_t bytes;
};

class PortScheduler {
 public:
  PortScheduler(uint16_t port, uint16_t tx_queue, const PortSettings& settings, const RunSettings& run,
                const PortTiming& timing, uint64_t seed);
  ~PortScheduler();
  PortScheduler(const PortScheduler&) = delete;
  PortScheduler& operator=(const PortScheduler&) = delete;

  // Packets routed to this port, ready to send (headers rewritten).
  void enqueue(rte_mbuf** pkts, uint32_t n, uint64_t tsc);
  // Send what the line rate allows now; returns frames handed to the device.
  uint32_t drain(uint64_t tsc);
  // Nothing queued and nothing waiting for the device.
  bool idle() const { return pending_ == 0 && (!router_ || router_->bank().port_packets(0) == 0); }
  // At exit: free what is still queued (it stays counted as backlog).
  void release_backlog();
  void publish_snapshot();

  uint16_t port() const { return port_; }
  const Router* scheme() const { return router_.get(); }
  const ResolvedRouter& resolved() const { return resolved_; }
  const std::vector<OccupancySample>& occupancy() const { return occupancy_; }
  const std::vector<SchemeStatSample>& scheme_stats() const { return stats_; }
  const PortSnapshot& snapshot() const { return snapshot_; }
  uint64_t ticks(uint64_t tsc) const { return static_cast<uint64_t>((tsc - timing_.tsc_start) * ticks_per_cycle_); }
  static constexpr double ns_per_tick() { return 1.0; }
  uint64_t tx_packets() const { return tx_packets_; }
  uint64_t tx_bytes() const { return tx_bytes_; }
  uint64_t tx_refused() const { return tx_refused_; }  // unpaced bypass only: device ring full

 private:
  class FreeSink;
  void flush_frees();
  void sample(uint64_t tsc);

  uint16_t port_, tx_queue_;
  PortSettings settings_;
  RunSettings run_;
  PortTiming timing_;
  std::unique_ptr<Router> router_;  // null when run.queueing is false
  ResolvedRouter resolved_;
  RoutingTable table_;
  std::unique_ptr<FreeSink> sink_;
  double ticks_per_cycle_;
  double cycles_per_byte_ = 0;  // 0: unpaced
  double next_free_ = 0;        // TSC at which the link can start the next frame
  double slack_cycles_ = 0;
  uint32_t max_frame_ = 0;        // largest frame ever queued, bytes (bounds a paced burst)
  double max_frame_cycles_ = 1;   // its link time with wire overhead
  uint32_t seq_ = 0;
  std::vector<Packet> pkts_;
  std::vector<rte_mbuf*> tx_;
  std::vector<uint32_t> tx_len_;  // [i]: tx_[i]'s length, read before the device owns it
  uint32_t pending_ = 0;  // tx_[0..pending_) refused by the device last time
  std::vector<rte_mbuf*> frees_;
  uint64_t tx_packets_ = 0, tx_bytes_ = 0, tx_refused_ = 0;
  uint64_t sample_every_ = 0, next_sample_ = 0;
  std::vector<OccupancySample> occupancy_;
  std::vector<SchemeStatSample> stats_;
  bool has_stats_ = false;
  PortSnapshot snapshot_;
};

}  // namespace flexplane::router
