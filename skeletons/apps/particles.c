/* particles: a particle code with data-dependent migration, the reference program of the skeleton builder's
 * iteration-varying folding (issue 17). Not annotated: the builder sees only its MPI calls.
 *
 * N particles in the periodic unit square, on a Px x Py grid of ranks (Px = 2^floor(log2(P)/2), Py = P/Px,
 * rank = y * Px + x, as atm2d). Rank (x, y) owns [x/Px, (x+1)/Px) x [y/Py, (y+1)/Py) and starts with N/P
 * particles spread uniformly in it. Each of S steps:
 *   1. every particle moves by a displacement uniform in [-d, d]^2 (d = 2e-3; a per-rank seeded generator);
 *   2. migration, one dimension after the other (x, then y; a dimension with one rank is skipped, as
 *      LAMMPS skips its swaps with itself): the particles that left through each face are counted; the
 *      counts are exchanged with both neighbours (two MPI_Sendrecv of 8 bytes, tags 1 and 2); then each
 *      non-empty batch is sent (MPI_Isend, 16 bytes per particle, tag 3 down, 6 up) and each announced one
 *      received (MPI_Recv), then MPI_Waitall. Whether a rank sends, and how much, depends on where its
 *      particles happen to be: with lambda = N d Px / (4 P) leavers expected per face and step, a face sends
 *      in 1 - exp(-lambda) of the steps;
 *   3. halo: the particles within c = 0.02 of each face go to that neighbour (MPI_Sendrecv, tags 4 and 5,
 *      16 bytes per particle, empty messages included): about N c Px / P or N c Py / P per face, i.e.
 *      N / sqrt(P) for a square grid;
 *   4. compute: WORK flops per owned and per ghost particle;
 *   5. every 10 steps, MPI_Allreduce of the particle count (8 bytes), which must stay N.
 * prints on rank 0: result: <particles>, mpi_calls: <MPI calls of all ranks in the steps>, time: <s>, and
 * sends: <messages sent by all ranks>, bytes: <bytes sent by all ranks>, migrations: <migration messages>.
 *
 * usage: particles N S [seed]   (P a power of two, N a multiple of P)
 */
#include "app_common.h"

#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STEP_D 2e-3
#define HALO_C 0.02
#define WORK 400

typedef struct {
    double x, y;
} particle;

typedef struct {
    particle *p;
    long n, cap;
} batch;

