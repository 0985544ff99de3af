// The engine's private pieces shared by its set-up (engine_build.cc) and its
// run loop (engine.cc): a core, the node interface, and the two kinds of node
// (a group of endpoints, a router). Not part of the engine's interface.
#pragma once

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <queue>
#include <vector>

#include "emulator/engine/access_links.h"
#include "emulator/engine/engine.h"
#include "emulator/engine/lookahead.h"
#include "emulator/engine/spin_wait.h"

namespace flexplane {

// How often a core looks again for a promise when it could not make a long
// one (its cross-core ports are busy): often enough to catch quiet spells,
// rarely enough to cost < 1 % of a timeslot.
inline constexpr Timeslot kPromiseRecheck = 16;
inline constexpr Timeslot kPromiseBackoffMax = 1024;

struct Engine::Node {
  virtual ~Node() = default;
  // Runs timeslot `now`; returns whether the node must run at now + 1 too
  // whatever arrives (it holds work, or cannot tell). A node that returns
  // false runs again only when woken (Core::wake): by a packet sent to it or
  // by a time it asked for ("Cost in proportion to activity", design.md).
  virtual bool step(Timeslot now) = 0;
  // Stop when done, at a checkpoint after step(now): whether the node holds
  // or sends anything that is still to act after `now` (see EngineOptions).
  virtual bool busy_after(Timeslot now, int64_t* in_transit) = 0;
  bool boundary = false;  // has a link to or from a node on another core
  uint32_t index = 0;     // position in its core's `nodes` (its wake bit)
};

struct Engine::Core {
  alignas(64) std::atomic<Timeslot> next{0};  // first timeslot its boundary nodes have not run
  // First timeslot some node of the core has not run (every node: boundary
  // and interior). Traffic reads it (Traffic::set_group_clock): a group whose
  // source sleeps has delivered everything before it.
  alignas(64) std::atomic<Timeslot> finished{0};
  // Its links to core c are final for arrivals before promise_to[c] (lookahead;
  // written rarely, so readers keep the line cached).
  struct alignas(64) Promise {
    std::atomic<Timeslot> before{0};
  };
  std::unique_ptr<Promise[]> promise_to;
  alignas(64) uint32_t id = 0;
  // Nodes touching a link to another core come first: once they have run a
  // timeslot the core publishes it (see run_core), then runs the rest.
  std::vector<std::unique_ptr<Node>> nodes;
  size_t boundary_nodes = 0;
  EventLog log;
  std::vector<SchemeStatSample> scheme_stats;
  TimeslotTimer timer;  // if options.time_timeslots
  // Real-time health, written by this core, read by the monitor.
  std::atomic<uint64_t> late{0};
  std::atomic<int64_t> max_lag_ns{0};
  // A neighbour core and what this core last saw of its progress: reloading
  // `next` (a cross-core cache miss) only when the cached value is too small
  // lets cores with slack run without touching each other's cache lines.
  struct Neighbour {
    Core* core;
    uint32_t latency;
    Timeslot seen = 0;
    const std::atomic<Timeslot>* promise = nullptr;  // upstream: its promise to us
    Timeslot ready = 0;  // upstream: its links to us are final for arrivals before this
  };
  // wait for neighbour.next >= t - latency + 1, or its promise > t (it feeds us)
  cache_vector<Neighbour> upstream;
  // wait for neighbour.next >= t + latency - window + 1 (we feed it)
  cache_vector<Neighbour> downstream;
  // Lookahead (if on and this core feeds another).
  LookaheadPlan plan;
  bool promising = false;
  std::vector<Timeslot> promise_scratch;  // by core
  Timeslot next_promise_check = 0;
  Timeslot promise_backoff = kPromiseRecheck;  // grows while refreshes extend nothing
  Timeslot promised_min = 0;  // smallest promise published to a downstream core
  CoreSyncStats sync;
  bool may_yield = true;  // shares a CPU with other engine cores (see back_off)
  // Stop when done: what this core found at checkpoint `tag` (a ring of 4:
  // a slot is rewritten only after every core has read it; engine.cc).
  struct alignas(64) DonePost {
    std::atomic<uint64_t> tag{~uint64_t{0}};
    uint64_t busy = 0;
    int64_t in_transit = 0;
  };
  DonePost done_post[4];
  Timeslot next_done_check = ~Timeslot{0};
  // Which nodes run at a timeslot (EngineOptions::skip_idle): a wheel of
  // bitsets over `nodes`, slot t & wake_mask, for the next wake_mask + 1
  // timeslots (more than any same-core latency); later wakes wait in a heap.
  uint32_t wake_words = 0;  // 64-bit words per slot
  uint64_t wake_mask = 0;
  std::vector<uint64_t> wake_bits;  // [slot * wake_words + node / 64]
  struct LaterWake {
    Timeslot at;
    uint32_t node;
    bool operator>(const LaterWake& o) const { return at > o.at; }
  };
  std::priority_queue<LaterWake, std::vector<LaterWake>, std::greater<LaterWake>> later;
  std::vector<RouterNode*> routers;  // its router nodes, in node order (occupancy samples)
  // Runs across processes: per timeslot (a wheel of the link window), the
  // links to another process's cores this core sent on, as indices into
  // the partition's cross links -- so the pump reads the slots written, not
  // every such link every timeslot. Empty: none to log.
  std::vector<std::vector<uint32_t>> cross_sent;
  void log_cross(Timeslot now, uint32_t link) { cross_sent[now & (cross_sent.size() - 1)].push_back(link); }
  explicit Core(bool packet_log) : log(packet_log) {}

