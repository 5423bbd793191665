// Collective algorithms over a P2PLayer; each is the textbook/MPICH form, cited per function.
#include "sim/engine/collectives.hpp"

#include <algorithm>

namespace mksim::sim {

using skeletons::CollectiveKind;

namespace {

// The algorithms see communicator ranks (me, peers); the messages go between the members' world ranks.
struct Ops {
  P2PLayer& net;
  int me;
  int tag;
  int block;
  CollAcc& acc;
  const int* world = nullptr;  // communicator rank -> world rank, nullptr for world itself
  std::uint32_t context = 1;

  int w(int r) const { return world ? world[r] : r; }
  void send(int dst, double bytes) { net.wait(w(me), net.isend(w(me), w(dst), tag, bytes, block, context), acc); }
  void recv(int src, double bytes) { net.wait(w(me), net.irecv(w(me), w(src), tag, bytes, block, context), acc); }
  void sendrecv(int dst, double send_bytes, int src, double recv_bytes) {
    auto s = net.isend(w(me), w(dst), tag, send_bytes, block, context);
    auto r = net.irecv(w(me), w(src), tag, recv_bytes, block, context);
    net.wait(w(me), r, acc);
    net.wait(w(me), s, acc);
  }
};

int largest_pof2_le(int P) {
  int p = 1;
  while (p * 2 <= P) p *= 2;
  return p;
}

// Dissemination barrier (Hensgen, Finkel, Manber 1988): ceil(log2 P) rounds of zero-byte messages.
void barrier(Ops& o, int P) {
  for (int k = 1; k < P; k <<= 1) o.sendrecv((o.me + k) % P, 0, (o.me - k + P) % P, 0);
}

// Binomial-tree broadcast (MPICH MPIR_Bcast_binomial).
void bcast(Ops& o, int P, int root, double bytes) {
  int vr = (o.me - root + P) % P;
  int mask = 1;
  while (mask < P) {
    if (vr & mask) {
      o.recv((vr - mask + root) % P, bytes);
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (vr + mask < P) o.send((vr + mask + root) % P, bytes);
}

// Binomial-tree reduction, commutative operator (MPICH MPIR_Reduce_binomial).
void reduce(Ops& o, int P, int root, double bytes) {
  int vr = (o.me - root + P) % P;
  for (int mask = 1; mask < P; mask <<= 1) {
    if ((vr & mask) == 0) {
      int src = vr | mask;
      if (src < P) o.recv((src + root) % P, bytes);
    } else {
      o.send(((vr & ~mask) + root) % P, bytes);
      break;
    }
  }
}

// Recursive doubling with the fold of the first 2*rem ranks for P not a power of two
// (Thakur, Rabenseifner, Gropp 2005; MPICH MPIR_Allreduce_recursive_doubling).
void allreduce(Ops& o, int P, double bytes) {
  int pof2 = largest_pof2_le(P);
  int rem = P - pof2;
  int newrank;
  if (o.me < 2 * rem) {
    if (o.me % 2 == 0) {
      o.send(o.me + 1, bytes);
      newrank = -1;
    } else {
      o.recv(o.me - 1, bytes);
      newrank = o.me / 2;
    }
  } else {
    newrank = o.me - rem;
  }
  if (newrank != -1) {
    for (int mask = 1; mask < pof2; mask <<= 1) {
      int newdst = newrank ^ mask;
      int dst = newdst < rem ? newdst * 2 + 1 : newdst + rem;
      o.sendrecv(dst, bytes, dst, bytes);
    }
  }
  if (o.me < 2 * rem) {
    if (o.me % 2) o.send(o.me - 1, bytes);
    else o.recv(o.me + 1, bytes);
  }
}

// Binomial-tree gather: each subtree's blocks travel together (MPICH MPIR_Gather_intra_binomial).
void gather(Ops& o, int P, int root, double bytes) {
  int vr = (o.me - root + P) % P;
  int held = 1;
  for (int mask = 1; mask < P; mask <<= 1) {
    if ((vr & mask) == 0) {
      int src = vr | mask;
      if (src < P) {
        int cnt = std::min(mask, P - src);
        o.recv((src + root) % P, cnt * bytes);
        held += cnt;
      }
    } else {
      o.send(((vr & ~mask) + root) % P, held * bytes);
      break;
    }
  }
}

// Binomial-tree scatter, the mirror of gather (MPICH MPIR_Scatter_intra_binomial).
void scatter(Ops& o, int P, int root, double bytes) {
  int vr = (o.me - root + P) % P;
  int mask = 1;
  while (mask < P) {
    if (vr & mask) {
      o.recv((vr - mask + root) % P, std::min(mask, P - vr) * bytes);
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (vr + mask < P) o.send((vr + mask + root) % P, std::min(mask, P - vr - mask) * bytes);
}

// Bruck's allgather: ceil(log2 P) rounds for any P (Bruck et al. 1997; MPICH MPIR_Allgather_intra_brucks).
void allgather(Ops& o, int P, double bytes) {
  for (int k = 1; k < P; k <<= 1) {
    int cnt = std::min(k, P - k);
    o.sendrecv((o.me - k + P) % P, cnt * bytes, (o.me + k) % P, cnt * bytes);
  }
}

// Pairwise exchange: P-1 rounds, XOR partners when P is a power of two (MPICH MPIR_Alltoall_intra_pairwise).
void alltoall(Ops& o, int P, double bytes) {
  bool pof2 = (P & (P - 1)) == 0;
  for (int i = 1; i < P; ++i) {
    if (pof2) {
      int partner = o.me ^ i;
      o.sendrecv(partner, bytes, partner, bytes);
    } else {
      o.sendrecv((o.me + i) % P, bytes, (o.me - i + P) % P, bytes);
    }
  }
}

}  // namespace

void run_collective(P2PLayer& net, CollectiveKind kind, int me, int P, int root, double bytes, int tag, int block,
                    CollAcc& acc) {
  run_collective(net, kind, CollGroup{me, P, nullptr, 1}, root, bytes, tag, block, acc);
}

void run_collective(P2PLayer& net, CollectiveKind kind, const CollGroup& group, int root, double bytes, int tag, int block,
                    CollAcc& acc) {
  Ops o{net, group.me, tag, block, acc, group.world, group.context};
  const int P = group.size;
  switch (kind) {
    case CollectiveKind::BARRIER: barrier(o, P); break;
    case CollectiveKind::BCAST: bcast(o, P, root, bytes); break;
    case CollectiveKind::REDUCE: reduce(o, P, root, bytes); break;
    case CollectiveKind::ALLREDUCE: allreduce(o, P, bytes); break;
    case CollectiveKind::GATHER: gather(o, P, root, bytes); break;
    case CollectiveKind::SCATTER: scatter(o, P, root, bytes); break;
    case CollectiveKind::ALLGATHER: allgather(o, P, bytes); break;
    case CollectiveKind::ALLTOALL: alltoall(o, P, bytes); break;
  }
}

}  // namespace mksim::sim
