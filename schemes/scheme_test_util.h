// Test helper for schemes: a real PatternRouter built from registry names and
// parameters, with dst endpoint i routed to port i, a drop log, and the
// framework's accounting invariants. Header only; include from *_test.cc.
//
//   TestRouter r(2, {{"single"}, {"droptail", {{"capacity_pkts", "4"}}}, {"fifo"}});
//   r.input({pkt(1, 0, /*dst=*/1)}, /*now=*/0);
//   auto sent = r.output(0);  // [(port, packet)]
//   r.check_invariants();
#pragma once

#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "api/pattern_router.h"
#include "api/registry.h"
#include "api/routing_table.h"

namespace flexplane::test {

// A component by registry name, with parameters as a config would give them.
struct Spec {
  std::string name;
  std::vector<std::pair<std::string, std::string>> params = {};
};

struct Components {
  Spec classifier;
  Spec queue_manager;
  Spec scheduler;
};

// The components of a registered scheme preset, with no parameter overrides.
inline Components preset(const std::string& scheme) {
  const SchemePreset* s = SchemeRegistry::instance().find(scheme);
  REQUIRE(s != nullptr);
  return {{s->classifier}, {s->queue_manager}, {s->scheduler}};
}

template <class Base>
std::unique_ptr<Base> make_component(const Spec& spec) {
  ParamValues values;
  values.where = "test";
  for (const auto& [k, v] : spec.params) values.set(k, v);
  return Registry<Base>::instance().get(spec.name, "test").make(values, nullptr);
}

// The small parameters a component declared for tests beside its registration
// (FLEXPLANE_TEST_PARAMS, api/registry.h); none if it declared none.
template <class Base>
std::vector<std::pair<std::string, std::string>> test_params(const std::string& name) {
  return TestParams<Base>::instance().get(name);
}
inline std::vector<std::pair<std::string, std::string>> quick_params(const std::string& qm) {
  return test_params<QueueManagerBase>(qm);
}
// A component with its declared test parameters.
template <class Base>
Spec with_test_params(const std::string& name) {
  return {name, test_params<Base>(name)};
}
// Components registered by tests ("test_..."), which the generic loops skip.
inline bool registered_by_a_test(const std::string& name) { return name.rfind("test_", 0) == 0; }

// A 1500-byte abstract packet of `flow` to endpoint `dst` (so it leaves on port `dst`).
inline Packet pkt(uint32_t flow, uint32_t seq, EndpointId dst = 0, uint16_t size_bytes = 1500) {
  Packet p{};
  p.flow = flow;
  p.seq = seq;
  p.dst = dst;
  p.size_bytes = size_bytes;
  return p;
}

// A packet from endpoint `src` whose flow id is the source, so a test can
// read the service order back with flow_ids().
inline Packet from_source(EndpointId src, uint32_t seq, uint16_t size_bytes = 1500) {
  Packet p = pkt(src, seq, 0, size_bytes);
  p.src = src;
  return p;
}

// A packet of `flow` to port 0 with scheme priority `prio` (lower is more urgent).
inline Packet with_priority(uint32_t flow, uint32_t seq, uint32_t prio) {
  Packet p = pkt(flow, seq, 0);
  p.priority = prio;
  return p;
}

// The flow ids of `pkts`, in order.
inline std::vector<uint32_t> flow_ids(const std::vector<Packet>& pkts) {
  std::vector<uint32_t> out;
  for (const Packet& p : pkts) out.push_back(p.flow);
  return out;
}

struct DropLog : EventSink {
  struct Drop {
    Packet p;
    PortId port;
    Reason reason;
    Timeslot now;
  };
  std::vector<Drop> drops;
  void on_drop(const Packet& p, uint32_t, PortId port, Reason r, Timeslot now) override {
    drops.push_back({p, port, r, now});
  }
  size_t count(Reason r) const {
    size_t n = 0;
    for (const auto& d : drops) n += d.reason == r;
    return n;
  }
};

// A tick is 1 us in tests (so `_us` parameters are ticks), and a link sends
// one mtu_bytes packet per tick, as in the emulator.
inline constexpr double kNsPerTick = 1000;

class TestRouter {
 public:
  TestRouter(uint16_t num_ports, const Components& c, uint64_t seed = 1, uint32_t mtu_bytes = 1500,
             double ns_per_tick = kNsPerTick, const PfcParams* pfc = nullptr)
      : routes_(num_ports, 0),
        router_(make_component<ClassifierBase>(c.classifier), make_component<QueueManagerBase>(c.queue_manager),
                make_component<SchedulerBase>(c.scheduler)) {
    if (pfc) router_.enable_pfc(*pfc, "test.pfc");
    for (PortId i = 0; i < num_ports; ++i) routes_.set(i, {i});
    RouterEnv env;
    env.num_ports = num_ports;
    env.mtu_bytes = mtu_bytes;
    env.time = TimeBase{ns_per_tick, static_cast<double>(mtu_bytes)};
    env.routes = &routes_;
    env.sink = &log;
    env.seed = seed;
    router_.bind(env);
  }
  TestRouter(const TestRouter&) = delete;  // the router keeps pointers into this object
  TestRouter& operator=(const TestRouter&) = delete;

