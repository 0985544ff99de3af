// Connection state machines, step by step: session start, exactly-once
// delivery with replays and duplicates, custom-data / feature / scheme /
// version mismatch, timers, flow control, emulator restart and resync.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <tuple>
#include <vector>

#include "fp_test_sim.h"

using fptest::emu_config;
using fptest::ep_config;
using fptest::make_request;

namespace {

using Dgrams = std::vector<std::vector<uint8_t>>;
constexpr uint64_t kUs = 1000;
constexpr uint64_t kMs = 1000000;

// Everything a connection has to send now; afterwards its deadline lies ahead.
template <typename Conn>
Dgrams drain(Conn* c, uint64_t now, int (*poll)(Conn*, uint64_t, uint8_t*, size_t),
             uint64_t (*next_deadline)(const Conn*)) {
  Dgrams out;
  uint8_t buf[FP_DEFAULT_MAX_DGRAM];
  int n;
  while ((n = poll(c, now, buf, sizeof(buf))) > 0) out.emplace_back(buf, buf + n);
  REQUIRE(n == 0);
  CHECK(next_deadline(c) > now);
  return out;
}

struct Delivered {
  fp_verdict v;
  fp_request req;
  uint64_t user;
};

struct Pair {
  std::vector<fp_ep_slot> slots;
  std::vector<fp_verdict> ring;
  fp_ep_conn ep;
  fp_emu_conn emu;
  uint64_t now = 0;
  std::vector<std::pair<fp_emu_token, fp_request>> engine;  // accepted, undecided
  std::vector<Delivered> delivered;
  bool refuse = false;
  bool push_inline = false;  // decide inside the request callback

  Pair(const fp_ep_config& ec, const fp_emu_config& mc, uint32_t nslots = 64,
       uint32_t ring_cap = 64)
      : slots(nslots), ring(ring_cap) {
    REQUIRE(fp_ep_conn_init(&ep, &ec, slots.data(), nslots, 0) == 0);
    REQUIRE(fp_emu_conn_init(&emu, &mc, ring.data(), ring_cap, 0) == 0);
  }
  Pair() : Pair(ep_config(), emu_config()) {}

  void restart_emulator(const fp_emu_config& mc) {
    engine.clear();
    REQUIRE(fp_emu_conn_init(&emu, &mc, ring.data(), (uint32_t)ring.size(), now) == 0);
  }

  Dgrams ep_poll() { return drain(&ep, now, fp_ep_poll, fp_ep_next_deadline); }
  Dgrams emu_poll() { return drain(&emu, now, fp_emu_poll, fp_emu_next_deadline); }
  std::vector<int> to_emu(const Dgrams& d) {
    std::vector<int> rcs;
    for (const auto& x : d) rcs.push_back(fp_emu_rx(&emu, x.data(), x.size(), now, &on_request, this));
    return rcs;
  }
  std::vector<int> to_ep(const Dgrams& d) {
    std::vector<int> rcs;
    for (const auto& x : d) rcs.push_back(fp_ep_rx(&ep, x.data(), x.size(), now, &on_verdict, this));
    return rcs;
  }
  void handshake() {
    to_emu(ep_poll());
    to_ep(emu_poll());
    REQUIRE(ep.state == FP_EP_ESTABLISHED);
  }
  void submit(uint32_t i) {
    fp_request r = make_request(i);
    REQUIRE(fp_ep_submit(&ep, &r, i, now) == 0);
  }
  fp_verdict verdict_for(const fp_request& r) {
    fp_verdict v;
    std::memset(&v, 0, sizeof(v));
    v.flow = r.flow;
    v.id = r.id;
    v.action = fptest::action_for(r);
    for (unsigned k = 0; k < FP_MAX_CUSTOM; k++) v.custom[k] = fptest::custom_for(r, k);
    return v;
  }
  // The engine decides the accepted requests with the given indices (or all).
  void decide(std::vector<size_t> which = {}) {
    if (which.empty())
      for (size_t i = 0; i < engine.size(); i++) which.push_back(i);
    for (size_t i : which) {
      fp_verdict v = verdict_for(engine[i].second);
      REQUIRE(fp_emu_push_verdict(&emu, &engine[i].first, &v, now) == 0);
    }
    std::vector<std::pair<fp_emu_token, fp_request>> rest;
    for (size_t i = 0; i < engine.size(); i++)
      if (std::find(which.begin(), which.end(), i) == which.end()) rest.push_back(engine[i]);
    engine = rest;
  }
  // Exchange everything (no loss) until both sides are quiet.
  void settle() {
    for (int round = 0; round < 100; round++) {
      Dgrams a = ep_poll(), b = emu_poll();
      if (a.empty() && b.empty()) {
        uint64_t t = std::min(fp_ep_next_deadline(&ep), fp_emu_next_deadline(&emu));
        if (t == FP_TIME_NEVER || t >= now + 5 * kMs) return;  // only probes left
        now = t;
        continue;
      }
      to_emu(a);
      to_ep(b);
      now += kUs;
    }
    FAIL("did not settle");
  }

  static int on_request(void* ctx, const fp_emu_token* tok, const fp_request* req) {
    Pair* p = static_cast<Pair*>(ctx);
    if (p->refuse) return 1;
    if (p->push_inline) {
      fp_verdict v = p->verdict_for(*req);
      REQUIRE(fp_emu_push_verdict(&p->emu, tok, &v, p->now) == 0);
      return 0;
    }
    p->engine.emplace_back(*tok, *req);
    return 0;
  }
  static void on_verdict(void* ctx, const fp_verdict* v, const fp_request* req, uint64_t user) {
    static_cast<Pair*>(ctx)->delivered.push_back({*v, *req, user});
  }
};

fp_hdr header_of(const std::vector<uint8_t>& d) {
  fp_hdr h;
  REQUIRE(fp_decode_hdr(d.data(), d.size(), &h) > 0);
  return h;
}

}  // namespace

