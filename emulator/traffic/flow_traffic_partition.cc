// FlowTraffic in runs across processes (emulator/engine/partition.h): the
// closed loop's cross-group state as MirroredState items, and the per-flow
// results each process gathers for the one that writes the outputs.
#include <stdexcept>

#include "emulator/engine/serial.h"
#include "emulator/traffic/closed_loop_internal.h"
#include "emulator/traffic/flow_traffic.h"

namespace flexplane {

namespace {

// The ACKs one group's receivers send to another group's senders: drained
// from the channel on the writer's side, appended and flagged in the
// reader's mail on the reader's (what the writer's sink itself does).
class ChannelMirror final : public MirroredState {
 public:
  ChannelMirror(ClosedLoopShared& sh, AckChannel* ch, uint32_t from, uint32_t to, EndpointId writer, EndpointId reader)
      : sh_(sh), ch_(ch), from_(from), to_(to), writer_(writer), readers_{reader} {}
  Kind kind() const override { return Kind::kData; }
  EndpointId writer() const override { return writer_; }
  const std::vector<EndpointId>& readers() const override { return readers_; }
  void collect(std::string& out) override {
    ch_->drain(buf_);
    if (buf_.empty()) return;
    serial::Writer(out).vec(buf_);
    buf_.clear();
  }
  void apply(const char* data, size_t n) override {
    serial::Reader r(data, n);
    r.vec(buf_);
    r.expect_end();
    ch_->append(buf_);
    buf_.clear();
    sh_.mail[size_t{to_} * sh_.mail_words + from_ / 64].fetch_or(uint64_t{1} << (from_ % 64),
                                                                 std::memory_order_release);
  }

 private:
  ClosedLoopShared& sh_;
  AckChannel* ch_;
  uint32_t from_, to_;
  EndpointId writer_;
  std::vector<EndpointId> readers_;
  std::vector<AckMsg> buf_;
};

// A group's progress (GroupProgress::delivered_before): every ACK it made
// for deliveries before it is in its channels.
class ProgressMirror final : public MirroredState {
 public:
  ProgressMirror(GroupProgress& p, EndpointId writer, std::vector<EndpointId> readers)
      : p_(p), writer_(writer), readers_(std::move(readers)) {}
  Kind kind() const override { return Kind::kWatermark; }
  EndpointId writer() const override { return writer_; }
  const std::vector<EndpointId>& readers() const override { return readers_; }
  void collect(std::string& out) override {
    const Timeslot v = p_.delivered_before.load(std::memory_order_acquire);
    if (v == sent_) return;
    sent_ = v;
    serial::Writer(out).put(v);
  }
  void apply(const char* data, size_t n) override {
    serial::Reader r(data, n);
    const Timeslot v = r.get<Timeslot>();
    r.expect_end();
    if (v > p_.delivered_before.load(std::memory_order_relaxed)) p_.delivered_before.store(v, std::memory_order_release);
  }

