#include "router/fast_path.h"

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_lpm.h>
#include <rte_prefetch.h>
#include <rte_rcu_qsbr.h>

#include <cstring>

#include "router/ipv4.h"
#include "router/port_scheduler.h"

namespace flexplane::router {

namespace {

constexpr uint32_t kPrefetchAhead = 3;
// Bursts taken from one inbound ring per iteration (bounds one iteration).
constexpr uint32_t kMaxRoundsPerRing = 64;
constexpr uint64_t kMac48 = (1ull << 48) - 1;
constexpr uint16_t kEtherIpv4 = RTE_BE16(RTE_ETHER_TYPE_IPV4);
constexpr uint16_t kEtherArp = RTE_BE16(RTE_ETHER_TYPE_ARP);
constexpr uint16_t kEtherIpv6 = RTE_BE16(RTE_ETHER_TYPE_IPV6);
constexpr uint32_t kEthBytes = sizeof(rte_ether_hdr);

uint64_t load_mac(const void* p) {
  uint64_t v = 0;
  std::memcpy(&v, p, 6);
  return v;
}

// The destination MAC of a frame of at least 14 bytes: one 8-byte load
// (masked), not two partial stores re-read as one word, which stalls
// store-to-load forwarding (measured: a fifth of process_burst's cycles).
uint64_t load_dst_mac(const rte_ether_hdr* eth) {
  uint64_t v;
  std::memcpy(&v, eth, 8);
  return v & kMac48;
}

}  // namespace

Worker::Worker(uint32_t id, Shared& shared, const RunSettings& run, std::vector<std::pair<uint16_t, uint16_t>> rx,
               std::vector<PortScheduler*> local)
    : id_(id), sh_(shared), run_(run), rx_(std::move(rx)), local_(std::move(local)) {
  const size_t np = sh_.ports.size();
  for (const PortInfo& p : sh_.ports) {
    port_mac_.push_back(load_mac(p.mac.data()));
    port_mtu_.push_back(p.mtu_bytes);
    if (p.owner == id_) owned_.push_back(p.id);
    if (rte_ring* r = sh_.handoff[id_][p.id]) my_handoffs_.push_back(r);
  }
  const uint32_t b = run.burst;
  rx_burst_.resize(b);
  frees_.resize(b);
  slow_.resize(b);
  dst_.resize(b);
  hop_.resize(b);
  idx_.resize(b);
  out_.assign(np, std::vector<rte_mbuf*>(b));
  out_n_.assign(np, 0);
  touched_.reserve(np);
}

void Worker::process_burst(uint16_t in_port, rte_mbuf** pkts, uint32_t n, uint64_t tsc) {
  const rte_lpm* lpm = sh_.fib->active();  // one table for the whole burst (RCU read side)
  const uint64_t my_mac = port_mac_[in_port];
  uint64_t rx_bytes = 0;
  uint32_t k = 0;

  // 1. Parse and validate; keep the forwardable ones' destinations.
  for (uint32_t i = 0; i < n && i < kPrefetchAhead; ++i) rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void*));
  for (uint32_t i = 0; i < n; ++i) {
    if (i + kPrefetchAhead < n) rte_prefetch0(rte_pktmbuf_mtod(pkts[i + kPrefetchAhead], void*));
    rte_mbuf* m = pkts[i];
    m->port = in_port;
    rx_bytes += m->pkt_len;
    if (__builtin_expect(m->nb_segs != 1, 0)) {
      drop(m, FastDrop::kMultiSegment);
      continue;
    }
    const uint32_t len = m->data_len;
    if (__builtin_expect(len < kEthBytes, 0)) {
      drop(m, FastDrop::kRuntFrame);
      continue;
    }
    const auto* eth = rte_pktmbuf_mtod(m, const rte_ether_hdr*);
    const uint16_t type = eth->ether_type;
    if (__builtin_expect(type != kEtherIpv4, 0)) {
      if (type == kEtherArp)
        to_slow(m, Exception::kArp, 0);
      else
        drop(m, type == kEtherIpv6 ? FastDrop::kIpv6 : FastDrop::kOtherEthertype);
      continue;
    }
    if (__builtin_expect(load_dst_mac(eth) != my_mac, 0)) {
      drop(m, FastDrop::kNotOurMac);
      continue;
    }
    const uint8_t* l3 = reinterpret_cast<const uint8_t*>(eth + 1);
    const ipv4::Verdict v = ipv4::validate(l3, len - kEthBytes);
    counters_.ipv4[static_cast<unsigned>(v)].add(1);
    if (__builtin_expect(v != ipv4::Verdict::kForward, 0)) {
      m->l2_len = kEthBytes;
      if (v == ipv4::Verdict::kOptions)
        to_slow(m, Exception::kOptions, 0);
      else
        frees_[nfree_++] = m;  // counted in ipv4[v]
      continue;
    }
    dst_[k] = ipv4::be32(reinterpret_cast<const ipv4::Header*>(l3)->dst);
    idx_[k++] = i;
  }
  counters_.rx_packets.add(n);
  counters_.rx_bytes.add(rx_bytes);

  // 2. Longest-prefix match, one call for the burst.
  if (k) rte_lpm_lookup_bulk(lpm, dst_.data(), hop_.data(), k);

  // 3. Next hop, TTL, Ethernet rewrite; batch per output port.
  uint32_t fragments = 0;
  for (uint32_t j = 0; j < k; ++j) {
    rte_mbuf* m = pkts[idx_[j]];
    m->l2_len = kEthBytes;
    uint32_t hop = hop_[j];
    if (__builtin_expect(!(hop & RTE_LPM_LOOKUP_SUCCESS), 0)) {
      to_slow(m, Exception::kNoRoute, 0);
      continue;
    }
    hop &= 0x00FFFFFF;
    if (__builtin_expect(hop >= kHopConnected, 0)) {
      if (hop == kHopLocal)
        to_slow(m, Exception::kLocal, 0);
      else if (hop == kHopBlackhole)
        drop(m, FastDrop::kBlackhole);
      else
        to_slow(m, Exception::kUnresolved, hop);  // a host on a connected subnet, not resolved yet
      continue;
    }
    auto* eth = rte_pktmbuf_mtod(m, rte_ether_hdr*);
    auto* h = reinterpret_cast<ipv4::Header*>(eth + 1);
    if (__builtin_expect(h->ttl <= 1, 0)) {
      to_slow(m, Exception::kTtlExpired, 0);
      continue;
    }
    const Neighbor& nb = (*sh_.neighbors)[hop];
    const uint64_t mac = nb.mac.load(std::memory_order_relaxed);
    if (__builtin_expect(!(mac & kMacResolved), 0)) {
      to_slow(m, Exception::kUnresolved, hop);
      continue;
    }
    const uint16_t out = nb.port;
    if (__builtin_expect(ipv4::be16(h->total_length) > port_mtu_[out], 0)) {
      to_slow(m, Exception::kTooBig, out);
      continue;
    }
    fragments += ipv4::is_fragment(*h);
    ipv4::decrement_ttl(*h);
    std::memcpy(&eth->dst_addr, &mac, 6);
    std::memcpy(&eth->src_addr, &port_mac_[out], 6);
    uint32_t& cnt = out_n_[out];
    if (cnt == 0) touched_.push_back(out);
    out_[out][cnt++] = m;
  }
  if (fragments) counters_.fragments.add(fragments);
  flush(tsc);
}

