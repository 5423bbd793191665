// Loop folding of one rank's events (skeletons/builder/fold.hpp), on event streams written here.
#include "skeletons/builder/fold.hpp"
#include "trace_writer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

namespace {

using mksim::skeletons::builder::Call;
using mksim::skeletons::builder::Compute;
using mksim::skeletons::builder::fold_rank;
using mksim::skeletons::builder::Loop;
using mksim::skeletons::builder::Node;
using mksim::skeletons::builder::Seq;
using mksim::trace::Event;
using mksim::trace::Kind;

// A rank trace written call by call; each call takes 1 us and is preceded by `gap` seconds of compute (1 ms).
struct Writer : test_trace::TraceWriter {
  Writer() : TraceWriter(1e-6, 1e-3) {}
};

const Loop& loop_at(const Seq& s, std::size_t i) { return std::get<Loop>(s.at(i).op); }
const Call& call_at(const Seq& s, std::size_t i) { return std::get<Call>(s.at(i).op); }

TEST(FoldTest, RepeatedExchangeBecomesOneLoopWithComputeStatistics) {
  Writer w;
  w.call(Kind::INIT, 1, -1, -1, 0, 0);
  for (int i = 0; i < 100; ++i) {
    w.call(Kind::SEND, 2, 1, 5, 64, 1e-3 * (1 + i % 2));  // gaps alternate 1 ms and 2 ms
    w.call(Kind::RECV, 3, 1, 5, 64);
  }
  w.call(Kind::FINALIZE, 4);
  const auto p = fold_rank(w.t);
  ASSERT_EQ(p.seq.size(), 4u) << mksim::skeletons::builder::to_text(p.seq);  // init, loop, gap, finalize
  EXPECT_EQ(call_at(p.seq, 0).kind, Kind::INIT);
  const Loop& l = loop_at(p.seq, 1);
  EXPECT_EQ(l.count, 100u);
  ASSERT_EQ(l.body.size(), 4u);  // compute, send, compute, recv
  const auto& gap = std::get<Compute>(l.body[0].op).seconds;
  EXPECT_EQ(gap.n, 100u);
  EXPECT_NEAR(gap.mean(), 1.5e-3, 1e-9);
  EXPECT_NEAR(gap.min, 1e-3, 1e-12);
  EXPECT_NEAR(gap.max, 2e-3, 1e-12);
  EXPECT_EQ(call_at(l.body, 1).peer, 1);
  EXPECT_EQ(call_at(l.body, 1).bytes, 64);
  EXPECT_EQ(mksim::skeletons::builder::expanded_calls(p.seq), 202u);
  EXPECT_EQ(p.events, 202u);
}

TEST(FoldTest, NestedLoopsAndSizeIndependentOfIterations) {
  auto make = [](int outer, int inner) {
    Writer w;
    w.call(Kind::INIT, 1, -1, -1, 0, 0);
    for (int i = 0; i < outer; ++i) {
      for (int j = 0; j < inner; ++j) w.call(Kind::SEND, 2, 1, 0, 8);
      w.call(Kind::ALLREDUCE, 3, -1, -1, 8);
    }
    w.call(Kind::FINALIZE, 4);
    return fold_rank(w.t);
  };
  const auto small = make(3, 4), large = make(300, 4);
  EXPECT_EQ(mksim::skeletons::builder::folded_size(small.seq), mksim::skeletons::builder::folded_size(large.seq));
  const Loop& outer = loop_at(large.seq, 1);
  EXPECT_EQ(outer.count, 300u);
  const Loop& inner = loop_at(outer.body, 0);
  EXPECT_EQ(inner.count, 4u);
  EXPECT_EQ(mksim::skeletons::builder::expanded_calls(large.seq), 2u + 300u * 5u);
  // same structure whatever the counts: the builder groups ranks by this
  EXPECT_EQ(mksim::skeletons::builder::shape_hash(small.seq), mksim::skeletons::builder::shape_hash(large.seq));
}

TEST(FoldTest, DifferentPeersOrSizesAreNotFolded) {
  Writer w;
  w.call(Kind::SEND, 2, 1, 0, 8);
  w.call(Kind::SEND, 2, 2, 0, 8);   // another peer
  w.call(Kind::SEND, 2, 2, 0, 16);  // another size
  w.call(Kind::SEND, 2, 2, 1, 16);  // another tag
  w.call(Kind::SEND, 9, 2, 1, 16);  // another call site
  const auto p = fold_rank(w.t);
  for (const Node& n : p.seq) EXPECT_FALSE(std::holds_alternative<Loop>(n.op)) << mksim::skeletons::builder::to_text(p.seq);
  EXPECT_EQ(p.seq.size(), 9u);  // 5 calls, 4 gaps
}

TEST(FoldTest, WaitsKnowTheirRequestsAndWildcardsAreKept) {
  Writer w;
  w.call(Kind::INIT, 1, -1, -1, 0, 0);
  for (int i = 0; i < 3; ++i) {
    const std::uint32_t id = w.next_request++;
    w.call(Kind::IRECV, 10, mksim::trace::ANY, 7, 32).request = id;  // (the reference dies at the next call)
    w.call(Kind::WAIT, 11);
    w.complete(id, 2 + i, 7, 32, true);  // a different actual source every time
    Event& b = w.call(Kind::RECV, 12, 3, 7, 32);
    b.flags = MKTRACE_POSTED_ANY_SOURCE;  // posted as any, matched 3
  }
  const auto p = fold_rank(w.t);
  ASSERT_EQ(p.seq.size(), 2u) << mksim::skeletons::builder::to_text(p.seq);
  const Loop& l = loop_at(p.seq, 1);
  EXPECT_EQ(l.count, 3u);  // folded although the actual sources differ: they were posted as wildcards
  EXPECT_EQ(call_at(l.body, 1).peer, mksim::trace::ANY);
  EXPECT_EQ(call_at(l.body, 3).waits_on, 10u);
  EXPECT_EQ(call_at(l.body, 5).peer, mksim::trace::ANY);
}

TEST(FoldTest, AnnotatedLoopIterationsFoldDespiteTheirIndex) {
  Writer w;
  w.call(Kind::LOOP_BEGIN, 20, -1, 0);
  for (int i = 0; i < 5; ++i) {
    w.call(Kind::LOOP_ITER, 21, -1, 0, i);  // bytes = the iteration index
    w.call(Kind::BARRIER, 22);
  }
  w.call(Kind::LOOP_END, 23, -1, 0, 5);
  const auto p = fold_rank(w.t);
  ASSERT_EQ(p.seq.size(), 4u) << mksim::skeletons::builder::to_text(p.seq);
  EXPECT_EQ(loop_at(p.seq, 1).count, 5u) << mksim::skeletons::builder::to_text(p.seq);
}

TEST(FoldTest, RegionsStayWholeWhenTheFirstIterationDiffers) {
  // begin, a call whose size differs in the first iteration only, end: folding the tail greedily would make
  // the rotated body (end, begin, call) and cut the region; the body must open and close it
  Writer w;
  w.call(Kind::INIT, 1, -1, -1, 0, 0);
  for (int i = 0; i < 6; ++i) {
    w.call(Kind::REGION_BEGIN, 30, -1, 0);
    w.call(Kind::SEND, 31, 1, 0, i == 0 ? 16 : 8);
    w.call(Kind::REGION_END, 32, -1, 0);
  }
  w.call(Kind::FINALIZE, 4);
  const auto p = fold_rank(w.t);
  const std::string text = mksim::skeletons::builder::to_text(p.seq);
  const Loop* loop = nullptr;
  for (const Node& n : p.seq)
    if (const auto* l = std::get_if<Loop>(&n.op)) loop = l;
  ASSERT_NE(loop, nullptr) << text;
  EXPECT_EQ(loop->count, 5u) << text;
  std::vector<Kind> calls;
  for (const Node& n : loop->body)
    if (const auto* c = std::get_if<Call>(&n.op)) calls.push_back(c->kind);
  EXPECT_EQ(calls, (std::vector<Kind>{Kind::REGION_BEGIN, Kind::SEND, Kind::REGION_END})) << text;
}

TEST(FoldTest, ComputeKeepsTheFirstDurationApartAndABoundedSketchOfTheRest) {
  auto make = [](int iterations) {
    Writer w;
    w.call(Kind::INIT, 1, -1, -1, 0, 0);
    for (int i = 0; i < iterations; ++i)  // 5 ms the first time (a warm-up), then 1, 2, ..., 10 ms in turn
      w.call(Kind::BARRIER, 2, -1, -1, 0, i == 0 ? 5e-3 : 1e-3 * (1 + (i - 1) % 10));
    return fold_rank(w.t);
  };
  for (int iterations : {11, 10001}) {
    const auto p = make(iterations);
    ASSERT_EQ(p.seq.size(), 2u) << mksim::skeletons::builder::to_text(p.seq);
    const auto& gap = std::get<Compute>(loop_at(p.seq, 1).body[0].op);
    EXPECT_EQ(gap.seconds.n, static_cast<std::uint64_t>(iterations));
    EXPECT_NEAR(gap.first, 5e-3, 1e-12);
    EXPECT_EQ(gap.rest.n, static_cast<std::uint64_t>(iterations - 1));
    EXPECT_NEAR(gap.rest.min, 1e-3, 1e-12);
    EXPECT_NEAR(gap.rest.max, 10e-3, 1e-12);
    EXPECT_EQ(gap.rest_sketch.count(), static_cast<std::uint64_t>(iterations - 1));
    std::vector<std::pair<double, double>> w;
    for (const auto& [v, n] : gap.rest_sketch.weighted()) w.emplace_back(v, static_cast<double>(n));
    // exact for 10 values (the order statistics), within a step of the uniform 1..10 ms for 10,000
    const double tolerance = iterations == 11 ? 1e-12 : 1.01e-3;
    EXPECT_NEAR(mksim::skeletons::builder::weighted_quantile(w, 0), 1e-3, tolerance);
    EXPECT_NEAR(mksim::skeletons::builder::weighted_quantile(w, 0.5), 5.5e-3, tolerance);
    EXPECT_NEAR(mksim::skeletons::builder::weighted_quantile(w, 1), 10e-3, tolerance);
    EXPECT_LE(w.size(), 64u * 16u);  // a few levels of at most 64 values, not 10,000
  }
}

TEST(FoldTest, QuantileSketchIsDeterministicAndMergesExactly) {
  mksim::skeletons::builder::QuantileSketch a, b, c;
  for (int i = 0; i < 1000; ++i) {
    a.add(i);
    (i < 400 ? b : c).add(i);
  }
  b.merge(c);
  EXPECT_EQ(b.count(), 1000u);
  mksim::skeletons::builder::QuantileSketch again;
  for (int i = 0; i < 1000; ++i) again.add(i);
  EXPECT_EQ(a.weighted(), again.weighted());  // the same input gives the same summary
  for (const auto* s : {&a, &b}) {
    std::vector<std::pair<double, double>> w;
    for (const auto& [v, n] : s->weighted()) w.emplace_back(v, static_cast<double>(n));
    for (double p : {0.1, 0.25, 0.5, 0.75, 0.9}) EXPECT_NEAR(mksim::skeletons::builder::weighted_quantile(w, p), p * 999, 30) << p;
  }
}

}  // namespace

