// Wire format: golden bytes (the worked example of docs/protocol.md), round
// trips of every message type, and rejection of truncated / malformed input.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "fp_test_sim.h"

using fptest::Rng;

namespace {

std::string hex(const uint8_t* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; i++) {
    s += d[p[i] >> 4];
    s += d[p[i] & 15];
  }
  return s;
}

std::vector<uint8_t> unhex(const std::string& s) {
  std::vector<uint8_t> out;
  std::string clean;
  for (char c : s)
    if (c != ' ' && c != '\n') clean += c;
  for (size_t i = 0; i + 1 < clean.size(); i += 2)
    out.push_back((uint8_t)std::stoul(clean.substr(i, 2), nullptr, 16));
  return out;
}

// Field-wise comparisons (memcmp would compare padding bytes too).
bool same(const fp_request& a, const fp_request& b) {
  return a.flow == b.flow && a.id == b.id && a.dst == b.dst && a.size_bytes == b.size_bytes &&
         a.flags == b.flags && a.dscp == b.dscp && a.priority == b.priority &&
         std::memcmp(a.custom, b.custom, sizeof(a.custom)) == 0;
}
bool same(const fp_verdict& a, const fp_verdict& b) {
  return a.rseq == b.rseq && a.flow == b.flow && a.id == b.id && a.action == b.action &&
         std::memcmp(a.custom, b.custom, sizeof(a.custom)) == 0;
}
bool same(const fp_welcome& a, const fp_welcome& b) {
  return a.session == b.session && a.instance == b.instance && a.attempt == b.attempt &&
         a.first_rseq == b.first_rseq && a.first_vseq == b.first_vseq &&
         a.endpoint_id == b.endpoint_id && a.window == b.window &&
         a.req_custom_len == b.req_custom_len && a.verdict_custom_len == b.verdict_custom_len &&
         a.features == b.features && a.apkt_bytes == b.apkt_bytes;
}
bool same(const fp_reject& a, const fp_reject& b) {
  return a.instance == b.instance && a.attempt == b.attempt && a.code == b.code &&
         a.version == b.version && a.req_custom_len == b.req_custom_len &&
         a.verdict_custom_len == b.verdict_custom_len && a.features == b.features &&
         a.name_len == b.name_len && std::string(a.scheme) == std::string(b.scheme);
}

fp_hello sample_hello() {
  fp_hello m;
  std::memset(&m, 0, sizeof(m));
  m.instance = 0x11223344;
  m.attempt = 1;
  m.first_rseq = 0;
  m.window = 1024;
  m.req_custom_len = 4;
  m.verdict_custom_len = 2;
  m.features = 0;
  m.name_len = 5;
  std::strcpy(m.scheme, "dctcp");
  return m;
}

fp_welcome sample_welcome() {
  fp_welcome m;
  std::memset(&m, 0, sizeof(m));
  m.session = 0x1000;
  m.instance = 0x11223344;
  m.attempt = 1;
  m.first_rseq = 0;
  m.first_vseq = 0;
  m.endpoint_id = 7;
  m.window = 256;
  m.req_custom_len = 4;
  m.verdict_custom_len = 2;
  m.apkt_bytes = 1500;
  return m;
}

fp_reject sample_reject() {
  fp_reject m;
  std::memset(&m, 0, sizeof(m));
  m.instance = 0x11223344;
  m.attempt = 1;
  m.code = FP_REJ_CUSTOM_SIZE;
  m.version = 1;
  m.req_custom_len = 8;
  m.verdict_custom_len = 2;
  m.name_len = 5;
  std::strcpy(m.scheme, "dctcp");
  return m;
}

int encode_sample_requests(uint8_t* buf, size_t cap) {
  fp_batch_writer w;
  REQUIRE(fp_batch_begin(&w, buf, cap, FP_MSG_REQUESTS, 0x1000, 0, 4, 0, 0) == 0);
  fp_request r;
  std::memset(&r, 0, sizeof(r));
  r.flow = 1000;
  r.id = 0;
  r.dst = 1;
  r.size_bytes = 1500;
  r.flags = FP_REQ_ECT;
  const uint8_t c0[4] = {0xde, 0xad, 0xbe, 0xef};
  std::memcpy(r.custom, c0, 4);
  REQUIRE(fp_batch_add_request(&w, &r) == 0);
  r.id = 1;
  const uint8_t c1[4] = {1, 2, 3, 4};
  std::memcpy(r.custom, c1, 4);
  REQUIRE(fp_batch_add_request(&w, &r) == 0);
  return fp_batch_finish(&w);
}

