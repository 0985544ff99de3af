// Closed-loop flow traffic: the source, the sink and the ACK channels between
// endpoint groups (design in closed_loop.h and docs/transports.md). The
// shared set-up (groups, channels, dependencies) is closed_loop_shared.cc.
#include "emulator/traffic/closed_loop.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <queue>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "api/params.h"
#include "api/router.h"
#include "emulator/engine/spin_wait.h"
#include "emulator/traffic/closed_loop_internal.h"
#include "emulator/traffic/closed_loop_nic.h"
#include "emulator/traffic/flow_traffic.h"
#include "emulator/workload/collective.h"
#include "transports/receiver.h"
#include "transports/tcp_sender.h"

namespace flexplane {

namespace {

// Min-heap orders below: earliest first, ties broken by content so the order
// never depends on which channel or core an ACK came from.

// ACKs waiting for their due time: by (due, flow), then content. The
// heap holds 16-byte keys and the ACKs stay put in a slab: sifting whole
// AckMsgs (64 bytes with SACK blocks) was 2.7 % of the k = 16 web-search
// run's instructions (callgrind).
class PendingAcks {
 public:
  bool empty() const { return heap_.empty(); }
  const AckMsg& top() const { return slab_[heap_.front().slot]; }
  void push(const AckMsg& m) {
    uint32_t slot;
    if (free_.empty()) {
      slot = static_cast<uint32_t>(slab_.size());
      slab_.push_back(m);
    } else {
      slot = free_.back();
      free_.pop_back();
      slab_[slot] = m;
    }
    heap_.push_back({m.due, m.flow, slot});
    std::push_heap(heap_.begin(), heap_.end(), Later{&slab_});
  }
  void pop() {
    free_.push_back(heap_.front().slot);
    std::pop_heap(heap_.begin(), heap_.end(), Later{&slab_});
    heap_.pop_back();
  }

 private:
  struct Key {
    Timeslot due;
    uint32_t flow;
    uint32_t slot;
  };
  struct Later {  // a after b; the ACKs' contents only to break ties
    const std::vector<AckMsg>* slab;
    bool operator()(const Key& a, const Key& b) const {
      if (a.due != b.due || a.flow != b.flow) return std::tie(a.due, a.flow) > std::tie(b.due, b.flow);
      return ack_less((*slab)[b.slot].ack, (*slab)[a.slot].ack);
    }
  };
  std::vector<Key> heap_;
  std::vector<AckMsg> slab_;
  std::vector<uint32_t> free_;
};

struct TimerEntry {
  Timeslot deadline;
  uint32_t arrival;  // index into the source's arrivals (flow order)
  bool operator>(const TimerEntry& o) const { return std::tie(deadline, arrival) > std::tie(o.deadline, o.arrival); }
};

struct ReadyEntry {  // a dependent flow released at `at`
  Timeslot at;
  uint32_t arrival;
  bool operator>(const ReadyEntry& o) const { return std::tie(at, arrival) > std::tie(o.at, o.arrival); }
};

inline void relax(unsigned& spins) {
  if (++spins < 128) {
    spin::cpu_relax();
    return;
  }
  if (spin::wait_hook) (*spin::wait_hook)();  // the ACKs may be in a message from another process
  std::this_thread::yield();  // the group we wait for may share our CPU
}

class ClosedLoopSource final : public TrafficSource, public NicBacklog {
 public:
  ClosedLoopSource(ClosedLoopShared& sh, const std::vector<EndpointId>& group, EndpointStamping stamping,
                   std::vector<Timeslot>& first_sent)
      : sh_(sh), stamping_(stamping), first_sent_(first_sent),
        nics_(sh.nic_mode, static_cast<uint32_t>(group.size()),
              sh.group_flow_begin[sh.group_of[group.front()] + 1] - sh.group_flow_begin[sh.group_of[group.front()]]) {
    group_ = sh.group_of[group.front()];
    sh.nics[group_] = this;
    for (size_t i = 0; i < group.size(); ++i)  // the engine's groups are ClosedLoopShared's
      if (sh.group_of[group[i]] != group_ || sh.local_index[group[i]] != i)
        throw std::logic_error("closed loop: endpoint group differs from the engine's");
    for (uint32_t i = sh.group_flow_begin[group_]; i < sh.group_flow_begin[group_ + 1]; ++i) {
      const FlowSpec& f = sh.flows[sh.group_flows[i]];
      arrivals_.push_back({f.id, sh.local_index[f.src], sh.group_of[f.dst] != group_});
    }
    senders_.resize(arrivals_.size());
    if (sh.settings.handshake) {
      syn_tries_.assign(arrivals_.size(), kNoSyn);
      syn_at_.assign(arrivals_.size(), 0);
    }
    queued_timer_.assign(arrivals_.size(), kNever);
    in_nic_.assign(arrivals_.size(), 0);
    if (sh.deps) {  // flows that wait for others: released by completions, not by their start
      need_.assign(arrivals_.size(), 0);
      for (size_t a = 0; a < arrivals_.size(); ++a) {
        const uint32_t f = arrivals_[a].flow;
        need_[a] = sh.deps->num_after(f);
        if (!need_[a]) continue;
        ++untriggered_;
        if (arrivals_[a].remote) {
          ++untriggered_remote_;
          min_remote_gap_ = std::min(min_remote_gap_, sh.deps->gap[f]);
        }
      }
    }
    next_remote_start_.assign(arrivals_.size() + 1, kNoRemoteTraffic);
    for (size_t i = arrivals_.size(); i-- > 0;)
      next_remote_start_[i] = arrivals_[i].remote && !dependent(i) ? sh.flows[arrivals_[i].flow].start
                                                                   : next_remote_start_[i + 1];
    for (uint32_t i = sh.in_begin[group_]; i < sh.in_begin[group_ + 1]; ++i)  // sorted by writer
      inbound_.push_back({sh.in_refs[i].group, sh.in_refs[i].channel->d_min, 0, sh.in_refs[i].channel});
  }

