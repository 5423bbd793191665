/* Start-up and reporting shared by the reference programs, so that every program prints the same
 * fields the tests read (mpi_calls, time) in the same way. */
#ifndef MKSIM_APP_COMMON_H
#define MKSIM_APP_COMMON_H

#include <mpi.h>
#include <stdio.h>

/* MPI_Init, then P and rank. With fewer than min_args or more than max_args arguments, rank 0 prints
 * the usage line, MPI is finalized and 0 is returned (the caller exits with 2); otherwise 1. */
static int app_init(int *argc, char ***argv, int min_args, int max_args, const char *usage, int *P, int *rank)
{
    MPI_Init(argc, argv);
    MPI_Comm_size(MPI_COMM_WORLD, P);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    if (*argc - 1 < min_args || *argc - 1 > max_args) {
        if (*rank == 0) fprintf(stderr, "usage: %s\n", usage);
        MPI_Finalize();
        return 0;
    }
    return 1;
}

/* Collective. Rank 0 prints "mpi_calls: <calls summed over ranks>" and "time: <max t1 - min t0>", the
 * span of the part the skeleton models (simulated time under SMPI). */
static void app_report(long calls, double t0, double t1, int rank)
{
    long total = 0;
    double tmin = 0.0, tmax = 0.0;
    MPI_Reduce(&calls, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&t0, &tmin, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&t1, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("mpi_calls: %ld\n", total);
        printf("time: %.9g\n", tmax - tmin);
    }
}

/* The work of one execution of a compute block of the program's skeleton, in flops (the skeleton's `flops`).
 * In the normal builds this does nothing: the program's own computation is its work. In an SMPI build made with
 * -DMKSIM_SMPI_WORK (tests/CMakeLists.txt builds them to check `mksim diagnose` against SMPI, which runs with
 * smpi/simulate-computation:no), the rank computes `flops` on its simulated host, so that the program's simulated
 * time has the skeleton's computation. A test can scale a block's work through the environment:
 * MKSIM_WORK_SCALE="BLOCK:RANK:FACTOR[;...]" (RANK * for every rank), e.g. "physics:5:3" (rank 5 does 3x its
 * physics: an injected imbalance) or "physics:*:1.125" (every rank the mean of that: the balanced program). */
#ifdef MKSIM_SMPI_WORK
#include <smpi/smpi.h>
#include <stdlib.h>
#include <string.h>
static inline void app_work(const char *block, int rank, double flops)
{
    double factor = 1.0;
    const char *spec = getenv("MKSIM_WORK_SCALE");
    size_t len = strlen(block);
    while (spec && *spec) {
        /* one entry: BLOCK:RANK:FACTOR */
        const char *colon = strchr(spec, ':');
        if (!colon) break;
        if ((size_t)(colon - spec) == len && strncmp(spec, block, len) == 0) {
            const char *r = colon + 1;
            int all = *r == '*';
            char *end = NULL;
            long who = all ? -1 : strtol(r, &end, 10);
            const char *f = strchr(r, ':');
            if (f && (all || who == rank)) factor = strtod(f + 1, NULL);
        }
        spec = strchr(spec, ';');
        if (spec) ++spec;
    }
    if (flops * factor > 0) smpi_execute_flops(flops * factor);
}
#else
static inline void app_work(const char *block, int rank, double flops)
{
    (void)block;
    (void)rank;
    (void)flops;
}
#endif

#endif
