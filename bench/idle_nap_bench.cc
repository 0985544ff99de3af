// How long an idle poller's nap really lasts (docs/live.md, "Where a round
// trip goes"): the comm core sleeps 20 us after 256 empty loops, and Linux
// may fire an ordinary thread's timer up to its timer slack late (50 us by
// default). Arg: the thread's timer slack in ns (the comm core sets 1000).
// Reports the nap's wall time per iteration; the difference between the two
// arguments is what the slack cost every request that arrived during a nap.
//   build/flexplane_bench --benchmark_filter=IdleNap
#include <benchmark/benchmark.h>
#include <sys/prctl.h>

#include <chrono>
#include <thread>

namespace {

void BM_IdleNap20us(benchmark::State& state) {
  const unsigned long before = static_cast<unsigned long>(prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0));
  prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(state.range(0)), 0, 0, 0);
  for (auto _ : state) std::this_thread::sleep_for(std::chrono::microseconds(20));
  prctl(PR_SET_TIMERSLACK, before, 0, 0, 0);
}
BENCHMARK(BM_IdleNap20us)->ArgName("slack_ns")->Arg(50000)->Arg(1000)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
