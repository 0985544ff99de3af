// Queue bank: ports x queues of FIFO packet storage with occupancy, counters
// and non-empty masks, owned by the framework on behalf of a router.
//
// Principles
//  - Each queue is a power-of-two ring of Packets; storage is reserved once
//    and committed by the kernel page by page as queues reach it (untouched
//    pages cost nothing); a bank that gets big and busy moves to huge pages,
//    off the fast path (Slots below). A queue that never held more than
//    kSmallRing packets lives in a small ring, packed with the bank's other
//    small rings; the first time it holds more it moves to its own ring
//    (SmallRings below).
//  - Masks make scheduling O(1): one bit per non-empty queue of a port (<= 64
//    queues), one bit per port with any backlog.
//  - push/pop/pop_at count enqueued/dequeued; evictions are counted by Verdicts.
//  - The bank knows the current time (set by the router each timeslot) so it
//    can record when a queue went idle (RED's idle-time decay) and, for
//    schemes that ask (kUsesEnqueueTime), when each packet was enqueued
//    (CoDel's sojourn time), in a ring beside the packets' so that the
//    32-byte packet needs no room for it and other schemes pay nothing.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "api/cache_aligned.h"
#include "api/packet.h"
#include "api/queue_counters.h"

namespace flexplane {

class alignas(kCacheLine) QueueBank {
 public:
  QueueBank() = default;
  QueueBank(uint16_t num_ports, uint16_t queues_per_port, uint32_t capacity_pkts, bool keep_enqueue_time = false) {
    reset(num_ports, queues_per_port, capacity_pkts, keep_enqueue_time);
  }

  void reset(uint16_t num_ports, uint16_t queues_per_port, uint32_t capacity_pkts, bool keep_enqueue_time = false) {
    assert(queues_per_port >= 1 && queues_per_port <= kMaxQueuesPerPort);
    num_ports_ = num_ports;
    queues_per_port_ = queues_per_port;
    capacity_ = capacity_pkts;
    uint32_t ring = 1;
    while (ring < capacity_pkts) ring <<= 1;
    ring_mask_ = ring - 1;
    // Pad each ring by one cache line: with a power-of-two stride the heads of
    // all queues would map to the same L1 set and evict each other (measured:
    // a third of the engine's time went to those conflict misses).
    stride_ = ring + 64 / sizeof(Packet);
    const size_t nq = static_cast<size_t>(num_ports) * queues_per_port;
    // Default-initialised: large banks stay virtual until touched.
    slots_.reset(nq * stride_);
    next_review_ = reviewed_at_ = 0;
    review_interval_ = kReviewTimeslots;
    settled_at_review_ = settled_;
    stamps_.reset(keep_enqueue_time ? new Timeslot[nq * stride_] : nullptr);
    small_.reset(!keep_enqueue_time && ring > kSmallRing ? nq : 0);
    queues_.assign(nq, QueueState{});
    for (size_t i = 0; i < nq; ++i) {  // each queue's ring (and stamps), so push/pop need no multiply
      queues_[i].ring = small_.p ? small_.p + i * kSmallRing : slots_.p + i * stride_;
      queues_[i].mask = small_.p ? kSmallRing - 1 : ring_mask_;
      queues_[i].limit = small_.p ? kSmallRing : capacity_;
      queues_[i].stamps = stamps_ ? stamps_.get() + i * stride_ : nullptr;
    }
    reason_at_.assign(nq, 0);
    reasons_.clear();
    ingress_ring_.reset();
    ingress_pkts_.clear();
    paused_ports_ = 0;
    ports_.assign(num_ports, PortState{});
    nonempty_ports_.assign((num_ports + 63) / 64, 0);
  }

  uint16_t num_ports() const { return num_ports_; }
  uint16_t queues_per_port() const { return queues_per_port_; }
  uint32_t capacity_pkts() const { return capacity_; }