  // Node `i` runs at timeslot `t` (> the timeslot running now).
  void wake(Timeslot t, uint32_t i, Timeslot now) {
    if (t - now <= wake_mask)
      wake_bits[(t & wake_mask) * wake_words + (i >> 6)] |= uint64_t{1} << (i & 63);
    else
      later.push(LaterWake{t, i});
  }
  void wake_soon(Timeslot t, uint32_t i) {  // t - now <= wake_mask (a link's latency)
    wake_bits[(t & wake_mask) * wake_words + (i >> 6)] |= uint64_t{1} << (i & 63);
  }

  // Before reading a cross-core link at `t`: every upstream core has run
  // t - latency or promised its links idle through t (called by the nodes
  // that read such links, as late as they can).
  void wait_upstream(Timeslot t) {
    for (auto& n : upstream)
      if (n.ready <= t) sync_with(n, t);
  }

  // The slow path: the promise first (a line its writer rarely touches, so
  // usually still cached here), then the watermark.
  void sync_with(Neighbour& n, Timeslot t) {
    ++sync.syncs;
    unsigned spins = 0;
    for (;;) {
      const Timeslot promised = n.promise->load(std::memory_order_acquire);
      if (promised > t) {
        n.ready = std::max(promised, n.seen + n.latency);
        ++sync.syncs_by_promise;
        return;
      }
      const Timeslot s = n.core->next.load(std::memory_order_acquire);
      if (s + n.latency > t) {
        n.seen = s;
        n.ready = std::max(promised, s + n.latency);
        return;
      }
      spin::back_off(spins, may_yield);
    }
  }

  // After timeslot t: extend the promises to downstream cores, if the plan
  // allows more than the watermark already says.
  void refresh_promises(Timeslot t) {
    plan.promises(t, promise_scratch);
    Timeslot soonest = kNoRemoteTraffic;
    bool extended = false;
    for (const auto& n : downstream) {
      const uint32_t d = n.core->id;
      const Timeslot p = promise_scratch[d];
      Timeslot published = promise_to[d].before.load(std::memory_order_relaxed);
      if (p > published && p > t + 1 + n.latency) {
        promise_to[d].before.store(p, std::memory_order_release);
        ++sync.promises_published;
        published = p;
        extended = true;
      }
      soonest = std::min(soonest, published);
    }
    promised_min = soonest;
    // Far-reaching promises are renewed shortly before they run out. Where
    // traffic leaves the core every few timeslots no promise reaches past
    // the watermark, and working them out (plan.promises walks every
    // cross-core link's inputs) is wasted: the interval doubles after each
    // refresh that extended nothing, up to kPromiseBackoffMax, and is back
    // to kPromiseRecheck after one that did. Outputs never depend on
    // promises, only how often cores read each other's watermarks.
    promise_backoff = extended ? kPromiseRecheck : std::min(2 * promise_backoff, kPromiseBackoffMax);
    next_promise_check = soonest > t + 3 * kPromiseRecheck ? soonest - 2 * kPromiseRecheck : t + promise_backoff;
  }
};

// How a router output port is connected.
enum class PortKind : uint8_t { kNone, kEndpoint, kRouter };

struct alignas(kCacheLine) Engine::EndpointGroupNode final : Engine::Node {
  std::unique_ptr<TrafficSource> source;
  std::unique_ptr<TrafficSink> sink;
  AccessLinks up, down;  // endpoints -> ToR, ToR -> endpoints
  cache_vector<uint32_t> sent_local;
  bool promising = false;  // its core makes promises: keep `promise` current
  RackPromise promise;
  Core* core = nullptr;
  uint32_t tor_index = 0;  // its ToR's node index on the core (woken by what the group sends)
  bool skip_idle = false;  // EngineOptions::skip_idle
  Timeslot next_emit = 0;  // the source asked not to emit before this (TrafficSource::next_emit)
  // PFC frames from the ToR on their way down the access links (in arrival order).
  struct PauseArrival {
    Timeslot at;
    uint32_t local;
    uint8_t paused;
  };
  std::deque<PauseArrival> pauses_in;

