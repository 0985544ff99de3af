#include "emulator/engine/mpi/mpi_partition.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "emulator/engine/serial.h"
#include "emulator/engine/spin_wait.h"

namespace flexplane {

namespace {

constexpr int kTag = 7101;

// A message is a run of records; data records come before watermark
// records (MpiPartition::send_round), and are applied in that order.
enum Record : uint8_t {
  kLinkSlot = 1,   // u32 link, arrival, Packet
  kItem = 2,       // u32 item, u32 bytes, bytes (MirroredState::apply)
  kCoreMarks = 3,  // u32 core, next, finished, u32 n, n promises (by core)
  kDonePost = 4,   // u32 core, u8 slot, tag, busy, in_transit
  kDone = 5,       // the sender's cores have finished; nothing follows from it
  kLinkCtrl = 6,   // u32 link, arrival, u8 paused (a PFC frame on its control lane)
};

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    std::fprintf(stderr, "flexplane-emulator: MPI: %s: %.*s\n", what, len, msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

// Threads for this rank's cores, pinned past the CPUs the ranks before it on
// this machine use (each rank: its cores and its pump thread), when the
// machine has a CPU for every one of them; unpinned otherwise.
class MpiLauncher final : public CoreLauncher {
 public:
  MpiLauncher(uint32_t local_rank, uint32_t per_rank_threads, bool pin)
      : first_(local_rank * per_rank_threads + 1), pin_(pin) {}
  void run(std::vector<std::function<void()>> jobs, const std::function<void()>& monitor) override {
    const std::vector<int> cpus = allowed_cpus();
    std::vector<std::thread> threads;
    for (size_t i = 0; i < jobs.size(); ++i) {
      threads.emplace_back(std::move(jobs[i]));
      if (pin_ && first_ + i < cpus.size()) pin_to_cpu(threads.back(), cpus[first_ + i]);
    }
    if (monitor) monitor();
    for (auto& t : threads) t.join();
  }
  bool cpu_per_job(size_t) const override { return pin_; }

 private:
  size_t first_;
  bool pin_;
};

}  // namespace

struct MpiPartition::Sent {
  std::vector<Timeslot> next, finished;
  std::vector<std::vector<Timeslot>> promise;
  std::vector<std::array<uint64_t, 4>> post_tag;
};

bool MpiPartition::launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
  return false;
}

void MpiPartition::init(int* argc, char*** argv) {
  int provided = 0;
  check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  if (provided < MPI_THREAD_FUNNELED) {
    std::fprintf(stderr, "flexplane-emulator: MPI: the library gives no thread support (MPI_THREAD_FUNNELED needed)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  // Errors end the whole job with a message, never a hang.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

uint32_t MpiPartition::world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return static_cast<uint32_t>(r);
}

uint32_t MpiPartition::world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return static_cast<uint32_t>(n);
}

void MpiPartition::finalize() { MPI_Finalize(); }

MpiPartition::MpiPartition(uint32_t cores_per_rank) : cores_per_rank_(cores_per_rank) {
  rank_ = world_rank();
  ranks_ = world_size();
  MPI_Comm local;
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, static_cast<int>(rank_), MPI_INFO_NULL, &local),
        "MPI_Comm_split_type");
  int lr = 0, ls = 1;
  MPI_Comm_rank(local, &lr);
  MPI_Comm_size(local, &ls);
  MPI_Comm_free(&local);
  local_rank_ = static_cast<uint32_t>(lr);
  local_size_ = static_cast<uint32_t>(ls);
  const size_t cpus = allowed_cpus().size();
  // Threads per rank: its cores and the thread that calls MPI, which runs
  // the core itself when there is one (Engine::run).
  const uint32_t threads = cores_per_rank_ == 1 ? 1 : cores_per_rank_ + 1;
  share_cpus_ = cpus < size_t{local_size_} * threads;
  launcher_ = std::make_unique<MpiLauncher>(local_rank_, threads, !share_cpus_);
  out_.resize(ranks_);
}

MpiPartition::~MpiPartition() = default;

