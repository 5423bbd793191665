/* Start-up, compute kernel and report shared by the acceptance corpus (README.md): every program reads its
 * parameters the same way, burns its known flop count the same way, and prints the same fields.
 *
 * Compute: each program declares the flops of its kernels (a count per grid point, per element, ...) and
 * calls corpus_work(flops). Under SMPI (smpicc's mpi.h defines SMPI_H) that is smpi_execute_flops(flops), so
 * SMPI's simulated time includes it and `smpirun -trace-ti` writes it as a `compute` line; under OpenMPI it is
 * a loop of exactly that many floating-point operations (four independent multiply-add chains, no memory
 * traffic), so a rank's CPU time in it is flops / this machine's rate for that loop (corpus_rate measures it).
 * The light real update of each program's data (which makes its result) is separate and small. */
#ifndef MKSIM_CORPUS_H
#define MKSIM_CORPUS_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SMPI_H
#define CORPUS_SMPI 1
#else
#define CORPUS_SMPI 0
#endif

/* What one rank accumulates: its MPI communication calls and the flops it declared. */
typedef struct {
    int P, rank;
    long calls;   /* point-to-point posts (send, recv, isend, irecv, sendrecv) and collectives, waits excluded */
    double flops; /* sum of corpus_work arguments */
    double sink;  /* the calibrated loop's result, kept so the loop is not optimised away */
    double t_arrive; /* MPI_Wtime when corpus_start was called (communicators and data set up) */
    double t0;       /* MPI_Wtime after corpus_start's barrier */
} corpus_t;

/* MPI_Init, P and rank, then the positional parameters: argv[1..n] override defaults[0..n-1] (all integers
 * >= 1). Returns 0 after printing the usage line (rank 0) and finalizing when there are too many arguments or
 * one is not a positive integer; the caller exits with 2. */
static inline int corpus_init(int *argc, char ***argv, corpus_t *c, const char *usage, int n, long *values)
{
    MPI_Init(argc, argv);
    memset(c, 0, sizeof *c);
    MPI_Comm_size(MPI_COMM_WORLD, &c->P);
    MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
    int ok = *argc - 1 <= n;
    for (int i = 1; ok && i < *argc; ++i) {
        char *end = NULL;
        long v = strtol((*argv)[i], &end, 10);
        if (end == (*argv)[i] || *end != '\0' || v < 1) ok = 0;
        else values[i - 1] = v;
    }
    if (!ok) {
        if (c->rank == 0) fprintf(stderr, "usage: %s\n", usage);
        MPI_Finalize();
    }
    return ok;
}

/* A precondition on P and the parameters that every rank evaluates alike: when it fails, rank 0 says why,
 * MPI is finalized and 0 is returned (the caller exits with 2). */
static inline int corpus_require(const corpus_t *c, int cond, const char *why)
{
    if (cond) return 1;
    if (c->rank == 0) fprintf(stderr, "error: %s (P=%d)\n", why, c->P);
    MPI_Finalize();
    return 0;
}

/* flops floating-point operations of work: simulated under SMPI, executed under OpenMPI. */
static inline void corpus_work(corpus_t *c, double flops)
{
    if (flops <= 0) return;
    c->flops += flops;
#if CORPUS_SMPI
    /* benched: with smpi/simulate-computation:yes SMPI measures the CPU time between MPI calls; a plain
     * smpi_execute_flops inside such a burst would count the CPU of every rank that runs meanwhile */
    smpi_execute_flops_benched(flops);
#else
    /* 8 flops per iteration: four independent chains, each a multiply and an add (no FMA contraction at -O2
     * without -march, so the count is exact); the chains converge to 1 and stay finite. */
    double a0 = 1.0 + c->sink * 1e-300, a1 = 0.5, a2 = 0.25, a3 = 0.125;
    const double m = 0.999999, b = 1e-6;
    long iters = (long)(flops / 8.0 + 0.5);
    for (long i = 0; i < iters; ++i) {
        a0 = a0 * m + b;
        a1 = a1 * m + b;
        a2 = a2 * m + b;
        a3 = a3 * m + b;
    }
    c->sink = a0 + a1 + a2 + a3;
#endif
}

/* The start of the timed part: a barrier (as NPB's timers start), then t0. */
static inline void corpus_start(corpus_t *c)
{
    c->t_arrive = MPI_Wtime();
    MPI_Barrier(MPI_COMM_WORLD);
    ++c->calls;
    c->t0 = MPI_Wtime();
}

/* Collective. Rank 0 prints `result:` (the program's checksum, the same at every run of the same P and
 * parameters), `mpi_calls:` (summed over ranks), `flops:` (declared, summed over ranks), `time:` (the span
 * from the earliest t0 to the latest end of the timed part, i.e. SMPI's simulated time of it) and `start:`
 * (the latest arrival at corpus_start: under SMPI, the simulated time spent before the timed part, in
 * MPI_Init and in making communicators, which bench/corpus.py subtracts; OpenMPI 4's MPI_Wtime counts from
 * its first call on each rank, so it prints 0 there). */
static inline void corpus_report(const corpus_t *c, double result)
{
    double t1 = MPI_Wtime(), tmin = 0.0, tmax = 0.0, start = 0.0, flops = 0.0;
    long calls = 0;
    MPI_Reduce(&c->calls, &calls, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&c->flops, &flops, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&c->t0, &tmin, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&t1, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&c->t_arrive, &start, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (c->rank == 0) {
        printf("result: %.12e\n", result);
        printf("mpi_calls: %ld\n", calls);
        printf("flops: %.0f\n", flops);
        printf("time: %.9g\n", tmax - tmin);
        printf("start: %.9g\n", start);
    }
}

/* Whether n is a power of two. */
static inline int corpus_is_pow2(int n) { return n > 0 && (n & (n - 1)) == 0; }

static inline void *corpus_alloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size);
    if (!p) {
        fprintf(stderr, "out of memory (%zu x %zu bytes)\n", count, size);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    return p;
}

#endif