int encode_sample_verdicts(uint8_t* buf, size_t cap) {
  fp_batch_writer w;
  REQUIRE(fp_batch_begin(&w, buf, cap, FP_MSG_VERDICTS, 0x1000, 0, 2, 2, 0) == 0);
  fp_verdict v;
  std::memset(&v, 0, sizeof(v));
  v.rseq = 1;
  v.flow = 1000;
  v.id = 1;
  v.action = FP_ACT_MARK;
  v.custom[0] = 0x00;
  v.custom[1] = 0x2a;
  REQUIRE(fp_batch_add_verdict(&w, &v) == 0);
  return fp_batch_finish(&w);
}

// Every decoder applied to buf: returns the result of the one matching the
// header type (or the header error).
int decode_any(const uint8_t* buf, size_t len) {
  fp_hdr h;
  int t = fp_decode_hdr(buf, len, &h);
  if (t < 0) return t;
  union {
    fp_hello hello;
    fp_welcome welcome;
    fp_reject reject;
    fp_reset reset;
    fp_batch batch;
  } u;
  switch (t) {
    case FP_MSG_HELLO: return fp_decode_hello(buf, len, &u.hello);
    case FP_MSG_WELCOME: return fp_decode_welcome(buf, len, &u.welcome);
    case FP_MSG_REJECT: return fp_decode_reject(buf, len, &u.reject);
    case FP_MSG_RESET: return fp_decode_reset(buf, len, &u.reset);
    case FP_MSG_REQUESTS: return fp_decode_requests(buf, len, &u.batch);
    case FP_MSG_VERDICTS: return fp_decode_verdicts(buf, len, &u.batch);
  }
  return -FP_ETYPE;
}

std::vector<std::vector<uint8_t>> all_samples() {
  std::vector<std::vector<uint8_t>> out;
  uint8_t buf[FP_DEFAULT_MAX_DGRAM];
  fp_hello h = sample_hello();
  out.emplace_back(buf, buf + fp_encode_hello(buf, sizeof(buf), &h));
  fp_welcome w = sample_welcome();
  out.emplace_back(buf, buf + fp_encode_welcome(buf, sizeof(buf), &w));
  fp_reject j = sample_reject();
  out.emplace_back(buf, buf + fp_encode_reject(buf, sizeof(buf), &j));
  fp_reset r{0x2000, 0x1000};
  out.emplace_back(buf, buf + fp_encode_reset(buf, sizeof(buf), &r));
  out.emplace_back(buf, buf + encode_sample_requests(buf, sizeof(buf)));
  out.emplace_back(buf, buf + encode_sample_verdicts(buf, sizeof(buf)));
  return out;
}

}  // namespace

TEST_CASE("wire: golden bytes of every message type (docs/protocol.md worked example)") {
  uint8_t buf[FP_DEFAULT_MAX_DGRAM];

  fp_hello h = sample_hello();
  REQUIRE(fp_encode_hello(buf, sizeof(buf), &h) == 64);
  CHECK(hex(buf, 64) ==
        "4650010100000000004000001122334400000001000000000400040200050000"
        "6463746370000000000000000000000000000000000000000000000000000000");

  fp_welcome w = sample_welcome();
  REQUIRE(fp_encode_welcome(buf, sizeof(buf), &w) == 40);
  CHECK(hex(buf, 40) ==
        "46500102000010000028000011223344000000010000000000000000000701000402000005dc0000");

  fp_reject j = sample_reject();
  REQUIRE(fp_encode_reject(buf, sizeof(buf), &j) == 60);
  CHECK(hex(buf, 60) ==
        "465001030000000000"
        "3c0000112233440000000100020108020005006463746370"
        "000000000000000000000000000000000000000000000000000000");

  fp_reset r{0x2000, 0x1000};
  REQUIRE(fp_encode_reset(buf, sizeof(buf), &r) == 16);
  CHECK(hex(buf, 16) == "46500104000020000010000000001000");

  REQUIRE(encode_sample_requests(buf, sizeof(buf)) == 60);
  CHECK(hex(buf, 60) ==
        "46500105000010000" "03c0000" "04000002" "00000000" "00000000"
        "000003e8000000000001" "05dc0100deadbeef"
        "000003e8000000010001" "05dc010001020304");

  REQUIRE(encode_sample_verdicts(buf, sizeof(buf)) == 39);
  CHECK(hex(buf, 39) ==
        "4650010600001000" "00270000" "02000001" "00000002" "00000000"
        "00000001000003e80000000102002a");
}

TEST_CASE("wire: golden bytes of the worked example's pure ack and RESET") {
  uint8_t buf[64];
  fp_batch_writer w;
  REQUIRE(fp_batch_begin(&w, buf, sizeof(buf), FP_MSG_REQUESTS, 0x1000, 0, 4, 1, 2) == 0);
  REQUIRE(fp_batch_finish(&w) == 24);
  CHECK(hex(buf, 24) == "465001050000100000180000" "04000000" "00000001" "00000002");
  fp_reset r{0, 0x1000};
  REQUIRE(fp_encode_reset(buf, sizeof(buf), &r) == 16);
  CHECK(hex(buf, 16) == "46500104000000000010000000001000");
}

