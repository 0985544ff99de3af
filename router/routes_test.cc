// The routes file, the YAML config and how routes compile into FIB entries
// (no DPDK needed: the neighbour table and compile_routes are plain C++).
#include <catch2/catch.hpp>
#include <yaml-cpp/yaml.h>

#include "api/params.h"
#include "router/config.h"
#include "router/fib.h"
#include "router/routes.h"

using namespace flexplane;
using namespace flexplane::router;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

uint32_t ip(const char* s) {
  uint32_t v = 0;
  REQUIRE(parse_ipv4_addr(s, &v));
  return v;
}

}  // namespace

TEST_CASE("routes file: every line form", "[router][routes]") {
  const RouteSet rs = parse_routes(
      "# a comment\n"
      "10.2.0.0/16  via 10.1.0.2\n"
      "10.3.0.0/16  via 10.1.0.3 mac 02:00:00:00:00:03   # static MAC\n"
      "\n"
      "10.4.0.0/16  port 1 mac 02:00:00:00:00:04\n"
      "10.5.0.0/16  via 10.9.0.1 port 2\n"
      "10.6.0.0/16  blackhole\n"
      "0.0.0.0/0    via 10.1.0.254\n"
      "neighbor 10.1.0.7 mac 02:00:00:00:00:07\n",
      "r.txt");
  REQUIRE(rs.routes.size() == 6);
  CHECK(rs.routes[0].kind == RouteEntry::kVia);
  CHECK(rs.routes[0].gateway == ip("10.1.0.2"));
  CHECK(rs.routes[0].port == -1);
  CHECK_FALSE(rs.routes[0].has_mac);
  CHECK(rs.routes[1].has_mac);
  CHECK(mac_str(rs.routes[1].mac) == "02:00:00:00:00:03");
  CHECK(rs.routes[2].kind == RouteEntry::kPort);
  CHECK(rs.routes[2].port == 1);
  CHECK(rs.routes[3].port == 2);
  CHECK(rs.routes[4].kind == RouteEntry::kBlackhole);
  CHECK(rs.routes[5].length == 0);
  CHECK(rs.routes[5].line == 8);
  REQUIRE(rs.neighbors.size() == 1);
  CHECK(rs.neighbors[0].ip == ip("10.1.0.7"));
}

TEST_CASE("routes file: errors name file, line, field and value", "[router][routes]") {
  auto err = [](const char* text) { return error_of([&] { parse_routes(text, "r.txt"); }); };
  CHECK(err("10.2.0.0/33 via 10.1.0.2") == "r.txt:1: prefix: '10.2.0.0/33' is not an IPv4 prefix (a.b.c.d/len), nor 'neighbor'");
  CHECK(err("\n10.2.0.1/16 via 10.1.0.2") ==
        "r.txt:2: prefix: '10.2.0.1/16' has host bits set (did you mean 10.2.0.0/16?)");
  CHECK(err("10.2.0.0/16 via 10.1.0") ==
        "r.txt:1: via: '10.1.0' is not an IPv4 address (a.b.c.d, each 0..255 without leading zeros)");
  CHECK(err("10.2.0.0/16 via 10.1.0.2 mac 02:00:00:00:00") ==
        "r.txt:1: mac: '02:00:00:00:00' is not a MAC address (aa:bb:cc:dd:ee:ff)");
  CHECK(err("10.2.0.0/16 via 10.1.0.2 mac 01:00:5e:00:00:01") == "r.txt:1: mac: '01:00:5e:00:00:01' is a multicast address");
  CHECK(err("10.2.0.0/16 port 1") == "r.txt:1: port: a route without 'via' needs 'mac' (the next hop's MAC address)");
  CHECK(err("10.2.0.0/16") == "r.txt:1: next hop: missing (give 'via ADDR', 'port N mac MAC' or 'blackhole')");
  CHECK(err("10.2.0.0/16 through 10.1.0.2") == "r.txt:1: unknown keyword 'through' (known: via, port, mac, blackhole)");
  CHECK(err("10.2.0.0/16 via") == "r.txt:1: via: missing");
  CHECK(err("10.2.0.0/16 blackhole via 10.1.0.1") == "r.txt:1: blackhole: takes no via, port or mac");
  CHECK(err("10.2.0.0/16 via 10.1.0.2\n10.2.0.0/16 via 10.1.0.3") == "r.txt:2: prefix: 10.2.0.0/16 already routed on line 1");
  CHECK(err("neighbor 10.1.0.7") == "r.txt:1: neighbor: needs 'mac'");
  CHECK(err("10.2.0.0/16 port x mac 02:00:00:00:00:01") == "r.txt:1: port: 'x' is not a port number");
}

