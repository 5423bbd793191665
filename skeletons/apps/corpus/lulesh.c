/* lulesh: a Lagrangian hydrodynamics time step in the style of LULESH 2.0's communication (written here,
 * not copied).
 *
 * P must be a cube, tp^3: the ranks form a tp x tp x tp cube of domains, rank = col + tp * (row + tp * plane),
 * each an s x s x s block of elements ((s+1)^3 nodes). A domain's neighbours are the up to 26 domains at
 * offsets in {-1, 0, 1}^3 that exist (no wraparound), in LULESH's order: the 6 faces (plane -, +, row -, +,
 * column -, +), then the 12 edges, then the 8 corners.
 *
 * Each of `iters` time steps (LULESH's LagrangeLeapFrog, one exchange per kind):
 *   the time constraint: MPI_Allreduce (min) of one double;
 *   forces: MPI_Irecv from every neighbour, the force work, MPI_Isend to every neighbour, MPI_Waitall of the
 *     sends, MPI_Wait of each receive in order and the sum of the shared nodes (CommSBN, tag 1024, 3 fields:
 *     (s+1)^2 nodes per face, s+1 per edge, 1 per corner, 8 bytes each);
 *   positions and velocities: the same with 6 fields (CommSyncPosVel, tag 2048) around the nodal work;
 *   the element work, then the monotonic-Q gradients: faces only, s^2 elements x 3 fields (CommMonoQ,
 *     tag 3072), then the rest of the element work.
 *
 * Declared flops: forces 200 per element, nodal update 40 per node, elements 250 + 60 + 80 + 150 + 20 per
 * element.
 *
 * usage: lulesh [s [iters]]     defaults 8 4; P a cube (1, 8, 27, 64, ...)
 */
#include "corpus.h"

#include <math.h>

enum { MSG_SBN = 1024, MSG_POSVEL = 2048, MSG_MONOQ = 3072, MAX_NB = 26 };

typedef struct {
    int s, tp, coord[3]; /* coord: plane, row, col */
    int nnb, nb[MAX_NB], off[MAX_NB][3], nface; /* the first nface neighbours are the faces */
    double *nodes, *elems;                      /* (s+1)^3, s^3 */
    double *sbuf[MAX_NB], *rbuf[MAX_NB];
} dom_t;

static size_t node(const dom_t *d, int p, int r, int c) { return ((size_t)p * (d->s + 1) + (size_t)r) * (d->s + 1) + (size_t)c; }

/* the nodes of the boundary towards offset o: a face, an edge or a corner */
static int boundary_nodes(const dom_t *d, const int *o, size_t *out)
{
    int lo[3], hi[3], n = 0;
    for (int k = 0; k < 3; ++k) {
        lo[k] = o[k] < 0 ? 0 : (o[k] > 0 ? d->s : 0);
        hi[k] = o[k] < 0 ? 0 : d->s;
    }
    for (int p = lo[0]; p <= hi[0]; ++p)
        for (int r = lo[1]; r <= hi[1]; ++r)
            for (int c = lo[2]; c <= hi[2]; ++c) out[n++] = node(d, p, r, c);
    return n;
}

/* one nodal exchange (CommRecv / work / CommSend / CommSBN or CommSyncPosVel) */
static void nodal_exchange(corpus_t *c, dom_t *d, int tag, int fields, double work, size_t *idx)
{
    MPI_Request rreq[MAX_NB], sreq[MAX_NB];
    int len[MAX_NB];
    for (int q = 0; q < d->nnb; ++q) {
        int n = 1;
        for (int k = 0; k < 3; ++k) n *= d->off[q][k] == 0 ? d->s + 1 : 1;
        len[q] = n * fields;
        MPI_Irecv(d->rbuf[q], len[q], MPI_DOUBLE, d->nb[q], tag, MPI_COMM_WORLD, &rreq[q]);
        ++c->calls;
    }
    corpus_work(c, work);
    for (size_t q = 0; q < (size_t)(d->s + 1) * (d->s + 1) * (d->s + 1); ++q) d->nodes[q] = 0.99 * d->nodes[q] + 0.01 * (double)(q % 7);
    for (int q = 0; q < d->nnb; ++q) {
        int n = boundary_nodes(d, d->off[q], idx);
        for (int i = 0; i < n; ++i)
            for (int f = 0; f < fields; ++f) d->sbuf[q][i * fields + f] = d->nodes[idx[i]] * (f + 1);
        MPI_Isend(d->sbuf[q], len[q], MPI_DOUBLE, d->nb[q], tag, MPI_COMM_WORLD, &sreq[q]);
        ++c->calls;
    }
    MPI_Waitall(d->nnb, sreq, MPI_STATUSES_IGNORE);
    for (int q = 0; q < d->nnb; ++q) {
        MPI_Wait(&rreq[q], MPI_STATUS_IGNORE);
        int n = boundary_nodes(d, d->off[q], idx);
        for (int i = 0; i < n; ++i) d->nodes[idx[i]] += 0.125 * d->rbuf[q][i * fields];
    }
}

