// Queue memory on demand (issue 24; docs/design.md, "Queue memory on demand
// (issue 24)"): a bank commits the pages its queues reach, moves to huge pages
// once big and busy, and keeps every packet through the move.
#include <catch2/catch.hpp>
#include <memory>
#include <vector>

#include "api/queue_bank.h"
#include "api/routing_table.h"

using namespace flexplane;

// A destination's candidate ports as a vector, for comparisons.
static std::vector<PortId> ports(const RoutingTable& t, EndpointId dst) {
  const auto c = t.candidates(dst);
  return {c.begin(), c.end()};
}

namespace {
Packet pkt(uint32_t flow, uint32_t seq) {
  Packet p{};
  p.flow = flow;
  p.seq = seq;
  p.size_bytes = 1500;
  return p;
}
}  // namespace

TEST_CASE("a bank touched lightly commits only the pages its queues reach", "[queue_bank][memory]") {
  // 64 ports x 1024 packets: 2 MiB of rings, 2 MiB + 128 KiB reserved.
  QueueBank b(64, 1, 1024);
  REQUIRE(b.resident_bytes() == 0);  // reserved, nothing committed
  for (PortId port = 0; port < 8; ++port) {
    for (uint32_t i = 0; i < 4; ++i) REQUIRE(b.push(port, 0, pkt(port, i)));
  }
  for (Timeslot t = 0; t < 4 * QueueBank::kReviewTimeslots; ++t) b.set_now(t);  // reviews: stays small
  // 8 short queues: their small rings (16 packets, 512 bytes each) share one 4 KiB page.
  REQUIRE(b.resident_bytes() == 4096);
  REQUIRE_FALSE(b.on_huge_pages());
  for (PortId port = 0; port < 8; ++port) {
    for (uint32_t i = 0; i < 4; ++i) REQUIRE(b.pop(port, 0).seq == i);
  }
}

TEST_CASE("a queue outgrows its small ring into its own, in order throughout", "[queue_bank][memory]") {
  QueueBank b(4, 1, 1024);
  uint32_t next_in = 0, next_out = 0;
  size_t grown = 0;
  // Wrap around the small ring (never more than 10 held), then grow past it
  // (310 held), drain, and do it again, now in its own ring: the packets
  // leave in order, and the second time the queue reuses the same pages
  // (an empty queue starts again at its ring's start).
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 50; ++i) {
      REQUIRE(b.push(1, 0, pkt(1, next_in++)));
      if (b.packets(1, 0) > 10) REQUIRE(b.pop(1, 0).seq == next_out++);
    }
    if (round == 0) REQUIRE(b.resident_bytes() == 4096);  // only the small rings' page
    for (int i = 0; i < 300; ++i) REQUIRE(b.push(1, 0, pkt(1, next_in++)));
    REQUIRE(b.packets(1, 0) == 310);
    REQUIRE(b.peek(1, 0, 0).seq == next_out);
    REQUIRE(b.peek(1, 0, 309).seq == next_in - 1);
    if (round == 0) {
      grown = b.resident_bytes();
      REQUIRE(grown > 4096);  // its own ring now: 310 packets, 10 KB from a page's start
      REQUIRE(grown <= 5 * 4096);
    } else {
      REQUIRE(b.resident_bytes() == grown);
    }
    REQUIRE(b.pop_at(1, 0, 5).seq == next_out + 5);  // from the middle
    for (uint32_t k = 0; k < 309; ++k) {
      const uint32_t want = next_out + (k < 5 ? k : k + 1);
      REQUIRE(b.pop(1, 0).seq == want);
    }
    next_out = next_in;
    REQUIRE(b.empty(1, 0));
  }
  // A queue near the capacity of its small ring: 16 held, the 17th moves them.
  for (uint32_t i = 0; i < 17; ++i) REQUIRE(b.push(2, 0, pkt(2, i)));
  REQUIRE(b.remove_at(2, 0, 16).seq == 16);
  for (uint32_t i = 0; i < 16; ++i) REQUIRE(b.pop(2, 0).seq == i);
}

