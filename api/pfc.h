// Priority flow control (IEEE 802.1Qbb) for pattern routers: lossless
// Ethernet's hop-by-hop back-pressure.
//
// Principles
//  - Ingress accounting: the queue bank records each packet's ingress port
//    and counts, per (ingress port, priority), the packets the router holds
//    that came in there (QueueBank::keep_ingress). A packet's priority is the
//    queue its classifier chose (at most 8 queues per port with PFC).
//  - Pause when an (ingress, priority) reaches its XOFF threshold, resume when
//    it falls to XON: the static xoff_pkts / xon_pkts, or with alpha > 0 the
//    shared buffer's dynamic threshold alpha x (buffer_pkts - packets held),
//    as switch ASICs do, whichever is lower (XON keeps its distance to XOFF).
//  - Edges, not quanta: a frame goes out when a port's paused set changes
//    (802.1Qbb's pause time is modelled as "until resumed"; real switches
//    refresh XOFF before it expires, which has the same effect). One frame
//    per port per timeslot at most, decided after the timeslot's arrivals
//    and departures; the engine carries it to the neighbour with the link's
//    latency and the neighbour stops the paused queues of its port towards
//    us (QueueBank::set_paused), so a scheduler never sees them.
//  - Headroom is what an (ingress, priority) takes after its XOFF went out:
//    the packets in flight on the link and those the neighbour sent before
//    the frame arrived, about 2 x latency + 2. The bank's queue capacity
//    must leave room for it; an arrival that finds its (ingress, priority)
//    over xoff + headroom_pkts is counted (headroom_overruns) as the sign
//    of a buffer that is too small, and whatever the queue manager then
//    drops is a drop like any other. A lossless run has neither.
//  - Counters per (port, priority), formatted only when dumped (pfc.csv):
//    as an ingress, the pauses it sent and for how long; as an egress, the
//    pauses it received and for how long it was stopped.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "api/params.h"
#include "api/queue_bank.h"
#include "api/router.h"

namespace flexplane {

struct PfcParams {
  uint32_t xoff_pkts = 32;         // pause an (ingress port, priority) holding this many packets
  uint32_t xon_pkts = 24;          // resume it once it holds this many or fewer
  double alpha = 0;                // > 0: also pause at alpha x (buffer_pkts - packets held)
  uint32_t buffer_pkts = 4096;     // the router's shared buffer (for alpha)
  uint32_t headroom_pkts = 64;     // expected above XOFF; arrivals beyond are headroom_overruns
  uint32_t priorities = 0xff;      // lossless priorities, bit q: queue q (others never pause)

  void validate(const std::string&) const {
    if (xon_pkts >= xoff_pkts)
      throw FieldError({"xon_pkts", "xoff_pkts"}, "xon_pkts (" + std::to_string(xon_pkts) +
                                                      ") must be below xoff_pkts (" + std::to_string(xoff_pkts) +
                                                      "): give both, xon first below xoff");
  }
};

// The schema, shared by every router's `pfc:` block (docs/config.md, "pfc").
inline const ParamSchema<PfcParams>& pfc_schema() {
  static const ParamSchema<PfcParams> schema({
      param(&PfcParams::xoff_pkts, "xoff_pkts", "pause an (ingress port, priority) once it holds this many packets",
            {1, 1 << 24}),
      param(&PfcParams::xon_pkts, "xon_pkts", "resume it once it holds this many or fewer", {0, 1 << 24}),
      param(&PfcParams::alpha, "alpha",
            "dynamic threshold: also pause at alpha x free shared buffer (0: static thresholds only)", {0, 1e6}),
      param(&PfcParams::buffer_pkts, "buffer_pkts", "the router's shared buffer, packets (for alpha)", {1, 1 << 24}),
      param(&PfcParams::headroom_pkts, "headroom_pkts",
            "packets an (ingress, priority) may take past XOFF before arrivals count as headroom_overruns",
            {0, 1 << 24}),
      param(&PfcParams::priorities, "priorities", "lossless priorities as a bit mask (bit q: queue q)", {1, 255}),
  });
  return schema;
}

// Per (port, priority); pause times in timeslots, the one still open counted up to the dump.
struct PfcCounters {
  uint64_t pauses_sent = 0;      // XOFF frames this port's ingress sent upstream
  uint64_t resumes_sent = 0;     // XON frames
  uint64_t paused_sent_ts = 0;   // timeslots the upstream neighbour was told to stay paused
  uint64_t pauses_received = 0;  // XOFF frames that stopped this port's egress
  uint64_t paused_ts = 0;        // timeslots this port's egress was paused
  uint64_t headroom_overruns = 0;
  uint32_t max_ingress_pkts = 0;  // most packets held from this ingress at once
};

class PfcState {
 public:
  void bind(const PfcParams& p, QueueBank* bank, uint16_t num_ports) {
    params_ = p;
    bank_ = bank;
    num_ports_ = num_ports;
    queues_ = bank->queues_per_port();
    counters_.assign(size_t{num_ports} * QueueBank::kPfcPriorities, PfcCounters{});
    sent_since_.assign(counters_.size(), 0);
    received_since_.assign(counters_.size(), 0);
    sent_state_.assign(num_ports, 0);
    received_state_.assign(num_ports, 0);
    frames_.clear();
  }
  const PfcParams& params() const { return params_; }

