// The lab's request format: a client opens a TCP connection to a server and
// sends one 16-byte request; the server answers with `size` bytes (0: a
// stream until the client closes) and closes. All workloads (RPC, bulk,
// incast) are built from it, so data always flows server -> client.
//
//   0  u32 magic "FPRQ"
//   4  u8  dscp for the response (0..63), or 255 = leave the default
//   5  u8[3] reserved 0
//   8  u64 size in bytes, big-endian
#pragma once

#include <cstdint>
#include <cstring>

namespace flexplane::workloads {

inline constexpr uint32_t kRequestMagic = 0x46505251;  // "FPRQ"
inline constexpr size_t kRequestBytes = 16;
inline constexpr uint8_t kNoDscp = 255;

struct Request {
  uint8_t dscp = kNoDscp;
  uint64_t size = 0;
};

inline void encode_request(const Request& r, uint8_t out[kRequestBytes]) {
  std::memset(out, 0, kRequestBytes);
  for (int i = 0; i < 4; ++i) out[i] = uint8_t(kRequestMagic >> (24 - 8 * i));
  out[4] = r.dscp;
  for (int i = 0; i < 8; ++i) out[8 + i] = uint8_t(r.size >> (56 - 8 * i));
}

inline bool decode_request(const uint8_t in[kRequestBytes], Request* r) {
  uint32_t magic = 0;
  for (int i = 0; i < 4; ++i) magic = magic << 8 | in[i];
  if (magic != kRequestMagic || (in[4] > 63 && in[4] != kNoDscp) || in[5] || in[6] || in[7]) return false;
  r->dscp = in[4];
  r->size = 0;
  for (int i = 0; i < 8; ++i) r->size = r->size << 8 | in[8 + i];
  return true;
}

}  // namespace flexplane::workloads