static void push(batch *b, particle q)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 64;
        b->p = realloc(b->p, (size_t)b->cap * sizeof(particle));
        if (!b->p) {
            fprintf(stderr, "particles: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    b->p[b->n++] = q;
}

static uint64_t state;
static double uniform(void) /* xorshift64*, [0, 1) */
{
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return (double)((state * 0x2545F4914F6CDD1DULL) >> 11) * (1.0 / 9007199254740992.0);
}

static double wrap(double v) { return v - floor(v); }

static long calls, sends, sent_bytes, migrations;

/* The particles of `own` that lie outside [lo, hi) along dimension `dim` leave to the neighbour below (lo side)
 * or above (hi side); the batches announced by the neighbours come in. */
static void migrate(batch *own, int dim, double lo, double hi, int below, int above)
{
    batch out[2] = {{0}, {0}}, keep = {0};
    for (long i = 0; i < own->n; ++i) {
        const double v = dim == 0 ? own->p[i].x : own->p[i].y;
        /* distance out of the slab, on the periodic circle: < 0.5 either way */
        double under = wrap(lo - v), over = wrap(v - hi);
        if (v >= lo && v < hi) push(&keep, own->p[i]);
        else if (under < over) push(&out[0], own->p[i]);
        else push(&out[1], own->p[i]);
    }
    long n_out[2] = {out[0].n, out[1].n}, n_in[2] = {0, 0};
    /* counts: to below, from above (tag 1); to above, from below (tag 2) */
    MPI_Sendrecv(&n_out[0], 1, MPI_LONG, below, 1, &n_in[1], 1, MPI_LONG, above, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&n_out[1], 1, MPI_LONG, above, 2, &n_in[0], 1, MPI_LONG, below, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    calls += 2;
    sends += 2;
    sent_bytes += 2 * (long)sizeof(long);
    MPI_Request req[2];
    int nreq = 0;
    const int to[2] = {below, above};
    for (int s = 0; s < 2; ++s)
        if (n_out[s] > 0) {
            MPI_Isend(out[s].p, (int)(2 * n_out[s]), MPI_DOUBLE, to[s], 3 + 3 * s, MPI_COMM_WORLD, &req[nreq++]);
            ++calls;
            ++sends;
            ++migrations;
            sent_bytes += n_out[s] * (long)sizeof(particle);
        }
    for (int s = 0; s < 2; ++s)
        if (n_in[s] > 0) {
            batch in = {0};
            in.cap = n_in[s];
            in.p = malloc((size_t)n_in[s] * sizeof(particle));
            /* from below come the particles that moved up (tag 6), from above those that moved down (tag 3): with
             * two ranks along the dimension both neighbours are one rank, and the tags keep the batches apart */
            MPI_Recv(in.p, (int)(2 * n_in[s]), MPI_DOUBLE, to[s], s == 0 ? 6 : 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            ++calls;
            for (long i = 0; i < n_in[s]; ++i) push(&keep, in.p[i]);
            free(in.p);
        }
    if (nreq) {
        MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
        ++calls;
    }
    free(out[0].p);
    free(out[1].p);
    free(own->p);
    *own = keep;
}

/* The ghosts: owned particles within HALO_C of the lo and hi faces along `dim` go to those neighbours. */
static long halo(const batch *own, int dim, double lo, double hi, int below, int above, batch *ghosts)
{
    batch out[2] = {{0}, {0}};
    for (long i = 0; i < own->n; ++i) {
        const double v = dim == 0 ? own->p[i].x : own->p[i].y;
        if (v - lo < HALO_C) push(&out[0], own->p[i]);
        if (hi - v < HALO_C) push(&out[1], own->p[i]);
    }
    const long cap = 2 * own->n + 1024; /* a neighbour's halo is a fraction of its particles, about as many as ours */
    particle *in = malloc((size_t)cap * sizeof(particle));
    long got = 0;
    const int to[2] = {below, above}, from[2] = {above, below};
    for (int s = 0; s < 2; ++s) {
        MPI_Status st;
        int count = 0;
        MPI_Sendrecv(out[s].p, (int)(2 * out[s].n), MPI_DOUBLE, to[s], 4 + s, in, (int)(2 * cap), MPI_DOUBLE, from[s], 4 + s,
                     MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_DOUBLE, &count);
        ++calls;
        ++sends;
        sent_bytes += out[s].n * (long)sizeof(particle);
        for (long i = 0; i < count / 2; ++i) push(ghosts, in[i]);
        got += count / 2;
    }
    free(in);
    free(out[0].p);
    free(out[1].p);
    return got;
}

static volatile double sink;
static void work(long items) /* WORK flops per item */
{
    double a = 1.0, b = 1.0000001;
    for (long i = 0; i < items * (WORK / 2); ++i) a = a * b + 1e-9;
    sink = a;
}

int main(int argc, char **argv)
{
    int P, rank;
    if (!app_init(&argc, &argv, 2, 3, "particles N S [seed]", &P, &rank)) return 2;
    const long N = atol(argv[1]), S = atol(argv[2]);
    const uint64_t seed = argc > 3 ? (uint64_t)strtoull(argv[3], NULL, 10) : 1;
    if ((P & (P - 1)) != 0 || N <= 0 || N % P != 0 || S < 0) {
        if (rank == 0) fprintf(stderr, "particles: need P a power of two, N > 0 a multiple of P, S >= 0\n");
        MPI_Finalize();
        return 2;
    }
    int Px = 1;
    while (Px * Px * 4 <= P) Px *= 2;
    const int Py = P / Px, x = rank % Px, y = rank / Px;
    const int east = y * Px + (x + 1) % Px, west = y * Px + (x + Px - 1) % Px;
    const int north = ((y + 1) % Py) * Px + x, south = ((y + Py - 1) % Py) * Px + x;
    const double x0 = (double)x / Px, x1 = (double)(x + 1) / Px, y0 = (double)y / Py, y1 = (double)(y + 1) / Py;
    state = 0x9E3779B97F4A7C15ULL ^ (seed * 0x100000001B3ULL) ^ ((uint64_t)(rank + 1) << 32);
    for (int i = 0; i < 8; ++i) (void)uniform();
    batch own = {0};
    for (long i = 0; i < N / P; ++i) {
        particle q = {x0 + (x1 - x0) * uniform(), y0 + (y1 - y0) * uniform()};
        push(&own, q);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    long total = N;
    for (long step = 0; step < S; ++step) {
        for (long i = 0; i < own.n; ++i) {
            own.p[i].x = wrap(own.p[i].x + STEP_D * (2 * uniform() - 1));
            own.p[i].y = wrap(own.p[i].y + STEP_D * (2 * uniform() - 1));
        }
        if (Px > 1) migrate(&own, 0, x0, x1, west, east);
        if (Py > 1) migrate(&own, 1, y0, y1, south, north);
        batch ghosts = {0};
        long g = 0;
        if (Px > 1) g += halo(&own, 0, x0, x1, west, east, &ghosts);
        if (Py > 1) g += halo(&own, 1, y0, y1, south, north, &ghosts);
        work(own.n + g);
        free(ghosts.p);
        if ((step + 1) % 10 == 0) {
            long n = own.n;
            MPI_Allreduce(&n, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
            ++calls;
            if (total != N) {
                fprintf(stderr, "particles: rank %d: %ld particles in all, not %ld\n", rank, total, N);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
    }
    const double t1 = MPI_Wtime();
    long all_sends = 0, all_bytes = 0, all_migrations = 0;
    MPI_Reduce(&sends, &all_sends, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&sent_bytes, &all_bytes, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&migrations, &all_migrations, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("result: %ld\nsends: %ld\nbytes: %ld\nmigrations: %ld\n", total, all_sends, all_bytes, all_migrations);
    app_report(calls, t0, t1, rank);
    free(own.p);
    MPI_Finalize();
    return 0;
}
