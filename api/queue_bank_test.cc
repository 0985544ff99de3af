#include "api/queue_bank.h"

#include <catch2/catch.hpp>

#include "api/verdicts.h"

using namespace flexplane;

namespace {
Packet pkt(uint32_t flow, uint32_t seq, uint16_t bytes = 1500) {
  Packet p{};
  p.flow = flow;
  p.seq = seq;
  p.size_bytes = bytes;
  return p;
}

// enqueued == dequeued + dropped_at_dequeue + evicted + backlog, for every queue.
void check_invariants(const QueueBank& b) {
  for (PortId port = 0; port < b.num_ports(); ++port)
    for (QueueId q = 0; q < b.queues_per_port(); ++q) {
      const auto& c = b.counters(port, q);
      REQUIRE(c.enqueued == c.dequeued + c.dropped_at_dequeue + c.evicted + b.packets(port, q));
      uint64_t drops = 0;
      for (auto d : c.drops) drops += d;
      REQUIRE(drops == c.dropped_on_arrival + c.dropped_at_dequeue + c.evicted);
    }
}
}  // namespace

TEST_CASE("queue bank keeps FIFO order, occupancy and masks", "[queue_bank]") {
  QueueBank b(3, 4, 5);
  REQUIRE(b.nonempty_queues(1) == 0);
  for (uint32_t i = 0; i < 5; ++i) REQUIRE(b.push(1, 2, pkt(7, i, 100 + i)));
  REQUIRE_FALSE(b.push(1, 2, pkt(7, 5)));  // capacity 5: refused, nothing changes
  REQUIRE(b.packets(1, 2) == 5);
  REQUIRE(b.bytes(1, 2) == 100 + 101 + 102 + 103 + 104);
  REQUIRE(b.nonempty_queues(1) == (1ull << 2));
  REQUIRE(b.port_packets(1) == 5);
  std::vector<PortId> ports;
  b.for_each_nonempty_port([&](PortId p) { ports.push_back(p); });
  REQUIRE(ports == std::vector<PortId>{1});

  b.set_now(42);
  for (uint32_t i = 0; i < 5; ++i) REQUIRE(b.pop(1, 2).seq == i);
  REQUIRE(b.empty(1, 2));
  REQUIRE(b.idle_since(1, 2) == 42);
  REQUIRE(b.nonempty_queues(1) == 0);
  ports.clear();
  b.for_each_nonempty_port([&](PortId p) { ports.push_back(p); });
  REQUIRE(ports.empty());
  check_invariants(b);
}

TEST_CASE("queue bank ring wraps and removes from the middle", "[queue_bank]") {
  QueueBank b(1, 1, 8);
  for (int round = 0; round < 3; ++round) {
    for (uint32_t i = 0; i < 8; ++i) REQUIRE(b.push(0, 0, pkt(1, round * 8 + i)));
    for (uint32_t i = 0; i < 8; ++i) REQUIRE(b.pop(0, 0).seq == uint32_t(round * 8 + i));
  }
  for (uint32_t i = 0; i < 7; ++i) b.push(0, 0, pkt(2, i));
  REQUIRE(b.pop_at(0, 0, 1).seq == 1);  // near head
  REQUIRE(b.pop_at(0, 0, 4).seq == 5);  // near tail
  std::vector<uint32_t> rest;
  while (!b.empty(0, 0)) rest.push_back(b.pop(0, 0).seq);
  REQUIRE(rest == std::vector<uint32_t>{0, 2, 3, 4, 6});
  check_invariants(b);
}

TEST_CASE("verdicts count drops on arrival, at dequeue, evictions and marks by reason", "[queue_bank]") {
  struct Log : EventSink {
    std::vector<std::pair<uint32_t, Reason>> drops;
    void on_drop(const Packet& p, uint32_t, PortId, Reason r, Timeslot) override { drops.emplace_back(p.seq, r); }
  } log;
  QueueBank b(2, 1, 4);
  Verdicts v(&b, 0, &log);
  v.set_context(1, 0);
  v.set_now(10);
  Packet ect = pkt(1, 0);
  ect.flags = kFlagEct;
  Packet plain = pkt(1, 1);
  REQUIRE(v.mark_ecn(ect, Reason::kAboveThreshold));
  REQUIRE(ect.ce());
  REQUIRE_FALSE(v.mark_ecn(plain, Reason::kAboveThreshold));  // not ECN-capable
  REQUIRE_FALSE(plain.ce());
  b.push(1, 0, ect);
  b.push(1, 0, plain);
  v.drop(pkt(1, 2), Reason::kQueueFull);
  v.evict(1, 0, 0, Reason::kLowestPriority);
  const auto& c = b.counters(1, 0);
  REQUIRE(c.marked == 1);
  REQUIRE(c.marks[unsigned(Reason::kAboveThreshold)] == 1);
  REQUIRE(c.dropped_on_arrival == 1);
  REQUIRE(c.evicted == 1);
  REQUIRE(b.packets(1, 0) == 1);
  REQUIRE(b.peek(1, 0).seq == 1);
  REQUIRE(log.drops == std::vector<std::pair<uint32_t, Reason>>{{2, Reason::kQueueFull}, {0, Reason::kLowestPriority}});
  check_invariants(b);

  // At dequeue: mark the head of another queue, then drop it instead of sending it.
  Packet head = pkt(2, 7);
  head.flags = kFlagEct;
  b.push(0, 0, head);
  REQUIRE(v.mark_ecn(b.peek_mut(0, 0), 0, 0, Reason::kSojournTime));
  REQUIRE(b.counters(0, 0).marks[unsigned(Reason::kSojournTime)] == 1);
  REQUIRE(b.counters(1, 0).marked == 1);  // the other queue's count is untouched
  REQUIRE(v.drop_head(0, 0, Reason::kSojournTime).seq == 7);
  REQUIRE(b.counters(0, 0).dropped_at_dequeue == 1);
  REQUIRE(b.empty(0, 0));
  REQUIRE(log.drops.back() == std::pair<uint32_t, Reason>{7, Reason::kSojournTime});
  check_invariants(b);
}

TEST_CASE("a bank that keeps enqueue times stamps each packet and keeps them through evictions", "[queue_bank]") {
  QueueBank b(1, 1, 8, /*keep_enqueue_time=*/true);
  REQUIRE(b.keeps_enqueue_time());
  REQUIRE_FALSE(QueueBank(1, 1, 8).keeps_enqueue_time());
  for (uint32_t i = 0; i < 5; ++i) {
    b.set_now(100 + 10 * i);  // seq i enqueued at 100 + 10 i
    b.push(0, 0, pkt(1, i));
  }
  Verdicts v(&b, 0, nullptr);
  v.evict(0, 0, 1, Reason::kLowestPriority);  // seq 1 (closes the gap from the head)
  v.evict(0, 0, 3, Reason::kLowestPriority);  // seq 4 (from the tail)
  // Left: seq 0, 2, 3, stamped 100, 120, 130.
  REQUIRE(b.packets(0, 0) == 3);
  for (uint32_t i = 0; i < 3; ++i) REQUIRE(b.enqueue_time(0, 0, i) == 100 + 10 * b.peek(0, 0, i).seq);
  b.pop(0, 0);
  REQUIRE(b.enqueue_time(0, 0) == 120);
}
