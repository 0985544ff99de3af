// Each request's times at an endpoint (--trace-stages of flexplane-endpoint
// and flexplane-nfq-endpoint; docs/live.md, "Where a round trip goes"): its
// request handed to the protocol window, its verdict back, and for held
// packets (NFQUEUE) when the packet was read and when the kernel was told.
// All CLOCK_MONOTONIC ns, the clock the emulator's stages.csv reads. Off by
// default: a hash lookup per request.
#pragma once

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "fp_wire.h"

namespace flexplane {

class StageTrace {
 public:
  void held(uint64_t cookie, uint64_t now) {
    held_[cookie] = now;
    holds_ = true;
  }
  void sent(uint64_t cookie, const fp_request& r, uint64_t now) {
    Rec rec;
    rec.flow = r.flow;
    rec.seq = r.id;
    rec.sent_ns = now;
    const auto h = held_.find(cookie);
    if (h != held_.end()) {
      rec.held_ns = h->second;
      held_.erase(h);
    }
    index_[cookie] = recs_.size();
    recs_.push_back(rec);
  }
  void verdict(uint64_t cookie, uint8_t action, uint64_t now) {
    const auto it = index_.find(cookie);
    if (it == index_.end()) return;
    Rec& r = recs_[it->second];
    r.verdict_ns = now;
    r.action = action;
    released_.push_back(it->second);
    index_.erase(it);
  }
  // After the verdicts of this loop went to the kernel.
  void released(uint64_t now) {
    for (size_t i : released_) recs_[i].released_ns = now;
    released_.clear();
  }
  // requests.csv: flow,seq,sent_ns,verdict_ns,action, then held_ns and
  // released_ns if packets were held (held() was called).
  void write(const std::string& path) const {
    FILE* f = std::fopen(path.c_str(), "w");
    if (!f) throw std::runtime_error(path + ": cannot write");
    std::setvbuf(f, nullptr, _IOFBF, 1 << 20);
    std::fprintf(f, "flow,seq,sent_ns,verdict_ns,action%s\n", holds_ ? ",held_ns,released_ns" : "");
    for (const Rec& r : recs_) {
      std::fprintf(f, "%u,%u,%llu,", r.flow, r.seq, (unsigned long long)r.sent_ns);
      if (r.verdict_ns)
        std::fprintf(f, "%llu,%s", (unsigned long long)r.verdict_ns,
                     r.action == FP_ACT_RELEASE ? "release" : r.action == FP_ACT_MARK ? "mark" : "drop");
      else
        std::fprintf(f, ",");
      if (holds_) {
        std::fprintf(f, ",%llu,", (unsigned long long)r.held_ns);
        if (r.released_ns) std::fprintf(f, "%llu", (unsigned long long)r.released_ns);
      }
      std::fprintf(f, "\n");
    }
    if (std::fclose(f) != 0) throw std::runtime_error(path + ": write failed");
  }

 private:
  struct Rec {
    uint32_t flow = 0, seq = 0;
    uint64_t held_ns = 0, sent_ns = 0, verdict_ns = 0, released_ns = 0;
    uint8_t action = 0;
  };
  std::unordered_map<uint64_t, uint64_t> held_;   // cookie -> read from NFQUEUE
  std::unordered_map<uint64_t, size_t> index_;    // cookie -> recs_ index, until its verdict
  std::vector<Rec> recs_;
  std::vector<size_t> released_;                  // verdicts of this loop
  bool holds_ = false;                            // packets are held (NFQUEUE): two more columns
};

}  // namespace flexplane
