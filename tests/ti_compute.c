/* SMPI program for the TI compute path (tests/skelbuild_ti_test.cpp): `steps` iterations of explicit computation
 * (smpi_execute_flops: 1000 * N / P flops on every rank) and a ring exchange of 8 bytes; its
 * TI traces carry the computation as `compute` lines, which the skeleton must keep as flops.
 * usage: ti_compute N STEPS */
#include <mpi.h>
#include <smpi/smpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    const double N = argc > 1 ? atof(argv[1]) : 1000;
    const int steps = argc > 2 ? atoi(argv[2]) : 3;
    double a = r, b = 0;
    for (int s = 0; s < steps; ++s) {
        smpi_execute_flops(1000.0 * N / P);
        MPI_Sendrecv(&a, 1, MPI_DOUBLE, (r + 1) % P, 1, &b, 1, MPI_DOUBLE, (r + P - 1) % P, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
