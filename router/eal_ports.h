// How many DPDK ports EAL arguments will create, read from the arguments
// alone, so that the router validates port ids before the EAL starts (and
// `--check` does without starting it).
//
// Principles
//  - Exact or nothing: a count is given only when every device is known to
//    make exactly one port: `--vdev` of a one-port driver, with PCI probing
//    off (`--no-pci`). A PCI device may hold several ports, and without
//    `--no-pci` the EAL probes whatever NICs are bound to DPDK drivers, so
//    those cases are "unknown" (nullopt), never guessed: a guess that is too
//    low would refuse a good config. The start validates again with the
//    devices the EAL actually created.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace flexplane::router {

// `eal` excludes the program name (the words after '--').
inline std::optional<uint16_t> eal_port_count(const std::vector<std::string>& eal) {
  static constexpr std::string_view kOnePort[] = {"net_pcap", "net_ring",   "net_af_packet", "net_af_xdp",
                                                  "net_memif", "net_tap",   "net_tun",       "net_null",
                                                  "net_vhost", "virtio_user"};
  bool no_pci = false;
  uint32_t ports = 0;
  for (size_t i = 0; i < eal.size(); ++i) {
    const std::string& a = eal[i];
    if (a == "--no-pci") no_pci = true;
    std::string dev;
    if (a == "--vdev") {
      if (i + 1 >= eal.size()) return std::nullopt;  // the EAL refuses it anyway
      dev = eal[++i];
    } else if (a.rfind("--vdev=", 0) == 0) {
      dev = a.substr(7);
    } else {
      continue;
    }
    std::string_view driver(dev);
    driver = driver.substr(0, driver.find(','));
    if (dev.find("nodeaction") != std::string::npos) return std::nullopt;  // net_ring creating several ports
    while (!driver.empty() && driver.back() >= '0' && driver.back() <= '9') driver.remove_suffix(1);
    bool known = false;
    for (std::string_view k : kOnePort) known = known || driver == k;
    if (!known) return std::nullopt;  // bonding, failsafe, crypto, ...: not one port each
    ++ports;
  }
  if (!no_pci || ports > UINT16_MAX) return std::nullopt;
  return static_cast<uint16_t>(ports);
}

}  // namespace flexplane::router
