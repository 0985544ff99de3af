// Requests in the engine, waiting for their verdicts: (src, flow, seq) ->
// protocol token.
//
// Open addressing, linear probing, backward-shift deletion; duplicate keys
// are allowed (an endpoint that re-opened its session may re-send a request
// whose old copy is still in the engine: either copy's verdict answers the
// new token, the other finds a stale token). One thread (the comm core).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "api/rng.h"
#include "fp_emu_conn.h"

namespace flexplane::live {

class PendingTable {
 public:
  PendingTable() : slots_(1024) {}
  void insert(uint16_t src, uint32_t flow, uint32_t seq, const fp_emu_token& tok) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    place(Entry{src, 1, flow, seq, tok.session, tok.rseq});
    ++size_;
  }
  bool take(uint16_t src, uint32_t flow, uint32_t seq, fp_emu_token* tok) {
    const size_t mask = slots_.size() - 1;
    for (size_t i = home(src, flow, seq);; i = (i + 1) & mask) {
      Entry& e = slots_[i];
      if (!e.used) return false;
      if (e.src == src && e.flow == flow && e.seq == seq) {
        tok->session = e.session;
        tok->rseq = e.rseq;
        erase(i);
        --size_;
        return true;
      }
    }
  }
  size_t size() const { return size_; }

 private:
  struct Entry {
    uint16_t src;
    uint8_t used;
    uint32_t flow, seq, session, rseq;
  };
  size_t home(uint16_t src, uint32_t flow, uint32_t seq) const {
    return mix64((static_cast<uint64_t>(flow) << 32 | seq) ^ (static_cast<uint64_t>(src) << 17)) &
           (slots_.size() - 1);
  }
  void place(const Entry& e) {
    const size_t mask = slots_.size() - 1;
    size_t i = home(e.src, e.flow, e.seq);
    while (slots_[i].used) i = (i + 1) & mask;
    slots_[i] = e;
  }
  void grow() {
    std::vector<Entry> old(slots_.size() * 2);
    old.swap(slots_);
    for (const Entry& e : old)
      if (e.used) place(e);
  }
  void erase(size_t i) {
    const size_t mask = slots_.size() - 1;
    size_t j = i;
    for (;;) {
      j = (j + 1) & mask;
      if (!slots_[j].used) break;
      const size_t k = home(slots_[j].src, slots_[j].flow, slots_[j].seq);
      // Move j into the hole at i unless its home lies cyclically in (i, j].
      const bool in_between = (i <= j) ? (i < k && k <= j) : (i < k || k <= j);
      if (!in_between) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i].used = 0;
  }
  std::vector<Entry> slots_;
  size_t size_ = 0;
};

}  // namespace flexplane::live