  uint32_t emit(Timeslot now, Packet* out, uint32_t* local) override {
    // This group's sink has delivered timeslot `now` (the engine runs it first).
    sh_.progress[group_].delivered_before.store(now + 1, std::memory_order_release);
    last_emit_ = now;
    collect_acks(now);
    if (sh_.deps) {  // flows this group's sink received in full this timeslot
      std::vector<uint32_t>& got = sh_.received[group_];
      for (uint32_t f : got)
        for (uint32_t j = sh_.rx_begin[f]; j < sh_.rx_begin[f + 1]; ++j) satisfy(sh_.rx_waiters[j], now);
      got.clear();
    }
    while (!pending_.empty() && pending_.top().due <= now) {
      const AckMsg m = pending_.top();
      pending_.pop();
      ++acks_taken_;
      const uint32_t a = arrival_of(m.flow);
      if (m.ack.trigger_seq == kSynSeq) {  // a SYN-ACK: the first opens the flow, duplicates are ignored
        if (!syn_tries_.empty() && syn_tries_[a] != kNoSyn) open(a, now);
        continue;
      }
      if (TcpSender* s = senders_[a].get()) {
        s->on_ack(m.ack, now);
        after_event(a, now);
      }
    }
    while (!timers_.empty() && timers_.top().deadline <= now) {
      const TimerEntry t = timers_.top();
      timers_.pop();
      if (queued_timer_[t.arrival] != t.deadline) continue;  // superseded
      queued_timer_[t.arrival] = kNever;
      if (TcpSender* s = senders_[t.arrival].get()) {
        const uint64_t before = s->stats().timeouts;
        s->on_timer(now);
        if (s->stats().timeouts != before && in_nic_[t.arrival] > 0)  // the RTO fired with its own data queued
          ++sh_.nic_stats[group_].s.timeouts_with_data_in_nic;
        after_event(t.arrival, now);
      } else if (!syn_tries_.empty() && syn_tries_[t.arrival] != kNoSyn) {  // no SYN-ACK in time: resend
        if (syn_tries_[t.arrival] < 62) ++syn_tries_[t.arrival];
        send_syn(t.arrival, now);
      }
    }
    while (next_arrival_ < arrivals_.size() && sh_.flows[arrivals_[next_arrival_].flow].start <= now) {
      const uint32_t a = static_cast<uint32_t>(next_arrival_++);
      if (!dependent(a)) start(a, now);
    }
    while (!ready_.empty() && ready_.top().at <= now) {  // released dependent flows, in (release, flow) order
      const uint32_t a = ready_.top().arrival;
      ready_.pop();
      start(a, now);
    }
    // Busy NICs in endpoint order (the engine's source contract).
    uint32_t n = 0;
    for (size_t w = 0; w < busy_.size(); ++w)
      for (uint64_t bits = busy_[w] & ~(w < paused_.size() ? paused_[w] : 0); bits; bits &= bits - 1) {
        const uint32_t l = static_cast<uint32_t>(w * 64 + __builtin_ctzll(bits));
        const NicSlot e = nics_.front(l);
        const Arrival& ar = arrivals_[e.arrival];
        const FlowSpec& f = sh_.flows[ar.flow];
        const bool syn = e.flags & NicSlot::kSyn;
        Packet& p = out[n];
        p = Packet{};
        p.flow = f.id;
        p.seq = e.seq;
        p.src = f.src;
        p.dst = f.dst;
        p.size_bytes = stamping_.packet_bytes;  // a SYN takes a timeslot too (docs/transports.md, "Handshake")
        p.flags = static_cast<uint8_t>((e.flags & NicSlot::kEct ? kFlagEct : 0) | (e.flags & NicSlot::kCwr ? kFlagCwr : 0) |
                                       (syn ? kFlagSyn : 0));
        p.priority = stamping_.priority == PriorityStamp::kFlowSize        ? f.size_pkts
                     : stamping_.priority == PriorityStamp::kRemainingSize ? f.size_pkts - (syn ? 0 : e.seq)
                                                                           : 0;
        p.custom[0] = stamping_.slack_ns;
        local[n++] = l;
        if (!syn) {  // data: its first packet and its NIC wait (a SYN's is in the FCT, not here)
          if (first_sent_[f.id] == FlowTrafficNotSent) first_sent_[f.id] = now;
          NicWaitStats& ns = sh_.nic_stats[group_].s;
          const Timeslot wait = e.wait(now);
          ns.waited += wait;
          ns.max_wait = std::max<uint64_t>(ns.max_wait, wait);
          ns.waits.add(wait);
        }
        remote_queued_ -= ar.remote;
        --in_nic_[e.arrival];
        nics_.pop(l);
        if (nics_.empty(l)) busy_[w] &= ~(1ull << (l & 63));
      }
    return n;
  }

