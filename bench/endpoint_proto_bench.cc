// Per-request cost of the endpoint side of the wire protocol: the same C code
// (proto/fp_endpoint_conn.c) the kernel module runs for every abstract packet
// (kmod/fpq_packet.c, kmod/fpq_channel.c; docs/kmod.md).
//
// In-process, no network: an fp_ep_conn and an fp_emu_conn exchange
// datagrams through memory. Each iteration submits B requests (one per
// abstract packet), encodes them (fp_ep_poll), lets the emulator connection
// accept them and answer each with a RELEASE verdict, and decodes the
// verdicts (fp_ep_rx, one callback per verdict) — plus the endpoint's acks.
//
// Measured (manual time): only the endpoint's calls — fp_ep_submit,
// fp_ep_poll, fp_ep_rx with its callback — i.e. what the module's enqueue,
// transmit work item and receive hook spend in the protocol core per request.
// Not measured: the emulator side, the kernel's skb and socket work.
// items_per_second = requests (each with its verdict) per second.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

extern "C" {
#include "fp_emu_conn.h"
#include "fp_endpoint_conn.h"
#include "fp_wire.h"
}

namespace {

using Clock = std::chrono::steady_clock;

struct Pair {
  std::vector<fp_ep_slot> slots = std::vector<fp_ep_slot>(4096);
  std::vector<fp_verdict> ring = std::vector<fp_verdict>(4096);
  fp_ep_conn ep;
  fp_emu_conn emu;
  std::vector<std::pair<fp_emu_token, fp_request>> tokens;
  uint64_t verdicts = 0;
  uint64_t now = 1000;

  Pair() {
    fp_ep_config ec;
    fp_ep_config_default(&ec);
    ec.instance = 0x1234567u;
    ec.window = 4096;
    ec.batch_delay_ns = 0;  // every poll sends what is queued (the module's work item does)
    ec.ack_delay_ns = 0;
    fp_ep_conn_init(&ep, &ec, slots.data(), (uint32_t)slots.size(), now);
    fp_emu_config mc;
    fp_emu_config_default(&mc);
    mc.endpoint_id = 0;
    mc.apkt_bytes = 1500;
    mc.epoch_seed = 0x1000;
    mc.batch_delay_ns = 0;
    mc.ack_delay_ns = 0;
    fp_emu_conn_init(&emu, &mc, ring.data(), (uint32_t)ring.size(), now);
    handshake();
  }

  static int on_request(void* ctx, const fp_emu_token* tok, const fp_request* req) {
    static_cast<Pair*>(ctx)->tokens.emplace_back(*tok, *req);
    return 0;
  }
  static void on_verdict(void* ctx, const fp_verdict*, const fp_request*, uint64_t) {
    static_cast<Pair*>(ctx)->verdicts++;
  }

  // Endpoint -> emulator: every datagram the endpoint has due (timed by the caller).
  void ep_to_emu(std::vector<std::vector<uint8_t>>* out) {
    uint8_t buf[FP_DEFAULT_MAX_DGRAM];
    int n;
    while ((n = fp_ep_poll(&ep, now, buf, sizeof buf)) > 0) out->emplace_back(buf, buf + n);
  }
  void emu_rx(const std::vector<std::vector<uint8_t>>& dgrams) {
    for (const auto& d : dgrams) fp_emu_rx(&emu, d.data(), d.size(), now, on_request, this);
  }
  void emu_answer(std::vector<std::vector<uint8_t>>* out) {
    for (const auto& [tok, req] : tokens) {
      fp_verdict v;
      std::memset(&v, 0, sizeof v);
      v.flow = req.flow;
      v.id = req.id;
      v.action = FP_ACT_RELEASE;
      fp_emu_push_verdict(&emu, &tok, &v, now);
    }
    tokens.clear();
    uint8_t buf[FP_DEFAULT_MAX_DGRAM];
    int n;
    while ((n = fp_emu_poll(&emu, now, buf, sizeof buf)) > 0) out->emplace_back(buf, buf + n);
  }

  void handshake() {
    for (int i = 0; i < 4 && ep.state != FP_EP_ESTABLISHED; i++) {
      std::vector<std::vector<uint8_t>> a, b;
      ep_to_emu(&a);
      emu_rx(a);
      emu_answer(&b);
      for (const auto& d : b) fp_ep_rx(&ep, d.data(), d.size(), now, on_verdict, this);
      now += 1000;
    }
  }
};

void BM_EndpointProtoPerRequest(benchmark::State& state) {
  const uint32_t batch = static_cast<uint32_t>(state.range(0));
  Pair p;
  if (p.ep.state != FP_EP_ESTABLISHED) {
    state.SkipWithError("no session");
    return;
  }
  std::vector<std::vector<uint8_t>> to_emu, to_ep;
  uint32_t id = 0;
  for (auto _ : state) {
    to_emu.clear();
    to_ep.clear();
    auto t0 = Clock::now();
    for (uint32_t i = 0; i < batch; i++) {
      fp_request r;
      std::memset(&r, 0, sizeof r);
      r.flow = 0x9e3779b9u * (i % 16);
      r.id = id++;
      r.dst = 1;
      r.size_bytes = 1500;
      r.flags = FP_REQ_ECT;
      fp_ep_submit(&p.ep, &r, i, p.now);
    }
    p.ep_to_emu(&to_emu);
    double ep_s = std::chrono::duration<double>(Clock::now() - t0).count();
    p.emu_rx(to_emu);
    p.emu_answer(&to_ep);
    t0 = Clock::now();
    for (const auto& d : to_ep) fp_ep_rx(&p.ep, d.data(), d.size(), p.now, Pair::on_verdict, &p);
    to_emu.clear();
    p.ep_to_emu(&to_emu);  // the endpoint's ack of the verdicts
    ep_s += std::chrono::duration<double>(Clock::now() - t0).count();
    p.emu_rx(to_emu);
    p.now += 10000;
    state.SetIterationTime(ep_s);
  }
  if (p.verdicts < static_cast<uint64_t>(state.iterations()) * batch) {
    state.SkipWithError("verdicts missing");
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * batch);
  state.counters["ns_per_request"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * batch,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_EndpointProtoPerRequest)->Arg(1)->Arg(16)->Arg(64)->UseManualTime();

}  // namespace
