#include "emulator/live/live_stats.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <stdexcept>

namespace flexplane::live {

LiveStats::LiveStats(const std::string& path, uint32_t cores, bool quiet, uint64_t t0_ns)
    : csv_(path), cores_(cores), quiet_(quiet), t0_(t0_ns), last_t_(t0_ns) {
  if (!csv_) throw std::runtime_error(path + ": cannot write");
  csv_ << header(cores) << '\n';
}

std::string LiveStats::header(uint32_t cores) {
  std::string h = "time_s,requests,requests_per_s,verdicts,verdicts_per_s,releases,marks,drops";
  for (unsigned r = 0; r < kNumReasons; ++r) h += std::string(",drop_") + reason_name(static_cast<Reason>(r));
  h += ",refused_by_engine,bad_dst,malformed";
  for (unsigned i = 0; i < kNumRxDrops; ++i) h += std::string(",rx_drop_") + rx_drop_name(static_cast<RxDrop>(i));
  h += ",pending,rx_frames,tx_frames,tx_failed,sessions";
  for (uint32_t i = 0; i < cores; ++i)
    h += ",core" + std::to_string(i) + "_timeslots,core" + std::to_string(i) + "_late,core" + std::to_string(i) +
         "_max_lag_us";
  return h;
}

void LiveStats::report(uint64_t now, const CommCore& core, const Engine& engine) {
  const CommStats& s = core.stats();
  const double t = (now - t0_) / 1e9, dt = std::max(1e-9, (now - last_t_) / 1e9);
  const double rps = (s.requests - last_req_) / dt, vps = (s.verdicts_pushed - last_verd_) / dt;
  last_req_ = s.requests;
  last_verd_ = s.verdicts_pushed;
  last_t_ = now;
  const std::vector<CoreHealth> health = engine.health();
  const fp_emu_stats ps = core.proto_stats();
  csv_ << t << ',' << s.requests << ',' << rps << ',' << s.verdicts_pushed << ',' << vps << ',' << s.releases << ','
       << s.marks << ',' << s.drops;
  for (unsigned r = 0; r < kNumReasons; ++r) csv_ << ',' << s.drop_reasons[r];
  csv_ << ',' << s.refused_by_engine << ',' << s.bad_dst << ',' << s.malformed();
  for (unsigned i = 0; i < kNumRxDrops; ++i) csv_ << ',' << s.rx_drops[i];
  csv_ << ',' << core.pending() << ',' << s.rx_frames << ',' << s.tx_frames << ',' << s.tx_failed << ','
       << ps.sessions;
  for (uint32_t i = 0; i < cores_; ++i) {
    const CoreHealth h = i < health.size() ? health[i] : CoreHealth{};
    csv_ << ',' << h.timeslots << ',' << h.late_timeslots << ',' << h.max_lag_ns / 1000.0;
  }
  csv_ << '\n';
  csv_.flush();
  if (!quiet_) console_line(t, rps, vps, core, health, ps);
}

void LiveStats::console_line(double t, double rps, double vps, const CommCore& core,
                             const std::vector<CoreHealth>& health, const fp_emu_stats& ps) const {
  const CommStats& s = core.stats();
  auto item = [](std::string& list, const std::string& name, uint64_t v) {
    list += (list.empty() ? "" : ",") + name + "=" + std::to_string(v);
  };
  std::string drops, bad, cores;
  for (unsigned r = 0; r < kNumReasons; ++r)
    if (s.drop_reasons[r]) item(drops, reason_name(static_cast<Reason>(r)), s.drop_reasons[r]);
  if (s.refused_by_engine) item(drops, "refused", s.refused_by_engine);
  if (s.bad_dst) item(drops, "bad_dst", s.bad_dst);
  for (unsigned i = 0; i < kNumRxDrops; ++i)
    if (s.rx_drops[i]) item(bad, rx_drop_name(static_cast<RxDrop>(i)), s.rx_drops[i]);
  for (size_t i = 0; i < health.size(); ++i) {
    char buf[96];
    std::snprintf(buf, sizeof buf, " core%zu: ts=%" PRIu64 " late=%" PRIu64 " worst_lag=%.1fus", i,
                  health[i].timeslots, health[i].late_timeslots, health[i].max_lag_ns / 1000.0);
    cores += buf;
  }
  std::fprintf(stderr,
               "live t=%.1fs req/s=%.0f verdicts/s=%.0f requests=%" PRIu64 " release=%" PRIu64 " mark=%" PRIu64
               " drop=%" PRIu64 "%s%s%s pending=%" PRIu64 " sessions=%" PRIu64 " rx_dropped=%" PRIu64 "%s%s%s%s\n",
               t, rps, vps, s.requests, s.releases, s.marks, s.drops + s.refused_by_engine + s.bad_dst,
               drops.empty() ? "" : " (", drops.c_str(), drops.empty() ? "" : ")", core.pending(), ps.sessions,
               s.rx_dropped(), bad.empty() ? "" : " (", bad.c_str(), bad.empty() ? "" : ")", cores.c_str());
}

}  // namespace flexplane::live
