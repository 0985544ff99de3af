// Time as a component sees it.
//
// The engine counts time in *ticks* (`Timeslot`). In the timeslot emulator a
// tick is one timeslot: the time a link needs to send one abstract packet.
// In router mode a tick will be a finer unit of a real clock and packets will
// have real sizes, so a scheme must never assume that one tick is one
// packet's transmission time. Instead:
//  - parameters are stated in the literature's units (`target_us`,
//    `interval_ms`) and converted once, in on_bind(), with from_us() /
//    from_ms();
//  - rates are derived from the link: a port sends link_bytes_per_tick bytes
//    per tick at line rate (HULL's phantom drain, RED's idle decay);
//  - a packet's enqueue time is QueueBank::enqueue_time() (ticks), for
//    schemes that declare kUsesEnqueueTime.
#pragma once

#include <cmath>
#include <cstdint>

#include "api/packet.h"

namespace flexplane {

struct TimeBase {
  double ns_per_tick = 1200;          // wall-clock length of one tick
  double link_bytes_per_tick = 1500;  // bytes one port sends per tick at line rate

  // Durations to ticks, rounded to the nearest tick.
  Timeslot from_ns(double ns) const { return static_cast<Timeslot>(std::llround(ns / ns_per_tick)); }
  Timeslot from_us(double us) const { return from_ns(us * 1e3); }
  Timeslot from_ms(double ms) const { return from_ns(ms * 1e6); }
  // Ticks to durations.
  double to_ns(double ticks) const { return ticks * ns_per_tick; }
  double to_us(double ticks) const { return ticks * ns_per_tick * 1e-3; }
  double to_s(double ticks) const { return ticks * ns_per_tick * 1e-9; }
  // Bytes a port sends at line rate in `ticks`, and ticks it needs for `bytes`.
  double bytes_in(double ticks) const { return ticks * link_bytes_per_tick; }
  double ticks_for(double bytes) const { return bytes / link_bytes_per_tick; }
};

}  // namespace flexplane
