/* cg: a conjugate-gradient eigenvalue estimate in the style of the NAS Parallel Benchmarks' CG (written
 * here, not copied), on a non-square 2-D process grid with row and column communicators.
 *
 * P = 2^k ranks as NPB CG arranges them: npcols = 2^ceil(k/2) columns, nprows = P / npcols rows (npcols =
 * 2 nprows when k is odd), rank = r * npcols + c. The N x N matrix is split in nprows x npcols blocks (rank
 * (r, c) owns rows block r of N/nprows rows and columns segment c of N/npcols columns, 128 N / P nonzeros);
 * vectors are held by segment (every rank of column c holds segment c). Communicators from MPI_Comm_split:
 * the row (colour r, key c; size npcols) and the column (colour c, key r; size nprows).
 *
 * q = A p: the block product, MPI_Allreduce of the N/nprows partial sums on the row communicator, then the
 * transpose exchange that gives each rank segment c of q: with partner (c / ratio, ratio r + c % ratio),
 * ratio = npcols / nprows, an MPI_Irecv, MPI_Send and MPI_Wait of N/npcols doubles (the ranks on the
 * diagonal, whose partner is themselves, copy). A dot product: each rank sums its N/P sub-piece, then
 * MPI_Allreduce on the row communicator and on the column communicator (one double each).
 *
 * Setup: rho = r.r. Each of `niter` outer iterations: `cgit` CG iterations (q = A p, p.q, the updates of z
 * and r, r.r, the update of p), the residual norm (q = A z and a dot product), then x.z and z.z in one
 * two-stage reduction (2 doubles) and x = z / |z|.
 *
 * Declared flops: the block product 2 x 128 N / P, each dot product 2 N / P, each vector update 2 N / npcols.
 *
 * usage: cg [N [niter [cgit]]]     defaults 1024 2 5; P a power of two dividing N
 */
#include "corpus.h"

#include <math.h>

enum { NNZ_PER_ROW = 128, EXCH_TAG = 7 }; /* about NPB CG class A's nonzeros per row */

typedef struct {
    int nprows, npcols, ratio, r, c, partner;
    MPI_Comm row, col;
    long N, rowlen, seg, piece; /* N / nprows, N / npcols, N / P */
    double *w, *wsum;           /* rowlen */
} cg_t;

/* q = A p (segments), with the row reduction and the transpose exchange */
static void matvec(corpus_t *cc, cg_t *g, const double *p, double *q)
{
    for (long i = 0; i < g->rowlen; ++i) {
        long gi = (long)g->r * g->rowlen + i;
        double s = 0.0;
        if (gi >= g->c * g->seg && gi < (g->c + 1) * g->seg) s += 2.0 * p[gi - g->c * g->seg];
        for (int t = 0; t < 4; ++t) s += 0.01 * (1 + (gi + t) % 3) * p[(gi * 7 + t * 13) % g->seg];
        g->w[i] = s;
    }
    corpus_work(cc, 2.0 * NNZ_PER_ROW * (double)g->N / cc->P);
    MPI_Allreduce(g->w, g->wsum, (int)g->rowlen, MPI_DOUBLE, MPI_SUM, g->row);
    ++cc->calls;
    const double *mine = g->wsum + (g->c % g->ratio) * g->seg;
    if (g->partner == cc->rank) {
        memcpy(q, mine, sizeof(double) * (size_t)g->seg);
    } else {
        MPI_Request req;
        MPI_Irecv(q, (int)g->seg, MPI_DOUBLE, g->partner, EXCH_TAG, MPI_COMM_WORLD, &req);
        MPI_Send(mine, (int)g->seg, MPI_DOUBLE, g->partner, EXCH_TAG, MPI_COMM_WORLD);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        cc->calls += 2;
    }
}

/* dot products of n pairs over the whole vector: the rank's sub-piece, then row and column reductions */
static void dots(corpus_t *cc, cg_t *g, int n, const double *const *a, const double *const *b, double *out)
{
    double part[2] = {0.0, 0.0}, rs[2];
    long lo = (long)g->r * g->piece;
    for (int d = 0; d < n; ++d)
        for (long k = lo; k < lo + g->piece; ++k) part[d] += a[d][k] * b[d][k];
    corpus_work(cc, 2.0 * n * g->piece);
    MPI_Allreduce(part, rs, n, MPI_DOUBLE, MPI_SUM, g->row);
    MPI_Allreduce(rs, out, n, MPI_DOUBLE, MPI_SUM, g->col);
    cc->calls += 2;
}