  uint32_t packets(PortId port, QueueId q) const { return queue(port, q).count; }
  uint64_t bytes(PortId port, QueueId q) const { return queue(port, q).bytes; }
  uint32_t port_packets(PortId port) const { return ports_[port].packets; }
  // No packet in any queue (the engine skips routers with nothing to do).
  bool idle() const {
    for (uint64_t w : nonempty_ports_)
      if (w) return false;
    return true;
  }
  bool empty(PortId port, QueueId q) const { return queue(port, q).count == 0; }
  bool full(PortId port, QueueId q) const { return queue(port, q).count >= capacity_; }
  // Bit q set when queue q of `port` holds packets and may send: a queue
  // its downstream neighbour paused (PFC, set_paused) is left out, so a
  // scheduler that picks through this mask honours pauses without knowing.
  uint64_t nonempty_queues(PortId port) const { return ports_[port].mask & ~uint64_t{ports_[port].paused}; }
  // Timeslot at which the queue last became empty (0 if never used).
  Timeslot idle_since(PortId port, QueueId q) const { return queue(port, q).idle_since; }
  // When the packet `index` behind the head was enqueued; only in banks that
  // keep enqueue times (a component declared kUsesEnqueueTime). Asked of a
  // bank that keeps none, it stops the program with a message naming the
  // reader (set_reader) and the missing declaration, in every build type: a
  // test of the pointer it loads anyway, so it costs nothing measurable
  // (docs/performance.md, "Enqueue-time check").
  bool keeps_enqueue_time() const { return stamps_ != nullptr; }
  Timeslot enqueue_time(PortId port, QueueId q, uint32_t index = 0) const {
    if (__builtin_expect(stamps_ == nullptr, 0)) undeclared_enqueue_time();
    const QueueState& s = queue(port, q);
    assert(index < s.count);
    return s.stamps[(s.head + index) & s.mask];
  }
  // Which component is running now ("queue_manager 'codel' (router 3)"), for
  // that message; the router sets it per batch (PatternRouter).
  void set_reader(const char* label) { reader_ = label; }
  const char* reader() const { return reader_; }
  // Lossless fabrics (PFC; api/pfc.h). keep_ingress() after reset(): the
  // bank then records each packet's ingress port (set_ingress() before the
  // pushes of that port's arrivals) and counts packets per (ingress port,
  // queue), charged at push and released however the packet leaves (pop,
  // pop_at, remove_at). Queues are PFC priorities: at most kPfcPriorities.
  static constexpr unsigned kPfcPriorities = 8;
  void keep_ingress() {
    assert(queues_per_port_ <= kPfcPriorities);
    const size_t nq = static_cast<size_t>(num_ports_) * queues_per_port_;
    ingress_ring_.reset(new PortId[nq * stride_]);
    for (size_t i = 0; i < nq; ++i) {  // (empty: nothing to move) every queue in its own ring
      assert(queues_[i].count == 0);
      queues_[i].ring = slots_.p + i * stride_;
      queues_[i].mask = ring_mask_;
      queues_[i].limit = capacity_;
      queues_[i].ingress = ingress_ring_.get() + i * stride_;
    }
    small_.reset(0);  // the ingress ports have no small rings to move with
    ingress_pkts_.assign(static_cast<size_t>(num_ports_) * kPfcPriorities, 0);
  }
  bool keeps_ingress() const { return ingress_ring_ != nullptr; }
  void set_ingress(PortId in) { ingress_ = in; }
  // Packets held that came in on `in` and sit in queue q of any port.
  uint32_t ingress_packets(PortId in, QueueId q) const { return ingress_pkts_[ingress_index(in, q)]; }
  // Where the packet `index` behind the head of (port, q) came in.
  PortId ingress_of(PortId port, QueueId q, uint32_t index = 0) const {
    const QueueState& s = queue(port, q);
    assert(s.ingress && index < s.count);
    return s.ingress[(s.head + index) & s.mask];
  }
  // Pause (PFC): queues of `port` in `queues` may not send until resumed;
  // nonempty_queues() leaves them out, and sendable_port_words() the ports
  // whose every backlogged queue is paused.
  void set_paused(PortId port, uint32_t queues) {
    uint32_t& p = ports_[port].paused;
    paused_ports_ += (queues != 0) - (p != 0);
    p = queues;
  }
  uint32_t paused(PortId port) const { return ports_[port].paused; }
  // nonempty_port_words() without the ports that hold only paused packets.
  void sendable_port_words(uint64_t* out) const {
    for (size_t w = 0; w < nonempty_ports_.size(); ++w) {
      uint64_t bits = nonempty_ports_[w];
      if (paused_ports_)
        for (uint64_t b = bits; b; b &= b - 1) {
          const PortId port = static_cast<PortId>(w * 64 + __builtin_ctzll(b));
          if (!nonempty_queues(port)) bits &= ~(1ull << (port & 63));
        }
      out[w] = bits;
    }
  }
  bool any_paused() const { return paused_ports_ != 0; }