TEST_CASE("wire: hex helper sanity") {
  auto v = unhex("46 50 01");
  REQUIRE(v.size() == 3);
  CHECK(v[0] == 0x46);
  CHECK(v[2] == 0x01);
}

TEST_CASE("wire: HELLO / WELCOME / REJECT / RESET round trip") {
  uint8_t buf[FP_DEFAULT_MAX_DGRAM];
  Rng rng(42);
  for (int it = 0; it < 2000; it++) {
    fp_hello h;
    std::memset(&h, 0, sizeof(h));
    h.instance = (uint32_t)rng.next();
    h.attempt = (uint32_t)rng.next();
    h.first_rseq = (uint32_t)rng.next();
    h.window = (uint16_t)(1 + rng.below(65535));
    h.req_custom_len = (uint8_t)rng.below(FP_MAX_CUSTOM + 1);
    h.verdict_custom_len = (uint8_t)rng.below(FP_MAX_CUSTOM + 1);
    h.features = (uint8_t)rng.below(2);
    h.name_len = (uint8_t)rng.below(FP_SCHEME_NAME_MAX + 1);
    for (unsigned i = 0; i < h.name_len; i++) h.scheme[i] = (char)(0x20 + rng.below(95));
    int n = fp_encode_hello(buf, sizeof(buf), &h);
    REQUIRE(n == (int)FP_HELLO_LEN);
    fp_hello d;
    REQUIRE(fp_decode_hello(buf, (size_t)n, &d) == 0);
    CHECK(d.instance == h.instance);
    CHECK(d.attempt == h.attempt);
    CHECK(d.first_rseq == h.first_rseq);
    CHECK(d.window == h.window);
    CHECK(d.req_custom_len == h.req_custom_len);
    CHECK(d.verdict_custom_len == h.verdict_custom_len);
    CHECK(d.features == h.features);
    CHECK(d.name_len == h.name_len);
    CHECK(std::string(d.scheme) == std::string(h.scheme, h.name_len));
    uint32_t inst, att;
    REQUIRE(fp_peek_hello_ids(buf, (size_t)n, &inst, &att) == 0);
    CHECK(inst == h.instance);
    CHECK(att == h.attempt);

    fp_welcome w;
    std::memset(&w, 0, sizeof(w));
    w.session = (uint32_t)(1 + rng.below(0xfffffffe));
    w.instance = (uint32_t)rng.next();
    w.attempt = (uint32_t)rng.next();
    w.first_rseq = (uint32_t)rng.next();
    w.first_vseq = (uint32_t)rng.next();
    w.endpoint_id = (uint16_t)rng.next();
    w.window = (uint16_t)(1 + rng.below(65535));
    w.req_custom_len = (uint8_t)rng.below(FP_MAX_CUSTOM + 1);
    w.verdict_custom_len = (uint8_t)rng.below(FP_MAX_CUSTOM + 1);
    w.features = (uint8_t)rng.below(2);
    w.apkt_bytes = (uint16_t)rng.next();
    n = fp_encode_welcome(buf, sizeof(buf), &w);
    REQUIRE(n == (int)FP_WELCOME_LEN);
    fp_welcome wd;
    REQUIRE(fp_decode_welcome(buf, (size_t)n, &wd) == 0);
    CHECK(same(w, wd));

    fp_reject j;
    std::memset(&j, 0, sizeof(j));
    j.instance = (uint32_t)rng.next();
    j.attempt = (uint32_t)rng.next();
    j.code = (uint16_t)(1 + rng.below(65535));
    j.version = (uint8_t)rng.next();
    j.req_custom_len = (uint8_t)rng.next();  // informational: any value
    j.verdict_custom_len = (uint8_t)rng.next();
    j.features = (uint8_t)rng.next();
    j.name_len = (uint8_t)rng.below(FP_SCHEME_NAME_MAX + 1);
    for (unsigned i = 0; i < j.name_len; i++) j.scheme[i] = (char)(0x20 + rng.below(95));
    n = fp_encode_reject(buf, sizeof(buf), &j);
    REQUIRE(n == (int)FP_REJECT_LEN);
    fp_reject jd;
    REQUIRE(fp_decode_reject(buf, (size_t)n, &jd) == 0);
    CHECK(same(j, jd));

    fp_reset r{(uint32_t)rng.next(), (uint32_t)rng.next()};
    n = fp_encode_reset(buf, sizeof(buf), &r);
    REQUIRE(n == (int)FP_RESET_LEN);
    fp_reset rd;
    REQUIRE(fp_decode_reset(buf, (size_t)n, &rd) == 0);
    CHECK(rd.session == r.session);
    CHECK(rd.bad_session == r.bad_session);
  }
}

