// A netfilter queue (NFQUEUE) bound over netlink (libmnl + the message API of
// libnetfilter_queue): receives queued packets, sends verdicts in batches.
//
//   NfQueueSocket q;
//   q.open(opts);                              // binds queue N, optionally in another netns
//   q.receive([&](const QueuedPacket& p) {...}); // every packet waiting, up to a batch
//   q.add_verdict(id, NF_ACCEPT, payload, len); // appended to the batch
//   q.flush();                                  // one sendmsg for the batch
//
// The queue copies whole packets (so a CE-marked packet can be handed back
// whole) and does not announce GSO support, so the kernel segments GSO
// packets and completes partial checksums before queueing. With
// `fail_open` the kernel accepts packets when the queue is full instead of
// dropping them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

struct mnl_socket;

namespace flexplane::endpoint::nfq {

struct QueueOptions {
  uint16_t queue_num = 0;
  std::string netns;          // "" = this process's namespace; else a name in /var/run/netns or a path
  uint32_t max_len = 65536;   // packets the kernel queue holds before it drops (or fails open)
  bool fail_open = false;     // kernel: accept instead of drop when the queue is full
  int rcvbuf_bytes = 16 << 20;
};

// Netfilter verdicts (the values of NF_DROP, NF_ACCEPT, NF_REPEAT).
enum class NfVerdict : int { kDrop = 0, kAccept = 1, kRepeat = 4 };

struct QueuedPacket {
  uint32_t id;
  const uint8_t* data;        // starts at the IP header
  size_t len;
  uint32_t mark;
};

// Kernel-side counters of one queue (/proc/net/netfilter/nfnetlink_queue).
struct KernelQueueStats {
  bool found = false;
  uint64_t waiting = 0, queue_dropped = 0, user_dropped = 0, id_sequence = 0;
};

class NfQueueSocket {
 public:
  NfQueueSocket() = default;
  ~NfQueueSocket();
  NfQueueSocket(const NfQueueSocket&) = delete;
  NfQueueSocket& operator=(const NfQueueSocket&) = delete;

  // Throws std::runtime_error with a reason a user can act on.
  void open(const QueueOptions& o);
  int fd() const;

  // Hands every packet waiting (up to max_packets) to fn; returns how many.
  // Netlink errors for earlier verdicts are counted, not fatal.
  size_t receive(const std::function<void(const QueuedPacket&)>& fn, size_t max_packets = 256);
  void add_verdict(uint32_t id, NfVerdict verdict, const uint8_t* payload = nullptr, size_t len = 0);
  void flush();
  // Unbinds the queue (packets still queued in the kernel are dropped by it).
  void close();

  KernelQueueStats kernel_stats() const;
  uint64_t netlink_errors() const { return netlink_errors_; }
  uint64_t recv_overruns() const { return recv_overruns_; }
  uint64_t verdict_batches() const { return batches_; }
  uint64_t verdicts_sent() const { return verdicts_sent_; }

 private:
  void send_config(const std::function<void(void* nlh)>& fill, const char* what);

  mnl_socket* nl_ = nullptr;
  unsigned portid_ = 0;
  QueueOptions o_;
  std::vector<char> rx_, tx_;
  size_t tx_len_ = 0;
  uint32_t seq_ = 0;
  uint64_t netlink_errors_ = 0, recv_overruns_ = 0, batches_ = 0, verdicts_sent_ = 0;
};

// Runs fn with this thread in network namespace `netns` (name or path), then
// returns to the original one. Throws std::runtime_error.
void in_netns(const std::string& netns, const std::function<void()>& fn);

}  // namespace flexplane::endpoint::nfq
