#include "router/fib.h"

#include <rte_errno.h>

#include <chrono>
#include <thread>

#include "api/params.h"

namespace flexplane::router {

NeighborTable::NeighborTable(uint32_t capacity)
    : capacity_(std::min(capacity, kMaxNeighbors)), slots_(new Neighbor[capacity_]) {}

uint32_t NeighborTable::add(uint64_t key, uint16_t port, uint32_t ip) {
  auto it = index_.find(key);
  if (it != index_.end()) return it->second;
  const uint32_t i = size_.load(std::memory_order_relaxed);
  if (i >= capacity_) throw ConfigError("neighbour table full (" + std::to_string(capacity_) + " next hops)");
  slots_[i].ip = ip;
  slots_[i].port = port;
  size_.store(i + 1, std::memory_order_release);  // publishes the slot before any table names it
  index_.emplace(key, i);
  return i;
}

uint32_t NeighborTable::by_ip(uint16_t port, uint32_t ip) {
  return add((1ull << 63) | (uint64_t{port} << 32) | ip, port, ip);
}

uint32_t NeighborTable::by_mac(uint16_t port, const Mac& mac) {
  const uint32_t i = add((uint64_t{port} << 48) | (pack_mac(mac) & ~kMacResolved), port, 0);
  set_mac(i, mac, true);
  return i;
}

int64_t NeighborTable::find(uint16_t port, uint32_t ip) const {
  auto it = index_.find((1ull << 63) | (uint64_t{port} << 32) | ip);
  return it == index_.end() ? int64_t{-1} : static_cast<int64_t>(it->second);
}

void NeighborTable::set_mac(uint32_t index, const Mac& mac, bool is_static) {
  Neighbor& n = slots_[index];
  if (n.static_mac && !is_static) return;  // ARP never overrides configuration
  n.static_mac = n.static_mac || is_static;
  n.mac.store(pack_mac(mac), std::memory_order_release);
}

namespace {

// The port whose connected subnet holds `ip`, or -1.
int connected_port(const std::vector<PortAddress>& ports, uint32_t ip) {
  for (size_t p = 0; p < ports.size(); ++p) {
    const PortAddress& a = ports[p];
    if (!a.has_ip) continue;
    const uint32_t mask = ~0u << (32 - a.prefix_length);
    if ((a.ip & mask) == (ip & mask)) return static_cast<int>(p);
  }
  return -1;
}

}  // namespace

std::vector<FibEntry> compile_routes(const RouteSet& routes, const std::vector<PortAddress>& ports,
                                     const std::map<uint32_t, uint32_t>& connected_hosts, NeighborTable& neighbors) {
  std::vector<FibEntry> out, defaults;
  auto at = [&](int line) { return routes.file + ":" + std::to_string(line) + ": "; };
  auto check_port = [&](int port, int line) {
    if (port < 0 || static_cast<size_t>(port) >= ports.size())
      throw ConfigError(at(line) + "port: " + std::to_string(port) + " does not exist (the router has " +
                        std::to_string(ports.size()) + " ports)");
  };
  for (const RouteEntry& r : routes.routes) {
    uint32_t hop = kHopBlackhole;
    if (r.kind == RouteEntry::kPort) {
      check_port(r.port, r.line);
      hop = neighbors.by_mac(static_cast<uint16_t>(r.port), r.mac);
    } else if (r.kind == RouteEntry::kVia) {
      int port = r.port;
      if (port < 0) {
        port = connected_port(ports, r.gateway);
        if (port < 0)
          throw ConfigError(at(r.line) + "via: " + ipv4_str(r.gateway) +
                            " is in no port's subnet (give 'port N', or an address in ports.N.ip's subnet)");
      }
      check_port(port, r.line);
      for (const PortAddress& a : ports)
        if (a.has_ip && a.ip == r.gateway)
          throw ConfigError(at(r.line) + "via: " + ipv4_str(r.gateway) + " is the router's own address");
      hop = neighbors.by_ip(static_cast<uint16_t>(port), r.gateway);
      if (r.has_mac) neighbors.set_mac(hop, r.mac, true);
    }
    if (r.length == 0) {  // rte_lpm has no depth 0: a default route is two /1s, which explicit /1s override
      defaults.push_back({0x00000000u, 1, hop});
      defaults.push_back({0x80000000u, 1, hop});
    } else {
      out.push_back({r.prefix, r.length, hop});
    }
  }
  for (const StaticNeighbor& n : routes.neighbors) {
    int port = n.port >= 0 ? n.port : connected_port(ports, n.ip);
    if (port < 0)
      throw ConfigError(at(n.line) + "neighbor: " + ipv4_str(n.ip) + " is in no port's subnet (give 'port N')");
    check_port(port, n.line);
    const uint32_t i = neighbors.by_ip(static_cast<uint16_t>(port), n.ip);
    neighbors.set_mac(i, n.mac, true);
    if (connected_port(ports, n.ip) == port) out.push_back({n.ip, 32, i});  // a host route on its subnet
  }
  for (const auto& [ip, index] : connected_hosts) out.push_back({ip, 32, index});
  // Connected subnets, then the router's own addresses (and the subnets'
  // directed broadcast, which RFC 1812 5.3.5.2 says not to forward by default)
  // last, so they win over any route.
  for (size_t p = 0; p < ports.size(); ++p) {
    const PortAddress& a = ports[p];
    if (!a.has_ip) continue;
    const uint32_t mask = ~0u << (32 - a.prefix_length);
    out.push_back({a.ip & mask, a.prefix_length, kHopConnected + static_cast<uint32_t>(p)});
  }
  for (const PortAddress& a : ports) {
    if (!a.has_ip) continue;
    const uint32_t mask = ~0u << (32 - a.prefix_length);
    out.push_back({a.ip, 32, kHopLocal});
    out.push_back({(a.ip & mask) | ~mask, 32, kHopLocal});
  }
  defaults.insert(defaults.end(), out.begin(), out.end());  // later entries win
  return defaults;
}

Fib::Fib(const std::string& name, uint32_t max_routes, uint32_t tbl8s, rte_rcu_qsbr* qs)
    : qs_(qs), max_routes_(max_routes) {
  for (int i = 0; i < 2; ++i) {
    rte_lpm_config cfg{};
    cfg.max_rules = max_routes;
    cfg.number_tbl8s = tbl8s;
    const std::string n = name + std::to_string(i);
    tables_[i] = rte_lpm_create(n.c_str(), SOCKET_ID_ANY, &cfg);
    if (!tables_[i])
      throw ConfigError("cannot create the routing table '" + n + "' (" + rte_strerror(rte_errno) +
                        "; it needs 64 MiB of DPDK memory: raise EAL -m)");
  }
}

Fib::~Fib() {
  for (rte_lpm* t : tables_)
    if (t) rte_lpm_free(t);
}

void Fib::update(uint32_t table, const std::vector<FibEntry>& entries) {
  rte_lpm* t = tables_[table];
  std::map<uint64_t, uint32_t>& have = content_[table];
  if (dirty_[table]) {
    rte_lpm_delete_all(t);
    have.clear();
    dirty_[table] = false;
  }
  std::map<uint64_t, uint32_t> want;
  for (const FibEntry& e : entries) {
    const uint32_t mask = e.length ? ~0u << (32 - e.length) : 0;
    want[(uint64_t{e.prefix & mask} << 8) | e.length] = e.hop;  // later entries win, as rte_lpm_add would
  }
  for (auto it = have.begin(); it != have.end();) {
    if (want.count(it->first)) {
      ++it;
      continue;
    }
    rte_lpm_delete(t, static_cast<uint32_t>(it->first >> 8), static_cast<uint8_t>(it->first & 0xFF));
    it = have.erase(it);
  }
  for (const auto& [key, hop] : want) {
    auto it = have.find(key);
    if (it != have.end() && it->second == hop) continue;
    const uint32_t prefix = static_cast<uint32_t>(key >> 8);
    const uint8_t length = static_cast<uint8_t>(key & 0xFF);
    if (rte_lpm_add(t, prefix, length, hop) < 0) {
      dirty_[table] = true;
      throw ConfigError("routing table full at " + ipv4_str(prefix) + "/" + std::to_string(length) +
                        " (out of rte_lpm tbl8 groups: many long prefixes)");
    }
    have[key] = hop;
  }
}

void Fib::publish(const std::vector<FibEntry>& entries) {
  if (entries.size() > max_routes_)
    throw ConfigError(std::to_string(entries.size()) + " routes (with connected and local ones) exceed the table's " +
                      std::to_string(max_routes_));
  const uint32_t standby = 1 - active_.load(std::memory_order_relaxed);
  update(standby, entries);
  active_.store(standby, std::memory_order_release);
  // Grace period: every online worker passes a quiescent point after the
  // burst in which it may still have read the previous table.
  if (qs_) {
    const uint64_t token = rte_rcu_qsbr_start(qs_);
    while (!rte_rcu_qsbr_check(qs_, token, false)) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  ++publications_;
}

}  // namespace flexplane::router
