// The engine's side of runs across processes (partition.h): what it shows a
// Partition, and its results folded together after the run.
#include <cstring>
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

QueueCell Engine::cell(const RouterResults& r, PortId p, QueueId q) {
  const size_t i = size_t{p} * r.queues + q;
  QueueCell c;
  serial::Reader in(r.cells.data() + r.cell_at.at(i), r.cells.size() - r.cell_at[i]);
  uint64_t words[QueueCell::kWords];
  in.words(words, QueueCell::kWords);
  std::memcpy(&c, words, sizeof c);
  return c;
}

QueueCounters Engine::queue_counters(uint32_t i, PortId p, QueueId q) const {
  if (const RouterResults* r = remote(i)) return cell(*r, p, q).counters;
  return routers_[i]->bank().counters(p, q);
}
uint32_t Engine::backlog_packets(uint32_t i, PortId p, QueueId q) const {
  if (const RouterResults* r = remote(i)) return static_cast<uint32_t>(cell(*r, p, q).backlog_pkts);
  return routers_[i]->bank().packets(p, q);
}
uint64_t Engine::backlog_bytes(uint32_t i, PortId p, QueueId q) const {
  if (const RouterResults* r = remote(i)) return cell(*r, p, q).backlog_bytes;
  return routers_[i]->bank().bytes(p, q);
}
uint16_t Engine::queues_per_port(uint32_t i) const {
  if (const RouterResults* r = remote(i)) return r->queues;
  return routers_[i]->bank().queues_per_port();
}
uint16_t Engine::num_ports(uint32_t i) const {
  if (const RouterResults* r = remote(i)) return r->ports;
  return routers_[i]->bank().num_ports();
}
std::vector<StatDesc> Engine::stat_descs(uint32_t i) const {
  if (const RouterResults* r = remote(i)) return r->stats;
  return routers_[i]->stat_descs();
}
const RouterLosses& Engine::router_losses(uint32_t i) const {
  if (const RouterResults* r = remote(i)) return r->losses;
  return routers_[i]->losses();
}
uint16_t Engine::pfc_priorities(uint32_t i) const {
  if (const RouterResults* r = remote(i)) return r->pfc_priorities;
  const PfcState* pfc = runs_router(i) ? routers_[i]->pfc() : nullptr;
  return pfc ? pfc->priorities() : 0;
}
PfcCounters Engine::pfc_counters(uint32_t i, PortId p, QueueId q) const {
  if (const RouterResults* r = remote(i)) return r->pfc.at(size_t{p} * r->pfc_priorities + q);
  const PfcState* pfc = runs_router(i) ? routers_[i]->pfc() : nullptr;
  return pfc ? pfc->counters(p, q, now()) : PfcCounters{};
}

// Layout: per local router (id, ports, queues, each queue's QueueCell as
// serial::put_words, losses, scheme-statistic descriptions, PFC counters,
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
        QueueCell c;
        c.counters = b.counters(p, q);
        c.backlog_pkts = b.packets(p, q);
        c.backlog_bytes = b.bytes(p, q);
        uint64_t words[QueueCell::kWords];
        std::memcpy(words, &c, sizeof c);
        serial::put_words(w, words, QueueCell::kWords);
      }
    w.put(routers_[i]->losses());
    const std::vector<StatDesc> stats = routers_[i]->stat_descs();
    w.put(static_cast<uint32_t>(stats.size()));
    for (const StatDesc& d : stats) w.str(d.name), w.str(d.doc), w.put(d.scope);
    const uint16_t prios = pfc_priorities(i);
    w.put(prios);
    for (PortId p = 0; prios && p < b.num_ports(); ++p)
      for (QueueId q = 0; q < prios; ++q) w.put(pfc_counters(i, p, q));
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

void Engine::unpack_results(const char* data, size_t size) {
  serial::Reader r(data, size);
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
    const char* first = nullptr;
    res->cell_at.reserve(cells);
    for (size_t c = 0; c < cells; ++c) {  // checked and indexed here; kept as they came
      const size_t at = r.offset(data);
      if (!first) first = data + at;
      res->cell_at.push_back(static_cast<uint32_t>(data + at - first));
      uint64_t words[QueueCell::kWords];
      r.words(words, QueueCell::kWords);
    }
    if (cells) res->cells.assign(first, data + r.offset(data));
    res->losses = r.get<RouterLosses>();
    res->stats.resize(r.get<uint32_t>());
    for (StatDesc& d : res->stats) {
      d.name = r.str();
      d.doc = r.str();
      d.scope = r.get<StatDesc::Scope>();
    }
    res->pfc_priorities = r.get<uint16_t>();
    res->pfc.resize(size_t{ports} * res->pfc_priorities);
    for (PfcCounters& c : res->pfc) c = r.get<PfcCounters>();
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