// A trace with CPU times of its gaps (format v3, MKTRACE_CPU_TIME=1): compute is the CPU time, not the wall-clock
// gap, which on an oversubscribed node includes the time the rank waited for a core.
TEST(FoldTest, ComputeIsTheGapsCpuTimeWhenTheTracerMeasuredIt) {
  Writer w;
  w.call(Kind::INIT, 1, -1, -1, 0, 0).cpu_gap = 0;
  for (int i = 0; i < 10; ++i) w.call(Kind::BARRIER, 2, -1, -1, 0, 8e-3).cpu_gap = 1e-3 * (1 + i % 2);  // 8 ms wall
  w.call(Kind::FINALIZE, 4, -1, -1, 0, 3e-3);  // not measured (-1): its wall-clock gap
  const auto p = fold_rank(w.t);
  ASSERT_EQ(p.seq.size(), 4u) << mksim::skeletons::builder::to_text(p.seq);
  const auto& gap = std::get<Compute>(loop_at(p.seq, 1).body[0].op).seconds;
  EXPECT_EQ(gap.n, 10u);
  EXPECT_NEAR(gap.mean(), 1.5e-3, 1e-12);
  EXPECT_NEAR(gap.max, 2e-3, 1e-12);
  EXPECT_NEAR(std::get<Compute>(p.seq.at(2).op).seconds.mean(), 3e-3, 1e-12);
}