TEST_CASE("compile_routes: next hops, connected and local routes", "[router][routes]") {
  const RouteSet rs = parse_routes(
      "10.2.0.0/16 via 10.1.0.2\n"
      "10.3.0.0/16 via 10.1.0.3 mac 02:00:00:00:00:03\n"
      "10.4.0.0/16 port 1 mac 02:00:00:00:00:04\n"
      "10.6.0.0/16 blackhole\n"
      "neighbor 10.5.0.9 mac 02:00:00:00:00:09\n",
      "r.txt");
  std::vector<PortAddress> ports = {{true, ip("10.1.0.1"), 24}, {true, ip("10.5.0.1"), 24}};
  NeighborTable nb(16);
  const auto entries = compile_routes(rs, ports, {}, nb);
  auto hop_of = [&](const char* prefix, uint8_t len) -> int64_t {
    for (const auto& e : entries)
      if (e.prefix == ip(prefix) && e.length == len) return e.hop;
    return -1;
  };
  const int64_t gw = hop_of("10.2.0.0", 16);
  REQUIRE(gw >= 0);
  CHECK(nb[gw].port == 0);
  CHECK(nb[gw].ip == ip("10.1.0.2"));
  CHECK_FALSE(nb[gw].mac.load() & kMacResolved);  // to resolve by ARP
  const int64_t st = hop_of("10.3.0.0", 16);
  CHECK(mac_str(unpack_mac(nb[st].mac.load())) == "02:00:00:00:00:03");
  CHECK(nb[st].mac.load() & kMacResolved);
  CHECK(nb[hop_of("10.4.0.0", 16)].port == 1);
  CHECK(hop_of("10.6.0.0", 16) == kHopBlackhole);
  const int64_t host = hop_of("10.5.0.9", 32);  // static neighbour on a connected subnet: a host route
  CHECK(nb[host].port == 1);
  CHECK(hop_of("10.1.0.0", 24) == kHopConnected + 0);
  CHECK(hop_of("10.5.0.0", 24) == kHopConnected + 1);
  CHECK(hop_of("10.1.0.1", 32) == kHopLocal);
  CHECK(hop_of("0.0.0.0", 0) == -1);  // no default route in this file
  CHECK(hop_of("10.1.0.255", 32) == kHopLocal);  // directed broadcast: not forwarded
  CHECK(nb.find(1, ip("10.5.0.9")) == host);
  CHECK(nb.find(1, ip("10.5.0.10")) == -1);
  // Compiling again reuses the neighbour entries (stable indices across reloads).
  const uint32_t size = nb.size();
  compile_routes(rs, ports, {}, nb);
  CHECK(nb.size() == size);
  // ARP never overrides a static MAC.
  Mac other{};
  other[0] = 2;
  nb.set_mac(static_cast<uint32_t>(st), other, false);
  CHECK(mac_str(unpack_mac(nb[st].mac.load())) == "02:00:00:00:00:03");
}

TEST_CASE("compile_routes: a default route is two /1s that explicit /1s override", "[router][routes]") {
  std::vector<PortAddress> ports = {{true, ip("10.1.0.1"), 24}};
  NeighborTable nb(16);
  const auto e = compile_routes(parse_routes("0.0.0.0/0 via 10.1.0.2\n128.0.0.0/1 via 10.1.0.3\n", "r.txt"), ports, {}, nb);
  const uint32_t gw2 = nb.by_ip(0, ip("10.1.0.2")), gw3 = nb.by_ip(0, ip("10.1.0.3"));
  REQUIRE(e.size() >= 3);
  CHECK((e[0].prefix == 0 && e[0].length == 1 && e[0].hop == gw2));
  CHECK((e[1].prefix == 0x80000000u && e[1].length == 1 && e[1].hop == gw2));
  bool overridden = false;  // the explicit /1 comes later, so it wins
  for (size_t i = 2; i < e.size(); ++i) overridden = overridden || (e[i].prefix == 0x80000000u && e[i].length == 1 && e[i].hop == gw3);
  CHECK(overridden);
}

