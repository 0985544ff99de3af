// The worker: a run-to-completion loop over its RX queues, the forwarding
// fast path, and the output ports it owns.
//
// Per RX burst (burst = run.burst, default 64):
//   1. parse + validate every frame (Ethernet to us, RFC 1812 IPv4 checks);
//      malformed frames are counted by reason and freed, exceptions (ARP,
//      options, local, ...) leave the burst for the slow path;
//   2. one rte_lpm_lookup_bulk over the survivors;
//   3. per packet: next hop -> (port, MAC) or another exception; TTL - 1 with
//      an incremental checksum; Ethernet addresses rewritten;
//   4. per output port, the batch joins that port's scheme (owned here) or
//      the hand-off ring to its owner; exceptions go to the slow path in one
//      ring operation.
// Then the owned ports take what other workers and the slow path handed
// over, and each is drained at its line rate. After every iteration the
// worker reports a quiescent state (route updates wait for it).
// Cycles per packet are measured with rte_rdtsc around each iteration that
// did work; see docs/performance.md for the figures.
#pragma once

#include <rte_mbuf.h>

#include <cstdint>
#include <vector>

#include "router/config.h"
#include "router/context.h"

namespace flexplane::router {

class Worker {
 public:
  // `rx`: the (port, queue) pairs this worker polls. `local[port]`: the
  // scheduler this worker enqueues into directly (it owns the port, or in the
  // unpaced baseline every worker has its own TX queue), else null.
  // Ports with owner == id are this worker's to drain, and it takes their
  // hand-off and inject rings.
  Worker(uint32_t id, Shared& shared, const RunSettings& run, std::vector<std::pair<uint16_t, uint16_t>> rx,
         std::vector<PortScheduler*> local);

  // The loop; returns after the drain phase.
  void run();

  // Forward one received burst (exposed for benchmarks and tests).
  void process_burst(uint16_t in_port, rte_mbuf** pkts, uint32_t n, uint64_t tsc);

  const FastPathCounters& counters() const { return counters_; }
  uint32_t id() const { return id_; }

 private:
  void drop(rte_mbuf* m, FastDrop why) {
    counters_.drops[static_cast<unsigned>(why)].add(1);
    frees_[nfree_++] = m;
  }
  void to_slow(rte_mbuf* m, Exception e, uint32_t detail) {
    set_exception(m, e, detail);
    counters_.exceptions[static_cast<unsigned>(e)].add(1);
    slow_[nslow_++] = m;
  }
  void flush(uint64_t tsc);
  uint32_t take_handoffs(uint64_t tsc);
  bool owned_idle() const;

  uint32_t id_;
  Shared& sh_;
  RunSettings run_;
  std::vector<std::pair<uint16_t, uint16_t>> rx_;
  std::vector<PortScheduler*> local_;  // [port]
  std::vector<uint16_t> owned_;        // ports whose queues this worker drains
  std::vector<rte_ring*> my_handoffs_;  // rings from this worker to other owners
  std::vector<uint64_t> port_mac_;     // [port] MAC as a 64-bit word (6 bytes used)
  std::vector<uint32_t> port_mtu_;     // [port]
  FastPathCounters counters_;

  // Per-burst scratch.
  std::vector<rte_mbuf*> rx_burst_, frees_, slow_;
  uint32_t nfree_ = 0, nslow_ = 0;
  std::vector<uint32_t> dst_, hop_, idx_;
  std::vector<std::vector<rte_mbuf*>> out_;  // [port] batch for that port
  std::vector<uint32_t> out_n_;              // [port]
  std::vector<uint16_t> touched_;            // ports with a batch
};

}  // namespace flexplane::router
