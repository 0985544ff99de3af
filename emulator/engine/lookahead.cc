#include "emulator/engine/lookahead.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "api/router.h"

namespace flexplane {

// A set of destinations (endpoint ids) as sorted, disjoint, non-adjacent
// half-open intervals [lo, hi): the sets routing produces are a few runs of
// consecutive ids (a rack, a pod, all but a rack), so a set costs a few
// words where a bitset cost 8 KB at k = 64, and every operation is a merge
// of two short lists. Canonical, so equal sets compare and hash equal.
struct LookaheadPlan::DestinationSet {
  struct Run {
    uint32_t lo, hi;
    bool operator==(const Run& o) const { return lo == o.lo && hi == o.hi; }
  };
  std::vector<Run> runs;
  explicit DestinationSet(uint32_t endpoints = 0, bool all = false) {
    if (all && endpoints) runs.push_back(Run{0, endpoints});
  }
  // Add [lo, hi); cheap when it starts at or after the last run (filling in order).
  void add_range(uint32_t lo, uint32_t hi) {
    if (lo >= hi) return;
    if (runs.empty() || lo > runs.back().hi) {
      runs.push_back(Run{lo, hi});
    } else if (lo >= runs.back().lo) {
      runs.back().hi = std::max(runs.back().hi, hi);
    } else {
      DestinationSet one;
      one.runs.push_back(Run{lo, hi});
      add_all(one);
    }
  }
  void add(EndpointId e) { add_range(e, uint32_t{e} + 1); }
  bool any() const { return !runs.empty(); }
  bool intersects(const DestinationSet& o) const {
    size_t i = 0, j = 0;
    while (i < runs.size() && j < o.runs.size()) {
      if (runs[i].hi <= o.runs[j].lo) {
        ++i;
      } else if (o.runs[j].hi <= runs[i].lo) {
        ++j;
      } else {
        return true;
      }
    }
    return false;
  }
  // this |= (a & b); returns whether it grew.
  bool add_common(const DestinationSet& a, const DestinationSet& b) {
    DestinationSet both;
    size_t i = 0, j = 0;
    while (i < a.runs.size() && j < b.runs.size()) {
      const uint32_t lo = std::max(a.runs[i].lo, b.runs[j].lo), hi = std::min(a.runs[i].hi, b.runs[j].hi);
      if (lo < hi) both.runs.push_back(Run{lo, hi});  // disjoint and in order; not adjacent (a's and b's are not)
      if (a.runs[i].hi < b.runs[j].hi) ++i; else ++j;
    }
    const uint64_t before = count();
    add_all(both);
    return count() != before;  // a union grows iff it covers more ids
  }
  uint64_t count() const {
    uint64_t n = 0;
    for (const Run& r : runs) n += r.hi - r.lo;
    return n;
  }
  void add_all(const DestinationSet& o) {
    if (o.runs.empty()) return;
    std::vector<Run> out;
    out.reserve(runs.size() + o.runs.size());
    size_t i = 0, j = 0;
    while (i < runs.size() || j < o.runs.size()) {
      const Run& r = j == o.runs.size() || (i < runs.size() && runs[i].lo <= o.runs[j].lo) ? runs[i++] : o.runs[j++];
      if (!out.empty() && r.lo <= out.back().hi)
        out.back().hi = std::max(out.back().hi, r.hi);
      else
        out.push_back(r);
    }
    runs = std::move(out);
  }
  bool operator==(const DestinationSet& o) const { return runs == o.runs; }
  uint64_t hash() const {
    return std::hash<std::string_view>{}(
        std::string_view(reinterpret_cast<const char*>(runs.data()), runs.size() * sizeof(Run)));
  }
};

// Sets are kept once each and named by id: a fat tree's ports and links
// carry a few distinct sets per router (a rack, a pod, all but a rack), not
// one each. (With 65,536-bit sets, one per port and per link was ~4.8 GB at
// k = 64; interned, with the fixed point's intermediate sets, 0.57 GB;
// docs/performance/mpi.md.)
struct LookaheadPlan::Routing {
  std::vector<DestinationSet> sets;                       // by id
  std::unordered_map<uint64_t, std::vector<uint32_t>> by_hash;
  uint32_t intern(const DestinationSet& s) {
    std::vector<uint32_t>& same = by_hash[s.hash()];
    for (uint32_t id : same)
      if (sets[id] == s) return id;
    same.push_back(static_cast<uint32_t>(sets.size()));
    sets.push_back(s);
    return same.back();
  }
  const DestinationSet& set(uint32_t id) const { return sets[id]; }
  std::vector<std::vector<uint32_t>> routed_to;  // [router][port]: destinations sent out of it
  std::vector<uint32_t> rack_members;            // [router]: its rack's endpoints
  std::vector<std::vector<uint32_t>> links_into; // [router]: links arriving at it
  std::vector<uint32_t> carries;                 // [link]: destinations it can carry
};

std::vector<LookaheadPlan> LookaheadPlan::build(const Topology& topology, const std::vector<uint32_t>& router_core,
                                                const std::vector<const Router*>& routers,
                                                const std::vector<DirectedLink>& links,
                                                const std::vector<const RackPromise*>& racks,
                                                const std::vector<CoreProgress>& cores,
                                                const std::vector<bool>& wanted) {
  const uint32_t nr = static_cast<uint32_t>(topology.routers.size());
  const uint32_t ne = topology.num_endpoints;
  const DestinationSet everything(ne, true), nothing(ne);
  Routing g;

  // Any destination, out of any port, for a router that does not forward by table.
  const uint32_t none_id = g.intern(nothing);
  g.routed_to.resize(nr);
  std::vector<DestinationSet> ports;  // one router's, then interned
  for (uint32_t r = 0; r < nr; ++r) {
    const RouterNodeSpec& spec = topology.routers[r];
    const bool by_table = routers[r]->forwards_by_table();
    ports.assign(spec.num_ports, by_table ? nothing : everything);
    if (by_table) {
      // Runs of destinations with the same entry, each added to its ports at once.
      const RoutingTable::Direct table = spec.routes.direct();
      auto add_run = [&](uint16_t entry, uint32_t lo, uint32_t hi) {
        if (entry == kNoRoute) return;
        const uint16_t one[1] = {entry};
        const RoutingTable::Ports to = RoutingTable::is_group(entry) ? spec.routes.group_ports(entry)
                                                                     : RoutingTable::Ports{one, one + 1};
        for (PortId p : to)
          if (p < spec.num_ports) ports[p].add_range(lo, hi);
      };
      uint32_t start = 0;
      uint16_t entry = ne ? table.lookup(0) : kNoRoute;
      for (uint32_t d = 1; d < ne; ++d) {  // not EndpointId: 65,536 endpoints at k = 64
        const uint16_t e = table.lookup(static_cast<EndpointId>(d));
        if (e == entry) continue;
        add_run(entry, start, d);
        entry = e;
        start = d;
      }
      if (ne) add_run(entry, start, ne);
    }
    for (const DestinationSet& s : ports) g.routed_to[r].push_back(g.intern(s));
  }
  {
    std::vector<DestinationSet> racks(nr, nothing);
    for (uint32_t e = 0; e < ne; ++e) racks[topology.endpoint_port[e].router].add(static_cast<EndpointId>(e));
    for (const DestinationSet& s : racks) g.rack_members.push_back(g.intern(s));
  }
  g.links_into.resize(nr);
  for (uint32_t k = 0; k < links.size(); ++k) g.links_into[links[k].to.router].push_back(k);

  // A rack may send to anyone; a router forwards what reaches it to the
  // ports its table names. Grow to a fixed point, a router at a time (what
  // reaches a router is the same for all its output links: computed once
  // per router and round, not once per link).
  g.carries.assign(links.size(), none_id);
  std::vector<std::vector<uint32_t>> links_out(nr);
  for (uint32_t k = 0; k < links.size(); ++k) links_out[links[k].from.router].push_back(k);
  DestinationSet reaching(ne), grown(ne);
  for (bool grew = true; grew;) {
    grew = false;
    for (uint32_t r = 0; r < nr; ++r) {
      if (links_out[r].empty()) continue;
      if (g.set(g.rack_members[r]).any()) {
        reaching = everything;
      } else {
        reaching = nothing;
        for (uint32_t j : g.links_into[r]) reaching.add_all(g.set(g.carries[j]));
      }
      for (uint32_t k : links_out[r]) {
        grown = g.set(g.carries[k]);
        if (!grown.add_common(reaching, g.set(g.routed_to[r][links[k].from.port]))) continue;
        g.carries[k] = g.intern(grown);  // (interning may move the sets: `grown` is a copy)
        grew = true;
      }
    }
  }

  std::vector<LookaheadPlan> plans;
  for (uint32_t core = 0; core < cores.size(); ++core)
    plans.push_back(wanted.empty() || wanted.at(core) ? plan_for(core, g, router_core, routers, links, racks, cores)
                                                      : LookaheadPlan{});
  return plans;
}

// One core's ports, and what feeds each.
LookaheadPlan LookaheadPlan::plan_for(uint32_t core, const Routing& g, const std::vector<uint32_t>& router_core,
                                      const std::vector<const Router*>& routers, const std::vector<DirectedLink>& links,
                                      const std::vector<const RackPromise*>& racks,
                                      const std::vector<CoreProgress>& cores) {
  LookaheadPlan plan;
  std::vector<int32_t> port_of_link(links.size(), -1);
  for (uint32_t k = 0; k < links.size(); ++k) {
    const uint32_t r = links[k].from.router;
    if (router_core[r] != core) continue;
    Port p;
    p.bank = routers[r]->forwards_by_table() ? &routers[r]->bank() : nullptr;
    p.port = links[k].from.port;
    p.link = links[k].link;
    p.to_core = router_core[links[k].to.router];
    port_of_link[k] = static_cast<int32_t>(plan.ports_.size());
    plan.ports_.push_back(std::move(p));
  }
  std::vector<int32_t> remote_of_link(links.size(), -1);
  for (uint32_t k = 0; k < links.size(); ++k) {
    const uint32_t from = router_core[links[k].from.router];
    if (from == core || router_core[links[k].to.router] != core) continue;
    remote_of_link[k] = static_cast<int32_t>(plan.remote_.size());
    plan.remote_.push_back(RemoteFeeder{links[k].link, cores[from].next, cores[from].promise_to[core]});
  }
  for (uint32_t k = 0; k < links.size(); ++k) {
    if (port_of_link[k] < 0) continue;
    Port& p = plan.ports_[static_cast<size_t>(port_of_link[k])];
    const uint32_t r = links[k].from.router;
    const DestinationSet& out = g.set(g.routed_to[r][p.port]);
    // A router that pauses (PFC) may send a pause frame on any port at any
    // time a packet arrives or leaves, whatever the port's queues: no promise.
    if (routers[r]->pauses()) p.no_promise = true;
    const DestinationSet& rack = g.set(g.rack_members[r]);
    if (rack.any() && out.any()) {
      p.rack = racks[r];
      // Destinations in the rack itself are not covered by the source's promise.
      if (!p.rack || out.intersects(rack)) p.no_promise = true;
    }
    for (uint32_t j : g.links_into[r]) {
      if (!g.set(g.carries[j]).intersects(out)) continue;
      if (port_of_link[j] < 0)
        p.remote_feeders.push_back(static_cast<uint32_t>(remote_of_link[j]));
      else
        p.feeders.push_back(static_cast<uint32_t>(port_of_link[j]));
    }
  }
  return prune(std::move(plan), core);
}

// Only ports on a link to another core, and the same-core ports that feed
// them (transitively), bear on a promise: drop the rest (in a fat tree split
// by pods, most of a core's ports), so promises() walks a fraction of them.
LookaheadPlan LookaheadPlan::prune(LookaheadPlan plan, uint32_t core) {
  const size_t n = plan.ports_.size();
  std::vector<char> keep(n, 0);
  std::vector<uint32_t> stack;
  for (uint32_t i = 0; i < n; ++i)
    if (plan.ports_[i].to_core != core) {
      keep[i] = 1;
      stack.push_back(i);
    }
  while (!stack.empty()) {
    const uint32_t i = stack.back();
    stack.pop_back();
    for (uint32_t f : plan.ports_[i].feeders)
      if (!keep[f]) {
        keep[f] = 1;
        stack.push_back(f);
      }
  }
  std::vector<uint32_t> index(n, 0);
  std::vector<Port> kept;
  for (uint32_t i = 0; i < n; ++i)
    if (keep[i]) {
      index[i] = static_cast<uint32_t>(kept.size());
      kept.push_back(std::move(plan.ports_[i]));
    }
  for (Port& p : kept)
    for (uint32_t& f : p.feeders) f = index[f];  // every feeder of a kept port is kept
  plan.ports_ = std::move(kept);
  return plan;
}

// How far a core looks into a link from another core for packets in flight
// (that core may be up to a window ahead); beyond it, nothing is promised.
constexpr Timeslot kRemoteScan = 16;

Timeslot LookaheadPlan::first_remote_arrival(const RemoteFeeder& f, Timeslot now) {
  // The promise first: the sender stored its watermark for the timeslot the
  // promise was made after before it stored the promise, so the watermark
  // read second is at least that far. Arrivals before watermark + latency
  // are written (and ordered before us by the acquire); those from there to
  // the promise are none.
  const Timeslot promised = f.promise->load(std::memory_order_acquire);
  const Timeslot written_before = f.next->load(std::memory_order_acquire) + f.link->latency();
  const Timeslot next = now + 1, scan_end = next + kRemoteScan;
  const Timeslot in_flight = f.link->first_arrival(next, std::min(written_before, scan_end), kNoRemoteTraffic);
  if (in_flight != kNoRemoteTraffic) return in_flight;
  if (written_before > scan_end) return scan_end;  // not looked at: no promise past it
  return std::max({next, written_before, promised});
}

void LookaheadPlan::promises(Timeslot now, std::vector<Timeslot>& by_core) {
  const Timeslot next = now + 1;
  // Where each port's earliest send comes from on its own ...
  for (Port& p : ports_) {
    if (!p.bank || p.no_promise || p.bank->port_packets(p.port)) {
      p.earliest_send = next;
      continue;
    }
    Timeslot e = p.rack ? p.rack->earliest_remote_arrival(now) : kNoRemoteTraffic;
    for (uint32_t f : p.feeders) {
      const Link& in = *ports_[f].link;
      e = std::min(e, in.first_arrival(next, next + in.latency(), kNoRemoteTraffic));
    }
    for (uint32_t f : p.remote_feeders) e = std::min(e, first_remote_arrival(remote_[f], now));
    p.earliest_send = e;
  }
  // ... then through same-core links (shortest paths; latencies are >= 1).
  for (bool changed = true; changed;) {
    changed = false;
    for (Port& p : ports_)
      for (uint32_t f : p.feeders) {
        const Timeslot via = ports_[f].earliest_send + ports_[f].link->latency();
        if (via < p.earliest_send) {
          p.earliest_send = via;
          changed = true;
        }
      }
  }
  std::fill(by_core.begin(), by_core.end(), kNoRemoteTraffic);
  for (const Port& p : ports_)
    by_core[p.to_core] = std::min(by_core[p.to_core], std::min(kNoRemoteTraffic, p.earliest_send + p.link->latency()));
}

}  // namespace flexplane