TEST_CASE("wire: REQUESTS and VERDICTS round trip, every custom size, with and without priority") {
  uint8_t buf[FP_DEFAULT_MAX_DGRAM];
  Rng rng(7);
  for (uint8_t clen = 0; clen <= FP_MAX_CUSTOM; clen++) {
    for (int prio = 0; prio < 2; prio++) {
      uint16_t elen = fp_request_entry_len(clen, prio);
      CHECK(elen == FP_REQ_FIXED_LEN + (prio ? 4 : 0) + clen);
      uint16_t max = fp_batch_max_entries(sizeof(buf), elen);
      REQUIRE(max > 0);
      for (uint16_t count : {(uint16_t)0, (uint16_t)1, (uint16_t)3, max}) {
        uint32_t ack = (uint32_t)rng.next(), base = (uint32_t)rng.next();
        uint8_t flags = (uint8_t)((prio ? FP_F_PRIO : 0) | (rng.below(2) ? FP_F_ACK_REQ : 0) |
                                  (rng.below(2) ? FP_F_NAK : 0));
        uint32_t session = (uint32_t)(1 + rng.below(0xfffffffe));
        fp_batch_writer w;
        REQUIRE(fp_batch_begin(&w, buf, sizeof(buf), FP_MSG_REQUESTS, session, flags, clen, ack,
                               base) == 0);
        std::vector<fp_request> reqs;
        for (uint16_t i = 0; i < count; i++) {
          fp_request r;
          std::memset(&r, 0, sizeof(r));
          r.flow = (uint32_t)rng.next();
          r.id = (uint32_t)rng.next();
          r.dst = (uint16_t)rng.next();
          r.size_bytes = (uint16_t)rng.next();
          r.flags = (uint8_t)rng.below(2);
          r.dscp = (uint8_t)rng.below(64);
          r.priority = prio ? (uint32_t)rng.next() : 0;
          for (unsigned k = 0; k < clen; k++) r.custom[k] = (uint8_t)rng.next();
          REQUIRE(fp_batch_add_request(&w, &r) == 0);
          reqs.push_back(r);
        }
        if (count == max) {
          fp_request extra = reqs.back();
          CHECK(fp_batch_add_request(&w, &extra) == -FP_ENOSPC);
        }
        int n = fp_batch_finish(&w);
        REQUIRE(n == (int)(FP_BATCH_HDR_LEN + count * elen));
        fp_batch b;
        REQUIRE(fp_decode_requests(buf, (size_t)n, &b) == 0);
        CHECK(b.hdr.session == session);
        CHECK(b.hdr.flags == flags);
        CHECK(b.ack == ack);
        CHECK(b.base == base);
        CHECK(b.count == count);
        CHECK(b.custom_len == clen);
        for (uint16_t i = 0; i < count; i++) {
          fp_request d;
          fp_batch_request(&b, i, &d);
          CHECK(same(d, reqs[i]));
        }
        // Wrong decoder for this type.
        CHECK(fp_decode_verdicts(buf, (size_t)n, &b) == -FP_ETYPE);
      }

      if (prio) continue;  // verdicts have no priority flag
      uint16_t velen = fp_verdict_entry_len(clen);
      uint16_t vmax = fp_batch_max_entries(sizeof(buf), velen);
      for (uint16_t count : {(uint16_t)0, (uint16_t)1, (uint16_t)5, vmax}) {
        fp_batch_writer w;
        uint32_t ack = (uint32_t)rng.next(), base = (uint32_t)rng.next();
        REQUIRE(fp_batch_begin(&w, buf, sizeof(buf), FP_MSG_VERDICTS, 99, FP_F_NAK, clen, ack,
                               base) == 0);
        std::vector<fp_verdict> vs;
        for (uint16_t i = 0; i < count; i++) {
          fp_verdict v;
          std::memset(&v, 0, sizeof(v));
          v.rseq = (uint32_t)rng.next();
          v.flow = (uint32_t)rng.next();
          v.id = (uint32_t)rng.next();
          v.action = (uint8_t)(1 + rng.below(3));
          for (unsigned k = 0; k < clen; k++) v.custom[k] = (uint8_t)rng.next();
          REQUIRE(fp_batch_add_verdict(&w, &v) == 0);
          vs.push_back(v);
        }
        int n = fp_batch_finish(&w);
        REQUIRE(n == (int)(FP_BATCH_HDR_LEN + count * velen));
        fp_batch b;
        REQUIRE(fp_decode_verdicts(buf, (size_t)n, &b) == 0);
        CHECK(b.ack == ack);
        CHECK(b.base == base);
        CHECK(b.count == count);
        CHECK(b.hdr.flags == FP_F_NAK);
        for (uint16_t i = 0; i < count; i++) {
          fp_verdict d;
          fp_batch_verdict(&b, i, &d);
          CHECK(same(d, vs[i]));
        }
        CHECK(fp_decode_requests(buf, (size_t)n, &b) == -FP_ETYPE);
      }
    }
  }
}