  void input(std::vector<Packet> pkts, Timeslot now) {
    router_.input(pkts.data(), static_cast<uint32_t>(pkts.size()), now);
  }
  void input(const Packet& p, Timeslot now) { input(std::vector<Packet>{p}, now); }
  // PFC: packets with their ingress ports.
  void input_from(std::vector<Packet> pkts, std::vector<PortId> ingress, Timeslot now) {
    REQUIRE(pkts.size() == ingress.size());
    router_.input_from(pkts.data(), ingress.data(), static_cast<uint32_t>(pkts.size()), now);
  }
  std::vector<PauseFrame> pause_frames(Timeslot now) {
    std::vector<PauseFrame> f(bank().num_ports());
    f.resize(router_.pause_frames(now, f.data()));
    return f;
  }
  void input_in_order(std::vector<Packet> pkts, Timeslot now) {
    router_.input_in_order(pkts.data(), static_cast<uint32_t>(pkts.size()), now);
  }

  // One timeslot of output: at most one (port, packet) per port.
  std::vector<std::pair<PortId, Packet>> output(Timeslot now) {
    const uint16_t n = bank().num_ports();
    std::vector<Packet> out(n);
    std::vector<PortId> ports(n);
    const uint32_t m = router_.output(now, out.data(), ports.data());
    std::vector<std::pair<PortId, Packet>> sent;
    for (uint32_t i = 0; i < m; ++i) sent.emplace_back(ports[i], out[i]);
    return sent;
  }

  // Output timeslots from `now` on until the router is empty; packets of `port` in send order.
  std::vector<Packet> drain(PortId port, Timeslot now) {
    std::vector<Packet> sent;
    for (bool busy = true; busy; ++now) {
      busy = false;
      bank().for_each_nonempty_port([&](PortId) { busy = true; });
      for (const auto& [p, pk] : output(now))
        if (p == port) sent.push_back(pk);
    }
    return sent;
  }

  const QueueBank& bank() const { return router_.bank(); }
  const PatternRouter& router() const { return router_; }
  PatternRouter& router() { return router_; }
  QueueCounters counters(PortId port, QueueId q = 0) const { return bank().counters(port, q); }
  uint64_t drops(PortId port, QueueId q, Reason r) const { return counters(port, q).drops[static_cast<unsigned>(r)]; }
  uint64_t marks(PortId port, QueueId q, Reason r) const { return counters(port, q).marks[static_cast<unsigned>(r)]; }

  // The framework's accounting invariants, for every (port, queue), and the
  // drop log agrees with the counters.
  void check_invariants() const {
    uint64_t all_drops = 0;
    for (PortId port = 0; port < bank().num_ports(); ++port)
      for (QueueId q = 0; q < bank().queues_per_port(); ++q) {
        const QueueCounters& c = counters(port, q);
        INFO("port " << port << " queue " << int(q));
        REQUIRE(c.arrived == c.enqueued + c.dropped_on_arrival);
        REQUIRE(c.enqueued == c.dequeued + c.dropped_at_dequeue + c.evicted + bank().packets(port, q));
        uint64_t drops = 0, marks = 0;
        for (unsigned r = 0; r < kNumReasons; ++r) drops += c.drops[r], marks += c.marks[r];
        REQUIRE(drops == c.dropped());
        REQUIRE(marks == c.marked);
        REQUIRE(c.drops[static_cast<unsigned>(Reason::kBankOverflow)] == 0);  // schemes must account for every packet
        all_drops += drops;
      }
    REQUIRE(log.drops.size() == all_drops + router_.losses().total());
  }