/* CommMonoQ: the 6 faces only, s^2 ghost elements x 3 fields */
static double monoq_exchange(corpus_t *c, dom_t *d)
{
    MPI_Request rreq[6], sreq[6];
    int len = d->s * d->s * 3;
    for (int q = 0; q < d->nface; ++q) {
        MPI_Irecv(d->rbuf[q], len, MPI_DOUBLE, d->nb[q], MSG_MONOQ, MPI_COMM_WORLD, &rreq[q]);
        ++c->calls;
    }
    corpus_work(c, 60.0 * d->s * d->s * d->s);
    for (int q = 0; q < d->nface; ++q) {
        for (int i = 0; i < len; ++i) d->sbuf[q][i] = d->elems[(size_t)i % ((size_t)d->s * d->s * d->s)];
        MPI_Isend(d->sbuf[q], len, MPI_DOUBLE, d->nb[q], MSG_MONOQ, MPI_COMM_WORLD, &sreq[q]);
        ++c->calls;
    }
    MPI_Waitall(d->nface, sreq, MPI_STATUSES_IGNORE);
    double ghost = 0.0;
    for (int q = 0; q < d->nface; ++q) {
        MPI_Wait(&rreq[q], MPI_STATUS_IGNORE);
        for (int i = 0; i < len; ++i) ghost += d->rbuf[q][i];
    }
    return ghost;
}

int main(int argc, char **argv)
{
    corpus_t c;
    long par[2] = {8, 4};
    if (!corpus_init(&argc, &argv, &c, "lulesh [s [iters]]   (P a cube)", 2, par)) return 2;
    dom_t d;
    memset(&d, 0, sizeof d);
    d.s = (int)par[0];
    int iters = (int)par[1];
    d.tp = (int)(cbrt((double)c.P) + 0.5);
    if (!corpus_require(&c, d.tp * d.tp * d.tp == c.P, "lulesh needs P a cube (1, 8, 27, 64, ...)")) return 2;
    d.coord[2] = c.rank % d.tp;
    d.coord[1] = (c.rank / d.tp) % d.tp;
    d.coord[0] = c.rank / (d.tp * d.tp);
    /* neighbours: faces, edges, corners (by the number of non-zero offsets), each in offset order */
    for (int nz = 1; nz <= 3; ++nz) {
        for (int o = 0; o < 27; ++o) {
            int off[3] = {o / 9 - 1, (o / 3) % 3 - 1, o % 3 - 1}, cnt = 0, in = 1, nc[3];
            for (int k = 0; k < 3; ++k) {
                cnt += off[k] != 0;
                nc[k] = d.coord[k] + off[k];
                in = in && nc[k] >= 0 && nc[k] < d.tp;
            }
            if (cnt != nz || !in) continue;
            d.nb[d.nnb] = nc[2] + d.tp * (nc[1] + d.tp * nc[0]);
            memcpy(d.off[d.nnb], off, sizeof off);
            ++d.nnb;
        }
        if (nz == 1) d.nface = d.nnb;
    }
    size_t nn = (size_t)(d.s + 1) * (d.s + 1) * (d.s + 1), ne = (size_t)d.s * d.s * d.s;
    size_t maxmsg = (size_t)(d.s + 1) * (d.s + 1) * 6;
    d.nodes = corpus_alloc(nn, sizeof(double));
    d.elems = corpus_alloc(ne, sizeof(double));
    for (int q = 0; q < d.nnb; ++q) {
        d.sbuf[q] = corpus_alloc(maxmsg, sizeof(double));
        d.rbuf[q] = corpus_alloc(maxmsg, sizeof(double));
    }
    size_t *idx = corpus_alloc((size_t)(d.s + 1) * (d.s + 1), sizeof(size_t));
    for (size_t q = 0; q < ne; ++q) d.elems[q] = 1.0 + 0.01 * (double)((q + (size_t)c.rank) % 13);

    corpus_start(&c);
    double dt = 1e-3, energy = 0.0;
    for (int it = 0; it < iters; ++it) {
        double local_dt = 1e-3, ghost;
        for (size_t q = 0; q < ne; ++q) local_dt = fmin(local_dt, 1e-3 / d.elems[q]);
        MPI_Allreduce(&local_dt, &dt, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD); /* TimeIncrement */
        ++c.calls;
        nodal_exchange(&c, &d, MSG_SBN, 3, 200.0 * (double)ne, idx);     /* CalcForceForNodes, CommSBN */
        nodal_exchange(&c, &d, MSG_POSVEL, 6, 40.0 * (double)nn, idx);   /* CalcPositionAndVelocity, CommSyncPosVel */
        corpus_work(&c, 250.0 * (double)ne);                               /* CalcLagrangeElements */
        for (size_t q = 0; q < ne; ++q) d.elems[q] = 0.9 * d.elems[q] + 0.1 * d.nodes[q % nn] * dt * 1e3;
        ghost = monoq_exchange(&c, &d);                                      /* CalcMonotonicQGradients, CommMonoQ */
        corpus_work(&c, (80.0 + 150.0 + 20.0) * (double)ne);               /* Q regions, materials, constraints */
        energy += ghost * 1e-6;
        for (size_t q = 0; q < ne; ++q) energy += d.elems[q] * 1e-6;
    }
    double total = 0.0;
    MPI_Reduce(&energy, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    ++c.calls;
    corpus_report(&c, total);
    for (int q = 0; q < d.nnb; ++q) free(d.sbuf[q]), free(d.rbuf[q]);
    free(d.nodes), free(d.elems), free(idx);
    MPI_Finalize();
    return 0;
}
