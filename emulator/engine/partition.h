// Runs split across processes: the seam between the engine and a runtime
// that moves state between processes (MPI: emulator/engine/mpi/).
//
// Principles
//  - Every process builds the whole engine (routers, links, cores, traffic)
//    and runs only its own cores; the other cores' shared state -- their
//    watermarks, promises, stop-when-done posts, the cross-core link slots
//    they write, and traffic's cross-group state (Traffic::mirrored_state)
//    -- is a replica that the Partition keeps current. The engine's cores
//    read replicas exactly as they read another core's memory, so the
//    results are those of one process (docs/design.md, "Runs across
//    processes").
//  - Order is what makes a replica safe: a process snapshots watermarks
//    (promises, then `next` and `finished`) before it reads the data they
//    cover, and a receiver applies data before watermarks.
//  - Nothing here knows MPI; nothing in the schemes or the traffic knows
//    ranks.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "api/packet.h"
#include "emulator/engine/core_launcher.h"
#include "emulator/engine/link.h"
#include "emulator/traffic/traffic.h"

namespace flexplane {

// What the engine shows a Partition: per core its shared words, and every
// link between cores. Pointers stay valid while the engine lives.
struct PartitionView {
  struct DonePost {  // Engine::Core::DonePost, field by field
    std::atomic<uint64_t>* tag;
    uint64_t* busy;
    int64_t* in_transit;
  };
  struct Core {
    std::atomic<Timeslot>* next;
    std::atomic<Timeslot>* finished;
    std::vector<std::atomic<Timeslot>*> promise_to;  // by core
    DonePost done_post[4];
    // Per timeslot (slot t % size), the indices into `links` of the links
    // to another rank the core sent on: complete for timeslots before `next`.
    const std::vector<std::vector<uint32_t>>* cross_sent;
  };
  struct CrossLink {
    uint32_t from_core, to_core;
    Link* link;
  };
  std::vector<Core> cores;
  std::vector<CrossLink> links;
  // Traffic's cross-group state, with the cores of each item's writers and readers.
  struct Item {
    MirroredState* state;
    std::vector<uint32_t> writer_cores;
    std::vector<uint32_t> reader_cores;
  };
  std::vector<Item> items;
  Timeslot window = 0;  // link wheel size (timeslots)
};

class Partition {
 public:
  virtual ~Partition() = default;
  virtual uint32_t rank() const = 0;
  virtual uint32_t ranks() const = 0;
  // Engine cores per rank: rank r runs cores [r * cores_per_rank, (r + 1) * cores_per_rank).
  virtual uint32_t cores_per_rank() const = 0;
  bool runs_core(uint32_t core) const { return core / cores_per_rank() == rank(); }
  // Before a run: the state to keep current. `view` outlives the run.
  virtual void attach(const PartitionView* view) = 0;
  // How this process starts its cores (pinning that leaves room for the
  // other ranks on the machine).
  virtual CoreLauncher& launcher() = 0;
  // Whether this process's cores share CPUs with other engine threads on
  // the machine (they then yield while waiting).
  virtual bool cores_share_cpus() const = 0;
  // One round of moving state, on the thread that started the run, while
  // the cores run: ships what the local cores published, applies what
  // arrived. Returns whether anything moved (the caller backs off if not).
  virtual bool pump() = 0;
  // After the local cores finished: ship the rest and wait until every rank
  // has (their last state applied).
  virtual void finish() = 0;
  // Results: every rank's bytes, in rank order, on rank 0 (others: empty).
  virtual std::vector<std::string> gather(const std::string& mine) = 0;
};

}  // namespace flexplane