TEST_CASE("a big, busy bank moves to huge pages at a review and keeps its packets", "[queue_bank][memory]") {
  QueueBank b(64, 1, 1024);
  b.set_now(1);  // first review: empty, stays small
  REQUIRE_FALSE(b.on_huge_pages());
  // Fill 16 ports to capacity: 16 x 32 KiB = 512 KiB resident (> 64 pages).
  for (PortId port = 0; port < 16; ++port) {
    for (uint32_t i = 0; i < 1024; ++i) REQUIRE(b.push(port, 0, pkt(port, i)));
  }
  REQUIRE(b.resident_bytes() >= size_t{512} << 10);
  b.set_now(2);  // before the next review: nothing changes
  REQUIRE_FALSE(b.on_huge_pages());
  b.set_now(1 + QueueBank::kReviewTimeslots);
  REQUIRE(b.on_huge_pages());
  for (PortId port = 0; port < 16; ++port) {
    REQUIRE(b.packets(port, 0) == 1024);
    for (uint32_t i = 0; i < 1024; ++i) {
      const Packet p = b.pop(port, 0);
      REQUIRE((p.flow == port && p.seq == i));
    }
  }
  REQUIRE(b.push(40, 0, pkt(40, 0)));  // the untouched half works as before
  REQUIRE(b.pop(40, 0).seq == 0);
}

TEST_CASE("a bank reset releases its memory and starts small again", "[queue_bank][memory]") {
  QueueBank b(64, 1, 1024);
  for (PortId port = 0; port < 64; ++port) {
    for (uint32_t i = 0; i < 1024; ++i) b.push(port, 0, pkt(port, i));
  }
  b.set_now(0);
  REQUIRE(b.on_huge_pages());
  b.reset(64, 1, 1024);
  REQUIRE_FALSE(b.on_huge_pages());
  REQUIRE(b.resident_bytes() == 0);
  REQUIRE(b.empty(0, 0));
}

TEST_CASE("routing groups shared by consecutive destinations are stored once, routes unchanged", "[routing]") {
  RoutingTable t(6, 7);
  t.set(0, {1});
  t.set(1, {2, 3, 4});
  t.set(2, {2, 3, 4});  // shares 1's group
  t.set(3, {2, 3});     // a prefix of it: a group of its own
  t.set(4, {2, 3, 4});
  t.set(5, {5});
  REQUIRE(ports(t, 0) == std::vector<PortId>{1});
  REQUIRE(ports(t, 1) == std::vector<PortId>{2, 3, 4});
  REQUIRE(ports(t, 2) == std::vector<PortId>{2, 3, 4});
  REQUIRE(ports(t, 3) == std::vector<PortId>{2, 3});
  REQUIRE(ports(t, 4) == std::vector<PortId>{2, 3, 4});
  REQUIRE(ports(t, 5) == std::vector<PortId>{5});
  for (uint32_t flow = 0; flow < 64; ++flow) {
    Packet p = pkt(flow, 0);
    p.dst = 2;
    const PortId a = t.route(p);
    p.dst = 1;
    REQUIRE(t.route(p) == a);  // same group, same hash: same port
    REQUIRE((a >= 2 && a <= 4));
  }
}

TEST_CASE("a busy bank with short queues moves to huge pages, within the process's budget", "[queue_bank][memory]") {
  // 64 ports x 1024 packets: 4 MiB mapped each, so the 64 MiB budget takes 16.
  std::vector<std::unique_ptr<QueueBank>> banks;
  for (int i = 0; i < 20; ++i) banks.push_back(std::make_unique<QueueBank>(64, 1, 1024));
  for (auto& b : banks) b->set_now(0);  // first review: not busy
  // 8 arrivals and departures a timeslot on 8 ports: queues of one packet,
  // 8 pages resident, busy.
  for (Timeslot t = 1; t <= QueueBank::kReviewTimeslots; ++t) {
    for (auto& b : banks) {
      b->set_now(t);
      for (PortId port = 0; port < 8; ++port) {
        REQUIRE(b->push(port, 0, pkt(port, static_cast<uint32_t>(t))));
        REQUIRE(b->pop(port, 0).seq == t);
      }
    }
  }
  for (auto& b : banks) b->set_now(QueueBank::kReviewTimeslots + 1);
  size_t huge = 0;
  for (auto& b : banks) huge += b->on_huge_pages();
  REQUIRE(huge == 16);
  banks.resize(4);  // the budget is given back with the banks
  QueueBank late(64, 1, 1024);
  for (PortId port = 0; port < 16; ++port) {
    for (uint32_t i = 0; i < 1024; ++i) late.push(port, 0, pkt(port, i));
  }
  late.set_now(1);
  REQUIRE(late.on_huge_pages());
}