  // The ToR paused (or resumed) endpoint `local` at `now`; it hears at now + latency.
  void pause_from_tor(Timeslot now, uint32_t local, uint8_t paused) {
    const Timeslot at = now + down.latency();
    pauses_in.push_back(PauseArrival{at, local, paused});
    if (skip_idle) core->wake_soon(at, index);
  }

  bool step(Timeslot now) override {
    Packet* arrived;
    if (const uint32_t n = down.arriving(now, &arrived)) sink->deliver(arrived, n, now);
    for (; !pauses_in.empty() && pauses_in.front().at <= now; pauses_in.pop_front()) {
      source->pause(pauses_in.front().local, pauses_in.front().paused, now);
      next_emit = std::min(next_emit, now);
    }
    // Woken only for deliveries while the source sleeps: emit() would do nothing.
    if (now < next_emit) return false;
    const uint32_t m = source->emit(now, up.send_buffer(now), sent_local.data());
    assert(sends_one_per_endpoint(m));
    up.commit(now, m);
    if (m && skip_idle) core->wake_soon(now + up.latency(), tor_index);
    if (promising) promise.update(now, source->remote_quiet_until(now));
    // A source that sent may have more (and a saturated one always has):
    // ask only one that sent nothing; at worst it is asked once more.
    if (!skip_idle || m) return true;
    const Timeslot next = source->next_emit(now);
    if (next <= now + 1) return true;
    // Nothing is emitted before `next`: nothing leaves the rack before it either.
    if (promising) promise.quiet_from = std::max(promise.quiet_from, next);
    next_emit = next;
    if (next < kNoRemoteTraffic) core->wake(next, index, now);
    return false;
  }

  bool busy_after(Timeslot now, int64_t* in_transit) override {
    const bool busy = source->busy_after(now, in_transit);
    return busy || up.in_flight_after(now) || down.in_flight_after(now);
  }

  // The source contract: at most one packet per endpoint, in endpoint order
  // (so a router sees its arrivals in input-port order, as from separate links).
  bool sends_one_per_endpoint(uint32_t m) const {
    for (uint32_t i = 0; i < m; ++i)
      if (sent_local[i] >= sent_local.size() || (i && sent_local[i] <= sent_local[i - 1])) return false;
    return true;
  }
};

struct alignas(kCacheLine) Engine::RouterNode final : Engine::Node {
  Router* router = nullptr;
  uint32_t id = 0;
  Core* core = nullptr;
  Timeslot sample_every = 0;
  bool keep_samples = true;
  OccupancyTrace occupancy;
  std::vector<uint32_t> byte_row;  // scratch: one sample's bytes per port
  EndpointGroupNode* rack = nullptr;  // the endpoints on this router's ports, if any
  bool trusted = false;               // router->one_packet_per_port()
  PortId rack_end = 0;                // ports below this all lead to the rack ...
  bool rack_first = false;            // ... and the router is trusted (dispatch_tail)
  std::vector<Link*> in;              // links from other routers, in port order
  std::vector<Link*> out;             // per port; set for PortKind::kRouter
  cache_vector<PortKind> kind;        // per port
  cache_vector<uint64_t> used;        // per port, one bit: sent this timeslot
  cache_vector<Packet> batch, sent;
  cache_vector<PortId> sent_ports;
  bool has_stats = false;   // the router exports scheme statistics
  RouterLosses link_losses;  // packets it sent that no link took (kNoLink, kLinkCollision, kMisdelivered)
  cache_vector<EndpointId> endpoint_at;  // per port: the endpoint it leads to (PortKind::kEndpoint)