TEST_CASE("conn: session start (HELLO / WELCOME)") {
  fp_ep_config ec = ep_config();
  ec.window = 1000;
  Pair p(ec, emu_config(), 64, 32);
  CHECK(p.ep.state == FP_EP_CONNECTING);
  CHECK(fp_ep_next_deadline(&p.ep) == 0);  // HELLO due at once
  Dgrams hello = p.ep_poll();
  REQUIRE(hello.size() == 1);
  fp_hello h;
  REQUIRE(fp_decode_hello(hello[0].data(), hello[0].size(), &h) == 0);
  CHECK(h.instance == ec.instance);
  CHECK(h.attempt == 1);
  CHECK(h.first_rseq == 0);
  CHECK(h.window == 64);  // clamped to the slot count
  CHECK(h.req_custom_len == 4);
  CHECK(h.verdict_custom_len == 2);
  CHECK(std::string(h.scheme) == "dctcp");
  CHECK(fp_ep_next_deadline(&p.ep) == ec.hello_rto_ns);

  REQUIRE(p.to_emu(hello) == std::vector<int>{0});
  CHECK(p.emu.state == FP_EMU_ESTABLISHED);
  Dgrams welcome = p.emu_poll();
  REQUIRE(welcome.size() == 1);
  fp_welcome w;
  REQUIRE(fp_decode_welcome(welcome[0].data(), welcome[0].size(), &w) == 0);
  CHECK(w.session == p.emu.session);
  CHECK(w.session != 0);
  CHECK(w.endpoint_id == 7);
  CHECK(w.window == 32);
  CHECK(w.apkt_bytes == 1500);

  REQUIRE(p.to_ep(welcome) == std::vector<int>{0});
  CHECK(p.ep.state == FP_EP_ESTABLISHED);
  CHECK(p.ep.session == w.session);
  CHECK(p.ep.endpoint_id == 7);
  CHECK(p.ep.apkt_bytes == 1500);
  CHECK(p.ep.win == 32);
  CHECK(p.ep_poll().empty());
  CHECK(fp_ep_next_deadline(&p.ep) == FP_TIME_NEVER);
  CHECK(fp_emu_next_deadline(&p.emu) == FP_TIME_NEVER);

  SECTION("HELLO is retransmitted with backoff while unanswered") {
    Pair q(ec, emu_config());
    REQUIRE(q.ep_poll().size() == 1);
    uint64_t rto = ec.hello_rto_ns;
    for (int i = 0; i < 8; i++) {
      q.now = fp_ep_next_deadline(&q.ep);
      REQUIRE(q.ep_poll().size() == 1);
      rto = std::min(rto * 2, ec.hello_rto_max_ns);
      CHECK(fp_ep_next_deadline(&q.ep) == q.now + rto);
    }
    CHECK(q.ep.stats.hellos_sent == 9);
  }
}

TEST_CASE("conn: requests and verdicts, exactly once, custom data and priority both ways") {
  fp_ep_config ec = ep_config(6, 3, FP_FEAT_PRIO, "pfabric");
  fp_emu_config mc = emu_config(6, 3, FP_FEAT_PRIO, "pfabric");
  Pair p(ec, mc);
  p.handshake();
  for (uint32_t i = 0; i < 10; i++) p.submit(i);
  CHECK(fp_ep_pending(&p.ep) == 10);
  Dgrams reqs = p.ep_poll();
  REQUIRE(reqs.size() == 1);
  fp_batch b;
  REQUIRE(fp_decode_requests(reqs[0].data(), reqs[0].size(), &b) == 0);
  CHECK(b.count == 10);
  CHECK((b.hdr.flags & FP_F_PRIO) != 0);
  CHECK(b.entry_len == 14 + 4 + 6);
  CHECK(fp_ep_next_deadline(&p.ep) == p.now + ec.rto_ns);

  p.to_emu(reqs);
  REQUIRE(p.engine.size() == 10);
  for (uint32_t i = 0; i < 10; i++) {
    fp_request want = make_request(i);
    const fp_request& got = p.engine[i].second;
    CHECK(got.flow == want.flow);
    CHECK(got.id == want.id);
    CHECK(got.dst == want.dst);
    CHECK(got.size_bytes == want.size_bytes);
    CHECK(got.flags == want.flags);
    CHECK(got.dscp == want.dscp);
    CHECK(got.priority == want.priority);
    CHECK(std::memcmp(got.custom, want.custom, 6) == 0);
    CHECK(got.custom[6] == 0);  // beyond the negotiated size: zero
    CHECK(p.engine[i].first.rseq == i);
  }
  // Ack is delayed, not immediate.
  CHECK(p.emu_poll().empty());
  CHECK(fp_emu_next_deadline(&p.emu) == p.now + mc.ack_delay_ns);

  p.now += 5 * kUs;
  p.decide({3, 1});  // out of order
  Dgrams vs = p.emu_poll();
  REQUIRE(vs.size() == 1);
  fp_batch vb;
  REQUIRE(fp_decode_verdicts(vs[0].data(), vs[0].size(), &vb) == 0);
  CHECK(vb.ack == 10);  // piggybacked request ack
  CHECK(vb.count == 2);
  p.to_ep(vs);
  REQUIRE(p.delivered.size() == 2);
  CHECK(p.delivered[0].user == 3);
  CHECK(p.delivered[1].user == 1);
  CHECK(p.ep.tx.una == 10);
  CHECK(fp_ep_next_deadline(&p.ep) == p.now + ec.ack_delay_ns);  // rto disarmed, ack delayed
  CHECK(p.ep.low == 0);  // request 0 still pending

  p.decide();
  p.to_ep(p.emu_poll());
  REQUIRE(p.delivered.size() == 10);
  std::vector<int> seen(10, 0);
  for (const auto& d : p.delivered) {
    seen[d.user]++;
    fp_request want = make_request((uint32_t)d.user);
    CHECK(d.req.flow == want.flow);
    CHECK(d.v.flow == want.flow);
    CHECK(d.v.id == want.id);
    CHECK(d.v.action == fptest::action_for(want));
    for (unsigned k = 0; k < 3; k++) CHECK(d.v.custom[k] == fptest::custom_for(want, k));
    CHECK(d.v.custom[3] == 0);
  }
  CHECK(seen == std::vector<int>(10, 1));
  CHECK(p.ep.low == 10);
  CHECK(fp_ep_pending(&p.ep) == 0);

  // The verdict ack goes out after the ack delay and frees the emulator's ring.
  CHECK(p.ep_poll().empty());
  p.now += ec.ack_delay_ns;
  Dgrams ack = p.ep_poll();
  REQUIRE(ack.size() == 1);
  CHECK(p.ep.stats.acks_sent == 1);
  CHECK(p.emu.inflight == 10);
  p.to_emu(ack);
  CHECK(p.emu.inflight == 0);
  CHECK(p.emu.tx.una == 10);
  CHECK(fp_emu_next_deadline(&p.emu) == FP_TIME_NEVER);
  CHECK(fp_ep_next_deadline(&p.ep) == FP_TIME_NEVER);
}

