/* jacobi2d: the Jacobi 2-d program of seed 001 table 3 (SCALA's isospeed experiment on the Cray T3E).
 *
 * Jacobi iteration for the Poisson equation on an n x n grid, periodic in both directions, on a periodic
 * Px x Py process grid (MPI_Dims_create(P, 2), x along its shorter side: Px <= Py, rank = x + Px*y; for P a
 * power of two Px = 2^floor(log2(P)/2), as atm2d). Each rank owns an lx x ly block (lx = n/Px, ly = n/Py) plus
 * a one-point halo. A halo exchange sends a rank's four boundary lines to its four neighbours (west and east: a
 * column of ly doubles, 8n/Py bytes; north and south: a row of lx doubles, 8n/Px bytes): the four buffers are
 * packed, then four MPI_Irecv, four MPI_Isend and one MPI_Waitall (one communication phase), then the halos
 * are unpacked. After a first exchange of the initial halo, each iteration updates the block,
 *     u'(i,j) = 0.25 * (u(i-1,j) + u(i+1,j) + u(i,j-1) + u(i,j+1) + h2f(i,j)),
 * 5 flops per point (5n^2/P flops per rank), and exchanges the new halo. Built with smpicc, the program states
 * those flops with smpi_execute_flops, so that SimGrid's time-independent traces (smpirun -trace-ti) carry them.
 * On a 2 x 2 grid a rank's north and south neighbours are the same rank (as are west and east): two messages to
 * each of two partners; on a 1 x 2 grid west and east are the rank itself. A message's tag is the direction it
 * travels (0 west, 1 east, 2 north, 3 south; 4 more in the initial exchange), so that two messages to the same
 * partner are told apart, and so is the initial exchange from the iterations'.
 *
 * usage: jacobi2d n iterations        (n divisible by Px and Py)
 * prints on rank 0: result: <weighted sum of u>, mpi_calls: <8 * P * (iterations + 1)>, time: <s>
 */
#include "app_common.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { WEST, EAST, NORTH, SOUTH };

typedef struct {
    int lx, ly;
    int peer[4], len[4]; /* neighbour and doubles per message, by direction */
    double *u, *un, *f;
    double *sbuf[4], *rbuf[4];
} grid_t;

#define AT(g, i, j) ((size_t)(j) * (size_t)((g)->lx + 2) + (size_t)(i)) /* i: x in 0..lx+1, j: y in 0..ly+1 */

/* one halo exchange of u: pack, 4 irecv, 4 isend, waitall, unpack */
static void exchange(grid_t *g, int tag_base, long *calls)
{
    MPI_Request req[8];
    const int lx = g->lx, ly = g->ly;
    /* a message sent towards d carries the boundary line on side d */
    for (int j = 1; j <= ly; ++j) {
        g->sbuf[WEST][j - 1] = g->u[AT(g, 1, j)];
        g->sbuf[EAST][j - 1] = g->u[AT(g, lx, j)];
    }
    for (int i = 1; i <= lx; ++i) {
        g->sbuf[NORTH][i - 1] = g->u[AT(g, i, 1)];
        g->sbuf[SOUTH][i - 1] = g->u[AT(g, i, ly)];
    }
    /* the line that arrives from direction d was sent towards the opposite direction (d ^ 1) */
    for (int d = 0; d < 4; ++d)
        MPI_Irecv(g->rbuf[d], g->len[d], MPI_DOUBLE, g->peer[d], tag_base + (d ^ 1), MPI_COMM_WORLD, &req[d]);
    for (int d = 0; d < 4; ++d)
        MPI_Isend(g->sbuf[d], g->len[d], MPI_DOUBLE, g->peer[d], tag_base + d, MPI_COMM_WORLD, &req[4 + d]);
    *calls += 8;
    MPI_Waitall(8, req, MPI_STATUSES_IGNORE);
    for (int j = 1; j <= ly; ++j) {
        g->u[AT(g, 0, j)] = g->rbuf[WEST][j - 1];
        g->u[AT(g, lx + 1, j)] = g->rbuf[EAST][j - 1];
    }
    for (int i = 1; i <= lx; ++i) {
        g->u[AT(g, i, 0)] = g->rbuf[NORTH][i - 1];
        g->u[AT(g, i, ly + 1)] = g->rbuf[SOUTH][i - 1];
    }
}

