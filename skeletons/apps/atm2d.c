/* atm2d: the real MPI program that skeletons/examples/atm2d.json models (seed 000 s.5.2).
 *
 * Two coupled fields (temperature u and humidity v) on an N x N grid diffuse with a 5-point stencil
 * (fixed zero boundary) on a Px x Py process mesh, Px = 2^floor(log2(P)/2), Py = P/Px; each rank owns
 * an lx x ly block (lx = N/Px, ly = N/Py) plus a one-point halo of both fields. Every step, each rank
 * exchanges with each neighbour one message holding the boundary line of u and of v (2*lx or 2*ly
 * doubles = the skeleton's ns_bytes / ew_bytes) in the skeleton's checkerboard order: red ranks
 * ((x+y) even) north, south, east, west; black ranks south, north, west, east; each exchange is
 * isend + irecv + waitall with the skeleton's tags (sent north: 1, sent south: 2, sent east: 3,
 * sent west: 4). Then it updates its block (the skeleton's "physics" compute).
 *
 * usage: atm2d N steps
 * prints on rank 0: result: <sum(u) + 2 sum(v)>, mpi_calls: <n>, time: <s>
 * mpi_calls counts MPI_Send/Recv/Isend/Irecv and collective calls of all ranks in the modelled part
 * (waits are not counted; nor are the reductions that print the results afterwards).
 * time is the span of the modelled part (max end - min start of MPI_Wtime over ranks).
 */
#include "app_common.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define TAG_N 1 /* a message sent northwards (to rank - Px) */
#define TAG_S 2 /* sent southwards (to rank + Px) */
#define TAG_E 3 /* sent eastwards (to rank + 1) */
#define TAG_W 4 /* sent westwards (to rank - 1) */

enum { NORTH, SOUTH, EAST, WEST };

typedef struct {
    int lx, ly, stride;
    double *u, *v;
    double *sbuf, *rbuf;
} block_t;

#define AT(b, i, j) ((size_t)(j) * (size_t)(b)->stride + (size_t)(i)) /* i: x in 0..lx+1, j: y in 0..ly+1 */

static double init_value(long gx, long gy, long salt)
{
    unsigned long h = (unsigned long)(gx * 73856093L) ^ (unsigned long)(gy * 19349663L) ^ (unsigned long)(salt * 83492791L);
    return (double)(h % 1000UL) / 1000.0;
}

/* pack the boundary line of u and v that goes towards dir */
static int pack(const block_t *b, int dir)
{
    int n = 0;
    const double *f[2] = {b->u, b->v};
    for (int k = 0; k < 2; ++k) {
        if (dir == NORTH || dir == SOUTH) {
            int j = dir == NORTH ? 1 : b->ly;
            for (int i = 1; i <= b->lx; ++i) b->sbuf[n++] = f[k][AT(b, i, j)];
        } else {
            int i = dir == WEST ? 1 : b->lx;
            for (int j = 1; j <= b->ly; ++j) b->sbuf[n++] = f[k][AT(b, i, j)];
        }
    }
    return n;
}

/* unpack a received line into the halo on side dir */
static void unpack(block_t *b, int dir)
{
    int n = 0;
    double *f[2] = {b->u, b->v};
    for (int k = 0; k < 2; ++k) {
        if (dir == NORTH || dir == SOUTH) {
            int j = dir == NORTH ? 0 : b->ly + 1;
            for (int i = 1; i <= b->lx; ++i) f[k][AT(b, i, j)] = b->rbuf[n++];
        } else {
            int i = dir == WEST ? 0 : b->lx + 1;
            for (int j = 1; j <= b->ly; ++j) f[k][AT(b, i, j)] = b->rbuf[n++];
        }
    }
}

