// The routes file: IPv4 prefixes and their next hops, one per line.
//
//   # comment
//   10.2.0.0/16  via 10.1.0.2                          # gateway; MAC resolved by ARP
//   10.3.0.0/16  via 10.1.0.3 mac 02:00:00:00:00:03    # gateway with a static MAC
//   10.4.0.0/16  port 1 mac 02:00:00:00:00:04          # no gateway address: port + MAC
//   10.5.0.0/16  via 10.9.0.1 port 2                   # gateway reached over port 2
//   10.6.0.0/16  blackhole                             # counted drop
//   neighbor 10.1.0.7 mac 02:00:00:00:00:07            # static ARP entry
//
// The router's own addresses (ports.N.ip in the YAML config) add a connected
// route per port subnet, whose hosts are resolved by ARP, and a /32 "local"
// route per address. A gateway without `port` must lie in a connected subnet.
// Parsing is strict: every error names file:line, the field and the value.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace flexplane::router {

using Mac = std::array<uint8_t, 6>;

struct RouteEntry {
  enum Kind : uint8_t { kVia, kPort, kBlackhole };
  uint32_t prefix = 0;  // host byte order, host bits zero
  uint8_t length = 0;   // prefix length 0..32
  Kind kind = kVia;
  uint32_t gateway = 0;  // kVia
  int port = -1;         // kPort; kVia: explicit port or -1 (from the connected subnets)
  bool has_mac = false;
  Mac mac{};
  int line = 0;
};

struct StaticNeighbor {
  uint32_t ip = 0;
  Mac mac{};
  int port = -1;  // -1: from the connected subnets
  int line = 0;
};

struct RouteSet {
  std::string file;  // for messages
  std::vector<RouteEntry> routes;
  std::vector<StaticNeighbor> neighbors;
};

// Throws ConfigError ("FILE:LINE: field: problem").
RouteSet parse_routes(const std::string& text, const std::string& file);
RouteSet load_routes(const std::string& path);

// Helpers shared with the YAML config.
bool parse_ipv4_addr(const std::string& s, uint32_t* out);              // dotted quad -> host order
bool parse_prefix(const std::string& s, uint32_t* addr, uint8_t* len);  // a.b.c.d/len (host bits kept)
bool parse_mac(const std::string& s, Mac* out);                         // aa:bb:cc:dd:ee:ff
std::string ipv4_str(uint32_t host_order);
std::string mac_str(const Mac& m);

}  // namespace flexplane::router