  Timeslot remote_quiet_until(Timeslot now) override {
    if (remote_queued_) return now + 1;
    Timeslot q = next_remote_start_[next_arrival_];
    // Dependent flows: released ones at their release; the others no sooner
    // than a completion (a delivery or an ACK: from now + 1) plus their gap.
    if (!ready_.empty()) q = std::min(q, ready_.top().at);
    if (untriggered_remote_) q = std::min(q, now + 1 + min_remote_gap_);
    if (active_remote_) {
      // A remote sender has nothing to send until an ACK or its timer: the
      // earliest queued timer (entries are never later than the real deadline),
      // and the earliest ACK that may reach this group.
      if (!timers_.empty()) q = std::min(q, timers_.top().deadline);
      q = std::min(q, earliest_ack(now));
    }
    return std::max(now + 1, q);
  }

  // Sleeping (docs/design.md, "Sleeping closed-loop sources"): only while no
  // flow of the group is under way (no sender, no handshake) and its NICs
  // are empty. Then an ACK that still comes is for a finished flow, which
  // emit() would only count; no timer is live (a finished flow's entries are
  // stale); nothing changes before the next flow starts. Other groups read
  // this group's progress from its core meanwhile (delivered_before(g)).
  // Not with dependencies: a delivery may release a flow.
  Timeslot next_emit(Timeslot now) override {
    if (active_ || sh_.deps || !sh_.core_finished[group_]) return now + 1;
    for (uint64_t w : busy_)
      if (w) return now + 1;
    const Timeslot next =
        next_arrival_ < arrivals_.size() ? sh_.flows[arrivals_[next_arrival_].flow].start : kNoRemoteTraffic;
    return std::max(now + 1, next);
  }

