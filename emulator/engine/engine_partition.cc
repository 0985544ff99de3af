// The engine's side of runs across processes (partition.h): what it shows a
// Partition, and its results folded together after the run.
#include <map>

#include "api/params.h"
#include "emulator/engine/engine.h"
#include "emulator/engine/engine_nodes.h"
#include "emulator/engine/serial.h"

namespace flexplane {

void Engine::attach_partition() {
  auto view = std::make_unique<PartitionView>();
  view->window = window_;
  for (auto& c : cores_) {
    PartitionView::Core v{};
    v.next = &c->next;
    v.finished = &c->finished;
    for (uint32_t d = 0; d < options_.cores; ++d) v.promise_to.push_back(&c->promise_to[d].before);
    for (int i = 0; i < 4; ++i)
      v.done_post[i] = PartitionView::DonePost{&c->done_post[i].tag, &c->done_post[i].busy,
                                               &c->done_post[i].in_transit};
    view->cores.push_back(std::move(v));
  }
  view->links = cross_links_;
  // Sends on links between ranks are logged per timeslot (Core::cross_sent).
  const Partition& part = *options_.partition;
  const auto rank_of = [&](uint32_t core) { return core / part.cores_per_rank(); };
  std::map<const Link*, uint32_t> cross_index;
  for (uint32_t i = 0; i < cross_links_.size(); ++i)
    if (rank_of(cross_links_[i].from_core) != rank_of(cross_links_[i].to_core)) cross_index[cross_links_[i].link] = i;
  for (RouterNode* n : router_nodes_)
    for (size_t p = 0; p < n->target.size(); ++p) {  // (none for a router another process runs)
      const auto it = cross_index.find(n->out[p]);
      if (it == cross_index.end()) continue;
      n->target[p].cross = it->second;
      n->core->cross_sent.resize(window_);
    }
  for (uint32_t c = 0; c < options_.cores; ++c) view->cores[c].cross_sent = &cores_[c]->cross_sent;
  auto core_of_endpoint = [&](EndpointId e) { return router_core_.at(topology_.endpoint_port.at(e).router); };
  for (MirroredState* m : traffic_->mirrored_state()) {
    PartitionView::Item item{m, {}, {}};
    for (EndpointId e : m->writers()) item.writer_cores.push_back(core_of_endpoint(e));
    for (EndpointId e : m->readers()) item.reader_cores.push_back(core_of_endpoint(e));
    view->items.push_back(std::move(item));
  }
  partition_view_ = std::move(view);
  options_.partition->attach(partition_view_.get());
}

QueueCounters Engine::queue_counters(uint32_t i, PortId p, QueueId q) const {
  if (const RouterResults* r = remote_results_.empty() ? nullptr : remote_results_[i].get())
    return r->counters.at(size_t{p} * queues_per_port(i) + q);
  return routers_[i]->bank().counters(p, q);
}
uint32_t Engine::backlog_packets(uint32_t i, PortId p, QueueId q) const {
  if (const RouterResults* r = remote_results_.empty() ? nullptr : remote_results_[i].get())
    return r->backlog_pkts.at(size_t{p} * queues_per_port(i) + q);
  return routers_[i]->bank().packets(p, q);
}
uint64_t Engine::backlog_bytes(uint32_t i, PortId p, QueueId q) const {
  if (const RouterResults* r = remote_results_.empty() ? nullptr : remote_results_[i].get())
    return r->backlog_bytes.at(size_t{p} * queues_per_port(i) + q);
  return routers_[i]->bank().bytes(p, q);
}
uint16_t Engine::queues_per_port(uint32_t i) const {
  if (const RouterResults* r = remote_results_.empty() ? nullptr : remote_results_[i].get()) return r->queues;
  return routers_[i]->bank().queues_per_port();
}
uint16_t Engine::num_ports(uint32_t i) const {
  if (const RouterResults* r = remote_results_.empty() ? nullptr : remote_results_[i].get()) return r->ports;
  return routers_[i]->bank().num_ports();
}
std::vector<StatDesc> Engine::stat_descs(uint32_t i) const {
  if (const RouterResults* r = remote_results_.empty() ? nullptr : remote_results_[i].get()) return r->stats;
  return routers_[i]->stat_descs();
}
const RouterLosses& Engine::router_losses(uint32_t i) const {
  if (const RouterResults* r = remote_results_.empty() ? nullptr : remote_results_[i].get()) return r->losses;
  return routers_[i]->losses();
}

// Layout: per local router (id, ports, queues, counters, backlogs, losses,
// link losses, occupancy trace), then per local core (events, scheme stats).
void Engine::pack_results(std::string& out) const {
  if (!options_.partition) throw std::logic_error("engine: pack_results needs a partition");
  serial::Writer w(out);
  uint32_t n = 0;
  for (uint32_t i = 0; i < num_routers(); ++i) n += runs_router(i);
  w.put(n);
  for (uint32_t i = 0; i < num_routers(); ++i) {
    if (!runs_router(i)) continue;
    const QueueBank& b = routers_[i]->bank();
    w.put(i);
    w.put(b.num_ports());
    w.put(b.queues_per_port());
    for (PortId p = 0; p < b.num_ports(); ++p)
      for (QueueId q = 0; q < b.queues_per_port(); ++q) {
        w.put(b.counters(p, q));
        w.put(b.packets(p, q));
        w.put(b.bytes(p, q));
      }
    w.put(routers_[i]->losses());
    const std::vector<StatDesc> stats = routers_[i]->stat_descs();
    w.put(static_cast<uint32_t>(stats.size()));
    for (const StatDesc& d : stats) w.str(d.name), w.str(d.doc), w.put(d.scope);
    const RouterNode& node = *router_nodes_[i];
    w.put(node.link_losses);
    const OccupancyTrace& o = node.occupancy;
    w.put(o.samples);
    w.vec(o.times);
    w.vec(o.packets);
    w.put(o.packet_bytes);
    w.vec(o.bytes);
    w.put(static_cast<uint32_t>(o.histogram.size()));
    for (const auto& h : o.histogram) w.vec(h);
  }
  uint32_t local_cores = 0;
  for (const auto& c : cores_) local_cores += options_.partition->runs_core(c->id);
  w.put(local_cores);
  for (const auto& c : cores_) {
    if (!options_.partition->runs_core(c->id)) continue;
    w.put(c->id);
    w.vec(c->log.events());
    w.vec(c->scheme_stats);
  }
}

void Engine::unpack_results(const std::string& in) {
  serial::Reader r(in);
  if (remote_results_.empty()) remote_results_.resize(num_routers());
  const uint32_t n = r.get<uint32_t>();
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t i = r.get<uint32_t>();
    if (i >= num_routers()) throw std::runtime_error("results: router " + std::to_string(i) + " out of range");
    auto res = std::make_unique<RouterResults>();
    const uint16_t ports = r.get<uint16_t>(), queues = r.get<uint16_t>();
    if (ports != topology_.routers[i].num_ports)
      throw std::runtime_error("results: router " + std::to_string(i) + " has another shape on another rank");
    res->ports = ports;
    res->queues = queues;
    const size_t cells = size_t{ports} * queues;
    for (size_t c = 0; c < cells; ++c) {
      res->counters.push_back(r.get<QueueCounters>());
      res->backlog_pkts.push_back(r.get<uint32_t>());
      res->backlog_bytes.push_back(r.get<uint64_t>());
    }
    res->losses = r.get<RouterLosses>();
    res->stats.resize(r.get<uint32_t>());
    for (StatDesc& d : res->stats) {
      d.name = r.str();
      d.doc = r.str();
      d.scope = r.get<StatDesc::Scope>();
    }
    RouterNode& node = *router_nodes_[i];
    node.link_losses = r.get<RouterLosses>();
    OccupancyTrace& o = node.occupancy;
    o.samples = r.get<uint64_t>();
    o.times.clear(), o.packets.clear(), o.bytes.clear();  // the replica's own (never run) are empty or zero
    r.vec(o.times);
    r.vec(o.packets);
    o.packet_bytes = r.get<uint32_t>();
    r.vec(o.bytes);
    o.histogram.resize(r.get<uint32_t>());
    for (auto& h : o.histogram) h.clear(), r.vec(h);
    remote_results_[i] = std::move(res);
  }
  const uint32_t ncores = r.get<uint32_t>();
  for (uint32_t k = 0; k < ncores; ++k) {
    const uint32_t id = r.get<uint32_t>();
    if (id >= cores_.size()) throw std::runtime_error("results: core " + std::to_string(id) + " out of range");
    r.vec(cores_[id]->log.events());
    r.vec(cores_[id]->scheme_stats);
  }
  r.expect_end();
}

}  // namespace flexplane
