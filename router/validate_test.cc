// RouterConfig::validate(), the one check `--check` and the start share
// (issue 21: --check said ok to configs whose start exited 2), and the port
// count read from EAL arguments before the EAL starts. No DPDK needed.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "api/params.h"
#include "router/config.h"
#include "router/eal_ports.h"
#include "router/routes.h"
#include "tests/temp_dir.h"

using namespace flexplane;
using namespace flexplane::router;
namespace fs = std::filesystem;

namespace {

// Loads r.yaml (and routes.txt when `routes` is given) with `num_ports`;
// returns the ConfigError's text relative to the folder, or "ok".
std::string check(const std::string& yaml, const char* routes, std::optional<uint16_t> num_ports) {
  testing::TempDir d("fpr_validate");
  std::ofstream(d.path / "r.yaml") << yaml;
  if (routes) std::ofstream(d.path / "routes.txt") << routes;
  try {
    load_config((d.path / "r.yaml").string(), num_ports);
  } catch (const ConfigError& e) {
    std::string m = e.what();
    for (size_t at; (at = m.find(d.path.string() + "/")) != std::string::npos;) m.erase(at, d.path.string().size() + 1);
    return m;
  }
  return "ok";
}

const std::string kPorts = "ports: {0: {ip: 10.1.0.1/24}, 1: {ip: 10.2.0.1/24}}\n";

}  // namespace