  // Busy while a flow has not started or not been acknowledged in full, or a
  // segment waits in a NIC (a finished flow's spurious retransmission too).
  // In transit: the ACKs this group's receivers sent minus those its senders
  // took (both counted on this core, up to `now`). A source that slept
  // through `now` first takes the ACKs due by then, as emit() would have.
  bool busy_after(Timeslot now, int64_t* in_transit) override {
    if (last_emit_ != now && !active_) take_acks_asleep(now);
    *in_transit += static_cast<int64_t>(sh_.ack_stats[group_].sent) - static_cast<int64_t>(acks_taken_);
    if (next_arrival_ < arrivals_.size() || active_ || untriggered_ || !ready_.empty()) return true;
    for (uint64_t w : busy_)
      if (w) return true;
    return false;
  }

  uint32_t nic_backlog(EndpointId e) const override { return nics_.size(sh_.local_index[e]); }

  // PFC from the ToR: the endpoint's NIC holds its segments while paused.
  void pause(uint32_t local, uint8_t paused, Timeslot) override {
    if (paused_.size() <= local / 64) paused_.resize(local / 64 + 1, 0);
    if (paused)
      paused_[local / 64] |= 1ull << (local & 63);
    else
      paused_[local / 64] &= ~(1ull << (local & 63));
  }

 private:
  struct Arrival {
    uint32_t flow;
    uint32_t local;
    bool remote;  // destination outside the group
  };
  struct Inbound {
    uint32_t from;
    Timeslot d_min;      // its channel's smallest ACK latency (copied: read every timeslot)
    Timeslot confirmed;  // every ACK the sender group produced before this is in pending_
    AckChannel* channel;
  };

  uint32_t arrival_of(uint32_t flow) const { return sh_.arrival_index[flow]; }
  bool dependent(size_t a) const { return !need_.empty() && sh_.deps->num_after(arrivals_[a].flow) != 0; }

  // Flow `a` arrives at its source now: a sender, and what its window allows.
  // With transport.handshake, its SYN first; the sender once the SYN-ACK is back.
  void start(uint32_t a, Timeslot now) {
    ++sh_.nic_stats[group_].senders;
    ++active_;
    active_remote_ += arrivals_[a].remote;
    if (!syn_tries_.empty()) {
      syn_tries_[a] = 0;
      syn_at_[a] = now;
      send_syn(a, now);
      return;
    }
    open(a, now);
  }

  // The flow's sender (its handshake, if any, is done), and what its window allows.
  void open(uint32_t a, Timeslot now) {
    Timeslot syn_rtt = 0;  // the handshake's RTT sample: from the first SYN's start, unless it was resent (Karn)
    if (!syn_tries_.empty()) {
      if (syn_tries_[a] == 0) syn_rtt = std::max<Timeslot>(now - syn_at_[a], 1);
      syn_tries_[a] = kNoSyn;
      queued_timer_[a] = kNever;  // the SYN's timer entry, if still queued, is superseded
    }
    const FlowSpec& f = sh_.flows[arrivals_[a].flow];
    senders_[a] = std::make_unique<TcpSender>(sh_.settings, f.size_pkts, sh_.base_rtt[f.id], syn_rtt);
    after_event(a, now);
  }

  // A SYN joins the NIC; resent if no SYN-ACK came after initial_rto << tries (capped at max_rto).
  void send_syn(uint32_t a, Timeslot now) {
    const Arrival& ar = arrivals_[a];
    if (nics_.empty(ar.local)) busy_bit(ar.local);
    nics_.push(ar.local, {a, kSynSeq, static_cast<uint32_t>(now), NicSlot::kSyn});
    ++in_nic_[a];
    remote_queued_ += ar.remote;
    const unsigned tries = syn_tries_[a];
    const Timeslot rto = sh_.settings.initial_rto > (sh_.settings.max_rto >> tries)
                             ? sh_.settings.max_rto
                             : std::min(sh_.settings.initial_rto << tries, sh_.settings.max_rto);
    queued_timer_[a] = now + rto;
    timers_.push({now + rto, a});
  }