  // Append to the tail. Returns false (and changes nothing) when the queue is at
  // capacity; the framework then drops the packet with Reason::kBankOverflow.
  //
  // push() and pop() are the hot path of every scheme (docs/performance.md,
  // "The saturated hot path"): the bank's scalars are read into locals before
  // the first store (a store may alias them as far as the compiler knows),
  // and each queue keeps its ring's address, so no index is multiplied.
  [[gnu::always_inline]] bool push(PortId port, QueueId q, const Packet& p) {
    QueueState& s = queue(port, q);
    const uint32_t count = s.count;
    if (count >= s.limit) [[unlikely]] {  // at capacity, or its small ring is full
      if (count >= capacity_) return false;
      grow(port, q, s);
    }
    const uint32_t at = (s.head + count) & s.mask;
    const uint16_t size = p.size_bytes;
    s.ring[at] = p;
    if (Timeslot* const st = s.stamps) st[at] = now_;
    if (PortId* const ig = s.ingress) [[unlikely]] {
      ig[at] = ingress_;
      ++ingress_pkts_[ingress_index(ingress_, q)];
    }
    s.count = count + 1;
    s.bytes += size;
    ++s.enqueued;
    ++settled_;
    PortState& ps = ports_[port];
    ps.mask |= 1ull << q;
    if (ps.packets++ == 0) nonempty_ports_[port >> 6] |= 1ull << (port & 63);
    return true;
  }

  // Head of the queue; precondition: !empty(port, q). index counts from the head.
  const Packet& peek(PortId port, QueueId q, uint32_t index = 0) const {
    const QueueState& s = queue(port, q);
    assert(index < s.count);
    return s.ring[(s.head + index) & s.mask];
  }
  Packet& peek_mut(PortId port, QueueId q, uint32_t index = 0) {
    const QueueState& s = queue(port, q);
    assert(index < s.count);
    return s.ring[(s.head + index) & s.mask];
  }

  // Dequeue the head (counted as dequeued); precondition: !empty(port, q).
  [[gnu::always_inline]] Packet pop(PortId port, QueueId q) {
    QueueState& s = queue(port, q);
    assert(s.count > 0);
    const uint32_t head = s.head;
    const Packet p = s.ring[head & s.mask];
    if (const PortId* const ig = s.ingress) [[unlikely]]
      --ingress_pkts_[ingress_index(ig[head & s.mask], q)];
    s.head = head + 1;
    ++s.dequeued;
    after_remove(port, q, s, p.size_bytes);
    return p;
  }

  // Dequeue the packet `index` places behind the head (counted as dequeued).
  Packet pop_at(PortId port, QueueId q, uint32_t index) {
    Packet p = remove_at(port, q, index);
    ++queue(port, q).dequeued;
    return p;
  }

  // Remove without counting: for Verdicts::evict, which counts the drop.
  Packet remove_at(PortId port, QueueId q, uint32_t index) {
    QueueState& s = queue(port, q);
    assert(index < s.count);
    Packet p = s.ring[(s.head + index) & s.mask];
    if (s.ingress) --ingress_pkts_[ingress_index(s.ingress[(s.head + index) & s.mask], q)];
    // Close the gap from the nearer end: O(min(index, count - index)).
    auto move = [&](uint32_t to, uint32_t from) {
      const uint32_t t = (s.head + to) & s.mask, f = (s.head + from) & s.mask;
      s.ring[t] = s.ring[f];
      if (s.stamps) s.stamps[t] = s.stamps[f];
      if (s.ingress) s.ingress[t] = s.ingress[f];
    };
    if (index < s.count / 2) {
      for (uint32_t i = index; i > 0; --i) move(i, i - 1);
      ++s.head;
    } else {
      for (uint32_t i = index; i + 1 < s.count; ++i) move(i, i + 1);
    }
    after_remove(port, q, s, p.size_bytes);
    return p;
  }

