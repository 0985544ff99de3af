// serial.h: what one rank packs another unpacks field for field, and a
// message that does not parse throws (never a half-applied state).
#include "emulator/engine/serial.h"

#include <catch2/catch.hpp>

#include "api/packet.h"

using namespace flexplane;

TEST_CASE("serial: values and vectors round-trip; a vector appends", "[serial]") {
  std::string buf;
  serial::Writer w(buf);
  Packet p{};
  p.flow = 7, p.seq = 3, p.src = 1, p.dst = 2, p.custom[2] = 99;
  w.put(uint8_t{5});
  w.put(p);
  w.vec(std::vector<uint64_t>{1, 2, 3});
  serial::Reader r(buf);
  CHECK(r.get<uint8_t>() == 5);
  const Packet q = r.get<Packet>();
  CHECK(q.flow == 7);
  CHECK(q.seq == 3);
  CHECK(q.custom[2] == 99u);
  std::vector<uint64_t> v{9};
  r.vec(v);
  CHECK(v == std::vector<uint64_t>{9, 1, 2, 3});
  CHECK(r.done());
  CHECK_NOTHROW(r.expect_end());
}

TEST_CASE("serial: short, overlong and left-over messages throw", "[serial]") {
  std::string buf;
  serial::Writer w(buf);
  w.put(uint32_t{1});
  {
    serial::Reader r(buf);
    CHECK_THROWS_WITH(r.get<uint64_t>(), Catch::Contains("too short"));
  }
  {
    serial::Reader r(buf.data(), 2);
    CHECK_THROWS(r.get<uint32_t>());
  }
  std::string vec;
  serial::Writer(vec).put(uint64_t{1} << 40);  // a length no message holds
  {
    serial::Reader r(vec);
    std::vector<uint64_t> v;
    CHECK_THROWS_WITH(r.vec(v), Catch::Contains("overruns"));
    CHECK(v.empty());
  }
  {
    serial::Reader r(buf);
    CHECK_THROWS_WITH(r.expect_end(), Catch::Contains("4 bytes left over"));
    CHECK_THROWS(r.bytes(5));
    CHECK(r.bytes(4) == buf.data());
    CHECK(r.done());
  }
}

TEST_CASE("serial: words with the zeros left out come back as they were, and strings too", "[serial]") {
  for (size_t n : {size_t{0}, size_t{1}, size_t{41}, size_t{64}, size_t{65}, size_t{200}}) {
    INFO("n = " << n);
    std::vector<uint64_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = i % 3 == 0 ? 0 : (i * 0x9e3779b97f4a7c15ull) | 1;
    if (n) v[n - 1] = ~uint64_t{0};
    std::string buf;
    serial::Writer w(buf);
    serial::put_words(w, v.data(), n);
    w.str("a name");
    size_t nonzero = 0;
    for (uint64_t x : v) nonzero += x != 0;
    CHECK(buf.size() == 8 * ((n + 63) / 64 + nonzero) + 8 + 6);  // bitmaps, the words that are not zero, the string
    serial::Reader r(buf);
    std::vector<uint64_t> back(n, 7);
    r.words(back.data(), n);
    CHECK(back == v);
    CHECK(r.str() == "a name");
    r.expect_end();
  }
  // A bitmap naming words past the end is refused, not read.
  std::string bad;
  serial::Writer(bad).put(uint64_t{1} << 5);
  serial::Reader r(bad);
  uint64_t out[3];
  CHECK_THROWS_WITH(r.words(out, 3), Catch::Contains("bitmap"));
}