  // One dependency of flow `waiter` (this group's) completed at `now`: the
  // last one releases it `gap` later.
  void satisfy(uint32_t waiter, Timeslot now) {
    const uint32_t a = arrival_of(waiter);
    if (--need_[a] != 0) return;
    const Timeslot at = std::max(sh_.flows[waiter].start, now + sh_.deps->gap[waiter]);
    (*sh_.release)[waiter] = at;
    ready_.push({at, a});
    --untriggered_;
    untriggered_remote_ -= arrivals_[a].remote;
  }

  // Move every ACK due by `now` into pending_: wait until each sending group
  // has delivered timeslot now - d_min, then drain the channels that have
  // mail. A writer appends and flags before it publishes its progress, so
  // every ACK due by now is drained; ACKs drained early wait in pending_,
  // which orders them by content (the result does not depend on timing).
  void collect_acks(Timeslot now) {
    for (AckMsg& m : sh_.local[group_].acks) pending_.push(m);
    sh_.local[group_].acks.clear();
    if (now + 1 > next_look_) {  // some sending group may still owe ACKs due by now
      Timeslot next = kNever;
      for (Inbound& in : inbound_) {
        if (now + 1 > in.confirmed + in.d_min) {
          const Timeslot need = now + 1 - in.d_min;
          unsigned spins = 0;
          Timeslot seen;
          while ((seen = sh_.delivered_before(in.from)) < need) relax(spins);
          in.confirmed = seen;
        }
        next = std::min(next, in.confirmed + in.d_min);
      }
      next_look_ = next;
    }
    drain_mail();
  }

  // What emit(now) would have done with the ACKs due by now while no flow is
  // under way: take them (stop when done counts them) and nothing else.
  void take_acks_asleep(Timeslot now) {
    collect_acks(now);
    for (; !pending_.empty() && pending_.top().due <= now; pending_.pop()) ++acks_taken_;
  }

  // Lookahead only: the earliest timeslot an ACK not yet handled can be due.
  Timeslot earliest_ack(Timeslot now) {
    Timeslot e = kNoRemoteTraffic;
    for (Inbound& in : inbound_) {
      in.confirmed = std::max(in.confirmed, sh_.delivered_before(in.from));
      e = std::min(e, in.confirmed + in.d_min);
    }
    drain_mail();
    if (!pending_.empty()) e = std::min(e, pending_.top().due);
    (void)now;
    return e;
  }

  // Every ACK in a channel flagged in this group's mail, into pending_.
  void drain_mail() {
    std::atomic<uint64_t>* words = &sh_.mail[size_t{group_} * sh_.mail_words];
    for (uint32_t w = 0; w < sh_.mail_words; ++w) {
      if (!words[w].load(std::memory_order_relaxed)) continue;
      for (uint64_t bits = words[w].exchange(0, std::memory_order_acq_rel); bits; bits &= bits - 1) {
        const uint32_t from = w * 64 + static_cast<uint32_t>(__builtin_ctzll(bits));
        const auto in = std::lower_bound(inbound_.begin(), inbound_.end(), from,
                                         [](const Inbound& i, uint32_t g) { return i.from < g; });
        in->channel->drain(pending_buffer_);
      }
    }
    for (const AckMsg& m : pending_buffer_) pending_.push(m);
    pending_buffer_.clear();
  }

