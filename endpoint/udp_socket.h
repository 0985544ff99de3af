// The endpoint's UDP socket to the emulator: bound to the endpoint's own
// address (the emulator knows an endpoint by its source address, so it must
// stay constant for a session) and connected, so only the emulator's
// datagrams arrive. Non-blocking.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "net/ipv4_address.h"

namespace flexplane::endpoint {

// A socket address for `ip`:`port`.
inline sockaddr_in socket_addr(net::Ipv4 ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = ip.network_order();
  return a;
}

// Parses "a.b.c.d" or "a.b.c.d:port" (port defaults to default_port), the
// address with the project's one strict parser (net/ipv4_address.h).
inline bool parse_addr(const std::string& text, uint16_t default_port, sockaddr_in* out) {
  std::string host = text;
  uint32_t port = default_port;
  const auto colon = text.rfind(':');
  if (colon != std::string::npos) {
    host = text.substr(0, colon);
    const std::string p = text.substr(colon + 1);
    if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos) return false;
    port = static_cast<uint32_t>(std::stoul(p));
    if (port == 0 || port > 65535) return false;
  }
  const auto ip = net::parse_ipv4(host);
  if (!ip) return false;
  *out = socket_addr(*ip, static_cast<uint16_t>(port));
  return true;
}

inline std::string addr_text(const sockaddr_in& a) {
  char buf[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf);
  return std::string(buf) + ":" + std::to_string(ntohs(a.sin_port));
}

// A non-blocking UDP socket bound to `bind` and connected to `emulator`.
// Throws std::runtime_error naming the address at fault.
inline int open_udp_socket(const sockaddr_in& bind, const sockaddr_in& emulator) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  int buf = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&bind), sizeof bind) < 0) {
    const std::string e = std::strerror(errno);
    close(fd);
    throw std::runtime_error("cannot bind to " + addr_text(bind) + ": " + e +
                             " (is the address configured on this host / namespace?)");
  }
  if (connect(fd, reinterpret_cast<const sockaddr*>(&emulator), sizeof emulator) < 0) {
    const std::string e = std::strerror(errno);
    close(fd);
    throw std::runtime_error("cannot connect UDP socket to the emulator " + addr_text(emulator) + ": " + e);
  }
  return fd;
}

}  // namespace flexplane::endpoint
