/* mg: a multigrid V-cycle in the style of the NAS Parallel Benchmarks' MG (written here, not copied).
 *
 * A periodic N x N x N grid over a 3-D process grid from MPI_Dims_create(P, 3), made periodic with
 * MPI_Cart_create (no reordering); neighbours from MPI_Cart_shift in each dimension (a dimension of size 1
 * or 2 gives the same rank on both sides, or the rank itself). Each rank owns n_d = N / dims[d] points per
 * dimension; level l halves them, down to the coarsest level whose smallest side is 2 (levels = log2 of the
 * smallest n_d, for powers of two).
 *
 * comm3 (the halo of one level): for each axis in turn, MPI_Sendrecv of the high face to the high neighbour
 * from the low one (tag 2*axis), then of the low face to the low neighbour from the high one (tag 2*axis+1);
 * faces as NPB's: axis 0 carries m1*m2 values, axis 1 (m0+2)*m2, axis 2 (m0+2)*(m1+2) (the ghosts of the
 * axes before it, so edges and corners arrive in two hops).
 *
 * Setup: resid (comm3), norm (MPI_Allreduce sum, then max, one double each). Each of `iters` iterations,
 * NPB's mg3P then resid and the norm: restrict the residual level by level down to the coarsest (rprj3, then
 * comm3 of the coarse residual), smooth there (psinv, comm3), then back up: prolongate (interp, no message),
 * resid (comm3), smooth (psinv, comm3) at every finer level.
 *
 * Declared flops per point of the level written: resid 30, psinv 30, rprj3 28, interp 12.
 *
 * usage: mg [N [iters]]     defaults 32 2; N divisible by each dims[d], every n_d >= 4
 */
#include "corpus.h"

#include <math.h>

#define MG_MAX_LEVELS 24

typedef struct {
    int m[3];        /* interior points per dimension */
    double *u, *r;   /* (m0 + 2) x (m1 + 2) x (m2 + 2) with one ghost layer */
} level_t;

typedef struct {
    MPI_Comm cart;
    int lo[3], hi[3]; /* neighbours in the cartesian communicator (its ranks equal world ranks: no reorder) */
    int nlev;
    level_t lev[MG_MAX_LEVELS]; /* 0 = finest */
    double *v;                  /* right-hand side on the finest level */
    double *sbuf, *rbuf;
} mg_t;

static size_t idx(const level_t *L, int i, int j, int k)
{
    return ((size_t)i * (L->m[1] + 2) + (size_t)j) * (L->m[2] + 2) + (size_t)k;
}

static size_t points(const level_t *L) { return (size_t)L->m[0] * L->m[1] * L->m[2]; }

/* copy the face of `a` at index `at` along `axis` into buf (to = 1) or buf into it (to = 0); the ranges
 * follow NPB: axis 0 interior j, k; axis 1 all i, interior k; axis 2 all i, j */
static int face(const level_t *L, double *a, int axis, int at, double *buf, int to)
{
    int n = 0;
    int i0 = axis == 0 ? at : (axis == 1 || axis == 2 ? 0 : 1), i1 = axis == 0 ? at : L->m[0] + 1;
    int j0 = axis == 1 ? at : (axis == 2 ? 0 : 1), j1 = axis == 1 ? at : (axis == 2 ? L->m[1] + 1 : L->m[1]);
    int k0 = axis == 2 ? at : 1, k1 = axis == 2 ? at : L->m[2];
    for (int i = i0; i <= i1; ++i)
        for (int j = j0; j <= j1; ++j)
            for (int k = k0; k <= k1; ++k) {
                if (to) buf[n] = a[idx(L, i, j, k)];
                else a[idx(L, i, j, k)] = buf[n];
                ++n;
            }
    return n;
}

static void comm3(corpus_t *c, mg_t *g, const level_t *L, double *a)
{
    for (int axis = 0; axis < 3; ++axis) {
        int m = L->m[axis];
        int n = face(L, a, axis, m, g->sbuf, 1);
        MPI_Sendrecv(g->sbuf, n, MPI_DOUBLE, g->hi[axis], 2 * axis, g->rbuf, n, MPI_DOUBLE, g->lo[axis], 2 * axis,
                     g->cart, MPI_STATUS_IGNORE);
        face(L, a, axis, 0, g->rbuf, 0);
        n = face(L, a, axis, 1, g->sbuf, 1);
        MPI_Sendrecv(g->sbuf, n, MPI_DOUBLE, g->lo[axis], 2 * axis + 1, g->rbuf, n, MPI_DOUBLE, g->hi[axis],
                     2 * axis + 1, g->cart, MPI_STATUS_IGNORE);
        face(L, a, axis, m + 1, g->rbuf, 0);
        c->calls += 2;
    }
}