  // After an ACK, a timer or the start of flow `a`: queue what its window
  // allows, re-arm its timer, retire it when done.
  void after_event(uint32_t a, Timeslot now) {
    TcpSender& s = *senders_[a];
    const Arrival& ar = arrivals_[a];
    while (const std::optional<Segment> seg = s.next_send(now)) {
      if (nics_.empty(ar.local)) busy_bit(ar.local);
      nics_.push(ar.local, {a, seg->seq, static_cast<uint32_t>(now),
                            static_cast<uint8_t>((seg->ect ? NicSlot::kEct : 0) | (seg->cwr ? NicSlot::kCwr : 0))});
      ++in_nic_[a];
      remote_queued_ += ar.remote;
    }
    if (s.done()) {
      if (sh_.deps)  // flows of this endpoint waiting for this send
        for (uint32_t j = sh_.tx_begin[ar.flow]; j < sh_.tx_begin[ar.flow + 1]; ++j) satisfy(sh_.tx_waiters[j], now);
      SenderOutcome& o = sh_.outcomes[ar.flow];
      const SenderStats& st = s.stats();
      o.segments_sent = static_cast<uint32_t>(st.segments_sent);
      o.retransmits = static_cast<uint32_t>(st.retransmits);
      o.timeouts = static_cast<uint32_t>(st.timeouts);
      o.ecn_reductions = static_cast<uint32_t>(st.ecn_reductions);
      senders_[a].reset();
      --sh_.nic_stats[group_].senders;
      queued_timer_[a] = kNever;
      --active_;
      active_remote_ -= ar.remote;
      return;
    }
    const Timeslot d = s.timer_deadline();
    if (d < queued_timer_[a]) {  // later deadlines are found when the earlier entry pops
      queued_timer_[a] = d;
      timers_.push({d, a});
    }
  }

  std::vector<uint64_t> paused_;  // bit l: endpoint l's NIC is paused by its ToR (PFC)
  void busy_bit(uint32_t l) {
    if (busy_.size() <= l / 64) busy_.resize(l / 64 + 1, 0);
    busy_[l / 64] |= 1ull << (l & 63);
  }

  ClosedLoopShared& sh_;
  EndpointStamping stamping_;
  std::vector<Timeslot>& first_sent_;
  uint32_t group_ = 0;
  std::vector<Arrival> arrivals_;
  size_t next_arrival_ = 0;
  std::vector<Timeslot> next_remote_start_;
  std::vector<std::unique_ptr<TcpSender>> senders_;  // by arrival; null before start and after done
  std::vector<Timeslot> queued_timer_;                // by arrival: the live heap entry's deadline
  std::vector<uint32_t> in_nic_;                      // by arrival: its segments in its endpoint's NIC
  std::priority_queue<TimerEntry, std::vector<TimerEntry>, std::greater<TimerEntry>> timers_;
  PendingAcks pending_;
  std::vector<AckMsg> pending_buffer_;
  std::vector<Inbound> inbound_;
  Timeslot next_look_ = 0;  // min over inbound_ of confirmed + d_min: no wait needed while now + 1 <= it
  NicQueues nics_;  // by local endpoint (transport.nic: fifo or round robin)
  std::vector<uint64_t> busy_;
  uint32_t active_ = 0, active_remote_ = 0;
  uint32_t remote_queued_ = 0;  // segments for outside the group in the NICs
  uint64_t acks_taken_ = 0;     // ACKs handled (stop when done)
  Timeslot last_emit_ = kNever;  // the last timeslot emit() ran (stop when done: was it asleep?)
  // Flows that wait for others (ClosedLoopShared::deps): by arrival, the
  // dependencies still to complete; released flows by release time.
  std::vector<uint32_t> need_;
  // transport.handshake (empty without): by arrival, SYNs resent so far, or
  // kNoSyn when no handshake is under way (not started, or open).
  static constexpr uint8_t kNoSyn = 0xFF;
  std::vector<uint8_t> syn_tries_;
  std::vector<Timeslot> syn_at_;  // by arrival: when its first SYN joined the NIC (the RTT sample's start)
  std::priority_queue<ReadyEntry, std::vector<ReadyEntry>, std::greater<ReadyEntry>> ready_;
  uint32_t untriggered_ = 0, untriggered_remote_ = 0;  // dependent flows not yet released (for outside the group)
  Timeslot min_remote_gap_ = kNoRemoteTraffic;         // the smallest gap of a dependent flow for outside
};

class ClosedLoopSink final : public TrafficSink {
 public:
  ClosedLoopSink(ClosedLoopShared& sh, std::vector<FlowState>& states, const std::vector<EndpointId>& group,
                 EventLog* log, uint64_t* unexpected)
      : sh_(sh), states_(states), echo_(ecn_echo_for(sh.settings.kind)), log_(log), unexpected_(unexpected) {
    group_ = sh.group_of[group.front()];
    out_ = {sh.out_refs.data() + sh.out_begin[group_], sh.out_refs.data() + sh.out_begin[group_ + 1]};
    queueing_ = sh.ack_queueing != AckQueueing::kNone && sh.tor[group_];
    lossy_ = sh.ack_queueing == AckQueueing::kDelayAndLoss;
  }

