// Test helper: the DPDK EAL, initialised once per test binary, on virtual
// devices only (no hugepages, no PCI, no shared runtime files), plus one
// mbuf pool. net_ring ports are made from rte_rings with rte_eth_from_rings,
// so a test injects frames and reads replies with no network at all.
#pragma once

#include <dlfcn.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace flexplane::live::testing {

// DPDK makes a runtime folder named by --file-prefix even with --no-shconf
// and never deletes it: each test process names its own (stem + pid), and
// removes it at exit. Call right after rte_eal_init succeeded.
inline std::string own_file_prefix(const char* stem) { return std::string(stem) + std::to_string(getpid()); }
inline void remove_runtime_dir_at_exit() {
  static std::string dir = rte_eal_get_runtime_dir();
  std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  });
}

// --no-huge implies legacy memory, which DPDK 22.11 refuses together with
// --in-memory; --no-shconf keeps the run free of shared files instead.
inline bool eal_ready() {
  static const bool ok = [] {
    std::vector<std::string> args = {"live_tests", "-l", "0", "--no-huge", "-m", "256", "--no-pci", "--no-shconf",
                                      "--no-telemetry", "--log-level=error", "--file-prefix=" + own_file_prefix("fplt")};
    std::vector<char*> argv;
    for (auto& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    if (rte_eal_init(static_cast<int>(args.size()), argv.data()) < 0) {
      std::fprintf(stderr, "rte_eal_init: %s\n", rte_strerror(rte_errno));
      return false;
    }
    remove_runtime_dir_at_exit();
    return true;
  }();
  return ok;
}

inline rte_mempool* test_pool() {
  static rte_mempool* pool =
      eal_ready() ? rte_pktmbuf_pool_create("fp_test_pool", 16383, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY)
                  : nullptr;
  return pool;
}

// A net_ring port: the test enqueues frames on `to_port` (the port receives
// them) and dequeues what the port sent from `from_port`.
struct RingPort {
  uint16_t port = 0;
  rte_ring* to_port = nullptr;
  rte_ring* from_port = nullptr;
};

inline RingPort make_ring_port(unsigned ring_size = 4096) {
  static int serial = 0;
  const int id = serial++;
  RingPort p;
  const std::string a = "fpt_rx" + std::to_string(id), b = "fpt_tx" + std::to_string(id);
  p.to_port = rte_ring_create(a.c_str(), ring_size, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
  p.from_port = rte_ring_create(b.c_str(), ring_size, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
  if (!p.to_port || !p.from_port) std::abort();
  // The ring PMD is a plugin (not in pkg-config's libdpdk): find its
  // rte_eth_from_rings at run time instead of linking it.
  using FromRings = int (*)(const char*, rte_ring* const[], unsigned, rte_ring* const[], unsigned, unsigned);
  static FromRings from_rings = [] {
    void* h = dlopen("librte_net_ring.so.23", RTLD_NOW | RTLD_NOLOAD);
    if (!h) h = dlopen("librte_net_ring.so.23", RTLD_NOW);
    if (!h) h = dlopen("librte_net_ring.so", RTLD_NOW);
    return h ? reinterpret_cast<FromRings>(dlsym(h, "rte_eth_from_rings")) : nullptr;
  }();
  if (!from_rings) {
    std::fprintf(stderr, "rte_eth_from_rings not found (librte_net_ring): %s\n", dlerror());
    std::abort();
  }
  const int port = from_rings(("net_ring_fpt" + std::to_string(id)).c_str(), &p.to_port, 1, &p.from_port, 1,
                                      SOCKET_ID_ANY);
  if (port < 0) std::abort();
  p.port = static_cast<uint16_t>(port);
  return p;
}

}  // namespace flexplane::live::testing