TEST_CASE("wire: batch sizing") {
  CHECK(fp_batch_max_entries(1472, 14) == 103);  // 24 + 103 * 14 = 1466
  CHECK(fp_batch_max_entries(1472, 13) == 111);
  CHECK(fp_batch_max_entries(24, 14) == 0);
  CHECK(fp_batch_max_entries(38, 14) == 1);
  CHECK(fp_request_entry_len(16, true) == 34);
  CHECK(fp_batch_max_entries(FP_MIN_DGRAM, fp_request_entry_len(FP_MAX_CUSTOM, true)) >= 1);
}

TEST_CASE("wire: every truncation of every message type is rejected") {
  for (const auto& msg : all_samples()) {
    INFO("type " << fp_msg_type_name(msg[3]));
    REQUIRE(decode_any(msg.data(), msg.size()) == 0);
    for (size_t n = 0; n < msg.size(); n++) {
      // Plain truncation: the length field now exceeds the datagram.
      int rc = decode_any(msg.data(), n);
      CHECK(rc < 0);
      if (n >= FP_HDR_LEN) {
        CHECK(rc == -FP_ETRUNC);
        // Truncation with a consistent length field: the body is short.
        std::vector<uint8_t> t(msg.begin(), msg.begin() + (long)n);
        fp_put_be16(t.data() + 8, (uint16_t)n);
        CHECK(decode_any(t.data(), t.size()) < 0);
      }
    }
    // Trailing bytes.
    std::vector<uint8_t> longer = msg;
    longer.push_back(0);
    CHECK(decode_any(longer.data(), longer.size()) == -FP_ELEN);
    fp_put_be16(longer.data() + 8, (uint16_t)longer.size());
    CHECK(decode_any(longer.data(), longer.size()) < 0);
    // NULL / empty input.
    CHECK(decode_any(nullptr, 0) == -FP_ETRUNC);
  }
}

TEST_CASE("wire: header errors") {
  auto msgs = all_samples();
  for (const auto& msg : msgs) {
    std::vector<uint8_t> m = msg;
    fp_hdr h;
    m[0] ^= 1;
    CHECK(fp_decode_hdr(m.data(), m.size(), &h) == -FP_EMAGIC);
    CHECK(decode_any(m.data(), m.size()) == -FP_EMAGIC);
    m = msg;
    m[2] = 2;  // version 2
    CHECK(fp_decode_hdr(m.data(), m.size(), &h) == -FP_EVERSION);
    CHECK(h.version == 2);  // still reported
    CHECK(h.type == msg[3]);
    m[2] = 0;
    CHECK(decode_any(m.data(), m.size()) == -FP_EVERSION);
    for (uint8_t t : {0, 7, 8, 255}) {
      m = msg;
      m[3] = t;
      CHECK(decode_any(m.data(), m.size()) == -FP_ETYPE);
    }
    m = msg;
    m[11] = 1;  // reserved header byte
    CHECK(decode_any(m.data(), m.size()) == -FP_EFIELD);
    m = msg;
    fp_put_be16(m.data() + 8, 5);  // length below the header size
    CHECK(decode_any(m.data(), m.size()) == -FP_ELEN);
  }
  // A type-specific decoder refuses another type.
  fp_hello hello;
  CHECK(fp_decode_hello(msgs[1].data(), msgs[1].size(), &hello) == -FP_ETYPE);
  fp_reset reset;
  CHECK(fp_decode_reset(msgs[0].data(), msgs[0].size(), &reset) == -FP_ETYPE);
}

