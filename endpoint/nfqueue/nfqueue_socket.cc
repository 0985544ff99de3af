#include "endpoint/nfqueue/nfqueue_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern "C" {
#include <libnetfilter_queue/libnetfilter_queue.h>
}

namespace flexplane::endpoint::nfq {

namespace {

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

std::string netns_path(const std::string& netns) {
  return netns.find('/') == std::string::npos ? "/var/run/netns/" + netns : netns;
}

}  // namespace

void in_netns(const std::string& netns, const std::function<void()>& fn) {
  if (netns.empty()) {
    fn();
    return;
  }
  const int self = ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  if (self < 0) throw std::runtime_error(errno_text("open /proc/self/ns/net"));
  const std::string path = netns_path(netns);
  const int target = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (target < 0) {
    const std::string e = errno_text(("network namespace " + path).c_str());
    ::close(self);
    throw std::runtime_error(e);
  }
  if (setns(target, CLONE_NEWNET) != 0) {
    const std::string e = errno_text(("setns " + path).c_str());
    ::close(self);
    ::close(target);
    throw std::runtime_error(e + " (needs root)");
  }
  std::string error;
  try {
    fn();
  } catch (const std::exception& e) {
    error = e.what();
  }
  const bool back = setns(self, CLONE_NEWNET) == 0;
  ::close(self);
  ::close(target);
  if (!back) throw std::runtime_error(errno_text("setns back to the original network namespace"));
  if (!error.empty()) throw std::runtime_error(error);
}

NfQueueSocket::~NfQueueSocket() { close(); }

int NfQueueSocket::fd() const { return nl_ ? mnl_socket_get_fd(nl_) : -1; }

void NfQueueSocket::send_config(const std::function<void(void* nlh)>& fill, const char* what) {
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* nlh = nfq_nlmsg_put(buf.data(), NFQNL_MSG_CONFIG, o_.queue_num);
  nlh->nlmsg_flags |= NLM_F_ACK;
  nlh->nlmsg_seq = ++seq_;
  fill(nlh);
  if (mnl_socket_sendto(nl_, nlh, nlh->nlmsg_len) < 0) throw std::runtime_error(errno_text(what));
  // Read the ACK (or the error). Packets queued meanwhile (copied before the
  // configuration applied) are re-injected afterwards with NF_REPEAT: the
  // hook queues them again, now fully copied.
  std::vector<uint32_t> stray;
  auto cb = [](const nlmsghdr* h, void* data) -> int {
    nlattr* attr[NFQA_MAX + 1] = {};
    if (nfq_nlmsg_parse(h, attr) >= 0 && attr[NFQA_PACKET_HDR]) {
      const auto* ph = static_cast<const nfqnl_msg_packet_hdr*>(mnl_attr_get_payload(attr[NFQA_PACKET_HDR]));
      static_cast<std::vector<uint32_t>*>(data)->push_back(ntohl(ph->packet_id));
    }
    return MNL_CB_OK;
  };
  for (;;) {
    const ssize_t n = mnl_socket_recvfrom(nl_, buf.data(), buf.size());
    if (n < 0) throw std::runtime_error(errno_text(what));
    const int rc = mnl_cb_run(buf.data(), n, 0, portid_, cb, &stray);
    if (rc == MNL_CB_STOP) break;
    if (rc < 0) {
      std::string msg = std::string(what) + ": " + std::strerror(errno);
      if (errno == EBUSY)
        msg += " (queue " + std::to_string(o_.queue_num) + " is bound by another process: another endpoint running?)";
      if (errno == EPERM) msg += " (needs root / CAP_NET_ADMIN)";
      throw std::runtime_error(msg);
    }
  }
  for (uint32_t id : stray) add_verdict(id, NfVerdict::kRepeat);
  flush();
}

void NfQueueSocket::open(const QueueOptions& o) {
  o_ = o;
  in_netns(o.netns, [this] {
    nl_ = mnl_socket_open2(NETLINK_NETFILTER, SOCK_CLOEXEC);
    if (!nl_) throw std::runtime_error(errno_text("netlink socket"));
  });
  if (mnl_socket_bind(nl_, 0, MNL_SOCKET_AUTOPID) < 0) throw std::runtime_error(errno_text("netlink bind"));
  portid_ = mnl_socket_get_portid(nl_);
  const int fd = mnl_socket_get_fd(nl_);
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &o.rcvbuf_bytes, sizeof o.rcvbuf_bytes) != 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &o.rcvbuf_bytes, sizeof o.rcvbuf_bytes);
  rx_.resize(0xffff + (MNL_SOCKET_BUFFER_SIZE / 2));
  tx_.resize(256 * 1024);
  tx_len_ = 0;
  // One message: the kernel binds the queue and applies copy mode, length
  // and flags in a single call.
  send_config(
      [&o](void* p) {
        auto* nlh = static_cast<nlmsghdr*>(p);
        nfq_nlmsg_cfg_put_cmd(nlh, AF_UNSPEC, NFQNL_CFG_CMD_BIND);
        nfq_nlmsg_cfg_put_params(nlh, NFQNL_COPY_PACKET, 0xffff);
        nfq_nlmsg_cfg_put_qmaxlen(nlh, o.max_len);
        mnl_attr_put_u32(nlh, NFQA_CFG_FLAGS, htonl(o.fail_open ? NFQA_CFG_F_FAIL_OPEN : 0));
        mnl_attr_put_u32(nlh, NFQA_CFG_MASK, htonl(NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO));
      },
      ("bind NFQUEUE " + std::to_string(o.queue_num)).c_str());
  // Lost netlink notifications are counted by the kernel (user_dropped);
  // don't turn them into errors on every recv.
  int one = 1;
  setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof one);
  const int flags = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

