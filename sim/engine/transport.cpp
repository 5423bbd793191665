// The replay's transport and scheduling layer (see transport.hpp).
#include "sim/engine/transport.hpp"

#include "sim/engine/phase_patterns.hpp"

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/kernel/resource/Model.hpp>
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/version.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <sstream>

namespace sg4 = simgrid::s4u;
namespace res = simgrid::kernel::resource;

namespace mksim::sim {

namespace simgrid_abi {

#if SIMGRID_VERSION_MAJOR != 3 || SIMGRID_VERSION_MINOR != 32
#error "transport.cpp calls SimGrid 3.32's NetworkModel::communicate by its place in the class: check NetworkModelCalls against this version's src/kernel/resource/NetworkModel.hpp"
#endif

/** @brief The virtual functions of SimGrid 3.32's NetworkModel (src/kernel/resource/NetworkModel.hpp, not an
 *  installed header) in their order of declaration up to communicate(): Model and NetworkModelIntf, then
 *  create_link, create_wifi_link, communicate. Never instantiated: the engine's network model is called
 *  through it (the same virtual call a comm makes when it starts, CommImpl::start). Not in an anonymous
 *  namespace: there, GCC knows no class derives from it and calls communicate() as the pure function it is. */
class NetworkModelCalls : public res::Model, public res::NetworkModelIntf {
 public:
  virtual void* create_link(const std::string& name, const std::vector<double>& bandwidths) = 0;
  virtual void* create_wifi_link(const std::string& name, const std::vector<double>& bandwidths) = 0;
  /** @brief A transfer of `size` bytes from src to dst (rate < 0: unbounded), started now. */
  virtual res::Action* communicate(sg4::Host* src, sg4::Host* dst, double size, double rate) = 0;
};

/** @brief The network action a comm from src to dst of `size` bytes would run. (UBSan's vptr check would see
 *  NetworkCm02Model where NetworkModelCalls is named: the call itself is the one SimGrid makes.) */
__attribute__((no_sanitize("vptr"))) static res::Action* start_transfer(void* net, sg4::Host* src, sg4::Host* dst, double size) {
  auto* model = static_cast<NetworkModelCalls*>(net);
  res::Action* a = model->communicate(src, dst, size, -1.0);
  if (a == nullptr || a->get_model() != static_cast<res::Model*>(model) || a->get_cost() != size)
    throw std::logic_error("SimGrid's network model did not return the transfer asked for (SimGrid not 3.32?)");
  return a;
}

}  // namespace simgrid_abi

namespace {

constexpr int ANY = ANY_PEER_OR_TAG;

Transport* g_transport = nullptr;  // the one whose transfers the network model's signal reports

volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_sigint(int) { g_interrupted = 1; }
struct sigaction g_previous_sigint = {};

}  // namespace

void install_interrupt_handler() {
  g_interrupted = 0;
  struct sigaction on_int = {};
  on_int.sa_handler = on_sigint;
  sigemptyset(&on_int.sa_mask);
  sigaction(SIGINT, &on_int, &g_previous_sigint);
}

void restore_interrupt_handler() { sigaction(SIGINT, &g_previous_sigint, nullptr); }

Transport::Transport(int P, const MachineParams& m, Naming naming)
    : P_(P), m_(m), naming_(std::move(naming)), ranks_(P), hosts_(P), armed_(INFINITY) {
  active_ = P;
  // Transfer ends come from the network model itself (no comm, no actor waits for them). NetworkAction is not
  // in SimGrid's public headers; it derives from kernel::resource::Action alone, which is all we read.
  static bool connected = false;
  if (!connected) {
    connected = true;
    sg4::Link::on_communication_state_change_cb([](res::NetworkAction& net_action, res::Action::State) {
      auto& action = reinterpret_cast<res::Action&>(net_action);
      if (g_transport && action.get_state() == res::Action::State::FINISHED) g_transport->transfer_finished(&action);
    });
    // A finished action keeps its share of its links until it is freed: free it right after the update that
    // finished it, where a comm's would be (EngineImpl::handle_ended_actions, CommImpl::post), so that the
    // next solve sees the same flows.
    sg4::Engine::on_time_advance_cb([](double) {
      if (g_transport) g_transport->release_ended();
    });
  }
  g_transport = this;
}

Transport::~Transport() {
  if (g_transport == this) g_transport = nullptr;
  release_ended();
  for (auto& [action, send] : transfers_) const_cast<res::Action*>(action)->unref();  // aborted: still running
  transfers_.clear();
}

void Transport::set_actor(int r, const sg4::ActorPtr& actor) {
  ranks_[r].actor = actor;
  hosts_[r] = actor->get_host();
  if (!net_) net_ = hosts_[r]->get_netpoint()->get_englobing_zone()->get_network_model().get();  // as CommImpl::start
}

std::string Transport::fmt(double v) const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

bool Transport::matches(const Request& recv, const Request& send) {
  return recv.ctx == send.ctx && (recv.peer == ANY || recv.peer == send.owner) && (recv.tag == ANY || recv.tag == send.tag);
}

// ---- posts as timestamped events ----

/** @brief Queues the post of `req` at its rank's time; the kernel timer processes it at that time. */
void Transport::schedule_post(const ReqPtr& req) {
  req->post_time = ranks_[req->owner].lt;
  ranks_[req->owner].pending++;
  events_.push(Event{req->post_time, event_seq_++, req});
  arm(req->post_time);
}

/** @brief Makes sure a kernel timer fires at `t` (or earlier). */
void Transport::arm(double t) {
  if (t >= armed_) return;
  armed_ = t;
  simgrid::kernel::timer::Timer::set(t, [this, t] { on_timer(t); });
}

/** @brief Kernel timer (maestro): processes the posts due now, in time and posting order. */
void Transport::on_timer(double t) {
  if (t == armed_) armed_ = INFINITY;
  const double clock = sg4::Engine::get_clock();
  while (!events_.empty() && events_.top().t <= clock) {
    ReqPtr req = events_.top().req;
    events_.pop();
    ranks_[req->owner].pending--;
    if (aborting_) continue;
    try {
      if (req->is_send) match_send(req);
      else match_recv(req);
    } catch (const std::exception& e) {
      abort_run(e.what());
    }
  }
  if (!events_.empty()) arm(events_.top().t);
  progress();
  check_deadlock();
}

/** @brief Matches a send at its post time against the receives its destination has posted. */
void Transport::match_send(const ReqPtr& req) {
  Rank& ds = ranks_[req->peer];
  auto it = std::find_if(ds.posted.begin(), ds.posted.end(), [&](const ReqPtr& q) { return matches(*q, *req); });
  if (it != ds.posted.end()) {
    req->matched_recv = *it;
    ds.posted.erase(it);
    launch(req);
  } else {
    ds.unexpected.push_back(req);
    // Eager: the data leave now and wait at the receiver. Rendezvous: they leave when a receive matches.
    // A rank that has finished its program receives nothing more: the message stays unmatched (reported).
    if (req->eager && !ds.finished) launch(req);
  }
}

/** @brief Matches a receive at its post time against the messages (or rendezvous sends) already there. */
void Transport::match_recv(const ReqPtr& req) {
  Rank& rs = ranks_[req->owner];
  auto it = std::find_if(rs.unexpected.begin(), rs.unexpected.end(), [&](const ReqPtr& q) { return matches(*req, *q); });
  if (it != rs.unexpected.end()) {
    ReqPtr send = *it;
    rs.unexpected.erase(it);
    send->matched_recv = req;
    if (send->started) bind(*send, *req);
    else launch(send);  // rendezvous: the receive starts the transfer
  } else {
    rs.posted.push_back(req);
  }
}

// ---- transfers ----

/** @brief Starts the data transfer of a send now (maestro), then binds the receive matched to it, if any. */
void Transport::launch(const ReqPtr& send) {
  send->match_time = sg4::Engine::get_clock();
  ++inflight_;
  send->started = true;
  if (send->local) {  // to oneself (post_send): delivered at once, no network time
    finish(*send);
    if (send->matched_recv) bind(*send, *send->matched_recv);
    return;
  }
  res::Action* a = simgrid_abi::start_transfer(net_, hosts_[send->owner], hosts_[send->peer], send->wire);
  if (a->get_state() == res::Action::State::FAILED) {
    a->unref();
    throw std::runtime_error(naming_.where(send->owner, send->block) + "transfer to rank " + std::to_string(send->peer) +
                             " failed at once: a link of its route is off");
  }
  transfers_.emplace(a, send);
  if (send->matched_recv) bind(*send, *send->matched_recv);
}

/** @brief Frees the network actions that finished (after the network model's update that reported them). */
void Transport::release_ended() {
  for (res::Action* a : ended_) a->unref();
  ended_.clear();
}

/** @brief Gives a matched receive the transfer of its send. */
void Transport::bind(const Request& send, Request& recv) {
  if (send.size > recv.size && is_user(recv.ctx))
    throw std::runtime_error(naming_.where(recv.owner, recv.block) + "message of " + fmt(send.size) + " bytes from rank " +
                             std::to_string(send.owner) + " (block " + naming_.block_id(send.block) +
                             ") truncated: receive is " + fmt(recv.size) + " bytes");
  recv.match_time = send.match_time;
  recv.matched_peer = send.owner;
  recv.started = true;
  recv.done = send.done;  // an eager message may have arrived before its receive was posted
  if (recv.done) {
    recv.done_time = send.done_time;
    wake(recv.owner);
  }
}

/** @brief A send's data arrived: the send (rendezvous) and its matched receive are complete. */
void Transport::finish(Request& send) {
  send.done = true;
  send.done_time = sg4::Engine::get_clock();
  --inflight_;
  wake(send.owner);
  if (send.matched_recv) {
    send.matched_recv->done = true;
    send.matched_recv->done_time = send.done_time;
    wake(send.matched_recv->owner);
  }
}

void Transport::transfer_finished(res::Action* action) {
  auto it = transfers_.find(action);
  if (it == transfers_.end()) return;  // not ours, or reported already
  ReqPtr send = std::move(it->second);
  transfers_.erase(it);
  ended_.push_back(action);
  finish(*send);
  check_deadlock();  // an eager message nobody receives may have been the last thing running
}

// ---- what a rank's actor calls ----

namespace {
ReqPtr make_request(bool is_send, int owner, int peer, int tag, std::uint32_t ctx, double size, int block) {
  auto req = std::make_shared<Request>();
  req->is_send = is_send;
  req->owner = owner;
  req->peer = peer;
  req->tag = tag;
  req->ctx = ctx;
  req->size = size;
  req->block = block;
  return req;
}
}  // namespace

ReqPtr Transport::post_send(int me, int dst, int tag, std::uint32_t ctx, double size, int block,
                            const platforms::PatternFigures* pattern) {
  check_abort();
  Rank& rs = ranks_[me];
  rs.lt += m_.send_overhead_s;
  if (!is_user(ctx)) pattern = nullptr;  // collectives keep their algorithm's costs
  // Per-regime figures (0 unless the platform sets them), user messages only (collectives keep their
  // algorithm's costs): an eager message's copy c_e*m, a rendezvous message's handshake h, both paid by the
  // sender before the data leave, as the analytic model charges them (sim/model/model.cpp, send_extra).
  // Per-pattern figures replace them.
  if (is_user(ctx) && !pattern) {
    if (size <= m_.eager_threshold_bytes) rs.lt += m_.eager_per_byte_s * size;
    else rs.lt += m_.rendezvous_handshake_s;
  }
  ReqPtr req = make_request(true, me, dst, tag, ctx, size, block);
  req->eager = size <= m_.eager_threshold_bytes;
  // A message charged a per-pattern figure: the figure, measured in the pattern, holds the interference of its
  // messages, so the transfer carries no bytes (only the route's latency, under the figure) and the simulated
  // network does not add its own contention to it.
  // A message to oneself is a copy in memory: it crosses no link (the platforms define no loopback route) and
  // needs no SimGrid transfer; launch() completes it at once.
  req->local = dst == me;
  req->wire = pattern ? 0.0 : static_cast<double>(static_cast<std::uint64_t>(size));  // whole bytes, as a comm's payload
  ++messages_;
  schedule_post(req);  // the transfer starts at the rank's own time
  // The pattern's cost beyond s (paid above) and the receiver's r + o, paid by the sender after the message
  // left: a rank's messages of the phase cost the sum of their rho + beta*D (seed 001 s.4: number of transfers
  // times rho plus beta times the data), as the model's exchange charges them.
  if (pattern) rs.lt += pattern_extra_s(*pattern, size, m_.send_overhead_s, m_.recv_overhead_s, m_.per_message_overhead_s);
  return req;
}

ReqPtr Transport::post_recv(int me, int src, int tag, std::uint32_t ctx, double size, int block) {
  check_abort();
  ReqPtr req = make_request(false, me, src, tag, ctx, size, block);
  schedule_post(req);  // senders see this receive at the rank's own time
  return req;
}

/** @brief Blocks the rank until woken: its actor suspends itself (one simcall, no activity), wake() resumes
 *  it. Its clock catches up with the engine's. `q` (or the measured collective `in_measured`) is what it waits for, for deadlock
 *  reports. */
void Transport::block(int me, const Request* q, const char* in_measured) {
  Rank& rs = ranks_[me];
  rs.blocked = true;
  rs.waiting_for = q;
  rs.in_measured = in_measured;
  --active_;
  check_deadlock();
  check_abort();  // a deadlock found just now aborts this rank too
  sg4::this_actor::suspend();
  if (rs.blocked) {  // resumed by something other than wake(): count ourselves back
    rs.blocked = false;
    ++active_;
  }
  rs.lt = std::max(rs.lt, sg4::Engine::get_clock());
  check_abort();
}

void Transport::wait(int me, const ReqPtr& req) {
  Rank& rs = ranks_[me];
  while (!(req->done || (req->is_send && req->eager))) {  // an eager send is complete once posted
    check_abort();
    block(me, req.get(), nullptr);
  }
  rs.waiting_for = nullptr;
  if (req->done) rs.lt = std::max(rs.lt, req->done_time);
  if (!req->is_send) rs.lt += m_.recv_overhead_s + m_.per_message_overhead_s;
}

void Transport::gather(int me, const GatheringKey& key, int n, const char* kind) {
  Rank& rs = ranks_[me];
  check_abort();
  Gathering& gth = gatherings_[key];  // arrive at the rank's own time
  gth.arrived++;
  gth.last = std::max(gth.last, rs.lt);
  if (gth.arrived == n) {
    gth.complete = true;
    for (int w : gth.waiting) wake(w);
    gth.waiting.clear();
  } else {
    gth.waiting.push_back(me);
    while (!gth.complete) {
      block(me, nullptr, kind);
    }
    rs.in_measured = nullptr;
  }
  rs.lt = std::max(rs.lt, gth.last);  // everyone leaves when the last one arrived
  if (++gth.left == n) gatherings_.erase(key);
}

void Transport::finish_rank(int r) {
  Rank& rs = ranks_[r];
  rs.finished = true;
  --active_;
  check_deadlock();
  rs.completed = true;
}

// ---- waking, deadlocks, aborts ----

void Transport::wake(int r) {
  Rank& rs = ranks_[r];
  if (rs.blocked) {
    rs.blocked = false;
    ++active_;
    rs.actor->resume();  // in maestro: puts the actor back on the run list
  }
}

/** @brief No rank can make progress when every unfinished rank waits for a partner. */
void Transport::check_deadlock() {
  if (active_ > 0 || inflight_ > 0 || aborting_ || !events_.empty()) return;
  std::vector<int> blocked;
  for (int r = 0; r < P_; ++r)
    if (!ranks_[r].finished && ranks_[r].blocked) blocked.push_back(r);
  if (blocked.empty()) return;
  std::ostringstream msg;
  msg << "deadlock at P=" << P_ << ", simulated time " << fmt(sg4::Engine::get_clock()) << " s: " << blocked.size()
      << " rank(s) blocked";
  int shown = 0;
  for (int r : blocked) {
    if (shown++ == 16) {
      msg << "\n  ... and " << blocked.size() - 16 << " more";
      break;
    }
    const Request* q = ranks_[r].waiting_for;
    msg << "\n  rank " << r << ": ";
    if (!q && ranks_[r].in_measured) {
      msg << "in a measured " << ranks_[r].in_measured << " waiting for the other ranks";
      continue;
    }
    if (!q) {
      msg << "waiting";
      continue;
    }
    msg << (q->is_send ? "send to " : "recv from ") << (q->peer == ANY ? std::string("any source") : std::to_string(q->peer))
        << ", tag " << (q->tag == ANY ? std::string("any") : std::to_string(q->tag)) << ", " << fmt(q->size) << " bytes"
        << (is_user(q->ctx) ? "" : " (inside a collective)") << ", block " << naming_.block_id(q->block);
  }
  deadlocked_ = true;
  abort_run(msg.str());
}

void Transport::abort_run(const std::string& why) {
  if (error_.empty()) error_ = why;
  if (aborting_) return;
  aborting_ = true;
  for (int r = 0; r < P_; ++r) wake(r);
}

std::string Transport::unmatched_messages() const {
  std::ostringstream msg;
  std::size_t count = 0;
  for (int r = 0; r < P_; ++r) {
    for (const ReqPtr& q : ranks_[r].unexpected) {
      if (count++ < 16)
        msg << "\n  rank " << q->owner << " -> rank " << r << ": tag " << q->tag << ", " << fmt(q->size) << " bytes, block "
            << naming_.block_id(q->block) << (q->eager ? "" : " (rendezvous: the sender is still blocked)");
    }
  }
  if (count == 0) return "";
  return std::to_string(count) + " message(s) sent but never received:" + msg.str() + (count > 16 ? "\n  ..." : "");
}

std::string Transport::incomplete_ranks() const {
  std::string out;
  int shown = 0;
  for (int r = 0; r < P_; ++r)
    if (!ranks_[r].completed && shown++ < 16) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

// ---- progress ----

void Transport::enable_progress(double expected) {
  progress_ = true;
  expected_messages_ = expected;
  progress_start_ = progress_last_ = std::chrono::steady_clock::now();
}

void Transport::end_progress() {
  if (progress_shown_) std::fprintf(stderr, "\n");
  progress_shown_ = false;
}

/** @brief On a terminal, every second or so: simulated time, messages, messages per second (maestro). Also
 *  where Ctrl-C is noticed: the run stops as if it failed, so no result is written. */
void Transport::progress() {
  if (++progress_calls_ % 1024 != 0) return;
  if (g_interrupted) {
    abort_run("interrupted (Ctrl-C): no result written");
    return;
  }
  if (!progress_) return;
  const auto t = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(t - progress_last_).count() < 1.0) return;
  progress_last_ = t;
  const double wall = std::chrono::duration<double>(t - progress_start_).count();
  const double sent = static_cast<double>(messages_);
  std::fprintf(stderr, "\rmksim: simulated %.6g s, %llu messages", sg4::Engine::get_clock(),
               static_cast<unsigned long long>(messages_));
  if (expected_messages_ > 0) std::fprintf(stderr, " of ~%.3g (%.0f%%)", expected_messages_, 100.0 * sent / expected_messages_);
  std::fprintf(stderr, ", %.0f messages/s, %.0f s", sent / wall, wall);
  if (expected_messages_ > sent && sent > 0) std::fprintf(stderr, ", ~%.0f s left", wall * (expected_messages_ - sent) / sent);
  std::fprintf(stderr, "   ");
  std::fflush(stderr);
  progress_shown_ = true;
}

}  // namespace mksim::sim