  void deliver(const Packet* pkts, uint32_t n, Timeslot now) override {
    // The ToR has run this timeslot already (the engine steps a router before its group).
    const QueueBank* bank = queueing_ ? &sh_.tor[group_]->bank() : nullptr;
    for (uint32_t i = 0; i < n; ++i) {
      const Packet& p = pkts[i];
      const bool syn = (p.flags & kFlagSyn) && p.seq == kSynSeq && sh_.settings.handshake;
      if (__builtin_expect(p.flow >= states_.size() || p.dst >= sh_.group_of.size() ||
                               sh_.group_of[p.dst] != group_ || sh_.flows[p.flow].dst != p.dst ||
                               (p.seq >= sh_.flows[p.flow].size_pkts && !syn),
                           0)) {
        ++*unexpected_;
        continue;
      }
      const FlowSpec& f = sh_.flows[p.flow];
      if (log_ && log_->log_deliveries()) log_->on_deliver(p, now);
      if (syn) {  // every SYN, resent ones too, is answered by a SYN-ACK on the ACKs' way back
        send_ack(f, Ack(0, kSynSeq), now, bank);
        continue;
      }
      Receiver::Acks acks = receive(p, f, states_[p.flow], now);
      for (uint32_t k = 0; k < acks.n; ++k) {
        acks.ack[k].telemetry = p.custom[kTelemetryWord];  // in-band telemetry back to the sender (hpcc)
        send_ack(f, acks.ack[k], now, bank);
      }
    }
    // Each touched group's ACKs in the order they were made: append, then
    // flag, before this group publishes its progress.
    for (uint32_t h : touched_) {
      for (const Outgoing& o : outbox_)
        if (o.to == h) batch_.push_back(o.msg);
      const ChannelRef* c = std::lower_bound(out_.first, out_.second, h,
                                             [](const ChannelRef& r, uint32_t g) { return r.group < g; });
      c->channel->append(batch_);
      batch_.clear();
      sh_.mail[size_t{h} * sh_.mail_words + group_ / 64].fetch_or(uint64_t{1} << (group_ % 64),
                                                                 std::memory_order_release);
    }
    touched_.clear();
    outbox_.clear();
  }

 private:
  struct Outgoing {
    uint32_t to;  // the sender's group
    AckMsg msg;
  };

  // An ACK (or SYN-ACK) of flow f leaves its receiver now: to the sender's
  // group, after the reverse path's latency and, with ack_queueing, the
  // backlog it finds (`bank`: the ToR's queues; lost where the port is full).
  void send_ack(const FlowSpec& f, const Ack& ack, Timeslot now, const QueueBank* bank) {
    AckMsg m{now + sh_.ack_delay[f.id], f.id, ack};
    if (bank && !queue_ack(*bank, f, &m.due)) return;  // lost in a full port
    ++sh_.ack_stats[group_].sent;
    const uint32_t to = sh_.group_of[f.src];
    if (to == group_) {
      sh_.local[group_].acks.push_back(m);
    } else {
      if (std::find(touched_.begin(), touched_.end(), to) == touched_.end()) touched_.push_back(to);
      outbox_.push_back({to, m});
    }
  }

