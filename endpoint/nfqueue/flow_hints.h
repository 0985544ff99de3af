// Flow-size hints: how an application tells its NFQUEUE endpoint the size of
// a flow it is about to send, for schemes whose endpoints stamp a flow's
// size or remaining size into each request (priority_by_size, pFabric).
//
// The kernel cannot know where an application's message ends, and the real
// packets reach the endpoint in another network namespace (which clears
// skb->mark), so the application sends one datagram per flow to the
// endpoint's Unix socket (a filesystem path: visible across network
// namespaces) *before* it writes the flow's first byte:
//
//   FlowHintSender h("/run/lab/ep3.hints");          // no-op when the path is ""
//   h.send(local_addr, local_port, peer_addr, peer_port, IPPROTO_TCP, bytes);
//
// The endpoint reads hints before it handles the packets that were queued
// after them (nfq_endpoint.cc), so a hint sent before write() is never late.
// A hint names the flow as its packets leave the sender (src = the sender).
#pragma once

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "net/ip_packet.h"

namespace flexplane::endpoint {

struct FlowHintWire {
  uint32_t magic;      // kFlowHintMagic
  uint8_t version;     // 1
  uint8_t protocol;    // IPPROTO_TCP / IPPROTO_UDP
  uint8_t family;      // 4 or 6
  uint8_t reserved;
  uint16_t sport, dport;  // host order
  uint8_t src[16], dst[16];
  uint64_t size_bytes;    // bytes of transport payload the flow will carry
};
inline constexpr uint32_t kFlowHintMagic = 0x46504854;  // "FPHT"
static_assert(sizeof(FlowHintWire) == 56);

struct FlowHint {
  net::IpAddress src, dst;
  uint16_t sport = 0, dport = 0;
  uint8_t protocol = 0;
  uint64_t size_bytes = 0;
};

// Decodes one datagram; false if it is not a valid hint.
inline bool decode_flow_hint(const uint8_t* buf, size_t len, FlowHint* out) {
  if (len != sizeof(FlowHintWire)) return false;
  FlowHintWire w;
  std::memcpy(&w, buf, sizeof w);
  if (w.magic != kFlowHintMagic || w.version != 1 || (w.family != 4 && w.family != 6) || w.reserved != 0)
    return false;
  out->src = net::IpAddress::from_bytes(w.family, w.src);
  out->dst = net::IpAddress::from_bytes(w.family, w.dst);
  out->sport = w.sport;
  out->dport = w.dport;
  out->protocol = w.protocol;
  out->size_bytes = w.size_bytes;
  return true;
}

inline FlowHintWire encode_flow_hint(const FlowHint& h) {
  FlowHintWire w{};
  w.magic = kFlowHintMagic;
  w.version = 1;
  w.protocol = h.protocol;
  w.family = h.src.family;
  w.sport = h.sport;
  w.dport = h.dport;
  std::memcpy(w.src, h.src.bytes, 16);
  std::memcpy(w.dst, h.dst.bytes, 16);
  w.size_bytes = h.size_bytes;
  return w;
}

// The application's side: a datagram socket aimed at the endpoint's path.
class FlowHintSender {
 public:
  explicit FlowHintSender(const std::string& path) {
    if (path.empty() || path.size() >= sizeof(addr_.sun_path)) return;
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    addr_.sun_family = AF_UNIX;
    std::memcpy(addr_.sun_path, path.c_str(), path.size() + 1);
  }
  ~FlowHintSender() {
    if (fd_ >= 0) close(fd_);
  }
  FlowHintSender(const FlowHintSender&) = delete;
  FlowHintSender& operator=(const FlowHintSender&) = delete;

  bool enabled() const { return fd_ >= 0; }
  // Returns false if the hint could not be delivered (no endpoint listening).
  bool send(const FlowHint& h) {
    if (fd_ < 0) return false;
    const FlowHintWire w = encode_flow_hint(h);
    const bool ok = sendto(fd_, &w, sizeof w, 0, reinterpret_cast<const sockaddr*>(&addr_), sizeof addr_) ==
                    ssize_t(sizeof w);
    if (!ok) ++failed_;
    return ok;
  }
  uint64_t failed() const { return failed_; }

 private:
  int fd_ = -1;
  sockaddr_un addr_{};
  uint64_t failed_ = 0;
};

}  // namespace flexplane::endpoint
