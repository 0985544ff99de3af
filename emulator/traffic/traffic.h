// Where abstract packets come from and go to at the endpoints.
//
// The engine groups the endpoints of each ToR into one node that runs on the
// ToR's core. A TrafficSource says what each endpoint's NIC sends in a
// timeslot (at most one packet per endpoint: the access link's rate); a
// TrafficSink sees every packet that reaches an endpoint. Implementations:
// flows from a workload or trace (flow_traffic.h), an always-backlogged
// all-to-all pattern for benchmarks (backlog_traffic.h), and live endpoints.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "api/packet.h"
#include "emulator/engine/event_log.h"

namespace flexplane {

class Router;

class TrafficSource {
 public:
  virtual ~TrafficSource() = default;
  // Write at most one packet per endpoint of the group into out[], with the
  // endpoint's index within the group in local[]; return the count.
  virtual uint32_t emit(Timeslot now, Packet* out, uint32_t* local) = 0;
  // Called after emit(now) when the engine uses lookahead: the earliest
  // timeslot after `now` at which the group may send a packet to an endpoint
  // outside it (kNoRemoteTraffic: never). A promise, and it must be kept:
  // other cores run ahead on it. The default promises nothing.
  virtual Timeslot remote_quiet_until(Timeslot now) { return now + 1; }
  // Called after emit(now) (and remote_quiet_until) when the engine skips
  // idle work (EngineOptions::skip_idle): the earliest timeslot after `now`
  // at which emit() may send a packet or change anything, whatever the
  // group's sink receives meanwhile (kNoRemoteTraffic: never). The engine
  // then calls neither emit() nor remote_quiet_until() before it (the sink
  // still gets every delivery). A promise, like remote_quiet_until: emit()
  // at any skipped timeslot would have returned 0 and left the source as it
  // was. The default, now + 1, asks for every timeslot. A source whose sink
  // feeds it (closed loop: ACKs) may sleep only while nothing its sink
  // receives can matter to it (closed loop: no flow under way).
  virtual Timeslot next_emit(Timeslot now) { return now + 1; }
  // Stop when done (EngineOptions::stop_when_done), asked after emit(now) at
  // the engine's checkpoints: whether the group may still send or act after
  // `now` on its own -- a flow not yet started or not finished (closed loop:
  // not acknowledged in full), a packet waiting in a NIC. Adds to
  // `*in_transit` the messages this group's traffic sent to sources (closed
  // loop: the ACKs its receivers produced) minus those its source took, up to
  // `now`: summed over every group, what is still on its way. The default is
  // always busy: a source that cannot tell never lets a run stop early.
  virtual bool busy_after(Timeslot /*now*/, int64_t* /*in_transit*/) { return true; }
  // A PFC pause frame from the ToR (api/pfc.h) reaches endpoint `local` of
  // the group at `now`: while `paused` is not 0 the endpoint's NIC must not
  // send (priorities are the switch's queues, which an endpoint does not
  // know: any paused priority stops it). Called before emit(now). The
  // default ignores it (live traffic: the packets are already on their way);
  // the closed- and open-loop sources hold their NICs.
  virtual void pause(uint32_t /*local*/, uint8_t /*paused*/, Timeslot /*now*/) {}
};

// "Never" for remote_quiet_until(); small enough to add latencies to.
constexpr Timeslot kNoRemoteTraffic = ~Timeslot{0} >> 4;

class TrafficSink {
 public:
  virtual ~TrafficSink() = default;
  virtual void deliver(const Packet* pkts, uint32_t n, Timeslot now) = 0;
};

// State that endpoint groups write and others read outside the network
// (closed loop: the ACKs on their way back to a group, a group's progress).
// Where the engine runs groups in other processes
// (emulator/engine/partition.h) it copies each item from the processes of
// its writers to those of its readers: collect() in a process that runs
// some writer and no reader appends what that process's writers added
// since the last call, apply() in a reader's process takes that in.
// Watermarks (a value that only grows and says that data before it is
// complete) are collected before any data and applied after it. Items know
// nothing of processes.
class MirroredState {
 public:
  enum class Kind { kData, kWatermark };
  virtual ~MirroredState() = default;
  virtual Kind kind() const = 0;
  virtual const std::vector<EndpointId>& writers() const = 0;  // an endpoint of each writing group
  virtual const std::vector<EndpointId>& readers() const = 0;  // an endpoint of each reading group
  virtual void collect(std::string& out) = 0;
  virtual void apply(const char* data, size_t n) = 0;
};

// Makes the source and sink of one endpoint group (the endpoints of one ToR).
class Traffic {
 public:
  virtual ~Traffic() = default;
  virtual std::unique_ptr<TrafficSource> make_source(const std::vector<EndpointId>& group) = 0;
  virtual std::unique_ptr<TrafficSink> make_sink(const std::vector<EndpointId>& group, EventLog* log) = 0;
  // The router the group's endpoints hang off (their ToR), told before
  // make_source/make_sink of that group. The engine runs that router on the
  // group's core and, each timeslot, before the group: the group's source and
  // sink may read its state (e.g. a port's backlog) during their own step, and
  // nowhere else. The default ignores it.
  virtual void set_group_router(const std::vector<EndpointId>& /*group*/, const Router& /*tor*/) {}
  // The group's core's progress, told before make_source/make_sink of that
  // group: the first timeslot some node of the core has not finished, so
  // the group's sink has delivered every timeslot before it, whether its
  // source ran or slept (next_emit). Read from any core (acquire); it only
  // grows. The default ignores it.
  virtual void set_group_clock(const std::vector<EndpointId>& /*group*/, const std::atomic<Timeslot>* /*finished*/) {}
  // Where drops on engine core `core` are reported besides the core's log
  // (live mode turns them into drop verdicts); null for none.
  virtual EventSink* drop_sink(uint32_t core) { return nullptr; }
  // Whether the engine should keep every drop in memory (virtual-time runs
  // need them for flow outcomes; live runs are unbounded and forward them).
  virtual bool record_drops() const { return true; }
  // Cross-group state for runs across processes (MirroredState), asked once
  // after every group's source and sink were made; the order must be the
  // same in every process. None by default.
  virtual std::vector<MirroredState*> mirrored_state() { return {}; }
  // Runs across processes, after the run: this process's share of the
  // results (what the groups `local` says it ran wrote), and on the process
  // that writes the outputs, every other's folded in. Neither by default
  // (such traffic has no results to gather).
  virtual void pack_results(const std::vector<bool>& local_endpoint, std::string& out) const {}
  virtual void unpack_results(const std::string& in) {}
};

}  // namespace flexplane