namespace {

// issue 17: a particle exchange whose sizes change every step (16 bytes per particle that crosses a face)
mksim::skeletons::builder::RankProgram fold_particles(int steps, bool vary) {
  Writer w;
  w.call(Kind::INIT, 1, -1, -1, 0, 0);
  for (int i = 0; i < steps; ++i) {
    w.call(Kind::SEND, 2, 1, 3, 16 * (10 + (i * 7919) % 13));  // 10..22 particles
    w.call(Kind::RECV, 3, 1, 3, 16 * (10 + (i * 104729) % 13));
    w.call(Kind::ALLREDUCE, 4, -1, -1, 8);
  }
  w.call(Kind::FINALIZE, 5);
  mksim::skeletons::builder::FoldOptions o;
  o.vary_sizes = vary;
  return fold_rank(w.t, o);
}

TEST(FoldTest, IterationsThatDifferInSizesFoldWithSizesAsStatistics) {
  using mksim::skeletons::builder::folded_size;
  const auto exact = fold_particles(100, false), vary = fold_particles(100, true), longer = fold_particles(1000, true);
  EXPECT_GT(folded_size(exact.seq), 100u);  // sizes as identity: hardly any two steps are equal
  // sizes as statistics: one loop of 100 steps, and no bigger for 1000 steps
  ASSERT_EQ(vary.seq.size(), 4u) << mksim::skeletons::builder::to_text(vary.seq);
  EXPECT_EQ(loop_at(vary.seq, 1).count, 100u);
  EXPECT_EQ(folded_size(longer.seq), folded_size(vary.seq));
  EXPECT_EQ(loop_at(longer.seq, 1).count, 1000u);
  const Call& send = call_at(loop_at(vary.seq, 1).body, 1);
  ASSERT_EQ(send.kind, Kind::SEND);
  EXPECT_EQ(send.sizes.n, 100u);
  double sum = 0;
  for (int i = 0; i < 100; ++i) sum += 16 * (10 + (i * 7919) % 13);
  EXPECT_EQ(send.bytes, std::llround(sum / 100));  // the mean size, whole bytes
  EXPECT_EQ(send.sizes.min, 160);
  EXPECT_EQ(send.sizes.max, 16 * 22);
  EXPECT_EQ(mksim::skeletons::builder::expanded_calls(vary.seq), mksim::skeletons::builder::expanded_calls(exact.seq));
}

// SUMMA's panel loop: the broadcast root moves to the next rank every `len` panels, so exact folding makes one
// loop per owner; index_loops makes them one loop over every panel, each root kept per iteration, a step
// function of the index (step_form). Loops whose numbers follow no step function stay apart.
TEST(FoldTest, ConsecutiveLoopsWhoseRootStepsWithTheIterationBecomeOneIndexedLoop) {
  auto make = [](int panels, int len, bool irregular) {
    Writer w;
    w.call(Kind::INIT, 1, -1, -1, 0, 0);
    for (int rep = 0; rep < 2; ++rep)
      for (int k = 0; k < panels; ++k) {
        const int owner = irregular ? (k / len) * (k / len) : k / len;  // 0, 1, 4, 9: not a step function
        w.call(Kind::BCAST, 2, -1, -1, 64).root = owner;
        w.call(Kind::BCAST, 3, -1, -1, 32).root = 2 * (k / (2 * len)) + 1;  // steps of 2 every 2 len
      }
    w.call(Kind::FINALIZE, 4);
    return fold_rank(w.t);
  };
  const auto p = make(16, 4, false);
  const std::string text = mksim::skeletons::builder::to_text(p.seq);
  const Loop& reps = loop_at(p.seq, 1);
  EXPECT_EQ(reps.count, 2u) << text;
  ASSERT_EQ(reps.body.size(), 1u) << text;
  const Loop& panels = loop_at(reps.body, 0);
  EXPECT_TRUE(panels.indexed);
  EXPECT_EQ(panels.count, 16u);
  const Call& row = call_at(panels.body, 1);
  ASSERT_TRUE(row.iter) << text;
  ASSERT_EQ(row.iter->root.size(), 16u);
  EXPECT_TRUE(row.iter->peer.empty() && row.iter->bytes.empty());
  const auto s = mksim::skeletons::builder::step_form(row.iter->root);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->base, 0);
  EXPECT_EQ(s->step, 1);
  EXPECT_EQ(s->len, 4);
  EXPECT_EQ(s->offset, 0);
  const auto c = mksim::skeletons::builder::step_form(call_at(panels.body, 3).iter->root);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->base, 1);
  EXPECT_EQ(c->step, 2);
  EXPECT_EQ(c->len, 8);
  // the same program at another size has the same shape (the builder groups ranks by it)
  EXPECT_EQ(mksim::skeletons::builder::shape_hash(p.seq), mksim::skeletons::builder::shape_hash(make(32, 4, false).seq));
  // owners 0, 1, 4, 9: no step function, the loops stay as folded
  const auto q = make(16, 4, true);
  EXPECT_GT(loop_at(q.seq, 1).body.size(), 1u) << mksim::skeletons::builder::to_text(q.seq);
  // a first run shorter than the others is an offset; runs of unequal length inside are no step function
  const auto o = mksim::skeletons::builder::step_form({3, 3, 4, 4, 4, 5, 5, 5, 6});
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->offset, 1);
  EXPECT_EQ(o->len, 3);
  EXPECT_FALSE(mksim::skeletons::builder::step_form({0, 0, 1, 1, 1, 2, 2, 2, 2, 3}).has_value());
  EXPECT_FALSE(mksim::skeletons::builder::step_form({5, 5, 5}).has_value());
}