TEST_CASE("conn: a verdict pushed from inside the request callback") {
  Pair p;
  p.push_inline = true;
  p.handshake();
  for (uint32_t i = 0; i < 5; i++) p.submit(i);
  p.to_emu(p.ep_poll());
  p.to_ep(p.emu_poll());
  CHECK(p.delivered.size() == 5);
}

TEST_CASE("conn: replayed requests are recognised and only re-acknowledged") {
  Pair p;
  p.handshake();
  for (uint32_t i = 0; i < 20; i++) p.submit(i);
  Dgrams reqs = p.ep_poll();
  REQUIRE(reqs.size() == 1);
  p.to_emu(reqs);
  CHECK(p.engine.size() == 20);
  CHECK(p.emu_poll().empty());  // delayed ack
  p.to_emu(reqs);
  p.to_emu(reqs);
  CHECK(p.engine.size() == 20);  // idempotent
  CHECK(p.emu.stats.request_dups == 40);
  Dgrams ack = p.emu_poll();  // a duplicate triggers an immediate ack
  REQUIRE(ack.size() == 1);
  fp_batch b;
  REQUIRE(fp_decode_verdicts(ack[0].data(), ack[0].size(), &b) == 0);
  CHECK(b.count == 0);
  CHECK(b.ack == 20);

  // A batch overlapping old and new requests: only the new tail is taken.
  for (uint32_t i = 20; i < 25; i++) p.submit(i);
  p.now = p.ep.tx.rto_due;  // the retransmission timer (nothing acked yet)
  Dgrams again = p.ep_poll();          // go-back-N: 0..24
  REQUIRE(again.size() == 1);
  REQUIRE(fp_decode_requests(again[0].data(), again[0].size(), &b) == 0);
  CHECK(b.base == 0);
  CHECK(b.count == 25);
  p.to_emu(again);
  CHECK(p.engine.size() == 25);
  for (uint32_t i = 0; i < 25; i++) CHECK(p.engine[i].first.rseq == i);
}

TEST_CASE("conn: duplicated and reordered verdicts are delivered once") {
  fp_emu_config mc = emu_config();
  mc.max_batch = 2;
  Pair p(ep_config(), mc);
  p.handshake();
  for (uint32_t i = 0; i < 6; i++) p.submit(i);
  p.to_emu(p.ep_poll());
  p.decide();
  Dgrams vs = p.emu_poll();
  REQUIRE(vs.size() == 3);
  // Deliver 2nd, 1st, 1st, 3rd, 2nd, 3rd.
  p.to_ep({vs[1]});
  CHECK(p.delivered.empty());  // gap: dropped, NAK scheduled
  CHECK(p.ep.stats.verdict_gaps == 1);
  CHECK(p.ep.nak_pending == 1);
  p.to_ep({vs[0], vs[0], vs[2], vs[1]});
  CHECK(p.delivered.size() == 4);  // 0,1 then 2,3 (vs[2] came before vs[1]: gap again)
  p.to_ep({vs[2]});
  CHECK(p.delivered.size() == 6);
  std::vector<int> seen(6, 0);
  for (const auto& d : p.delivered) seen[d.user]++;
  CHECK(seen == std::vector<int>(6, 1));
  CHECK(p.ep.stats.verdict_dups == 2);
  // The NAK reaches the emulator with the next ack.
  Dgrams ack = p.ep_poll();
  REQUIRE(ack.size() == 1);
  CHECK((header_of(ack[0]).flags & FP_F_NAK) != 0);
}

TEST_CASE("conn: verdicts naming no pending request are not delivered") {
  Pair p;
  p.handshake();
  p.submit(0);
  p.to_emu(p.ep_poll());
  uint8_t buf[256];
  fp_batch_writer w;
  fp_request r0 = make_request(0);
  fp_verdict v = p.verdict_for(r0);

  SECTION("unknown rseq") { v.rseq = 5; }
  SECTION("flow / id mismatch") {
    v.rseq = 0;
    v.id += 1;
  }
  REQUIRE(fp_batch_begin(&w, buf, sizeof(buf), FP_MSG_VERDICTS, p.ep.session, 0, 2, 1,
                         p.ep.v_expected) == 0);
  REQUIRE(fp_batch_add_verdict(&w, &v) == 0);
  int n = fp_batch_finish(&w);
  p.to_ep({Dgrams::value_type(buf, buf + n)});
  CHECK(p.delivered.empty());
  CHECK(p.ep.stats.verdict_mismatch == 1);
  CHECK(fp_ep_pending(&p.ep) == 1);
}