size_t NfQueueSocket::receive(const std::function<void(const QueuedPacket&)>& fn, size_t max_packets) {
  if (!nl_) return 0;
  struct Ctx {
    const std::function<void(const QueuedPacket&)>* fn;
    size_t n;
  } ctx{&fn, 0};
  auto cb = [](const nlmsghdr* nlh, void* data) -> int {
    auto* c = static_cast<Ctx*>(data);
    nlattr* attr[NFQA_MAX + 1] = {};
    if (nfq_nlmsg_parse(nlh, attr) < 0 || !attr[NFQA_PACKET_HDR]) return MNL_CB_OK;
    const auto* ph = static_cast<const nfqnl_msg_packet_hdr*>(mnl_attr_get_payload(attr[NFQA_PACKET_HDR]));
    QueuedPacket p;
    p.id = ntohl(ph->packet_id);
    p.data = attr[NFQA_PAYLOAD] ? static_cast<const uint8_t*>(mnl_attr_get_payload(attr[NFQA_PAYLOAD])) : nullptr;
    p.len = attr[NFQA_PAYLOAD] ? mnl_attr_get_payload_len(attr[NFQA_PAYLOAD]) : 0;
    p.mark = attr[NFQA_MARK] ? ntohl(mnl_attr_get_u32(attr[NFQA_MARK])) : 0;
    (*c->fn)(p);
    ++c->n;
    return MNL_CB_OK;
  };
  const int fd = mnl_socket_get_fd(nl_);
  while (ctx.n < max_packets) {
    const ssize_t n = recv(fd, rx_.data(), rx_.size(), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == ENOBUFS) {
        ++recv_overruns_;
        continue;
      }
      break;  // EAGAIN or a transient error: try again at the next poll
    }
    // Errors (NLMSG_ERROR) for verdicts of packets the kernel no longer
    // holds come back here; count them.
    const int rc = mnl_cb_run(rx_.data(), n, 0, portid_, cb, &ctx);
    if (rc < 0) ++netlink_errors_;
  }
  return ctx.n;
}

static_assert(int(NfVerdict::kDrop) == NF_DROP && int(NfVerdict::kAccept) == NF_ACCEPT && int(NfVerdict::kRepeat) == NF_REPEAT);

void NfQueueSocket::add_verdict(uint32_t id, NfVerdict verdict, const uint8_t* payload, size_t len) {
  const size_t need = MNL_ALIGN(sizeof(nlmsghdr)) + 64 + MNL_ALIGN(len) + 16;
  if (tx_len_ + need > tx_.size()) flush();
  nlmsghdr* nlh = nfq_nlmsg_put(tx_.data() + tx_len_, NFQNL_MSG_VERDICT, o_.queue_num);
  nfq_nlmsg_verdict_put(nlh, static_cast<int>(id), static_cast<int>(verdict));
  if (payload) nfq_nlmsg_verdict_put_pkt(nlh, payload, static_cast<uint32_t>(len));
  tx_len_ += MNL_ALIGN(nlh->nlmsg_len);
  ++verdicts_sent_;
}

void NfQueueSocket::flush() {
  if (!nl_ || tx_len_ == 0) return;
  // Several netlink messages in one datagram: the kernel processes each.
  if (mnl_socket_sendto(nl_, tx_.data(), tx_len_) < 0) ++netlink_errors_;
  ++batches_;
  tx_len_ = 0;
}

void NfQueueSocket::close() {
  if (!nl_) return;
  flush();
  // Closing the socket unbinds the queue; the kernel drops what it still holds.
  mnl_socket_close(nl_);
  nl_ = nullptr;
}

KernelQueueStats NfQueueSocket::kernel_stats() const {
  KernelQueueStats s;
  std::string text;
  try {
    in_netns(o_.netns, [&text] {
      std::ifstream f("/proc/net/netfilter/nfnetlink_queue");
      std::stringstream ss;
      ss << f.rdbuf();
      text = ss.str();
    });
  } catch (const std::exception&) {
    return s;
  }
  // queue_number peer_portid queue_total copy_mode copy_range queue_dropped user_dropped id_sequence 1
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    uint64_t q, portid, total, mode, range, qdrop, udrop, idseq;
    if (!(l >> q >> portid >> total >> mode >> range >> qdrop >> udrop >> idseq)) continue;
    if (q != o_.queue_num) continue;
    s.found = true;
    s.waiting = total;
    s.queue_dropped = qdrop;
    s.user_dropped = udrop;
    s.id_sequence = idseq;
  }
  return s;
}

}  // namespace flexplane::endpoint::nfq