  // The router's scheme statistics for `port`: stat name -> queue -> value.
  std::map<std::string, std::map<QueueId, double>> stats(PortId port) const {
    const std::vector<StatDesc> descs = router_.stat_descs();
    struct Collect final : StatsOut {
      const std::vector<StatDesc>& d;
      std::map<std::string, std::map<QueueId, double>> out;
      explicit Collect(const std::vector<StatDesc>& descs) : d(descs) {}
      void put(unsigned stat, QueueId q, double v) override {
        REQUIRE(stat < d.size());
        out[d[stat].name][d[stat].scope == StatDesc::kPerQueue ? q : QueueId{0}] = v;
      }
    } c(descs);
    router_.sample_stats(port, c);
    return c.out;
  }

  DropLog log;

 private:
  RoutingTable routes_;
  PatternRouter router_;
};

// The generic overload (schemes/invariants_test.cc): 4 ports, seeded random
// arrivals of mixed sizes, ECN flags, priorities and custom[0] for 2000
// timeslots (about one per port per timeslot), then 1000 of draining; the
// framework's invariants are checked after every timeslot.
struct OverloadResult {
  uint64_t drops = 0;       // every drop the router reported
  uint64_t at_dequeue = 0;  // of which dropped at dequeue
};
inline OverloadResult overload(const Components& c, uint64_t seed) {
  constexpr uint16_t kPorts = 4;
  TestRouter r(kPorts, c, seed);
  Rng rng(seed, 77);
  uint64_t offered = 0, sent = 0;
  for (Timeslot t = 0; t < 3000; ++t) {
    std::vector<Packet> in;
    const uint32_t n = rng.below(t < 2000 ? 9 : 2);  // ~1 per port per timeslot, then draining
    for (uint32_t i = 0; i < n; ++i) {
      // One draw per statement: the order of a call's arguments is unspecified
      // (GCC and clang differ), and the stream must not depend on the compiler.
      const auto size = static_cast<uint16_t>(rng.below(4) ? 1500 : 64 + rng.below(1400));
      const auto dst = static_cast<EndpointId>(rng.below(kPorts));
      Packet p = pkt(rng.below(12), static_cast<uint32_t>(offered + i), dst, size);
      p.src = static_cast<EndpointId>(rng.below(40));
      p.flags = rng.below(2) ? kFlagEct : 0;
      p.priority = rng.below(100);
      p.custom[0] = rng.below(50000);
      in.push_back(p);
    }
    offered += n;
    r.input(in, t);
    std::vector<bool> port_sent(kPorts, false);
    for (const auto& [port, p] : r.output(t)) {
      REQUIRE(!port_sent[port]);  // at most one packet per port
      port_sent[port] = true;
      ++sent;
    }
    r.check_invariants();
  }
  uint64_t backlog = 0;
  for (PortId p = 0; p < kPorts; ++p) backlog += r.bank().port_packets(p);
  REQUIRE(offered == sent + r.log.drops.size() + backlog);
  OverloadResult out;
  out.drops = r.log.drops.size();
  for (PortId p = 0; p < kPorts; ++p)
    for (QueueId q = 0; q < r.bank().queues_per_port(); ++q) out.at_dequeue += r.counters(p, q).dropped_at_dequeue;
  return out;
}

// What to do when a queue manager dropped nothing in the overload: its
// default buffer is too deep for so short a test.
inline std::string no_drops_advice(const std::string& qm) {
  return "queue manager '" + qm + "' dropped nothing in the generic overload (4 ports, 2000 timeslots of 1 us): " +
         (TestParams<QueueManagerBase>::instance().declared(qm)
              ? "its test parameters (FLEXPLANE_TEST_PARAMS beside its registration) must make it drop"
              : "declare small test parameters beside its registration, e.g.\n  FLEXPLANE_TEST_PARAMS(QueueManagerBase, \"" +
                    qm + "\", {\"capacity_pkts\", \"40\"});\n(docs/writing-a-scheme.md, \"2. Test it\")");
}

}  // namespace flexplane::test
