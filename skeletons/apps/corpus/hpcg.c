/* hpcg: a multigrid-preconditioned conjugate gradient in the style of HPCG (written here, not copied).
 *
 * Weak scaling: every rank owns an nx x ny x nz block of a 27-point problem; the ranks form the 3-D grid of
 * MPI_Dims_create(P, 3) made with MPI_Cart_create, not periodic. A rank's neighbours are the up to 26 ranks
 * at coordinate offsets in {-1, 0, 1}^3 that exist (MPI_Cart_rank), in increasing rank order as HPCG's halo
 * setup sorts them. The halo (HPCG's ExchangeHalo, tag 99): MPI_Irecv from every neighbour, MPI_Send of the
 * packed boundary to every neighbour, MPI_Wait of each receive in order; a face carries nx*ny, ny*nz or
 * nx*nz doubles, an edge nx, ny or nz, a corner 1 (of the level's sides).
 *
 * Four multigrid levels (each halves the sides). A V-cycle on level l < 3: symmetric Gauss-Seidel (halo, then
 * work), residual (SpMV: halo, then work) and restriction, the coarser level, prolongation, symmetric
 * Gauss-Seidel; on level 3 one Gauss-Seidel. Setup: r = b - A x (SpMV) and |r| (MPI_Allreduce of one
 * double). Each of `iters` CG iterations: z = M r (the V-cycle), r.z, p = z + beta p, Ap (SpMV), p.Ap,
 * x and r updates, |r|: three MPI_Allreduce of one double.
 *
 * Declared flops (HPCG's counts, 27 nonzeros per row): SpMV 54 per point, Gauss-Seidel 108, dot product 2,
 * vector update 3, restriction and prolongation 1 per coarse point.
 *
 * usage: hpcg [nx [ny [nz [iters]]]]     defaults 8 8 8 3; nx, ny, nz multiples of 8
 */
#include "corpus.h"

#include <math.h>

enum { HALO_TAG = 99, LEVELS = 4, MAX_NB = 26 };

typedef struct {
    int n[3];
    double *x, *r, *ax; /* (n0 + 2) x (n1 + 2) x (n2 + 2) with a ghost layer */
} lvl_t;

typedef struct {
    MPI_Comm cart;
    int nnb, nb[MAX_NB], off[MAX_NB][3];
    lvl_t L[LEVELS];
    double *sbuf, *rbuf[MAX_NB];
} hpcg_t;

static size_t at(const lvl_t *l, int i, int j, int k)
{
    return ((size_t)i * (l->n[1] + 2) + (size_t)j) * (l->n[2] + 2) + (size_t)k;
}
static size_t npts(const lvl_t *l) { return (size_t)l->n[0] * l->n[1] * l->n[2]; }
static size_t ncells(const lvl_t *l) { return (size_t)(l->n[0] + 2) * (l->n[1] + 2) * (l->n[2] + 2); }

/* the boundary block sent towards offset o (ghost = 0) or the ghost block received from it (ghost = 1) */
static int block(const lvl_t *l, double *a, const int *o, double *buf, int ghost)
{
    int lo[3], hi[3], n = 0;
    for (int d = 0; d < 3; ++d) {
        if (o[d] == 0) lo[d] = 1, hi[d] = l->n[d];
        else if (o[d] < 0) lo[d] = hi[d] = ghost ? 0 : 1;
        else lo[d] = hi[d] = ghost ? l->n[d] + 1 : l->n[d];
    }
    for (int i = lo[0]; i <= hi[0]; ++i)
        for (int j = lo[1]; j <= hi[1]; ++j)
            for (int k = lo[2]; k <= hi[2]; ++k) {
                if (ghost) a[at(l, i, j, k)] = buf[n];
                else buf[n] = a[at(l, i, j, k)];
                ++n;
            }
    return n;
}

static int block_len(const lvl_t *l, const int *o)
{
    int n = 1;
    for (int d = 0; d < 3; ++d) n *= o[d] == 0 ? l->n[d] : 1;
    return n;
}

static void exchange_halo(corpus_t *c, hpcg_t *h, lvl_t *l, double *a)
{
    MPI_Request req[MAX_NB];
    for (int q = 0; q < h->nnb; ++q) {
        MPI_Irecv(h->rbuf[q], block_len(l, h->off[q]), MPI_DOUBLE, h->nb[q], HALO_TAG, h->cart, &req[q]);
        ++c->calls;
    }
    for (int q = 0; q < h->nnb; ++q) {
        int n = block(l, a, h->off[q], h->sbuf, 0);
        MPI_Send(h->sbuf, n, MPI_DOUBLE, h->nb[q], HALO_TAG, h->cart);
        ++c->calls;
    }
    for (int q = 0; q < h->nnb; ++q) {
        MPI_Wait(&req[q], MPI_STATUS_IGNORE);
        block(l, a, h->off[q], h->rbuf[q], 1);
    }
}

