// Plain bytes for state that moves between processes of one run (the same
// build on every side: trivially copyable values as they lie in memory).
// A short or long read throws: a message from another rank that does not
// parse is a bug, never silently half-applied.
#pragma once

#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace flexplane::serial {

class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}
  template <typename T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  template <typename T>
  void vec(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    put(static_cast<uint64_t>(v.size()));
    out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void str(const std::string& s) {
    put(static_cast<uint64_t>(s.size()));
    out_.append(s);
  }

 private:
  std::string& out_;
};

// Words with the zeros left out: per run of up to 64 words, a bitmap of
// those that are not zero, then those words. Counters are mostly zero (a
// router's queues that saw no drop, a port that never filled): results of
// a run across processes shrink several times over (docs/design.md).
inline void put_words(Writer& w, const uint64_t* v, size_t n) {
  for (size_t base = 0; base < n; base += 64) {
    const size_t end = n - base < 64 ? n : base + 64;
    uint64_t bits = 0;
    for (size_t i = base; i < end; ++i) bits |= uint64_t{v[i] != 0} << (i - base);
    w.put(bits);
    for (size_t i = base; i < end; ++i)
      if (v[i]) w.put(v[i]);
  }
}

class Reader {
 public:
  Reader(const char* data, size_t n) : p_(data), end_(data + n) {}
  explicit Reader(const std::string& in) : Reader(in.data(), in.size()) {}
  template <typename T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    take(&v, sizeof v);
    return v;
  }
  // Appends (the vector may hold this process's own entries already).
  template <typename T>
  void vec(std::vector<T>& v) {
    const uint64_t n = get<uint64_t>();
    if (n > static_cast<uint64_t>(end_ - p_) / sizeof(T)) throw std::runtime_error("serial: vector overruns its message");
    if (n == 0) return;  // (an empty vector's data() may be null: no memcpy to it)
    const size_t at = v.size();
    v.resize(at + n);
    take(v.data() + at, n * sizeof(T));
  }
  // The next n bytes, in place.
  const char* bytes(size_t n) {
    if (n > static_cast<size_t>(end_ - p_)) throw std::runtime_error("serial: message too short");
    const char* at = p_;
    p_ += n;
    return at;
  }
  std::string str() {
    const uint64_t n = get<uint64_t>();
    if (n > static_cast<uint64_t>(end_ - p_)) throw std::runtime_error("serial: string overruns its message");
    std::string out(p_, static_cast<size_t>(n));
    p_ += n;
    return out;
  }
  // The words put_words wrote (n of them, as there).
  void words(uint64_t* v, size_t n) {
    for (size_t base = 0; base < n; base += 64) {
      const size_t end = n - base < 64 ? n : base + 64;
      const uint64_t bits = get<uint64_t>();
      if (end - base < 64 && bits >> (end - base)) throw std::runtime_error("serial: word bitmap out of range");
      for (size_t i = base; i < end; ++i) v[i] = bits >> (i - base) & 1 ? get<uint64_t>() : 0;
    }
  }
  size_t offset(const char* start) const { return static_cast<size_t>(p_ - start); }
  bool done() const { return p_ == end_; }
  void expect_end() const {
    if (p_ != end_) throw std::runtime_error("serial: " + std::to_string(end_ - p_) + " bytes left over");
  }

 private:
  void take(void* to, size_t n) {
    if (n > static_cast<size_t>(end_ - p_)) throw std::runtime_error("serial: message too short");
    std::memcpy(to, p_, n);
    p_ += n;
  }
  const char* p_;
  const char* end_;
};

}  // namespace flexplane::serial
