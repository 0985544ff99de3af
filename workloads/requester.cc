#include "workloads/requester.h"

#include <cstdio>
#include <stdexcept>

namespace flexplane::workloads {

const char* status_name(FlowStatus s) {
  switch (s) {
    case FlowStatus::kOk: return "ok";
    case FlowStatus::kRunning: return "running";
    case FlowStatus::kConnectFailed: return "connect_failed";
    case FlowStatus::kReset: return "reset";
    case FlowStatus::kShort: return "short";
    case FlowStatus::kUnfinished: return "unfinished";
  }
  return "invalid";
}

Requester::Requester(std::vector<Endpoint> servers, std::string cc)
    : servers_(std::move(servers)), cc_(std::move(cc)), buf_(1 << 18) {
  ep_ = epoll_create1(EPOLL_CLOEXEC);
  if (ep_ < 0) throw std::runtime_error(std::string("epoll: ") + std::strerror(errno));
}

Requester::~Requester() {
  for (auto& [fd, f] : flows_) close(fd);
  close(ep_);
}

Flow* Requester::start(uint32_t server, const Request& req, uint64_t tag) {
  const Endpoint& to = servers_.at(server);
  auto f = std::make_unique<Flow>();
  f->id = next_id_++;
  f->server = server;
  f->tag = tag;
  f->req = req;
  f->start_mono = mono_ns();
  f->start_real = real_ns();
  encode_request(req, f->request_bytes);
  const int fd = socket(to.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  set_congestion_control(fd, cc_);
  set_nodelay(fd);
  f->fd = fd;
  Flow* raw = f.get();
  flows_[fd] = std::move(f);
  epoll_event e{};
  e.events = EPOLLOUT | EPOLLIN | EPOLLRDHUP;
  e.data.fd = fd;
  epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &e);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&to.addr), to.len) != 0 && errno != EINPROGRESS) {
    raw->error = errno;  // reported at the next poll
    raw->status = FlowStatus::kConnectFailed;
    failed_at_start_.push_back(fd);
  }
  return raw;
}

void Requester::finish(Flow& f, FlowStatus s, int error, const std::function<void(const Flow&)>& fn) {
  f.status = s;
  f.error = error;
  f.done_mono = mono_ns();
  epoll_ctl(ep_, EPOLL_CTL_DEL, f.fd, nullptr);
  close(f.fd);
  const int fd = f.fd;
  if (fn) fn(f);
  flows_.erase(fd);
}

void Requester::on_event(Flow& f, uint32_t events, const std::function<void(const Flow&)>& fn) {
  if (f.status == FlowStatus::kConnectFailed) return finish(f, FlowStatus::kConnectFailed, f.error, fn);
  if (!f.connected_mono && (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
    int err = 0;
    socklen_t l = sizeof err;
    getsockopt(f.fd, SOL_SOCKET, SO_ERROR, &err, &l);
    if (err) return finish(f, FlowStatus::kConnectFailed, err, fn);
    f.connected_mono = mono_ns();
  }
  if (f.connected_mono && f.request_sent < kRequestBytes) {
    const ssize_t w = send(f.fd, f.request_bytes + f.request_sent, kRequestBytes - f.request_sent, MSG_NOSIGNAL);
    if (w < 0 && errno != EAGAIN) return finish(f, FlowStatus::kReset, errno, fn);
    if (w > 0) f.request_sent += size_t(w);
    if (f.request_sent == kRequestBytes) {
      epoll_event e{};
      e.events = EPOLLIN | EPOLLRDHUP;
      e.data.fd = f.fd;
      epoll_ctl(ep_, EPOLL_CTL_MOD, f.fd, &e);
    }
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    for (;;) {
      const ssize_t r = recv(f.fd, buf_.data(), buf_.size(), 0);
      if (r > 0) {
        if (!f.first_byte_mono) f.first_byte_mono = mono_ns();
        f.received += uint64_t(r);
        f.interval_bytes += uint64_t(r);
        if (f.req.size && f.received >= f.req.size) return finish(f, FlowStatus::kOk, 0, fn);
        continue;
      }
      if (r == 0) return finish(f, f.req.size ? FlowStatus::kShort : FlowStatus::kOk, 0, fn);
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return finish(f, FlowStatus::kReset, errno, fn);
    }
  }
}

void Requester::poll(int timeout_ms, const std::function<void(const Flow&)>& fn) {
  for (int fd : failed_at_start_) {
    auto it = flows_.find(fd);
    if (it != flows_.end()) finish(*it->second, FlowStatus::kConnectFailed, it->second->error, fn);
  }
  failed_at_start_.clear();
  epoll_event events[256];
  const int n = epoll_wait(ep_, events, 256, timeout_ms);
  for (int i = 0; i < n; ++i) {
    auto it = flows_.find(events[i].data.fd);
    if (it != flows_.end()) on_event(*it->second, events[i].events, fn);
  }
}

void Requester::abort_all(FlowStatus status, const std::function<void(const Flow&)>& fn) {
  std::vector<int> fds;
  for (auto& [fd, f] : flows_) fds.push_back(fd);
  for (int fd : fds) finish(*flows_[fd], status, 0, fn);
}

}  // namespace flexplane::workloads
