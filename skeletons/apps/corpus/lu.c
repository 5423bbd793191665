/* lu: an SSOR solver in the style of the NAS Parallel Benchmarks' LU (written here, not copied).
 *
 * An N x N x N grid, the (i, j) plane split over a 2-D grid of P = 2^k ranks as NPB LU splits it:
 * xdim = 2^ceil(k/2) ranks along i, ydim = P / xdim along j, rank = row + xdim * col; each rank owns
 * nx = N/xdim by ny = N/ydim columns of all N planes. Neighbours without wraparound: north (row - 1),
 * south (row + 1), west (col - 1), east (col + 1), absent on the boundary (tested, no MPI_PROC_NULL).
 *
 * Before the steps and at the end of each: rhs, a two-layer halo of 5 variables (exchange_3: irecv from
 * north and south, send south and north, wait; then the same east/west), and its work. Each of `steps` SSOR
 * steps: the lower sweep over planes k = 1 .. N-2, a wavefront (exchange_1: blocking MPI_Recv from north and
 * west, the plane's work, MPI_Send to south and east, 5 values per boundary point), then the upper sweep
 * over k = N-2 .. 1 in the opposite direction (receive from south and east, send north and west), then the
 * update. Residual and error norms: MPI_Allreduce of 5 doubles. Tags as NPB's from_s/n/e/w = 1/2/3/4.
 *
 * Declared flops per grid point: rhs 300, each sweep 250 (per plane), scaling 5, update 10.
 *
 * usage: lu [N [steps]]     defaults 32 4; P a power of two, N divisible by xdim and ydim, N >= 3
 */
#include "corpus.h"

#include <math.h>

enum { FROM_S = 1, FROM_N = 2, FROM_E = 3, FROM_W = 4, NVAR = 5 };

typedef struct {
    int north, south, east, west; /* world ranks, -1 when absent */
    int nx, ny, nz;
    double *v; /* (nz) x (nx + 2) x (ny + 2), one ghost layer around the (i, j) plane */
} lu_t;

#define V(g, k, i, j) ((g)->v[((size_t)(k) * ((g)->nx + 2) + (size_t)(i)) * ((g)->ny + 2) + (size_t)(j)])

/* the point q (1-based) of the line at index `at` across axis 0 (a row i = at, q = j) or axis 1 (a column) */
static double *line_point(lu_t *g, int axis, int k, int at, int q)
{
    return axis == 0 ? &V(g, k, at, q) : &V(g, k, q, at);
}

/* one half of exchange_3 along an axis: irecv from both neighbours, send 2 layers x 5 variables of every
 * plane to the high one then the low one, wait for each receive and unpack the layer next to the ghost */
static void exchange_axis(corpus_t *c, lu_t *g, int axis, int lo, int hi, int tag_from_lo, int tag_from_hi,
                          double *sbuf, double *rbuf_lo, double *rbuf_hi)
{
    int len = axis == 0 ? g->ny : g->nx, last = axis == 0 ? g->nx : g->ny;
    int cnt = 2 * NVAR * len * g->nz;
    MPI_Request rlo = MPI_REQUEST_NULL, rhi = MPI_REQUEST_NULL;
    if (lo >= 0) { MPI_Irecv(rbuf_lo, cnt, MPI_DOUBLE, lo, tag_from_lo, MPI_COMM_WORLD, &rlo); ++c->calls; }
    if (hi >= 0) { MPI_Irecv(rbuf_hi, cnt, MPI_DOUBLE, hi, tag_from_hi, MPI_COMM_WORLD, &rhi); ++c->calls; }
    for (int pass = 0; pass < 2; ++pass) {
        int to = pass == 0 ? hi : lo, tag = pass == 0 ? tag_from_lo : tag_from_hi;
        if (to < 0) continue;
        for (int l = 0; l < 2; ++l)
            for (int k = 0; k < g->nz; ++k)
                for (int q = 1; q <= len; ++q)
                    for (int m = 0; m < NVAR; ++m)
                        sbuf[(((size_t)l * g->nz + k) * len + (q - 1)) * NVAR + m] =
                            *line_point(g, axis, k, pass == 0 ? last - l : 1 + l, q) * (m + 1);
        MPI_Send(sbuf, cnt, MPI_DOUBLE, to, tag, MPI_COMM_WORLD);
        ++c->calls;
    }
    for (int side = 0; side < 2; ++side) {
        MPI_Request *r = side == 0 ? &rlo : &rhi;
        const double *buf = side == 0 ? rbuf_lo : rbuf_hi;
        if ((side == 0 ? lo : hi) < 0) continue;
        MPI_Wait(r, MPI_STATUS_IGNORE);
        for (int k = 0; k < g->nz; ++k)
            for (int q = 1; q <= len; ++q) *line_point(g, axis, k, side == 0 ? 0 : last + 1, q) = buf[((size_t)k * len + (q - 1)) * NVAR];
    }
}

