/* cg: the real MPI program that skeletons/examples/cg.json models.
 *
 * Unpreconditioned conjugate gradient on the 5-point Laplacian of an nx x nx grid (N = nx^2 unknowns,
 * natural ordering), rows split in contiguous blocks (rank r owns rows floor(r N / P) ..
 * floor((r+1) N / P) - 1; needs at least nx rows per rank, i.e. P <= nx). b[g] = 1 + (g % 7) / 7,
 * x0[g] = (g % 11) / 110.
 *   setup: halo of x0 (irecv/isend up with tags 1/2, then down with tags 2/1, waitall; nx doubles per
 *     message), r = b - A x0, p = r, rr = r.r (MPI_Allreduce of one double);
 *   each iteration: halo of p posted the same way, q = A p on the interior rows while it travels,
 *     waitall, the rows next to a neighbour, p.q (allreduce), x += alpha p, r -= alpha q, r.r
 *     (allreduce), p = r + beta p.
 *
 * usage: cg N iters        (N a perfect square)
 * prints on rank 0: result: <sum(x)>, residual: <|r| / |r0|>, mpi_calls: <n>, time: <s>
 * mpi_calls counts MPI_Isend/Irecv and collective calls of all ranks in the modelled part (waits are
 * not counted, nor the reductions that print the results afterwards).
 */
#include "app_common.h"

#include <mpi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    long nx, lo, rows, up, down; /* up/down: ghost rows above/below (nx or 0) */
} part_t;

/* q[k] = (A v)[lo + k] for k in [k0, k1); v has nx ghost values before its first local value */
static void spmv(const part_t *pt, const double *v, double *q, long k0, long k1)
{
    long nx = pt->nx, N = nx * nx;
    for (long k = k0; k < k1; ++k) {
        long g = pt->lo + k, j = g % nx;
        const double *c = v + nx + k;
        double s = 4.0 * c[0];
        if (j > 0) s -= c[-1];
        if (j < nx - 1) s -= c[1];
        if (g >= nx) s -= c[-nx];
        if (g + nx < N) s -= c[nx];
        q[k] = s;
    }
}

/* post the halo of v: irecv/isend with rank-1, then with rank+1 (the skeleton's order) */
static int post_halo(const part_t *pt, double *v, int rank, int P, MPI_Request *req, long *calls)
{
    int n = 0, nx = (int)pt->nx;
    if (rank > 0) {
        MPI_Irecv(v, nx, MPI_DOUBLE, rank - 1, 1, MPI_COMM_WORLD, &req[n++]);
        MPI_Isend(v + nx, nx, MPI_DOUBLE, rank - 1, 2, MPI_COMM_WORLD, &req[n++]);
    }
    if (rank < P - 1) {
        MPI_Irecv(v + nx + pt->rows, nx, MPI_DOUBLE, rank + 1, 2, MPI_COMM_WORLD, &req[n++]);
        MPI_Isend(v + pt->rows, nx, MPI_DOUBLE, rank + 1, 1, MPI_COMM_WORLD, &req[n++]);
    }
    *calls += n;
    return n;
}

static double dot(const double *a, const double *b, long n)
{
    double s = 0.0;
    for (long k = 0; k < n; ++k) s += a[k] * b[k];
    return s;
}

static double allreduce_sum(double v, long *calls)
{
    double s = 0.0;
    MPI_Allreduce(&v, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    ++*calls;
    return s;
}

int main(int argc, char **argv)
{
    int P, rank;
    if (!app_init(&argc, &argv, 2, 2, "cg N iters   (N a perfect square)", &P, &rank)) return 2;
    long N = atol(argv[1]), iters = atol(argv[2]);
    long nx = (long)floor(sqrt((double)N) + 0.5);
    if (N < 1 || nx * nx != N || iters < 0 || (P > 1 && N / P < nx)) {
        if (rank == 0) fprintf(stderr, "cg: need N = nx^2 and at least nx rows per rank (P <= nx)\n");
        MPI_Finalize();
        return 2;
    }
    part_t pt;
    pt.nx = nx;
    pt.lo = rank * N / P;
    pt.rows = (rank + 1) * N / P - pt.lo;
    pt.up = rank > 0 ? nx : 0;
    pt.down = rank < P - 1 ? nx : 0;
    long rows = pt.rows, ext = rows + 2 * nx;
    double *x = calloc((size_t)ext, sizeof(double)); /* x and p carry ghost space */
    double *p = calloc((size_t)ext, sizeof(double));
    double *r = malloc((size_t)rows * sizeof(double));
    double *q = malloc((size_t)rows * sizeof(double));
    if (!x || !p || !r || !q) {
        fprintf(stderr, "cg: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long k = 0; k < rows; ++k) x[nx + k] = (double)((pt.lo + k) % 11) / 110.0;
    /* inner rows need no ghost; edge rows are the first/last nx next to a neighbour */
    long in0 = pt.up, in1 = rows - pt.down;
    if (in1 < in0) in1 = in0;
    MPI_Request req[4];
    long calls = 0;

    double t0 = MPI_Wtime();
    /* setup: r = b - A x0, p = r, rr = r.r */
    int nreq = post_halo(&pt, x, rank, P, req, &calls);
    MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
    spmv(&pt, x, q, 0, rows);
    for (long k = 0; k < rows; ++k) {
        r[k] = 1.0 + (double)((pt.lo + k) % 7) / 7.0 - q[k];
        p[nx + k] = r[k];
    }
    double rr = allreduce_sum(dot(r, r, rows), &calls);
    double rr0 = rr;
    for (long it = 0; it < iters; ++it) {
        nreq = post_halo(&pt, p, rank, P, req, &calls);
        spmv(&pt, p, q, in0, in1);
        MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
        spmv(&pt, p, q, 0, in0);
        spmv(&pt, p, q, in1, rows);
        double pq = allreduce_sum(dot(p + nx, q, rows), &calls);
        double alpha = rr / pq;
        for (long k = 0; k < rows; ++k) {
            x[nx + k] += alpha * p[nx + k];
            r[k] -= alpha * q[k];
        }
        double rrn = allreduce_sum(dot(r, r, rows), &calls);
        double beta = rrn / rr;
        rr = rrn;
        for (long k = 0; k < rows; ++k) p[nx + k] = r[k] + beta * p[nx + k];
    }
    double t1 = MPI_Wtime();

    double local = 0.0;
    for (long k = 0; k < rows; ++k) local += x[nx + k];
    double sum = 0.0;
    MPI_Reduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("cg: N=%ld nx=%ld iters=%ld P=%d\n", N, nx, iters, P);
        printf("result: %.15g\n", sum);
        printf("residual: %.6g\n", rr0 > 0 ? sqrt(rr / rr0) : 0.0);
    }
    app_report(calls, t0, t1, rank);
    free(x); free(p); free(r); free(q);
    MPI_Finalize();
    return 0;
}
