/* pge1: the real MPI program that skeletons/examples/pge1.json models (seed 000 s.5.1).
 *
 * Solves M independent tridiagonal systems of N equations by one-way pipelined Gaussian elimination
 * (the Thomas algorithm split over a chain of ranks). The N columns are split in contiguous blocks
 * (rank r owns columns floor(r N / P) .. floor((r+1) N / P) - 1); the systems go through the pipeline
 * in nb = ceil(M / K) blocks of K systems (the last block may be smaller).
 *   forward (tag 1): for each block, rank > 0 receives from rank-1 the last eliminated row (modified
 *     super-diagonal c' and right-hand side d': 2 doubles per system), eliminates its columns, and
 *     rank < P-1 sends its last row to rank+1 (blocking MPI_Recv / MPI_Send);
 *   backward (tag 2): for each block, rank < P-1 receives from rank+1 the first unknown of its segment
 *     (1 double per system), substitutes its columns, and rank > 0 sends its first unknown to rank-1.
 *
 * usage: pge1 N M K
 * prints on rank 0: result: <sum over systems s and equations i of x[s][i] * (1 + (s + 3 i) % 5)>,
 *   max_residual: <max |A x - d|>, mpi_calls: <n>, time: <s>
 * mpi_calls counts MPI_Send/Recv and collective calls of all ranks in the modelled part (not the
 * reductions that print the results afterwards).
 */
#include "app_common.h"
#include "pge_systems.h"

#include <mpi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>


int main(int argc, char **argv)
{
    int P, rank;
    if (!app_init(&argc, &argv, 3, 3, "pge1 N M K", &P, &rank)) return 2;
    long N = atol(argv[1]), M = atol(argv[2]), K = atol(argv[3]);
    if (N < P || M < 1 || K < 1) {
        if (rank == 0) fprintf(stderr, "pge1: need N >= P (a column per rank), M >= 1, K >= 1\n");
        MPI_Finalize();
        return 2;
    }
    long c0 = rank * N / P, c1 = (rank + 1) * N / P, cols = c1 - c0;
    long nb = (M + K - 1) / K;
    size_t n = (size_t)M * (size_t)cols;
    double *cp = malloc(n * sizeof(double)), *dp = malloc(n * sizeof(double));
    double *x = malloc(n * sizeof(double));
    double *buf = malloc(2 * (size_t)K * sizeof(double));
    if (!cp || !dp || !x || !buf) {
        fprintf(stderr, "pge1: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
#define IDX(s, j) ((size_t)(s) * (size_t)cols + (size_t)(j))

    long calls = 0;
    double t0 = MPI_Wtime();
    /* forward elimination pipeline 0 -> P-1 */
    for (long b = 0; b < nb; ++b) {
        long s0 = b * K, ks = (M - s0 < K) ? M - s0 : K;
        if (rank > 0) {
            MPI_Recv(buf, (int)(2 * ks), MPI_DOUBLE, rank - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            ++calls;
        }
        for (long q = 0; q < ks; ++q) {
            long s = s0 + q;
            double cprev = rank > 0 ? buf[2 * q] : 0.0, dprev = rank > 0 ? buf[2 * q + 1] : 0.0;
            for (long j = 0; j < cols; ++j) {
                long i = c0 + j;
                double a = coef_a(s, i, N);
                double den = coef_b(s, i, N) - a * cprev;
                cprev = cp[IDX(s, j)] = coef_c(s, i, N) / den;
                dprev = dp[IDX(s, j)] = (coef_d(s, i, N) - a * dprev) / den;
            }
            buf[2 * q] = cprev;
            buf[2 * q + 1] = dprev;
        }
        app_work("forward-eliminate", rank, (double)ks * (double)cols * 5.0); /* the skeleton's flops_fwd = 5 */
        if (rank < P - 1) {
            MPI_Send(buf, (int)(2 * ks), MPI_DOUBLE, rank + 1, 1, MPI_COMM_WORLD);
            ++calls;
        }
    }
    /* back substitution pipeline P-1 -> 0 */
    for (long b = 0; b < nb; ++b) {
        long s0 = b * K, ks = (M - s0 < K) ? M - s0 : K;
        if (rank < P - 1) {
            MPI_Recv(buf, (int)ks, MPI_DOUBLE, rank + 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            ++calls;
        }
        for (long q = 0; q < ks; ++q) {
            long s = s0 + q;
            double xnext = rank < P - 1 ? buf[q] : 0.0; /* c = 0 in the last equation */
            for (long j = cols - 1; j >= 0; --j) xnext = x[IDX(s, j)] = dp[IDX(s, j)] - cp[IDX(s, j)] * xnext;
            buf[q] = xnext;
        }
        app_work("backward-substitute", rank, (double)ks * (double)cols * 3.0); /* flops_bwd = 3 */
        if (rank > 0) {
            MPI_Send(buf, (int)ks, MPI_DOUBLE, rank - 1, 2, MPI_COMM_WORLD);
            ++calls;
        }
    }
    double t1 = MPI_Wtime();

    /* checks (after the modelled part): weighted checksum, and the residual of the rows whose
     * neighbours are local (interior of each segment) */
    double local = 0.0, res = 0.0;
    pge_check(x, M, N, c0, cols, &local, &res);
    double sum = 0.0, maxres = 0.0;
    MPI_Reduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&res, &maxres, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("pge1: N=%ld M=%ld K=%ld P=%d nb=%ld\n", N, M, K, P, nb);
        printf("result: %.15g\n", sum);
        printf("max_residual: %.3g\n", maxres);
    }
    app_report(calls, t0, t1, rank);
    free(cp); free(dp); free(x); free(buf);
    MPI_Finalize();
    return 0;
}