TEST_CASE("wire: invalid field values are rejected") {
  auto msgs = all_samples();
  auto expect_field = [](std::vector<uint8_t> m, size_t off, uint8_t val) {
    m[off] = val;
    return decode_any(m.data(), m.size());
  };
  const auto& hello = msgs[0];
  CHECK(expect_field(hello, 10, 1) == -FP_EFIELD);        // flags on HELLO
  CHECK(expect_field(hello, 7, 1) == -FP_EFIELD);         // session != 0
  {
    std::vector<uint8_t> m = hello;
    fp_put_be16(m.data() + 24, 0);  // window 0
    CHECK(decode_any(m.data(), m.size()) == -FP_EFIELD);
  }
  CHECK(expect_field(hello, 26, FP_MAX_CUSTOM + 1) == -FP_EFIELD);
  CHECK(expect_field(hello, 27, FP_MAX_CUSTOM + 1) == -FP_EFIELD);
  CHECK(expect_field(hello, 28, 0x02) == -FP_EFIELD);     // unknown feature
  CHECK(expect_field(hello, 29, FP_SCHEME_NAME_MAX + 1) == -FP_EFIELD);
  CHECK(expect_field(hello, 29, 4) == -FP_EFIELD);        // name byte 5 is past name_len, not 0
  CHECK(expect_field(hello, 29, 6) == -FP_EFIELD);        // NUL inside the name
  CHECK(expect_field(hello, 33, 0x07) == -FP_EFIELD);     // control char in name
  CHECK(expect_field(hello, 40, 'x') == -FP_EFIELD);      // padding not zero
  CHECK(expect_field(hello, 30, 1) == -FP_EFIELD);        // reserved

  const auto& welcome = msgs[1];
  CHECK(expect_field(welcome, 10, 1) == -FP_EFIELD);
  {
    std::vector<uint8_t> m = welcome;
    fp_put_be32(m.data() + 4, 0);  // session 0
    CHECK(decode_any(m.data(), m.size()) == -FP_EFIELD);
    m = welcome;
    fp_put_be16(m.data() + 30, 0);  // window 0
    CHECK(decode_any(m.data(), m.size()) == -FP_EFIELD);
  }
  CHECK(expect_field(welcome, 32, FP_MAX_CUSTOM + 1) == -FP_EFIELD);
  CHECK(expect_field(welcome, 34, 0x80) == -FP_EFIELD);
  CHECK(expect_field(welcome, 35, 1) == -FP_EFIELD);
  CHECK(expect_field(welcome, 39, 1) == -FP_EFIELD);

  const auto& reject = msgs[2];
  {
    std::vector<uint8_t> m = reject;
    fp_put_be16(m.data() + 20, 0);  // code 0
    CHECK(decode_any(m.data(), m.size()) == -FP_EFIELD);
  }
  CHECK(expect_field(reject, 27, 1) == -FP_EFIELD);
  CHECK(expect_field(reject, 26, 40) == -FP_EFIELD);
  CHECK(expect_field(reject, 7, 1) == -FP_EFIELD);        // session != 0
  CHECK(expect_field(reject, 59, 'x') == -FP_EFIELD);

  const auto& reset = msgs[3];
  CHECK(expect_field(reset, 10, FP_F_ACK_REQ) == -FP_EFIELD);

  const auto& req = msgs[4];
  CHECK(expect_field(req, 10, 0x08) == -FP_EFIELD);       // unknown batch flag
  CHECK(expect_field(req, 13, 1) == -FP_EFIELD);          // reserved
  CHECK(expect_field(req, 12, FP_MAX_CUSTOM + 1) == -FP_EFIELD);
  CHECK(expect_field(req, 12, 5) < 0);                    // entry size no longer matches
  CHECK(expect_field(req, 24 + 12, 0x02) == -FP_EFIELD);  // unknown request flag
  CHECK(expect_field(req, 24 + 18 + 13, 64) == -FP_EFIELD);  // dscp 64 in entry 1
  CHECK(expect_field(req, 10, FP_F_PRIO) < 0);            // priority bytes absent
  {
    std::vector<uint8_t> m = req;
    fp_put_be32(m.data() + 4, 0);  // session 0
    CHECK(decode_any(m.data(), m.size()) == -FP_EFIELD);
    m = req;
    fp_put_be16(m.data() + 14, 3);  // count larger than the body
    CHECK(decode_any(m.data(), m.size()) == -FP_ETRUNC);
    fp_put_be16(m.data() + 14, 1);  // count smaller than the body
    CHECK(decode_any(m.data(), m.size()) == -FP_ELEN);
    fp_put_be16(m.data() + 14, 0xffff);
    CHECK(decode_any(m.data(), m.size()) == -FP_ETRUNC);
  }

  const auto& ver = msgs[5];
  CHECK(expect_field(ver, 10, FP_F_PRIO) == -FP_EFIELD);  // PRIO is not a VERDICTS flag
  CHECK(expect_field(ver, 24 + 12, 0) == -FP_EFIELD);     // action 0
  CHECK(expect_field(ver, 24 + 12, 4) == -FP_EFIELD);     // action 4
  CHECK(expect_field(ver, 24 + 12, FP_ACT_DROP) == 0);
}

