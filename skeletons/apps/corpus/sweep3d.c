/* sweep3d: a discrete-ordinates transport sweep in the style of Sweep3D (the KBA wavefront; written here,
 * not copied).
 *
 * An N x N x N grid; the (i, j) plane over an npe_i x npe_j process grid where npe_i is the largest divisor
 * of P not above sqrt(P) (so 2 x 4 at P = 8, 4 x 8 at 32) and npe_j = P / npe_i; rank = pi + npe_i * pj. Each
 * rank owns it = N/npe_i by jt = N/npe_j columns of all N planes. Neighbours without wraparound, absent on
 * the boundary (tested, no MPI_PROC_NULL).
 *
 * Each of `iters` source iterations: the source (work), then the 8 octants in Sweep3D's order (i, j and k
 * directions); in each, for each of 2 angle blocks of 3 angles, for each block of mk planes in the octant's k
 * direction: MPI_Recv of the i inflow (jt * mk * 3 doubles, tag 1) from the upstream i neighbour and of the j
 * inflow (it * mk * 3 doubles, tag 2) from the upstream j neighbour, the block's work, MPI_Send of the
 * outflows downstream. After the octants, the convergence test: MPI_Allreduce (max) of one double.
 *
 * Declared flops: 24 per cell and angle of a block, 10 per cell for the source.
 *
 * usage: sweep3d [N [mk [iters]]]     defaults 16 4 2; N divisible by npe_i, npe_j and mk
 */
#include "corpus.h"

#include <math.h>

enum { MMI = 3, MMO = 2, TAG_I = 1, TAG_J = 2 };

typedef struct {
    int npe_i, npe_j, pi, pj, it, jt, kt, mk;
    double *flux, *src; /* it x jt x kt */
    double *phii, *phij; /* jt * mk * MMI, it * mk * MMI */
} sw_t;

#define CELL(s, i, j, k) (((size_t)(k) * (s)->jt + (size_t)(j)) * (s)->it + (size_t)(i))

static int neighbour(const sw_t *s, int di, int dj)
{
    int i = s->pi + di, j = s->pj + dj;
    if (i < 0 || i >= s->npe_i || j < 0 || j >= s->npe_j) return -1;
    return i + s->npe_i * j;
}

static void octant(corpus_t *c, sw_t *s, int idir, int jdir, int kdir)
{
    int up_i = neighbour(s, -idir, 0), dn_i = neighbour(s, idir, 0);
    int up_j = neighbour(s, 0, -jdir), dn_j = neighbour(s, 0, jdir);
    int ni = s->jt * s->mk * MMI, nj = s->it * s->mk * MMI;
    int nkb = s->kt / s->mk;
    for (int mo = 0; mo < MMO; ++mo)
        for (int b = 0; b < nkb; ++b) {
            int kb = kdir > 0 ? b : nkb - 1 - b;
            if (up_i >= 0) { MPI_Recv(s->phii, ni, MPI_DOUBLE, up_i, TAG_I, MPI_COMM_WORLD, MPI_STATUS_IGNORE); ++c->calls; }
            else memset(s->phii, 0, sizeof(double) * (size_t)ni);
            if (up_j >= 0) { MPI_Recv(s->phij, nj, MPI_DOUBLE, up_j, TAG_J, MPI_COMM_WORLD, MPI_STATUS_IGNORE); ++c->calls; }
            else memset(s->phij, 0, sizeof(double) * (size_t)nj);
            for (int kk = 0; kk < s->mk; ++kk) {
                int k = kb * s->mk + (kdir > 0 ? kk : s->mk - 1 - kk);
                for (int m = 0; m < MMI; ++m) {
                    double w = 1.0 / (1.0 + mo * MMI + m);
                    for (int jj = 0; jj < s->jt; ++jj) {
                        int j = jdir > 0 ? jj : s->jt - 1 - jj;
                        for (int ii = 0; ii < s->it; ++ii) {
                            int i = idir > 0 ? ii : s->it - 1 - ii;
                            double *fi = &s->phii[((size_t)kk * s->jt + j) * MMI + m];
                            double *fj = &s->phij[((size_t)kk * s->it + i) * MMI + m];
                            double psi = (s->src[CELL(s, i, j, k)] + *fi + *fj) / 3.0;
                            *fi = psi, *fj = psi;
                            s->flux[CELL(s, i, j, k)] += w * psi;
                        }
                    }
                }
            }
            corpus_work(c, 24.0 * s->it * s->jt * s->mk * MMI);
            if (dn_i >= 0) { MPI_Send(s->phii, ni, MPI_DOUBLE, dn_i, TAG_I, MPI_COMM_WORLD); ++c->calls; }
            if (dn_j >= 0) { MPI_Send(s->phij, nj, MPI_DOUBLE, dn_j, TAG_J, MPI_COMM_WORLD); ++c->calls; }
        }
}

int main(int argc, char **argv)
{
    corpus_t c;
    long par[3] = {16, 4, 2};
    if (!corpus_init(&argc, &argv, &c, "sweep3d [N [mk [iters]]]", 3, par)) return 2;
    sw_t s;
    memset(&s, 0, sizeof s);
    int N = (int)par[0], iters = (int)par[2];
    s.mk = (int)par[1];
    for (int d = 1; d * d <= c.P; ++d)
        if (c.P % d == 0) s.npe_i = d;
    s.npe_j = c.P / s.npe_i;
    if (!corpus_require(&c, N % s.npe_i == 0 && N % s.npe_j == 0 && N % s.mk == 0,
                        "sweep3d needs N divisible by npe_i, npe_j and mk"))
        return 2;
    s.pi = c.rank % s.npe_i, s.pj = c.rank / s.npe_i;
    s.it = N / s.npe_i, s.jt = N / s.npe_j, s.kt = N;
    size_t cells = (size_t)s.it * s.jt * s.kt;
    s.flux = corpus_alloc(cells, sizeof(double));
    s.src = corpus_alloc(cells, sizeof(double));
    s.phii = corpus_alloc((size_t)s.jt * s.mk * MMI, sizeof(double));
    s.phij = corpus_alloc((size_t)s.it * s.mk * MMI, sizeof(double));

    corpus_start(&c);
    double err = 0.0;
    for (int iter = 0; iter < iters; ++iter) {
        for (int k = 0; k < s.kt; ++k) /* the source from the previous flux */
            for (int j = 0; j < s.jt; ++j)
                for (int i = 0; i < s.it; ++i) {
                    size_t q = CELL(&s, i, j, k);
                    s.src[q] = 1.0 + 0.1 * s.flux[q] / (1.0 + iter);
                    s.flux[q] = 0.0;
                }
        corpus_work(&c, 10.0 * (double)cells);
        for (int o = 0; o < 8; ++o) /* Sweep3D's octant order: i fastest, then j, then k */
            octant(&c, &s, (o & 1) ? -1 : 1, (o & 2) ? -1 : 1, (o & 4) ? -1 : 1);
        double local = 0.0;
        for (size_t q = 0; q < cells; ++q) local = fmax(local, fabs(s.flux[q] - s.src[q]));
        MPI_Allreduce(&local, &err, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        ++c.calls;
    }
    corpus_report(&c, err);
    free(s.flux), free(s.src), free(s.phii), free(s.phij);
    MPI_Finalize();
    return 0;
}