TEST_CASE("compile_routes: errors name the routes file line", "[router][routes]") {
  std::vector<PortAddress> ports = {{true, ip("10.1.0.1"), 24}, {false, 0, 0}};
  NeighborTable nb(16);
  auto err = [&](const char* text) { return error_of([&] { compile_routes(parse_routes(text, "r.txt"), ports, {}, nb); }); };
  CHECK(err("10.2.0.0/16 via 10.7.0.2") ==
        "r.txt:1: via: 10.7.0.2 is in no port's subnet (give 'port N', or an address in ports.N.ip's subnet)");
  CHECK(err("10.2.0.0/16 port 5 mac 02:00:00:00:00:01") == "r.txt:1: port: 5 does not exist (the router has 2 ports)");
  CHECK(err("10.2.0.0/16 via 10.1.0.1") == "r.txt:1: via: 10.1.0.1 is the router's own address");
  CHECK(err("neighbor 10.8.0.1 mac 02:00:00:00:00:01") == "r.txt:1: neighbor: 10.8.0.1 is in no port's subnet (give 'port N')");
  NeighborTable tiny(1);
  CHECK(error_of([&] {
          compile_routes(parse_routes("10.2.0.0/16 via 10.1.0.2\n10.3.0.0/16 via 10.1.0.3", "r.txt"), ports, {}, tiny);
        }) == "neighbour table full (1 next hops)");
}

TEST_CASE("router config: keys, defaults, per-port overrides and errors", "[router][config]") {
  const char* text = R"(
name: r0
router: {scheme: dctcp, queue_manager: {k_pkts: 20}}
ports:
  default: {rate_mbps: 100}
  1: {ip: 10.2.0.1/24, rate_mbps: 50, router: {queue_manager: {k_pkts: 10}}}
  0: {ip: 10.1.0.1/24}
run: {burst: 32, occupancy_interval_us: 100}
)";
  const RouterConfig c = parse_config(YAML::Load(text), "r.yaml", ".");
  CHECK(c.name == "r0");
  CHECK(c.run.burst == 32);
  const PortSettings p0 = c.port(0), p1 = c.port(1), p2 = c.port(2);
  CHECK(p0.rate_mbps == 100);
  CHECK(p1.rate_mbps == 50);
  CHECK(p2.rate_mbps == 100);
  CHECK_FALSE(p2.has_ip);
  CHECK(p0.scheme.scheme == "dctcp");
  ResolvedRouter r0, r1;
  build_router(p0.scheme, &r0);
  build_router(p1.scheme, &r1);
  CHECK(r0.queue_manager == "dctcp");
  CHECK(r0.queue_manager_params[0] == std::make_pair(std::string("k_pkts"), std::string("20")));
  CHECK(r1.queue_manager_params[0] == std::make_pair(std::string("k_pkts"), std::string("10")));
  CHECK_NOTHROW(c.validate(2));
  CHECK_NOTHROW(c.validate(std::nullopt));
  CHECK(error_of([&] { c.validate(1); }) == "r.yaml:6:6: ports.1: no such port (the EAL arguments create 1 port)");

  auto err = [](const std::string& yaml) { return error_of([&] { parse_config(YAML::Load(yaml), "r.yaml", "."); }); };
  CHECK(err("bogus: 1") == "r.yaml:1:1: bogus: unknown key 'bogus' (known: name, seed, router, ports, routes, run, "
                           "output, description)");
  CHECK(err("ports: {0: {ip: 10.1.0.0/24}}") ==
        "r.yaml:1:17: ports.0.ip: '10.1.0.0/24' is the subnet's network or broadcast address");
  CHECK(err("ports: {0: {ip: 10.1.0.1}}") ==
        "r.yaml:1:17: ports.0.ip: '10.1.0.1' is not a unicast address with a prefix length 1..30 (e.g. 10.1.0.1/24)");
  CHECK(err("ports: {0: {ip: 10.1.0.1/24}, 1: {ip: 10.1.0.2/16}}") ==
        "r.yaml:1:39: ports.1.ip: subnet overlaps port 0's 10.1.0.1/24");
  CHECK(err("ports: {x: {}}") == "r.yaml:1:9: ports.x: ports are 'default' or a DPDK port id (0, 1, ...)");
  CHECK(err("ports: {0: {rate_mbps: -1}}") == "r.yaml:1:24: ports.0.rate_mbps: '-1' is not a number in [0, 1e+07]");
  CHECK(err("router: {scheme: dctcp, queue_manager: {k: 3}}").find("unknown parameter 'k'") != std::string::npos);
  CHECK(err("router: {scheme: nosuch}").find("unknown scheme 'nosuch'") != std::string::npos);
  CHECK(err("ports: {1: {router: {scheduler: {name: drr, quantum_bytes: 0}}}}")
            .find("parameter 'quantum_bytes': value 0 is outside [1, 1.04858e+06]") != std::string::npos);
  CHECK(err("run: {ring_size: 1000}") == "r.yaml:1:18: run.ring_size: 1000 is not a power of two");
  const std::string missing = err("routes: /nonexistent/routes.txt");  // wording: yaml::require_input_file
  CHECK(missing.rfind("r.yaml:1:9: routes: ", 0) == 0);
  CHECK(missing.find("'/nonexistent/routes.txt'") != std::string::npos);
}
