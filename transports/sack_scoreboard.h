// The sender's SACK scoreboard (RFC 6675) over abstract packets.
//
// Principles
// - One flag byte per outstanding seq in [una, high) (SeqRing): SACKed, and
//   retransmitted since the last timeout (RFC 6675's HighRxt, kept per seq as
//   ns-3 does, so a timeout can make every segment eligible again).
// - Loss (RFC 6675 IsLost): an unSACKed seq is lost once `dupthresh` SACKed
//   seqs lie above it. SACKed seqs only accumulate, so that is "below the
//   dupthresh-th highest SACKed seq": the scoreboard keeps those few seqs
//   and one boundary, lost_end, below which every unSACKed seq is lost. The
//   sender raises the boundary itself to mark the head lost on entering
//   recovery, and to high on a timeout (ns-3's SetSentListLost; the SACK
//   information is kept, RFC 6675 section 5.1 and its errata).
// - pipe (RFC 6675 SetPipe) = (high - una) - SACKed - lost + retransmitted:
//   a lost segment counts once it is resent, a segment resent before it was
//   deemed lost counts twice. The three counts are kept as flags change, so
//   pipe() is O(1).
// - NextSeg's rule 1 (the first lost seq not yet resent) and rule 3 (the
//   first unSACKed seq not yet resent) are cursors that only move forward
//   between timeouts, because the flags they skip are sticky until then.
//
// - Reordering (optional, `max_reordering` > 0; Linux's
//   tcp_check_sack_reordering): when an ACK SACKs, or cumulatively ACKs, a
//   seq never resent that lies below the highest seq SACKed before it, that
//   packet was reordered, not lost; the distance from it to the highest
//   SACKed seq becomes the loss threshold (dupthresh) if larger, up to
//   max_reordering; so does a D-SACK (the receiver got a seq twice: its
//   retransmission was spurious). Raising it rebuilds the list of highest
//   SACKed seqs from the ring (rare: each raise is by at least one). Seqs
//   marked lost stay lost. Linux also undoes a spurious recovery's window
//   cut; not modelled.
//
// Cost: each seq is visited a bounded number of times by the cursors, the
// boundary and the cumulative ACK; a SACK block is walked over its whole
// length (O(block) per ACK while holes exist, a few hundred segments at
// data-centre windows).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "transports/seq_ring.h"
#include "transports/transport.h"

namespace flexplane {

class SackScoreboard {
 public:
  // `max_reordering` 0: dupthresh stays fixed; else it may grow to that.
  explicit SackScoreboard(uint32_t dupthresh = 3, uint32_t initial_ring = 16, uint32_t max_reordering = 0);

  // The sender put `seq` on the wire: new data (seq == high) extends the
  // scoreboard, a retransmission flags the seq as resent.
  void on_send(uint32_t seq, bool retransmit);
  // The cumulative ACK reached `una`: everything below leaves the scoreboard.
  void on_cum_ack(uint32_t una);
  // Record the ACK's SACK blocks (clamped to [una, high)); returns how many
  // seqs were newly SACKed.
  uint32_t on_sack(const Ack& ack);
  // A D-SACK: `seq` arrived twice, so its retransmission was spurious (the
  // original was reordered): with max_reordering, learn the distance from it
  // to the highest SACKed seq (Linux does the same from a D-SACK block).
  void on_dsack(uint32_t seq);
  // Every unSACKed seq below `end` is lost from now on.
  void mark_lost_below(uint32_t end);
  // Retransmission timeout: every unSACKed seq is lost and none counts as
  // resent, so all of them are sent again (SACKed ones are skipped).
  void on_timeout();

  // NextSeg rule 1: the first lost seq not resent since the last timeout.
  std::optional<uint32_t> next_lost() const;
  // NextSeg rule 3: the first unSACKed seq not resent since the last timeout.
  std::optional<uint32_t> next_unsacked() const;

  bool is_sacked(uint32_t seq) const { return seq >= una_ && seq < high_ && (flags(seq) & kSacked); }
  bool is_resent(uint32_t seq) const { return seq >= una_ && seq < high_ && (flags(seq) & kResent); }
  bool is_lost(uint32_t seq) const { return seq >= una_ && seq < lost_end_ && seq < high_ && !(flags(seq) & kSacked); }
  uint32_t pipe() const { return (high_ - una_) - sacked_ - lost_ + resent_; }
  uint32_t sacked() const { return sacked_; }
  uint32_t lost() const { return lost_; }
  uint32_t resent() const { return resent_; }
  uint32_t dupthresh() const { return dupthresh_; }
  uint32_t reorder_raises() const { return reorder_raises_; }  // times reordering raised dupthresh
  uint32_t una() const { return una_; }
  uint32_t high() const { return high_; }

 private:
  static constexpr uint8_t kSacked = 1, kResent = 2, kEverResent = 4;  // kEverResent: kept through timeouts
  uint8_t flags(uint32_t seq) const { return ring_[seq]; }
  uint8_t& flags(uint32_t seq) { return ring_[seq]; }
  void note_sacked(uint32_t seq);  // keeps the dupthresh highest SACKed seqs
  // `seq` (never resent) was delivered below `fack`: raise dupthresh to the distance.
  void note_reordered(uint32_t seq, uint32_t fack);

  uint32_t dupthresh_;
  uint32_t max_reordering_;
  uint32_t reorder_raises_ = 0;
  uint32_t fack_ = 0;  // one past the highest seq ever SACKed (0: none)
  uint32_t una_ = 0, high_ = 0;
  uint32_t lost_end_ = 0;   // unSACKed seqs below it are lost
  uint32_t sacked_ = 0, lost_ = 0, resent_ = 0;
  std::vector<uint32_t> top_;  // the highest SACKed seqs, descending, at most dupthresh
  SeqRing<uint8_t> ring_;
  mutable uint32_t lost_cursor_ = 0, unsacked_cursor_ = 0;
};

}  // namespace flexplane
