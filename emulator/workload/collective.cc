// Collectives and send lists: the flows and their dependency graph
// (design in collective.h).
#include "emulator/workload/collective.h"

#include <algorithm>
#include <fstream>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

namespace flexplane {

uint32_t SendGraph::send(uint32_t src, uint32_t dst, uint32_t size_pkts, std::vector<uint32_t> after) {
  const auto index = static_cast<uint32_t>(sends_.size());
  if (src == dst || size_pkts == 0) throw std::logic_error("collective: a send needs src != dst and size >= 1");
  for (uint32_t a : after)
    if (a >= index || (sends_[a].src != src && sends_[a].dst != src))
      throw std::logic_error("collective: send " + std::to_string(index) + " waits for send " + std::to_string(a) +
                             ", which is not an earlier send or receive of rank " + std::to_string(src));
  sends_.push_back({src, dst, size_pkts, std::move(after)});
  return index;
}

namespace {

constexpr Timeslot kMaxStart = Timeslot{1} << 60;

// Builds flows and dependencies in send order (flow id = position).
struct Builder {
  FlowList flows;
  FlowDeps deps;
  Builder() { deps.after_begin.push_back(0); }
  void add(EndpointId src, EndpointId dst, uint32_t size, Timeslot gap, uint32_t iteration,
           const std::vector<uint32_t>& after) {
    FlowSpec f;
    f.id = static_cast<uint32_t>(flows.size());
    f.src = src;
    f.dst = dst;
    f.size_pkts = size;
    // A dependent flow's release is found at run time; its start is a lower
    // bound that keeps every flow after its dependencies in (start, id) order.
    Timeslot start = 0;
    for (uint32_t a : after) start = std::max(start, flows[a].start);
    f.start = std::min(start + gap, kMaxStart);  // gap <= kMaxGap: no overflow; saturating keeps the order
    flows.push_back(f);
    deps.after.insert(deps.after.end(), after.begin(), after.end());
    deps.after_begin.push_back(static_cast<uint32_t>(deps.after.size()));
    deps.gap.push_back(gap);
    deps.iteration.push_back(iteration);
    deps.iterations = std::max(deps.iterations, iteration + 1);
  }
};

}  // namespace

FlowList expand_collective(const Collective& c, const CollectiveShape& shape, uint32_t num_endpoints,
                           uint64_t max_flows, const std::string& where, FlowDeps* deps) {
  const uint32_t ranks = shape.ranks ? shape.ranks : num_endpoints;
  if (ranks < 2) throw ConfigError(where + ".ranks: a collective needs >= 2 ranks ('" + std::to_string(ranks) + "')");
  if (shape.rank_stride == 0) throw ConfigError(where + ".rank_stride: must be >= 1 ('0')");
  if (uint64_t{ranks - 1} * shape.rank_stride >= num_endpoints)
    throw ConfigError(where + ".ranks: " + std::to_string(ranks) + " ranks " + std::to_string(shape.rank_stride) +
                      " endpoints apart need " + std::to_string(uint64_t{ranks - 1} * shape.rank_stride + 1) +
                      " endpoints, the topology has " + std::to_string(num_endpoints));
  if (shape.message_pkts == 0) throw ConfigError(where + ": a collective needs `message_pkts: <packets>`");
  if (shape.iterations == 0) throw ConfigError(where + ".iterations: must be >= 1 ('0')");
  if (shape.compute_gap > kMaxGap)
    throw ConfigError(where + ".compute_gap_timeslots: at most " + std::to_string(kMaxGap) + " ('" +
                      std::to_string(shape.compute_gap) + "')");
  SendGraph g;
  c.iteration(ranks, shape.message_pkts, g);
  const auto& sends = g.sends();
  if (uint64_t{sends.size()} * shape.iterations > max_flows)
    throw ConfigError(where + ".max_flows: " + std::to_string(shape.iterations) + " iterations of " +
                      std::to_string(sends.size()) + " sends exceed max_flows = " + std::to_string(max_flows));
  // By rank: the sends of one iteration that touch it (its sends and receives).
  std::vector<std::vector<uint32_t>> touching(ranks);
  for (uint32_t i = 0; i < sends.size(); ++i) {
    touching[sends[i].src].push_back(i);
    touching[sends[i].dst].push_back(i);
  }
  for (auto& t : touching) std::sort(t.begin(), t.end());
  Builder b;
  std::vector<uint32_t> after;
  for (uint32_t k = 0; k < shape.iterations; ++k) {
    const uint32_t base = k * static_cast<uint32_t>(sends.size());
    for (uint32_t i = 0; i < sends.size(); ++i) {
      const SendGraph::Send& s = sends[i];
      after.clear();
      Timeslot gap = 0;
      if (s.after.empty()) {  // a first send of its rank: after the rank's previous iteration, and compute
        gap = shape.compute_gap;
        if (k > 0)
          for (uint32_t j : touching[s.src]) after.push_back(base - static_cast<uint32_t>(sends.size()) + j);
      } else {
        for (uint32_t j : s.after) after.push_back(base + j);
      }
      b.add(static_cast<EndpointId>(s.src * shape.rank_stride), static_cast<EndpointId>(s.dst * shape.rank_stride),
            s.size_pkts, gap, k, after);
    }
  }
  order_flows(&b.flows, &b.deps);
  *deps = std::move(b.deps);
  return std::move(b.flows);
}

void order_flows(FlowList* flows, FlowDeps* deps) {
  const size_t n = flows->size();
  std::vector<uint32_t> order(n);  // new position -> old id
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return (*flows)[a].start < (*flows)[b].start; });
  std::vector<uint32_t> new_id(n);
  for (uint32_t i = 0; i < n; ++i) new_id[order[i]] = i;
  FlowList f(n);
  FlowDeps d;
  d.iterations = deps->iterations;
  d.after_begin.reserve(n + 1);
  d.after_begin.push_back(0);
  d.after.reserve(deps->after.size());
  d.gap.resize(n);
  d.iteration.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t o = order[i];
    f[i] = (*flows)[o];
    f[i].id = i;
    for (uint32_t j = deps->after_begin[o]; j < deps->after_begin[o + 1]; ++j) d.after.push_back(new_id[deps->after[j]]);
    d.after_begin.push_back(static_cast<uint32_t>(d.after.size()));
    d.gap[i] = deps->gap[o];
    d.iteration[i] = deps->iteration[o];
  }
  *flows = std::move(f);
  *deps = std::move(d);
}