  // The counters of (port, q), assembled for reading (outputs, tests).
  QueueCounters counters(PortId port, QueueId q) const {
    const QueueState& s = queue(port, q);
    QueueCounters c;
    c.arrived = s.arrived;
    c.enqueued = s.enqueued;
    c.dequeued = s.dequeued;
    c.dropped_on_arrival = s.dropped_on_arrival;
    c.dropped_at_dequeue = s.dropped_at_dequeue;
    c.evicted = s.evicted;
    c.marked = s.marked;
    if (const uint32_t at = reason_at_[index(port, q)]) {
      const ByReason& r = reasons_[at - 1];
      for (unsigned i = 0; i < kNumReasons; ++i) {
        c.drops[i] = r.drops[i];
        c.marks[i] = r.marks[i];
      }
    }
    return c;
  }
  uint64_t dequeued(PortId port, QueueId q) const { return queue(port, q).dequeued; }

  // Counting, by the framework only (the enqueue loop, Verdicts).
  enum class DropStage : uint8_t { kOnArrival, kAtDequeue, kEvicted };
  void count_arrival(PortId port, QueueId q) { ++queue(port, q).arrived; }
  void count_drop(PortId port, QueueId q, DropStage stage, Reason r) {
    QueueState& s = queue(port, q);
    ++(stage == DropStage::kOnArrival ? s.dropped_on_arrival
       : stage == DropStage::kAtDequeue ? s.dropped_at_dequeue
                                        : s.evicted);
    ++by_reason(port, q).drops[static_cast<unsigned>(r)];
  }
  void count_mark(PortId port, QueueId q, Reason r) {
    ++queue(port, q).marked;
    ++by_reason(port, q).marks[static_cast<unsigned>(r)];
  }

  // The same as bits: bit b of word w is port 64 w + b (port_words() words).
  const uint64_t* nonempty_port_words() const { return nonempty_ports_.data(); }
  uint32_t port_words() const { return static_cast<uint32_t>(nonempty_ports_.size()); }

  // Iterate ports with backlog, in increasing port order: fn(PortId).
  template <class Fn>
  void for_each_nonempty_port(Fn&& fn) const {
    for (size_t w = 0; w < nonempty_ports_.size(); ++w) {
      uint64_t bits = nonempty_ports_[w];
      while (bits) {
        const unsigned b = __builtin_ctzll(bits);
        bits &= bits - 1;
        fn(static_cast<PortId>(w * 64 + b));
      }
    }
  }

  // The router calls it each timeslot it runs; now and then it also reviews
  // the bank's memory (Slots::review: once big or busy, huge pages), off the
  // per-packet path: kReviewTimeslots after the first review, then at
  // intervals that double up to kMaxReviewTimeslots while the bank stays
  // small (a review of a quiet bank is a mincore() system call: at 256
  // timeslots they were 9 % of a k = 8 fat tree's run).
  void set_now(Timeslot now) {
    now_ = now;
    if (__builtin_expect(now >= next_review_, 0)) review_memory(now);
  }
  static constexpr Timeslot kReviewTimeslots = 256;
  static constexpr Timeslot kMaxReviewTimeslots = 4096;
  static constexpr uint64_t kBusyPerTimeslot = 4;  // arrivals per timeslot that make a bank busy
  // Memory: bytes of packet storage resident now, and whether the bank moved
  // to huge pages (for tests and diagnostics; resident_bytes() is a system call).
  size_t resident_bytes() const { return slots_.resident_bytes() + small_.resident_bytes(); }
  bool on_huge_pages() const { return slots_.huge; }

  // Arrivals settled so far (pushed or refused): the enqueue loop compares it
  // before and after each call to catch a scheme that lost a packet.
  uint64_t settled() const { return settled_; }
  void count_refusal() { ++settled_; }
  Timeslot now() const { return now_; }

