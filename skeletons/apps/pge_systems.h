/* The M tridiagonal systems that pge1 and pge2 solve, and the checks both print, so that the two
 * programs give the same result for the same N and M. */
#ifndef MKSIM_PGE_SYSTEMS_H
#define MKSIM_PGE_SYSTEMS_H

#include <math.h>

/* system s, equation i: a x[i-1] + b x[i] + c x[i+1] = d (diagonally dominant) */
static double coef_a(long s, long i, long N) { (void)s; (void)N; return i == 0 ? 0.0 : -1.0; }
static double coef_b(long s, long i, long N) { (void)N; return 2.5 + 0.5 * (double)((s + i) % 3); }
static double coef_c(long s, long i, long N) { (void)s; return i == N - 1 ? 0.0 : -1.0; }
static double coef_d(long s, long i, long N) { (void)N; return (double)((s * 7 + i * 13) % 23) / 23.0 - 0.4; }

/* Over this rank's columns c0 .. c0+cols-1 of the M solutions x (system-major, cols per system):
 * the weighted checksum sum x[s][i] * (1 + (s + 3 i) % 5) into *checksum, and the largest |A x - d| of
 * the rows whose neighbours are local into *residual. */
static void pge_check(const double *x, long M, long N, long c0, long cols, double *checksum, double *residual)
{
    double local = 0.0, res = 0.0;
    for (long s = 0; s < M; ++s)
        for (long j = 0; j < cols; ++j) {
            long i = c0 + j;
            const double *xs = x + (size_t)s * (size_t)cols;
            local += xs[j] * (double)(1 + (s + 3 * i) % 5);
            if (j > 0 && j < cols - 1) {
                double r = coef_a(s, i, N) * xs[j - 1] + coef_b(s, i, N) * xs[j] + coef_c(s, i, N) * xs[j + 1] -
                           coef_d(s, i, N);
                if (fabs(r) > res) res = fabs(r);
            }
        }
    *checksum = local;
    *residual = res;
}

#endif