/* one exchange: isend, irecv, waitall (as the skeleton's red-north-send/recv/wait etc.) */
static void exchange(block_t *b, int dir, int peer, long *calls)
{
    static const int send_tag[4] = {TAG_N, TAG_S, TAG_E, TAG_W};
    static const int recv_tag[4] = {TAG_S, TAG_N, TAG_W, TAG_E}; /* what the neighbour sent towards us */
    MPI_Request req[2];
    int n = pack(b, dir);
    MPI_Isend(b->sbuf, n, MPI_DOUBLE, peer, send_tag[dir], MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(b->rbuf, n, MPI_DOUBLE, peer, recv_tag[dir], MPI_COMM_WORLD, &req[1]);
    *calls += 2;
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    unpack(b, dir);
}

int main(int argc, char **argv)
{
    int P, rank;
    if (!app_init(&argc, &argv, 2, 2, "atm2d N steps", &P, &rank)) return 2;
    long N = atol(argv[1]);
    long steps = atol(argv[2]);
    int L = 0;
    while ((2 << L) <= P) ++L; /* L = floor(log2(P)) */
    int Px = 1 << (L / 2);     /* 2^floor(log2(P)/2) */
    int Py = P / Px;
    if (N <= 0 || steps < 0 || Px * Py != P || N % Px != 0 || N % Py != 0) {
        if (rank == 0)
            fprintf(stderr, "atm2d: need N > 0 divisible by Px=%d and Py=%d, and P = Px*Py (P=%d)\n", Px, Py, P);
        MPI_Finalize();
        return 2;
    }
    int x = rank % Px, y = rank / Px;
    int red = (x + y) % 2 == 0;
    block_t b;
    b.lx = (int)(N / Px);
    b.ly = (int)(N / Py);
    b.stride = b.lx + 2;
    size_t cells = (size_t)(b.lx + 2) * (size_t)(b.ly + 2);
    b.u = calloc(cells, sizeof(double));
    b.v = calloc(cells, sizeof(double));
    double *un = calloc(cells, sizeof(double));
    double *vn = calloc(cells, sizeof(double));
    int line = b.lx > b.ly ? b.lx : b.ly;
    b.sbuf = malloc(2 * (size_t)line * sizeof(double));
    b.rbuf = malloc(2 * (size_t)line * sizeof(double));
    if (!b.u || !b.v || !un || !vn || !b.sbuf || !b.rbuf) {
        fprintf(stderr, "atm2d: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int j = 1; j <= b.ly; ++j)
        for (int i = 1; i <= b.lx; ++i) {
            long gx = (long)x * b.lx + i - 1, gy = (long)y * b.ly + j - 1;
            b.u[AT(&b, i, j)] = init_value(gx, gy, 1);
            b.v[AT(&b, i, j)] = init_value(gx, gy, 2);
        }

    long calls = 0;
    double t0 = MPI_Wtime();
    for (long s = 0; s < steps; ++s) {
        if (red) {
            if (y > 0) exchange(&b, NORTH, rank - Px, &calls);
            if (y < Py - 1) exchange(&b, SOUTH, rank + Px, &calls);
            if (x < Px - 1) exchange(&b, EAST, rank + 1, &calls);
            if (x > 0) exchange(&b, WEST, rank - 1, &calls);
        } else {
            if (y < Py - 1) exchange(&b, SOUTH, rank + Px, &calls);
            if (y > 0) exchange(&b, NORTH, rank - Px, &calls);
            if (x > 0) exchange(&b, WEST, rank - 1, &calls);
            if (x < Px - 1) exchange(&b, EAST, rank + 1, &calls);
        }
        /* physics: diffusion of both fields and a relaxation coupling them */
        for (int j = 1; j <= b.ly; ++j)
            for (int i = 1; i <= b.lx; ++i) {
                size_t c = AT(&b, i, j);
                double uc = b.u[c], vc = b.v[c];
                double lu = b.u[c - 1] + b.u[c + 1] + b.u[c - b.stride] + b.u[c + b.stride] - 4.0 * uc;
                double lv = b.v[c - 1] + b.v[c + 1] + b.v[c - b.stride] + b.v[c + b.stride] - 4.0 * vc;
                un[c] = uc + 0.2 * lu + 0.05 * (vc - uc);
                vn[c] = vc + 0.1 * lv + 0.05 * (uc - vc);
            }
        app_work("physics", rank, 60.0 * (double)b.lx * (double)b.ly); /* the skeleton's flops_per_point = 60 */
        double *t = b.u; b.u = un; un = t;
        t = b.v; b.v = vn; vn = t;
    }
    double t1 = MPI_Wtime();

    double local = 0.0;
    for (int j = 1; j <= b.ly; ++j)
        for (int i = 1; i <= b.lx; ++i) local += b.u[AT(&b, i, j)] + 2.0 * b.v[AT(&b, i, j)];
    double sum = 0.0;
    MPI_Reduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("atm2d: N=%ld steps=%ld P=%d Px=%d Py=%d\n", N, steps, P, Px, Py);
        printf("result: %.15g\n", sum);
    }
    app_report(calls, t0, t1, rank);
    free(b.u); free(b.v); free(un); free(vn); free(b.sbuf); free(b.rbuf);
    MPI_Finalize();
    return 0;
}