// SUMMA where nb does not divide the block: panel k's owners are floor(k nb / my) along the row and floor(k nb /
// mx) down the column, steps of unequal length (0 0 1 2 2 3 for nb / mx = 2/3) that neither step_form nor
// cycle_form describe. The iterations whose owners repeat fold into loops and the others stay single; together
// they are one indexed loop over the panels (ratio_form), each owner kept per iteration.
TEST(FoldTest, PanelsWhoseOwnersStepUnevenlyAreOneIndexedLoop) {
  Writer w;
  w.call(Kind::INIT, 1, -1, -1, 0, 0);
  for (int rep = 0; rep < 2; ++rep)
    for (int k = 0; k < 6; ++k) {
      w.call(Kind::BCAST, 2, -1, -1, 64).root = k / 3;
      w.call(Kind::BCAST, 3, -1, -1, 32).root = 2 * k / 3;
    }
  w.call(Kind::FINALIZE, 4);
  const auto p = fold_rank(w.t);
  const std::string text = mksim::skeletons::builder::to_text(p.seq);
  const Loop& reps = loop_at(p.seq, 1);
  EXPECT_EQ(reps.count, 2u) << text;
  ASSERT_EQ(reps.body.size(), 1u) << text;
  const Loop& panels = loop_at(reps.body, 0);
  EXPECT_TRUE(panels.indexed) << text;
  EXPECT_EQ(panels.count, 6u) << text;
  const Call& col = call_at(panels.body, 3);
  ASSERT_TRUE(col.iter) << text;
  EXPECT_EQ(col.iter->root, (std::vector<std::int64_t>{0, 0, 1, 2, 2, 3}));
  const auto r = mksim::skeletons::builder::ratio_form(col.iter->root);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->contains(2, 3));   // nb / mx
  EXPECT_FALSE(r->contains(1, 2));  // 0 0 1 1 2 2
  EXPECT_FALSE(r->contains(3, 4));  // 0 0 1 2 3 3
  // owners 0 1 4 9 (squares) are no block owner's
  EXPECT_FALSE(mksim::skeletons::builder::ratio_form({0, 0, 1, 1, 4, 4, 9, 9}).has_value());
}

