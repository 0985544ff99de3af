// What the workers and the control thread share: ports, the forwarding
// table, the rings between them, and the run's phase flags.
//
// Threads
//  - Workers (one per lcore; fast_path.h) poll their RX queues, forward, and
//    each owns the output ports (scheme + pacing + TX queue 0) given to it.
//    A packet for a port owned elsewhere goes over an SPSC ring
//    handoff[worker][port] to its owner.
//  - The control thread (slow_path.h, router_app.h) takes exceptions from one
//    MPSC ring, injects replies and slow-forwarded packets into inject[port]
//    (SPSC to the port's owner), reloads routes and prints counters.
#pragma once

#include <rte_mbuf.h>
#include <rte_ring.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "router/counters.h"
#include "router/fib.h"

namespace flexplane::router {

class PortScheduler;

struct PortInfo {
  uint16_t id = 0;
  Mac mac{};
  PortAddress addr;
  uint32_t mtu_bytes = 1500;
  uint32_t owner = 0;     // worker that owns its scheme and TX queue 0
  uint16_t rx_queues = 1;
  PortScheduler* sched = nullptr;  // the owner's scheduler (queueing mode)
};

// An exception's reason and context travel in the mbuf's hash field (the RSS
// hash is not used after RX).
inline void set_exception(rte_mbuf* m, Exception e, uint32_t detail) {
  m->hash.fdir.lo = detail;
  m->hash.fdir.hi = static_cast<uint32_t>(e);
}
inline Exception exception_of(const rte_mbuf* m) { return static_cast<Exception>(m->hash.fdir.hi); }
inline uint32_t exception_detail(const rte_mbuf* m) { return m->hash.fdir.lo; }

struct Shared {
  std::vector<PortInfo> ports;
  uint32_t num_workers = 1;
  Fib* fib = nullptr;
  NeighborTable* neighbors = nullptr;
  rte_rcu_qsbr* qs = nullptr;
  rte_ring* slow = nullptr;                       // workers -> control (MP/SC)
  std::vector<rte_ring*> inject;                  // [port] control -> owner (SP/SC)
  std::vector<std::vector<rte_ring*>> handoff;    // [worker][port] worker -> owner; null when the worker owns it
  rte_mempool* pool = nullptr;

  // Phases: run -> rx_stop (workers stop receiving and say so in rx_done;
  // the control thread stops injecting and sets inject_done) -> workers drain
  // their queues and leave when empty or at drain_deadline_tsc.
  std::atomic<bool> rx_stop{false};
  std::atomic<uint32_t> rx_done{0};
  std::atomic<bool> inject_done{false};
  std::atomic<uint64_t> drain_deadline_tsc{~uint64_t{0}};
};

}  // namespace flexplane::router