TEST_CASE("conn: MARK for a non-ECT request is counted") {
  Pair p;
  p.handshake();
  fp_request r = make_request(1);
  r.flags = 0;
  REQUIRE(fp_ep_submit(&p.ep, &r, 1, 0) == 0);
  p.to_emu(p.ep_poll());
  fp_verdict v = p.verdict_for(r);
  v.action = FP_ACT_MARK;
  REQUIRE(fp_emu_push_verdict(&p.emu, &p.engine[0].first, &v, p.now) == 0);
  p.to_ep(p.emu_poll());
  CHECK(p.delivered.size() == 1);
  CHECK(p.ep.stats.mark_non_ect == 1);
}

TEST_CASE("conn: custom-data size / feature / scheme mismatch is detected at session start") {
  fp_ep_config ec = ep_config(4, 2, 0, "dctcp");
  fp_emu_config mc = emu_config(4, 2, 0, "dctcp");
  uint16_t want_code = 0;
  SECTION("request custom size") {
    mc.req_custom_len = 8;
    want_code = FP_REJ_CUSTOM_SIZE;
  }
  SECTION("verdict custom size") {
    ec.verdict_custom_len = 0;
    want_code = FP_REJ_CUSTOM_SIZE;
  }
  SECTION("features") {
    ec.features = FP_FEAT_PRIO;
    want_code = FP_REJ_FEATURES;
  }
  SECTION("scheme name") {
    std::strcpy(mc.scheme, "red");
    want_code = FP_REJ_SCHEME;
  }
  Pair p(ec, mc);
  p.submit(0);  // queued while connecting
  Dgrams hello = p.ep_poll();
  p.to_emu(hello);
  CHECK(p.emu.state == FP_EMU_IDLE);
  Dgrams rej = p.emu_poll();
  REQUIRE(rej.size() == 1);
  CHECK(header_of(rej[0]).type == FP_MSG_REJECT);
  REQUIRE(p.to_ep(rej) == std::vector<int>{0});
  CHECK(p.ep.state == FP_EP_REJECTED);
  CHECK(p.ep.last_reject.code == want_code);
  // The report carries the emulator's expectations.
  CHECK(p.ep.last_reject.req_custom_len == mc.req_custom_len);
  CHECK(p.ep.last_reject.verdict_custom_len == mc.verdict_custom_len);
  CHECK(p.ep.last_reject.features == mc.features);
  CHECK(std::string(p.ep.last_reject.scheme) == mc.scheme);
  fp_request r = make_request(1);
  CHECK(fp_ep_submit(&p.ep, &r, 1, p.now) == -FP_EREJECTED);
  // Nothing is ever framed with the wrong sizes: no REQUESTS at all.
  CHECK(p.ep_poll().empty());
  // A duplicated HELLO gets the same answer again.
  p.to_emu(hello);
  CHECK(p.to_ep(p.emu_poll()) == std::vector<int>{0});
  // Slow retry with a new attempt.
  CHECK(fp_ep_next_deadline(&p.ep) == p.now + ec.reject_retry_ns);
  p.now += ec.reject_retry_ns;
  Dgrams retry = p.ep_poll();
  REQUIRE(retry.size() == 1);
  fp_hello h;
  REQUIRE(fp_decode_hello(retry[0].data(), retry[0].size(), &h) == 0);
  CHECK(h.attempt == 2);
  // Meanwhile the emulator was restarted with a matching configuration.
  p.restart_emulator(emu_config(ec.req_custom_len, ec.verdict_custom_len, ec.features,
                                ec.scheme));
  p.to_emu(retry);
  p.to_ep(p.emu_poll());
  CHECK(p.ep.state == FP_EP_ESTABLISHED);
  p.settle();
  CHECK(p.engine.size() == 1);  // the request queued before the rejection goes out
}

TEST_CASE("conn: scheme names are only compared when both sides state one") {
  Pair p(ep_config(4, 2, 0, ""), emu_config(4, 2, 0, "dctcp"));
  p.handshake();
  Pair q(ep_config(4, 2, 0, "dctcp"), emu_config(4, 2, 0, ""));
  q.handshake();
}

TEST_CASE("conn: a WELCOME with other sizes is refused by the endpoint too") {
  Pair p;
  p.to_emu(p.ep_poll());
  Dgrams w = p.emu_poll();
  REQUIRE(w.size() == 1);
  w[0][32] = 9;  // req_custom_len in the WELCOME
  CHECK(p.to_ep(w) == std::vector<int>{-FP_EREJECTED});
  CHECK(p.ep.state == FP_EP_REJECTED);
  CHECK(p.ep.last_reject.code == FP_REJ_CUSTOM_SIZE);
  CHECK(p.ep.last_reject.req_custom_len == 9);
}

