#include "workloads/server.h"

#include <sys/epoll.h>

#include <csignal>
#include <cstdio>
#include <memory>
#include <unordered_map>
#include <vector>

#include "workloads/tcp_util.h"
#include "workloads/wire.h"

namespace flexplane::workloads {

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

struct Conn {
  int fd = -1;
  int family = AF_INET;
  uint8_t hdr[kRequestBytes];
  size_t hdr_got = 0;
  bool writing = false;
  bool stream = false;
  uint64_t left = 0;
};

struct Stats {
  uint64_t accepted = 0, completed = 0, aborted = 0, bad_requests = 0, bytes = 0;
};

}  // namespace

int run_server(const ServerOptions& o) {
  Endpoint listen_at;
  if (!Endpoint::parse(o.bind, o.port, &listen_at)) {
    std::fprintf(stderr, "flexplane-workload serve: bad --bind '%s'\n", o.bind.c_str());
    return 2;
  }
  const int lfd = socket(listen_at.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1, zero = 0;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (listen_at.family() == AF_INET6) setsockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
  // SYN-ACKs leave before the request says what the response is: with
  // DSCP classes in use they get the given class, and each response then
  // its own (best effort unless the request asks for one).
  if (o.syn_dscp >= 0) set_dscp(lfd, listen_at.family(), static_cast<uint8_t>(o.syn_dscp));
  try {
    set_congestion_control(lfd, o.cc);  // accepted sockets inherit it
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flexplane-workload serve: %s\n", e.what());
    return 2;
  }
  if (bind(lfd, reinterpret_cast<const sockaddr*>(&listen_at.addr), listen_at.len) != 0 || listen(lfd, 4096) != 0) {
    std::fprintf(stderr, "flexplane-workload serve: cannot listen on %s port %u: %s\n", o.bind.c_str(), o.port,
                 std::strerror(errno));
    return 1;
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGPIPE, SIG_IGN);
  endpoint::FlowHintSender hints(o.hints);
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = lfd;
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
  std::unordered_map<int, std::unique_ptr<Conn>> conns;
  static uint8_t zeros[65536];
  Stats st;
  const uint64_t end = o.duration_s > 0 ? mono_ns() + uint64_t(o.duration_s * 1e9) : UINT64_MAX;
  if (!o.quiet) std::fprintf(stderr, "serve: listening on %s port %u\n", o.bind.c_str(), o.port);

  auto finish = [&](int fd, bool ok) {
    epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    conns.erase(fd);
    (ok ? st.completed : st.aborted)++;
  };
  auto pump = [&](Conn& c) {  // write until done or the socket is full
    while (c.stream || c.left > 0) {
      const size_t n = c.stream ? sizeof zeros : std::min<uint64_t>(c.left, sizeof zeros);
      const ssize_t w = send(c.fd, zeros, n, MSG_NOSIGNAL);
      if (w < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        finish(c.fd, c.stream);  // a stream ends when the client closes
        return;
      }
      st.bytes += uint64_t(w);
      if (!c.stream) c.left -= uint64_t(w);
    }
    finish(c.fd, true);
  };

  std::vector<epoll_event> events(256);
  while (!g_stop && mono_ns() < end) {
    const int n = epoll_wait(ep, events.data(), int(events.size()), 100);
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == lfd) {
        for (;;) {
          sockaddr_storage peer{};
          socklen_t pl = sizeof peer;
          const int cfd = accept4(lfd, reinterpret_cast<sockaddr*>(&peer), &pl, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (cfd < 0) break;
          set_nodelay(cfd);
          auto c = std::make_unique<Conn>();
          c->fd = cfd;
          c->family = peer.ss_family;
          epoll_event e{};
          e.events = EPOLLIN | EPOLLRDHUP;
          e.data.fd = cfd;
          epoll_ctl(ep, EPOLL_CTL_ADD, cfd, &e);
          conns[cfd] = std::move(c);
          ++st.accepted;
        }
        continue;
      }
      auto it = conns.find(fd);
      if (it == conns.end()) continue;
      Conn& c = *it->second;
      if (!c.writing) {
        const ssize_t r = recv(fd, c.hdr + c.hdr_got, kRequestBytes - c.hdr_got, 0);
        if (r <= 0) {
          if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
          finish(fd, false);
          continue;
        }
        c.hdr_got += size_t(r);
        if (c.hdr_got < kRequestBytes) continue;
        Request req;
        if (!decode_request(c.hdr, &req)) {
          ++st.bad_requests;
          finish(fd, false);
          continue;
        }
        if (req.dscp != kNoDscp)
          set_dscp(fd, c.family, req.dscp);
        else if (o.syn_dscp >= 0)
          set_dscp(fd, c.family, 0);
        c.stream = req.size == 0;
        c.left = req.size;
        c.writing = true;
        hint_flow(hints, fd, req.size);  // before the first byte leaves
        epoll_event e{};
        e.events = EPOLLOUT | EPOLLRDHUP;
        e.data.fd = fd;
        epoll_ctl(ep, EPOLL_CTL_MOD, fd, &e);
        pump(c);
      } else if (events[i].events & (EPOLLERR | EPOLLHUP)) {
        finish(fd, c.stream);
      } else {
        pump(c);
      }
    }
  }
  for (auto it = conns.begin(); it != conns.end();) {
    close(it->first);
    ++st.aborted;
    it = conns.erase(it);
  }
  close(lfd);
  close(ep);
  std::printf("serve: accepted %llu, completed %llu, aborted %llu, bad requests %llu, bytes sent %llu, hints failed %llu\n",
              (unsigned long long)st.accepted, (unsigned long long)st.completed, (unsigned long long)st.aborted,
              (unsigned long long)st.bad_requests, (unsigned long long)st.bytes, (unsigned long long)hints.failed());
  return 0;
}

}  // namespace flexplane::workloads