  // Activity (EngineOptions::skip_idle; design.md, "Cost in proportion to activity").
  bool skip_idle = false;
  const QueueBank* bank = nullptr;  // router->bank() (a virtual call saved per timeslot)
  bool idles = false;   // skip_idle and router->idles_when_empty(): output() may be skipped
  bool always = true;   // runs every timeslot: !idles, or it reads links from other cores
  uint32_t rack_index = 0;  // its rack's node index on the core
  // In-links with a packet arriving at t: bit i of arrive[t & arrive_mask] for
  // in[i] (bit 63: in[63] and after), set by same-core senders; links from
  // other cores (remote_in) are read every timeslot.
  cache_vector<uint64_t> arrive;
  uint64_t arrive_mask = 0;
  uint64_t remote_in = 0;
  cache_vector<Link::View> in_view;  // in[i]'s wheel
  struct Target {          // per port: its link, and the same-core router it leads to
    Link::View link;
    uint64_t* arrive = nullptr;  // null: none (or skip_idle off)
    uint64_t arrive_mask = 0;
    uint64_t bit = 0;
    uint32_t node = 0;
    uint32_t cross = kNotCross;  // runs across processes: its index among the cross links, if another process reads it
  };
  static constexpr uint32_t kNotCross = ~0u;
  cache_vector<Target> target;
  // PFC (api/pfc.h): a router that pauses() gets each arrival's ingress port
  // and sends pause frames on its links' control lanes or to its rack.
  bool pauses = false;
  bool reads_ctrl = false;                       // some in-link has a control lane
  cache_vector<PortId> in_port;                  // in[i]'s port
  cache_vector<PortId> ingress;                  // scratch: each arrival's port
  const std::vector<PortRef>* endpoint_port = nullptr;  // the topology's (a rack arrival's port)
  std::vector<PauseFrame> frames;                // scratch: one per port
  std::vector<uint32_t> rack_local;              // per endpoint port: the endpoint's index in the rack

  bool step(Timeslot now) override {
    // Arrivals: the rack's endpoints (lower ports), then other routers.
    Packet* arrived;
    bool got = false;
    if (rack)
      if (const uint32_t n = rack->up.arriving(now, &arrived)) {
        if (pauses) {
          for (uint32_t i = 0; i < n; ++i) ingress[i] = (*endpoint_port)[arrived[i].src].port;
          router->input_from(arrived, ingress.data(), n, now);
        } else {
          router->input(arrived, n, now);
        }
        got = true;
      }
    if (!in.empty()) {
      // Only now wait for other cores: the rack's arrivals above overlapped the hand-off.
      if (boundary) core->wait_upstream(now);
      uint32_t n = 0;
      if (__builtin_expect(pauses || reads_ctrl, 0)) {
        n = take_with_ctrl(now);
      } else if (!skip_idle) {
        for (const Link::View& l : in_view)
          if (l.take(now, batch[n])) ++n;
      } else {
        uint64_t& slot = arrive[now & arrive_mask];
        uint64_t bits = slot | remote_in;
        slot = 0;
        for (; bits; bits &= bits - 1) {
          const unsigned i = static_cast<unsigned>(__builtin_ctzll(bits));
          if (i < 63) {
            if (in_view[i].take(now, batch[n])) ++n;
          } else {
            for (size_t j = 63; j < in_view.size(); ++j)
              if (in_view[j].take(now, batch[n])) ++n;
          }
        }
      }
      if (n) {
        if (pauses)
          router->input_from(batch.data(), ingress.data(), n, now);
        else
          router->input(batch.data(), n, now);
        got = true;
      }
    }

    // Nothing came and nothing is queued: output() would send nothing and
    // change nothing (the router vouched for that: idles_when_empty).
    if (idles && !got && bank->idle()) return always;

    // Departures go straight into the rack's access-link slot; the few bound
    // for other routers are moved onto their links and squeezed out.
    Packet* out_pkts = rack ? rack->down.send_buffer(now) : sent.data();
    const uint32_t m = router->output(now, out_pkts, sent_ports.data());
    const uint32_t to_rack = rack_first ? dispatch_tail(now, out_pkts, m) : dispatch(now, out_pkts, m);
    if (rack) {
      rack->down.commit(now, to_rack);
      if (to_rack && skip_idle) core->wake_soon(now + rack->down.latency(), rack_index);
    }
    if (pauses) send_pause_frames(now);
    return always || !bank->idle();
  }