static double nbsum(const level_t *L, const double *a, int i, int j, int k)
{
    return a[idx(L, i - 1, j, k)] + a[idx(L, i + 1, j, k)] + a[idx(L, i, j - 1, k)] + a[idx(L, i, j + 1, k)] +
           a[idx(L, i, j, k - 1)] + a[idx(L, i, j, k + 1)];
}

/* r = rhs - A u on level L (rhs: v on the finest level, r itself elsewhere), then comm3(r) */
static void resid(corpus_t *c, mg_t *g, level_t *L, const double *rhs)
{
    for (int i = 1; i <= L->m[0]; ++i)
        for (int j = 1; j <= L->m[1]; ++j)
            for (int k = 1; k <= L->m[2]; ++k) {
                size_t p = idx(L, i, j, k);
                L->r[p] = rhs[p] - (0.5 * L->u[p] - 0.05 * nbsum(L, L->u, i, j, k));
            }
    corpus_work(c, 30.0 * points(L));
    comm3(c, g, L, L->r);
}

/* u += S r, then comm3(u) */
static void psinv(corpus_t *c, mg_t *g, level_t *L)
{
    for (int i = 1; i <= L->m[0]; ++i)
        for (int j = 1; j <= L->m[1]; ++j)
            for (int k = 1; k <= L->m[2]; ++k) {
                size_t p = idx(L, i, j, k);
                L->u[p] = 0.6 * L->u[p] + 0.2 * L->r[p] + 0.02 * nbsum(L, L->r, i, j, k);
            }
    corpus_work(c, 30.0 * points(L));
    comm3(c, g, L, L->u);
}

/* coarse r = restriction of fine r (mean of the 8 children), then comm3 of the coarse r */
static void rprj3(corpus_t *c, mg_t *g, const level_t *F, level_t *C)
{
    for (int i = 1; i <= C->m[0]; ++i)
        for (int j = 1; j <= C->m[1]; ++j)
            for (int k = 1; k <= C->m[2]; ++k) {
                double s = 0.0;
                for (int d = 0; d < 8; ++d) s += F->r[idx(F, 2 * i - 1 + (d & 1), 2 * j - 1 + ((d >> 1) & 1), 2 * k - 1 + (d >> 2))];
                C->r[idx(C, i, j, k)] = 0.125 * s;
            }
    corpus_work(c, 28.0 * points(C));
    comm3(c, g, C, C->r);
}

/* fine u = prolongation of coarse u (each child takes its parent), no message */
static void interp(corpus_t *c, const level_t *C, level_t *F)
{
    for (int i = 1; i <= F->m[0]; ++i)
        for (int j = 1; j <= F->m[1]; ++j)
            for (int k = 1; k <= F->m[2]; ++k) F->u[idx(F, i, j, k)] += C->u[idx(C, (i + 1) / 2, (j + 1) / 2, (k + 1) / 2)];
    corpus_work(c, 12.0 * points(F));
}

static void zero(level_t *L, double *a)
{
    memset(a, 0, sizeof(double) * (size_t)(L->m[0] + 2) * (L->m[1] + 2) * (L->m[2] + 2));
}

