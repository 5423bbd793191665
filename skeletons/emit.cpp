// mkskel emit: a skeleton as an MPI C program. The program keeps the skeleton's evaluation frame (one double per
// slot of Skeleton::symbols) and evaluates every expression as its postfix code does (expr.cpp), one C statement
// per instruction on a small stack of doubles, with the C twins of apply_instr's operators and functions; the
// seeded draws (RankRng, coin_toss, sample_multiplier) are the same SplitMix64 arithmetic, so the program takes
// the branches and compute amounts that expand_rank and the replay engine take.
#include "skeletons/emit.hpp"

#include "skeletons/distribution.hpp"
#include "skeletons/error.hpp"
#include "skeletons/rank_rng.hpp"

#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <type_traits>

namespace mksim::skeletons {

namespace {

using Code = ExprInstr::Code;

// The part of the program that does not depend on the skeleton: the operators of expr.cpp, the seeded streams
// of rank_rng.hpp and distribution.cpp, the compute spin, buffers, requests and error reports.
constexpr const char* RUNTIME = R"RUNTIME(
/* ---------------------------------------------------------------- runtime (the same for every skeleton) */
typedef struct {
  double F[MK_NSLOTS];                 /* the frame: P, rank, parameters, let values, loop variables, ... */
  MPI_Comm comm[MK_NCOMMS];            /* 0: MPI_COMM_WORLD; k: the k-th declared communicator (or MPI_COMM_NULL) */
  int csize[MK_NCOMMS];                /* this rank's size of each (0 when not a member) */
  int rank, P;
  uint64_t seed, rng;                  /* RankRng of rank_rng.hpp */
  uint64_t* coin_reads;                /* per (coin, rank): tosses read so far */
  MPI_Request* pend;                   /* outstanding requests, in posting order */
  int npend, cappend;
  int named[MK_NREQ + 1];              /* request slot -> index in pend, -1 when none */
  char *sbuf, *rbuf;
  size_t scap, rcap;
  void** retired;                      /* outgrown buffers, kept until the end (requests may still use them) */
  int nretired, capretired;
  double flop_rate;                    /* flop/s for flops compute (not used under SMPI) */
  volatile int site;                   /* the block of the last MPI call: a distinct store after each call keeps
                                          the compiler from merging two blocks' identical calls into one call site
                                          (-O2 cross-jumping did, for the waitalls ending atm1d's two colours: the
                                          tracer tells call points apart by their return addresses) */
} mk_state;

static mk_state* mk_S; /* for messages only */

static void mk_fail(int block, const char* fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void mk_fail(int block, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s: %s: rank %d: %s\n", MK_FILE, block >= 0 ? MK_BLOCK_ID[block] : "setup", mk_S ? mk_S->rank : -1, msg);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 2);
  exit(2);
}

/* expr.cpp's operators */
static inline double mk_min(double a, double b) { return b < a ? b : a; }
static inline double mk_max(double a, double b) { return a < b ? b : a; }
static inline double mk_mod(double a, double b) {
  double r = fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
static inline double mk_xor(double a, double b) {
  if (!(fabs(a) < 0x1p63 && fabs(b) < 0x1p63)) return NAN;
  return (double)((int64_t)a ^ (int64_t)b);
}
static inline int mk_as_index(double v) {
  if (!(v >= 0 && v < 2147483648.0) || v != floor(v)) return -1;
  return (int)v;
}
/* dims(n, d, i): entry i of MPI_Dims_create(n, d) as OpenMPI 4.1 makes it */
static inline double mk_dims(double n, double d, double i) {
  const int nn = mk_as_index(n), nd = mk_as_index(d), ni = mk_as_index(i);
  if (nn < 1 || nd < 1 || nd > 64 || ni < 0 || ni >= nd) return NAN;
  int factors[32], nf = 0, rest = nn, bins[64];
  for (int p = 2; (long long)p * p <= rest; ++p)
    while (rest % p == 0) { factors[nf++] = p; rest /= p; }
  if (rest > 1) factors[nf++] = rest;
  for (int k = 0; k < nd; ++k) bins[k] = 1;
  for (int f = nf - 1; f >= 0; --f) { /* largest first, into the smallest bin (the first on ties) */
    int m = 0;
    for (int k = 1; k < nd; ++k) if (bins[k] < bins[m]) m = k;
    bins[m] *= factors[f];
  }
  for (int a = 1; a < nd; ++a) /* non-increasing */
    for (int b = a; b > 0 && bins[b - 1] < bins[b]; --b) { int t = bins[b]; bins[b] = bins[b - 1]; bins[b - 1] = t; }
  return bins[ni];
}
static inline double mk_cart_coord(double r_, double i_, double n0, double n1, double n2) {
  const int r = mk_as_index(r_), i = mk_as_index(i_);
  long long n[3];
  const double nn[3] = {n0, n1, n2};
  for (int k = 0; k < 3; ++k) {
    const int v = mk_as_index(nn[k]);
    if (v < 1) return NAN;
    n[k] = v;
  }
  if (r < 0 || i < 0 || i > 2 || r >= n[0] * n[1] * n[2]) return NAN;
  const long long c[3] = {r / (n[1] * n[2]), (r / n[2]) % n[1], r % n[2]};
  return (double)c[i];
}
static inline double mk_cart_rank(double c0, double c1, double c2, double n0, double n1, double n2) {
  const double cc[3] = {c0, c1, c2}, nn[3] = {n0, n1, n2};
  long long n[3], c[3];
  int outside = 0;
  for (int k = 0; k < 3; ++k) {
    const int v = mk_as_index(nn[k]);
    if (v < 1) return NAN;
    n[k] = v;
  }
  for (int k = 0; k < 3; ++k) {
    if (!(fabs(cc[k]) < 2147483648.0) || cc[k] != floor(cc[k])) return NAN;
    c[k] = (long long)cc[k];
    outside = outside || c[k] < 0 || c[k] >= n[k];
  }
  if (outside) return -1;
  return (double)((c[0] * n[1] + c[1]) * n[2] + c[2]);
}

/* rank_rng.hpp: SplitMix64 per rank, shared coins by (seed, coin, rank, k) */
static inline uint64_t mk_mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
static inline double mk_uniform(mk_state* S) {
  const uint64_t z = mk_mix64(S->rng);
  S->rng += 0x9E3779B97F4A7C15ULL;
  return (double)(z >> 11) * 0x1.0p-53;
}
static inline double mk_coin(mk_state* S, int block, int coin, double of, int even) {
  if (!(of >= 0 && of < S->P) || of != floor(of)) mk_fail(block, "coin_rank = %g is not a rank", of);
  const uint64_t k = S->coin_reads[(size_t)coin * (size_t)S->P + (size_t)of]++;
  const uint64_t z = mk_mix64(mk_mix64(mk_mix64(S->seed ^ MK_COIN_HASH[coin]) + (uint64_t)(int64_t)of) + (even ? 0 : k));
  const double u = (double)(z >> 11) * 0x1.0p-53;
  if (!even) return u;
  const double t = u + (double)k * 0.6180339887498949; /* coin_toss_even */
  return t - floor(t);
}
/* distribution.cpp's multipliers */
static inline double mk_std_normal(mk_state* S) {
  const double u1 = 1.0 - mk_uniform(S);
  const double u2 = mk_uniform(S);
  return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.141592653589793 * u2);
}
enum { MK_NORMAL, MK_LOGNORMAL, MK_UNIFORM, MK_EMPIRICAL };
static inline double mk_multiplier(mk_state* S, int block, int type, double cv, const double* q) {
  if (type != MK_EMPIRICAL) {
    if (!(cv >= 0) || !isfinite(cv)) mk_fail(block, "cv = %g is not a coefficient of variation (finite, >= 0)", cv);
    if (type == MK_UNIFORM && cv > 0.57735026918962573) mk_fail(block, "cv = %g is above 1/sqrt(3)", cv);
  }
  switch (type) {
    case MK_NORMAL:
      for (int tries = 0; tries < 64; ++tries) {
        const double x = 1.0 + cv * mk_std_normal(S);
        if (x >= 0) return x;
      }
      return 0.0;
    case MK_LOGNORMAL: {
      const double s2 = log1p(cv * cv);
      return exp(-0.5 * s2 + sqrt(s2) * mk_std_normal(S));
    }
    case MK_UNIFORM: {
      const double half = cv * sqrt(3.0);
      return 1.0 + half * (2.0 * mk_uniform(S) - 1.0);
    }
    default: {
      const double u = mk_uniform(S);
      const double pos = u * 10.0;
      size_t i = (size_t)pos;
      if (i > 9) i = 9;
      return q[i] + (q[i + 1] - q[i]) * (pos - (double)i);
    }
  }
}

/* compute: SMPI charges it exactly (flops at the host's speed; seconds as that many seconds of the host);
 * a real run spins for the seconds, or for flops / the rate, of its own CPU time (the thread's clock): on a core
 * shared with other ranks or programs it does the skeleton's work, as the program it models would, and a trace
 * that measures CPU time (mktrace on more ranks than cores) finds the skeleton's amounts, not the time it waited. */
static inline double mk_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static inline double mk_cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static inline void mk_compute(mk_state* S, int block, double amount, int in_flops) {
  if (!(amount >= 0) || !isfinite(amount)) mk_fail(block, "compute amount %g is not finite and >= 0", amount);
#ifdef SMPI_H
  (void)S;
  if (amount > 0) smpi_execute_flops(in_flops ? amount : amount * sg_host_get_speed(sg_host_self()));
#else
  const double s = in_flops ? amount / S->flop_rate : amount;
  if (s > 0) {
    const double end = mk_cpu_now() + s;
    while (mk_cpu_now() < end) {
    }
  }
#endif
}
static inline double mk_measure_rate(void) { /* dependent multiply-adds for 0.1 s: 2 flops each */
  volatile double sink;
  double x = 1.0, t = 0, t0 = mk_cpu_now();
  long long n = 0;
  do {
    for (int i = 0; i < (1 << 16); ++i) x = x * 0.9999999 + 1e-7;
    n += 1 << 16;
    t = mk_cpu_now() - t0;
  } while (t < 0.1);
  sink = x;
  (void)sink;
  return 2.0 * (double)n / t;
}

/* buffers: never shrunk or moved while requests may use them */
static inline char* mk_buf(mk_state* S, char** buf, size_t* cap, size_t bytes) {
  if (bytes > *cap || !*buf) {
    size_t c = *cap ? *cap : 4096;
    while (c < bytes) c *= 2;
    if (*buf) {
      if (S->nretired == S->capretired) {
        S->capretired = S->capretired ? 2 * S->capretired : 16;
        S->retired = (void**)realloc(S->retired, (size_t)S->capretired * sizeof(void*));
        if (!S->retired) mk_fail(-1, "out of memory");
      }
      S->retired[S->nretired++] = *buf;
    }
    *buf = (char*)calloc(c, 1);
    if (!*buf) mk_fail(-1, "out of memory for a %zu-byte buffer", c);
    *cap = c;
  }
  return *buf;
}
#define MK_SBUF(n) mk_buf(S, &S->sbuf, &S->scap, (n))
#define MK_RBUF(n) mk_buf(S, &S->rbuf, &S->rcap, (n))

static inline MPI_Comm mk_comm(mk_state* S, int block, int c) {
  if (S->comm[c] == MPI_COMM_NULL) mk_fail(block, "rank %d is not a member of communicator \"%s\"", S->rank, MK_COMM_NAME[c]);
  return S->comm[c];
}
/* a peer or root: a rank of the communicator, or PROC_NULL (-1) where allowed */
static inline int mk_rank_in(mk_state* S, int block, int c, double v, int null_ok, const char* what) {
  if (null_ok && v == -1) return MPI_PROC_NULL;
  if (!(v >= 0 && v < S->csize[c]) || v != floor(v))
    mk_fail(block, "%s = %g is not a rank in [0, %d) of communicator \"%s\"", what, v, S->csize[c], MK_COMM_NAME[c]);
  return (int)v;
}
/* a size in bytes: floored as the expansion's integer conversion does (format v3 reads only integers) */
static inline int mk_bytes(int block, double v) {
  if (!(v >= 0 && v <= 2147483647.0)) mk_fail(block, "size = %g is not a byte count in [0, 2^31)", v);
  return (int)floor(v);
}
static inline int mk_tag(int block, double v) {
  if (!(v >= 0 && v <= 2147483647.0)) mk_fail(block, "tag = %g is not a non-negative integer", v);
  return (int)floor(v);
}
static inline long long mk_count(int block, double v) {
  if (!(v >= 0) || !isfinite(v)) mk_fail(block, "loop count = %g is not finite and >= 0", v);
  return (long long)floor(v);
}
static inline int mk_int(int block, const char* what, double v) {
  if (!(fabs(v) < 2147483648.0) || v != floor(v)) mk_fail(block, "%s = %g is not an integer", what, v);
  return (int)v;
}

static inline MPI_Request* mk_post(mk_state* S, int slot) {
  if (S->npend == S->cappend) {
    S->cappend = S->cappend ? 2 * S->cappend : 64;
    S->pend = (MPI_Request*)realloc(S->pend, (size_t)S->cappend * sizeof(MPI_Request));
    if (!S->pend) mk_fail(-1, "out of memory");
  }
  if (slot >= 0) S->named[slot] = S->npend;
  return &S->pend[S->npend++];
}
/* wait on a named request; one already completed (or never posted) returns at once, as MPI_REQUEST_NULL */
static inline void mk_wait(mk_state* S, int slot) {
  const int i = S->named[slot];
  if (i < 0) return;
  MPI_Wait(&S->pend[i], MPI_STATUS_IGNORE);
  S->named[slot] = -1;
  while (S->npend > 0 && S->pend[S->npend - 1] == MPI_REQUEST_NULL) --S->npend;
}
/* waitall: every outstanding request of the rank */
static inline void mk_waitall(mk_state* S) {
  int n = 0;
  for (int i = 0; i < S->npend; ++i)
    if (S->pend[i] != MPI_REQUEST_NULL) S->pend[n++] = S->pend[i];
  MPI_Waitall(n, S->pend, MPI_STATUSES_IGNORE);
  S->npend = 0;
  for (int k = 0; k <= MK_NREQ; ++k) S->named[k] = -1;
}
)RUNTIME";

std::string c_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 32 || ch >= 127 || ch == '?') {  // '?': no trigraphs
      char b[8];
      std::snprintf(b, sizeof b, "\\%03o", ch);
      out += b;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

/** @brief Text safe inside a C comment. */
std::string comment(std::string s) {
  for (std::size_t p; (p = s.find("*/")) != std::string::npos;) s.replace(p, 2, "* /");
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

std::string number(double v) {
  if (std::isnan(v)) return "NAN";
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "(-INFINITY)";
  std::ostringstream o;
  o.precision(17);
  o << v;
  std::string s = o.str();
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return v < 0 ? "(" + s + ")" : s;
}

/** @brief A value for people: the shortest text that reads back exactly. */
std::string plain(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  std::ostringstream o;
  o.precision(17);
  o << v;
  for (int p = 1; p <= 17; ++p) {
    std::ostringstream t;
    t.precision(p);
    t << v;
    if (std::stod(t.str()) == v) return t.str();
  }
  return o.str();
}

class Emitter {
 public:
  explicit Emitter(const Skeleton& sk) : sk_(sk) {
    for (const auto& c : sk.comms) comm_slots_.insert({c.rank_slot, c.size_slot});
    for (const auto& d : sk.defines)
      if (d.late) late_slots_.insert(d.slot);
  }

  std::string run() {
    check_comms();
    std::ostringstream body;
    emit_setup(body);
    for (std::size_t g = 0; g < sk_.groups.size(); ++g) {
      body << "static void mk_group_" << g << "(mk_state* S) {\n";
      emit_body(body, sk_.groups[g].body, 1);
      body << "}\n\n";
    }
    emit_main(body);

    std::ostringstream o;
    o << "/* " << comment(sk_.name.empty() ? std::string("skeleton") : sk_.name) << ": generated by `mkskel emit` from "
      << comment(sk_.file) << " (skeleton format v" << sk_.version << "). Do not edit; emit again.\n";
    if (!sk_.description.empty()) o << " * " << comment(sk_.description) << "\n";
    o << " *\n * Build: mpicc -O2 -o prog prog.c -lm   (under SMPI: smpicc -O2 -o prog prog.c -lm)\n"
      << " * Run:   mpirun -np P ./prog [NAME=VALUE ...] [--seed=S] [--flops-rate=R] [--timing]\n"
      << " * Parameters:";
    for (const auto& p : sk_.params)
      o << " " << p.name << (p.default_value ? "=" + plain(*p.default_value) : std::string(" (required)"));
    if (sk_.params.empty()) o << " none";
    o << "\n */\n"
      << "#define _POSIX_C_SOURCE 200809L\n#include <mpi.h>\n#include <math.h>\n#include <stdarg.h>\n#include <stdint.h>\n"
      << "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n#include <time.h>\n"
      << "#ifdef SMPI_H /* compiled with smpicc: compute is charged to the simulated host */\n#include <simgrid/host.h>\n#endif\n\n"
      << "/* mktrace.h's annotations, inline: the skeleton's loops (those that communicate) and regions, for the tracer\n"
      << " * (weak references, defined only under LD_PRELOAD=libmktrace.so; no-ops otherwise and under SMPI) */\n"
      << "#if (defined(__GNUC__) || defined(__clang__)) && !defined(SMPI_H)\n"
      << "void mktrace_region_begin(const char* name) __attribute__((weak));\nvoid mktrace_region_end(const char* name) __attribute__((weak));\n"
      << "void mktrace_loop_begin(const char* name) __attribute__((weak));\nvoid mktrace_loop_iter(const char* name) __attribute__((weak));\n"
      << "void mktrace_loop_end(const char* name) __attribute__((weak));\n"
      << "#define MK_NOTE(fn, name) do { if (fn) fn(name); } while (0)\n#else\n#define MK_NOTE(fn, name) do { (void)(name); } while (0)\n#endif\n\n";
    o << "#define MK_NSLOTS " << sk_.symbols.size() << "\n#define MK_NCOMMS " << sk_.comms.size() + 1 << "\n#define MK_NREQ "
      << sk_.request_slots << "\n#define MK_NCOINS " << sk_.coins.size() << "\n#define MK_FILE " << c_string(sk_.file) << "\n";
    o << "static const char* const MK_BLOCK_ID[] = {";
    for (std::size_t i = 0; i < sk_.blocks.size(); ++i) o << (i ? ", " : "") << c_string(sk_.blocks[i].id);
    if (sk_.blocks.empty()) o << "\"\"";
    o << "};\nstatic const char* const MK_COMM_NAME[] = {\"world\"";
    for (const auto& c : sk_.comms) o << ", " << c_string(c.name);
    o << "};\nstatic const uint64_t MK_COIN_HASH[] = {";
    for (std::size_t i = 0; i < sk_.coins.size(); ++i) o << (i ? ", " : "") << coin_hash(sk_.coins[i]) << "ULL";
    if (sk_.coins.empty()) o << "0";
    o << "};\n" << RUNTIME << "\n/* ---------------------------------------------------------------- expressions */\n"
      << exprs_.str() << "\n/* ---------------------------------------------------------------- the program */\n"
      << body.str();
    return o.str();
  }

 private:
  [[noreturn]] void fail(const std::string& place, const std::string& what) const { throw SkeletonError(sk_.file, place, what); }

  /** @brief The name of a C function computing `e` over the frame F, as Expr::eval does. */
  std::string fn(const Expr& e) {
    const std::string name = "mk_e" + std::to_string(nexpr_++);
    exprs_ << "static double " << name << "(const double* F) { /* " << comment(e.text()) << " */\n";
    int depth = 0, max_depth = 0;
    std::ostringstream code;
    const auto s = [](int i) { return "s" + std::to_string(i); };
    for (const ExprInstr& in : e.code()) {
      const int k = instr_arity(in.code);
      const int b = depth - k;  // the first operand, and where the result goes
      const std::string a0 = k > 0 ? s(b) : s(depth), a1 = s(b + 1), a2 = s(b + 2);
      code << "  ";
      switch (in.code) {
        case Code::CONST: code << a0 << " = " << number(in.value) << ";"; break;
        case Code::VAR: code << a0 << " = F[" << in.slot << "];"; break;
        case Code::NEG: code << a0 << " = -" << a0 << ";"; break;
        case Code::NOT: code << a0 << " = " << a0 << " == 0 ? 1.0 : 0.0;"; break;
        case Code::ADD: code << a0 << " = " << a0 << " + " << a1 << ";"; break;
        case Code::SUB: code << a0 << " = " << a0 << " - " << a1 << ";"; break;
        case Code::MUL: code << a0 << " = " << a0 << " * " << a1 << ";"; break;
        case Code::DIV: code << a0 << " = " << a0 << " / " << a1 << ";"; break;
        case Code::POW: code << a0 << " = pow(" << a0 << ", " << a1 << ");"; break;
        case Code::LT: code << a0 << " = " << a0 << " < " << a1 << " ? 1.0 : 0.0;"; break;
        case Code::LE: code << a0 << " = " << a0 << " <= " << a1 << " ? 1.0 : 0.0;"; break;
        case Code::GT: code << a0 << " = " << a0 << " > " << a1 << " ? 1.0 : 0.0;"; break;
        case Code::GE: code << a0 << " = " << a0 << " >= " << a1 << " ? 1.0 : 0.0;"; break;
        case Code::EQ: code << a0 << " = " << a0 << " == " << a1 << " ? 1.0 : 0.0;"; break;
        case Code::NE: code << a0 << " = " << a0 << " != " << a1 << " ? 1.0 : 0.0;"; break;
        case Code::AND: code << a0 << " = (" << a0 << " != 0 && " << a1 << " != 0) ? 1.0 : 0.0;"; break;
        case Code::OR: code << a0 << " = (" << a0 << " != 0 || " << a1 << " != 0) ? 1.0 : 0.0;"; break;
        case Code::FLOOR: code << a0 << " = floor(" << a0 << ");"; break;
        case Code::CEIL: code << a0 << " = ceil(" << a0 << ");"; break;
        case Code::MIN: code << a0 << " = mk_min(" << a0 << ", " << a1 << ");"; break;
        case Code::MAX: code << a0 << " = mk_max(" << a0 << ", " << a1 << ");"; break;
        case Code::MOD: code << a0 << " = mk_mod(" << a0 << ", " << a1 << ");"; break;
        case Code::LOG2: code << a0 << " = log2(" << a0 << ");"; break;
        case Code::SQRT: code << a0 << " = sqrt(" << a0 << ");"; break;
        case Code::ABS: code << a0 << " = fabs(" << a0 << ");"; break;
        case Code::XOR: code << a0 << " = mk_xor(" << a0 << ", " << a1 << ");"; break;
        case Code::IF: code << a0 << " = " << a0 << " != 0 ? " << a1 << " : " << a2 << ";"; break;
        case Code::DIMS: code << a0 << " = mk_dims(" << a0 << ", " << a1 << ", " << a2 << ");"; break;
        case Code::CART_COORD:
          code << a0 << " = mk_cart_coord(" << a0 << ", " << a1 << ", " << a2 << ", " << s(b + 3) << ", " << s(b + 4) << ");";
          break;
        case Code::CART_RANK:
          code << a0 << " = mk_cart_rank(" << a0 << ", " << a1 << ", " << a2 << ", " << s(b + 3) << ", " << s(b + 4) << ", "
               << s(b + 5) << ");";
          break;
      }
      code << "\n";
      depth = (k > 0 ? b : depth) + 1;
      max_depth = std::max(max_depth, depth);
    }
    if (e.code().empty()) {
      code << "  s0 = 0;\n";
      max_depth = 1;
    }
    exprs_ << "  double s0";
    for (int i = 1; i < max_depth; ++i) exprs_ << ", " << s(i);
    exprs_ << ";\n" << code.str() << "  (void)F;\n  return s0;\n}\n";
    return name;
  }

  /** @brief `fn(e)(S->F)` as a C expression. */
  std::string call(const Expr& e) { return fn(e) + "(S->F)"; }

  static std::string pad(int depth) { return std::string(static_cast<std::size_t>(depth) * 2, ' '); }

  /** @brief Communicator declarations whose expressions MPI evaluates on one rank (create, graph: the parent's
   *  rank 0) can be reproduced on every rank only when they do not read other communicators' ranks or sizes. */
  void check_comms() const {
    for (const CommDecl& d : sk_.comms) {
      if (d.kind != CommDecl::Kind::CREATE && d.kind != CommDecl::Kind::GRAPH) continue;
      for (const auto& [field, e] : {std::pair<const char*, const Expr*>{"members", &d.members}, {d.kind == CommDecl::Kind::GRAPH ? "nodes" : "size", &d.size}}) {
        for (int slot : comm_slots_)
          if (e->uses(slot))
            fail(d.pointer + "/" + field, "mkskel emit cannot represent \"" + e->text() + "\": it reads a communicator's rank or size, "
                 "which the program knows on its own rank only, and MPI evaluates it on the parent's rank 0");
        for (int slot : late_slots_)
          if (e->uses(slot))
            fail(d.pointer + "/" + field, "mkskel emit cannot represent \"" + e->text() + "\": it reads a `let` value computed from "
                 "communicators, which the program knows on its own rank only, and MPI evaluates it on the parent's rank 0");
      }
    }
  }

  void emit_setup(std::ostringstream& o) {
    o << "static void mk_early(double* F) {\n";
    for (const auto& d : sk_.defines)
      if (!d.late) o << "  F[" << d.slot << "] = " << fn(d.value) << "(F); /* " << comment(d.name) << " */\n";
    o << "  (void)F;\n}\n\nstatic void mk_late(double* F) {\n";
    for (const auto& d : sk_.defines)
      if (d.late) o << "  F[" << d.slot << "] = " << fn(d.value) << "(F); /* " << comment(d.name) << " */\n";
    o << "  (void)F;\n}\n\n";
    // the frame of the parent's rank 0, for create and graph (evaluated there, as MPI does)
    o << "static inline void mk_root_frame(mk_state* S, MPI_Comm parent, int psize, double* G) {\n"
         "  MPI_Group pg, wg;\n  int zero = 0, w0 = 0;\n  MPI_Comm_group(parent, &pg);\n  MPI_Comm_group(MPI_COMM_WORLD, &wg);\n"
         "  MPI_Group_translate_ranks(pg, 1, &zero, wg, &w0);\n  MPI_Group_free(&pg);\n  MPI_Group_free(&wg);\n"
         "  memcpy(G, S->F, sizeof S->F);\n  G[1] = w0;\n  mk_early(G);\n";
    if (sk_.parent_rank_slot >= 0) o << "  G[" << sk_.parent_rank_slot << "] = 0;\n  G[" << sk_.parent_size_slot << "] = psize;\n";
    else o << "  (void)psize;\n";
    o << "}\n\n";
    o << "/* the communicators, in declaration order: one MPI creation call each, on every member of the parent */\n"
         "static void mk_make_comms(mk_state* S) {\n  double G[MK_NSLOTS];\n  (void)G;\n"
         "  S->comm[0] = MPI_COMM_WORLD;\n  S->csize[0] = S->P;\n";
    for (std::size_t k = 0; k < sk_.comms.size(); ++k) {
      const CommDecl& d = sk_.comms[k];
      const std::string at = c_string(d.pointer);
      o << "  { /* " << comment(d.name) << " (" << comment(d.pointer) << ") */\n"
        << "    MPI_Comm pc = S->comm[" << d.parent << "], nc = MPI_COMM_NULL;\n"
        << "    if (pc != MPI_COMM_NULL) {\n      int pr, ps;\n      MPI_Comm_rank(pc, &pr);\n      MPI_Comm_size(pc, &ps);\n"
        << "      S->F[" << sk_.parent_rank_slot << "] = pr;\n      S->F[" << sk_.parent_size_slot << "] = ps;\n";
      switch (d.kind) {
        case CommDecl::Kind::SPLIT:
          o << "      const int color = mk_int(-1, " << c_string(d.pointer + "/color") << ", " << call(d.color) << ");\n"
            << "      const int key = mk_int(-1, " << c_string(d.pointer + "/key") << ", " << call(d.key) << ");\n"
            << "      MPI_Comm_split(pc, color < 0 ? MPI_UNDEFINED : color, key, &nc);\n";
          break;
        case CommDecl::Kind::CART: {
          const std::size_t n = d.dims.size();
          o << "      int dims[" << n << "], periods[" << n << "];\n";
          for (std::size_t i = 0; i < n; ++i) {
            o << "      dims[" << i << "] = mk_int(-1, " << c_string(d.pointer + "/dims/" + std::to_string(i)) << ", " << call(d.dims[i]) << ");\n"
              << "      if (dims[" << i << "] < 1) mk_fail(-1, \"%s: %d is not a dimension (>= 1)\", " << at << ", dims[" << i << "]);\n"
              << "      periods[" << i << "] = " << (i < d.periods.size() && d.periods[i] ? 1 : 0) << ";\n";
          }
          o << "      MPI_Cart_create(pc, " << n << ", dims, periods, 0, &nc);\n";
          break;
        }
        case CommDecl::Kind::CART_SUB: {
          o << "      int remain[" << std::max<std::size_t>(d.remain.size(), 1) << "] = {";
          for (std::size_t i = 0; i < d.remain.size(); ++i) o << (i ? ", " : "") << (d.remain[i] ? 1 : 0);
          o << "};\n      MPI_Cart_sub(pc, remain, &nc);\n";
          break;
        }
        case CommDecl::Kind::DUP: o << "      MPI_Comm_dup(pc, &nc);\n"; break;
        case CommDecl::Kind::CREATE:
          o << "      mk_root_frame(S, pc, ps, G);\n"
            << "      const int n = mk_int(-1, " << c_string(d.pointer + "/size") << ", " << fn(d.size) << "(G));\n"
            << "      if (n < 0 || n > ps) mk_fail(-1, \"%s/size: %d members, its parent has %d\", " << at << ", n, ps);\n"
            << "      int* m = (int*)malloc(sizeof(int) * (size_t)(n + 1));\n      char* seen = (char*)calloc((size_t)ps + 1, 1);\n"
            << "      if (!m || !seen) mk_fail(-1, \"out of memory\");\n"
            << "      for (int i = 0; i < n; ++i) {\n        G[" << sk_.member_slot << "] = i;\n"
            << "        m[i] = mk_int(-1, " << c_string(d.pointer + "/members") << ", " << fn(d.members) << "(G));\n"
            << "        if (m[i] < 0 || m[i] >= ps || seen[m[i]]++) mk_fail(-1, \"%s/members: member %d: parent rank %d is not a rank of its parent or is a member twice\", "
            << at << ", i, m[i]);\n      }\n"
            << "      MPI_Group pg, ng;\n      MPI_Comm_group(pc, &pg);\n      MPI_Group_incl(pg, n, m, &ng);\n"
            << "      MPI_Comm_create(pc, ng, &nc);\n      MPI_Group_free(&ng);\n      MPI_Group_free(&pg);\n      free(m);\n      free(seen);\n";
          break;
        case CommDecl::Kind::GRAPH:
          o << "      mk_root_frame(S, pc, ps, G);\n"
            << "      const int nodes = mk_int(-1, " << c_string(d.pointer + "/nodes") << ", " << fn(d.size) << "(G));\n"
            << "      if (nodes < 1 || nodes > ps) mk_fail(-1, \"%s/nodes: %d nodes, its parent has %d ranks\", " << at << ", nodes, ps);\n"
            << "      int* index = (int*)calloc((size_t)nodes, sizeof(int));\n      int edges[1] = {0};\n"
            << "      if (!index) mk_fail(-1, \"out of memory\");\n"
            << "      MPI_Graph_create(pc, nodes, index, edges, 0, &nc); /* neighbours are the ops' peers */\n      free(index);\n";
          break;
      }
      o << "    }\n    S->comm[" << k + 1 << "] = nc;\n    int r = -1, n = 0;\n"
        << "    if (nc != MPI_COMM_NULL) {\n      MPI_Comm_rank(nc, &r);\n      MPI_Comm_size(nc, &n);\n    }\n"
        << "    S->csize[" << k + 1 << "] = n;\n    S->F[" << d.rank_slot << "] = r;\n    S->F[" << d.size_slot << "] = n;\n  }\n";
    }
    o << "}\n\n";
  }

  void emit_body(std::ostringstream& o, const Body& body, int depth) {
    for (const Block& b : body) std::visit([&](const auto& op) { emit(o, b.index, op, depth); }, b.op);
  }

  std::string head(int block) const {
    const BlockInfo& info = sk_.blocks[static_cast<std::size_t>(block)];
    std::string s = "/* " + comment(info.op) + " " + comment(info.id);
    if (!info.phase.empty()) s += " [" + comment(info.phase) + "]";
    return s + " */";
  }

  // Whether a body communicates (then its loop is annotated for the tracer).
  static bool communicates(const Body& body) {
    for (const Block& b : body) {
      const bool c = std::visit(
          [](const auto& op) -> bool {
            using T = std::decay_t<decltype(op)>;
            if constexpr (std::is_same_v<T, Loop> || std::is_same_v<T, Region>) return communicates(op.body);
            else if constexpr (std::is_same_v<T, Branch>) return communicates(op.then_body) || communicates(op.else_body);
            else return !std::is_same_v<T, Compute>;
          },
          b.op);
      if (c) return true;
    }
    return false;
  }

  void emit(std::ostringstream& o, int block, const Loop& l, int depth) {
    const std::string p = pad(depth), i = "i" + std::to_string(block), n = "n" + std::to_string(block);
    // a loop that communicates is annotated (mktrace.h): the builder then sees the skeleton's loop, and iterations
    // whose calls differ (prob branches) as branches of it
    const bool note = communicates(l.body);
    const std::string name = c_string(sk_.blocks[static_cast<std::size_t>(block)].id);
    o << p << head(block) << "\n";
    if (note) o << p << "MK_NOTE(mktrace_loop_begin, " << name << ");\n";
    o << p << "for (long long " << i << " = 0, " << n << " = mk_count(" << block << ", " << call(l.count) << "); " << i << " < " << n
      << "; ++" << i << ") {\n";
    if (note) o << p << "  MK_NOTE(mktrace_loop_iter, " << name << ");\n";
    if (l.var_slot >= 0) o << p << "  S->F[" << l.var_slot << "] = (double)" << i << ";\n";
    emit_body(o, l.body, depth + 1);
    o << p << "}\n";
    if (note) o << p << "MK_NOTE(mktrace_loop_end, " << name << ");\n";
  }

  void emit(std::ostringstream& o, int block, const Region& r, int depth) {
    const std::string p = pad(depth);
    o << p << head(block) << " /* region " << comment(r.name) << " */\n" << p << "{\n"
      << p << "  MK_NOTE(mktrace_region_begin, " << c_string(r.name) << ");\n";
    emit_body(o, r.body, depth + 1);
    o << p << "  MK_NOTE(mktrace_region_end, " << c_string(r.name) << ");\n" << p << "}\n";
  }

  void emit(std::ostringstream& o, int block, const Branch& br, int depth) {
    const std::string p = pad(depth);
    o << p << head(block) << "\n";
    if (br.condition) o << p << "if (" << call(*br.condition) << " != 0) {\n";
    else if (br.coin >= 0)
      o << p << "if (mk_coin(S, " << block << ", " << br.coin << ", " << call(br.coin_rank) << ", " << (br.even ? 1 : 0) << ") < "
        << call(br.probability) << ") {\n";
    else o << p << "if (mk_uniform(S) < " << call(br.probability) << ") {\n";
    emit_body(o, br.then_body, depth + 1);
    if (!br.else_body.empty()) {
      o << p << "} else {\n";
      emit_body(o, br.else_body, depth + 1);
    }
    o << p << "}\n";
  }

  void emit(std::ostringstream& o, int block, const Compute& c, int depth) {
    const std::string p = pad(depth);
    o << p << head(block) << "\n";
    if (!c.dist) {
      o << p << "mk_compute(S, " << block << ", " << call(c.amount) << ", " << (c.in_flops ? 1 : 0) << ");\n";
      return;
    }
    o << p << "{\n";
    const Distribution& d = *c.dist;
    std::string q = "NULL";
    if (d.type == Distribution::Type::EMPIRICAL) {
      if (d.quantiles.size() != Distribution::QUANTILES) fail(sk_.blocks[static_cast<std::size_t>(block)].id, "an empirical distribution needs 11 quantiles");
      o << p << "  static const double q[11] = {";
      for (std::size_t i = 0; i < d.quantiles.size(); ++i) o << (i ? ", " : "") << number(d.quantiles[i]);
      o << "};\n";
      q = "q";
    }
    static const char* TYPES[] = {"MK_NORMAL", "MK_LOGNORMAL", "MK_UNIFORM", "MK_EMPIRICAL"};
    o << p << "  const double amount = " << call(c.amount) << ";\n"
      << p << "  const double cv = " << (d.type == Distribution::Type::EMPIRICAL ? std::string("0.0") : call(d.cv)) << ";\n";
    if (d.same_on_ranks) {  // "draw": "same": RankRng::shared_stream of the block's k-th execution, then the rank's stream again
      o << p << "  static uint64_t draws = 0;\n"
        << p << "  const uint64_t own = S->rng;\n"
        << p << "  S->rng = mk_mix64(mk_mix64(mk_mix64(S->seed ^ 0x73616D65ULL) + (uint64_t)" << block << ") + draws++);\n"
        << p << "  const double m = mk_multiplier(S, " << block << ", " << TYPES[static_cast<int>(d.type)] << ", cv, " << q << ");\n"
        << p << "  S->rng = own;\n";
    } else {
      o << p << "  const double m = mk_multiplier(S, " << block << ", " << TYPES[static_cast<int>(d.type)] << ", cv, " << q << ");\n";
    }
    o << p << "  mk_compute(S, " << block << ", amount * m, " << (c.in_flops ? 1 : 0) << ");\n"
      << p << "}\n";
  }

  void emit(std::ostringstream& o, int block, const P2P& x, int depth) {
    const std::string p = pad(depth), c = std::to_string(x.comm);
    const bool recv = x.kind == P2PKind::RECV || x.kind == P2PKind::IRECV;
    o << p << head(block) << "\n" << p << "{\n"
      << p << "  MPI_Comm comm = mk_comm(S, " << block << ", " << c << ");\n"
      << p << "  const int peer = " << (x.any_source ? std::string("MPI_ANY_SOURCE")
                                                     : "mk_rank_in(S, " + std::to_string(block) + ", " + c + ", " + call(x.peer) + ", 1, \"peer\")")
      << ";\n"
      << p << "  const int tag = " << (x.any_tag ? std::string("MPI_ANY_TAG") : x.tag.empty() ? std::string("0") : "mk_tag(" + std::to_string(block) + ", " + call(x.tag) + ")")
      << ";\n"
      << p << "  const int n = mk_bytes(" << block << ", " << call(x.size_bytes) << ");\n";
    switch (x.kind) {
      case P2PKind::SEND: o << p << "  MPI_Send(MK_SBUF((size_t)n), n, MPI_BYTE, peer, tag, comm);\n"; break;
      case P2PKind::RECV: o << p << "  MPI_Recv(MK_RBUF((size_t)n), n, MPI_BYTE, peer, tag, comm, MPI_STATUS_IGNORE);\n"; break;
      case P2PKind::ISEND:
      case P2PKind::IRECV:
        o << p << "  char* buf = " << (recv ? "MK_RBUF" : "MK_SBUF") << "((size_t)n);\n"
          << p << "  " << (recv ? "MPI_Irecv" : "MPI_Isend") << "(buf, n, MPI_BYTE, peer, tag, comm, mk_post(S, " << x.request << "));\n";
        break;
    }
    o << p << "  S->site = " << block << ";\n" << p << "}\n";
  }

  void emit(std::ostringstream& o, int block, const Wait& w, int depth) {
    o << pad(depth) << head(block) << "\n" << pad(depth) << "mk_wait(S, " << w.request << ");\n" << pad(depth) << "S->site = " << block << ";\n";
  }

  void emit(std::ostringstream& o, int block, const WaitAll&, int depth) {
    o << pad(depth) << head(block) << "\n" << pad(depth) << "mk_waitall(S);\n" << pad(depth) << "S->site = " << block << ";\n";
  }

  void emit(std::ostringstream& o, int block, const Collective& x, int depth) {
    const std::string p = pad(depth), c = std::to_string(x.comm), b = std::to_string(block);
    o << p << head(block) << "\n" << p << "{\n" << p << "  MPI_Comm comm = mk_comm(S, " << b << ", " << c << ");\n"
      << p << "  const size_t np = (size_t)S->csize[" << c << "];\n  (void)np;\n";
    if (x.kind != CollectiveKind::BARRIER)
      o << p << "  const int n = " << (x.size_bytes.empty() ? std::string("0") : "mk_bytes(" + b + ", " + call(x.size_bytes) + ")") << ";\n";
    if (is_rooted(x.kind))
      o << p << "  const int root = " << (x.root.empty() ? std::string("0") : "mk_rank_in(S, " + b + ", " + c + ", " + call(x.root) + ", 0, \"root\")") << ";\n";
    switch (x.kind) {
      case CollectiveKind::BARRIER: o << p << "  MPI_Barrier(comm);\n"; break;
      case CollectiveKind::BCAST: o << p << "  MPI_Bcast(MK_SBUF((size_t)n), n, MPI_BYTE, root, comm);\n"; break;
      case CollectiveKind::REDUCE:
        o << p << "  MPI_Reduce(MK_SBUF((size_t)n), MK_RBUF((size_t)n), n, MPI_BYTE, MPI_BOR, root, comm);\n";
        break;
      case CollectiveKind::ALLREDUCE:
        o << p << "  MPI_Allreduce(MK_SBUF((size_t)n), MK_RBUF((size_t)n), n, MPI_BYTE, MPI_BOR, comm);\n";
        break;
      case CollectiveKind::GATHER:
        o << p << "  MPI_Gather(MK_SBUF((size_t)n), n, MPI_BYTE, MK_RBUF((size_t)n * np), n, MPI_BYTE, root, comm);\n";
        break;
      case CollectiveKind::SCATTER:
        o << p << "  MPI_Scatter(MK_SBUF((size_t)n * np), n, MPI_BYTE, MK_RBUF((size_t)n), n, MPI_BYTE, root, comm);\n";
        break;
      case CollectiveKind::ALLGATHER:
        o << p << "  MPI_Allgather(MK_SBUF((size_t)n), n, MPI_BYTE, MK_RBUF((size_t)n * np), n, MPI_BYTE, comm);\n";
        break;
      case CollectiveKind::ALLTOALL:
        o << p << "  MPI_Alltoall(MK_SBUF((size_t)n * np), n, MPI_BYTE, MK_RBUF((size_t)n * np), n, MPI_BYTE, comm);\n";
        break;
    }
    o << p << "  S->site = " << block << ";\n" << p << "}\n";
  }

  void emit_main(std::ostringstream& o) {
    o << "static void mk_usage(FILE* f, const char* prog) {\n  fprintf(f, \"usage: %s [NAME=VALUE ...] [--seed=S] [--flops-rate=R] [--timing]\\n\"\n"
         "             \"the program of skeleton %s; parameters:";
    for (const auto& p : sk_.params) o << " " << p.name << (p.default_value ? "=" + plain(*p.default_value) : std::string(" (required)"));
    if (sk_.params.empty()) o << " none";
    o << "\\n\", prog, MK_FILE);\n}\n\n";
    o << "static const char* const MK_PARAM_NAME[] = {";
    for (std::size_t i = 0; i < sk_.params.size(); ++i) o << (i ? ", " : "") << c_string(sk_.params[i].name);
    if (sk_.params.empty()) o << "\"\"";
    o << "};\nstatic const int MK_PARAM_SLOT[] = {";
    for (std::size_t i = 0; i < sk_.params.size(); ++i) o << (i ? ", " : "") << sk_.symbols.find(sk_.params[i].name);
    if (sk_.params.empty()) o << "0";
    o << "};\nstatic const int MK_PARAM_HAS_DEFAULT[] = {";
    for (std::size_t i = 0; i < sk_.params.size(); ++i) o << (i ? ", " : "") << (sk_.params[i].default_value ? 1 : 0);
    if (sk_.params.empty()) o << "0";
    o << "};\nstatic const double MK_PARAM_DEFAULT[] = {";
    for (std::size_t i = 0; i < sk_.params.size(); ++i) o << (i ? ", " : "") << number(sk_.params[i].default_value.value_or(0));
    if (sk_.params.empty()) o << "0";
    o << "};\n#define MK_NPARAMS " << sk_.params.size() << "\n\n";
    bool flops = false;
    // does any compute block count flops? (then a real run needs a rate)
    for (std::size_t g = 0; g < sk_.groups.size(); ++g) flops = flops || uses_flops(sk_.groups[g].body);
    o << R"MAIN(/* NAME=VALUE arguments: 0 when good; otherwise a message on rank 0 */
static int mk_args(mk_state* S, int argc, char** argv, int* timing) {
  int given[MK_NPARAMS + 1] = {0};
  for (int a = 1; a < argc; ++a) {
    const char* s = argv[a];
    char* end = NULL;
    if (strncmp(s, "--seed=", 7) == 0) {
      S->seed = strtoull(s + 7, &end, 10);
      if (end == s + 7 || *end) goto bad;
      continue;
    }
    if (strncmp(s, "--flops-rate=", 13) == 0) {
      S->flop_rate = strtod(s + 13, &end);
      if (end == s + 13 || *end || !(S->flop_rate > 0)) goto bad;
      continue;
    }
    if (strcmp(s, "--timing") == 0) { *timing = 1; continue; }
    if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) { if (S->rank == 0) mk_usage(stdout, argv[0]); return 1; }
    const char* eq = strchr(s, '=');
    int k = -1;
    for (int i = 0; eq && i < MK_NPARAMS; ++i)
      if (strlen(MK_PARAM_NAME[i]) == (size_t)(eq - s) && strncmp(MK_PARAM_NAME[i], s, (size_t)(eq - s)) == 0) k = i;
    if (k < 0) {
      if (S->rank == 0) { fprintf(stderr, "%s: unknown argument \"%s\"\n", argv[0], s); mk_usage(stderr, argv[0]); }
      return 2;
    }
    S->F[MK_PARAM_SLOT[k]] = strtod(eq + 1, &end);
    if (end == eq + 1 || *end) goto bad;
    given[k] = 1;
    continue;
  bad:
    if (S->rank == 0) fprintf(stderr, "%s: \"%s\": not a number\n", argv[0], s);
    return 2;
  }
  for (int i = 0; i < MK_NPARAMS; ++i) {
    if (given[i]) continue;
    if (!MK_PARAM_HAS_DEFAULT[i]) {
      if (S->rank == 0) fprintf(stderr, "%s: parameter \"%s\" has no default: give %s=VALUE\n", argv[0], MK_PARAM_NAME[i], MK_PARAM_NAME[i]);
      return 2;
    }
    S->F[MK_PARAM_SLOT[i]] = MK_PARAM_DEFAULT[i];
  }
  return 0;
}

int main(int argc, char** argv) {
  mk_state* S = (mk_state*)calloc(1, sizeof(mk_state));
  if (!S) return 2;
  int timing = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &S->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &S->P);
  mk_S = S;
  S->seed = 1;
  const int rc = mk_args(S, argc, argv, &timing);
  if (rc != 0) {
    MPI_Finalize();
    return rc == 1 ? 0 : 2;
  }
  S->F[0] = S->P;
  S->F[1] = S->rank;
  S->rng = S->seed * 0x9E3779B97F4A7C15ULL + (uint64_t)S->rank + 1;
  S->coin_reads = (uint64_t*)calloc((size_t)MK_NCOINS * (size_t)S->P + 1, sizeof(uint64_t));
  for (int k = 0; k <= MK_NREQ; ++k) S->named[k] = -1;
)MAIN";
    if (flops)
      o << "#ifndef SMPI_H\n  if (S->flop_rate <= 0) S->flop_rate = mk_measure_rate(); /* or --flops-rate=R */\n#endif\n";
    else
      o << "  (void)mk_measure_rate;\n";
    o << "  mk_early(S->F);\n  mk_make_comms(S);\n  mk_late(S->F);\n  const double t0 = MPI_Wtime();\n";
    for (std::size_t g = 0; g < sk_.groups.size(); ++g)
      o << "  " << (g ? "else if" : "if") << " (" << call(sk_.groups[g].ranks) << " != 0) mk_group_" << g << "(S);\n";
    o << "  else mk_fail(-1, \"/programs: no rank group matches rank %d at P=%d\", S->rank, S->P);\n"
         "  if (S->npend > 0) mk_fail(-1, \"%d request(s) never waited for\", S->npend);\n"
         "  const double t1 = MPI_Wtime();\n"
         "  if (timing) printf(\"mkskel-emit: rank %d start %.9f end %.9f\\n\", S->rank, t0, t1);\n"
         "  for (int i = 0; i < S->nretired; ++i) free(S->retired[i]);\n"
         "  for (int k = MK_NCOMMS - 1; k > 0; --k)\n    if (S->comm[k] != MPI_COMM_NULL) MPI_Comm_free(&S->comm[k]);\n"
         "  free(S->retired);\n  free(S->sbuf);\n  free(S->rbuf);\n  free(S->pend);\n  free(S->coin_reads);\n  mk_S = NULL;\n  free(S);\n"
         "  MPI_Finalize();\n  return 0;\n}\n";
  }

  static bool uses_flops(const Body& body) {
    for (const Block& b : body) {
      bool f = false;
      std::visit([&](const auto& op) {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, Compute>) f = op.in_flops;
        else if constexpr (std::is_same_v<T, Loop> || std::is_same_v<T, Region>) f = uses_flops(op.body);
        else if constexpr (std::is_same_v<T, Branch>) f = uses_flops(op.then_body) || uses_flops(op.else_body);
      }, b.op);
      if (f) return true;
    }
    return false;
  }

  const Skeleton& sk_;
  std::set<int> comm_slots_, late_slots_;
  std::ostringstream exprs_;
  int nexpr_ = 0;
};

}  // namespace

std::string emit_c(const Skeleton& skeleton) { return Emitter(skeleton).run(); }

}  // namespace mksim::skeletons
