// Named reasons for every drop and ECN mark. The framework counts events per
// (port, queue, reason); schemes only choose the reason. The last few are the
// framework's own: packets lost before reaching a queue (no_route,
// classifier_out_of_range) or on the way out of a router (link_collision,
// no_link, misdelivered), counted per router and written to losses.csv.
// A reason names the condition, not the scheme (`above_threshold` serves
// DCTCP and any other step marker on queue length; `sojourn_above_threshold`
// any step marker on delay), so results compare across schemes.
#pragma once

#include <cstdint>

namespace flexplane {

enum class Reason : uint8_t {
  kQueueFull = 0,       // tail drop: the queue is at its limit
  kAboveThreshold,      // queue longer than a fixed threshold (DCTCP K)
  kAqmEarly,            // probabilistic early drop/mark (RED)
  kAqmForced,           // RED average above max threshold
  kPhantomQueue,        // HULL phantom queue above its threshold
  kLowestPriority,      // pFabric: evicted as the least urgent packet
  kNoRoute,             // destination unknown to the routing table
  kBankOverflow,        // queue bank storage exhausted (scheme allowed more)
  kEndpointOverflow,    // live mode: an endpoint asked faster than its queue limit allows
  kSojournTime,         // dropped at dequeue: sojourn time above target for too long (CoDel)
  kFattestFlow,         // head of the queue with the most bytes, when the port is over its limit (FQ-CoDel)
  kSojournAboveThreshold,  // sojourn time above a fixed threshold: a step marker on delay (no "for too long")
  kClassifierRange,     // the classifier chose a queue the port does not have
  kLinkCollision,       // a router sent a second packet on one port in one timeslot
  kNoLink,              // a router sent on a port with nothing attached
  kMisdelivered,        // a router sent a packet to an endpoint other than its destination
  kCount
};

inline constexpr unsigned kNumReasons = static_cast<unsigned>(Reason::kCount);

inline const char* reason_name(Reason r) {
  switch (r) {
    case Reason::kQueueFull: return "queue_full";
    case Reason::kAboveThreshold: return "above_threshold";
    case Reason::kAqmEarly: return "aqm_early";
    case Reason::kAqmForced: return "aqm_forced";
    case Reason::kPhantomQueue: return "phantom_queue";
    case Reason::kLowestPriority: return "lowest_priority";
    case Reason::kNoRoute: return "no_route";
    case Reason::kBankOverflow: return "bank_overflow";
    case Reason::kEndpointOverflow: return "endpoint_overflow";
    case Reason::kSojournTime: return "sojourn_time";
    case Reason::kFattestFlow: return "fattest_flow";
    case Reason::kSojournAboveThreshold: return "sojourn_above_threshold";
    case Reason::kClassifierRange: return "classifier_out_of_range";
    case Reason::kLinkCollision: return "link_collision";
    case Reason::kNoLink: return "no_link";
    case Reason::kMisdelivered: return "misdelivered";
    case Reason::kCount: break;
  }
  return "unknown";
}

}  // namespace flexplane
