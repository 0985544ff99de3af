// Destination-based routing with ECMP, filled in by the topology loader.
//
// For each destination endpoint the table holds a group of candidate output
// ports; a flow hash (salted per router) picks one, so all packets of a flow
// take the same path. route() is a couple of loads: no virtual call.
//
// Two bytes per destination (docs/design.md, "Memory for large fabrics"):
// a single-path destination holds its port, an ECMP destination kGroupBase
// + the index of its group, an unknown one kNoRoute. Each distinct list of
// ports is stored once per table (a fat tree's edge router has one: its
// uplinks). The entries live in pages of 1,024 destinations, and every page
// whose contents another table (or another page) already holds is shared
// with it, process-wide (RoutePagePool): a k = 64 fat tree's 5,120 tables
// of 65,536 destinations are 98 distinct pages (0.2 MB) and 5.2 MB of page
// pointers (make_fat_tree(64) and RoutePagePool::size()), where flat arrays
// took 671 MB, and a copy of a topology copies pointers. route() reads the
// page pointer, then the entry.
//
// Building: set() writes into a page of the table's own (copied from the
// shared one the first time), which is shared as soon as set() moves on to
// another page or share() is called (Topology::index_links does, once a
// kind has built its tables); a table filled destination by destination
// holds one private page at a time. Pages are immutable once shared, and a
// shared page is freed with the last table that points to it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "api/packet.h"
#include "api/rng.h"

namespace flexplane {

// 1,024 routing entries: destinations [i * 1024, (i + 1) * 1024) of a table.
struct RoutePage {
  static constexpr uint32_t kShift = 10;
  static constexpr uint32_t kSize = 1u << kShift;
  uint16_t entry[kSize];
};

// The process-wide set of shared routing pages, each distinct contents once.
// A page leaves it when the last table holding it lets go. Thread-safe; used
// only while tables are built, copied or destroyed, never by route().
class RoutePagePool {
 public:
  static RoutePagePool& instance() {
    static RoutePagePool* pool = new RoutePagePool;  // never destroyed: tables in static storage may outlive it
    return *pool;
  }
  // The shared page with `page`'s contents (added if new).
  std::shared_ptr<const RoutePage> share(const RoutePage& page) {
    const uint64_t h = hash(page);
    std::lock_guard<std::mutex> lock(mu_);
    auto [lo, hi] = pages_.equal_range(h);
    for (auto it = lo; it != hi; ++it) {
      if (std::memcmp(it->second.page, &page, sizeof page)) continue;
      if (std::shared_ptr<const RoutePage> alive = it->second.owner.lock()) return alive;
    }
    auto* copy = new RoutePage(page);
    std::shared_ptr<const RoutePage> out(copy, [this, h](const RoutePage* p) { release(h, p); });
    pages_.emplace(h, Slot{copy, out});
    return out;
  }
  // Distinct shared pages alive now (tests, memory reports).
  size_t size() {
    std::lock_guard<std::mutex> lock(mu_);
    return pages_.size();
  }

 private:
  struct Slot {
    const RoutePage* page;
    std::weak_ptr<const RoutePage> owner;
  };
  static uint64_t hash(const RoutePage& page) {
    uint64_t h = 0x9e3779b97f4a7c15ull, w;
    for (uint32_t i = 0; i < RoutePage::kSize; i += 4) {
      std::memcpy(&w, &page.entry[i], sizeof w);
      h = (h ^ w) * 0xff51afd7ed558ccdull;
      h ^= h >> 29;
    }
    return h;
  }
  void release(uint64_t h, const RoutePage* p) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto [lo, hi] = pages_.equal_range(h);
      for (auto it = lo; it != hi; ++it)
        if (it->second.page == p) {
          pages_.erase(it);
          break;
        }
    }
    delete p;
  }
  std::mutex mu_;
  std::unordered_multimap<uint64_t, Slot> pages_;  // by hash of the contents
};

