// Synthetic rank traces written call by call, shared by the skeleton builder's tests (fold_test, builder_test,
// cpg_test, skelbuild_branch_test): each call takes `call_s` seconds after `gap` seconds of compute (the
// writer's default gap unless given); requests, their completions and annotations as the tracer records them.
#pragma once

#include "skeletons/trace/trace.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace test_trace {

using mksim::trace::Event;
using mksim::trace::Kind;

struct TraceWriter {
  mksim::trace::RankTrace t;
  double now = 0;
  double call_s;       ///< time inside every call
  double default_gap;  ///< compute before a call when `call` is given no gap
  std::uint32_t next_request = 1;
  struct Pending {
    int peer, tag;
    long bytes;
    bool recv;
  };
  std::map<std::uint32_t, Pending> pending;

  explicit TraceWriter(double call_seconds = 1e-6, double gap_seconds = 1e-3)
      : call_s(call_seconds), default_gap(gap_seconds) {
    t.status = mksim::trace::Status::FINALIZED;
  }

  /** One call after `gap` seconds of compute (negative: the default gap). */
  Event& call(Kind k, std::uint64_t site, int peer = -1, int tag = -1, long bytes = 0, double gap = -1) {
    now += gap < 0 ? default_gap : gap;
    Event e;
    e.kind = k;
    e.t_enter = now;
    now += call_s;
    e.t_exit = now;
    e.site = site;
    e.peer = peer;
    e.tag = tag;
    e.bytes = bytes;
    t.events.push_back(e);
    return t.events.back();
  }

  /** Compute time before the next call (on top of its gap). */
  void compute(double s) { now += s; }

  /** A request's completion record (after its wait). */
  void complete(std::uint32_t request, int peer, int tag, long bytes, bool recv) {
    Event e;
    e.kind = Kind::COMPLETE;
    e.t_enter = e.t_exit = now;
    e.peer = peer;
    e.tag = tag;
    e.bytes = bytes;
    e.root = recv ? 1 : 0;
    e.request = request;
    t.events.push_back(e);
  }

  std::uint32_t isend(int peer, int tag, long bytes, std::uint64_t site) {
    const std::uint32_t r = next_request++;
    call(Kind::ISEND, site, peer, tag, bytes).request = r;
    pending[r] = {peer, tag, bytes, false};
    return r;
  }
  std::uint32_t irecv(int peer, int tag, long bytes, std::uint64_t site) {
    const std::uint32_t r = next_request++;
    call(Kind::IRECV, site, peer, tag, bytes).request = r;
    pending[r] = {peer, tag, bytes, true};
    return r;
  }
  /** MPI_Waitall of `requests`, with their completion records. */
  void waitall(const std::vector<std::uint32_t>& requests, std::uint64_t site) {
    call(Kind::WAITALL, site).root = static_cast<std::int32_t>(requests.size());
    for (std::uint32_t r : requests) {
      const Pending p = pending.at(r);
      pending.erase(r);
      complete(r, p.peer, p.tag, p.bytes, p.recv);
    }
  }

  /** An annotation: its name's id in this rank's table (ids are per rank, in order of first use). */
  void mark(Kind k, std::uint64_t site, const std::string& name, double gap = 1e-6) {
    std::int32_t id = -1;
    for (std::size_t i = 0; i < t.names.size(); ++i)
      if (t.names[i] == name) id = static_cast<std::int32_t>(i);
    if (id < 0) {
      id = static_cast<std::int32_t>(t.names.size());
      t.names.push_back(name);
    }
    call(k, site, mksim::trace::NO_RANK, id, 0, gap);
  }
};

}  // namespace test_trace