/* norm2u3: the L2 norm and the max of r on the finest level (MPI_Allreduce sum, then max) */
static double norm2u3(corpus_t *c, mg_t *g, double *rmax)
{
    const level_t *L = &g->lev[0];
    double s = 0.0, mx = 0.0, ss = 0.0;
    for (int i = 1; i <= L->m[0]; ++i)
        for (int j = 1; j <= L->m[1]; ++j)
            for (int k = 1; k <= L->m[2]; ++k) {
                double x = L->r[idx(L, i, j, k)];
                s += x * x;
                if (fabs(x) > mx) mx = fabs(x);
            }
    MPI_Allreduce(&s, &ss, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&mx, rmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    c->calls += 2;
    return sqrt(ss);
}

static void mg3p(corpus_t *c, mg_t *g)
{
    int lb = g->nlev - 1;
    for (int l = 0; l < lb; ++l) rprj3(c, g, &g->lev[l], &g->lev[l + 1]);
    zero(&g->lev[lb], g->lev[lb].u);
    psinv(c, g, &g->lev[lb]);
    for (int l = lb - 1; l >= 0; --l) {
        level_t *F = &g->lev[l];
        if (l > 0) zero(F, F->u);
        interp(c, &g->lev[l + 1], F);
        resid(c, g, F, l == 0 ? g->v : F->r);
        psinv(c, g, F);
    }
}

int main(int argc, char **argv)
{
    corpus_t c;
    long par[2] = {32, 2};
    if (!corpus_init(&argc, &argv, &c, "mg [N [iters]]", 2, par)) return 2;
    int N = (int)par[0], iters = (int)par[1];
    int dims[3] = {0, 0, 0}, periods[3] = {1, 1, 1};
    MPI_Dims_create(c.P, 3, dims);
    int ok = 1;
    for (int d = 0; d < 3; ++d) ok = ok && N % dims[d] == 0 && N / dims[d] >= 4;
    if (!corpus_require(&c, ok, "mg needs N divisible by MPI_Dims_create(P, 3) with at least 4 points per rank and dimension"))
        return 2;

    mg_t g;
    memset(&g, 0, sizeof g);
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &g.cart);
    for (int d = 0; d < 3; ++d) MPI_Cart_shift(g.cart, d, 1, &g.lo[d], &g.hi[d]);
    int coords[3];
    MPI_Cart_coords(g.cart, c.rank, 3, coords);

    /* levels: halve while every side stays even and at least 2 */
    int m[3] = {N / dims[0], N / dims[1], N / dims[2]};
    size_t maxface = 0;
    while (g.nlev < MG_MAX_LEVELS) {
        level_t *L = &g.lev[g.nlev++];
        size_t cells = 1;
        for (int d = 0; d < 3; ++d) L->m[d] = m[d], cells *= (size_t)(m[d] + 2);
        L->u = corpus_alloc(cells, sizeof(double));
        L->r = corpus_alloc(cells, sizeof(double));
        for (int d = 0; d < 3; ++d) {
            size_t f = cells / (size_t)(m[d] + 2);
            if (f > maxface) maxface = f;
        }
        int more = 1;
        for (int d = 0; d < 3; ++d) more = more && m[d] % 2 == 0 && m[d] / 2 >= 2;
        if (!more) break;
        for (int d = 0; d < 3; ++d) m[d] /= 2;
    }
    level_t *F = &g.lev[0];
    size_t cells = (size_t)(F->m[0] + 2) * (F->m[1] + 2) * (F->m[2] + 2);
    g.v = corpus_alloc(cells, sizeof(double));
    for (int i = 1; i <= F->m[0]; ++i)
        for (int j = 1; j <= F->m[1]; ++j)
            for (int k = 1; k <= F->m[2]; ++k) {
                long gi = (long)coords[0] * F->m[0] + i, gj = (long)coords[1] * F->m[1] + j, gk = (long)coords[2] * F->m[2] + k;
                long h = (gi * 131 + gj * 71 + gk * 37) % 97;
                g.v[idx(F, i, j, k)] = h < 3 ? 1.0 : (h > 93 ? -1.0 : 0.0); /* NPB's +-1 charges */
            }
    g.sbuf = corpus_alloc(maxface, sizeof(double));
    g.rbuf = corpus_alloc(maxface, sizeof(double));

    corpus_start(&c);
    double rmax = 0.0;
    resid(&c, &g, F, g.v);
    double rnm2 = norm2u3(&c, &g, &rmax);
    for (int it = 0; it < iters; ++it) {
        mg3p(&c, &g);
        resid(&c, &g, F, g.v);
        rnm2 = norm2u3(&c, &g, &rmax);
    }
    corpus_report(&c, rnm2 + rmax);
    for (int l = 0; l < g.nlev; ++l) free(g.lev[l].u), free(g.lev[l].r);
    free(g.v), free(g.sbuf), free(g.rbuf);
    MPI_Comm_free(&g.cart);
    MPI_Finalize();
    return 0;
}