 private:
  // State and the scalar counters together: a push or pop touches one cache
  // line, and the struct is 128 bytes, so indexing is a shift. Counts by
  // reason (rarely touched) live apart, in reasons_, and only for queues
  // that dropped or marked: 272 bytes for each of a k = 64 fat tree's
  // 327,680 queues were 89 MB, nearly all zeros.
  struct alignas(64) QueueState {
    // First cache line: what an arrival touches (count_arrival, push).
    uint32_t head = 0;  // free-running; masked on access
    uint32_t count = 0;
    uint32_t mask = 0;   // ring size - 1
    uint32_t limit = 0;  // packets it may hold before push() looks further: its ring's size or capacity_
    uint64_t bytes = 0;
    Packet* ring = nullptr;       // this queue's slots: its small ring, or its own (stride_ apart in slots_)
    Timeslot* stamps = nullptr;   // and enqueue times, if kept
    PortId* ingress = nullptr;    // and ingress ports, if kept (keep_ingress)
    uint64_t arrived = 0, enqueued = 0;
    uint64_t dequeued = 0;
    Timeslot idle_since = 0;
    uint64_t dropped_on_arrival = 0, dropped_at_dequeue = 0, evicted = 0, marked = 0;
  };
  static_assert(offsetof(QueueState, enqueued) + 8 == 64, "an arrival touches one cache line");
  static_assert(sizeof(QueueState) == 128, "a power of two: queue(port, q) is a shift");
  struct ByReason {
    uint64_t drops[kNumReasons] = {};
    uint64_t marks[kNumReasons] = {};
  };

  static size_t ingress_index(PortId in, QueueId q) { return static_cast<size_t>(in) * kPfcPriorities + q; }
  size_t index(PortId port, QueueId q) const {
    assert(port < num_ports_ && q < queues_per_port_);
    return static_cast<size_t>(port) * queues_per_port_ + q;
  }
  QueueState& queue(PortId port, QueueId q) { return queues_[index(port, q)]; }
  const QueueState& queue(PortId port, QueueId q) const { return queues_[index(port, q)]; }

  [[gnu::always_inline]] void after_remove(PortId port, QueueId q, QueueState& s, uint16_t size_bytes) {
    const uint32_t count = s.count - 1;
    s.count = count;
    s.bytes -= size_bytes;
    PortState& ps = ports_[port];
    if (count == 0) {
      s.head = 0;  // rewind: a short queue keeps reusing the same, cache-hot slots
      s.idle_since = now_;
      ps.mask &= ~(1ull << q);
    }
    if (--ps.packets == 0) nonempty_ports_[port >> 6] &= ~(1ull << (port & 63));
  }

  // A queue's small ring is full: its packets move, in order, to the start
  // of its own ring, where it stays (a queue that went back whenever it
  // emptied moved 16 packets per burst: +1 % instructions on the saturated
  // rack).
  [[gnu::noinline, gnu::cold]] void grow(PortId port, QueueId q, QueueState& s) {
    Packet* own = slots_.p + index(port, q) * stride_;
    for (uint32_t i = 0; i < s.count; ++i) own[i] = s.ring[(s.head + i) & s.mask];
    s.ring = own;
    s.head = 0;
    s.mask = ring_mask_;
    s.limit = capacity_;
  }

  // Now and then (set_now): huge pages once big or busy (Slots::review).
  [[gnu::cold, gnu::noinline]] void review_memory(Timeslot now) {
    slots_.review(now > reviewed_at_ && settled_ - settled_at_review_ >= kBusyPerTimeslot * (now - reviewed_at_));
    settled_at_review_ = settled_;
    reviewed_at_ = now;
    next_review_ = slots_.huge || slots_.mapped() > Slots::kHugeBankBytes ? ~Timeslot{0} : now + review_interval_;
    review_interval_ = std::min(2 * review_interval_, kMaxReviewTimeslots);
  }

  // A scheme's bug, not an input error: no caller could recover, and engine
  // cores are threads that cannot carry an exception out, so say what to fix
  // and end the process (status 1: not a configuration error).
  [[noreturn, gnu::cold, gnu::noinline]] void undeclared_enqueue_time() const {
    std::fprintf(stderr,
                 "error: %s reads packets' enqueue times (bank().enqueue_time()) but does not declare it: add "
                 "`static constexpr bool kUsesEnqueueTime = true;` to its class, so the queue bank keeps them "
                 "(docs/writing-a-scheme.md, \"Time\")\n",
                 reader_ && *reader_ ? reader_ : "a component of this router");
    std::fflush(stderr);
    std::_Exit(1);
  }