/* exchange_3: the rhs halo, north/south then east/west */
static void exchange_3(corpus_t *c, lu_t *g, double *sbuf, double *rbuf_a, double *rbuf_b)
{
    exchange_axis(c, g, 0, g->north, g->south, FROM_N, FROM_S, sbuf, rbuf_a, rbuf_b);
    exchange_axis(c, g, 1, g->west, g->east, FROM_W, FROM_E, sbuf, rbuf_a, rbuf_b);
}

/* rhs: the halo, then the residual's work; returns this rank's sum of squared residuals */
static double rhs(corpus_t *c, lu_t *g, double *sbuf, double *ra, double *rb)
{
    exchange_3(c, g, sbuf, ra, rb);
    double s = 0.0;
    for (int k = 0; k < g->nz; ++k)
        for (int i = 1; i <= g->nx; ++i)
            for (int j = 1; j <= g->ny; ++j) {
                double r = V(g, k, i, j) - 0.25 * (V(g, k, i - 1, j) + V(g, k, i + 1, j) + V(g, k, i, j - 1) + V(g, k, i, j + 1));
                s += r * r;
            }
    corpus_work(c, 300.0 * g->nx * g->ny * g->nz);
    return s;
}

static double l2norm(corpus_t *c, double local)
{
    double in[NVAR], out[NVAR];
    for (int m = 0; m < NVAR; ++m) in[m] = local * (m + 1);
    MPI_Allreduce(in, out, NVAR, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    ++c->calls;
    return sqrt(out[0]);
}

/* one sweep over the planes: lower (dir = +1: from north and west to south and east) or upper (dir = -1) */
static void sweep(corpus_t *c, lu_t *g, int dir, double *bi, double *bj)
{
    int from_i = dir > 0 ? g->north : g->south, from_j = dir > 0 ? g->west : g->east;
    int to_i = dir > 0 ? g->south : g->north, to_j = dir > 0 ? g->east : g->west;
    int tag_i = dir > 0 ? FROM_N : FROM_S, tag_j = dir > 0 ? FROM_W : FROM_E;
    int gi = dir > 0 ? 0 : g->nx + 1, gj = dir > 0 ? 0 : g->ny + 1;     /* ghost row / column filled */
    int si = dir > 0 ? g->nx : 1, sj = dir > 0 ? g->ny : 1;             /* row / column sent */
    for (int step = 0; step < g->nz - 2; ++step) {
        int k = dir > 0 ? 1 + step : g->nz - 2 - step;
        if (from_i >= 0) {
            MPI_Recv(bi, NVAR * g->ny, MPI_DOUBLE, from_i, tag_i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            ++c->calls;
            for (int j = 1; j <= g->ny; ++j) V(g, k, gi, j) = bi[(j - 1) * NVAR];
        }
        if (from_j >= 0) {
            MPI_Recv(bj, NVAR * g->nx, MPI_DOUBLE, from_j, tag_j, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            ++c->calls;
            for (int i = 1; i <= g->nx; ++i) V(g, k, i, gj) = bj[(i - 1) * NVAR];
        }
        for (int a = 0; a < g->nx; ++a)
            for (int b = 0; b < g->ny; ++b) {
                int i = dir > 0 ? 1 + a : g->nx - a, j = dir > 0 ? 1 + b : g->ny - b;
                V(g, k, i, j) = 0.5 * V(g, k, i, j) + 0.2 * (V(g, k, i - dir, j) + V(g, k, i, j - dir)) +
                                0.1 * V(g, k - dir, i, j);
            }
        corpus_work(c, 250.0 * g->nx * g->ny);
        if (to_i >= 0) {
            for (int j = 1; j <= g->ny; ++j)
                for (int m = 0; m < NVAR; ++m) bi[(j - 1) * NVAR + m] = V(g, k, si, j) * (m + 1);
            MPI_Send(bi, NVAR * g->ny, MPI_DOUBLE, to_i, tag_i, MPI_COMM_WORLD);
            ++c->calls;
        }
        if (to_j >= 0) {
            for (int i = 1; i <= g->nx; ++i)
                for (int m = 0; m < NVAR; ++m) bj[(i - 1) * NVAR + m] = V(g, k, i, sj) * (m + 1);
            MPI_Send(bj, NVAR * g->nx, MPI_DOUBLE, to_j, tag_j, MPI_COMM_WORLD);
            ++c->calls;
        }
    }
}

int main(int argc, char **argv)
{
    corpus_t c;
    long par[2] = {32, 4};
    if (!corpus_init(&argc, &argv, &c, "lu [N [steps]]   (P a power of two)", 2, par)) return 2;
    int N = (int)par[0], steps = (int)par[1];
    int k = 0;
    while ((1 << k) < c.P) ++k;
    int xdim = 1 << ((k + 1) / 2), ydim = c.P / xdim;
    if (!corpus_require(&c, corpus_is_pow2(c.P), "lu needs P a power of two")) return 2;
    if (!corpus_require(&c, N >= 3 && N % xdim == 0 && N % ydim == 0, "lu needs N >= 3 divisible by xdim and ydim"))
        return 2;

    lu_t g;
    int row = c.rank % xdim, col = c.rank / xdim;
    g.north = row > 0 ? c.rank - 1 : -1;
    g.south = row < xdim - 1 ? c.rank + 1 : -1;
    g.west = col > 0 ? c.rank - xdim : -1;
    g.east = col < ydim - 1 ? c.rank + xdim : -1;
    g.nx = N / xdim;
    g.ny = N / ydim;
    g.nz = N;
    g.v = corpus_alloc((size_t)g.nz * (g.nx + 2) * (g.ny + 2), sizeof(double));
    for (int kk = 0; kk < g.nz; ++kk)
        for (int i = 1; i <= g.nx; ++i)
            for (int j = 1; j <= g.ny; ++j) {
                long gi = (long)row * g.nx + i, gj = (long)col * g.ny + j;
                V(&g, kk, i, j) = 1.0 + 0.001 * (double)((gi * 7 + gj * 13 + kk * 3) % 101);
            }
    int maxlen = g.nx > g.ny ? g.nx : g.ny;
    size_t halo = (size_t)2 * NVAR * maxlen * g.nz;
    double *sbuf = corpus_alloc(halo, sizeof(double)), *ra = corpus_alloc(halo, sizeof(double)),
           *rb = corpus_alloc(halo, sizeof(double));
    double *bi = corpus_alloc((size_t)NVAR * maxlen, sizeof(double)), *bj = corpus_alloc((size_t)NVAR * maxlen, sizeof(double));

    corpus_start(&c);
    double rnorm = l2norm(&c, rhs(&c, &g, sbuf, ra, rb));
    for (int s = 0; s < steps; ++s) {
        corpus_work(&c, 5.0 * g.nx * g.ny * g.nz); /* rsd = dt * rsd */
        sweep(&c, &g, +1, bi, bj);
        sweep(&c, &g, -1, bi, bj);
        corpus_work(&c, 10.0 * g.nx * g.ny * g.nz); /* u += rsd */
        double local = rhs(&c, &g, sbuf, ra, rb);
        if (s == steps - 1) rnorm = l2norm(&c, local);
    }
    double err = 0.0;
    for (int kk = 0; kk < g.nz; ++kk)
        for (int i = 1; i <= g.nx; ++i)
            for (int j = 1; j <= g.ny; ++j) err += (V(&g, kk, i, j) - 1.0) * (V(&g, kk, i, j) - 1.0);
    double enorm = l2norm(&c, err);
    corpus_report(&c, rnorm + enorm);
    free(g.v), free(sbuf), free(ra), free(rb), free(bi), free(bj);
    MPI_Finalize();
    return 0;
}
