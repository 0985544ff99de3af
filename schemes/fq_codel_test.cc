// FQ-CoDel (RFC 8290): a flow that becomes active goes before the backlogged ones (new list);
// a sparse flow's packets never wait behind an elephant's backlog; over the port's limit the
// fattest queue loses its head; CoDel acts per queue.
#include <catch2/catch.hpp>

#include "schemes/scheme_test_util.h"

using namespace flexplane;
using namespace flexplane::test;

namespace {

constexpr uint32_t kQueues = 8;

Components fq_codel(std::vector<std::pair<std::string, std::string>> qm = {}) {
  return {{"by_flow", {{"num_queues", std::to_string(kQueues)}}}, {"fq_codel", std::move(qm)}, {"fq"}};
}

// by_flow's queue for `flow` in TestRouter's router 0 (hash salted with ~router_id).
QueueId queue_of(uint32_t flow) { return static_cast<QueueId>(flow_hash(flow, ~0u) % kQueues); }

// A flow id other than `flow` that hashes to a different queue.
uint32_t other_queue_flow(uint32_t flow) {
  uint32_t f = flow + 1;
  while (queue_of(f) == queue_of(flow)) ++f;
  return f;
}

}  // namespace

TEST_CASE("fq_codel: a newly active flow is served before a backlogged one", "[schemes][fq_codel]") {
  // Quantum = 1500 = one packet. t=0: the elephant E (10 packets) is new: sent, deficit 0.
  // t=1, 2: E has used its quantum: it gets another and moves to the old list; sent.
  // t=3: the mouse M arrives and is new: it goes first. Then E again until it is empty.
  const uint32_t e = 1, m = other_queue_flow(e);
  TestRouter r(1, fq_codel());
  std::vector<Packet> elephant;
  for (uint32_t i = 0; i < 10; ++i) elephant.push_back(pkt(e, i, 0));
  r.input(elephant, 0);
  std::vector<uint32_t> order;
  for (Timeslot t = 0; t < 11; ++t) {
    if (t == 3) r.input(pkt(m, 0, 0), t);
    const auto out = r.output(t);
    REQUIRE(out.size() == 1);
    order.push_back(out[0].second.flow);
  }
  std::vector<uint32_t> expected(11, e);
  expected[3] = m;
  REQUIRE(order == expected);

  // The same arrivals under FIFO: the mouse waits behind the whole elephant.
  TestRouter fifo(1, preset("droptail"));
  fifo.input(elephant, 0);
  std::vector<uint32_t> fifo_order;
  for (Timeslot t = 0; t < 11; ++t) {
    if (t == 3) fifo.input(pkt(m, 0, 0), t);
    fifo_order.push_back(fifo.output(t).at(0).second.flow);
  }
  REQUIRE(fifo_order.back() == m);
  r.check_invariants();
}

TEST_CASE("fq_codel: a sparse flow never waits behind an elephant that overloads the port",
          "[schemes][fq_codel]") {
  // The elephant offers 2 packets per tick to a port that sends 1: its queue grows without
  // bound. The mouse sends 1 packet every 4 ticks. Each mouse packet finds its queue empty, so
  // the flow is new again (its previous packet emptied it, and an empty new flow leaves the
  // lists): it is sent in the tick it arrives. CoDel (target 5 us, interval 20 us) holds the
  // elephant's queue down by drops, all from the elephant's queue.
  const uint32_t e = 1, m = other_queue_flow(e);
  TestRouter r(1, fq_codel({{"target_us", "5"}, {"interval_ms", "0.02"}}));
  uint32_t eseq = 0, mseq = 0;
  std::map<uint32_t, Timeslot> mouse_sent;
  for (Timeslot t = 0; t < 2000; ++t) {
    std::vector<Packet> in = {pkt(e, eseq++, 0), pkt(e, eseq++, 0)};
    if (t % 4 == 0) in.push_back(pkt(m, mseq++, 0));
    r.input(in, t);
    for (const auto& [port, p] : r.output(t))
      if (p.flow == m) mouse_sent[p.seq] = t;
  }
  REQUIRE(mouse_sent.size() == mseq);
  for (const auto& [seq, t] : mouse_sent) REQUIRE(t == 4 * seq);  // no wait at all
  const uint64_t elephant_drops = r.counters(0, queue_of(e)).dropped_at_dequeue;
  CHECK(elephant_drops > 0);
  CHECK(r.counters(0, queue_of(m)).dropped() == 0);
  CHECK(r.log.count(Reason::kSojournTime) == elephant_drops);
  r.check_invariants();
}

TEST_CASE("fq_codel: over the port's limit, the queue with the most bytes loses its head", "[schemes][fq_codel]") {
  // limit 10: the elephant's 11th and 12th packets each push the port over it (E is the fattest:
  // E's seq 0 and 1 go), and so does the mouse's packet (E still the fattest: seq 2 goes).
  const uint32_t e = 1, m = other_queue_flow(e);
  TestRouter r(1, fq_codel({{"limit_pkts", "10"}}));
  std::vector<Packet> in;
  for (uint32_t i = 0; i < 12; ++i) in.push_back(pkt(e, i, 0));
  in.push_back(pkt(m, 0, 0));
  r.input(in, 0);
  REQUIRE(r.log.drops.size() == 3);
  for (uint32_t i = 0; i < 3; ++i) {
    REQUIRE(r.log.drops[i].p.flow == e);
    REQUIRE(r.log.drops[i].p.seq == i);
    REQUIRE(r.log.drops[i].reason == Reason::kFattestFlow);
  }
  REQUIRE(r.counters(0, queue_of(e)).evicted == 3);
  REQUIRE(r.bank().port_packets(0) == 10);
  r.check_invariants();
}