  // PFC: the packets arriving over links, with their ports, and the pause
  // frames beside them (applied before this timeslot's output()).
  uint32_t take_with_ctrl(Timeslot now) {
    uint32_t n = 0;
    auto take = [&](size_t i) {
      const Link::View& l = in_view[i];
      if (l.take(now, batch[n])) ingress[n++] = in_port[i];
      uint8_t paused;
      if (l.ctrl && l.take_ctrl(now, paused)) router->pause(in_port[i], paused, now);
    };
    if (!skip_idle) {
      for (size_t i = 0; i < in_view.size(); ++i) take(i);
      return n;
    }
    uint64_t& slot = arrive[now & arrive_mask];
    uint64_t bits = slot | remote_in;
    slot = 0;
    for (; bits; bits &= bits - 1) {
      const unsigned i = static_cast<unsigned>(__builtin_ctzll(bits));
      if (i < 63)
        take(i);
      else
        for (size_t j = 63; j < in_view.size(); ++j) take(j);
    }
    return n;
  }

  // PFC: this timeslot's pause frames, each to the neighbour on its port.
  void send_pause_frames(Timeslot now) {
    const uint32_t k = router->pause_frames(now, frames.data());
    for (uint32_t i = 0; i < k; ++i) {
      const PauseFrame& f = frames[i];
      if (f.port >= kind.size()) continue;
      if (kind[f.port] == PortKind::kRouter) {
        target[f.port].link.put_ctrl(now, f.paused);
        sent_on(f.port, now);  // wakes the neighbour if it shares our core (else it reads every timeslot)
      } else if (kind[f.port] == PortKind::kEndpoint && rack) {
        rack->pause_from_tor(now, rack_local[f.port], f.paused);
      }
    }
  }

  // A packet went onto the link of `port` at `now`: wake the router it leads to.
  void sent_on(PortId port, Timeslot now) {
    const Target& g = target[port];
    if (!g.arrive) {  // to another core
      if (g.cross != kNotCross) core->log_cross(now, g.cross);
      return;
    }
    const Timeslot at = now + g.link.latency;
    g.arrive[at & g.arrive_mask] |= g.bit;
    core->wake_soon(at, g.node);
  }

  // A router that does not vouch for sending only what its bank holds
  // (forwards_by_table) may always send: it never lets a run stop early.
  bool busy_after(Timeslot now, int64_t*) override {
    if (!router->forwards_by_table()) return true;
    const QueueBank& b = router->bank();
    for (PortId p = 0; p < b.num_ports(); ++p)
      if (b.port_packets(p)) return true;
    constexpr Timeslot kNone = ~Timeslot{0};
    for (const Link* l : out)  // in flight on its links to other routers (the rack's are its group's)
      if (l && l->first_arrival(now + 1, now + 1 + l->latency(), kNone) != kNone) return true;
    return false;
  }

  // A trusted router's output is in port order and the rack's ports come
  // first, so packets for other routers are a tail of the batch (none, in a
  // single rack: one comparison per timeslot).
  uint32_t dispatch_tail(Timeslot now, const Packet* pkts, uint32_t m) {
    while (m && sent_ports[m - 1] >= rack_end) {
      --m;
      const PortId p = sent_ports[m];
      if (kind[p] != PortKind::kRouter)
        lose(now, pkts[m], p, Reason::kNoLink);
      else if (!target[p].link.put(now, pkts[m]))
        lose(now, pkts[m], p, Reason::kLinkCollision);
      else
        sent_on(p, now);
    }
    return m;
  }