  uint16_t num_ports_ = 0;
  uint16_t queues_per_port_ = 0;
  uint32_t capacity_ = 0;
  uint32_t ring_mask_ = 0;
  size_t stride_ = 0;  // packets between the starts of consecutive queues' rings
  Timeslot now_ = 0;
  // Packet storage, committed on demand (docs/design.md, "Queue memory on
  // demand (issue 24)"): an anonymous mapping reserved on a huge-page boundary,
  // on small pages at first (MADV_NOHUGEPAGE, so that THP "always" does not
  // commit 2 MiB at the first touch either), so a bank costs the 4 KiB pages
  // its queues reach. Every kReviewTimeslots, set_now() reviews the bank: once
  // it is big (kPromotePages resident: more than a typical L1 data TLB maps)
  // or busy (kBusyPerTimeslot arrivals per timeslot since the last review), it
  // moves to transparent huge pages in place (MADV_HUGEPAGE + MADV_COLLAPSE):
  // a core whose routers' queues touch more 4 KiB pages than the TLB holds
  // runs 25% slower (measured on two racks). Huge banks are limited to
  // kHugeBudgetBytes per process, so they add at most that to the memory of a
  // large topology, whose hundreds of banks per core no TLB covers anyway.
  // Banks over kHugeBankBytes stay on small pages.
  struct Slots {
    // 16 bytes, so that the fields after it (queues_ ... nonempty_ports_, read
    // on every push) stay on the bank's first two cache lines.
    Packet* p = nullptr;
    uint32_t huge_pages = 0;  // kHugePage units mapped at p
    bool huge = false;        // moved to huge pages
    size_t mapped() const { return size_t{huge_pages} * kHugePage; }
    void reset(size_t n) {
      release();
      const size_t bytes = n * sizeof(Packet);
      if (bytes == 0) return;
      const size_t mapped = (bytes + kHugePage - 1) & ~(kHugePage - 1);
      huge_pages = static_cast<uint32_t>(mapped / kHugePage);
      // Reserve one huge page more to align the start; return the slack.
      void* raw = mmap(nullptr, mapped + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
      if (raw == MAP_FAILED) throw std::bad_alloc();
      const uintptr_t r = reinterpret_cast<uintptr_t>(raw);
      const uintptr_t a = (r + kHugePage - 1) & ~(kHugePage - 1);
      if (a > r) munmap(raw, a - r);
      munmap(reinterpret_cast<void*>(a + mapped), r + kHugePage - a);  // > 0: a < r + kHugePage
      p = reinterpret_cast<Packet*>(a);
      madvise(p, mapped, MADV_NOHUGEPAGE);  // a hint
    }
    void release() {
      if (huge) huge_bytes().fetch_sub(mapped(), std::memory_order_relaxed);
      if (p) munmap(p, mapped());
      p = nullptr;
      huge_pages = 0;
      huge = false;
    }
    // Bytes of the bank the kernel holds in memory (4 KiB pages resident).
    size_t resident_bytes() const {
      if (!p) return 0;
      // In chunks through a buffer on the stack: reviews run every
      // kReviewTimeslots for each small bank, so no heap allocation here.
      constexpr size_t kChunkPages = 512;
      unsigned char v[kChunkPages];
      size_t n = 0;
      for (size_t off = 0; off < mapped(); off += kChunkPages * kSmallPage) {
        const size_t len = std::min(mapped() - off, kChunkPages * kSmallPage);
        if (mincore(reinterpret_cast<char*>(p) + off, len, v) != 0) return 0;
        for (size_t i = 0; i < len / kSmallPage; ++i) n += v[i] & 1;
      }
      return n * kSmallPage;
    }
    // Move to huge pages if big or busy and the budget allows; true if moved.
    bool review(bool busy) {
      const size_t mapped = this->mapped();
      if (huge || !p || mapped > kHugeBankBytes) return false;
      if (!busy && resident_bytes() < kPromotePages * kSmallPage) return false;
      size_t used = huge_bytes().load(std::memory_order_relaxed);
      do {
        if (used + mapped > kHugeBudgetBytes) return false;
      } while (!huge_bytes().compare_exchange_weak(used, used + mapped, std::memory_order_relaxed));
      huge = true;
      madvise(p, mapped, MADV_HUGEPAGE);  // a hint: later faults take huge pages
      // And the pages already there move now: MADV_COLLAPSE (Linux >= 6.1; not
      // in glibc's <sys/mman.h> before 2.37). An older kernel refuses it
      // (EINVAL) and khugepaged collapses them in its own time.
      constexpr int kMadvCollapse = 25;
      madvise(p, mapped, kMadvCollapse);
      return true;
    }
    // Bytes of banks on huge pages in this process (against kHugeBudgetBytes).
    static std::atomic<size_t>& huge_bytes() {
      static std::atomic<size_t> bytes{0};
      return bytes;
    }
    static constexpr size_t kSmallPage = 4096;
    static constexpr size_t kHugePage = size_t{2} << 20;
    static constexpr size_t kPromotePages = 64;
    static constexpr size_t kHugeBudgetBytes = size_t{64} << 20;
    static constexpr size_t kHugeBankBytes = size_t{32} << 20;
    Slots() = default;
    Slots(const Slots&) = delete;
    Slots& operator=(const Slots&) = delete;
    ~Slots() { release(); }
  } slots_;
  // The small rings: kSmallRing packets per queue, side by side, on 4 KiB
  // pages committed as queues reach them (a queue's own ring starts a page of
  // its own, so a bank whose queues each held a packet once cost a page per
  // queue: at k = 64 the bank mappings held 154 MB, ~39,000 pages). Only in banks that keep
  // no enqueue times or ingress ports (those rings would have to move too).
  static constexpr uint32_t kSmallRing = 16;
  struct SmallRings {
    Packet* p = nullptr;
    size_t bytes = 0;
    void reset(size_t queues) {
      if (p) munmap(p, bytes);
      p = nullptr;
      bytes = queues * kSmallRing * sizeof(Packet);
      if (!bytes) return;
      void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (m == MAP_FAILED) throw std::bad_alloc();
      p = static_cast<Packet*>(m);
    }
    size_t resident_bytes() const {
      if (!p) return 0;
      std::vector<unsigned char> v((bytes + kPage - 1) / kPage);
      if (mincore(p, bytes, v.data()) != 0) return 0;
      size_t n = 0;
      for (unsigned char c : v) n += c & 1;
      return n * kPage;
    }
    static constexpr size_t kPage = 4096;
    SmallRings() = default;
    SmallRings(const SmallRings&) = delete;
    SmallRings& operator=(const SmallRings&) = delete;
    ~SmallRings() { reset(0); }
  } small_;
  Timeslot next_review_ = 0;  // set_now() reviews the bank's pages from this timeslot on
  std::unique_ptr<Timeslot[]> stamps_;  // per slot: when its packet was enqueued (if kept)
  std::unique_ptr<PortId[]> ingress_ring_;  // per slot: the port its packet came in on (if kept)
  std::vector<uint32_t> ingress_pkts_;      // [ingress port][queue]: packets held (if kept)
  PortId ingress_ = 0;                      // the port of the arrivals being pushed
  uint32_t paused_ports_ = 0;               // ports with a paused queue
  cache_vector<QueueState> queues_;
  // Apart from the queues (tried: in queue 0's line, which saved a few
  // instructions per packet with one queue per port but cost DRR, whose
  // pushes then touched two queue lines, 4 %: docs/performance.md).
  struct PortState {
    uint64_t mask = 0;     // bit q: queue q non-empty
    uint32_t packets = 0;  // over all queues of the port
    uint32_t paused = 0;   // bit q: queue q paused by the neighbour (PFC)
  };
  cache_vector<PortState> ports_;
  uint64_t settled_ = 0;
  cache_vector<uint64_t> nonempty_ports_;
  // Cold, so last (the fields above share two cache lines): per queue, 0 or
  // 1 + its counts' place in reasons_ (given on its first drop or mark).
  std::vector<uint32_t> reason_at_;
  std::vector<ByReason> reasons_;
  ByReason& by_reason(PortId port, QueueId q) {
    uint32_t& at = reason_at_[index(port, q)];
    if (!at) {
      reasons_.emplace_back();
      at = static_cast<uint32_t>(reasons_.size());
    }
    return reasons_[at - 1];
  }
  const char* reader_ = nullptr;   // see set_reader(); written once per batch, read only by the message
  Timeslot reviewed_at_ = 0;        // the last review of the bank's memory (review_memory),
  uint64_t settled_at_review_ = 0;  // when settled_ was this
  Timeslot review_interval_ = kReviewTimeslots;  // from the next review to the one after
};

}  // namespace flexplane
