// Always-backlogged all-to-all traffic for benchmarks and stress tests: every
// endpoint sends a packet every timeslot, cycling its destination through the
// other endpoints of its own group, so each ToR output port also receives
// exactly one packet per timeslot (every port busy, no queue build-up).
#pragma once

#include <memory>
#include <vector>

#include "emulator/traffic/traffic.h"

namespace flexplane {

class BacklogTraffic final : public Traffic {
 public:
  explicit BacklogTraffic(uint16_t packet_bytes = 1500, bool ect = true) : bytes_(packet_bytes), ect_(ect) {}

  std::unique_ptr<TrafficSource> make_source(const std::vector<EndpointId>& group) override {
    return std::make_unique<Source>(group, bytes_, ect_);
  }
  std::unique_ptr<TrafficSink> make_sink(const std::vector<EndpointId>&, EventLog*) override {
    sinks_.push_back(new Sink);
    return std::unique_ptr<TrafficSink>(sinks_.back());
  }
  // Packets delivered to endpoints (read after run()).
  uint64_t delivered() const {
    uint64_t n = 0;
    for (const Sink* s : sinks_) n += s->count;
    return n;
  }

 private:
  class Source final : public TrafficSource {
   public:
    Source(std::vector<EndpointId> group, uint16_t bytes, bool ect) : group_(std::move(group)) {
      tmpl_.size_bytes = bytes;
      tmpl_.flags = ect ? kFlagEct : 0;
    }
    uint32_t emit(Timeslot now, Packet* out, uint32_t* local) override {
      const uint32_t n = static_cast<uint32_t>(group_.size());
      if (n < 2) return 0;
      const uint32_t shift = 1 + static_cast<uint32_t>(now % (n - 1));
      // Built in a local and stored whole; destination i + shift, wrapping
      // (two loops: no per-packet test).
      Packet p = tmpl_;
      p.seq = static_cast<uint32_t>(now);
      const EndpointId* g = group_.data();
      const uint32_t wrap = n - shift;
      for (uint32_t i = 0; i < wrap; ++i) {
        p.flow = i;
        p.src = g[i];
        p.dst = g[i + shift];
        out[i] = p;
        local[i] = i;
      }
      for (uint32_t i = wrap; i < n; ++i) {
        p.flow = i;
        p.src = g[i];
        p.dst = g[i - wrap];
        out[i] = p;
        local[i] = i;
      }
      return n;
    }
    // Every destination is in the group.
    Timeslot remote_quiet_until(Timeslot) override { return kNoRemoteTraffic; }

   private:
    std::vector<EndpointId> group_;
    Packet tmpl_{};
  };

  // Own cache line: sinks of different cores are allocated side by side.
  struct alignas(64) Sink final : TrafficSink {
    uint64_t count = 0;
    void deliver(const Packet*, uint32_t n, Timeslot) override { count += n; }
  };

  uint16_t bytes_;
  bool ect_;
  std::vector<Sink*> sinks_;  // owned by the engine's endpoint groups
};

}  // namespace flexplane