  // After an arrival from `in` into queue q (the router calls it per packet).
  void arrived(PortId in, QueueId q) {
    PfcCounters& c = at(in, q);
    const uint32_t held = bank_->ingress_packets(in, q);
    c.max_ingress_pkts = std::max(c.max_ingress_pkts, held);
    if (held > params_.xoff_pkts + params_.headroom_pkts) ++c.headroom_overruns;
  }

  // After a timeslot's arrivals and departures: a frame for each ingress
  // whose paused set changed.
  void update(Timeslot now) {
    uint32_t xoff = params_.xoff_pkts, xon = params_.xon_pkts;
    if (params_.alpha > 0) {
      uint64_t held = 0;
      for (PortId p = 0; p < num_ports_; ++p) held += bank_->port_packets(p);
      const double free = held >= params_.buffer_pkts ? 0.0 : static_cast<double>(params_.buffer_pkts - held);
      const uint32_t dyn = static_cast<uint32_t>(std::max(1.0, params_.alpha * free));
      if (dyn < xoff) {
        xon = dyn > xoff - xon ? dyn - (xoff - xon) : 0;
        xoff = dyn;
      }
    }
    for (PortId in = 0; in < num_ports_; ++in) {
      uint8_t state = sent_state_[in];
      for (QueueId q = 0; q < queues_; ++q) {
        if (!(params_.priorities >> q & 1)) continue;
        const uint32_t held = bank_->ingress_packets(in, q);
        const uint8_t bit = static_cast<uint8_t>(1u << q);
        if (!(state & bit) && held >= xoff) {
          state |= bit;
          ++at(in, q).pauses_sent;
          sent_since_[in * QueueBank::kPfcPriorities + q] = now;
        } else if ((state & bit) && held <= xon) {
          state &= static_cast<uint8_t>(~bit);
          ++at(in, q).resumes_sent;
          at(in, q).paused_sent_ts += now - sent_since_[in * QueueBank::kPfcPriorities + q];
        }
      }
      if (state != sent_state_[in]) {
        sent_state_[in] = state;
        frames_.push_back(PauseFrame{in, state});
      }
    }
  }

  uint32_t take_frames(PauseFrame* out) {
    const uint32_t n = static_cast<uint32_t>(frames_.size());
    std::copy(frames_.begin(), frames_.end(), out);
    frames_.clear();
    return n;
  }

  // A frame from the neighbour on `port`: stop (or restart) those queues.
  void received(PortId port, uint8_t paused, Timeslot now) {
    if (port >= num_ports_) return;
    const uint8_t was = received_state_[port];
    for (QueueId q = 0; q < QueueBank::kPfcPriorities; ++q) {
      const uint8_t bit = static_cast<uint8_t>(1u << q);
      const size_t i = size_t{port} * QueueBank::kPfcPriorities + q;
      if ((paused & bit) && !(was & bit)) {
        ++counters_[i].pauses_received;
        received_since_[i] = now;
      } else if (!(paused & bit) && (was & bit)) {
        counters_[i].paused_ts += now - received_since_[i];
      }
    }
    received_state_[port] = paused;
    bank_->set_paused(port, paused);
  }

  // Counters of (port, priority) with pauses still in force counted up to `now`.
  PfcCounters counters(PortId port, QueueId q, Timeslot now) const {
    const size_t i = size_t{port} * QueueBank::kPfcPriorities + q;
    PfcCounters c = counters_[i];
    if (sent_state_[port] >> q & 1) c.paused_sent_ts += now - sent_since_[i];
    if (received_state_[port] >> q & 1) c.paused_ts += now - received_since_[i];
    return c;
  }
  uint16_t num_ports() const { return num_ports_; }
  uint16_t priorities() const { return queues_; }

 private:
  PfcCounters& at(PortId port, QueueId q) { return counters_[size_t{port} * QueueBank::kPfcPriorities + q]; }

  PfcParams params_;
  QueueBank* bank_ = nullptr;
  uint16_t num_ports_ = 0;
  uint16_t queues_ = 1;
  std::vector<PfcCounters> counters_;     // [port][priority]
  std::vector<Timeslot> sent_since_;      // [port][priority]: when its ingress paused the neighbour
  std::vector<Timeslot> received_since_;  // [port][priority]: when its egress was paused
  std::vector<uint8_t> sent_state_;       // per port: priorities its ingress has paused
  std::vector<uint8_t> received_state_;   // per port: priorities its egress is paused for
  std::vector<PauseFrame> frames_;        // to send after this timeslot
};

}  // namespace flexplane