// A master's tasks to its workers in turn, in an annotated loop (`for t < 2W: MPI_Isend(1 + t % W)`): folding by
// period made loop 2 { W sends } and the builder one place per worker; the annotation says it is one loop, and
// its peers cycle with the index (cycle_form), so it is one indexed loop of 2W iterations. A loop that ran once
// stays a loop of one (the same program at P = 2).
TEST(FoldTest, AnnotatedLoopWhosePeerCyclesIsOneIndexedLoop) {
  auto make = [](int W, int rounds) {
    Writer w;
    w.call(Kind::INIT, 1, -1, -1, 0, 0);
    w.call(Kind::LOOP_BEGIN, 20, -1, 0);
    for (int t = 0; t < rounds * W; ++t) {
      w.call(Kind::LOOP_ITER, 21, -1, 0, t);
      w.call(Kind::ISEND, 2, 1 + t % W, 2, 64);
    }
    w.call(Kind::LOOP_END, 22, -1, 0);
    w.call(Kind::FINALIZE, 4);
    return fold_rank(w.t);
  };
  const auto p = make(3, 2);
  const std::string text = mksim::skeletons::builder::to_text(p.seq);
  const Node* found = nullptr;
  for (const Node& n : p.seq)
    if (std::holds_alternative<Loop>(n.op)) found = &n;
  ASSERT_NE(found, nullptr) << text;
  const Loop& l = std::get<Loop>(found->op);
  EXPECT_TRUE(l.indexed) << text;
  EXPECT_EQ(l.count, 6u) << text;
  const Call* send = nullptr;
  for (const Node& n : l.body)
    if (const auto* c = std::get_if<Call>(&n.op); c && c->kind == Kind::ISEND) send = c;
  ASSERT_TRUE(send && send->iter) << text;
  EXPECT_EQ(send->iter->peer, (std::vector<std::int64_t>{1, 2, 3, 1, 2, 3}));
  const auto cy = mksim::skeletons::builder::cycle_form(send->iter->peer);
  ASSERT_TRUE(cy.has_value());
  EXPECT_EQ(cy->low, 1);
  EXPECT_EQ(cy->start, 0);
  EXPECT_EQ(cy->step, 1);
  EXPECT_EQ(cy->period, 3);
  // one worker: one iteration, still a loop
  const auto one = make(1, 1);
  bool loop = false;
  for (const Node& n : one.seq) loop = loop || std::holds_alternative<Loop>(n.op);
  EXPECT_TRUE(loop) << mksim::skeletons::builder::to_text(one.seq);
  // a pairwise exchange's partner at rank 2 of 5: (rank + 1 + k) % P
  const auto pw = mksim::skeletons::builder::cycle_form({3, 4, 0, 1});
  ASSERT_TRUE(pw.has_value());
  EXPECT_EQ(pw->low + pw->start, 3);
  EXPECT_EQ(pw->period, 5);
  EXPECT_FALSE(mksim::skeletons::builder::cycle_form({1, 2, 3}).has_value());     // no wrap: step_form's
  EXPECT_FALSE(mksim::skeletons::builder::cycle_form({1, 2, 0, 2}).has_value());  // not one cycle
}

