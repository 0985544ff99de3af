#include "emulator/live/dpdk_port.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <cstring>
#include <stdexcept>

#include "emulator/run/setup.h"

namespace flexplane::live {

EalSession::EalSession(const std::vector<std::string>& eal_args) {
  std::vector<std::string> eal = {"flexplane-emulator"};
  eal.insert(eal.end(), eal_args.begin(), eal_args.end());
  std::vector<char*> argv;
  for (auto& s : eal) argv.push_back(s.data());
  argv.push_back(nullptr);
  if (rte_eal_init(static_cast<int>(eal.size()), argv.data()) < 0)
    throw UsageError(std::string("DPDK EAL init failed: ") + rte_strerror(rte_errno) +
                     " (EAL arguments go after '--', e.g. -- -l 0-1 --no-huge -m 512 --no-pci --no-shconf "
                     "--vdev=net_af_packet0,iface=veth0)");
}

EalSession::~EalSession() { rte_eal_cleanup(); }

rte_mempool* open_port(uint16_t port) {
  if (rte_eth_dev_count_avail() == 0)
    throw UsageError("no DPDK ports: give a device after '--', e.g. --vdev=net_af_packet0,iface=veth0");
  if (!rte_eth_dev_is_valid_port(port))
    throw UsageError("--port " + std::to_string(port) + ": no such DPDK port (" +
                     std::to_string(rte_eth_dev_count_avail()) + " available)");
  rte_mempool* pool = rte_pktmbuf_pool_create("fp_live", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
  if (!pool) throw std::runtime_error(std::string("mbuf pool: ") + rte_strerror(rte_errno) + " (more EAL memory: -m 512)");
  if (const std::string err = setup_port(port, pool); !err.empty()) throw UsageError(err);
  return pool;
}

std::string setup_port(uint16_t port, rte_mempool* pool, uint16_t rx_desc, uint16_t tx_desc) {
  if (!rte_eth_dev_is_valid_port(port)) return "port " + std::to_string(port) + " does not exist";
  rte_eth_conf conf;
  std::memset(&conf, 0, sizeof conf);
  int r = rte_eth_dev_configure(port, 1, 1, &conf);
  if (r < 0) return "rte_eth_dev_configure(port " + std::to_string(port) + "): " + rte_strerror(-r);
  r = rte_eth_dev_adjust_nb_rx_tx_desc(port, &rx_desc, &tx_desc);
  if (r < 0) return "rte_eth_dev_adjust_nb_rx_tx_desc: " + std::string(rte_strerror(-r));
  const int socket = rte_eth_dev_socket_id(port);
  r = rte_eth_rx_queue_setup(port, 0, rx_desc, socket < 0 ? SOCKET_ID_ANY : socket, nullptr, pool);
  if (r < 0) return "rte_eth_rx_queue_setup: " + std::string(rte_strerror(-r));
  r = rte_eth_tx_queue_setup(port, 0, tx_desc, socket < 0 ? SOCKET_ID_ANY : socket, nullptr);
  if (r < 0) return "rte_eth_tx_queue_setup: " + std::string(rte_strerror(-r));
  r = rte_eth_dev_start(port);
  if (r < 0) return "rte_eth_dev_start: " + std::string(rte_strerror(-r));
  rte_eth_promiscuous_enable(port);  // not every PMD supports it; harmless
  return "";
}

}  // namespace flexplane::live