 private:
  GroupProgress& p_;
  Timeslot sent_ = 0;
  EndpointId writer_;
  std::vector<EndpointId> readers_;
};

void put_histogram(serial::Writer& w, const WaitHistogram& h) { w.vec(h.counts); }
void get_histogram(serial::Reader& r, WaitHistogram& h) {
  WaitHistogram o;
  r.vec(o.counts);
  h.merge(o);
}

}  // namespace

std::vector<MirroredState*> FlowTraffic::mirrored_state() {
  std::vector<MirroredState*> out;
  ClosedLoopShared* sh = closed_loop_.get();
  if (!sh) return out;  // open loop: groups share nothing outside the network
  if (mirrors_.empty()) {
    std::vector<EndpointId> first(sh->num_groups, 0);  // an endpoint of each group
    for (EndpointId e = static_cast<EndpointId>(sh->group_of.size()); e-- > 0;) first[sh->group_of[e]] = e;
    for (uint32_t w = 0; w < sh->num_groups; ++w) {
      std::vector<EndpointId> readers;
      for (uint32_t i = sh->out_begin[w]; i < sh->out_begin[w + 1]; ++i) {
        const ChannelRef& c = sh->out_refs[i];
        mirrors_.push_back(std::make_unique<ChannelMirror>(*sh, c.channel, w, c.group, first[w], first[c.group]));
        readers.push_back(first[c.group]);
      }
      if (!readers.empty()) mirrors_.push_back(std::make_unique<ProgressMirror>(sh->progress[w], first[w], readers));
    }
  }
  for (auto& m : mirrors_) out.push_back(m.get());
  return out;
}

// Layout: per flow with a local end (flow id, which ends, their fields),
// the local sinks' unexpected arrivals, and per local group its statistics.
void FlowTraffic::pack_results(const std::vector<bool>& local, std::string& out) const {
  serial::Writer w(out);
  const ClosedLoopShared* sh = closed_loop_.get();
  for (uint32_t i = 0; i < flows_.size(); ++i) {
    const FlowSpec& f = flows_[i];
    const uint8_t ends = (local.at(f.src) ? 1 : 0) | (local.at(f.dst) ? 2 : 0);
    if (!ends) continue;
    w.put(i);
    w.put(ends);
    if (ends & 1) {
      w.put(first_sent_[i]);
      w.put(release_[i]);
      if (sh) w.put(sh->outcomes[i]);
    }
    if (ends & 2) w.put(states_[i]);
  }
  w.put(~uint32_t{0});
  w.put(unexpected_arrivals());
  if (!sh) return;
  for (uint32_t g = 0; g < sh->num_groups; ++g) {
    EndpointId e = 0;
    while (sh->group_of[e] != g) ++e;
    if (!local.at(e)) continue;
    w.put(g);
    const AckQueueStats& a = sh->ack_stats[g].s;
    w.put(a.acks), w.put(a.lost), w.put(a.waited), w.put(a.waited_nic), w.put(a.max_wait), w.put(a.unqueued);
    put_histogram(w, a.nic_waits);
    put_histogram(w, a.port_waits);
    const NicWaitStats& n = sh->nic_stats[g].s;
    w.put(n.waited), w.put(n.max_wait), w.put(n.timeouts_with_data_in_nic);
    put_histogram(w, n.waits);
  }
}

void FlowTraffic::unpack_results(const std::string& in) {
  serial::Reader r(in);
  ClosedLoopShared* sh = closed_loop_.get();
  for (;;) {
    const uint32_t i = r.get<uint32_t>();
    if (i == ~uint32_t{0}) break;
    if (i >= flows_.size()) throw std::runtime_error("results: flow " + std::to_string(i) + " out of range");
    const uint8_t ends = r.get<uint8_t>();
    if (ends & 1) {
      first_sent_[i] = r.get<Timeslot>();
      release_[i] = r.get<Timeslot>();
      if (sh) sh->outcomes[i] = r.get<SenderOutcome>();
    }
    if (ends & 2) states_[i] = r.get<FlowState>();
  }
  unexpected_.push_back(std::make_unique<uint64_t>(r.get<uint64_t>()));
  while (sh && !r.done()) {
    const uint32_t g = r.get<uint32_t>();
    if (g >= sh->num_groups) throw std::runtime_error("results: group " + std::to_string(g) + " out of range");
    AckQueueStats& a = sh->ack_stats[g].s;
    a.acks = r.get<uint64_t>(), a.lost = r.get<uint64_t>(), a.waited = r.get<uint64_t>();
    a.waited_nic = r.get<uint64_t>(), a.max_wait = r.get<uint64_t>(), a.unqueued = r.get<uint64_t>();
    get_histogram(r, a.nic_waits);
    get_histogram(r, a.port_waits);
    NicWaitStats& n = sh->nic_stats[g].s;
    n.waited = r.get<uint64_t>(), n.max_wait = r.get<uint64_t>(), n.timeouts_with_data_in_nic = r.get<uint64_t>();
    get_histogram(r, n.waits);
  }
  r.expect_end();
}

}  // namespace flexplane