void MpiPartition::attach(const PartitionView* view) {
  view_ = view;
  const uint32_t cores = static_cast<uint32_t>(view->cores.size());
  rank_of_core_.resize(cores);
  for (uint32_t c = 0; c < cores; ++c) rank_of_core_[c] = c / cores_per_rank_;
  core_shipped_.assign(cores, 0);
  snap_.assign(cores, Snap{});
  marks_.assign(ranks_, {});
  item_marks_.assign(ranks_, {});
  // An item is collected here if some writer runs here and no reader does
  // (a reader here takes the writers' additions itself), and sent to every
  // rank that runs a reader.
  item_ranks_.assign(view->items.size(), {});
  ship_data_.clear();
  ship_marks_.clear();
  for (uint32_t i = 0; i < view->items.size(); ++i) {
    const auto& it = view->items[i];
    const auto here = [&](uint32_t c) { return rank_of_core_[c] == rank_; };
    if (std::none_of(it.writer_cores.begin(), it.writer_cores.end(), here)) continue;
    if (std::any_of(it.reader_cores.begin(), it.reader_cores.end(), here) &&
        it.state->kind() == MirroredState::Kind::kData)
      continue;  // data a local reader takes: collecting it here would steal it
    auto& v = item_ranks_[i];
    for (uint32_t c : it.reader_cores)
      if (!here(c) && std::find(v.begin(), v.end(), rank_of_core_[c]) == v.end()) v.push_back(rank_of_core_[c]);
    if (v.empty()) continue;
    (it.state->kind() == MirroredState::Kind::kData ? ship_data_ : ship_marks_).push_back(i);
  }
  sent_.clear();
  for (uint32_t r = 0; r < ranks_; ++r) {
    auto s = std::make_unique<Sent>();
    s->next.assign(cores, ~Timeslot{0});
    s->finished.assign(cores, ~Timeslot{0});
    s->promise.assign(cores, std::vector<Timeslot>(cores, ~Timeslot{0}));
    s->post_tag.assign(cores, {~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}});
    sent_.push_back(std::move(s));
  }
}

