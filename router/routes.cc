#include "router/routes.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "api/params.h"
#include "emulator/config/yaml_util.h"
#include "net/ipv4_address.h"

namespace flexplane::router {

bool parse_ipv4_addr(const std::string& s, uint32_t* out) {
  const auto a = net::parse_ipv4(s);  // the project's one strict parser (no leading zeros, signs, spaces)
  if (a) *out = a->host;
  return a.has_value();
}

bool parse_prefix(const std::string& s, uint32_t* addr, uint8_t* len) {
  const auto slash = s.find('/');
  if (slash == std::string::npos) return false;
  const std::string bits = s.substr(slash + 1);
  if (bits.empty() || bits.size() > 2 || bits.find_first_not_of("0123456789") != std::string::npos ||
      (bits.size() > 1 && bits[0] == '0'))
    return false;
  const unsigned l = static_cast<unsigned>(std::stoul(bits));
  if (l > 32) return false;
  if (!parse_ipv4_addr(s.substr(0, slash), addr)) return false;
  *len = static_cast<uint8_t>(l);
  return true;
}

bool parse_mac(const std::string& s, Mac* out) {
  unsigned v[6];
  char tail;
  if (std::sscanf(s.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
    return false;
  if (s.size() != 17) return false;
  for (int i = 0; i < 6; ++i) (*out)[i] = static_cast<uint8_t>(v[i]);
  return true;
}

std::string ipv4_str(uint32_t a) { return net::Ipv4(a).str(); }

std::string mac_str(const Mac& m) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return buf;
}

namespace {

struct LineParser {
  const std::string& file;
  int line;
  std::vector<std::string> words;
  size_t next = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError(file + ":" + std::to_string(line) + ": " + what);
  }
  bool done() const { return next >= words.size(); }
  std::string take(const char* field) {
    if (done()) fail(std::string(field) + ": missing");
    return words[next++];
  }
  uint32_t take_ip(const char* field) {
    const std::string w = take(field);
    uint32_t ip;
    if (!parse_ipv4_addr(w, &ip))
      fail(std::string(field) + ": '" + w + "' is not an IPv4 address (a.b.c.d, each 0..255 without leading zeros)");
    if (const char* why = net::not_unicast(net::Ipv4(ip))) fail(std::string(field) + ": " + w + " is " + why);
    return ip;
  }
  Mac take_mac() {
    const std::string w = take("mac");
    Mac m;
    if (!parse_mac(w, &m)) fail("mac: '" + w + "' is not a MAC address (aa:bb:cc:dd:ee:ff)");
    if (m[0] & 1) fail("mac: '" + w + "' is a multicast address");
    return m;
  }
  int take_port() {
    const std::string w = take("port");
    if (w.empty() || w.size() > 4 || w.find_first_not_of("0123456789") != std::string::npos)
      fail("port: '" + w + "' is not a port number");
    return std::stoi(w);
  }
};

}  // namespace

RouteSet parse_routes(const std::string& text, const std::string& file) {
  RouteSet set;
  set.file = file;
  std::istringstream in(text);
  std::string raw;
  int lineno = 0;
  while (std::getline(in, raw)) {
    ++lineno;
    const auto hash = raw.find('#');
    if (hash != std::string::npos) raw.resize(hash);
    LineParser p{file, lineno, {}};
    std::istringstream ws(raw);
    for (std::string w; ws >> w;) p.words.push_back(w);
    if (p.words.empty()) continue;

    if (p.words[0] == "neighbor" || p.words[0] == "neighbour") {
      p.next = 1;
      StaticNeighbor n;
      n.line = lineno;
      n.ip = p.take_ip("neighbor");
      bool have_mac = false;
      while (!p.done()) {
        const std::string key = p.take("keyword");
        if (key == "mac") {
          n.mac = p.take_mac();
          have_mac = true;
        } else if (key == "port") {
          n.port = p.take_port();
        } else {
          p.fail("unknown keyword '" + key + "' (known: mac, port)");
        }
      }
      if (!have_mac) p.fail("neighbor: needs 'mac'");
      set.neighbors.push_back(n);
      continue;
    }

    RouteEntry r;
    r.line = lineno;
    const std::string pfx = p.take("prefix");
    if (!parse_prefix(pfx, &r.prefix, &r.length))
      p.fail("prefix: '" + pfx + "' is not an IPv4 prefix (a.b.c.d/len), nor 'neighbor'");
    const uint32_t mask = r.length ? ~0u << (32 - r.length) : 0;
    if (r.prefix & ~mask) p.fail("prefix: '" + pfx + "' has host bits set (did you mean " +
                                 ipv4_str(r.prefix & mask) + "/" + std::to_string(r.length) + "?)");
    bool via = false, port = false, blackhole = false;
    while (!p.done()) {
      const std::string key = p.take("keyword");
      if (key == "via") {
        r.gateway = p.take_ip("via");
        via = true;
      } else if (key == "port") {
        r.port = p.take_port();
        port = true;
      } else if (key == "mac") {
        r.mac = p.take_mac();
        r.has_mac = true;
      } else if (key == "blackhole") {
        blackhole = true;
      } else {
        p.fail("unknown keyword '" + key + "' (known: via, port, mac, blackhole)");
      }
    }
    if (blackhole) {
      if (via || port || r.has_mac) p.fail("blackhole: takes no via, port or mac");
      r.kind = RouteEntry::kBlackhole;
    } else if (via) {
      r.kind = RouteEntry::kVia;
    } else if (port) {
      if (!r.has_mac) p.fail("port: a route without 'via' needs 'mac' (the next hop's MAC address)");
      r.kind = RouteEntry::kPort;
    } else {
      p.fail("next hop: missing (give 'via ADDR', 'port N mac MAC' or 'blackhole')");
    }
    for (const auto& other : set.routes)
      if (other.prefix == r.prefix && other.length == r.length)
        p.fail("prefix: " + pfx + " already routed on line " + std::to_string(other.line));
    set.routes.push_back(r);
  }
  return set;
}

RouteSet load_routes(const std::string& path) {
  return parse_routes(yaml::read_file_text(path), path);  // a folder or unreadable file is refused, not read as empty
}

}  // namespace flexplane::router