class RoutingTable {
 public:
  RoutingTable() = default;
  RoutingTable(uint32_t num_endpoints, uint32_t salt) : salt_(salt) { grow(num_endpoints); }
  RoutingTable(const RoutingTable& o) { *this = o; }
  RoutingTable(RoutingTable&& o) noexcept { *this = std::move(o); }
  RoutingTable& operator=(RoutingTable&& o) noexcept {
    if (this == &o) return *this;
    salt_ = o.salt_;
    size_ = o.size_;
    pages_ = std::move(o.pages_);  // the pages stay where they are: flat_ stays valid
    flat_ = o.flat_;
    groups_ = std::move(o.groups_);
    ports_ = std::move(o.ports_);
    last_ = o.last_;
    index_ = std::move(o.index_);
    own_ = o.own_;
    o.size_ = 0;
    o.flat_ = nullptr;
    o.own_ = -1;
    return *this;
  }
  RoutingTable& operator=(const RoutingTable& o) {
    if (this == &o) return *this;
    salt_ = o.salt_;
    size_ = o.size_;
    pages_ = o.pages_;
    groups_ = o.groups_;
    ports_ = o.ports_;
    last_ = o.last_;
    index_ = o.index_;
    own_ = o.own_;
    if (own_ >= 0) pages_[own_] = std::make_shared<RoutePage>(*o.pages_[own_]);  // a private page stays private
    refresh_flat();
    return *this;
  }

  // Replace the candidate ports for `dst` (none: no route).
  void set(EndpointId dst, const std::vector<PortId>& ports) {
    if (dst >= size_) grow(uint32_t{dst} + 1);
    uint16_t e;
    if (ports.empty()) {
      e = kNoRoute;
    } else if (ports.size() == 1 && ports[0] < kGroupBase) {
      e = ports[0];
    } else {
      e = static_cast<uint16_t>(kGroupBase + group_of(ports));
    }
    const int32_t page = static_cast<int32_t>(dst >> RoutePage::kShift);
    const uint32_t slot = dst & (RoutePage::kSize - 1);
    if (pages_[page]->entry[slot] == e) return;
    if (own_ != page) {
      share();
      pages_[page] = std::make_shared<RoutePage>(*pages_[page]);
      own_ = page;
      refresh_flat();
    }
    const_cast<RoutePage&>(*pages_[page]).entry[slot] = e;  // private: made by make_shared just above
  }

  // Share the page set() last wrote into (idempotent). Call when the table
  // is filled; set() may still be called after.
  void share() {
    if (own_ < 0) return;
    pages_[own_] = RoutePagePool::instance().share(*pages_[own_]);
    own_ = -1;
    refresh_flat();
  }

  // Output port for `p`, or kNoRoute if its destination is unknown.
  PortId route(const Packet& p) const {
    const uint16_t e = direct().lookup(p.dst);  // two loads for single-path destinations: page, entry
    return is_group(e) ? route_group(e, p) : e;
  }

  // For a loop over a batch (PatternRouter): the table read into locals
  // once. lookup(dst) is the raw entry: a port, kNoRoute, or a group (then
  // route_group(entry, p)); both markers are >= any router's port count.
  // A table of one page (up to 1,024 destinations: a rack, a small
  // leaf-spine) is read in one load, as a flat array; a larger one by page.
  struct Direct {
    const uint16_t* flat;  // the single page's entries, or null
    const std::shared_ptr<const RoutePage>* page;
    uint32_t size;
    uint16_t lookup(EndpointId dst) const { return flat ? lookup_flat(dst) : lookup_paged(dst); }
    // The same, for loops that test `flat` once per batch (PatternRouter).
    uint16_t lookup_flat(EndpointId dst) const { return dst < size ? flat[dst] : kNoRoute; }
    uint16_t lookup_paged(EndpointId dst) const {
      return dst < size ? page[dst >> RoutePage::kShift]->entry[dst & (RoutePage::kSize - 1)] : kNoRoute;
    }
  };
  Direct direct() const { return Direct{flat_, pages_.data(), size_}; }
  static bool is_group(uint16_t e) { return static_cast<uint16_t>(e - kGroupBase) < kMaxGroups; }
  PortId route_group(uint16_t e, const Packet& p) const {
    const Group g = groups_[e - kGroupBase];
    return ports_[g.first + flow_hash(p.flow, salt_) % g.count];
  }

