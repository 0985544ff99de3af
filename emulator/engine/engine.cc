#include "emulator/engine/engine.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <map>
#include <thread>

#include "api/params.h"
#include "emulator/engine/access_links.h"
#include "emulator/engine/lookahead.h"

namespace flexplane {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Push a line another core is about to read out to the shared cache, so that
// core's miss is served by L3 instead of by a snoop into ours (CLDEMOTE; a
// no-op hint on CPUs without it). Measured for the watermark: see
// docs/performance.md.
inline void hand_off(const void* line) {
#if defined(__x86_64__)
  asm volatile("cldemote %0" ::"m"(*static_cast<const char*>(line)));
#else
  (void)line;
#endif
}

// One wait of a core for another. Plain re-reads first: `pause` alone costs
// ~40 ns on recent Xeons, a third of a cross-core hand-off. A core with a CPU
// of its own then only spins; one that shares (more engine threads than
// CPUs, e.g. small CI machines) yields soon, or the core it waits for may
// not get to run at all.
inline void back_off(unsigned& spins, bool may_yield) {
  if (++spins < 64) return;
  if (spins < 256 || !may_yield)
    cpu_relax();
  else
    std::this_thread::yield();
}

// Waiting for a core that is many timeslots short of `need`: re-read its
// watermark about once per timeslot it still has to run instead of in a
// tight loop (each read takes the line away from the core writing it, which
// would slow the very core being waited for).
inline Timeslot wait_until_far(const std::atomic<Timeslot>& value, Timeslot need, bool may_yield) {
  unsigned rounds = 0;
  for (;;) {
    const Timeslot v = value.load(std::memory_order_acquire);
    if (v >= need) return v;
    if (may_yield && ++rounds > 256) {
      std::this_thread::yield();
      continue;
    }
    for (Timeslot i = std::min<Timeslot>(need - v, 64) * 4; i > 0; --i) cpu_relax();  // ~40 ns each
  }
}

// How often a core looks again for a promise when it could not make a long
// one (its cross-core ports are busy): often enough to catch quiet spells,
// rarely enough to cost < 1 % of a timeslot.
constexpr Timeslot kPromiseRecheck = 16;

uint32_t next_pow2(uint32_t x) {
  uint32_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

}  // namespace

struct Engine::Node {
  virtual ~Node() = default;
  virtual void step(Timeslot now) = 0;
  bool boundary = false;  // has a link to or from a node on another core
};

struct Engine::Core {
  alignas(64) std::atomic<Timeslot> next{0};  // first timeslot its boundary nodes have not run
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
  Timeslot promised_min = 0;  // smallest promise published to a downstream core
  CoreSyncStats sync;
  bool may_yield = true;  // shares a CPU with other engine cores (see back_off)
  explicit Core(bool packet_log) : log(packet_log) {}

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
      back_off(spins, may_yield);
    }
  }

  // After timeslot t: extend the promises to downstream cores, if the plan
  // allows more than the watermark already says.
  void refresh_promises(Timeslot t) {
    plan.promises(t, promise_scratch);
    Timeslot soonest = kNoRemoteTraffic;
    for (const auto& n : downstream) {
      const uint32_t d = n.core->id;
      const Timeslot p = promise_scratch[d];
      Timeslot published = promise_to[d].before.load(std::memory_order_relaxed);
      if (p > published && p > t + 1 + n.latency) {
        promise_to[d].before.store(p, std::memory_order_release);
        ++sync.promises_published;
        published = p;
      }
      soonest = std::min(soonest, published);
    }
    promised_min = soonest;
    // Far-reaching promises are renewed shortly before they run out.
    next_promise_check = soonest > t + 3 * kPromiseRecheck ? soonest - 2 * kPromiseRecheck : t + kPromiseRecheck;
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

  void step(Timeslot now) override {
    Packet* arrived;
    if (const uint32_t n = down.arriving(now, &arrived)) sink->deliver(arrived, n, now);
    const uint32_t m = source->emit(now, up.send_buffer(now), sent_local.data());
    assert(sends_one_per_endpoint(m));
    up.commit(now, m);
    if (promising) promise.update(now, source->remote_quiet_until(now));
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

  void step(Timeslot now) override {
    // Arrivals: the rack's endpoints (lower ports), then other routers.
    Packet* arrived;
    if (rack)
      if (const uint32_t n = rack->up.arriving(now, &arrived)) router->input(arrived, n, now);
    if (!in.empty()) {
      // Only now wait for other cores: the rack's arrivals above overlapped the hand-off.
      if (boundary) core->wait_upstream(now);
      uint32_t n = 0;
      for (Link* l : in)
        if (l->take(now, batch[n])) ++n;
      if (n) router->input(batch.data(), n, now);
    }

    // Departures go straight into the rack's access-link slot; the few bound
    // for other routers are moved onto their links and squeezed out.
    Packet* out_pkts = rack ? rack->down.send_buffer(now) : sent.data();
    const uint32_t m = router->output(now, out_pkts, sent_ports.data());
    const uint32_t to_rack = rack_first ? dispatch_tail(now, out_pkts, m) : dispatch(now, out_pkts, m);
    if (rack) rack->down.commit(now, to_rack);

    if (sample_every && now % sample_every == 0) sample(now);
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
      else if (!out[p]->put(now, pkts[m]))
        lose(now, pkts[m], p, Reason::kLinkCollision);
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
        if (!out[p]->put(now, pkts[i])) lose(now, pkts[i], p, Reason::kLinkCollision);
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

Engine::Engine(Topology topology, std::vector<std::unique_ptr<Router>> routers, Traffic& traffic,
               EngineOptions options)
    : topology_(std::move(topology)), routers_(std::move(routers)), options_(std::move(options)) {
  if (routers_.size() != topology_.routers.size())
    throw ConfigError("engine: " + std::to_string(routers_.size()) + " routers given for a topology of " +
                      std::to_string(topology_.routers.size()));
  if (options_.cores < 1 || options_.cores > 256) throw ConfigError("engine: cores must be in [1, 256]");
  build(traffic);
}

Engine::~Engine() = default;

void Engine::build(Traffic& traffic) {
  const uint32_t nr = static_cast<uint32_t>(topology_.routers.size());

  // Core assignment: explicit, or ToRs (with their racks) round-robin, then the rest.
  router_core_ = options_.router_core;
  if (router_core_.empty()) {
    router_core_.assign(nr, 0);
    uint32_t next = 0;
    for (int pass = 0; pass < 2; ++pass)
      for (uint32_t r = 0; r < nr; ++r) {
        const bool has_endpoints = !topology_.endpoints_of(r).empty();
        if (has_endpoints == (pass == 0)) router_core_[r] = next++ % options_.cores;
      }
  }
  if (router_core_.size() != nr) throw ConfigError("engine: router_core must name a core for every router");
  for (uint32_t c : router_core_)
    if (c >= options_.cores) throw ConfigError("engine: router assigned to core " + std::to_string(c) + " of " +
                                               std::to_string(options_.cores));

  uint32_t max_latency = topology_.endpoint_latency_timeslots;
  for (const auto& l : topology_.router_links) max_latency = std::max(max_latency, l.latency_timeslots);
  window_ = next_pow2(max_latency + options_.max_lead_timeslots + 2);

  for (uint32_t c = 0; c < options_.cores; ++c) {
    cores_.push_back(std::make_unique<Core>(options_.packet_log));
    cores_.back()->id = c;
    cores_.back()->log.set_drop_handling(traffic.drop_sink(c), traffic.record_drops() || options_.packet_log);
  }

  // Same-core links only need latency + 1 slots (smaller, cache-hot wheels);
  // cross-core links need room for the allowed lead.
  auto new_link = [&](uint32_t latency, uint32_t from_core, uint32_t to_core) {
    links_.push_back(std::make_unique<Link>());
    links_.back()->init(latency, from_core == to_core ? next_pow2(latency + 1) : window_);
    return links_.back().get();
  };

  std::vector<RouterNode*>& rnodes = router_nodes_;
  rnodes.assign(nr, nullptr);
  for (uint32_t r = 0; r < nr; ++r) {
    const auto& spec = topology_.routers[r];
    auto node = std::make_unique<RouterNode>();
    node->router = routers_[r].get();
    node->id = r;
    node->core = cores_[router_core_[r]].get();
    node->sample_every = options_.occupancy_interval;
    node->keep_samples = options_.occupancy_samples;
    node->occupancy.ports = spec.num_ports;
    node->occupancy.packet_bytes = options_.mtu_bytes;
    node->byte_row.assign(spec.num_ports, 0);
    node->occupancy.histogram.assign(options_.occupancy_interval ? spec.num_ports : 0, std::vector<uint64_t>(64, 0));
    node->trusted = routers_[r]->one_packet_per_port();
    node->out.assign(spec.num_ports, nullptr);
    node->kind.assign(spec.num_ports, PortKind::kNone);
    node->endpoint_at.assign(spec.num_ports, EndpointId{0});
    node->used.assign((spec.num_ports + 63) / 64, 0);
    node->batch.resize(spec.num_ports);
    node->sent.resize(spec.num_ports);
    node->sent_ports.resize(spec.num_ports);
    RouterEnv env;
    env.router_id = r;
    env.num_ports = spec.num_ports;
    env.mtu_bytes = options_.mtu_bytes;
    env.time = TimeBase{options_.timeslot_ns, static_cast<double>(options_.mtu_bytes)};
    env.routes = &spec.routes;
    env.sink = &node->core->log;
    env.seed = options_.seed;
    routers_[r]->bind(env);
    node->has_stats = !routers_[r]->stat_descs().empty();
    rnodes[r] = node.get();
    node->core->nodes.push_back(std::move(node));
  }

  // Cross-core constraints, strongest per neighbour pair.
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> min_latency_into;  // (from, to) -> min latency
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> max_latency_into;
  auto note_link = [&](uint32_t from_core, uint32_t to_core, uint32_t latency) {
    if (from_core == to_core) return;
    auto key = std::make_pair(from_core, to_core);
    auto it = min_latency_into.find(key);
    if (it == min_latency_into.end() || latency < it->second) min_latency_into[key] = latency;
    max_latency_into[key] = std::max(max_latency_into[key], latency);
  };

  // Router-to-router links; each router reads its in-links in port order.
  std::vector<std::vector<std::pair<PortId, Link*>>> in_links(nr);
  std::vector<DirectedLink> directed;
  for (const auto& rl : topology_.router_links) {
    const uint32_t ca = router_core_[rl.a.router], cb = router_core_[rl.b.router];
    Link* ab = new_link(rl.latency_timeslots, ca, cb);
    Link* ba = new_link(rl.latency_timeslots, cb, ca);
    for (auto [from, to, link] : {std::tuple{rl.a, rl.b, ab}, std::tuple{rl.b, rl.a, ba}}) {
      rnodes[from.router]->out.at(from.port) = link;
      rnodes[from.router]->kind.at(from.port) = PortKind::kRouter;
      in_links[to.router].emplace_back(to.port, link);
      directed.push_back(DirectedLink{from, to, link});
    }
    note_link(ca, cb, rl.latency_timeslots);
    note_link(cb, ca, rl.latency_timeslots);
    if (ca != cb) rnodes[rl.a.router]->boundary = rnodes[rl.b.router]->boundary = true;
  }
  for (uint32_t r = 0; r < nr; ++r) {
    std::sort(in_links[r].begin(), in_links[r].end());
    for (const auto& [port, link] : in_links[r]) rnodes[r]->in.push_back(link);
  }

  // One endpoint group per router with endpoints, on that router's core,
  // joined to it by one AccessLinks wheel in each direction.
  for (uint32_t r = 0; r < nr; ++r) {
    const std::vector<EndpointId> group = topology_.endpoints_of(r);
    if (group.empty()) continue;
    Core* core = cores_[router_core_[r]].get();
    auto node = std::make_unique<EndpointGroupNode>();
    PortId last_port = 0;
    for (size_t i = 0; i < group.size(); ++i) {
      const PortId port = topology_.endpoint_port[group[i]].port;
      if (i && port <= last_port)  // the source's endpoint order must be the router's port order
        throw ConfigError("engine: router " + std::to_string(r) + ": endpoints must sit on increasing ports");
      if (rnodes[r]->kind.at(port) != PortKind::kNone)
        throw ConfigError("engine: router " + std::to_string(r) + " port " + std::to_string(port) +
                          " is connected twice");
      rnodes[r]->kind[port] = PortKind::kEndpoint;
      rnodes[r]->endpoint_at[port] = group[i];
      last_port = port;
    }
    for (const auto& [port, link] : in_links[r])
      if (port < last_port)
        throw ConfigError("engine: router " + std::to_string(r) + ": endpoint ports must come before router ports");
    node->up.init(topology_.endpoint_latency_timeslots, static_cast<uint32_t>(group.size()));
    node->down.init(topology_.endpoint_latency_timeslots, topology_.routers[r].num_ports);
    node->sent_local.resize(group.size());
    node->source = traffic.make_source(group);
    node->sink = traffic.make_sink(group, &core->log);
    rnodes[r]->rack = node.get();
    RouterNode& rn = *rnodes[r];
    rn.rack_end = static_cast<PortId>(last_port + 1);
    rn.rack_first = rn.trusted && std::all_of(rn.kind.begin(), rn.kind.begin() + rn.rack_end,
                                              [](PortKind k) { return k == PortKind::kEndpoint; });
    core->nodes.push_back(std::move(node));
  }

  for (auto& core : cores_) {
    auto is_boundary = [](const std::unique_ptr<Node>& n) { return n->boundary; };
    std::stable_partition(core->nodes.begin(), core->nodes.end(), is_boundary);
    core->boundary_nodes = static_cast<size_t>(std::count_if(core->nodes.begin(), core->nodes.end(), is_boundary));
  }

  for (auto& core : cores_) core->promise_to = std::make_unique<Core::Promise[]>(options_.cores);
  for (const auto& [key, latency] : min_latency_into) {
    Core::Neighbour n{cores_[key.first].get(), latency};
    n.promise = &cores_[key.first]->promise_to[key.second].before;
    cores_[key.second]->upstream.push_back(n);
  }
  for (const auto& [key, latency] : max_latency_into)
    cores_[key.first]->downstream.push_back(Core::Neighbour{cores_[key.second].get(), latency});

  // Lookahead: each core that feeds another gets a plan, and its racks keep
  // their sources' promises current.
  if (options_.lookahead) {
    std::vector<const Router*> rs(nr);
    std::vector<const RackPromise*> racks(nr, nullptr);
    for (uint32_t r = 0; r < nr; ++r) {
      rs[r] = routers_[r].get();
      if (EndpointGroupNode* g = rnodes[r]->rack) {
        g->promise.latency = topology_.endpoint_latency_timeslots;
        racks[r] = &g->promise;
      }
    }
    std::vector<CoreProgress> progress(options_.cores);
    for (uint32_t c = 0; c < options_.cores; ++c) {
      progress[c].next = &cores_[c]->next;
      for (uint32_t d = 0; d < options_.cores; ++d) progress[c].promise_to.push_back(&cores_[c]->promise_to[d].before);
    }
    std::vector<LookaheadPlan> plans = LookaheadPlan::build(topology_, router_core_, rs, directed, racks, progress);
    for (auto& core : cores_) {
      if (core->downstream.empty()) continue;
      core->plan = std::move(plans[core->id]);
      core->promising = true;
      core->promise_scratch.assign(options_.cores, 0);
      for (uint32_t r = 0; r < nr; ++r)
        if (router_core_[r] == core->id && rnodes[r]->rack) rnodes[r]->rack->promising = true;
    }
  }
}

namespace {
int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void Engine::run_core(Core& core, Timeslot begin) {
  const bool real_time = options_.clock == Clock::kRealTime;
  const bool timed = options_.time_timeslots;
  const bool has_neighbours = !core.upstream.empty() || !core.downstream.empty();  // they read `next`
  if (timed) core.timer.start();
  for (Timeslot t = begin; t < end_.load(std::memory_order_relaxed); ++t) {
    if (real_time) {
      const int64_t deadline = start_ns_ + static_cast<int64_t>((t - start_slot_) * options_.timeslot_ns);
      int64_t now = wall_ns();
      const int64_t early = deadline - static_cast<int64_t>(options_.max_lead_ns) - now;
      if (early > 0) {
        if (options_.sleep_when_ahead && early > options_.sleep_threshold_ns)
          std::this_thread::sleep_for(std::chrono::nanoseconds(early - static_cast<int64_t>(options_.sleep_threshold_ns / 2)));
        while (wall_ns() < deadline - static_cast<int64_t>(options_.max_lead_ns)) cpu_relax();
      } else {
        const int64_t lag = now - deadline;
        if (lag > options_.timeslot_ns) core.late.store(core.late.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        if (lag > core.max_lag_ns.load(std::memory_order_relaxed)) core.max_lag_ns.store(lag, std::memory_order_relaxed);
      }
    }
    // A core that runs into the window of a slower downstream core waits
    // until it has half a window of room (reading the slower core's
    // watermark once per half window, not every timeslot), but never for
    // more than the slowest core can do without us (no deadlock).
    for (auto& n : core.downstream)
      if (t + n.latency + 1 > window_ && n.seen < t + n.latency + 1 - window_)
        n.seen = wait_until_far(n.core->next, t + n.latency + 1 - window_ + std::min(window_ / 2, window_ - n.latency - 1),
                                core.may_yield);
    // Other cores see this core only through its cross-core links, all of
    // which belong to the boundary nodes: publish as soon as those have run t,
    // and run the interior while the neighbours pick that up (the hand-off
    // between cores costs ~100-150 ns here; overlapped, not waited for).
    const size_t nb = core.boundary_nodes;
    for (size_t i = 0; i < nb; ++i) core.nodes[i]->step(t);
    core.next.store(t + 1, std::memory_order_release);
    // Hand the watermark over only while a neighbour may need it soon.
    if (has_neighbours && core.promised_min <= t + 2 * kPromiseRecheck) hand_off(&core.next);
    for (size_t i = nb; i < core.nodes.size(); ++i) core.nodes[i]->step(t);
    if (core.promising && t >= core.next_promise_check) core.refresh_promises(t);
    if (timed) core.timer.tick();
  }
  if (timed) core.timer.stop();
}

void Engine::request_stop() {
  // Cores are at most one window apart: stopping one window past the fastest
  // core is a timeslot every core can still reach.
  Timeslot fastest = 0;
  for (auto& c : cores_) fastest = std::max(fastest, c->next.load(std::memory_order_acquire));
  const Timeslot stop = fastest + window_ + 1;
  Timeslot cur = end_.load();
  while (stop < cur && !end_.compare_exchange_weak(cur, stop)) {
  }
}

std::vector<CoreHealth> Engine::health() const {
  std::vector<CoreHealth> out;
  for (const auto& c : cores_) {
    CoreHealth h;
    h.timeslots = c->next.load(std::memory_order_acquire);
    h.late_timeslots = c->late.load(std::memory_order_relaxed);
    h.max_lag_ns = static_cast<double>(c->max_lag_ns.load(std::memory_order_relaxed));
    out.push_back(h);
  }
  return out;
}

void Engine::run(Timeslot end, const std::function<void(const EngineProgress&)>& progress, double period_s,
                 CoreLauncher* launcher) {
  if (end <= now_) return;
  const Timeslot begin = now_;
  end_.store(end);
  if (options_.occupancy_interval && options_.occupancy_samples && options_.clock == Clock::kVirtual) {
    // Room for every sample of this run up front (no regrowth copies), within reason.
    const uint64_t rows = (end - 1) / options_.occupancy_interval - begin / options_.occupancy_interval + 1;
    for (RouterNode* n : router_nodes_) {
      OccupancyTrace& o = n->occupancy;
      const uint64_t want = std::min<uint64_t>(o.times.size() + rows, (uint64_t{1} << 26) / std::max<uint16_t>(o.ports, 1));
      o.times.reserve(want);
      o.packets.reserve(want * o.ports);
    }
  }
  start_slot_ = begin;
  start_ns_ = wall_ns() + 1000000;  // real time: 1 ms for the cores to start
  ThreadLauncher threads;
  if (!launcher) launcher = &threads;
  std::vector<std::function<void()>> jobs;
  for (auto& c : cores_) {
    if (c->nodes.empty()) {
      c->next.store(~Timeslot{0} >> 1, std::memory_order_release);  // never waited on: no links
      continue;
    }
    Core* core = c.get();
    jobs.push_back([this, core, begin] { run_core(*core, begin); });
  }
  const bool cpu_each = launcher->cpu_per_job(jobs.size());
  for (auto& c : cores_) c->may_yield = !cpu_each;
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  auto slowest = [&] {
    Timeslot m = end_.load();
    for (auto& c : cores_) m = std::min(m, c->next.load(std::memory_order_acquire));
    return m;
  };
  const bool real_time = options_.clock == Clock::kRealTime;
  std::function<void()> monitor;
  if (progress) {
    monitor = [&] {
      double last = 0;
      for (;;) {
        const Timeslot done = slowest();
        if (done >= end_.load()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (elapsed() - last >= period_s) {
          last = elapsed();
          progress(EngineProgress{slowest() - begin, end_.load() - begin, last,
                                  real_time ? health() : std::vector<CoreHealth>{}});
        }
      }
    };
  }
  launcher->run(std::move(jobs), monitor);
  wall_seconds_ += elapsed();
  now_ = end_.load();
  for (auto& c : cores_)  // idle cores were parked far ahead; bring them back in line
    if (c->nodes.empty()) c->next.store(now_, std::memory_order_release);
  if (progress)
    progress(EngineProgress{now_ - begin, now_ - begin, elapsed(), real_time ? health() : std::vector<CoreHealth>{}});
}

uint64_t Engine::router_packet_hops() const {
  uint64_t sum = 0;
  for (const auto& r : routers_) {
    const QueueBank& b = r->bank();
    for (PortId p = 0; p < b.num_ports(); ++p)
      for (QueueId q = 0; q < b.queues_per_port(); ++q) sum += b.dequeued(p, q);
  }
  return sum;
}

uint64_t Engine::link_collisions() const {
  uint64_t sum = 0;
  for (const RouterNode* n : router_nodes_) sum += n->link_losses.total();
  return sum;
}

const RouterLosses& Engine::link_losses(uint32_t router) const { return router_nodes_.at(router)->link_losses; }

std::vector<SchemeStatSample> Engine::scheme_stats() const {
  std::vector<SchemeStatSample> all;
  for (const auto& c : cores_) all.insert(all.end(), c->scheme_stats.begin(), c->scheme_stats.end());
  std::sort(all.begin(), all.end(), [](const SchemeStatSample& a, const SchemeStatSample& b) {
    return std::tie(a.time, a.router, a.port, a.stat, a.queue) < std::tie(b.time, b.router, b.port, b.stat, b.queue);
  });
  return all;
}

std::vector<TimeslotTiming> Engine::timeslot_timing() const {
  std::vector<TimeslotTiming> out;
  for (const auto& c : cores_) out.push_back(c->timer.timing());
  return out;
}

std::vector<CoreSyncStats> Engine::sync_stats() const {
  std::vector<CoreSyncStats> out;
  for (const auto& c : cores_) out.push_back(c->sync);
  return out;
}

std::vector<PacketEvent> Engine::events() const {
  std::vector<PacketEvent> all;
  for (const auto& c : cores_) all.insert(all.end(), c->log.events().begin(), c->log.events().end());
  sort_events(all);
  return all;
}

std::vector<OccupancySample> Engine::occupancy() const {
  std::vector<OccupancySample> all;
  for (const RouterNode* n : router_nodes_) {
    const OccupancyTrace& o = n->occupancy;
    for (size_t i = 0; i < o.times.size(); ++i)
      for (PortId p = 0; p < o.ports; ++p)
        all.push_back(OccupancySample{o.times[i], n->id, p, o.packets[i * o.ports + p], o.bytes_at(i * o.ports + p)});
  }
  std::sort(all.begin(), all.end(), [](const OccupancySample& a, const OccupancySample& b) {
    return std::tie(a.time, a.router, a.port) < std::tie(b.time, b.router, b.port);
  });
  return all;
}

const OccupancyTrace& Engine::occupancy_trace(uint32_t i) const { return router_nodes_.at(i)->occupancy; }

}  // namespace flexplane
