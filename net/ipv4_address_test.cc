#include "net/ipv4_address.h"

#include <arpa/inet.h>

#include <catch2/catch.hpp>

using namespace flexplane::net;

TEST_CASE("parse_ipv4 accepts exactly one spelling per address", "[net][ipv4]") {
  CHECK(parse_ipv4("10.77.0.10") == Ipv4(10, 77, 0, 10));
  CHECK(parse_ipv4("0.0.0.0") == Ipv4(0));
  CHECK(parse_ipv4("255.255.255.255") == Ipv4(0xFFFFFFFFu));
  CHECK(parse_ipv4("1.2.3.4")->str() == "1.2.3.4");
  CHECK(Ipv4(10, 1, 2, 3).network_order() == htonl(0x0A010203u));

  // Each is refused, with the reason it is listed.
  for (const char* bad : {
           "10.77.0.010",      // leading zero: octal to inet_aton, decimal to sscanf
           "010.77.0.10",      // the same in the first field
           "10.77.0.00",       // "00"
           "10.77.0.256",      // field above 255
           "10.77.0.1000",     // four digits
           "10.77.0",          // three fields
           "10.77.0.1.5",      // five fields
           "10.77..1",         // empty field
           ".10.77.0.1",       // leading dot
           "10.77.0.1.",       // trailing dot
           " 10.77.0.1",       // space (sscanf skips it)
           "10.77.0.1 ",       // trailing space
           "10.77.0.+1",       // sign (sscanf takes it)
           "10.77.0.-0",       // sign
           "10.77.0.1x",       // trailing garbage
           "10.77.0.1/24",     // a prefix is not an address
           "0x0A.0.0.1",       // hex
           "10.77.0.1\x1b[31m",  // control bytes
           "",                 //
           "::1",              // IPv6
       }) {
    INFO(bad);
    CHECK_FALSE(parse_ipv4(bad).has_value());
  }
  CHECK_FALSE(parse_ipv4(std::string_view("10.0.0.1\0", 9)).has_value());  // an embedded NUL
}

TEST_CASE("parse_ipv4 agrees with inet_pton on every text it accepts or refuses", "[net][ipv4]") {
  // The comm core, the endpoints' sockets and the kernel all meet these
  // texts: a text we accept must mean the same address to inet_pton, and one
  // inet_pton refuses must be refused here first (issue 21: 10.77.0.010).
  for (const char* s : {"10.77.0.10", "10.77.0.010", "1.2.3.04", "0.0.0.0", "255.255.255.255", "256.1.1.1",
                        "1.2.3", "1.2.3.4.5", " 1.2.3.4", "01.2.3.4", "1.2.3.4 "}) {
    INFO(s);
    in_addr a{};
    const bool pton = inet_pton(AF_INET, s, &a) == 1;
    const auto ours = parse_ipv4(s);
    CHECK(ours.has_value() == pton);
    if (ours && pton) CHECK(ours->network_order() == a.s_addr);
  }
}

TEST_CASE("not_unicast names every address a host cannot own", "[net][ipv4]") {
  CHECK(not_unicast(Ipv4(10, 77, 0, 2)) == nullptr);
  CHECK(not_unicast(Ipv4(1, 0, 0, 0)) == nullptr);
  CHECK(not_unicast(Ipv4(223, 255, 255, 255)) == nullptr);
  CHECK(not_unicast(Ipv4(169, 254, 1, 1)) == nullptr);  // link-local is unicast
  CHECK(std::string(not_unicast(Ipv4(0))) == "the unspecified address");
  CHECK(std::string(not_unicast(Ipv4(0xFFFFFFFFu))) == "the limited broadcast address");
  CHECK(std::string(not_unicast(Ipv4(0, 1, 2, 3))).find("0.0.0.0/8") != std::string::npos);
  CHECK(std::string(not_unicast(Ipv4(127, 0, 0, 1))).find("loopback") != std::string::npos);
  CHECK(std::string(not_unicast(Ipv4(224, 0, 0, 1))).find("multicast") != std::string::npos);
  CHECK(std::string(not_unicast(Ipv4(239, 255, 255, 255))).find("multicast") != std::string::npos);
  CHECK(std::string(not_unicast(Ipv4(240, 0, 0, 1))).find("reserved") != std::string::npos);
}