// NPB MG's halo along a periodic side of two ranks: MPI_Sendrecv to the +1 neighbour, then to the -1 one, the same
// rank. Without call sites or Sendrecv tags (SimGrid TI traces) the two are one call twice; a loop of 2 there would
// not align with the two calls a longer side makes, so it is unrolled, with one gap duration per copy. Three in a
// row stay a loop.
TEST(FoldTest, TwoShiftsAlongASideOfTwoRanksStayTwoCalls) {
  Writer w;
  auto sendrecv = [&](int peer, long bytes, double gap) {
    w.call(Kind::SENDRECV, 7, peer, 0, bytes, gap);
    w.complete(0, peer, 0, bytes, true);
  };
  w.call(Kind::INIT, 1, -1, -1, 0, 0);
  for (const long bytes : {512L, 128L}) {  // two levels of the V-cycle
    w.call(Kind::ALLREDUCE, 3, -1, -1, 8);
    sendrecv(1, bytes, 1e-3);
    sendrecv(1, bytes, 2e-3);
  }
  for (int i = 0; i < 3; ++i) sendrecv(2, 64, 1e-3);
  w.call(Kind::FINALIZE, 4);
  const auto p = fold_rank(w.t);
  const std::string text = mksim::skeletons::builder::to_text(p.seq);
  std::size_t top_sendrecvs = 0;
  const Loop* three = nullptr;
  for (const Node& n : p.seq) {
    if (const auto* c = std::get_if<Call>(&n.op); c && c->kind == Kind::SENDRECV) ++top_sendrecvs;
    if (const auto* l = std::get_if<Loop>(&n.op)) three = l;
  }
  EXPECT_EQ(top_sendrecvs, 4u) << text;
  ASSERT_NE(three, nullptr) << text;
  EXPECT_EQ(three->count, 3u) << text;
  // the two copies keep their own gaps: 1 ms before the first shift, 2 ms before the second
  std::vector<double> gaps;
  for (std::size_t i = 0; i + 1 < p.seq.size(); ++i)
    if (const auto* c = std::get_if<Call>(&p.seq[i + 1].op); c && c->kind == Kind::SENDRECV && c->bytes == 512)
      gaps.push_back(std::get<Compute>(p.seq[i].op).seconds.mean());
  ASSERT_EQ(gaps.size(), 2u) << text;
  EXPECT_NEAR(gaps[0], 1e-3, 1e-9);
  EXPECT_NEAR(gaps[1], 2e-3, 1e-9);
  EXPECT_EQ(mksim::skeletons::builder::expanded_calls(p.seq), 11u) << text;
}