// One round: snapshot the local cores' watermarks, then gather the data they
// cover, and send each other rank one message (data first). Returns whether
// anything was sent.
bool MpiPartition::send_round(bool final_round) {
  const uint32_t cores = static_cast<uint32_t>(view_->cores.size());
  // This round's pieces, per rank (members: a round allocates nothing once warm).
  std::vector<std::string>& marks = marks_;
  std::vector<std::string>& item_marks = item_marks_;
  for (uint32_t r = 0; r < ranks_; ++r) out_[r].clear(), marks[r].clear(), item_marks[r].clear();
  // 1. Watermarks: promises, then next and finished (acquire; a promise is
  //    published after the watermark it builds on), then the posts.
  std::vector<Snap>& snap = snap_;
  for (uint32_t c = 0; c < cores; ++c) {
    if (rank_of_core_[c] != rank_) continue;
    const PartitionView::Core& v = view_->cores[c];
    snap[c].promise.clear();
    for (auto* p : v.promise_to) snap[c].promise.push_back(p->load(std::memory_order_acquire));
    snap[c].next = v.next->load(std::memory_order_acquire);
    snap[c].finished = v.finished->load(std::memory_order_acquire);
  }
  for (uint32_t r = 0; r < ranks_; ++r) {
    if (r == rank_) continue;
    serial::Writer w(marks[r]);
    Sent& s = *sent_[r];
    for (uint32_t c = 0; c < cores; ++c) {
      if (rank_of_core_[c] != rank_) continue;
      const PartitionView::Core& v = view_->cores[c];
      for (uint8_t slot = 0; slot < 4; ++slot) {
        const PartitionView::DonePost& p = v.done_post[slot];
        const uint64_t tag = p.tag->load(std::memory_order_acquire);
        if (tag == s.post_tag[c][slot] || tag == ~uint64_t{0}) continue;
        const uint64_t busy = *p.busy;
        const int64_t in_transit = *p.in_transit;
        if (p.tag->load(std::memory_order_acquire) != tag) continue;  // rewritten meanwhile: next round
        s.post_tag[c][slot] = tag;
        w.put(kDonePost), w.put(c), w.put(slot), w.put(tag), w.put(busy), w.put(in_transit);
      }
      if (snap[c].next != s.next[c] || snap[c].finished != s.finished[c] || snap[c].promise != s.promise[c]) {
        s.next[c] = snap[c].next;
        s.finished[c] = snap[c].finished;
        s.promise[c] = snap[c].promise;
        w.put(kCoreMarks), w.put(c), w.put(snap[c].next), w.put(snap[c].finished);
        w.put(static_cast<uint32_t>(snap[c].promise.size()));
        for (Timeslot p : snap[c].promise) w.put(p);
      }
    }
  }
  // Traffic's watermarks, before its data.
  std::string& bytes = item_bytes_;
  auto add_item = [&](std::vector<std::string>& to, uint32_t i) {
    bytes.clear();
    view_->items[i].state->collect(bytes);
    if (bytes.empty()) return;
    for (uint32_t r : item_ranks_[i]) {
      serial::Writer w(to[r]);
      w.put(kItem), w.put(i), w.put(static_cast<uint32_t>(bytes.size()));
      to[r] += bytes;
    }
  };
  for (uint32_t i : ship_marks_) add_item(item_marks, i);
  // 2. Data: the slots local cores wrote on links to other ranks, for sends
  //    before their snapshotted watermark (their log says which), and
  //    traffic's data.
  for (uint32_t c = 0; c < cores; ++c) {
    const std::vector<std::vector<uint32_t>>& sent = *view_->cores[c].cross_sent;
    if (rank_of_core_[c] != rank_ || sent.empty()) continue;
    for (Timeslot& t = core_shipped_[c]; t < snap[c].next; ++t)
      for (uint32_t i : sent[t & (sent.size() - 1)]) {
        // What went on the link at t: a packet, a pause frame, or both
        // (then the link is logged twice and shipped twice, alike).
        const Link::View v = view_->links[i].link->view();
        const Timeslot a = t + v.latency;
        serial::Writer w(out_[rank_of_core_[view_->links[i].to_core]]);
        const Link::Slot& slot = v.slots[a & v.mask];
        if (slot.holds(a)) w.put(kLinkSlot), w.put(i), w.put(a), w.put(slot.pkt);
        uint8_t paused;
        if (v.ctrl && v.take_ctrl(a, paused)) w.put(kLinkCtrl), w.put(i), w.put(a), w.put(paused);
      }
  }
  for (uint32_t i : ship_data_) add_item(out_, i);
  // 3. One message per rank: data, traffic's watermarks, the engine's.
  bool any = false;
  for (uint32_t r = 0; r < ranks_; ++r) {
    if (r == rank_) continue;
    std::string& m = out_[r];
    m += item_marks[r];
    m += marks[r];
    if (final_round) serial::Writer(m).put(kDone);
    if (m.empty()) continue;
    auto p = std::make_unique<Pending>();
    p->buf.swap(m);
    if (p->buf.size() > static_cast<size_t>(INT32_MAX)) abort("a message between ranks over 2 GiB");
    check(MPI_Isend(p->buf.data(), static_cast<int>(p->buf.size()), MPI_BYTE, static_cast<int>(r), kTag,
                    MPI_COMM_WORLD, &p->req),
          "MPI_Isend");
    pending_.push_back(std::move(p));
    any = true;
  }
  return any;
}