static double dot1(corpus_t *cc, cg_t *g, const double *a, const double *b)
{
    const double *aa[1] = {a}, *bb[1] = {b};
    double out[1];
    dots(cc, g, 1, aa, bb, out);
    return out[0];
}

int main(int argc, char **argv)
{
    corpus_t cc;
    long par[3] = {1024, 2, 5};
    if (!corpus_init(&argc, &argv, &cc, "cg [N [niter [cgit]]]   (P a power of two dividing N)", 3, par)) return 2;
    cg_t g;
    memset(&g, 0, sizeof g);
    g.N = par[0];
    int niter = (int)par[1], cgit = (int)par[2];
    if (!corpus_require(&cc, corpus_is_pow2(cc.P) && g.N % cc.P == 0, "cg needs P a power of two dividing N")) return 2;
    int k = 0;
    while ((1 << k) < cc.P) ++k;
    g.npcols = 1 << ((k + 1) / 2);
    g.nprows = cc.P / g.npcols;
    g.ratio = g.npcols / g.nprows;
    g.r = cc.rank / g.npcols;
    g.c = cc.rank % g.npcols;
    g.partner = (g.c / g.ratio) * g.npcols + g.ratio * g.r + g.c % g.ratio;
    g.rowlen = g.N / g.nprows;
    g.seg = g.N / g.npcols;
    g.piece = g.N / cc.P;
    MPI_Comm_split(MPI_COMM_WORLD, g.r, g.c, &g.row);
    MPI_Comm_split(MPI_COMM_WORLD, g.c, g.r, &g.col);
    g.w = corpus_alloc((size_t)g.rowlen, sizeof(double));
    g.wsum = corpus_alloc((size_t)g.rowlen, sizeof(double));
    double *x = corpus_alloc((size_t)g.seg, sizeof(double)), *z = corpus_alloc((size_t)g.seg, sizeof(double)),
           *p = corpus_alloc((size_t)g.seg, sizeof(double)), *q = corpus_alloc((size_t)g.seg, sizeof(double)),
           *r = corpus_alloc((size_t)g.seg, sizeof(double));
    for (long i = 0; i < g.seg; ++i) x[i] = 1.0 + 0.1 * (double)((g.c * g.seg + i) % 5);

    corpus_start(&cc);
    double zeta = 0.0, rnorm = 0.0;
    for (int it = 0; it < niter; ++it) {
        /* conj_grad: z = 0, r = p = x */
        for (long i = 0; i < g.seg; ++i) z[i] = 0.0, r[i] = x[i], p[i] = x[i];
        double rho = dot1(&cc, &g, r, r);
        for (int cgi = 0; cgi < cgit; ++cgi) {
            matvec(&cc, &g, p, q);
            double pq = dot1(&cc, &g, p, q), alpha = pq != 0.0 ? rho / pq : 0.0;
            for (long i = 0; i < g.seg; ++i) z[i] += alpha * p[i], r[i] -= alpha * q[i];
            corpus_work(&cc, 4.0 * g.seg);
            double rho0 = rho;
            rho = dot1(&cc, &g, r, r);
            double beta = rho0 != 0.0 ? rho / rho0 : 0.0;
            for (long i = 0; i < g.seg; ++i) p[i] = r[i] + beta * p[i];
            corpus_work(&cc, 2.0 * g.seg);
        }
        matvec(&cc, &g, z, q); /* the residual |x - A z| */
        for (long i = 0; i < g.seg; ++i) r[i] = x[i] - q[i];
        corpus_work(&cc, 1.0 * g.seg);
        rnorm = sqrt(dot1(&cc, &g, r, r));
        const double *aa[2] = {x, z}, *bb[2] = {z, z};
        double nt[2];
        dots(&cc, &g, 2, aa, bb, nt);
        zeta = 10.0 + 1.0 / nt[0];
        for (long i = 0; i < g.seg; ++i) x[i] = z[i] / sqrt(nt[1]);
        corpus_work(&cc, 2.0 * g.seg);
    }
    corpus_report(&cc, zeta + rnorm);
    free(g.w), free(g.wsum), free(x), free(z), free(p), free(q), free(r);
    MPI_Comm_free(&g.row);
    MPI_Comm_free(&g.col);
    MPI_Finalize();
    return 0;
}
