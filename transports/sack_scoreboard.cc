#include "transports/sack_scoreboard.h"

#include <algorithm>

namespace flexplane {

SackScoreboard::SackScoreboard(uint32_t dupthresh, uint32_t initial_ring, uint32_t max_reordering)
    : dupthresh_(std::max(dupthresh, 1u)), max_reordering_(max_reordering), ring_(initial_ring) {
  top_.reserve(dupthresh_);
}

void SackScoreboard::on_send(uint32_t seq, bool retransmit) {
  if (seq == high_) {
    ring_.fit(una_, ++high_);
    flags(seq) = 0;
  }
  if (retransmit && seq >= una_ && seq < high_ && !(flags(seq) & (kResent | kSacked))) {
    flags(seq) |= kResent | kEverResent;
    ++resent_;
  }
}

void SackScoreboard::on_cum_ack(uint32_t una) {
  una = std::min(una, high_);
  for (uint32_t s = una_; s < una; ++s) {
    const uint8_t f = flags(s);
    if (max_reordering_ && !(f & (kSacked | kEverResent)) && s + 1 < fack_) note_reordered(s, fack_);
    if (f & kSacked) --sacked_;
    else if (s < lost_end_) --lost_;
    if (f & kResent) --resent_;
    flags(s) = 0;
  }
  una_ = std::max(una_, una);
}

void SackScoreboard::note_sacked(uint32_t seq) {
  if (top_.size() == dupthresh_ && seq <= top_.back()) return;
  auto at = std::upper_bound(top_.begin(), top_.end(), seq, [](uint32_t a, uint32_t b) { return a > b; });
  top_.insert(at, seq);
  if (top_.size() > dupthresh_) top_.pop_back();
}

void SackScoreboard::note_reordered(uint32_t seq, uint32_t fack) {
  const uint32_t degree = std::min(fack - seq - 1, max_reordering_);  // SACKed-or-sent seqs above it
  if (degree <= dupthresh_) return;
  dupthresh_ = degree;
  ++reorder_raises_;
  top_.clear();  // the dupthresh highest SACKed seqs, from the ring
  for (uint32_t s = high_; s > una_ && top_.size() < dupthresh_;)
    if (flags(--s) & kSacked) top_.push_back(s);
}

void SackScoreboard::on_dsack(uint32_t seq) {
  if (max_reordering_ && seq + 1 < fack_) note_reordered(seq, fack_);
}

uint32_t SackScoreboard::on_sack(const Ack& ack) {
  uint32_t fresh = 0;
  const uint32_t fack = fack_;  // the highest SACKed before this ACK
  for (uint32_t b = 0; b < ack.sack_count && b < kMaxSackBlocks; ++b) {
    const uint32_t left = std::max(ack.sack[b].left, una_), right = std::min(ack.sack[b].right, high_);
    for (uint32_t s = left; s < right; ++s) {
      uint8_t& f = flags(s);
      if (f & kSacked) continue;
      if (max_reordering_ && !(f & kEverResent) && s + 1 < fack) note_reordered(s, fack);
      fack_ = std::max(fack_, s + 1);
      if (s < lost_end_) --lost_;
      if (f & kResent) --resent_;
      f = kSacked;
      ++sacked_;
      ++fresh;
      note_sacked(s);
    }
  }
  if (fresh && top_.size() == dupthresh_) mark_lost_below(top_.back());
  return fresh;
}

void SackScoreboard::mark_lost_below(uint32_t end) {
  end = std::min(end, high_);
  for (uint32_t s = std::max(lost_end_, una_); s < end; ++s)
    if (!(flags(s) & kSacked)) ++lost_;
  lost_end_ = std::max(lost_end_, end);
}

void SackScoreboard::on_timeout() {
  for (uint32_t s = una_; s != high_; ++s) flags(s) &= static_cast<uint8_t>(~kResent);
  resent_ = 0;
  mark_lost_below(high_);
  lost_cursor_ = unsacked_cursor_ = una_;
}

std::optional<uint32_t> SackScoreboard::next_lost() const {
  const uint32_t end = std::min(lost_end_, high_);
  uint32_t& s = lost_cursor_;
  s = std::max(s, una_);
  while (s < end && (flags(s) & (kSacked | kResent))) ++s;
  if (s < end) return s;
  return std::nullopt;
}

std::optional<uint32_t> SackScoreboard::next_unsacked() const {
  uint32_t& s = unsacked_cursor_;
  s = std::max(s, una_);
  while (s < high_ && (flags(s) & (kSacked | kResent))) ++s;
  if (s < high_) return s;
  return std::nullopt;
}

}  // namespace flexplane