static double sum26(const lvl_t *l, const double *a, int i, int j, int k)
{
    double s = 0.0;
    for (int di = -1; di <= 1; ++di)
        for (int dj = -1; dj <= 1; ++dj)
            for (int dk = -1; dk <= 1; ++dk)
                if (di || dj || dk) s += a[at(l, i + di, j + dj, k + dk)];
    return s;
}

/* y = A x with A = 26 on the diagonal, -1 off it */
static void spmv(corpus_t *c, hpcg_t *h, lvl_t *l, double *x, double *y)
{
    exchange_halo(c, h, l, x);
    for (int i = 1; i <= l->n[0]; ++i)
        for (int j = 1; j <= l->n[1]; ++j)
            for (int k = 1; k <= l->n[2]; ++k) y[at(l, i, j, k)] = 26.0 * x[at(l, i, j, k)] - sum26(l, x, i, j, k);
    corpus_work(c, 54.0 * npts(l));
}

/* symmetric Gauss-Seidel on A x = r: a forward and a backward sweep */
static void symgs(corpus_t *c, hpcg_t *h, lvl_t *l)
{
    exchange_halo(c, h, l, l->x);
    for (int pass = 0; pass < 2; ++pass)
        for (int a = 0; a < l->n[0]; ++a)
            for (int b = 0; b < l->n[1]; ++b)
                for (int e = 0; e < l->n[2]; ++e) {
                    int i = pass ? l->n[0] - a : 1 + a, j = pass ? l->n[1] - b : 1 + b, k = pass ? l->n[2] - e : 1 + e;
                    l->x[at(l, i, j, k)] = (l->r[at(l, i, j, k)] + sum26(l, l->x, i, j, k)) / 26.0;
                }
    corpus_work(c, 108.0 * npts(l));
}

static void mg(corpus_t *c, hpcg_t *h, int lv)
{
    lvl_t *l = &h->L[lv];
    memset(l->x, 0, sizeof(double) * ncells(l));
    symgs(c, h, l);
    if (lv == LEVELS - 1) return;
    lvl_t *lc = &h->L[lv + 1];
    spmv(c, h, l, l->x, l->ax);
    for (int i = 1; i <= lc->n[0]; ++i) /* restriction: injection of the fine residual */
        for (int j = 1; j <= lc->n[1]; ++j)
            for (int k = 1; k <= lc->n[2]; ++k)
                lc->r[at(lc, i, j, k)] = l->r[at(l, 2 * i - 1, 2 * j - 1, 2 * k - 1)] - l->ax[at(l, 2 * i - 1, 2 * j - 1, 2 * k - 1)];
    corpus_work(c, 1.0 * npts(lc));
    mg(c, h, lv + 1);
    for (int i = 1; i <= lc->n[0]; ++i) /* prolongation */
        for (int j = 1; j <= lc->n[1]; ++j)
            for (int k = 1; k <= lc->n[2]; ++k) l->x[at(l, 2 * i - 1, 2 * j - 1, 2 * k - 1)] += lc->x[at(lc, i, j, k)];
    corpus_work(c, 1.0 * npts(lc));
    symgs(c, h, l);
}