// NPB FT from TI traces (no call sites): the forward FFT's two all-to-alls before the loop, then per iteration the
// inverse FFT's two and a checksum reduction. Folded at the tail as events came, the forward FFT's calls merged with
// the first iteration's: `loop 4 {alltoall} reduce loop 2 {alltoall} reduce` with two iterations, `loop 4
// {alltoall} loop 2 {reduce loop 2 {alltoall}} reduce` with three, and the runs did not align (27 collectives that
// did not pair). The largest repeat first gives one shape whatever the iteration count.
TEST(FoldTest, ASetupPhaseLikeTheLoopBodyStaysBeforeTheLoop) {
  auto make = [](int iters) {
    Writer w;
    w.call(Kind::INIT, 1, -1, -1, 0, 0);
    for (int i = 0; i < 2; ++i) w.call(Kind::ALLTOALL, 2, -1, -1, 8192, 1e-3);
    for (int it = 0; it < iters; ++it) {
      for (int i = 0; i < 2; ++i) w.call(Kind::ALLTOALL, 2, -1, -1, 8192, 1e-3);
      w.call(Kind::REDUCE, 3, -1, 0, 16, 1e-3);
    }
    w.call(Kind::FINALIZE, 4);
    return fold_rank(w.t);
  };
  const auto two = make(2), three = make(3);
  const std::string text = mksim::skeletons::builder::to_text(three.seq);
  EXPECT_EQ(mksim::skeletons::builder::shape_hash(two.seq), mksim::skeletons::builder::shape_hash(three.seq))
      << mksim::skeletons::builder::to_text(two.seq) << "---\n" << text;
  // init, gap, loop 2 {gap, alltoall}, loop 3 {loop 2 {gap, alltoall}, gap, reduce}, gap, finalize
  const Loop* outer = nullptr;
  std::size_t before = 0;
  for (const Node& n : three.seq)
    if (const auto* l = std::get_if<Loop>(&n.op)) {
      if (l->count == 3) outer = l;
      else if (!outer && l->count == 2) ++before;
    }
  EXPECT_EQ(before, 1u) << text;
  ASSERT_NE(outer, nullptr) << text;
  ASSERT_EQ(outer->body.size(), 3u) << text;
  EXPECT_EQ(loop_at(outer->body, 0).count, 2u) << text;
  EXPECT_EQ(call_at(outer->body, 2).kind, Kind::REDUCE) << text;
  // statistics: each alltoall gap of the loop stands for 3 iterations x 2 calls
  EXPECT_EQ(std::get<Compute>(loop_at(outer->body, 0).body[0].op).seconds.n, 6u) << text;
  EXPECT_EQ(mksim::skeletons::builder::expanded_calls(three.seq), 2u + 2u + 3u * 3u) << text;
}

}  // namespace

