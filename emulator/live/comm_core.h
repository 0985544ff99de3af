// The communication core of the live emulator (docs/live.md).
//
// One thread (a DPDK lcore or a plain thread) owns one ethdev port (any PMD:
// net_af_packet, net_af_xdp, net_tap, net_ring, a real NIC) and speaks the
// wire protocol (docs/protocol.md) with every endpoint of the topology:
//
//   rx burst -> Ethernet / ARP / IPv4 / UDP, every field bounds-checked; a bad
//               frame is counted by reason (RxDrop) and dropped, never a crash
//            -> source IPv4 address -> endpoint id -> its fp_emu_conn
//            -> each new request -> Packet -> LiveTraffic::submit()
//               (refused, or unknown dst: answered at once with a DROP verdict)
//   LiveTraffic::collect() -> the request's token -> fp_emu_push_verdict()
//   fp_emu_poll() of connections with news or due timers -> UDP/IPv4/Ethernet
//               frames built in software (IPv4 and UDP checksums computed
//               here, no offload) -> tx burst
//
// Not thread-safe: poll_once() and everything else from one thread. Counters
// are plain integers, formatted only when asked.
#pragma once

#include <rte_ether.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/reason.h"
#include "emulator/live/clock.h"
#include "emulator/live/dpdk_port.h"
#include "emulator/live/frame_parser.h"
#include "emulator/traffic/live_traffic.h"
#include "net/ipv4_address.h"
#include "fp_emu_conn.h"

namespace flexplane::live {

inline constexpr uint16_t kBurst = 32;

struct CommStats {
  uint64_t loops = 0, busy_loops = 0;
  uint64_t rx_frames = 0, rx_bytes = 0;
  uint64_t tx_frames = 0, tx_bytes = 0;
  uint64_t tx_failed = 0;     // tx burst did not take them (freed; the protocol retransmits)
  uint64_t mbuf_alloc_failed = 0;
  uint64_t arp_replies = 0;
  uint64_t rejects_unknown = 0;  // REJECT(UNKNOWN_ENDPOINT) sent
  uint64_t rx_drops[kNumRxDrops] = {};

  uint64_t requests = 0;          // accepted by the protocol (each owes one verdict)
  uint64_t submitted = 0;         // handed to the engine
  uint64_t refused_by_engine = 0; // LiveTraffic::submit refused: DROP verdict
  uint64_t bad_dst = 0;           // unknown / own destination: DROP verdict
  uint64_t refused_after_stop = 0;  // arrived after the engine stopped: DROP verdict
  uint64_t verdicts_collected = 0;  // from the engine
  uint64_t verdicts_pushed = 0;     // engine + local, into connections
  uint64_t verdicts_stale = 0;      // for a session that is gone (discarded)
  uint64_t verdicts_orphan = 0;     // no pending request (never expected)
  uint64_t releases = 0, marks = 0, drops = 0;  // engine verdicts by action
  uint64_t drop_reasons[kNumReasons] = {};      // engine drop verdicts by reason

  uint64_t malformed() const;
  uint64_t rx_dropped() const;
};

struct CommCoreConfig {
  uint16_t port_id = 0;
  net::Ipv4 emulator_ip{10, 77, 0, 2};   // parsed and checked by the config (live:), not here
  uint16_t udp_port = 9977;
  std::vector<net::Ipv4> endpoint_ips;   // index = endpoint id
  uint16_t apkt_bytes = 1500;             // told to endpoints in WELCOME
  uint8_t req_custom_len = 0;
  uint8_t verdict_custom_len = 0;
  uint8_t features = 0;                   // FP_FEAT_*
  std::string scheme;                     // "" = don't check the endpoint's name
  uint32_t window = 4096;                 // per endpoint verdict ring (power of two, <= 32768)
  uint64_t epoch_seed = 0;                // 0 = from the clock and getrandom() (every start differs)
  uint64_t rto_ns = 0, rto_max_ns = 0, ack_delay_ns = 0;  // 0 = protocol defaults
  uint64_t idle_sleep_ns = 0;             // run(): sleep this long after 256 idle loops (0 = pure polling)
};

class PendingTable;

// A request's identity in the stage trace: (src, flow, seq), unique within a run.
struct TraceKey {
  uint64_t flow_seq;
  uint16_t src;
  bool operator==(const TraceKey& o) const { return flow_seq == o.flow_seq && src == o.src; }
};
struct TraceKeyHash {
  size_t operator()(const TraceKey& k) const { return std::hash<uint64_t>()(k.flow_seq * 0x9E3779B97F4A7C15ull ^ k.src); }
};

// One request's passage through the comm core (live --trace-stages; docs/live.md,
// "Where a round trip goes"). Times are CLOCK_MONOTONIC ns (mono_ns()): the
// endpoints on this machine read the same clock.
struct StageRecord {
  uint16_t src = 0;
  uint32_t flow = 0, seq = 0;
  uint64_t rx_ns = 0;       // the rx burst that brought it had returned (then it was decoded and submitted)
  uint64_t collect_ns = 0;  // the collect() that brought its verdict from the engine had returned (0: none)
  uint64_t tx_ns = 0;       // that loop's tx burst, which sent the verdict's datagram, had returned
  Timeslot verdict_time = 0;
  uint8_t action = 0;       // LiveVerdict::Action
};

class CommCore {
 public:
  // Throws std::invalid_argument for a bad configuration (addresses, window).
  CommCore(const CommCoreConfig& cfg, LiveTraffic& traffic, rte_mempool* pool);
  ~CommCore();
  CommCore(const CommCore&) = delete;
  CommCore& operator=(const CommCore&) = delete;