TEST_CASE("conn: protocol version mismatch") {
  Pair p;
  Dgrams hello = p.ep_poll();
  SECTION("emulator answers a HELLO of another version with REJECT in that version") {
    hello[0][2] = 2;
    CHECK(p.to_emu(hello) == std::vector<int>{-FP_EVERSION});
    Dgrams rej = p.emu_poll();
    REQUIRE(rej.size() == 1);
    CHECK(rej[0][2] == 2);
    CHECK(rej[0][3] == FP_MSG_REJECT);
    rej[0][2] = 1;  // read it as a v2 endpoint would (same frozen layout)
    fp_reject r;
    REQUIRE(fp_decode_reject(rej[0].data(), rej[0].size(), &r) == 0);
    CHECK(r.code == FP_REJ_VERSION);
    CHECK(r.version == FP_VERSION);
    CHECK(r.instance == p.ep.cfg.instance);
  }
  SECTION("endpoint reports a REJECT from a newer emulator") {
    fp_reject r;
    std::memset(&r, 0, sizeof(r));
    r.instance = p.ep.cfg.instance;
    r.attempt = p.ep.attempt;
    r.code = FP_REJ_VERSION;
    r.version = 2;
    uint8_t buf[64];
    int n = fp_encode_reject(buf, sizeof(buf), &r);
    CHECK(p.to_ep({Dgrams::value_type(buf, buf + n)}) == std::vector<int>{0});
    CHECK(p.ep.state == FP_EP_REJECTED);
    CHECK(p.ep.last_reject.code == FP_REJ_VERSION);
    CHECK(p.ep.last_reject.version == 2);
  }
  SECTION("anything else of another version is dropped") {
    hello[0][2] = 3;
    hello[0][3] = FP_MSG_REQUESTS;
    CHECK(p.to_emu(hello) == std::vector<int>{-FP_EVERSION});
    CHECK(p.emu_poll().empty());
  }
}

TEST_CASE("conn: HELLO from an address outside the topology") {
  Pair p;
  Dgrams hello = p.ep_poll();
  uint8_t buf[128];
  int n = fp_emu_reject_unknown(hello[0].data(), hello[0].size(), buf, sizeof(buf));
  REQUIRE(n == (int)FP_REJECT_LEN);
  CHECK(p.to_ep({Dgrams::value_type(buf, buf + n)}) == std::vector<int>{0});
  CHECK(p.ep.state == FP_EP_REJECTED);
  CHECK(p.ep.last_reject.code == FP_REJ_UNKNOWN_ENDPOINT);
  uint8_t junk[8] = {0};
  CHECK(fp_emu_reject_unknown(junk, sizeof(junk), buf, sizeof(buf)) < 0);
}

TEST_CASE("conn: duplicate and stale HELLOs") {
  Pair p;
  Dgrams hello = p.ep_poll();
  p.to_emu(hello);
  Dgrams w1 = p.emu_poll();
  p.to_emu(hello);  // duplicate: same session, answered again
  Dgrams w2 = p.emu_poll();
  REQUIRE(w1.size() == 1);
  REQUIRE(w2.size() == 1);
  CHECK(w1 == w2);
  CHECK(p.emu.stats.sessions == 1);
  p.to_ep(w1);
  CHECK(p.to_ep(w2) == std::vector<int>{-FP_ESTALE});
  CHECK(p.ep.state == FP_EP_ESTABLISHED);

  // The emulator drops the session; the endpoint re-opens with attempt 2;
  // the old attempt-1 HELLO arriving late must not reset the new session.
  fp_emu_drop_session(&p.emu, p.now);
  p.to_ep(p.emu_poll());
  CHECK(p.ep.state == FP_EP_CONNECTING);
  p.handshake();
  uint32_t s = p.emu.session;
  CHECK(p.to_emu(hello) == std::vector<int>{-FP_ESTALE});
  CHECK(p.emu.session == s);
  CHECK(p.emu_poll().empty());
}

TEST_CASE("conn: a late duplicate HELLO does not disturb a session in use") {
  Pair p;
  Dgrams hello = p.ep_poll();
  p.to_emu(hello);
  p.to_ep(p.emu_poll());
  p.submit(0);
  p.to_emu(p.ep_poll());
  REQUIRE(p.engine.size() == 1);
  uint32_t s = p.emu.session;
  CHECK(p.to_emu(hello) == std::vector<int>{-FP_ESTALE});
  CHECK(p.emu.session == s);
  CHECK(p.emu.stats.sessions == 1);
  p.decide();
  p.settle();
  CHECK(p.delivered.size() == 1);
}

TEST_CASE("conn: same instance and attempt but another first_rseq is a new incarnation") {
  Pair p;
  p.handshake();
  p.submit(0);
  p.settle();
  REQUIRE(p.engine.size() == 1);
  uint32_t s = p.emu.session;
  // The endpoint restarts without drawing a new instance, from another rseq.
  fp_ep_config ec = ep_config();
  ec.initial_rseq = 1000;
  REQUIRE(fp_ep_conn_init(&p.ep, &ec, p.slots.data(), (uint32_t)p.slots.size(), p.now) == 0);
  p.engine.clear();
  p.handshake();
  CHECK(p.emu.session != s);
  p.submit(1);
  p.settle();
  REQUIRE(p.engine.size() == 1);
  CHECK(p.engine[0].first.rseq == 1000);
}

TEST_CASE("conn: the endpoint instance must be set") {
  std::vector<fp_ep_slot> slots(4);
  fp_ep_conn c;
  fp_ep_config ec;
  fp_ep_config_default(&ec);
  CHECK(fp_ep_conn_init(&c, &ec, slots.data(), 4, 0) == -FP_EINVAL);
  ec.instance = 42;
  CHECK(fp_ep_conn_init(&c, &ec, slots.data(), 4, 0) == 0);
}

