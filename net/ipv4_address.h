// IPv4 addresses written by people: the one parser every program uses for
// them (the emulator's `live:` section, the endpoints' --emulator / --bind,
// the router's config and routes file), and what makes one usable as a host's
// own address.
//
// Principles
//  - One spelling per address: four decimal fields 0..255 joined by '.', no
//    leading zero ("010" is octal to inet_aton and decimal to sscanf), no
//    sign, space or anything else. glibc's inet_pton(AF_INET) accepts exactly
//    these texts, so no later library call reads a text differently from us,
//    and two different texts are two different addresses.
//  - Parsed once, where the text is read; everything after works on the
//    value (host byte order). Header-only: the config library, the endpoints
//    and the DPDK programs all include it without another link dependency.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace flexplane::net {

struct Ipv4 {
  uint32_t host = 0;  // host byte order: 10.1.2.3 is 0x0A010203

  constexpr Ipv4() = default;
  constexpr explicit Ipv4(uint32_t host_order) : host(host_order) {}
  constexpr Ipv4(uint8_t a, uint8_t b, uint8_t c, uint8_t d)
      : host(uint32_t{a} << 24 | uint32_t{b} << 16 | uint32_t{c} << 8 | d) {}

  constexpr uint32_t network_order() const { return __builtin_bswap32(host); }
  std::string str() const {
    return std::to_string(host >> 24) + "." + std::to_string((host >> 16) & 255) + "." +
           std::to_string((host >> 8) & 255) + "." + std::to_string(host & 255);
  }
  friend constexpr bool operator==(Ipv4 a, Ipv4 b) { return a.host == b.host; }
  friend constexpr bool operator<(Ipv4 a, Ipv4 b) { return a.host < b.host; }
};

// The strict dotted quad above; nullopt for anything else.
constexpr std::optional<Ipv4> parse_ipv4(std::string_view s) {
  uint32_t value = 0;
  size_t i = 0;
  for (int field = 0; field < 4; ++field) {
    if (field > 0) {
      if (i >= s.size() || s[i] != '.') return std::nullopt;
      ++i;
    }
    const size_t start = i;
    uint32_t v = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && i - start < 3) v = v * 10 + static_cast<uint32_t>(s[i++] - '0');
    const size_t digits = i - start;
    if (digits == 0 || v > 255 || (digits > 1 && s[start] == '0')) return std::nullopt;
    value = value << 8 | v;
  }
  if (i != s.size()) return std::nullopt;  // a fourth digit, a fifth field, trailing bytes
  return Ipv4(value);
}

// Why `a` cannot be a host's own (unicast) address, or nullptr when it can.
// The phrase completes "10.0.0.0 is ...".
constexpr const char* not_unicast(Ipv4 a) {
  const uint32_t top = a.host >> 24;
  if (a.host == 0) return "the unspecified address";
  if (a.host == 0xFFFFFFFFu) return "the limited broadcast address";
  if (top == 0) return "in 0.0.0.0/8 (this network, RFC 1122), not unicast";
  if (top == 127) return "a loopback address (127.0.0.0/8), not reachable on a wire";
  if ((top >> 4) == 0xE) return "a multicast address (224.0.0.0/4), not unicast";
  if ((top >> 4) == 0xF) return "a reserved address (240.0.0.0/4), not unicast";
  return nullptr;
}

}  // namespace flexplane::net