TEST_CASE("wire: encoders refuse small buffers and invalid input") {
  uint8_t buf[FP_DEFAULT_MAX_DGRAM];
  fp_hello h = sample_hello();
  CHECK(fp_encode_hello(buf, FP_HELLO_LEN - 1, &h) == -FP_ENOSPC);
  h.window = 0;
  CHECK(fp_encode_hello(buf, sizeof(buf), &h) == -FP_EINVAL);
  h = sample_hello();
  h.req_custom_len = FP_MAX_CUSTOM + 1;
  CHECK(fp_encode_hello(buf, sizeof(buf), &h) == -FP_EINVAL);
  h = sample_hello();
  h.name_len = FP_SCHEME_NAME_MAX + 1;
  CHECK(fp_encode_hello(buf, sizeof(buf), &h) == -FP_EINVAL);

  fp_welcome w = sample_welcome();
  CHECK(fp_encode_welcome(buf, FP_WELCOME_LEN - 1, &w) == -FP_ENOSPC);
  w.session = 0;
  CHECK(fp_encode_welcome(buf, sizeof(buf), &w) == -FP_EINVAL);

  fp_reject j = sample_reject();
  CHECK(fp_encode_reject(buf, FP_REJECT_LEN - 1, &j) == -FP_ENOSPC);
  j.code = 0;
  CHECK(fp_encode_reject(buf, sizeof(buf), &j) == -FP_EINVAL);

  fp_reset r{1, 2};
  CHECK(fp_encode_reset(buf, FP_RESET_LEN - 1, &r) == -FP_ENOSPC);

  fp_batch_writer bw;
  CHECK(fp_batch_begin(&bw, buf, FP_BATCH_HDR_LEN - 1, FP_MSG_REQUESTS, 1, 0, 0, 0, 0) ==
        -FP_ENOSPC);
  CHECK(fp_batch_begin(&bw, buf, sizeof(buf), FP_MSG_REQUESTS, 0, 0, 0, 0, 0) == -FP_EINVAL);
  CHECK(fp_batch_begin(&bw, buf, sizeof(buf), FP_MSG_HELLO, 1, 0, 0, 0, 0) == -FP_EINVAL);
  CHECK(fp_batch_begin(&bw, buf, sizeof(buf), FP_MSG_VERDICTS, 1, FP_F_PRIO, 0, 0, 0) ==
        -FP_EINVAL);
  CHECK(fp_batch_begin(&bw, buf, sizeof(buf), FP_MSG_REQUESTS, 1, 0, FP_MAX_CUSTOM + 1, 0, 0) ==
        -FP_EINVAL);
  REQUIRE(fp_batch_begin(&bw, buf, FP_BATCH_HDR_LEN + 14, FP_MSG_REQUESTS, 1, 0, 0, 0, 0) == 0);
  fp_request q = fptest::make_request(3);
  q.dscp = 64;
  CHECK(fp_batch_add_request(&bw, &q) == -FP_EINVAL);
  q.dscp = 1;
  q.flags = 0x80;
  CHECK(fp_batch_add_request(&bw, &q) == -FP_EINVAL);
  q.flags = 0;
  CHECK(fp_batch_add_request(&bw, &q) == 0);
  CHECK(fp_batch_add_request(&bw, &q) == -FP_ENOSPC);
  fp_verdict v{};
  v.action = FP_ACT_RELEASE;
  CHECK(fp_batch_add_verdict(&bw, &v) == -FP_EINVAL);  // wrong batch type
  REQUIRE(fp_batch_finish(&bw) == (int)FP_BATCH_HDR_LEN + 14);

  REQUIRE(fp_batch_begin(&bw, buf, sizeof(buf), FP_MSG_VERDICTS, 1, 0, 0, 0, 0) == 0);
  v.action = 0;
  CHECK(fp_batch_add_verdict(&bw, &v) == -FP_EINVAL);
  v.action = 9;
  CHECK(fp_batch_add_verdict(&bw, &v) == -FP_EINVAL);
}

TEST_CASE("wire: REJECT in a foreign version for a HELLO of that version") {
  uint8_t buf[128];
  fp_reject j = sample_reject();
  j.code = FP_REJ_VERSION;
  REQUIRE(fp_encode_reject_version(buf, sizeof(buf), &j, 9) == (int)FP_REJECT_LEN);
  CHECK(buf[2] == 9);
  fp_reject d;
  CHECK(fp_decode_reject(buf, FP_REJECT_LEN, &d) == -FP_EVERSION);
  buf[2] = FP_VERSION;
  REQUIRE(fp_decode_reject(buf, FP_REJECT_LEN, &d) == 0);
  CHECK(d.code == FP_REJ_VERSION);

  // peek works on a HELLO of any version, and only on HELLO.
  fp_hello h = sample_hello();
  REQUIRE(fp_encode_hello(buf, sizeof(buf), &h) == 64);
  buf[2] = 200;
  uint32_t inst = 0, att = 0;
  REQUIRE(fp_peek_hello_ids(buf, FP_HELLO_FROZEN_LEN, &inst, &att) == 0);
  CHECK(inst == h.instance);
  CHECK(att == h.attempt);
  CHECK(fp_peek_hello_ids(buf, FP_HELLO_FROZEN_LEN - 1, &inst, &att) == -FP_ETRUNC);
  buf[3] = FP_MSG_REQUESTS;
  CHECK(fp_peek_hello_ids(buf, 64, &inst, &att) == -FP_ETYPE);
}