static double dot(corpus_t *c, const lvl_t *l, const double *a, const double *b)
{
    double s = 0.0, g = 0.0;
    for (int i = 1; i <= l->n[0]; ++i)
        for (int j = 1; j <= l->n[1]; ++j)
            for (int k = 1; k <= l->n[2]; ++k) s += a[at(l, i, j, k)] * b[at(l, i, j, k)];
    corpus_work(c, 2.0 * npts(l));
    MPI_Allreduce(&s, &g, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    ++c->calls;
    return g;
}

/* w = a x + b y over the interior */
static void waxpby(corpus_t *c, const lvl_t *l, double *w, double a, const double *x, double b, const double *y)
{
    for (int i = 1; i <= l->n[0]; ++i)
        for (int j = 1; j <= l->n[1]; ++j)
            for (int k = 1; k <= l->n[2]; ++k) w[at(l, i, j, k)] = a * x[at(l, i, j, k)] + b * y[at(l, i, j, k)];
    corpus_work(c, 3.0 * npts(l));
}

int main(int argc, char **argv)
{
    corpus_t c;
    long par[4] = {8, 8, 8, 3};
    if (!corpus_init(&argc, &argv, &c, "hpcg [nx [ny [nz [iters]]]]   (multiples of 8)", 4, par)) return 2;
    int iters = (int)par[3];
    if (!corpus_require(&c, par[0] % 8 == 0 && par[1] % 8 == 0 && par[2] % 8 == 0, "hpcg needs nx, ny, nz multiples of 8"))
        return 2;
    hpcg_t h;
    memset(&h, 0, sizeof h);
    int dims[3] = {0, 0, 0}, periods[3] = {0, 0, 0}, coords[3];
    MPI_Dims_create(c.P, 3, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &h.cart);
    MPI_Cart_coords(h.cart, c.rank, 3, coords);
    for (int di = -1; di <= 1; ++di) /* the existing neighbours, then sorted by rank */
        for (int dj = -1; dj <= 1; ++dj)
            for (int dk = -1; dk <= 1; ++dk) {
                int o[3] = {di, dj, dk}, nc[3], in = di || dj || dk;
                for (int d = 0; d < 3; ++d) nc[d] = coords[d] + o[d], in = in && nc[d] >= 0 && nc[d] < dims[d];
                if (!in) continue;
                MPI_Cart_rank(h.cart, nc, &h.nb[h.nnb]);
                memcpy(h.off[h.nnb], o, sizeof o);
                ++h.nnb;
            }
    for (int a = 1; a < h.nnb; ++a)
        for (int b = a; b > 0 && h.nb[b - 1] > h.nb[b]; --b) {
            int t = h.nb[b], to[3];
            h.nb[b] = h.nb[b - 1], h.nb[b - 1] = t;
            memcpy(to, h.off[b], sizeof to), memcpy(h.off[b], h.off[b - 1], sizeof to), memcpy(h.off[b - 1], to, sizeof to);
        }
    for (int lv = 0; lv < LEVELS; ++lv) {
        lvl_t *l = &h.L[lv];
        for (int d = 0; d < 3; ++d) l->n[d] = (int)par[d] >> lv;
        l->x = corpus_alloc(ncells(l), sizeof(double));
        l->r = corpus_alloc(ncells(l), sizeof(double));
        l->ax = corpus_alloc(ncells(l), sizeof(double));
    }
    lvl_t *f = &h.L[0];
    size_t face = (size_t)(f->n[0] * f->n[1] > f->n[1] * f->n[2] ? f->n[0] * f->n[1] : f->n[1] * f->n[2]);
    if ((size_t)(f->n[0] * f->n[2]) > face) face = (size_t)(f->n[0] * f->n[2]);
    h.sbuf = corpus_alloc(face, sizeof(double));
    for (int q = 0; q < h.nnb; ++q) h.rbuf[q] = corpus_alloc(face, sizeof(double));
    double *b = corpus_alloc(ncells(f), sizeof(double)), *x = corpus_alloc(ncells(f), sizeof(double)),
           *r = corpus_alloc(ncells(f), sizeof(double)), *p = corpus_alloc(ncells(f), sizeof(double)),
           *ap = corpus_alloc(ncells(f), sizeof(double));
    for (int i = 1; i <= f->n[0]; ++i)
        for (int j = 1; j <= f->n[1]; ++j)
            for (int k = 1; k <= f->n[2]; ++k) b[at(f, i, j, k)] = 26.0 - (double)((i + j + k + c.rank) % 5);

    corpus_start(&c);
    spmv(&c, &h, f, x, ap); /* r = b - A x */
    waxpby(&c, f, r, 1.0, b, -1.0, ap);
    double normr = sqrt(dot(&c, f, r, r)), rtz = 0.0;
    for (int it = 0; it < iters; ++it) {
        memcpy(f->r, r, sizeof(double) * ncells(f));
        mg(&c, &h, 0); /* z = M r in f->x */
        double old = rtz;
        rtz = dot(&c, f, r, f->x);
        if (it == 0) waxpby(&c, f, p, 1.0, f->x, 0.0, f->x);
        else waxpby(&c, f, p, 1.0, f->x, rtz / old, p);
        spmv(&c, &h, f, p, ap);
        double alpha = rtz / dot(&c, f, p, ap);
        waxpby(&c, f, x, 1.0, x, alpha, p);
        waxpby(&c, f, r, 1.0, r, -alpha, ap);
        normr = sqrt(dot(&c, f, r, r));
    }
    corpus_report(&c, normr);
    for (int lv = 0; lv < LEVELS; ++lv) free(h.L[lv].x), free(h.L[lv].r), free(h.L[lv].ax);
    for (int q = 0; q < h.nnb; ++q) free(h.rbuf[q]);
    free(h.sbuf), free(b), free(x), free(r), free(p), free(ap);
    MPI_Comm_free(&h.cart);
    MPI_Finalize();
    return 0;
}
