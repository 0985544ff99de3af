// Per (port, queue) counters, owned by the framework (never by schemes).
//
// Invariants, checked in tests for every registered scheme:
//   arrived  == enqueued + dropped_on_arrival
//   enqueued == dequeued + dropped_at_dequeue + evicted + backlog
//   dropped_on_arrival + dropped_at_dequeue + evicted == sum(drops[reason])
//   marked == sum(marks[reason])
// Increments are plain adds on the owning core; they are formatted only when dumped.
#pragma once

#include <cstdint>

#include "api/reason.h"

namespace flexplane {

struct QueueCounters {
  uint64_t arrived = 0;             // offered to the queue manager for this queue
  uint64_t enqueued = 0;            // accepted into the queue bank
  uint64_t dequeued = 0;            // sent by the scheduler
  uint64_t dropped_on_arrival = 0;  // refused by the queue manager
  uint64_t dropped_at_dequeue = 0;  // the head, dropped instead of sent (e.g. CoDel)
  uint64_t evicted = 0;             // dropped from the queue on a later arrival (e.g. pFabric)
  uint64_t marked = 0;              // CE marks
  uint64_t drops[kNumReasons] = {};
  uint64_t marks[kNumReasons] = {};

  uint64_t dropped() const { return dropped_on_arrival + dropped_at_dequeue + evicted; }

  void add(const QueueCounters& o) {
    arrived += o.arrived;
    enqueued += o.enqueued;
    dequeued += o.dequeued;
    dropped_on_arrival += o.dropped_on_arrival;
    dropped_at_dequeue += o.dropped_at_dequeue;
    evicted += o.evicted;
    marked += o.marked;
    for (unsigned r = 0; r < kNumReasons; ++r) {
      drops[r] += o.drops[r];
      marks[r] += o.marks[r];
    }
  }
};

}  // namespace flexplane
