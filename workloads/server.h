// The workload server: answers each request (wire.h) with the bytes it asks
// for, then closes. One thread, epoll, non-blocking sockets. Before the
// first byte of a response it tells the host's NFQUEUE endpoint the
// response size (flow hint), for schemes that rank packets by flow size.
#pragma once

#include <cstdint>
#include <string>

namespace flexplane::workloads {

struct ServerOptions {
  std::string bind = "0.0.0.0";  // "::" accepts IPv4 and IPv6
  uint16_t port = 5001;
  std::string cc;                 // congestion control ("" = default)
  std::string hints;              // flow-hint socket path ("" = none)
  double duration_s = 0;          // stop after this long (0 = until SIGINT/SIGTERM)
  int syn_dscp = -1;              // DSCP of the listening socket (SYN-ACKs), and of responses that ask
                                  // for none: 0; -1 = leave the default everywhere
  bool quiet = false;
};

// Returns the exit status (0 ok, 1 socket error).
int run_server(const ServerOptions& o);

}  // namespace flexplane::workloads
