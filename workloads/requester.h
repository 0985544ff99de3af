// The client side of every lab workload: opens one TCP connection per
// request (wire.h), sends the request, reads the response, and records when
// it connected, saw its first byte and completed. One thread, epoll,
// non-blocking sockets; the drivers (rpc, bulk, incast) decide when to start
// requests and what to do with finished ones.
#pragma once

#include <sys/epoll.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "workloads/tcp_util.h"
#include "workloads/wire.h"

namespace flexplane::workloads {

enum class FlowStatus { kOk, kRunning, kConnectFailed, kReset, kShort, kUnfinished };
const char* status_name(FlowStatus s);

struct Flow {
  uint64_t id = 0;
  uint32_t server = 0;        // index into the server list
  uint64_t tag = 0;           // the driver's (e.g. incast query)
  Request req;                // size 0 = stream
  int fd = -1;
  FlowStatus status = FlowStatus::kRunning;
  int error = 0;              // errno of a failure
  uint64_t start_mono = 0, start_real = 0, connected_mono = 0, first_byte_mono = 0, done_mono = 0;
  uint64_t received = 0;
  uint64_t interval_bytes = 0;  // since the driver last reset it (bulk)
  size_t request_sent = 0;
  uint8_t request_bytes[kRequestBytes];
};

class Requester {
 public:
  Requester(std::vector<Endpoint> servers, std::string cc);
  ~Requester();

  // Starts a request; the flow is owned by the requester until done.
  Flow* start(uint32_t server, const Request& req, uint64_t tag = 0);
  // Waits up to timeout_ms for socket events; fn(flow) for every flow that
  // finished (ok or failed); the flow is freed after fn returns.
  void poll(int timeout_ms, const std::function<void(const Flow&)>& fn);
  // Ends every running flow with `status` (fn called for each).
  void abort_all(FlowStatus status, const std::function<void(const Flow&)>& fn);

  size_t running() const { return flows_.size(); }
  const std::vector<Endpoint>& servers() const { return servers_; }
  template <class Fn>
  void for_each_running(Fn&& fn) {
    for (auto& [fd, f] : flows_) fn(*f);
  }

 private:
  void finish(Flow& f, FlowStatus s, int error, const std::function<void(const Flow&)>& fn);
  void on_event(Flow& f, uint32_t events, const std::function<void(const Flow&)>& fn);

  std::vector<Endpoint> servers_;
  std::string cc_;
  int ep_ = -1;
  uint64_t next_id_ = 0;
  std::unordered_map<int, std::unique_ptr<Flow>> flows_;
  std::vector<uint8_t> buf_;
  std::vector<int> failed_at_start_;  // connect() failed at once: finished at the next poll
};

}  // namespace flexplane::workloads
