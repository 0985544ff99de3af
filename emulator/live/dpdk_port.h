// Bringing up DPDK for the live emulator: the EAL for the life of a run and
// the one ethdev port the communication core owns.
#pragma once

#include <rte_mempool.h>

#include <cstdint>
#include <string>
#include <vector>

namespace flexplane::live {

// rte_eal_init with `eal_args` (the arguments after '--'); rte_eal_cleanup on
// destruction. Throws UsageError with a hint when the EAL refuses them.
class EalSession {
 public:
  explicit EalSession(const std::vector<std::string>& eal_args);
  ~EalSession();
  EalSession(const EalSession&) = delete;
  EalSession& operator=(const EalSession&) = delete;
};

// Checks that DPDK port `port` exists, creates the mbuf pool and sets the
// port up (setup_port). Throws UsageError for a missing or unusable port.
rte_mempool* open_port(uint16_t port);

// Configures `port` with one rx and one tx queue, starts it and enables
// promiscuous mode. Returns "" or an error message.
std::string setup_port(uint16_t port, rte_mempool* pool, uint16_t rx_desc = 1024, uint16_t tx_desc = 1024);

}  // namespace flexplane::live
