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

#endif