bool MpiPartition::receive_all() {
  bool any = false;
  for (;;) {
    int flag = 0;
    MPI_Status st;
    check(MPI_Iprobe(MPI_ANY_SOURCE, kTag, MPI_COMM_WORLD, &flag, &st), "MPI_Iprobe");
    if (!flag) return any;
    int n = 0;
    MPI_Get_count(&st, MPI_BYTE, &n);
    recv_buf_.resize(static_cast<size_t>(n));
    check(MPI_Recv(recv_buf_.data(), n, MPI_BYTE, st.MPI_SOURCE, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
    apply(recv_buf_.data(), recv_buf_.size(), st.MPI_SOURCE);
    any = true;
  }
}

void MpiPartition::apply(const char* data, size_t n, int from) {
  serial::Reader r(data, n);
  while (!r.done()) {
    const uint8_t rec = r.get<uint8_t>();
    switch (rec) {
      case kLinkSlot: {
        const uint32_t i = r.get<uint32_t>();
        if (i >= view_->links.size()) throw std::runtime_error("MPI: link out of range");
        const Link::View v = view_->links[i].link->view();
        const Timeslot a = r.get<Timeslot>();
        Link::Slot& s = v.slots[a & v.mask];
        s.pkt = r.get<Packet>();
        s.set(a);
        break;
      }
      case kLinkCtrl: {
        const uint32_t i = r.get<uint32_t>();
        if (i >= view_->links.size()) throw std::runtime_error("MPI: link out of range");
        const Link::View v = view_->links[i].link->view();
        if (!v.ctrl) throw std::runtime_error("MPI: a pause frame for a link without a control lane");
        const Timeslot a = r.get<Timeslot>();
        v.put_ctrl(a - v.latency, r.get<uint8_t>());
        break;
      }
      case kItem: {
        const uint32_t i = r.get<uint32_t>(), len = r.get<uint32_t>();
        if (i >= view_->items.size()) throw std::runtime_error("MPI: item out of range");
        view_->items[i].state->apply(r.bytes(len), len);
        break;
      }
      case kCoreMarks: {
        const uint32_t c = r.get<uint32_t>();
        if (c >= view_->cores.size()) throw std::runtime_error("MPI: core out of range");
        const PartitionView::Core& v = view_->cores[c];
        const Timeslot next = r.get<Timeslot>(), finished = r.get<Timeslot>();
        const uint32_t np = r.get<uint32_t>();
        if (np != v.promise_to.size()) throw std::runtime_error("MPI: promise count mismatch");
        for (uint32_t d = 0; d < np; ++d) v.promise_to[d]->store(r.get<Timeslot>(), std::memory_order_release);
        v.finished->store(finished, std::memory_order_release);
        v.next->store(next, std::memory_order_release);
        break;
      }
      case kDonePost: {
        const uint32_t c = r.get<uint32_t>();
        const uint8_t slot = r.get<uint8_t>();
        if (c >= view_->cores.size() || slot >= 4) throw std::runtime_error("MPI: post out of range");
        const PartitionView::DonePost& p = view_->cores[c].done_post[slot];
        const uint64_t tag = r.get<uint64_t>();
        *p.busy = r.get<uint64_t>();
        *p.in_transit = r.get<int64_t>();
        p.tag->store(tag, std::memory_order_release);
        break;
      }
      case kDone:
        ++done_from_;
        break;
      default:
        abort("a message from rank " + std::to_string(from) + " does not parse (record " + std::to_string(rec) + ")");
    }
  }
}

void MpiPartition::complete_sends(bool wait) {
  for (size_t i = 0; i < pending_.size();) {
    int done = 0;
    if (wait)
      check(MPI_Wait(&pending_[i]->req, MPI_STATUS_IGNORE), "MPI_Wait"), done = 1;
    else
      check(MPI_Test(&pending_[i]->req, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) {
      pending_[i] = std::move(pending_.back());
      pending_.pop_back();
    } else {
      ++i;
    }
  }
}

bool MpiPartition::pump() {
  const bool sent = send_round(false);
  const bool got = receive_all();
  complete_sends(false);
  return sent || got;
}

void MpiPartition::finish() {
  send_round(true);
  while (done_from_ < ranks_ - 1) {
    const bool got = receive_all();
    complete_sends(false);
    if (!got) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  complete_sends(true);
  done_from_ = 0;
}

std::vector<std::string> MpiPartition::gather(const std::string& mine) {
  if (mine.size() > static_cast<size_t>(INT32_MAX)) abort("results over 2 GiB on one rank");
  const int n = static_cast<int>(mine.size());
  std::vector<int> sizes(rank_ == 0 ? ranks_ : 0);
  check(MPI_Gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
  std::vector<int> at(sizes.size(), 0);
  size_t total = 0;
  for (size_t r = 0; r < sizes.size(); ++r) {
    if (total > static_cast<size_t>(INT32_MAX)) abort("results over 2 GiB in all");
    at[r] = static_cast<int>(total);
    total += static_cast<size_t>(sizes[r]);
  }
  std::string all(total, '\0');
  check(MPI_Gatherv(mine.data(), n, MPI_BYTE, all.data(), sizes.data(), at.data(), MPI_BYTE, 0, MPI_COMM_WORLD),
        "MPI_Gatherv");
  std::vector<std::string> out;
  for (size_t r = 0; r < sizes.size(); ++r) out.push_back(all.substr(static_cast<size_t>(at[r]), static_cast<size_t>(sizes[r])));
  return out;
}

void MpiPartition::abort(const std::string& why) {
  std::fprintf(stderr, "flexplane-emulator: rank %u: %s\n", rank_, why.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

}  // namespace flexplane
