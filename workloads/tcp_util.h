// Small socket helpers for the lab's workload programs: addresses, TCP
// options (congestion control, no-delay, DSCP), the clock.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "endpoint/clock.h"
#include "endpoint/nfqueue/flow_hints.h"
#include "net/ip_packet.h"

namespace flexplane::workloads {

using endpoint::mono_ns;
using endpoint::real_ns;

// "10.0.0.1:5001", "[fd00::1]:5001" or (default port) "10.0.0.1".
struct Endpoint {
  sockaddr_storage addr{};
  socklen_t len = 0;
  std::string text;

  static bool parse(const std::string& s, uint16_t default_port, Endpoint* out) {
    std::string host = s, port;
    if (!s.empty() && s[0] == '[') {
      const auto close = s.find(']');
      if (close == std::string::npos) return false;
      host = s.substr(1, close - 1);
      if (close + 1 < s.size()) {
        if (s[close + 1] != ':') return false;
        port = s.substr(close + 2);
      }
    } else if (std::count(s.begin(), s.end(), ':') == 1) {
      host = s.substr(0, s.find(':'));
      port = s.substr(s.find(':') + 1);
    }
    uint32_t p = default_port;
    if (!port.empty()) {
      if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return false;
      p = static_cast<uint32_t>(std::stoul(port));
      if (p == 0 || p > 65535) return false;
    }
    Endpoint e;
    e.text = s;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&e.addr);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&e.addr);
    if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
      v4->sin_family = AF_INET;
      v4->sin_port = htons(static_cast<uint16_t>(p));
      e.len = sizeof(sockaddr_in);
    } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
      v6->sin6_family = AF_INET6;
      v6->sin6_port = htons(static_cast<uint16_t>(p));
      e.len = sizeof(sockaddr_in6);
    } else {
      return false;
    }
    *out = e;
    return true;
  }
  int family() const { return addr.ss_family; }
};

inline void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Congestion control by name ("" = the namespace's default). Root may pick
// any algorithm the kernel has, not only the "allowed" list.
inline void set_congestion_control(int fd, const std::string& cc) {
  if (cc.empty()) return;
  if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc.c_str(), socklen_t(cc.size())) != 0)
    throw std::runtime_error("TCP_CONGESTION '" + cc + "': " + std::strerror(errno) +
                             " (see /proc/sys/net/ipv4/tcp_available_congestion_control)");
}

inline void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// DSCP in the TOS / traffic class (the kernel keeps the ECN bits itself).
inline void set_dscp(int fd, int family, uint8_t dscp) {
  int tos = dscp << 2;
  if (family == AF_INET6)
    setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof tos);
  else
    setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof tos);
}

inline net::IpAddress ip_of(const sockaddr_storage& a, uint16_t* port) {
  if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    *port = ntohs(v6->sin6_port);
    return net::IpAddress::from_bytes(6, v6->sin6_addr.s6_addr);
  }
  const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
  *port = ntohs(v4->sin_port);
  return net::IpAddress::v4(ntohl(v4->sin_addr.s_addr));
}

// Tells the endpoint how many bytes the flow leaving `fd` will carry.
inline void hint_flow(endpoint::FlowHintSender& hints, int fd, uint64_t bytes) {
  if (!hints.enabled() || bytes == 0) return;
  sockaddr_storage local{}, peer{};
  socklen_t ll = sizeof local, pl = sizeof peer;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) != 0 ||
      getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) != 0)
    return;
  endpoint::FlowHint h;
  h.src = ip_of(local, &h.sport);
  h.dst = ip_of(peer, &h.dport);
  h.protocol = IPPROTO_TCP;
  h.size_bytes = bytes;
  hints.send(h);
}

}  // namespace flexplane::workloads