TEST_CASE("validate: what the start refuses, --check refuses, with its place", "[router][config]") {
  struct Row {
    const char* what;
    std::string yaml;
    const char* routes;
    std::string error;
  };
  const std::vector<Row> rows = {
      {"a port the devices lack", "ports: {0: {ip: 10.1.0.1/24}, 1: {ip: 10.2.0.1/24}, 5: {ip: 10.5.0.1/24}}\n",
       nullptr, "r.yaml:1:56: ports.5: no such port (the EAL arguments create 2 ports)"},
      {"a routes line naming a port the devices lack", kPorts + "routes: routes.txt\n",
       "10.9.0.0/16 port 5 mac 02:00:00:00:00:01\n", "routes.txt:1: port: 5 does not exist (the router has 2 ports)"},
      {"a gateway outside every subnet", kPorts + "routes: routes.txt\n", "10.9.0.0/16 via 10.7.0.2\n",
       "routes.txt:1: via: 10.7.0.2 is in no port's subnet (give 'port N', or an address in ports.N.ip's subnet)"},
      {"a gateway equal to the router's address", kPorts + "routes: routes.txt\n", "\n10.9.0.0/16 via 10.2.0.1\n",
       "routes.txt:2: via: 10.2.0.1 is the router's own address"},
      {"a static neighbour outside every subnet", kPorts + "routes: routes.txt\n",
       "neighbor 10.8.0.1 mac 02:00:00:00:00:01\n", "routes.txt:1: neighbor: 10.8.0.1 is in no port's subnet (give 'port N')"},
      {"lstf (reads endpoint-stamped data)", "router: {scheme: lstf}\n" + kPorts, nullptr,
       "r.yaml:1:9: router: scheme 'lstf' reads 4 bytes of endpoint-stamped custom data, which real packets do not "
       "carry: router mode cannot run it (run.queueing: false forwards without a scheme)"},
      {"lstf on one port", "ports: {0: {ip: 10.1.0.1/24}, 1: {ip: 10.2.0.1/24, router: {scheme: lstf}}}\n", nullptr,
       "r.yaml:1:60: ports.1.router: scheme 'lstf' reads 4 bytes of endpoint-stamped custom data, which real packets "
       "do not carry: router mode cannot run it (run.queueing: false forwards without a scheme)"},
      {"a load balancer (the route table picks ports)", "router: {scheme: droptail, load_balancer: spray}\n" + kPorts,
       nullptr,
       "r.yaml:1:9: router.load_balancer: router mode picks the output port by its route table (routes:); a load "
       "balancer ('spray') only runs in the emulator"},
      {"routes naming a folder", kPorts + "routes: .\n", nullptr, "r.yaml:2:9: routes: '.' is a folder, not a file"},
      {"a gateway with a leading zero", kPorts + "routes: routes.txt\n", "10.9.0.0/16 via 10.1.0.02\n",
       "routes.txt:1: via: '10.1.0.02' is not an IPv4 address (a.b.c.d, each 0..255 without leading zeros)"},
      {"a broadcast gateway", kPorts + "routes: routes.txt\n", "10.9.0.0/16 via 255.255.255.255 port 1\n",
       "routes.txt:1: via: 255.255.255.255 is the limited broadcast address"},
      {"a multicast neighbour", kPorts + "routes: routes.txt\n", "neighbor 224.0.0.1 mac 02:00:00:00:00:01 port 0\n",
       "routes.txt:1: neighbor: 224.0.0.1 is a multicast address (224.0.0.0/4), not unicast"},
      {"a port address with a leading zero", "ports: {0: {ip: 10.1.0.01/24}}\n", nullptr,
       "r.yaml:1:17: ports.0.ip: '10.1.0.01/24' is not a unicast address with a prefix length 1..30 (e.g. "
       "10.1.0.1/24)"},
      {"a prefix length with a leading zero", "ports: {0: {ip: 10.1.0.1/024}}\n", nullptr,
       "r.yaml:1:17: ports.0.ip: '10.1.0.1/024' is not a unicast address with a prefix length 1..30 (e.g. "
       "10.1.0.1/24)"},
      {"a name with a control byte", "name: \"r\\e[2J\"\n", nullptr,
       "r.yaml:1:7: name: 'r\x1b[2J' must be non-empty, without commas, spaces, quotes or control characters"},
  };
  for (const Row& r : rows) {
    INFO(r.what);
    CHECK(check(r.yaml, r.routes, 2) == r.error);
  }
  // Without a port count (--check with no EAL arguments), only the port ids
  // go unchecked: everything else fails the same way.
  for (size_t i = 2; i < rows.size(); ++i) {
    INFO(rows[i].what);
    CHECK(check(rows[i].yaml, rows[i].routes, std::nullopt) == rows[i].error);
  }
  CHECK(check(rows[0].yaml, rows[0].routes, std::nullopt) == "ok");
  CHECK(check(rows[1].yaml, rows[1].routes, std::nullopt) == "ok");
  // run.queueing false runs no scheme: lstf is then harmless.
  CHECK(check("router: {scheme: lstf}\nrun: {queueing: false}\n" + kPorts, nullptr, 2) == "ok");
  CHECK(check(kPorts, nullptr, 0) ==
        "no DPDK ports: give devices in the EAL arguments (e.g. --vdev net_af_packet0,iface=veth0)");
  CHECK(check(kPorts + "routes: routes.txt\n", "10.9.0.0/16 via 10.1.0.2\n0.0.0.0/0 via 10.2.0.9\n", 2) == "ok");
}

TEST_CASE("eal_port_count: exact from --vdev with --no-pci, else unknown", "[router][config]") {
  using V = std::vector<std::string>;
  CHECK(eal_port_count({"-l", "0", "--no-pci", "--vdev", "net_pcap0,rx_pcap=a.pcap", "--vdev=net_af_packet1,iface=x"})
        == uint16_t{2});
  CHECK(eal_port_count({"--no-pci"}) == uint16_t{0});
  CHECK(eal_port_count(V{}) == std::nullopt);                                    // --check alone
  CHECK(eal_port_count({"--vdev", "net_ring0"}) == std::nullopt);                // PCI NICs may add ports
  CHECK(eal_port_count({"--no-pci", "--vdev", "net_bonding0,mode=1"}) == std::nullopt);  // not one port each
  CHECK(eal_port_count({"--no-pci", "--vdev", "net_ring0,nodeaction=r1:0:CREATE"}) == std::nullopt);
  CHECK(eal_port_count({"--no-pci", "--vdev"}) == std::nullopt);
}