  uint32_t num_destinations() const { return size_; }
  // The ports `dst` may leave by (empty: no route), a view valid until the
  // next set(). (Not std::span: validation/ns3_fat_tree.h builds this header
  // as C++17, which ns-3's headers need.)
  struct Ports {
    const PortId* first = nullptr;
    const PortId* last = nullptr;
    const PortId* begin() const { return first; }
    const PortId* end() const { return last; }
    size_t size() const { return static_cast<size_t>(last - first); }
    bool empty() const { return first == last; }
  };
  Ports candidates(EndpointId dst) const {
    if (dst >= size_) return {};
    const uint16_t* e = &pages_[dst >> RoutePage::kShift]->entry[dst & (RoutePage::kSize - 1)];
    if (*e == kNoRoute) return {};
    if (!is_group(*e)) return {e, e + 1};
    return group_ports(*e);
  }
  // A group entry's ports and index (is_group(e) must hold), for load
  // balancers other than the flow hash (api/load_balancer.h).
  Ports group_ports(uint16_t e) const {
    const Group g = groups_[e - kGroupBase];
    return {ports_.data() + g.first, ports_.data() + g.first + g.count};
  }
  static uint32_t group_index(uint16_t e) { return static_cast<uint32_t>(e - kGroupBase); }
  uint32_t salt() const { return salt_; }
  uint32_t num_groups() const { return static_cast<uint32_t>(groups_.size()); }  // distinct ECMP lists
  // Whether page `i` (destinations [i * RoutePage::kSize, ...)) is the same
  // object as `o`'s page `i` (tests: sharing).
  bool same_page(const RoutingTable& o, uint32_t i) const { return pages_.at(i) == o.pages_.at(i); }

 private:
  static constexpr uint16_t kGroupBase = 0x8000;                   // ports below it are stored as they are
  static constexpr uint16_t kMaxGroups = kNoRoute - kGroupBase;  // 32,767
  static_assert(sizeof(PortId) == sizeof(uint16_t), "candidates() views a single-port entry as a PortId");

  struct Group {
    uint32_t first = 0;
    uint16_t count = 0;
  };

  // Room for `n` destinations; new ones have no route (the shared empty page).
  void grow(uint32_t n) {
    const size_t pages = (size_t{n} + RoutePage::kSize - 1) >> RoutePage::kShift;
    if (pages > pages_.size()) {
      RoutePage none;
      std::fill(std::begin(none.entry), std::end(none.entry), kNoRoute);
      pages_.resize(pages, RoutePagePool::instance().share(none));
    }
    size_ = std::max(size_, n);
    refresh_flat();
  }
  void refresh_flat() { flat_ = pages_.size() == 1 ? pages_[0]->entry : nullptr; }
  // The index of the group holding exactly `ports`, added if new. The group
  // set last is checked first: consecutive destinations mostly share one.
  uint32_t group_of(const std::vector<PortId>& ports) {
    if (!groups_.empty()) {
      const Group& g = groups_[last_];
      if (g.count == ports.size() && std::equal(ports.begin(), ports.end(), ports_.begin() + g.first)) return last_;
    }
    const auto [it, added] = index_.emplace(ports, static_cast<uint32_t>(groups_.size()));
    if (added) {
      if (groups_.size() >= kMaxGroups) {
        index_.erase(it);
        throw std::length_error("routing table: more than 32,767 distinct ECMP port lists at one router");
      }
      groups_.push_back(Group{static_cast<uint32_t>(ports_.size()), static_cast<uint16_t>(ports.size())});
      ports_.insert(ports_.end(), ports.begin(), ports.end());
    }
    last_ = it->second;
    return last_;
  }

  uint32_t salt_ = 0;
  uint32_t size_ = 0;                                     // destinations
  std::vector<std::shared_ptr<const RoutePage>> pages_;   // entries by destination: a port, kGroupBase + group, or kNoRoute
  int32_t own_ = -1;                                      // the page only this table holds (set() writes there), or -1
  const uint16_t* flat_ = nullptr;                        // pages_[0]'s entries if it is the only page (Direct)
  std::vector<Group> groups_;
  std::vector<PortId> ports_;
  uint32_t last_ = 0;                                // the group set last
  std::map<std::vector<PortId>, uint32_t> index_;  // building only: each distinct list's group
};

}  // namespace flexplane
