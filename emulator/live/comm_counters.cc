// The communication core's counters: summed, named and written only when
// asked (comm_counters.csv, the live console line, live_stats.csv).
#include <fstream>
#include <stdexcept>

#include "emulator/live/comm_core.h"
#include "emulator/live/pending_table.h"

namespace flexplane::live {

uint64_t CommStats::malformed() const {
  uint64_t s = 0;
  for (unsigned i = 0; i < kNumRxDrops; ++i)
    if (rx_drop_is_malformed(static_cast<RxDrop>(i))) s += rx_drops[i];
  return s;
}

uint64_t CommStats::rx_dropped() const {
  uint64_t s = 0;
  for (unsigned i = 0; i < kNumRxDrops; ++i) s += rx_drops[i];
  return s;
}

fp_emu_stats CommCore::proto_stats() const {
  fp_emu_stats s{};
  for (const auto& c : conns_) {
    s.tx_dgrams += c.stats.tx_dgrams;
    s.rx_dgrams += c.stats.rx_dgrams;
    s.rx_bad += c.stats.rx_bad;
    s.rx_stale += c.stats.rx_stale;
    s.sessions += c.stats.sessions;
    s.welcomes_sent += c.stats.welcomes_sent;
    s.rejects_sent += c.stats.rejects_sent;
    s.resets_sent += c.stats.resets_sent;
    s.requests += c.stats.requests;
    s.request_dups += c.stats.request_dups;
    s.request_gaps += c.stats.request_gaps;
    s.request_full += c.stats.request_full;
    s.request_refused += c.stats.request_refused;
    s.verdicts += c.stats.verdicts;
    s.verdicts_stale += c.stats.verdicts_stale;
    s.verdicts_sent += c.stats.verdicts_sent;
    s.verdicts_resent += c.stats.verdicts_resent;
    s.timeouts += c.stats.timeouts;
    s.naks += c.stats.naks;
    s.acks_sent += c.stats.acks_sent;
  }
  return s;
}

std::vector<std::pair<std::string, uint64_t>> CommCore::counters() const {
  const CommStats& s = stats_;
  std::vector<std::pair<std::string, uint64_t>> v = {
      {"loops", s.loops},
      {"busy_loops", s.busy_loops},
      {"rx_frames", s.rx_frames},
      {"rx_bytes", s.rx_bytes},
      {"tx_frames", s.tx_frames},
      {"tx_bytes", s.tx_bytes},
      {"tx_failed", s.tx_failed},
      {"mbuf_alloc_failed", s.mbuf_alloc_failed},
      {"arp_replies", s.arp_replies},
      {"rejects_unknown", s.rejects_unknown},
      {"rx_dropped", s.rx_dropped()},
      {"malformed", s.malformed()},
  };
  for (unsigned i = 0; i < kNumRxDrops; ++i)
    v.emplace_back(std::string("rx_drop_") + rx_drop_name(static_cast<RxDrop>(i)), s.rx_drops[i]);
  const std::vector<std::pair<std::string, uint64_t>> more = {
      {"requests", s.requests},
      {"submitted", s.submitted},
      {"refused_by_engine", s.refused_by_engine},
      {"bad_dst", s.bad_dst},
      {"refused_after_stop", s.refused_after_stop},
      {"verdicts_collected", s.verdicts_collected},
      {"verdicts_pushed", s.verdicts_pushed},
      {"verdicts_stale", s.verdicts_stale},
      {"verdicts_orphan", s.verdicts_orphan},
      {"pending_in_engine", pending()},
      {"releases", s.releases},
      {"marks", s.marks},
      {"drops", s.drops},
  };
  v.insert(v.end(), more.begin(), more.end());
  for (unsigned r = 0; r < kNumReasons; ++r)
    v.emplace_back(std::string("drop_") + reason_name(static_cast<Reason>(r)), s.drop_reasons[r]);
  const fp_emu_stats p = proto_stats();
  const std::vector<std::pair<std::string, uint64_t>> proto = {
      {"proto_tx_dgrams", p.tx_dgrams},         {"proto_rx_dgrams", p.rx_dgrams},
      {"proto_rx_bad", p.rx_bad},               {"proto_rx_stale", p.rx_stale},
      {"proto_sessions", p.sessions},           {"proto_welcomes_sent", p.welcomes_sent},
      {"proto_rejects_sent", p.rejects_sent},   {"proto_resets_sent", p.resets_sent},
      {"proto_requests", p.requests},           {"proto_request_dups", p.request_dups},
      {"proto_request_gaps", p.request_gaps},   {"proto_request_full", p.request_full},
      {"proto_request_refused", p.request_refused}, {"proto_verdicts", p.verdicts},
      {"proto_verdicts_stale", p.verdicts_stale}, {"proto_verdicts_sent", p.verdicts_sent},
      {"proto_verdicts_resent", p.verdicts_resent}, {"proto_timeouts", p.timeouts},
      {"proto_naks", p.naks},                   {"proto_acks_sent", p.acks_sent},
  };
  v.insert(v.end(), proto.begin(), proto.end());
  return v;
}

void CommCore::write_counters_csv(const std::string& path) const {
  std::ofstream out(path);
  out << "counter,value\n";
  for (const auto& [k, val] : counters()) out << k << ',' << val << '\n';
  if (!out) throw std::runtime_error(path + ": cannot write");
}

}  // namespace flexplane::live