TEST_CASE("conn: retransmission timer with backoff, reset by progress") {
  fp_ep_config ec = ep_config();
  Pair p(ec, emu_config());
  p.handshake();
  p.submit(0);
  Dgrams first = p.ep_poll();
  REQUIRE(first.size() == 1);
  uint64_t rto = ec.rto_ns;
  for (int i = 0; i < 10; i++) {
    CHECK(fp_ep_next_deadline(&p.ep) == p.now + rto);
    p.now += rto;
    Dgrams again = p.ep_poll();
    REQUIRE(again.size() == 1);
    CHECK(again[0] == first[0]);  // same bytes: idempotent replay
    rto = std::min(rto * 2, ec.rto_max_ns);
  }
  CHECK(p.ep.stats.timeouts == 10);
  CHECK(p.ep.stats.requests_resent == 10);
  CHECK(rto == ec.rto_max_ns);
  p.to_emu(first);
  p.now += emu_config().ack_delay_ns;
  p.to_ep(p.emu_poll());
  CHECK(p.ep.tx.una == 1);
  CHECK(p.ep.tx.rto_cur == ec.rto_ns);
  // Nothing unacked: no retransmission timer; a verdict is owed: probe timer.
  CHECK(fp_ep_next_deadline(&p.ep) == p.now + ec.probe_ns);
}

TEST_CASE("conn: NAK triggers fast retransmission in both directions") {
  fp_ep_config ec = ep_config();
  ec.max_batch = 2;
  fp_emu_config mc = emu_config();
  mc.max_batch = 2;
  Pair p(ec, mc);
  p.handshake();
  for (uint32_t i = 0; i < 6; i++) p.submit(i);
  Dgrams reqs = p.ep_poll();
  REQUIRE(reqs.size() == 3);
  p.to_emu({reqs[1], reqs[2]});  // first batch lost
  CHECK(p.engine.empty());
  Dgrams nak = p.emu_poll();
  REQUIRE(nak.size() == 1);
  CHECK((header_of(nak[0]).flags & FP_F_NAK) != 0);
  p.to_ep(nak);
  CHECK(p.ep.stats.naks == 1);
  Dgrams resent = p.ep_poll();  // at once, not after the timeout
  CHECK(resent.size() == 3);
  p.to_emu(resent);
  CHECK(p.engine.size() == 6);

  p.decide();
  Dgrams vs = p.emu_poll();
  REQUIRE(vs.size() == 3);
  p.to_ep({vs[0], vs[2]});  // second verdict batch lost
  CHECK(p.delivered.size() == 2);
  Dgrams ack = p.ep_poll();  // immediate ack with NAK
  REQUIRE(ack.size() == 1);
  CHECK((header_of(ack[0]).flags & FP_F_NAK) != 0);
  p.to_emu(ack);
  CHECK(p.emu.stats.naks == 1);
  Dgrams vs2 = p.emu_poll();
  REQUIRE(vs2.size() == 2);  // from the first unacked verdict: 2..5
  p.to_ep(vs2);
  CHECK(p.delivered.size() == 6);
}

TEST_CASE("conn: verdict retransmission on timeout") {
  Pair p;
  p.handshake();
  p.submit(0);
  p.to_emu(p.ep_poll());
  p.decide();
  Dgrams lost = p.emu_poll();
  REQUIRE(lost.size() == 1);
  uint64_t rto = emu_config().rto_ns;
  CHECK(fp_emu_next_deadline(&p.emu) == p.now + rto);
  p.now += rto;
  Dgrams again = p.emu_poll();
  REQUIRE(again.size() == 1);
  CHECK(p.emu.stats.timeouts == 1);
  CHECK(p.emu.stats.verdicts_resent == 1);
  p.to_ep(again);
  CHECK(p.delivered.size() == 1);
  p.to_ep(lost);  // the "lost" one shows up late: duplicate
  CHECK(p.delivered.size() == 1);
  p.settle();
  CHECK(p.emu.inflight == 0);
  CHECK(fp_emu_next_deadline(&p.emu) == FP_TIME_NEVER);
}

TEST_CASE("conn: batching delay") {
  fp_ep_config ec = ep_config();
  ec.batch_delay_ns = 10 * kUs;
  Pair p(ec, emu_config());
  p.handshake();
  p.submit(0);
  CHECK(p.ep_poll().empty());
  CHECK(fp_ep_next_deadline(&p.ep) == 10 * kUs);
  p.now = 4 * kUs;
  p.submit(1);
  CHECK(p.ep_poll().empty());
  p.now = 10 * kUs;
  Dgrams d = p.ep_poll();
  REQUIRE(d.size() == 1);
  fp_batch b;
  REQUIRE(fp_decode_requests(d[0].data(), d[0].size(), &b) == 0);
  CHECK(b.count == 2);
}

TEST_CASE("conn: flow control - the emulator never holds more than its window") {
  Pair p(ep_config(), emu_config(), 64, 4);
  p.handshake();
  CHECK(p.ep.win == 4);
  for (uint32_t i = 0; i < 20; i++) p.submit(i);
  Dgrams reqs = p.ep_poll();
  fp_batch b;
  REQUIRE(fp_decode_requests(reqs[0].data(), reqs[0].size(), &b) == 0);
  CHECK(b.count == 4);  // the endpoint honours the advertised window

  // A peer that ignores the window is cut off by the emulator.
  uint8_t buf[FP_DEFAULT_MAX_DGRAM];
  fp_batch_writer w;
  int n;
  Pair q(ep_config(), emu_config(), 64, 4);
  q.handshake();
  REQUIRE(fp_batch_begin(&w, buf, sizeof(buf), FP_MSG_REQUESTS, q.emu.session, 0, 4, 0, 0) == 0);
  for (uint32_t i = 0; i < 10; i++) {
    fp_request r = make_request(100 + i);
    REQUIRE(fp_batch_add_request(&w, &r) == 0);
  }
  n = fp_batch_finish(&w);
  q.to_emu({Dgrams::value_type(buf, buf + n)});
  CHECK(q.engine.size() == 4);
  CHECK(q.emu.rnext == 4);
  CHECK(q.emu.stats.request_full == 1);

  // With verdicts flowing, all 20 of the well-behaved endpoint complete.
  for (int round = 0; round < 50 && p.delivered.size() < 20; round++) {
    p.to_emu(reqs);
    p.decide();
    p.to_ep(p.emu_poll());
    p.now += 30 * kUs;
    reqs = p.ep_poll();
  }
  CHECK(p.delivered.size() == 20);
}