// SimGrid TI-like streams (no call sites; the work of a gap in flops; MPI_Sendrecv with its receive half as a
// completion record): NPB MG's V-cycles, each level's work before its halo, the two shifts along a side of two ranks
// (the same neighbour twice, no work between them), and the norm (two reductions) before the first V-cycle and after
// every one (after the setup's residual, a halo on the finest level).
Writer mg_like(int iters, int levels, bool short_side) {
  Writer w;
  w.call(Kind::INIT, 0, -1, -1, 0, 0);
  w.call(Kind::BARRIER, 0);
  auto sendrecv = [&](int peer, long bytes, double flops) {
    w.call(Kind::SENDRECV, 0, peer, 0, bytes).gap_flops = flops;
    w.complete(0, peer, 0, bytes, true);
  };
  auto comm3 = [&](long face, double flops) {  // three axes, both ways; the first axis' side is short or long
    sendrecv(4, face, flops);
    sendrecv(short_side ? 4 : 12, face, 0);
    sendrecv(2, face + 8, 0);
    sendrecv(2, face + 8, 0);
    sendrecv(1, face + 16, 0);
    sendrecv(1, face + 16, 0);
  };
  auto norm = [&] {
    w.call(Kind::ALLREDUCE, 0, -1, -1, 8).gap_flops = 4096;
    w.call(Kind::ALLREDUCE, 0, -1, -1, 8);
  };
  comm3(8L << (2 * levels), 3e4);  // the setup's residual
  norm();
  for (int it = 0; it < iters; ++it) {
    for (int l = 0; l < levels; ++l) comm3(8L << (2 * (levels - l)), 1e5 / (1 << (3 * l)));
    norm();
  }
  for (int i = 0; i < 5; ++i) w.call(Kind::REDUCE, 0, -1, 0, 8);
  w.call(Kind::FINALIZE, 0);
  return w;
}

// Online folding found `norm [V-cycle norm] x iters` in some runs and `[norm V-cycle] x iters norm` in others (the
// corpus' MG from SMPI's TI traces at P = 4, 8 against 16), which do not align: a loop starts at its earliest phase, so
// the norm before the first V-cycle is the first iteration's, whatever the number of iterations or levels, with exact
// and varying sizes, and no work is lost or counted twice when a loop turns. (These streams fold to that phase online
// too; the real traces that did not are SkelBuildTiTest.MgHalosOnTheGridOfDimsCreatePairAtUntracedP's.)
TEST(FoldTest, ALoopStartsAtItsEarliestPhase) {
  mksim::skeletons::builder::FoldOptions vary;
  vary.vary_sizes = true;  // as the builder folds MG: a level's halo is a quarter of the one above
  for (const auto& options : {mksim::skeletons::builder::FoldOptions{}, vary})
  for (const int iters : {2, 3})
    for (const int levels : {3, 4})
      for (const bool short_side : {true, false}) {
        const auto p = fold_rank(mg_like(iters, levels, short_side).t, options);
        const std::string text = mksim::skeletons::builder::to_text(p.seq);
        const Loop* outer = nullptr;
        std::size_t at = 0;
        for (std::size_t i = 0; i < p.seq.size(); ++i)
          if (const auto* l = std::get_if<Loop>(&p.seq[i].op); !outer && l && l->count == static_cast<std::uint64_t>(iters)) outer = l, at = i;
        ASSERT_NE(outer, nullptr) << text;
        // the norm first in the loop's body (and once more after it): no reduction before the loop
        std::function<bool(const Node&)> has_reduction = [&](const Node& n) {
          if (const auto* c = std::get_if<Call>(&n.op)) return c->kind == Kind::ALLREDUCE;
          if (const auto* l = std::get_if<Loop>(&n.op)) return std::any_of(l->body.begin(), l->body.end(), has_reduction);
          return false;
        };
        for (std::size_t i = 0; i < at; ++i) EXPECT_FALSE(has_reduction(p.seq[i])) << i << "\n" << text;
        const Node& first = outer->body.front();
        const bool norm_first = std::holds_alternative<Compute>(first.op) ||
                                (std::holds_alternative<Call>(first.op) && std::get<Call>(first.op).kind == Kind::ALLREDUCE);
        EXPECT_TRUE(norm_first) << text;
        EXPECT_EQ(mksim::skeletons::builder::expanded_calls(p.seq), 3u + 6u + 2u + iters * (6u * levels + 2u) + 5u) << text;
        double flops = 0;
        std::function<void(const Seq&, double)> sum = [&](const Seq& s, double times) {
          for (const Node& n : s) {
            if (const auto* k = std::get_if<Compute>(&n.op)) flops += times * k->flops.sum / std::max<double>(1, k->flops.n);
            if (const auto* l = std::get_if<Loop>(&n.op)) sum(l->body, times * static_cast<double>(l->count));
          }
        };
        sum(p.seq, 1);
        double want = 3e4 + 4096.0 * (iters + 1);
        for (int l = 0; l < levels; ++l) want += iters * 1e5 / (1 << (3 * l));
        EXPECT_NEAR(flops, want, 1e-6 * want) << text;
      }
}
