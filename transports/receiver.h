// The receiving side of one flow: cumulative ACKs with ECN echo.
//
// Principles
// - ACK policy (RFC 5681 §4.2): an out-of-order or duplicate packet, and one
//   that fills a hole, is ACKed at once; in-order packets are ACKed every
//   `ack_every` packets (1 = every packet, the default) or when the delayed-ACK
//   timer (`delayed_ack` timeslots) expires.
// - ECN echo (EcnEcho): kRfc3168 latches ECE from a CE arrival until a CWR
//   arrival; kPerPacket is DCTCP's state machine (RFC 8257 §3.2): ECE tells
//   whether the packets this ACK covers were CE-marked. With delayed ACKs, a
//   change of CE state first flushes an ACK for the packets received before it
//   (with the old state) and then ACKs the new packet at once, so the sender
//   sees exactly how many packets were marked. With ack_every = 1 every ACK
//   simply echoes its packet's CE bit.
// - Out-of-order packets are remembered in a bitset that grows with the
//   highest seq seen beyond the hole; in-order flows never allocate it.
// - D-SACK (RFC 2883), with SACK: an ACK answering a packet that had already
//   arrived says so (Ack::dsack), so the sender can tell a spurious
//   retransmission.
// - SACK (RFC 2018 §4, `sack_blocks` > 0): the first block is the run of
//   out-of-order packets holding the packet that triggered the ACK (none if
//   it advanced the cumulative ACK), then the runs reported most recently,
//   up to `sack_blocks`. The receiver remembers one seq per reported block
//   (the last 16, most recent first): runs only grow or merge, so that seq
//   finds the block again.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "transports/transport.h"

namespace flexplane {

struct ReceiverStats {
  uint64_t packets = 0;
  uint64_t out_of_order = 0;
  uint64_t duplicates = 0;
  uint64_t ce_packets = 0;
  uint64_t acks = 0;
};

class Receiver {
 public:
  // At most two ACKs answer one packet (DCTCP's flush + the immediate ACK).
  struct Acks {
    Ack ack[2];
    uint32_t n = 0;
    void push(const Ack& a) { ack[n++] = a; }
  };

  Receiver(EcnEcho echo, uint32_t ack_every = 1, Timeslot delayed_ack = 1, uint32_t sack_blocks = 0);
  explicit Receiver(const TransportSettings& s)
      : Receiver(ecn_echo_for(s.kind), s.ack_every_pkts, s.delayed_ack, s.sack_blocks) {}

  // Data packet `seq` arrived at `now` (ce: CE-marked; cwr: the sender's CWR flag).
  Acks on_data(uint32_t seq, bool ce, bool cwr, Timeslot now);
  // Call at or after timer_deadline(): the delayed ACK, if one is due.
  std::optional<Ack> on_timer(Timeslot now);
  Timeslot timer_deadline() const { return delack_deadline_; }

  uint32_t next_expected() const { return rcv_nxt_; }
  const ReceiverStats& stats() const { return stats_; }

  // Once every packet of a flow of `size` packets has arrived
  // (next_expected() == size) and no ACK is pending (idle()), the receiver
  // answers each further packet (a spurious retransmission) with one ACK
  // that depends on a single bit of state: RFC 3168's latched ECE. An owner
  // with many flows may keep that bit (ece_latched()), free the receiver and
  // answer with complete_ack(), identically (receiver_test.cc).
  bool idle() const { return pending_ == 0 && delack_deadline_ == kNever; }
  bool ece_latched() const { return ece_latched_; }
  // `sack`: the flow's receiver would put SACK information (here: the D-SACK flag) on it.
  static Ack complete_ack(EcnEcho echo, uint32_t size, uint32_t seq, bool ce, bool cwr, bool* ece_latched,
                          bool sack = false) {
    bool ece = false;
    if (echo == EcnEcho::kRfc3168) {
      if (cwr) *ece_latched = false;
      if (ce) *ece_latched = true;
      ece = *ece_latched;
    } else if (echo == EcnEcho::kPerPacket) {
      ece = ce;  // nothing pending: the state follows this packet
    }
    Ack a{size, seq, ece};  // no hole: no SACK blocks
    a.dsack = sack;         // every packet has arrived: this one is a duplicate
    return a;
  }

 private:
  bool have(uint32_t seq) const;
  void remember(uint32_t seq);
  Ack make_ack(uint32_t trigger, bool ece) {
    ++stats_.acks;
    Ack a{rcv_nxt_, trigger, ece};
    if (sack_blocks_ && ooo_count_) add_sack_blocks(a);
    return a;
  }
  void add_sack_blocks(Ack& a);
  SackBlock run_around(uint32_t seq) const;  // the out-of-order run holding seq (held, > rcv_nxt)

  EcnEcho echo_;
  uint32_t ack_every_;
  Timeslot delayed_ack_;
  uint32_t rcv_nxt_ = 0;
  // Out-of-order packets: bit (seq - ooo_base_) for seq >= rcv_nxt.
  std::vector<uint64_t> ooo_;
  uint32_t ooo_base_ = 0;  // multiple of 64, <= rcv_nxt while ooo_ is in use
  uint32_t ooo_count_ = 0;
  uint32_t sack_blocks_ = 0;
  // One seq in each block reported, most recently reported first (RFC 2018:
  // repeat the latest blocks, then as many other distinct ones as fit).
  static constexpr uint32_t kRecentBlocks = 16;
  uint32_t recent_[kRecentBlocks] = {};
  uint32_t n_recent_ = 0;

  uint32_t pending_ = 0;        // in-order packets not yet ACKed
  uint32_t last_seq_ = 0;       // the latest packet (trigger of a delayed ACK)
  Timeslot delack_deadline_ = kNever;
  bool ece_latched_ = false;    // kRfc3168
  bool ce_state_ = false;       // kPerPacket: CE state of the packets not yet ACKed
  ReceiverStats stats_;
};

}  // namespace flexplane