TEST_CASE("conn: the engine may refuse a request for now") {
  Pair p;
  p.handshake();
  p.submit(0);
  Dgrams reqs = p.ep_poll();
  p.refuse = true;
  p.to_emu(reqs);
  CHECK(p.emu.rnext == 0);
  CHECK(p.emu.stats.request_refused == 1);
  p.refuse = false;
  p.now += p.ep.cfg.rto_ns;
  p.to_emu(p.ep_poll());
  CHECK(p.engine.size() == 1);
}

TEST_CASE("conn: slot exhaustion and invalid requests") {
  Pair p(ep_config(), emu_config(), 4, 4);
  for (uint32_t i = 0; i < 4; i++) p.submit(i);
  fp_request r = make_request(9);
  CHECK(fp_ep_submit(&p.ep, &r, 9, 0) == -FP_ENOSPC);
  Pair q;
  r.dscp = 64;
  CHECK(fp_ep_submit(&q.ep, &r, 9, 0) == -FP_EINVAL);
  r.dscp = 0;
  r.flags = 0x10;
  CHECK(fp_ep_submit(&q.ep, &r, 9, 0) == -FP_EINVAL);

  std::vector<fp_ep_slot> slots(3);
  fp_ep_conn c;
  fp_ep_config ec = ep_config();
  CHECK(fp_ep_conn_init(&c, &ec, slots.data(), 3, 0) == -FP_EINVAL);  // not a power of 2
  ec.req_custom_len = FP_MAX_CUSTOM + 1;
  CHECK(fp_ep_conn_init(&c, &ec, slots.data(), 2, 0) == -FP_EINVAL);
  std::vector<fp_verdict> ring(3);
  fp_emu_conn e;
  fp_emu_config mc = emu_config();
  CHECK(fp_emu_conn_init(&e, &mc, ring.data(), 3, 0) == -FP_EINVAL);
}

TEST_CASE("conn: emulator restart - endpoint resynchronises and re-sends un-verdicted requests") {
  fp_ep_config ec = ep_config();
  Pair p(ec, emu_config());
  p.handshake();
  uint32_t old_session = p.emu.session;
  for (uint32_t i = 0; i < 6; i++) p.submit(i);
  p.to_emu(p.ep_poll());
  REQUIRE(p.engine.size() == 6);
  p.now += 30 * kUs;
  p.to_ep(p.emu_poll());  // request ack
  CHECK(p.ep.tx.una == 6);
  p.decide({1, 3});  // verdicts for requests 1 and 3 only
  Dgrams late = p.emu_poll();
  p.to_ep(late);
  REQUIRE(p.delivered.size() == 2);
  p.now += ec.ack_delay_ns;
  p.to_emu(p.ep_poll());  // verdict ack

  // The emulator restarts: sessions and engine state are gone.
  fp_emu_config mc2 = emu_config();
  mc2.epoch_seed = 0x9000;
  p.restart_emulator(mc2);

  // All requests are acked, so only the probe timer notices the silence.
  CHECK(fp_ep_next_deadline(&p.ep) == p.ep.last_rx + ec.probe_ns);
  p.now = fp_ep_next_deadline(&p.ep);
  Dgrams probe = p.ep_poll();
  REQUIRE(probe.size() >= 1);
  CHECK((header_of(probe.back()).flags & FP_F_ACK_REQ) != 0);
  CHECK(p.to_emu(probe).back() == -FP_ESTALE);
  Dgrams reset = p.emu_poll();
  REQUIRE(reset.size() == 1);
  fp_reset rs;
  REQUIRE(fp_decode_reset(reset[0].data(), reset[0].size(), &rs) == 0);
  CHECK(rs.bad_session == old_session);
  CHECK(rs.session == 0);
  p.to_ep(reset);
  CHECK(p.ep.state == FP_EP_CONNECTING);
  CHECK(p.ep.stats.resets == 1);
  // Renumbered: requests 0, 2, 4, 5 are now rseq 0..3.
  CHECK(p.ep.low == 0);
  CHECK(p.ep.next == 4);
  CHECK(fp_ep_pending(&p.ep) == 4);

  Dgrams hello = p.ep_poll();
  REQUIRE(hello.size() == 1);
  fp_hello h;
  REQUIRE(fp_decode_hello(hello[0].data(), hello[0].size(), &h) == 0);
  CHECK(h.attempt == 2);
  CHECK(h.first_rseq == 0);
  p.to_emu(hello);
  p.to_ep(p.emu_poll());
  REQUIRE(p.ep.state == FP_EP_ESTABLISHED);
  CHECK(p.ep.session != old_session);
  Dgrams resent = p.ep_poll();
  REQUIRE(resent.size() == 1);
  fp_batch b;
  REQUIRE(fp_decode_requests(resent[0].data(), resent[0].size(), &b) == 0);
  CHECK(b.count == 4);
  std::vector<uint32_t> ids;
  for (uint16_t i = 0; i < b.count; i++) {
    fp_request r;
    fp_batch_request(&b, i, &r);
    ids.push_back(r.id * 37 + (r.flow - 1000));
  }
  CHECK(ids == std::vector<uint32_t>{0, 2, 4, 5});
  p.to_emu(resent);
  REQUIRE(p.engine.size() == 4);

  // A late verdict batch of the dead session is ignored.
  CHECK(p.to_ep(late) == std::vector<int>{-FP_ESTALE});
  p.decide();
  p.settle();
  REQUIRE(p.delivered.size() == 6);
  std::vector<int> seen(6, 0);
  for (const auto& d : p.delivered) seen[d.user]++;
  CHECK(seen == std::vector<int>(6, 1));
  CHECK(fp_ep_next_deadline(&p.ep) == FP_TIME_NEVER);
  CHECK(fp_emu_next_deadline(&p.emu) == FP_TIME_NEVER);
}

