// Engine set-up: nodes from the topology, links between them, cores and
// their lookahead (docs/design.md, "Engine").
#include <algorithm>
#include <cassert>
#include <map>
#include <stdexcept>

#include <sys/mman.h>

#include "api/params.h"
#include "emulator/engine/engine.h"
#include "emulator/engine/engine_nodes.h"
#include "emulator/engine/lookahead.h"

namespace flexplane {

namespace {
uint32_t next_pow2(uint32_t x) {
  uint32_t p = 1;
  while (p < x) p <<= 1;
  return p;
}
}  // namespace

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

Engine::WheelArena::WheelArena(size_t bytes) : bytes_(bytes) {
  if (!bytes_) return;
  data_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (data_ == MAP_FAILED) {
    data_ = nullptr;
    throw std::runtime_error("engine: no memory for " + std::to_string(bytes_ >> 20) + " MiB of link wheels");
  }
}
Engine::WheelArena::~WheelArena() {
  if (data_) munmap(data_, bytes_);
}

std::vector<uint32_t> place_routers(const Topology& topology, uint32_t cores, RouterPlacement placement) {
  const uint32_t nr = static_cast<uint32_t>(topology.routers.size());
  std::vector<uint32_t> core_of(nr, 0);
  int32_t groups = 0;
  if (placement == RouterPlacement::kGrouped && topology.router_group.size() == nr)
    for (int32_t g : topology.router_group) groups = std::max(groups, g + 1);
  uint32_t next = 0;
  if (groups > 0) {
    std::vector<uint32_t> load(cores, 0);
    for (uint32_t r = 0; r < nr; ++r) {
      const int32_t g = topology.router_group[r];
      if (g >= 0) ++load[core_of[r] = static_cast<uint32_t>(uint64_t(g) * cores / uint32_t(groups))];
    }
    for (uint32_t r = 0; r < nr; ++r)  // each ungrouped router to the core with fewest routers (lowest id on ties)
      if (topology.router_group[r] < 0)
        ++load[core_of[r] = static_cast<uint32_t>(std::min_element(load.begin(), load.end()) - load.begin())];
    return core_of;
  }
  // ToRs (with their racks) round-robin, then the rest.
  for (int pass = 0; pass < 2; ++pass)
    for (uint32_t r = 0; r < nr; ++r) {
      const bool has_endpoints = !topology.endpoints_of(r).empty();
      if (has_endpoints == (pass == 0)) core_of[r] = next++ % cores;
    }
  return core_of;
}

void Engine::build(Traffic& traffic) {
  const uint32_t nr = static_cast<uint32_t>(topology_.routers.size());
  traffic_ = &traffic;
  if (Partition* part = options_.partition) {
    if (part->ranks() * part->cores_per_rank() != options_.cores)
      throw ConfigError("engine: " + std::to_string(options_.cores) + " cores for " + std::to_string(part->ranks()) +
                        " ranks of " + std::to_string(part->cores_per_rank()));
    if (options_.clock != Clock::kVirtual) throw ConfigError("engine: runs across processes are virtual time only");
  }

  router_core_ = options_.router_core;
  if (router_core_.empty()) router_core_ = place_routers(topology_, options_.cores, options_.placement);
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
  // cross-core links need room for the allowed lead. Across processes, a
  // link between two other processes' cores is never touched here: the
  // smallest wheel.
  // The cross-core wheels lie in one zero-filled mapping (WheelArena): a
  // page is backed by memory only once a packet is written there, so a
  // link that carries nothing costs nothing (a k = 64 run on 2 cores has
  // 131,072 wheels of 6 KB).
  const Partition* part = options_.partition;
  auto big_wheel = [&](uint32_t from_core, uint32_t to_core) {
    const bool touched_here = !part || part->runs_core(from_core) || part->runs_core(to_core);
    return from_core != to_core && touched_here;
  };
  // The same-core wheels (latency + 1 slots, each padded to whole cache
  // lines) lie in the same mapping, after the cross-core ones: a k = 64 fat
  // tree on one core has 262,144 of them, which a sparse run mostly never
  // writes.
  auto untouched = [&](uint32_t from_core, uint32_t to_core) {
    return part && !part->runs_core(from_core) && !part->runs_core(to_core);
  };
  auto whole_lines = [](size_t bytes) { return (bytes + kCacheLine - 1) / kCacheLine * kCacheLine; };
  auto small_wheel_bytes = [&](uint32_t latency) { return whole_lines(next_pow2(latency + 1) * sizeof(Link::Slot)); };
  size_t big = 0, small_bytes = 0;
  for (const auto& rl : topology_.router_links) {
    const uint32_t ca = router_core_[rl.a.router], cb = router_core_[rl.b.router];
    big += big_wheel(ca, cb) + big_wheel(cb, ca);
    for (auto [f, t] : {std::pair{ca, cb}, std::pair{cb, ca}})
      if (!big_wheel(f, t) && !untouched(f, t)) small_bytes += small_wheel_bytes(rl.latency_timeslots);
  }
  const size_t big_bytes = whole_lines(big * window_ * sizeof(Link::Slot));
  wheels_ = std::make_unique<WheelArena>(big_bytes + small_bytes);
  Link::Slot* next_wheel = static_cast<Link::Slot*>(wheels_->data());
  char* next_small = static_cast<char*>(wheels_->data()) + big_bytes;
  auto new_link = [&](uint32_t latency, uint32_t from_core, uint32_t to_core) {
    links_.push_back(std::make_unique<Link>());
    if (big_wheel(from_core, to_core)) {
      links_.back()->init(latency, window_, next_wheel);
      next_wheel += window_;
    } else if (untouched(from_core, to_core)) {
      links_.back()->init_untouched(latency);  // between routers other processes run: no wheel here
    } else {
      links_.back()->init(latency, next_pow2(latency + 1), reinterpret_cast<Link::Slot*>(next_small));
      next_small += small_wheel_bytes(latency);
    }
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
    // Across processes, a router another process runs is only a place in
    // the graph here: not bound (no queue bank, no scheme state), and none
    // of the per-port scratch a step needs. Its results arrive after the
    // run (unpack_results).
    const bool here = runs_router(r);
    const uint16_t ports = here ? spec.num_ports : 0;
    node->byte_row.assign(ports, 0);
    node->occupancy.histogram.assign(options_.occupancy_interval ? ports : 0, std::vector<uint64_t>(64, 0));
    node->trusted = routers_[r]->one_packet_per_port();
    node->out.assign(spec.num_ports, nullptr);
    node->kind.assign(spec.num_ports, PortKind::kNone);
    node->endpoint_at.assign(spec.num_ports, EndpointId{0});
    node->used.assign((ports + 63) / 64, 0);
    node->batch.resize(ports);
    node->sent.resize(ports);
    node->sent_ports.resize(ports);
    RouterEnv env;
    env.router_id = r;
    env.num_ports = spec.num_ports;
    env.mtu_bytes = options_.mtu_bytes;
    env.time = TimeBase{options_.timeslot_ns, static_cast<double>(options_.mtu_bytes)};
    env.routes = &spec.routes;
    env.sink = &node->core->log;
    env.seed = options_.seed;
    if (here) routers_[r]->bind(env);
    node->has_stats = here && !routers_[r]->stat_descs().empty();
    node->pauses = routers_[r]->pauses();
    node->ingress.resize(ports);
    node->frames.resize(ports);
    node->rack_local.assign(spec.num_ports, 0);
    node->endpoint_port = &topology_.endpoint_port;
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
      if (rnodes[from.router]->pauses) {  // its pause frames travel on the link's control lane
        link->enable_ctrl();
        rnodes[to.router]->reads_ctrl = true;
      }
      in_links[to.router].emplace_back(to.port, link);
      directed.push_back(DirectedLink{from, to, link});
    }
    if (ca != cb) {
      cross_links_.push_back(PartitionView::CrossLink{ca, cb, ab});
      cross_links_.push_back(PartitionView::CrossLink{cb, ca, ba});
    }
    note_link(ca, cb, rl.latency_timeslots);
    note_link(cb, ca, rl.latency_timeslots);
    if (ca != cb) rnodes[rl.a.router]->boundary = rnodes[rl.b.router]->boundary = true;
  }
  for (uint32_t r = 0; r < nr; ++r) {
    std::sort(in_links[r].begin(), in_links[r].end());
    for (const auto& [port, link] : in_links[r]) {
      rnodes[r]->in.push_back(link);
      rnodes[r]->in_port.push_back(port);
    }
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
      rnodes[r]->rack_local[port] = static_cast<uint32_t>(i);
      last_port = port;
    }
    for (const auto& [port, link] : in_links[r])
      if (port < last_port)
        throw ConfigError("engine: router " + std::to_string(r) + ": endpoint ports must come before router ports");
    node->up.init(topology_.endpoint_latency_timeslots, static_cast<uint32_t>(group.size()));
    node->down.init(topology_.endpoint_latency_timeslots, topology_.routers[r].num_ports);
    node->sent_local.resize(group.size());
    // The router runs before its group in every timeslot (routers are added to
    // a core before groups, and a group is never a boundary node): the group
    // may read the router's state as of the end of the router's step.
    traffic.set_group_router(group, *routers_[r]);
    traffic.set_group_clock(group, &core->finished);
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
    for (size_t i = 0; i < core->nodes.size(); ++i) core->nodes[i]->index = static_cast<uint32_t>(i);
  }
  build_activity(in_links);

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
    // Only a core that feeds another needs a plan; with none (one core) the
    // routing analysis is skipped: it holds a destination bitset per router
    // port and per link, ~5 GB at k = 64.
    bool feeds = false;
    for (const auto& core : cores_) feeds |= !core->downstream.empty();
    std::vector<LookaheadPlan> plans;
    std::vector<bool> wanted(options_.cores, true);  // across processes: plans for this process's cores only
    if (part)
      for (uint32_t c = 0; c < options_.cores; ++c) wanted[c] = part->runs_core(c);
    if (feeds) plans = LookaheadPlan::build(topology_, router_core_, rs, directed, racks, progress, wanted);
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

