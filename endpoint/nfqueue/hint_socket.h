// The endpoint's side of flow-size hints (flow_hints.h): a Unix datagram
// socket at a filesystem path, read without blocking.
#pragma once

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "endpoint/nfqueue/flow_hints.h"

namespace flexplane::endpoint::nfq {

class HintSocket {
 public:
  HintSocket() = default;
  ~HintSocket() { close(); }
  HintSocket(const HintSocket&) = delete;
  HintSocket& operator=(const HintSocket&) = delete;

  // Creates the socket at `path` (replacing a stale one). Throws on error.
  void open(const std::string& path) {
    sockaddr_un a{};
    if (path.size() >= sizeof(a.sun_path)) throw std::runtime_error("--hints path too long: " + path);
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw std::runtime_error(std::string("hint socket: ") + std::strerror(errno));
    int buf = 4 << 20;
    setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf);
    ::unlink(path.c_str());
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      throw std::runtime_error("cannot create hint socket " + path + ": " + std::strerror(errno));
    chmod(path.c_str(), 0666);
    path_ = path;
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!path_.empty()) ::unlink(path_.c_str());
    path_.clear();
  }
  int fd() const { return fd_; }

  // Calls fn(hint) for every valid hint waiting; counts invalid ones.
  template <class Fn>
  void drain(Fn&& fn, uint64_t* bad) {
    if (fd_ < 0) return;
    uint8_t buf[256];
    for (;;) {
      const ssize_t n = recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
      if (n < 0) return;
      FlowHint h;
      if (decode_flow_hint(buf, size_t(n), &h))
        fn(h);
      else
        ++*bad;
    }
  }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace flexplane::endpoint::nfq
