/* The skeletons of tests/data/diagnose written as MPI programs, for SimGrid's SMPI: the independent check of
 * the gains `mksim diagnose` predicts (tests/diagnose_test.cpp). Built twice with smpicc (tests/CMakeLists.txt):
 * as is, with the injected problem, and with -DMKSIM_FIXED, the program with the fix the diagnosis proposes written
 * in C. Compute is simulated: `t` seconds are smpi_execute_flops(t * this host's speed), run with
 * smpi/simulate-computation:no (the program's own instructions take no simulated time).
 *
 *   diagnose_smpi_app imbalance        P = 8: ring halo (4 KiB both ways) then compute; rank 3 computes 3x
 *                                      fixed: every rank computes the mean, (P - 1 + 3) / P
 *   diagnose_smpi_app tiny [K]         256 iterations of 8 bytes around a ring and 20 us of compute
 *                                      fixed: 256 / K iterations of 8 K bytes and 20 K us (the loop aggregated)
 *   diagnose_smpi_app late_sender      ring shift of 1 KiB; rank 0 computes 0.5 ms before it sends
 *                                      fixed: without that work
 *   diagnose_smpi_app late_receiver    P = 4: rank 0 sends 1 MiB (rendezvous) to rank 1, which computes 30 ms first
 *                                      fixed: without that work
 *   diagnose_smpi_app collective_wait  rank 3 computes 2 ms more before the allreduce every rank waits in
 *                                      fixed: without that work
 *
 * Each is 20 steps (tiny: one loop) with the skeleton's parameters, tags, peers and order of calls; rank 0 prints
 * mpi_calls and time (skeletons/apps/app_common.h). */
#include "../skeletons/apps/app_common.h"

#include <mpi.h>
#include <simgrid/host.h>
#include <smpi/smpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void compute(double seconds)
{
    if (seconds > 0) smpi_execute_flops(seconds * sg_host_get_speed(sg_host_self()));
}

#ifdef MKSIM_FIXED
static const int fixed = 1;
#else
static const int fixed = 0;
#endif

int main(int argc, char **argv)
{
    int P, rank;
    if (!app_init(&argc, &argv, 1, 2, "diagnose_smpi_app imbalance|tiny [K]|late_sender|late_receiver|collective_wait", &P, &rank))
        return 2;
    const char *which = argv[1];
    const int steps = 20, left = (rank + P - 1) % P, right = (rank + 1) % P;
    static char sbuf[2][1 << 20], rbuf[2][1 << 20];
    MPI_Request req[4];
    long calls = 0;
    double t0 = MPI_Wtime();
    if (strcmp(which, "imbalance") == 0) {
        const int hot = 3, bytes = 4096;
        const double t_work = 1e-3, extra = 3;
        for (int s = 0; s < steps; ++s) {
            MPI_Irecv(rbuf[0], bytes, MPI_BYTE, left, 1, MPI_COMM_WORLD, &req[0]);
            MPI_Irecv(rbuf[1], bytes, MPI_BYTE, right, 2, MPI_COMM_WORLD, &req[1]);
            MPI_Isend(sbuf[0], bytes, MPI_BYTE, right, 1, MPI_COMM_WORLD, &req[2]);
            MPI_Isend(sbuf[1], bytes, MPI_BYTE, left, 2, MPI_COMM_WORLD, &req[3]);
            MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
            calls += 4;
            compute(fixed ? t_work * (P - 1 + extra) / P : t_work * (rank == hot ? extra : 1));
        }
    } else if (strcmp(which, "tiny") == 0) {
        const int iters = 256, bytes = 8;
        const double t_iter = 2e-5, t_main = 0.01;
        const int k = fixed ? (argc > 2 ? atoi(argv[2]) : 1) : 1;
        if (k < 1 || iters % k != 0 || bytes * k > (1 << 20)) {
            if (rank == 0) fprintf(stderr, "diagnose_smpi_app tiny: K must divide %d\n", iters);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        compute(t_main);
        for (int i = 0; i < iters / k; ++i) {
            MPI_Irecv(rbuf[0], bytes * k, MPI_BYTE, left, 1, MPI_COMM_WORLD, &req[0]);
            MPI_Isend(sbuf[0], bytes * k, MPI_BYTE, right, 1, MPI_COMM_WORLD, &req[1]);
            MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
            calls += 2;
            compute(t_iter * k);
        }
    } else if (strcmp(which, "late_sender") == 0) {
        const int bytes = 1024;
        const double t_work = 1e-3, t_late = 5e-4;
        for (int s = 0; s < steps; ++s) {
            if (rank == 0 && !fixed) compute(t_late);
            MPI_Irecv(rbuf[0], bytes, MPI_BYTE, left, 1, MPI_COMM_WORLD, &req[0]);
            MPI_Isend(sbuf[0], bytes, MPI_BYTE, right, 1, MPI_COMM_WORLD, &req[1]);
            MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
            calls += 2;
            compute(t_work);
        }
    } else if (strcmp(which, "late_receiver") == 0) {
        const int bytes = 1 << 20;
        const double t_work = 1e-3, t_late = 0.03;
        for (int s = 0; s < steps; ++s) {
            compute(t_work);
            if (rank == 0) {
                MPI_Send(sbuf[0], bytes, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
                ++calls;
            }
            if (rank == 1) {
                if (!fixed) compute(t_late);
                MPI_Recv(rbuf[0], bytes, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                ++calls;
            }
            MPI_Barrier(MPI_COMM_WORLD);
            ++calls;
        }
    } else if (strcmp(which, "collective_wait") == 0) {
        const int late = 3;
        const double t_work = 1e-3, t_late = 2e-3;
        double x = rank, sum = 0;
        for (int s = 0; s < steps; ++s) {
            compute(t_work);
            if (rank == late && !fixed) compute(t_late);
            MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* 8 bytes */
            ++calls;
        }
    } else {
        if (rank == 0) fprintf(stderr, "diagnose_smpi_app: unknown case '%s'\n", which);
        MPI_Finalize();
        return 2;
    }
    double t1 = MPI_Wtime();
    app_report(calls, t0, t1, rank);
    MPI_Finalize();
    return 0;
}
