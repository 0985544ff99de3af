// Reading enqueue times: a step marker on sojourn time, written as a new user
// would (docs/writing-a-scheme.md), once with the kUsesEnqueueTime declaration
// and once without. Without it the queue bank keeps no timestamps; the read
// must stop the program with a message naming the component and the missing
// declaration, in every build type (it was a bare SIGSEGV in Release).
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>

#include "schemes/scheme_test_util.h"

using namespace flexplane;
using namespace flexplane::test;

namespace flexplane {
namespace {

struct SojournMarkerParams {
  double threshold_us = 10;       // mark a head that waited longer than this
  uint32_t capacity_pkts = 1024;  // tail-drop limit
};

// Mark the head as it leaves when it waited longer than threshold_us.
template <class Self>
class SojournMarkerBase : public QueueManager<Self, SojournMarkerParams> {
 public:
  uint32_t queue_capacity_pkts() const override { return this->params().capacity_pkts; }
  void on_bind() { threshold_ = this->time().from_us(this->params().threshold_us); }
  void enqueue(Packet& p, PortId port, QueueId q, Timeslot, Verdicts& out) {
    if (!this->bank().push(port, q, p)) out.drop(p, Reason::kQueueFull);
  }
  bool dequeue(PortId port, QueueId q, Timeslot now, Packet& out, Verdicts& v) {
    if (now - this->bank().enqueue_time(port, q) > threshold_)
      v.mark_ecn(this->bank().peek_mut(port, q), port, q, Reason::kSojournAboveThreshold);
    out = this->bank().pop(port, q);
    return true;
  }

 private:
  Timeslot threshold_ = 0;
};

class SojournMarker : public SojournMarkerBase<SojournMarker> {
 public:
  static constexpr bool kUsesEnqueueTime = true;
};
class UndeclaredSojournMarker : public SojournMarkerBase<UndeclaredSojournMarker> {};  // the mistake

// A scheduler that reads enqueue times without declaring them: serve the queue whose head is oldest.
class UndeclaredOldestFirst : public Scheduler<UndeclaredOldestFirst, NoParams> {
 public:
  bool schedule(PortId port, Timeslot now, Packet& out) {
    QueueId best = 0;
    Timeslot oldest = ~Timeslot{0};
    for (uint64_t live = bank().nonempty_queues(port); live; live &= live - 1) {
      const auto q = static_cast<QueueId>(__builtin_ctzll(live));
      if (bank().enqueue_time(port, q) < oldest) oldest = bank().enqueue_time(port, q), best = q;
    }
    return dequeue(port, best, now, out);
  }
};

FLEXPLANE_REGISTER_QUEUE_MANAGER(SojournMarker, "test_sojourn_marker", "test: mark heads that waited too long",
    param(&SojournMarkerParams::threshold_us, "threshold_us", "mark above this sojourn time, us", {0, 1e9}),
    param(&SojournMarkerParams::capacity_pkts, "capacity_pkts", "tail-drop limit, packets", {1, 1 << 20}));
FLEXPLANE_TEST_PARAMS(QueueManagerBase, "test_sojourn_marker", {"threshold_us", "3"}, {"capacity_pkts", "30"});
FLEXPLANE_REGISTER_QUEUE_MANAGER(UndeclaredSojournMarker, "test_sojourn_marker_undeclared",
    "test: the same without kUsesEnqueueTime",
    param(&SojournMarkerParams::threshold_us, "threshold_us", "mark above this sojourn time, us", {0, 1e9}));
FLEXPLANE_REGISTER_SCHEDULER(UndeclaredOldestFirst, "test_oldest_first_undeclared",
    "test: oldest head first, without kUsesEnqueueTime");

}  // namespace
}  // namespace flexplane

namespace {

struct ChildResult {
  bool exited = false;
  int status = -1;
  std::string err;
};

// Runs `fn` in a child process (the failure ends the process) and collects its stderr and exit status.
ChildResult run_in_child(const std::function<void()>& fn) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  std::fflush(nullptr);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    try {
      fn();
    } catch (...) {
      _exit(99);
    }
    _exit(0);
  }
  close(fds[1]);
  ChildResult r;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) r.err.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  r.exited = WIFEXITED(status);
  r.status = r.exited ? WEXITSTATUS(status) : -WTERMSIG(status);
  return r;
}

Packet ect(uint32_t seq) {
  Packet p = pkt(1, seq);
  p.flags = kFlagEct;
  return p;
}

}  // namespace

TEST_CASE("a declared sojourn step marker marks heads that waited longer than the threshold",
          "[schemes][enqueue_time]") {
  // threshold 2 us = 2 ticks. Five packets arrive at t = 0 and leave one per tick: packet i at
  // t = i has waited i ticks, so packets 3 and 4 (waited 3, 4 > 2) are marked, 0..2 are not.
  TestRouter r(1, {{"single"}, {"test_sojourn_marker", {{"threshold_us", "2"}}}, {"fifo"}});
  REQUIRE(r.bank().keeps_enqueue_time());
  r.input({ect(0), ect(1), ect(2), ect(3), ect(4)}, 0);
  const std::vector<Packet> sent = r.drain(0, 0);
  REQUIRE(sent.size() == 5);
  for (uint32_t i = 0; i < 5; ++i) CHECK(sent[i].ce() == (i > 2));
  CHECK(r.marks(0, 0, Reason::kSojournAboveThreshold) == 2);
  CHECK(r.counters(0, 0).marked == 2);
  CHECK(std::string(reason_name(Reason::kSojournAboveThreshold)) == "sojourn_above_threshold");
  r.check_invariants();
}

TEST_CASE("a scheme's own test parameters drive the generic overload", "[schemes][enqueue_time][invariants]") {
  // Declared beside the registration above; with them the 30-packet buffer overflows in the overload.
  REQUIRE(quick_params("test_sojourn_marker") ==
          std::vector<std::pair<std::string, std::string>>{{"threshold_us", "3"}, {"capacity_pkts", "30"}});
  CHECK(overload({{"single"}, with_test_params<QueueManagerBase>("test_sojourn_marker"), {"fifo"}}, 5).drops > 0);
}

TEST_CASE("reading enqueue times without declaring kUsesEnqueueTime stops the run with a message",
          "[schemes][enqueue_time]") {
  SECTION("a queue manager, in its dequeue hook (called from the scheduler's turn)") {
    const ChildResult r = run_in_child([] {
      TestRouter router(2, {{"single"}, {"test_sojourn_marker_undeclared"}, {"fifo"}});
      router.input({pkt(1, 0, 1)}, 0);
      router.output(1);
    });
    INFO(r.err);
    CHECK(r.exited);
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Catch::StartsWith("error: queue_manager 'test_sojourn_marker_undeclared' (router 0) reads "
                                        "packets' enqueue times"));
    CHECK_THAT(r.err, Catch::Contains("static constexpr bool kUsesEnqueueTime = true;"));
  }
  SECTION("a scheduler") {
    const ChildResult r = run_in_child([] {
      TestRouter router(1, {{"by_flow", {{"num_queues", "4"}}}, {"droptail"}, {"test_oldest_first_undeclared"}});
      router.input({pkt(1, 0), pkt(2, 0)}, 0);
      router.output(0);
    });
    INFO(r.err);
    CHECK(r.exited);
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Catch::StartsWith("error: scheduler 'test_oldest_first_undeclared' (router 0) reads"));
    CHECK_THAT(r.err, Catch::Contains("kUsesEnqueueTime"));
  }
}