  // The flow's receiver answers packet p, and the flow's record counts it if
  // new. A receiver lives from the flow's first packet to its last: then one
  // bit is kept and Receiver::complete_ack answers any late duplicate.
  Receiver::Acks receive(const Packet& p, const FlowSpec& f, FlowState& s, Timeslot now) {
    auto& r = sh_.receivers[p.flow];
    Receiver::Acks acks;
    if (!r && s.delivered == f.size_pkts) {
      bool latched = sh_.complete_ece[p.flow];
      acks.push(Receiver::complete_ack(echo_, f.size_pkts, p.seq, p.ce(), p.flags & kFlagCwr, &latched,
                                       sh_.settings.sack_blocks > 0));
      sh_.complete_ece[p.flow] = latched;
      return acks;
    }
    if (!r) {
      r = std::make_unique<Receiver>(sh_.settings);
      ++sh_.ack_stats[group_].receivers;
    }
    const uint64_t dups = r->stats().duplicates;
    acks = r->on_data(p.seq, p.ce(), p.flags & kFlagCwr, now);
    if (r->stats().duplicates != dups) return acks;  // seen before
    if (p.ce()) ++s.marked;
    if (++s.delivered == f.size_pkts) {
      s.finish = now;
      if (sh_.has_rx_waiters(p.flow)) sh_.received[group_].push_back(p.flow);  // its source starts them
      if (r->idle() && r->next_expected() == f.size_pkts) {
        sh_.complete_ece[p.flow] = r->ece_latched();
        r.reset();
        --sh_.ack_stats[group_].receivers;
      }
    }
    return acks;
  }

  // ACK queueing: the ACK leaves now, reaches the ToR `latency` later and
  // waits there behind the backlog of its first reverse port, read as the ToR
  // left it at the end of this timeslot: at latency 1 exactly what the ACK
  // finds as the first arrival of the next timeslot (earlier by latency - 1
  // otherwise). FIFO at one packet per timeslot: backlog b delays it by b.
  // An ACK takes no room in the port (42 bytes: a few percent of a timeslot).
  // Loss (delay_and_loss): a single-queue port that held its capacity in this
  // timeslot (backlog >= capacity - 1 after its departure) was refusing
  // arrivals, and the ACK is lost there; returns false. As the first arrival
  // of the next timeslot it would always find room (the departure freed one),
  // so the rule takes the ACK as competing with this timeslot's arrivals.
  bool queue_ack(const QueueBank& bank, const FlowSpec& f, Timeslot* due) {
    AckQueueStats& st = sh_.ack_stats[group_].s;
    ++st.acks;
    // The receiver's NIC: the segments queued in its FIFO leave first, one per timeslot.
    const uint64_t nic = sh_.ack_wait_nic ? sh_.nics[group_]->nic_backlog(f.dst) : 0;
    const PortId port = sh_.ack_port[f.id];
    uint64_t backlog = 0;
    if (port == kNoRoute || port >= bank.num_ports()) {
      ++st.unqueued;
    } else {
      backlog = bank.port_packets(port);
      if (lossy_ && bank.queues_per_port() == 1 && backlog > 0 && backlog + 1 >= bank.capacity_pkts()) {
        ++st.lost;
        return false;
      }
    }
    *due += nic + backlog;
    st.waited += nic + backlog;
    st.waited_nic += nic;
    st.max_wait = std::max<uint64_t>(st.max_wait, nic + backlog);
    st.nic_waits.add(nic);
    st.port_waits.add(backlog);
    return true;
  }

  ClosedLoopShared& sh_;
  std::vector<FlowState>& states_;
  uint32_t group_ = 0;
  EcnEcho echo_;
  EventLog* log_;
  uint64_t* unexpected_;
  std::pair<const ChannelRef*, const ChannelRef*> out_;  // this group's channels, by reader
  std::vector<Outgoing> outbox_;   // one deliver() call's ACKs for other groups, in order
  std::vector<uint32_t> touched_;  // their groups, in first-touched order
  std::vector<AckMsg> batch_;      // one group's, appended to its channel
  bool queueing_ = false;  // ACK queueing on, and the ToR known
  bool lossy_ = false;
};

}  // namespace

std::unique_ptr<TrafficSource> make_closed_loop_source(ClosedLoopShared& sh, const std::vector<EndpointId>& group,
                                                       EndpointStamping stamping, std::vector<Timeslot>& first_sent) {
  return std::make_unique<ClosedLoopSource>(sh, group, stamping, first_sent);
}

std::unique_ptr<TrafficSink> make_closed_loop_sink(ClosedLoopShared& sh, std::vector<FlowState>& states,
                                                   const std::vector<EndpointId>& group, EventLog* log,
                                                   uint64_t* unexpected) {
  return std::make_unique<ClosedLoopSink>(sh, states, group, log, unexpected);
}

}  // namespace flexplane