void Worker::flush(uint64_t tsc) {
  uint64_t forwarded = 0;
  for (uint16_t port : touched_) {
    rte_mbuf** batch = out_[port].data();
    const uint32_t n = out_n_[port];
    out_n_[port] = 0;
    forwarded += n;
    if (PortScheduler* s = local_[port]) {
      s->enqueue(batch, n, tsc);
      continue;
    }
    const uint32_t sent = rte_ring_sp_enqueue_burst(sh_.handoff[id_][port], reinterpret_cast<void**>(batch), n, nullptr);
    if (sent < n) {
      counters_.drops[static_cast<unsigned>(FastDrop::kHandoffFull)].add(n - sent);
      rte_pktmbuf_free_bulk(batch + sent, n - sent);
    }
  }
  touched_.clear();
  counters_.forwarded.add(forwarded);
  if (nslow_) {
    const uint32_t sent = rte_ring_mp_enqueue_burst(sh_.slow, reinterpret_cast<void**>(slow_.data()), nslow_, nullptr);
    if (sent < nslow_) {
      counters_.drops[static_cast<unsigned>(FastDrop::kSlowPathFull)].add(nslow_ - sent);
      rte_pktmbuf_free_bulk(slow_.data() + sent, nslow_ - sent);
    }
    nslow_ = 0;
  }
  if (nfree_) {
    rte_pktmbuf_free_bulk(frees_.data(), nfree_);
    nfree_ = 0;
  }
}