  // One iteration: rx burst, collect verdicts, send what is due, tx burst.
  // Returns whether anything happened.
  bool poll_once(uint64_t now_ns);

  // After the engine stopped: new requests are answered with DROP at once
  // (counted as refused_after_stop) instead of waiting forever.
  void set_engine_stopped(bool stopped) { engine_stopped_ = stopped; }

  // Keep every verdict collected from the engine (for verdicts.csv).
  void record_verdicts(std::vector<LiveVerdict>* out) { record_ = out; }
  // Stamp every accepted request's stages into `out` (costs a hash lookup per
  // request and verdict, and a clock read per loop with verdicts: off by default).
  void trace_stages(std::vector<StageRecord>* out) { trace_ = out; }

  const CommStats& stats() const { return stats_; }
  // Per-connection protocol counters, summed over endpoints.
  fp_emu_stats proto_stats() const;
  const rte_ether_addr& mac() const { return mac_; }
  uint32_t num_endpoints() const { return static_cast<uint32_t>(conns_.size()); }
  const fp_emu_conn& conn(uint32_t endpoint) const { return conns_[endpoint]; }
  // Requests handed to the engine whose verdict has not come back yet.
  uint64_t pending() const;

  // "name,value" lines (comm_counters.csv) and a one-line console summary.
  void write_counters_csv(const std::string& path) const;
  std::vector<std::pair<std::string, uint64_t>> counters() const;

 private:
  struct Peer;

  void handle_frame(rte_mbuf* m, uint64_t now_ns);
  void handle_udp(const uint8_t* eth, const ParsedFrame& f, uint64_t now_ns);
  void handle_verdict(const LiveVerdict& v, uint64_t now_ns);
  void push_local_drop(uint32_t endpoint, const fp_emu_token& tok, const fp_request& req, uint64_t now_ns);
  void send_conn(uint32_t endpoint, uint64_t now_ns);
  void mark_dirty(uint32_t endpoint);
  rte_mbuf* new_frame();
  void finish_frame(rte_mbuf* m, const uint8_t* dst_mac, uint32_t dst_ip_be, uint16_t dst_port_be,
                    uint16_t payload_len);
  void queue_tx(rte_mbuf* m);
  void flush_tx();
  void drop(RxDrop r) { ++stats_.rx_drops[static_cast<unsigned>(r)]; }
  static int on_request(void* ctx, const fp_emu_token* tok, const fp_request* req);

  CommCoreConfig cfg_;
  LiveTraffic& traffic_;
  rte_mempool* pool_;
  rte_ether_addr mac_{};
  uint32_t ip_be_ = 0;
  uint16_t port_be_ = 0;
  uint16_t ip_id_ = 0;
  std::vector<std::pair<uint32_t, uint16_t>> ip_to_ep_;  // sorted (ip host order, endpoint)
  std::vector<fp_emu_conn> conns_;
  std::vector<std::vector<fp_verdict>> rings_;
  std::vector<Peer> peers_;
  std::unique_ptr<PendingTable> pending_;
  std::vector<uint32_t> dirty_;
  std::vector<uint8_t> is_dirty_;
  uint64_t next_timer_ns_ = 0;
  bool engine_stopped_ = false;
  uint32_t cur_ep_ = 0;  // endpoint whose datagram fp_emu_rx is processing
  uint64_t cur_now_ = 0;
  rte_mbuf* tx_[kBurst];
  uint32_t tx_len_[kBurst];
  uint16_t ntx_ = 0;
  rte_mbuf* spare_ = nullptr;
  std::vector<LiveVerdict>* record_ = nullptr;
  std::vector<StageRecord>* trace_ = nullptr;
  std::unordered_map<TraceKey, size_t, TraceKeyHash> trace_index_;  // -> index into *trace_
  std::vector<size_t> trace_tx_;                     // records whose verdict went out in this loop
  std::vector<LiveVerdict> vbuf_;
  CommStats stats_;
};

}  // namespace flexplane::live