TEST_CASE("wire: random mutations never crash and a decoded message re-encodes identically") {
  Rng rng(1234);
  auto msgs = all_samples();
  uint8_t out[FP_DEFAULT_MAX_DGRAM + 64];
  int accepted = 0;
  for (int it = 0; it < 200000; it++) {
    std::vector<uint8_t> m;
    if (rng.below(4) == 0) {
      m.resize(rng.below(200));
      for (auto& b : m) b = (uint8_t)rng.next();
    } else {
      m = msgs[rng.below(msgs.size())];
      int flips = 1 + (int)rng.below(4);
      for (int f = 0; f < flips; f++) {
        switch (rng.below(4)) {
          case 0: m[rng.below(m.size())] = (uint8_t)rng.next(); break;
          case 1: m[rng.below(m.size())] ^= (uint8_t)(1u << rng.below(8)); break;
          case 2: m.resize(rng.below(m.size() + 1)); break;
          default: m.push_back((uint8_t)rng.next()); break;
        }
        if (m.empty()) break;
      }
    }
    // Copy to an exact-size heap buffer so ASan sees any overread.
    std::unique_ptr<uint8_t[]> exact(new uint8_t[m.size() ? m.size() : 1]);
    if (!m.empty()) std::memcpy(exact.get(), m.data(), m.size());
    int rc = decode_any(exact.get(), m.size());
    if (rc != 0) continue;
    accepted++;
    // Canonical: re-encode and compare.
    fp_hdr h;
    fp_decode_hdr(exact.get(), m.size(), &h);
    int n = -1;
    switch (h.type) {
      case FP_MSG_HELLO: {
        fp_hello x;
        fp_decode_hello(exact.get(), m.size(), &x);
        n = fp_encode_hello(out, sizeof(out), &x);
        break;
      }
      case FP_MSG_WELCOME: {
        fp_welcome x;
        fp_decode_welcome(exact.get(), m.size(), &x);
        n = fp_encode_welcome(out, sizeof(out), &x);
        break;
      }
      case FP_MSG_REJECT: {
        fp_reject x;
        fp_decode_reject(exact.get(), m.size(), &x);
        n = fp_encode_reject(out, sizeof(out), &x);
        break;
      }
      case FP_MSG_RESET: {
        fp_reset x;
        fp_decode_reset(exact.get(), m.size(), &x);
        n = fp_encode_reset(out, sizeof(out), &x);
        break;
      }
      case FP_MSG_REQUESTS:
      case FP_MSG_VERDICTS: {
        fp_batch b;
        if (h.type == FP_MSG_REQUESTS)
          fp_decode_requests(exact.get(), m.size(), &b);
        else
          fp_decode_verdicts(exact.get(), m.size(), &b);
        fp_batch_writer w;
        REQUIRE(fp_batch_begin(&w, out, sizeof(out), h.type, b.hdr.session, b.hdr.flags,
                               b.custom_len, b.ack, b.base) == 0);
        for (uint16_t i = 0; i < b.count; i++) {
          if (h.type == FP_MSG_REQUESTS) {
            fp_request r;
            fp_batch_request(&b, i, &r);
            REQUIRE(fp_batch_add_request(&w, &r) == 0);
          } else {
            fp_verdict v;
            fp_batch_verdict(&b, i, &v);
            REQUIRE(fp_batch_add_verdict(&w, &v) == 0);
          }
        }
        n = fp_batch_finish(&w);
        break;
      }
    }
    REQUIRE(n == (int)m.size());
    REQUIRE(std::memcmp(out, exact.get(), m.size()) == 0);
  }
  CHECK(accepted > 100);  // the mutator does hit valid messages too
}

TEST_CASE("wire: names of codes") {
  CHECK(std::string(fp_strerror(-FP_ETRUNC)) == "truncated message");
  CHECK(std::string(fp_strerror(FP_EVERSION)) == "unsupported protocol version");
  CHECK(std::string(fp_strerror(999)) == "unknown error");
  CHECK(std::string(fp_msg_type_name(FP_MSG_VERDICTS)) == "VERDICTS");
  CHECK(std::string(fp_reject_name(FP_REJ_CUSTOM_SIZE)) == "custom-data size mismatch");
  CHECK(std::string(fp_action_name(FP_ACT_MARK)) == "mark");
}