/* one Jacobi update of the block (5 flops per point) */
static void update(grid_t *g)
{
    const int lx = g->lx, ly = g->ly;
    for (int j = 1; j <= ly; ++j)
        for (int i = 1; i <= lx; ++i)
            g->un[AT(g, i, j)] = 0.25 * (g->u[AT(g, i - 1, j)] + g->u[AT(g, i + 1, j)] + g->u[AT(g, i, j - 1)] +
                                         g->u[AT(g, i, j + 1)] + g->f[AT(g, i, j)]);
#ifdef SMPI_H
    /* built with smpicc: the update's flops, as time-independent traces record them (a compute action) and SMPI
     * times them on the platform's node speed (run with smpi/simulate-computation:no) */
    smpi_execute_flops(5.0 * lx * ly);
#endif
    double *t = g->u;
    g->u = g->un;
    g->un = t;
}

int main(int argc, char **argv)
{
    int P, rank;
    if (!app_init(&argc, &argv, 2, 2, "jacobi2d n iterations", &P, &rank)) return 2;
    long n = atol(argv[1]);
    long iters = atol(argv[2]);
    int dims[2] = {0, 0};
    MPI_Dims_create(P, 2, dims);
    int Px = dims[1], Py = dims[0];
    if (n <= 0 || iters < 0 || n % Px != 0 || n % Py != 0) {
        if (rank == 0) fprintf(stderr, "jacobi2d: need n > 0 divisible by Px=%d and Py=%d (P=%d)\n", Px, Py, P);
        MPI_Finalize();
        return 2;
    }
    int x = rank % Px, y = rank / Px;
    grid_t g;
    g.lx = (int)(n / Px);
    g.ly = (int)(n / Py);
    g.peer[WEST] = y * Px + (x + Px - 1) % Px;
    g.peer[EAST] = y * Px + (x + 1) % Px;
    g.peer[NORTH] = ((y + Py - 1) % Py) * Px + x;
    g.peer[SOUTH] = ((y + 1) % Py) * Px + x;
    g.len[WEST] = g.len[EAST] = g.ly;
    g.len[NORTH] = g.len[SOUTH] = g.lx;
    const size_t cells = (size_t)(g.lx + 2) * (size_t)(g.ly + 2);
    g.u = calloc(cells, sizeof(double));
    g.un = calloc(cells, sizeof(double));
    g.f = calloc(cells, sizeof(double));
    int ok = g.u && g.un && g.f;
    for (int d = 0; d < 4; ++d) {
        g.sbuf[d] = malloc((size_t)g.len[d] * sizeof(double));
        g.rbuf[d] = malloc((size_t)g.len[d] * sizeof(double));
        ok = ok && g.sbuf[d] && g.rbuf[d];
    }
    if (!ok) {
        fprintf(stderr, "jacobi2d: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* a source term with zero mean over each period of 17 points (h^2 folded in); u starts at 0 */
    for (int j = 1; j <= g.ly; ++j)
        for (int i = 1; i <= g.lx; ++i) {
            long gx = (long)x * g.lx + i - 1, gy = (long)y * g.ly + j - 1;
            g.f[AT(&g, i, j)] = (double)((gx * 7 + gy * 13) % 17) / 17.0 - 8.0 / 17.0;
        }

    long calls = 0;
    double t0 = MPI_Wtime();
    exchange(&g, 4, &calls); /* the initial halo */
    for (long it = 0; it < iters; ++it) {
        update(&g);
        exchange(&g, 0, &calls);
    }
    double t1 = MPI_Wtime();

    double local = 0.0, sum = 0.0;
    for (int j = 1; j <= g.ly; ++j)
        for (int i = 1; i <= g.lx; ++i)
            local += g.u[AT(&g, i, j)] * (double)(((long)x * g.lx + i + (long)y * g.ly + j) % 5 + 1);
    MPI_Reduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("jacobi2d: n=%ld iterations=%ld P=%d Px=%d Py=%d\n", n, iters, P, Px, Py);
        printf("result: %.15g\n", sum);
    }
    app_report(calls, t0, t1, rank);
    free(g.u);
    free(g.un);
    free(g.f);
    for (int d = 0; d < 4; ++d) {
        free(g.sbuf[d]);
        free(g.rbuf[d]);
    }
    MPI_Finalize();
    return 0;
}
