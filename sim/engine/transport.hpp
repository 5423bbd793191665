// The replay's transport and scheduling layer: MPI point-to-point semantics (matching, eager and rendezvous,
// overheads) on SimGrid transfers, each rank's clock, blocking and waking, deadlock detection, progress.
// The interpreter (replay.cpp) walks the skeleton and calls this layer; it does not touch SimGrid's comms.
// For this folder only (includes SimGrid).
#pragma once

#include "sim/engine/platform.hpp"

#include <simgrid/s4u.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace mksim::sim {

/** @brief Peer or tag of a receive that accepts any. */
constexpr int ANY_PEER_OR_TAG = -1;

/** @brief User messages (even contexts), as opposed to the internal messages of collectives (odd ones). */
inline bool is_user(std::uint32_t ctx) { return (ctx & 1u) == 0; }

/** @brief A measured collective's rendezvous: (communicator, its instance's first member, sequence number on it). */
using GatheringKey = std::tuple<int, int, int>;

/** @brief One MPI request (a send or a receive). Eager sends are complete once posted. */
struct Request {
  bool is_send = false;
  bool eager = false;
  bool started = false;  // the transfer exists or, for eager sends, the data left
  bool done = false;     // the transfer finished (and, for a receive, it is matched)
  std::uint32_t ctx = 0; // matching context: 2 * communicator for user messages, + 1 for collectives' internal ones
  int owner = 0;
  int peer = 0;          // destination of a send; source (or ANY_PEER_OR_TAG) of a receive
  int tag = 0;           // or ANY_PEER_OR_TAG for receives
  int block = -1;        // skeleton block that posted it
  double size = 0;       // bytes
  double match_time = 0; // when the partner arrived (the transfer started)
  int matched_peer = -1; // for receives: the sender of the message matched (diagnosis: who was waited for)
  double post_time = 0;  // the owner's time when it posted the request
  double done_time = 0;  // when the transfer finished (done)
  bool local = false;    // for sends: to oneself (a copy in memory, no SimGrid transfer)
  double wire = 0;       // for sends: the bytes the network carries (0 for a message charged a per-pattern figure)
  std::shared_ptr<Request> matched_recv; // for sends: the receive that matched it
};
using ReqPtr = std::shared_ptr<Request>;

/** @brief Thrown inside rank actors to unwind them when the run is aborted (deadlock, error, Ctrl-C). */
struct Aborted {};

/** @brief How the interpreter names things in messages: a block's id, and "file: block: rank r: ". */
struct Naming {
  std::function<std::string(int block)> block_id;
  std::function<std::string(int rank, int block)> where;
};

/**
 * @brief Point-to-point transport for P ranks, one SimGrid actor each (they run one at a time: no locking).
 *
 * A rank never sleeps: compute and overheads advance its own clock (now(r)), which runs ahead of the
 * engine's. A send or receive it posts becomes an event at the rank's time; the events are processed in
 * (time, posting order) by a SimGrid kernel timer, in maestro, where the matching is done and transfers are
 * started, waking nobody. A transfer is a bare action of SimGrid's network model (the one a comm between the
 * two hosts would create: same route, latency, bounds and max-min variable, so the same contention), created
 * in maestro without an s4u comm, a mailbox or a simcall; its end is reported by the network model's
 * state-change signal (transfer_finished), and the transport releases the action afterwards. No actor owns a
 * transfer, so a rank is scheduled only when it must block (a wait whose request is not complete, a measured
 * collective). (SimGrid's host-to-host comms are detached, and in SimGrid 3.32 the end of each detached comm
 * scans a list of all of them: quadratic at scale; mailbox comms cost two activities and their simcalls.)
 */
class Transport {
 public:
  /** @brief `m`: the MPI costs the transport charges (overheads, eager threshold, per-regime figures). */
  Transport(int P, const MachineParams& m, Naming naming);
  /** @brief Releases the network actions still held (an aborted run); call it while the engine exists. */
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // ---- set-up (before the simulation runs) ----
  /** @brief The actor of rank r: its host is where the transfers to and from r start and end. */
  void set_actor(int r, const simgrid::s4u::ActorPtr& actor);
  /** @brief Shows progress on stderr (a terminal) with `expected` messages in all (0: unknown). */
  void enable_progress(double expected);
  /** @brief Ends the progress line, if one was shown. */
  void end_progress();

