#include "transports/receiver.h"

#include <algorithm>
#include <string>

#include "api/params.h"

namespace flexplane {

namespace {
// Keep at most this many bitset words below rcv_nxt before compacting.
constexpr uint32_t kCompactWords = 32;
}  // namespace

Receiver::Receiver(EcnEcho echo, uint32_t ack_every, Timeslot delayed_ack, uint32_t sack_blocks)
    : echo_(echo), ack_every_(ack_every), delayed_ack_(delayed_ack), sack_blocks_(sack_blocks) {
  if (sack_blocks > kMaxSackBlocks)
    throw ConfigError("transport: sack_blocks must be at most " + std::to_string(kMaxSackBlocks));
  if (ack_every == 0) throw ConfigError("transport: ack_every_pkts must be at least 1");
  if (ack_every > 1 && delayed_ack == 0) throw ConfigError("transport: delayed ACKs need a timeout of at least 1 timeslot");
}

bool Receiver::have(uint32_t seq) const {
  if (seq < rcv_nxt_) return true;
  if (!ooo_count_) return false;
  const uint32_t i = seq - ooo_base_;
  return i / 64 < ooo_.size() && (ooo_[i / 64] >> (i % 64) & 1);
}

void Receiver::remember(uint32_t seq) {
  if (!ooo_count_) {
    ooo_.clear();
    ooo_base_ = rcv_nxt_ & ~63u;
  }
  const uint32_t i = seq - ooo_base_;
  if (i / 64 >= ooo_.size()) ooo_.resize(i / 64 + 1, 0);
  ooo_[i / 64] |= uint64_t{1} << (i % 64);
  ++ooo_count_;
}

SackBlock Receiver::run_around(uint32_t seq) const {
  // Bits [lo, hi) of the bitset around seq - ooo_base_, a word at a time
  // where whole words are set. rcv_nxt is a hole, so the run starts above it.
  const uint32_t nbits = static_cast<uint32_t>(ooo_.size()) * 64;
  auto bit = [&](uint32_t i) { return i < nbits && (ooo_[i / 64] >> (i % 64) & 1); };
  uint32_t lo = seq - ooo_base_, hi = lo + 1;
  while (lo > 0 && bit(lo - 1)) {
    if (lo % 64 == 0 && ooo_[lo / 64 - 1] == ~uint64_t{0}) lo -= 64;
    else --lo;
  }
  while (bit(hi)) {
    if (hi % 64 == 0 && hi / 64 < ooo_.size() && ooo_[hi / 64] == ~uint64_t{0}) hi += 64;
    else ++hi;
  }
  return {ooo_base_ + lo, ooo_base_ + hi};
}

void Receiver::add_sack_blocks(Ack& a) {
  uint32_t n = 0;
  auto add = [&](uint32_t seq) {
    if (n == sack_blocks_ || seq < rcv_nxt_ || !have(seq)) return;
    const SackBlock b = run_around(seq);
    for (uint32_t i = 0; i < n; ++i)
      if (a.sack[i].left == b.left) return;
    a.sack[n++] = b;
  };
  add(a.trigger_seq);
  for (uint32_t i = 0; i < n_recent_; ++i) add(recent_[i]);
  a.sack_count = static_cast<uint8_t>(n);
  // Reported blocks move to the front; older anchors keep their order behind them.
  uint32_t merged[kRecentBlocks];
  uint32_t m = 0;
  for (uint32_t i = 0; i < n; ++i) merged[m++] = a.sack[i].left;
  for (uint32_t i = 0; i < n_recent_ && m < kRecentBlocks; ++i) {
    const uint32_t seq = recent_[i];
    bool reported = seq < rcv_nxt_;
    for (uint32_t j = 0; j < n && !reported; ++j) reported = seq >= a.sack[j].left && seq < a.sack[j].right;
    if (!reported) merged[m++] = seq;
  }
  std::copy(merged, merged + m, recent_);
  n_recent_ = m;
}

Receiver::Acks Receiver::on_data(uint32_t seq, bool ce, bool cwr, Timeslot now) {
  Acks out;
  ++stats_.packets;
  if (ce) ++stats_.ce_packets;

  bool ece = false;
  bool ack_now = false;
  switch (echo_) {
    case EcnEcho::kNone: break;
    case EcnEcho::kRfc3168:
      if (cwr) ece_latched_ = false;
      if (ce) ece_latched_ = true;
      ece = ece_latched_;
      break;
    case EcnEcho::kPerPacket:
      if (ce != ce_state_) {
        if (pending_) {  // ACK what came before, with the state it had
          out.push(make_ack(last_seq_, ce_state_));
          pending_ = 0;
          delack_deadline_ = kNever;
        }
        ce_state_ = ce;
        ack_now = true;
      }
      ece = ce_state_;
      break;
  }

  if (have(seq) || seq > rcv_nxt_) {
    // A duplicate, or a packet beyond a hole: ACK at once (duplicate ACK).
    const bool duplicate = !(seq > rcv_nxt_ && !have(seq));
    if (!duplicate) {
      ++stats_.out_of_order;
      remember(seq);
    } else {
      ++stats_.duplicates;
    }
    out.push(make_ack(seq, ece));
    out.ack[out.n - 1].dsack = duplicate && sack_blocks_ > 0;  // RFC 2883: tell the sender it came twice
    pending_ = 0;
    delack_deadline_ = kNever;
    return out;
  }

  // In order.
  ++rcv_nxt_;
  if (ooo_count_) {
    while (have(rcv_nxt_)) {
      ++rcv_nxt_;
      --ooo_count_;
    }
    ack_now = true;  // filled (part of) a hole
    const uint32_t below = (rcv_nxt_ - ooo_base_) / 64;
    if (ooo_count_ && below >= kCompactWords) {
      ooo_.erase(ooo_.begin(), ooo_.begin() + below);
      ooo_base_ += below * 64;
    }
  }
  last_seq_ = seq;
  ++pending_;
  if (ack_now || pending_ >= ack_every_) {
    out.push(make_ack(seq, ece));
    pending_ = 0;
    delack_deadline_ = kNever;
  } else if (delack_deadline_ == kNever) {
    delack_deadline_ = now + delayed_ack_;
  }
  return out;
}

std::optional<Ack> Receiver::on_timer(Timeslot now) {
  if (delack_deadline_ == kNever || now < delack_deadline_) return std::nullopt;
  delack_deadline_ = kNever;
  if (!pending_) return std::nullopt;
  pending_ = 0;
  const bool ece = echo_ == EcnEcho::kRfc3168 ? ece_latched_ : echo_ == EcnEcho::kPerPacket && ce_state_;
  return make_ack(last_seq_, ece);
}

}  // namespace flexplane
