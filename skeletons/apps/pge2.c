/* pge2: the real MPI program that skeletons/examples/pge2.json models (seed 000 s.4.2, s.5.1, fig. 3).
 *
 * Solves the same M tridiagonal systems of N equations as pge1 by two-way pipelined Gaussian
 * elimination, P even, h = P/2, columns split in contiguous blocks as in pge1:
 *   F1 (tag 1): the top chain 0..h-1 eliminates downwards (Thomas forward sweep: x[i] = d'[i] -
 *     c'[i] x[i+1]), rank r < h-1 sends its last (c', d') to r+1, for nb = ceil(M/K) blocks of K systems;
 *   F2 (tag 2): the bottom chain P-1..h eliminates upwards (x[i] = e'[i] - a'[i] x[i-1]), rank r > h
 *     sends its first (a', e') to r-1;
 *   S1/S2 (tags 3/4): ranks h-1 and h swap their interface rows for all M systems (2 doubles per
 *     system): each posts MPI_Isend, then MPI_Recv, then MPI_Wait; both then solve the 2x2 interface
 *     system for x[t] and x[t+1] (t = the last column of rank h-1);
 *   P1 (tag 5): back substitution h-1 -> 0 (1 double per system), P2 (tag 6): h -> P-1.
 *
 * usage: pge2 N M K        (P even)
 * prints on rank 0: result: <the same checksum as pge1>, max_residual, mpi_calls: <n>, time: <s>
 * mpi_calls counts MPI_Send/Recv/Isend and collective calls of all ranks in the modelled part.
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
    if (!app_init(&argc, &argv, 3, 3, "pge2 N M K   (P even)", &P, &rank)) return 2;
    long N = atol(argv[1]), M = atol(argv[2]), K = atol(argv[3]);
    if (P % 2 != 0 || N < P || M < 1 || K < 1) {
        if (rank == 0) fprintf(stderr, "pge2: need P even (P=%d), N >= P, M >= 1, K >= 1\n", P);
        MPI_Finalize();
        return 2;
    }
    int h = P / 2;
    int top = rank < h;
    long c0 = rank * N / P, c1 = (rank + 1) * N / P, cols = c1 - c0;
    long nb = (M + K - 1) / K;
    size_t n = (size_t)M * (size_t)cols;
    /* top: e1 = c', e2 = d' ; bottom: e1 = a', e2 = e' */
    double *e1 = malloc(n * sizeof(double)), *e2 = malloc(n * sizeof(double));
    double *x = malloc(n * sizeof(double));
    double *buf = malloc(2 * (size_t)K * sizeof(double));
    double *mine = malloc(2 * (size_t)M * sizeof(double)), *theirs = malloc(2 * (size_t)M * sizeof(double));
    if (!e1 || !e2 || !x || !buf || !mine || !theirs) {
        fprintf(stderr, "pge2: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
#define IDX(s, j) ((size_t)(s) * (size_t)cols + (size_t)(j))

    long calls = 0;
    double t0 = MPI_Wtime();
    if (top) {
        /* F1: 0 -> h-1 */
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
                    cprev = e1[IDX(s, j)] = coef_c(s, i, N) / den;
                    dprev = e2[IDX(s, j)] = (coef_d(s, i, N) - a * dprev) / den;
                }
                buf[2 * q] = cprev;
                buf[2 * q + 1] = dprev;
            }
            if (rank < h - 1) {
                MPI_Send(buf, (int)(2 * ks), MPI_DOUBLE, rank + 1, 1, MPI_COMM_WORLD);
                ++calls;
            }
        }
    } else {
        /* F2: P-1 -> h */
        for (long b = 0; b < nb; ++b) {
            long s0 = b * K, ks = (M - s0 < K) ? M - s0 : K;
            if (rank < P - 1) {
                MPI_Recv(buf, (int)(2 * ks), MPI_DOUBLE, rank + 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                ++calls;
            }
            for (long q = 0; q < ks; ++q) {
                long s = s0 + q;
                double anext = rank < P - 1 ? buf[2 * q] : 0.0, enext = rank < P - 1 ? buf[2 * q + 1] : 0.0;
                for (long j = cols - 1; j >= 0; --j) {
                    long i = c0 + j;
                    double c = coef_c(s, i, N);
                    double den = coef_b(s, i, N) - c * anext;
                    anext = e1[IDX(s, j)] = coef_a(s, i, N) / den;
                    enext = e2[IDX(s, j)] = (coef_d(s, i, N) - c * enext) / den;
                }
                buf[2 * q] = anext;
                buf[2 * q + 1] = enext;
            }
            if (rank > h) {
                MPI_Send(buf, (int)(2 * ks), MPI_DOUBLE, rank - 1, 2, MPI_COMM_WORLD);
                ++calls;
            }
        }
    }
    /* S1/S2: the middle ranks swap interface rows of all M systems */
    if (rank == h - 1 || rank == h) {
        long j = rank == h - 1 ? cols - 1 : 0; /* the interface column */
        for (long s = 0; s < M; ++s) {
            mine[2 * s] = e1[IDX(s, j)];
            mine[2 * s + 1] = e2[IDX(s, j)];
        }
        int peer = rank == h - 1 ? h : h - 1;
        int stag = rank == h - 1 ? 3 : 4, rtag = rank == h - 1 ? 4 : 3;
        MPI_Request req;
        MPI_Isend(mine, (int)(2 * M), MPI_DOUBLE, peer, stag, MPI_COMM_WORLD, &req);
        MPI_Recv(theirs, (int)(2 * M), MPI_DOUBLE, peer, rtag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        calls += 2;
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    const double *tside = rank == h - 1 ? mine : theirs; /* (c', d') of column t */
    const double *uside = rank == h - 1 ? theirs : mine; /* (a', e') of column t+1 */
    if (top) {
        /* P1: h-1 -> 0 */
        for (long b = 0; b < nb; ++b) {
            long s0 = b * K, ks = (M - s0 < K) ? M - s0 : K;
            if (rank < h - 1) {
                MPI_Recv(buf, (int)ks, MPI_DOUBLE, rank + 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                ++calls;
            }
            for (long q = 0; q < ks; ++q) {
                long s = s0 + q;
                double xnext;
                if (rank == h - 1) { /* x[t+1] from the 2x2 interface system */
                    double ct = tside[2 * s], dt = tside[2 * s + 1], au = uside[2 * s], eu = uside[2 * s + 1];
                    double xt = (dt - ct * eu) / (1.0 - ct * au);
                    xnext = eu - au * xt;
                } else {
                    xnext = buf[q];
                }
                for (long j = cols - 1; j >= 0; --j) xnext = x[IDX(s, j)] = e2[IDX(s, j)] - e1[IDX(s, j)] * xnext;
                buf[q] = xnext;
            }
            if (rank > 0) {
                MPI_Send(buf, (int)ks, MPI_DOUBLE, rank - 1, 5, MPI_COMM_WORLD);
                ++calls;
            }
        }
    } else {
        /* P2: h -> P-1 */
        for (long b = 0; b < nb; ++b) {
            long s0 = b * K, ks = (M - s0 < K) ? M - s0 : K;
            if (rank > h) {
                MPI_Recv(buf, (int)ks, MPI_DOUBLE, rank - 1, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                ++calls;
            }
            for (long q = 0; q < ks; ++q) {
                long s = s0 + q;
                double xprev;
                if (rank == h) { /* x[t] from the 2x2 interface system */
                    double ct = tside[2 * s], dt = tside[2 * s + 1], au = uside[2 * s], eu = uside[2 * s + 1];
                    xprev = (dt - ct * eu) / (1.0 - ct * au);
                } else {
                    xprev = buf[q];
                }
                for (long j = 0; j < cols; ++j) xprev = x[IDX(s, j)] = e2[IDX(s, j)] - e1[IDX(s, j)] * xprev;
                buf[q] = xprev;
            }
            if (rank < P - 1) {
                MPI_Send(buf, (int)ks, MPI_DOUBLE, rank + 1, 6, MPI_COMM_WORLD);
                ++calls;
            }
        }
    }
    double t1 = MPI_Wtime();

    double local = 0.0, res = 0.0;
    pge_check(x, M, N, c0, cols, &local, &res);
    double sum = 0.0, maxres = 0.0;
    MPI_Reduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&res, &maxres, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("pge2: N=%ld M=%ld K=%ld P=%d nb=%ld\n", N, M, K, P, nb);
        printf("result: %.15g\n", sum);
        printf("max_residual: %.3g\n", maxres);
    }
    app_report(calls, t0, t1, rank);
    free(e1); free(e2); free(x); free(buf); free(mine); free(theirs);
    MPI_Finalize();
    return 0;
}