  // Moves packets for other routers onto their links and squeezes them out of
  // `pkts`; checks the one-packet-per-port rule unless the router vouches for
  // it. Returns how many packets stay (those for the rack).
  uint32_t dispatch(Timeslot now, Packet* pkts, uint32_t m) {
    uint32_t to_rack = 0;
    for (uint32_t i = 0; i < m; ++i) {
      const PortId p = sent_ports[i];
      if (!trusted) {
        if (__builtin_expect(p >= kind.size(), 0)) {
          lose(now, pkts[i], p, Reason::kNoLink);  // a port the router does not have
          continue;
        }
        if (__builtin_expect(used[p >> 6] & (1ull << (p & 63)), 0)) {
          lose(now, pkts[i], p, Reason::kLinkCollision);  // a second packet on one port
          continue;
        }
        used[p >> 6] |= 1ull << (p & 63);
      }
      if (__builtin_expect(kind[p] == PortKind::kEndpoint, 1)) {
        if (!trusted && __builtin_expect(endpoint_at[p] != pkts[i].dst, 0)) {
          lose(now, pkts[i], p, Reason::kMisdelivered);  // not the endpoint it is for
          continue;
        }
        if (to_rack != i) pkts[to_rack] = pkts[i];
        ++to_rack;
      } else if (kind[p] == PortKind::kRouter) {
        if (!target[p].link.put(now, pkts[i]))
          lose(now, pkts[i], p, Reason::kLinkCollision);
        else
          sent_on(p, now);
      } else {
        lose(now, pkts[i], p, Reason::kNoLink);
      }
    }
    if (!trusted)
      for (uint64_t& w : used) w = 0;
    return to_rack;
  }

  // A packet the router sent that no link takes: a drop like any other
  // (the flow loses it, a live endpoint gets its DROP verdict), counted here.
  void lose(Timeslot now, const Packet& p, PortId port, Reason r) {
    ++link_losses.by_reason[static_cast<unsigned>(r)];
    core->log.on_drop(p, id, port, r, now);
  }

  void sample(Timeslot now) {
    // One row of the trace and one histogram increment per port (cost: docs/performance.md, "Occupancy output").
    const QueueBank& b = router->bank();
    OccupancyTrace& o = occupancy;
    ++o.samples;
    for (PortId p = 0; p < o.ports; ++p) {
      const uint32_t pkts = b.port_packets(p);
      std::vector<uint64_t>& h = o.histogram[p];
      if (pkts >= h.size()) [[unlikely]] h.resize(std::max<size_t>(pkts + 1, 2 * h.size()));
      ++h[pkts];
    }
    if (!keep_samples) return sample_stats(now);
    o.times.push_back(now);
    const size_t at = o.packets.size();
    o.packets.resize(at + o.ports);
    uint32_t* row = o.packets.data() + at;
    bool uniform = o.packet_bytes != 0;
    for (PortId p = 0; p < o.ports; ++p) {
      row[p] = b.port_packets(p);
      uint64_t bytes = 0;
      for (QueueId q = 0; q < b.queues_per_port(); ++q) bytes += b.bytes(p, q);
      byte_row[p] = static_cast<uint32_t>(std::min<uint64_t>(bytes, UINT32_MAX));
      uniform = uniform && bytes == uint64_t{row[p]} * o.packet_bytes;
    }
    if (uniform) return sample_stats(now);
    if (o.packet_bytes) {  // the first mixed sizes: spell out the rows so far
      o.bytes.resize(at);
      for (size_t i = 0; i < at; ++i) o.bytes[i] = o.bytes_at(i);
      o.packet_bytes = 0;
    }
    o.bytes.insert(o.bytes.end(), byte_row.begin(), byte_row.end());
    sample_stats(now);
  }

  void sample_stats(Timeslot now) {
    if (!has_stats) return;
    const QueueBank& b = router->bank();
    struct ToCore final : StatsOut {
      std::vector<SchemeStatSample>& out;
      SchemeStatSample s;
      ToCore(std::vector<SchemeStatSample>& o, SchemeStatSample base) : out(o), s(base) {}
      void put(unsigned stat, QueueId q, double v) override {
        s.stat = static_cast<uint16_t>(stat);
        s.queue = q;
        s.value = v;
        out.push_back(s);
      }
    };
    for (PortId p = 0; p < b.num_ports(); ++p) {
      ToCore to(core->scheme_stats, SchemeStatSample{now, id, p, 0, 0, 0});
      router->sample_stats(p, to);
    }
  }
};

}  // namespace flexplane