// Who wakes whom (EngineOptions::skip_idle; design.md, "Cost in proportion
// to activity"): each core's wake wheel, each router's arrival masks, and
// for every port whose link stays on its core, the router it leads to.
void Engine::build_activity(const std::vector<std::vector<std::pair<PortId, Link*>>>& in_links) {
  const bool skip = options_.skip_idle;
  const uint32_t nr = static_cast<uint32_t>(router_nodes_.size());
  uint32_t max_local = topology_.endpoint_latency_timeslots;
  for (const auto& l : topology_.router_links)
    if (router_core_[l.a.router] == router_core_[l.b.router]) max_local = std::max(max_local, l.latency_timeslots);
  for (auto& core : cores_) {
    core->wake_words = static_cast<uint32_t>((core->nodes.size() + 63) / 64);
    core->wake_mask = next_pow2(max_local + 2) - 1;
    core->wake_bits.assign((core->wake_mask + 1) * core->wake_words, 0);
    for (auto& n : core->nodes)
      if (auto* g = dynamic_cast<EndpointGroupNode*>(n.get())) {
        g->core = core.get();
        g->skip_idle = skip;
      } else {
        core->routers.push_back(static_cast<RouterNode*>(n.get()));
      }
  }
  for (uint32_t r = 0; r < nr; ++r) {
    RouterNode& n = *router_nodes_[r];
    n.skip_idle = skip;
    n.bank = &n.router->bank();
    n.idles = skip && n.router->idles_when_empty();
    uint32_t max_in = 1;
    for (const auto& [port, link] : in_links[r]) max_in = std::max(max_in, link->latency() + 1);
    n.remote_in = 0;
    n.arrive.assign(next_pow2(max_in), 0);
    n.arrive_mask = n.arrive.size() - 1;
    n.always = !n.idles;
    if (n.rack) {
      n.rack_index = n.rack->index;
      n.rack->tor_index = n.index;
    }
  }
  for (RouterNode* n : router_nodes_) {
    if (!runs_router(n->id)) continue;  // another process runs it: never stepped here
    n->target.assign(n->out.size(), RouterNode::Target{});
    for (size_t p = 0; p < n->out.size(); ++p)
      if (n->out[p]) n->target[p].link = n->out[p]->view();
    n->in_view.clear();
    for (Link* l : n->in) n->in_view.push_back(l->view());
  }
  for (const auto& rl : topology_.router_links)
    for (auto [from, to] : {std::pair{rl.a, rl.b}, std::pair{rl.b, rl.a}}) {
      if (!skip) continue;
      RouterNode& s = *router_nodes_[from.router];
      RouterNode& d = *router_nodes_[to.router];
      const auto& ins = in_links[to.router];  // sorted by port
      const size_t i = static_cast<size_t>(
          std::lower_bound(ins.begin(), ins.end(), to.port, [](const auto& e, PortId p) { return e.first < p; }) -
          ins.begin());
      const uint64_t bit = uint64_t{1} << std::min<size_t>(i, 63);
      if (router_core_[from.router] != router_core_[to.router]) {
        d.remote_in |= bit;  // read every timeslot: its sender cannot wake us
        d.always = true;
      } else if (runs_router(from.router)) {  // (a router another process runs has no targets here)
        RouterNode::Target& g = s.target[from.port];
        g.arrive = d.arrive.data();
        g.arrive_mask = d.arrive_mask;
        g.bit = bit;
        g.node = d.index;
      }
    }
}

}  // namespace flexplane
