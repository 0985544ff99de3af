// Forwarding table: longest-prefix match (rte_lpm, double-buffered) to a
// next-hop index, and the neighbour table that index names (port + MAC).
//
// Principles
//  - Readers never wait and never see a half-built table: the control thread
//    builds the standby rte_lpm, publishes it with one release store, then
//    waits for a grace period (rte_rcu_qsbr: every worker has passed a
//    quiescent point, i.e. finished the burst that may have read the old
//    pointer) before the old table is rebuilt. A route change loses nothing.
//  - Neighbours are append-only with a stable index, so an LPM entry never
//    dangles; a MAC is one atomic 64-bit word (6 bytes + a "resolved" bit), so
//    an ARP answer or a changed static MAC takes effect without a rebuild.
//  - Special next hops sit above the neighbour indices: the router's own
//    addresses, blackholes and "a host on port P's subnet, not resolved yet".
//  - Memory: rte_lpm's 2^24-entry first level is 64 MiB per table, 128 MiB for
//    the pair, whatever the number of routes.
#pragma once

#include <rte_lpm.h>
#include <rte_rcu_qsbr.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "router/routes.h"

namespace flexplane::router {

// rte_lpm next hops are 24 bits; the top of that range is reserved.
inline constexpr uint32_t kHopLocal = 0xFFFFFF;       // addressed to the router itself
inline constexpr uint32_t kHopBlackhole = 0xFFFFFE;   // a blackhole route: counted drop
inline constexpr uint32_t kHopConnected = 0xFFF000;   // + port: a host on the port's subnet, to resolve
inline constexpr uint32_t kMaxNeighbors = 0x100000;   // indices below kHopConnected

inline constexpr uint64_t kMacResolved = 1ull << 63;

// The router's tables: next hops, and LPM rules (routes + connected + local).
inline constexpr uint32_t kRouterNeighbors = 65536;
inline constexpr uint32_t kRouterMaxRoutes = 1u << 20;

struct alignas(16) Neighbor {
  std::atomic<uint64_t> mac{0};  // the 6 MAC bytes as stored (little-endian load) | kMacResolved
  uint32_t ip = 0;               // host order; 0 for a "port N mac M" next hop
  uint16_t port = 0;
  bool static_mac = false;       // from the routes file: ARP never overrides it
};

inline uint64_t pack_mac(const Mac& m) {
  uint64_t v = 0;
  for (int i = 5; i >= 0; --i) v = (v << 8) | m[i];
  return v | kMacResolved;
}
inline Mac unpack_mac(uint64_t v) {
  Mac m;
  for (int i = 0; i < 6; ++i) m[i] = static_cast<uint8_t>(v >> (8 * i));
  return m;
}

// Written by the control thread only; read by any thread.
class NeighborTable {
 public:
  explicit NeighborTable(uint32_t capacity = 65536);
  // The neighbour for (port, ip) or (port, static mac); added if new. Throws
  // ConfigError when the table is full.
  uint32_t by_ip(uint16_t port, uint32_t ip);
  uint32_t by_mac(uint16_t port, const Mac& mac);
  // Index of (port, ip), or -1.
  int64_t find(uint16_t port, uint32_t ip) const;
  void set_mac(uint32_t index, const Mac& mac, bool is_static);

  const Neighbor& operator[](uint32_t i) const { return slots_[i]; }
  Neighbor& operator[](uint32_t i) { return slots_[i]; }
  uint32_t size() const { return size_.load(std::memory_order_acquire); }
  uint32_t capacity() const { return capacity_; }

 private:
  uint32_t add(uint64_t key, uint16_t port, uint32_t ip);
  uint32_t capacity_;
  std::unique_ptr<Neighbor[]> slots_;
  std::atomic<uint32_t> size_{0};
  std::unordered_map<uint64_t, uint32_t> index_;
};

struct FibEntry {
  uint32_t prefix;  // host order
  uint8_t length;
  uint32_t hop;  // neighbour index or a kHop* value
};

// The router's address on one port (if any).
struct PortAddress {
  bool has_ip = false;
  uint32_t ip = 0;
  uint8_t prefix_length = 0;
};

// Routes file + port addresses + resolved hosts on connected subnets -> LPM
// entries (later entries for the same prefix win), adding neighbours as
// needed. A default route becomes 0.0.0.0/1 + 128.0.0.0/1 (rte_lpm has no
// depth 0), placed first so that explicit /1 routes override it. Throws ConfigError naming the routes
// file's line (a gateway outside every connected subnet, a port that does
// not exist, ...).
std::vector<FibEntry> compile_routes(const RouteSet& routes, const std::vector<PortAddress>& ports,
                                     const std::map<uint32_t, uint32_t>& connected_hosts, NeighborTable& neighbors);

class Fib {
 public:
  // `qs`: the workers' quiescent-state variable (may be null when no thread reads).
  Fib(const std::string& name, uint32_t max_routes, uint32_t tbl8s, rte_rcu_qsbr* qs);
  ~Fib();
  Fib(const Fib&) = delete;
  Fib& operator=(const Fib&) = delete;

  // Readers: load once per burst, use, then report quiescence.
  const rte_lpm* active() const { return tables_[active_.load(std::memory_order_acquire)]; }

  // Control thread: bring the standby table to `entries` (changing only the
  // prefixes that differ), publish it and wait for the grace period (polling,
  // not spinning: the control thread may share a CPU with a worker). On
  // failure (table full) nothing is published and ConfigError is thrown.
  void publish(const std::vector<FibEntry>& entries);
  uint64_t publications() const { return publications_; }
  uint32_t max_routes() const { return max_routes_; }

 private:
  void update(uint32_t table, const std::vector<FibEntry>& entries);

  rte_lpm* tables_[2] = {nullptr, nullptr};
  // What each table holds (prefix << 8 | length -> hop), so a rebuild changes
  // only what differs: clearing a table rewrites its 64 MiB first level.
  std::map<uint64_t, uint32_t> content_[2];
  bool dirty_[2] = {false, false};  // a failed update left it unknown: clear it next time
  std::atomic<uint32_t> active_{0};
  rte_rcu_qsbr* qs_;
  uint32_t max_routes_;
  uint64_t publications_ = 0;
};

}  // namespace flexplane::router
