// Per (port, queue) counters, owned by the framework (never by schemes).
//
// Invariants, checked in tests after every run:
//   arrived  == enqueued + dropped_on_arrival
//   enqueued == dequeued + dropped_from_queue + backlog
//   dropped_on_arrival + dropped_from_queue == sum(drops[reason])
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
  uint64_t dropped_from_queue = 0;  // evicted after being enqueued (e.g. pFabric)
  uint64_t marked = 0;              // CE marks
  uint64_t drops[kNumReasons] = {};
  uint64_t marks[kNumReasons] = {};

  void add(const QueueCounters& o) {
    arrived += o.arrived;
    enqueued += o.enqueued;
    dequeued += o.dequeued;
    dropped_on_arrival += o.dropped_on_arrival;
    dropped_from_queue += o.dropped_from_queue;
    marked += o.marked;
    for (unsigned r = 0; r < kNumReasons; ++r) {
      drops[r] += o.drops[r];
      marks[r] += o.marks[r];
    }
  }
};

}  // namespace flexplane