FlowList read_send_list(const std::string& path, uint32_t num_endpoints, FlowDeps* deps) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open send list");
  return read_send_list(in, path, num_endpoints, deps);
}

FlowList read_send_list(std::istream& in, const std::string& name, uint32_t num_endpoints, FlowDeps* deps) {
  Builder b;
  std::unordered_map<uint64_t, uint32_t> by_id;  // send_id -> flow
  std::string line;
  bool header = false;
  uint64_t lineno = 0;
  std::vector<uint32_t> after;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const std::string at = name + ":" + std::to_string(lineno);
    if (!header) {
      if (line != kSendListHeader)
        throw ConfigError(at + ": expected the header '" + std::string(kSendListHeader) + "'");
      header = true;
      continue;
    }
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.emplace_back();
    if (cells.size() != 7) throw ConfigError(at + ": expected 7 fields, got " + std::to_string(cells.size()));
    static const char* kNames[] = {"send_id", "src", "dst", "size_pkts", "gap_timeslots", "iteration"};
    uint64_t v[6];
    for (int i = 0; i < 6; ++i)
      if (!params_detail::parse(cells[i], v[i]))
        throw ConfigError(at + ": " + kNames[i] + ": expected an unsigned integer ('" + cells[i] + "')");
    if (v[1] >= num_endpoints || v[2] >= num_endpoints)
      throw ConfigError(at + ": " + (v[1] >= num_endpoints ? "src" : "dst") + ": no such endpoint ('" +
                        std::to_string(v[1] >= num_endpoints ? v[1] : v[2]) + "', the topology has " +
                        std::to_string(num_endpoints) + ")");
    if (v[1] == v[2]) throw ConfigError(at + ": dst: a send to its own source ('" + cells[2] + "')");
    if (v[3] == 0 || v[3] > UINT32_MAX) throw ConfigError(at + ": size_pkts: must be 1.." + std::to_string(UINT32_MAX) + " ('" + cells[3] + "')");
    if (v[4] > kMaxGap) throw ConfigError(at + ": gap_timeslots: at most " + std::to_string(kMaxGap) + " ('" + cells[4] + "')");
    if (v[5] >= UINT32_MAX) throw ConfigError(at + ": iteration: too large ('" + cells[5] + "')");
    after.clear();
    std::stringstream as(cells[6]);
    for (std::string tok; as >> tok;) {
      uint64_t id = 0;
      if (!params_detail::parse(tok, id)) throw ConfigError(at + ": after: expected send ids separated by spaces ('" + tok + "')");
      const auto it = by_id.find(id);
      if (it == by_id.end()) throw ConfigError(at + ": after: send " + tok + " is not on an earlier line");
      const FlowSpec& d = b.flows[it->second];
      if (d.src != v[1] && d.dst != v[1])
        throw ConfigError(at + ": after: send " + tok + " (" + std::to_string(d.src) + " -> " + std::to_string(d.dst) +
                          ") is neither a send nor a receive of endpoint " + cells[1]);
      after.push_back(it->second);
    }
    if (!by_id.emplace(v[0], static_cast<uint32_t>(b.flows.size())).second)
      throw ConfigError(at + ": send_id: " + cells[0] + " given twice");
    std::sort(after.begin(), after.end());
    after.erase(std::unique(after.begin(), after.end()), after.end());
    b.add(static_cast<EndpointId>(v[1]), static_cast<EndpointId>(v[2]), static_cast<uint32_t>(v[3]), v[4],
          static_cast<uint32_t>(v[5]), after);
  }
  if (!header) throw ConfigError(name + ": empty send list (no header '" + std::string(kSendListHeader) + "')");
  order_flows(&b.flows, &b.deps);
  *deps = std::move(b.deps);
  return std::move(b.flows);
}

void write_send_list(const std::string& path, const FlowList& flows, const FlowDeps& deps) {
  std::ofstream out(path);
  out << "# flexplane send list (emulator/workload/collective.h)\n" << kSendListHeader << "\n";
  for (const FlowSpec& f : flows) {
    out << f.id << ',' << f.src << ',' << f.dst << ',' << f.size_pkts << ',' << deps.gap[f.id] << ','
        << deps.iteration[f.id] << ',';
    for (uint32_t j = deps.after_begin[f.id]; j < deps.after_begin[f.id + 1]; ++j)
      out << (j == deps.after_begin[f.id] ? "" : " ") << deps.after[j];
    out << '\n';
  }
  if (!out) throw ConfigError(path + ": cannot write");
}

}  // namespace flexplane