  // ---- what a rank's actor calls ----
  /** @brief The rank's own time (never behind the engine's clock while the rank runs). */
  double now(int r) const { return ranks_[r].lt; }
  /** @brief Local work (compute, overheads): the rank's clock moves ahead; nothing is slept. */
  void advance(int r, double seconds) { ranks_[r].lt += seconds; }
  /** @brief Moves the rank's clock to `t` if it is behind. */
  void advance_to(int r, double t) { ranks_[r].lt = std::max(ranks_[r].lt, t); }
  /** @brief Posts a send (the sender pays its overheads first); the transfer starts at the rank's time. With a
   *  per-pattern figure (user messages only), the message costs the pattern's rho + beta*D in all. */
  ReqPtr post_send(int me, int dst, int tag, std::uint32_t ctx, double size, int block,
                   const platforms::PatternFigures* pattern = nullptr);
  /** @brief Posts a receive at the rank's time. */
  ReqPtr post_recv(int me, int src, int tag, std::uint32_t ctx, double size, int block);
  /** @brief Blocks the rank until the request completes (an eager send at once); a receive then pays r + o. */
  void wait(int me, const ReqPtr& req);
  /** @brief A measured collective's rendezvous `key` among `n` ranks: returns when all have arrived, the rank's
   *  clock at the latest arrival. `kind` names it in deadlock reports. */
  void gather(int me, const GatheringKey& key, int n, const char* kind);
  /** @brief The rank's program ended (its posts are processed and its transfers end without its actor). */
  void finish_rank(int r);
  /** @brief Throws Aborted when the run is being aborted. */
  void check_abort() const {
    if (aborting_) throw Aborted{};
  }
  /** @brief Stops the run with this error (the first one given is kept); every rank unwinds. */
  void abort_run(const std::string& why);

  // ---- from SimGrid (maestro) ----
  /** @brief A network action finished. */
  void transfer_finished(simgrid::kernel::resource::Action* action);
  /** @brief Frees the actions that finished in the network model's last update (maestro, after it). */
  void release_ended();

  // ---- after the simulation ----
  const std::string& error() const { return error_; }
  bool deadlocked() const { return deadlocked_; }
  /** @brief Messages sent but never received by the end of the run ("" when none): MPI would leak them. */
  std::string unmatched_messages() const;
  /** @brief Ranks whose actor did not reach its end (SimGrid killed it), as "0, 5, ..."; "" when none. */
  std::string incomplete_ranks() const;

 private:
  /** @brief A post waiting for its time (the owner's clock when it posted). */
  struct Event {
    double t;
    std::uint64_t seq;
    ReqPtr req;
    bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  struct Rank {
    double lt = 0;                      // the rank's own time
    simgrid::s4u::ActorPtr actor;       // suspends itself to block, resumed by wake()
    std::vector<ReqPtr> posted;         // receives waiting for a message
    std::vector<ReqPtr> unexpected;     // messages (eager) or rendezvous sends waiting for a receive
    long pending = 0;                   // its posts not yet processed (their time not reached)
    bool blocked = false;               // suspended, waiting for a partner
    const Request* waiting_for = nullptr;
    const char* in_measured = nullptr;  // waiting for the others in this measured collective
    bool finished = false;              // its program ended
    bool completed = false;             // the actor reached its end (not killed by SimGrid)
  };
  /** @brief One measured collective under way: who has arrived, who waits, who has left. */
  struct Gathering {
    int arrived = 0, left = 0;
    bool complete = false;
    double last = 0;  // the latest arrival time
    std::vector<int> waiting;
  };

  static bool matches(const Request& recv, const Request& send);
  void schedule_post(const ReqPtr& req);
  void arm(double t);
  void on_timer(double t);
  void match_send(const ReqPtr& req);
  void match_recv(const ReqPtr& req);
  void launch(const ReqPtr& send);
  void bind(const Request& send, Request& recv);
  void finish(Request& send);
  void block(int me, const Request* q, const char* in_measured);
  void wake(int r);
  void check_deadlock();
  void progress();
  std::string fmt(double v) const;

  int P_;
  MachineParams m_;
  Naming naming_;
  std::vector<Rank> ranks_;
  std::vector<simgrid::s4u::Host*> hosts_;  // rank -> its host
  void* net_ = nullptr;                     // the network model (transport.cpp: NetworkModelCalls)
  int active_ = 0;     // ranks neither finished nor blocked (suspended)
  long inflight_ = 0;  // transfers started and not finished
  std::unordered_map<const simgrid::kernel::resource::Action*, ReqPtr> transfers_;  // running network action -> its send
  std::vector<simgrid::kernel::resource::Action*> ended_;  // finished actions, freed once the update is over
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;  // posts waiting for their time
  std::uint64_t event_seq_ = 0;
  double armed_;                      // earliest time a kernel timer is set for
  std::map<GatheringKey, Gathering> gatherings_;
  bool aborting_ = false;
  bool deadlocked_ = false;
  std::string error_;
  // Progress
  std::uint64_t messages_ = 0;        // sends posted so far
  std::uint64_t progress_calls_ = 0;
  bool progress_ = false, progress_shown_ = false;
  double expected_messages_ = 0;
  std::chrono::steady_clock::time_point progress_start_, progress_last_;
};

/** @brief Ctrl-C while a replay runs: the run stops as if it failed (no result is written). */
void install_interrupt_handler();
void restore_interrupt_handler();

}  // namespace mksim::sim