TEST_CASE("conn: verdicts for a dropped session are discarded by the emulator") {
  Pair p;
  p.handshake();
  p.submit(0);
  p.to_emu(p.ep_poll());
  fp_emu_token old = p.engine[0].first;
  fp_emu_drop_session(&p.emu, p.now);
  fp_verdict v = p.verdict_for(p.engine[0].second);
  CHECK(fp_emu_push_verdict(&p.emu, &old, &v, p.now) == -FP_ESTALE);
  CHECK(p.emu.stats.verdicts_stale == 1);
  p.engine.clear();
  p.to_ep(p.emu_poll());  // RESET
  CHECK(p.ep.state == FP_EP_CONNECTING);
  p.handshake();
  p.settle();
  REQUIRE(p.engine.size() == 1);
  CHECK(fp_emu_push_verdict(&p.emu, &old, &v, p.now) == -FP_ESTALE);
  p.decide();
  p.settle();
  CHECK(p.delivered.size() == 1);
  // A token that was never accepted is refused.
  fp_emu_token bogus{p.emu.session, p.emu.rnext + 5};
  CHECK(fp_emu_push_verdict(&p.emu, &bogus, &v, p.now) == -FP_EINVAL);
  v.action = 0;
  fp_emu_token ok{p.emu.session, 0};
  CHECK(fp_emu_push_verdict(&p.emu, &ok, &v, p.now) == -FP_EINVAL);
}

TEST_CASE("conn: RESET for another session is ignored; RESETs are rate limited") {
  Pair p;
  p.handshake();
  uint8_t buf[32];
  fp_reset r{0, p.ep.session + 1};
  int n = fp_encode_reset(buf, sizeof(buf), &r);
  CHECK(p.to_ep({Dgrams::value_type(buf, buf + n)}) == std::vector<int>{-FP_ESTALE});
  CHECK(p.ep.state == FP_EP_ESTABLISHED);

  // Requests of an unknown session: one RESET per interval.
  fp_batch_writer w;
  REQUIRE(fp_batch_begin(&w, buf, sizeof(buf), FP_MSG_REQUESTS, 0xdead, 0, 4, 0, 0) == 0);
  n = fp_batch_finish(&w);
  Dgrams bogus{Dgrams::value_type(buf, buf + n)};
  p.to_emu(bogus);
  CHECK(p.emu_poll().size() == 1);
  p.to_emu(bogus);
  CHECK(p.emu_poll().empty());
  p.now += emu_config().reset_interval_ns;
  p.to_emu(bogus);
  CHECK(p.emu_poll().size() == 1);
  CHECK(p.emu.stats.resets_sent == 2);
}

TEST_CASE("conn: abort_pending hands back requests and keeps sequence numbers consistent") {
  Pair p;
  p.handshake();
  for (uint32_t i = 0; i < 5; i++) p.submit(i);
  p.to_emu(p.ep_poll());
  std::vector<uint64_t> back;
  fp_ep_abort_pending(
      &p.ep, p.now,
      [](void* ctx, const fp_request*, uint64_t user) {
        static_cast<std::vector<uint64_t>*>(ctx)->push_back(user);
      },
      &back);
  CHECK(back == std::vector<uint64_t>{0, 1, 2, 3, 4});
  CHECK(fp_ep_pending(&p.ep) == 0);
  CHECK(p.ep.state == FP_EP_CONNECTING);
  p.engine.clear();
  p.handshake();
  p.submit(7);
  p.settle();
  REQUIRE(p.engine.size() == 1);
  p.decide();
  p.settle();
  REQUIRE(p.delivered.size() == 1);
  CHECK(p.delivered[0].user == 7);
}

TEST_CASE("conn: sequence numbers wrap around") {
  fp_ep_config ec = ep_config();
  ec.initial_rseq = 0xfffffffcu;
  fp_emu_config mc = emu_config();
  mc.initial_vseq = 0xfffffffeu;
  Pair p(ec, mc, 16, 16);
  p.handshake();
  for (uint32_t round = 0; round < 4; round++) {
    for (uint32_t i = 0; i < 5; i++) p.submit(round * 5 + i);
    p.settle();
    p.decide();
    p.settle();
  }
  CHECK(p.delivered.size() == 20);
  CHECK(p.ep.low == 0xfffffffcu + 20);
  CHECK(p.emu.tx.una == 0xfffffffeu + 20);
}

TEST_CASE("conn: garbage and wrong-direction messages are ignored") {
  Pair p;
  p.handshake();
  uint8_t junk[40] = {0x46, 0x50, 1, 9};
  CHECK(fp_ep_rx(&p.ep, junk, sizeof(junk), 0, nullptr, nullptr) == -FP_ETYPE);
  CHECK(fp_emu_rx(&p.emu, junk, 3, 0, nullptr, nullptr) == -FP_ETRUNC);
  Dgrams hello = Pair().ep_poll();
  CHECK(p.to_ep(hello) == std::vector<int>{-FP_ETYPE});  // HELLO to an endpoint
  CHECK(p.ep.state == FP_EP_ESTABLISHED);
  CHECK(p.ep.stats.rx_bad == 2);
}