uint32_t Worker::take_handoffs(uint64_t tsc) {
  // Empty every inbound ring (in bursts): what arrived for an owned port
  // belongs in its scheme's queues, where drops are the scheme's decision,
  // not in a ring that overflows while another worker catches up.
  uint32_t total = 0;
  rte_mbuf** buf = rx_burst_.data();
  auto take = [&](rte_ring* r, PortScheduler* s) {
    for (uint32_t round = 0; round < kMaxRoundsPerRing; ++round) {
      const uint32_t n = rte_ring_sc_dequeue_burst(r, reinterpret_cast<void**>(buf), run_.burst, nullptr);
      if (!n) return;
      s->enqueue(buf, n, tsc);
      total += n;
      if (n < run_.burst) return;
    }
  };
  for (uint16_t port : owned_) {
    PortScheduler* s = local_[port];
    for (uint32_t w = 0; w < sh_.num_workers; ++w)
      if (rte_ring* r = sh_.handoff[w][port]) take(r, s);
    take(sh_.inject[port], s);
  }
  return total;
}

bool Worker::owned_idle() const {
  for (uint16_t port : owned_) {
    if (!local_[port]->idle() || rte_ring_count(sh_.inject[port])) return false;
    for (uint32_t w = 0; w < sh_.num_workers; ++w)
      if (sh_.handoff[w][port] && rte_ring_count(sh_.handoff[w][port])) return false;
  }
  return true;
}

void Worker::run() {
  rte_rcu_qsbr_thread_register(sh_.qs, id_);
  rte_rcu_qsbr_thread_online(sh_.qs, id_);
  const uint64_t hz = rte_get_tsc_hz();
  const uint64_t publish_every = hz / 100;  // live counters: every 10 ms
  uint64_t next_publish = 0;
  bool rx_reported = false;
  uint64_t last_t0 = 0;
  rte_mbuf** buf = rx_burst_.data();
  for (;;) {
    const bool rx_on = !sh_.rx_stop.load(std::memory_order_acquire);
    if (!rx_on && !rx_reported) {
      rx_reported = true;
      sh_.rx_done.fetch_add(1, std::memory_order_acq_rel);
    }
    const uint64_t t0 = rte_rdtsc();
    if (last_t0 && t0 - last_t0 > counters_.max_gap_cycles.get()) counters_.max_gap_cycles.add(t0 - last_t0 - counters_.max_gap_cycles.get());
    last_t0 = t0;
    uint64_t t = t0;
    uint64_t rx_cycles = 0;
    uint32_t work = 0;
    if (rx_on) {
      for (const auto& [port, queue] : rx_) {
        // Back-pressure: while a hand-off ring could not take a whole burst,
        // leave packets in the devices' RX rings (where an overflow is counted
        // as rx_missed) instead of dropping them between workers.
        bool room = true;
        for (rte_ring* r : my_handoffs_) room = room && rte_ring_free_count(r) >= run_.burst;
        if (!room) {
          counters_.rx_paused.add(1);
          break;
        }
        const uint16_t n = rte_eth_rx_burst(port, queue, buf, static_cast<uint16_t>(run_.burst));
        const uint64_t t1 = rte_rdtsc();
        rx_cycles += t1 - t;
        t = t1;
        if (n) {
          work += n;
          process_burst(port, buf, n, t);
          t = rte_rdtsc();
        }
      }
    }
    work += take_handoffs(t);
    const uint64_t t_drain = rte_rdtsc();
    for (uint16_t port : owned_) work += local_[port]->drain(t_drain);
    rte_rcu_qsbr_quiescent(sh_.qs, id_);
    counters_.loops.add(1);
    if (work) {
      const uint64_t t_end = rte_rdtsc();
      counters_.busy_cycles.add(t_end - t0);
      counters_.busy_loops.add(1);
      counters_.rx_cycles.add(rx_cycles);
      counters_.process_cycles.add(t_drain - t0 - rx_cycles);
      counters_.drain_cycles.add(t_end - t_drain);
    }
    if (t0 >= next_publish) {
      next_publish = t0 + publish_every;
      for (uint16_t port : owned_) local_[port]->publish_snapshot();
    }
    if (!rx_on && sh_.rx_done.load(std::memory_order_acquire) == sh_.num_workers &&
        sh_.inject_done.load(std::memory_order_acquire) && (owned_idle() || t0 >= sh_.drain_deadline_tsc.load()))
      break;
    if (!work && run_.idle_sleep_us && owned_idle()) {
      rte_rcu_qsbr_thread_offline(sh_.qs, id_);  // route updates need not wait for a sleeper
      rte_delay_us_sleep(run_.idle_sleep_us);
      rte_rcu_qsbr_thread_online(sh_.qs, id_);
    }
  }
  for (uint16_t port : owned_) local_[port]->publish_snapshot();
  rte_rcu_qsbr_thread_offline(sh_.qs, id_);
  rte_rcu_qsbr_thread_unregister(sh_.qs, id_);
}

}  // namespace flexplane::router
