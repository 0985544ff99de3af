// The `live:` section's addresses (issue 21, item 4): parsed once with the
// strict parser (net/ipv4_address.h) and checked at load, before anything
// starts: unicast, no wrap past 255.255.255.255, no address twice (endpoint
// 0 against emulator_ip too). Each error names file:line:col and the field.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "api/params.h"
#include "emulator/config/config.h"
#include "tests/temp_dir.h"

using namespace flexplane;
namespace fs = std::filesystem;

namespace {

// Four endpoints on one ToR; `live` is the live: section (flow style).
void write_config(const fs::path& file, const std::string& live, uint32_t endpoints) {
  std::ofstream(file) << "topology: {kind: single_rack, endpoints: " << endpoints << "}\n"
                      << "workload: {kind: poisson, pattern: all_to_all, load: 0.1, fixed_size_pkts: 1}\n"
                      << "run: {duration_ms: 1}\n"
                      << (live.empty() ? "" : "live: " + live + "\n");
}

std::string load_error(const std::string& live, uint32_t endpoints = 4) {
  testing::TempDir dir("fp_live_addr");
  write_config(dir.path / "x.yaml", live, endpoints);
  try {
    load_experiment((dir.path / "x.yaml").string());
  } catch (const ConfigError& e) {
    std::string out = e.what();
    out.erase(0, dir.path.string().size() + 1);  // "x.yaml:..."
    return out;
  }
  return "ok";
}

LiveConfig loaded(const std::string& live, uint32_t endpoints = 4) {
  testing::TempDir dir("fp_live_addr");
  write_config(dir.path / "x.yaml", live, endpoints);
  return load_experiment((dir.path / "x.yaml").string()).runs.at(0).live;
}

}  // namespace

TEST_CASE("live addresses: parsed once into values", "[config][live]") {
  const LiveConfig d = loaded("");
  CHECK(d.emulator_ip == net::Ipv4(10, 77, 0, 2));
  REQUIRE(d.endpoint_ips.size() == 4);
  CHECK(d.endpoint_ips[0] == net::Ipv4(10, 77, 0, 10));
  CHECK(d.endpoint_ips[3] == net::Ipv4(10, 77, 0, 13));
  const LiveConfig l = loaded("{emulator_ip: 192.168.1.1, endpoint_ips: [10.0.0.1, 10.0.0.9, 10.0.1.0, 10.0.0.3]}");
  CHECK(l.emulator_ip == net::Ipv4(192, 168, 1, 1));
  CHECK(l.endpoint_ips[2] == net::Ipv4(10, 0, 1, 0));
  const LiveConfig f = loaded("{first_endpoint_ip: 10.0.0.254}");
  CHECK(f.endpoint_ips[3] == net::Ipv4(10, 0, 1, 1));  // carries into the next octet
}

TEST_CASE("live addresses: every bad one refused at load, with its field and place", "[config][live]") {
  struct Row {
    const char* live;
    const char* error;
  };
  const Row rows[] = {
      // leading zeros: sscanf read 10.77.0.010 as .10, inet_pton refused it after the EAL had started
      {"{emulator_ip: 10.77.0.010}",
       "x.yaml:4:21: live.emulator_ip: '10.77.0.010' is not an IPv4 address (a.b.c.d, each 0..255 without leading "
       "zeros)"},
      {"{emulator_ip: \" 10.77.0.1\"}",
       "x.yaml:4:21: live.emulator_ip: ' 10.77.0.1' is not an IPv4 address (a.b.c.d, each 0..255 without leading "
       "zeros)"},
      {"{emulator_ip: 255.255.255.255}", "x.yaml:4:21: live.emulator_ip: 255.255.255.255 is the limited broadcast address"},
      {"{emulator_ip: 0.0.0.0}", "x.yaml:4:21: live.emulator_ip: 0.0.0.0 is the unspecified address"},
      {"{emulator_ip: 224.0.0.5}",
       "x.yaml:4:21: live.emulator_ip: 224.0.0.5 is a multicast address (224.0.0.0/4), not unicast"},
      {"{emulator_ip: 127.0.0.1}",
       "x.yaml:4:21: live.emulator_ip: 127.0.0.1 is a loopback address (127.0.0.0/8), not reachable on a wire"},
      {"{first_endpoint_ip: 10.77.0.010}",
       "x.yaml:4:27: live.first_endpoint_ip: '10.77.0.010' is not an IPv4 address (a.b.c.d, each 0..255 without "
       "leading zeros)"},
      // the wrap: 255.255.255.254 + i ran to 0.0.0.0
      {"{first_endpoint_ip: 255.255.255.254}",
       "x.yaml:4:27: live.first_endpoint_ip: 255.255.255.254 is a reserved address (240.0.0.0/4), not unicast"},
      {"{first_endpoint_ip: 223.255.255.254}",
       "x.yaml:4:27: live.first_endpoint_ip: endpoint 2 would be 224.0.0.0, a multicast address (224.0.0.0/4), not "
       "unicast"},
      {"{first_endpoint_ip: 0.0.0.0}", "x.yaml:4:27: live.first_endpoint_ip: 0.0.0.0 is the unspecified address"},
      {"{emulator_ip: 10.0.0.3, first_endpoint_ip: 10.0.0.1}",
       "x.yaml:4:50: live.first_endpoint_ip: endpoint 2 would be 10.0.0.3, live.emulator_ip's address"},
      // endpoint 0 = emulator_ip: the old duplicate loop never ran for index 0
      {"{emulator_ip: 10.77.0.10}",
       "x.yaml:4:21: live.emulator_ip: 10.77.0.10 is endpoint 0's address (first_endpoint_ip defaults to 10.77.0.10)"},
      {"{endpoint_ips: [10.77.0.2, 10.77.0.11, 10.77.0.12, 10.77.0.13]}",
       "x.yaml:4:23: live.endpoint_ips[0]: 10.77.0.2 is live.emulator_ip's address"},
      // 10.77.0.010 and 10.77.0.10 passed as two addresses
      {"{endpoint_ips: [10.77.0.10, 10.77.0.11, 10.77.0.010, 10.77.0.13]}",
       "x.yaml:4:47: live.endpoint_ips[2]: '10.77.0.010' is not an IPv4 address (a.b.c.d, each 0..255 without "
       "leading zeros)"},
      {"{endpoint_ips: [10.77.0.10, 10.77.0.11, 10.77.0.10, 10.77.0.13]}",
       "x.yaml:4:47: live.endpoint_ips[2]: 10.77.0.10 is endpoint 0's address too"},
      {"{endpoint_ips: [10.77.0.10, 10.77.0.11, 10.77.0.255, 255.255.255.255]}",
       "x.yaml:4:60: live.endpoint_ips[3]: 255.255.255.255 is the limited broadcast address"},
      {"{endpoint_ips: [10.77.0.10, [1], 10.77.0.12, 10.77.0.13]}",
       "x.yaml:4:35: live.endpoint_ips[1]: '(not a single value)' is not an IPv4 address (a.b.c.d, each 0..255 "
       "without leading zeros)"},
      {"{endpoint_ips: [10.77.0.10]}", "x.yaml:4:22: live.endpoint_ips: expected a list of 4 addresses (one per endpoint)"},
  };
  for (const Row& r : rows) {
    INFO(r.live);
    CHECK(load_error(r.live) == r.error);
  }
  CHECK(load_error("") == "ok");
  CHECK(load_error("{emulator_ip: 10.0.0.1, endpoint_ips: [10.0.0.2, 10.0.0.3, 10.0.0.4, 10.0.0.5]}") == "ok");
}
