// FlowTraffic in runs across processes (emulator/engine/partition.h): the
// closed loop's cross-group state as MirroredState items, and the per-flow
// results each process gathers for the one that writes the outputs.
#include <algorithm>
#include <stdexcept>

#include "emulator/engine/serial.h"
#include "emulator/traffic/closed_loop_internal.h"
#include "emulator/traffic/flow_traffic.h"

namespace flexplane {

namespace {

// Every ACK on its way to one group's senders from groups in another
// process. A writer's sink appends to its channel and flags the reader's
// mail (closed_loop.cc); in a process that does not run the reader nobody
// else reads that mail, so its bits say exactly which local writers' channels
// hold ACKs to ship. apply() does in the reader's process what the writers'
// sinks did: append, then flag.
class InboxMirror final : public MirroredState {
 public:
  InboxMirror(ClosedLoopShared& sh, uint32_t reader, std::vector<EndpointId> writers, EndpointId reader_endpoint)
      : sh_(sh), reader_(reader), writers_(std::move(writers)), readers_{reader_endpoint} {}
  Kind kind() const override { return Kind::kData; }
  const std::vector<EndpointId>& writers() const override { return writers_; }
  const std::vector<EndpointId>& readers() const override { return readers_; }
  void collect(std::string& out) override {
    std::atomic<uint64_t>* words = &sh_.mail[size_t{reader_} * sh_.mail_words];
    serial::Writer w(out);
    for (uint32_t i = 0; i < sh_.mail_words; ++i) {
      if (!words[i].load(std::memory_order_relaxed)) continue;
      for (uint64_t bits = words[i].exchange(0, std::memory_order_acq_rel); bits; bits &= bits - 1) {
        const uint32_t from = i * 64 + static_cast<uint32_t>(__builtin_ctzll(bits));
        channel(from)->drain(buf_);
        w.put(from);
        w.vec(buf_);
        buf_.clear();
      }
    }
  }
  void apply(const char* data, size_t n) override {
    serial::Reader r(data, n);
    while (!r.done()) {
      const uint32_t from = r.get<uint32_t>();
      if (from >= sh_.num_groups) throw std::runtime_error("ACKs from group " + std::to_string(from) + ": no such group");
      r.vec(buf_);
      channel(from)->append(buf_);
      buf_.clear();
      sh_.mail[size_t{reader_} * sh_.mail_words + from / 64].fetch_or(uint64_t{1} << (from % 64),
                                                                     std::memory_order_release);
    }
  }

 private:
  AckChannel* channel(uint32_t from) const {  // in_refs of the reader: sorted by writer
    const ChannelRef* first = sh_.in_refs.data() + sh_.in_begin[reader_];
    const ChannelRef* last = sh_.in_refs.data() + sh_.in_begin[reader_ + 1];
    const ChannelRef* c = std::lower_bound(first, last, from, [](const ChannelRef& ref, uint32_t g) { return ref.group < g; });
    if (c == last || c->group != from) throw std::runtime_error("ACKs from group " + std::to_string(from) + ": no channel");
    return c->channel;
  }
  ClosedLoopShared& sh_;
  uint32_t reader_;
  std::vector<EndpointId> writers_, readers_;
  std::vector<AckMsg> buf_;
};

// A group's progress (GroupProgress::delivered_before): every ACK it made
// for deliveries before it is in its channels.
class ProgressMirror final : public MirroredState {
 public:
  ProgressMirror(GroupProgress& p, EndpointId writer, std::vector<EndpointId> readers)
      : p_(p), writers_{writer}, readers_(std::move(readers)) {}
  Kind kind() const override { return Kind::kWatermark; }
  const std::vector<EndpointId>& writers() const override { return writers_; }
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
  std::vector<EndpointId> writers_, readers_;
};

// The lowest endpoint of each group.
std::vector<EndpointId> first_endpoints(const ClosedLoopShared& sh) {
  std::vector<EndpointId> first(sh.num_groups, 0);
  for (size_t e = sh.group_of.size(); e-- > 0;)  // not EndpointId: 65,536 endpoints at k = 64
    first[sh.group_of[e]] = static_cast<EndpointId>(e);
  return first;
}

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
    const std::vector<EndpointId> first = first_endpoints(*sh);
    for (uint32_t g = 0; g < sh->num_groups; ++g) {
      std::vector<EndpointId> writers, readers;
      for (uint32_t i = sh->in_begin[g]; i < sh->in_begin[g + 1]; ++i) writers.push_back(first[sh->in_refs[i].group]);
      for (uint32_t i = sh->out_begin[g]; i < sh->out_begin[g + 1]; ++i) readers.push_back(first[sh->out_refs[i].group]);
      if (!writers.empty()) mirrors_.push_back(std::make_unique<InboxMirror>(*sh, g, std::move(writers), first[g]));
      if (!readers.empty()) mirrors_.push_back(std::make_unique<ProgressMirror>(sh->progress[g], first[g], std::move(readers)));
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
  const std::vector<EndpointId> first = first_endpoints(*sh);
  for (uint32_t g = 0; g < sh->num_groups; ++g) {
    if (!local.at(first[g])) continue;
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
