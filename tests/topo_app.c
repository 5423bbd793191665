/* A real MPI program on process topologies and sub-communicators, for the tests of issue 23 (plain C99, OpenMPI
 * and SMPI builds).
 *
 *   topo_app forms           every topology form once, each followed by a message or a collective on what it
 *                            made, so that the trace can be checked call by call (tests/trace_test.cpp):
 *                            MPI_Dims_create (1 to 4 dimensions, with a fixed entry), MPI_Cart_create (1-D
 *                            periodic, 2-D periodic in one dimension, 3-D not periodic), MPI_Cart_shift,
 *                            MPI_Cart_sub (rows and columns), MPI_Comm_split (colour and key, with
 *                            MPI_UNDEFINED), MPI_Comm_dup, MPI_Comm_create, MPI_Comm_create_group,
 *                            MPI_Graph_create, MPI_Dist_graph_create_adjacent, MPI_Dist_graph_create, MPI_Scan,
 *                            MPI_Exscan, MPI_Testany, MPI_Testsome
 *   topo_app dims N          MPI_Dims_create(n, d) for n = 1..N and d = 1..4, one line "n d dims..." each (rank 0)
 *   topo_app grid STEPS B    STEPS iterations on a periodic 2-D grid (MPI_Dims_create(P, 2)): a 4-neighbour halo
 *                            of B bytes (Cart_shift), a bcast of B bytes along each row (Cart_sub), an allreduce of
 *                            B/8 doubles down each column, a ring of B bytes on a split with reversed keys, a
 *                            barrier on a dup; prints "time: <s>", from the barrier before the loop to the last
 *                            rank's end (the skeleton tests/data/topo_grid.json models it)
 *   topo_app swaps STEPS B   LAMMPS' exchange: on a periodic 3-D grid of MPI_Dims_create(P, 3)'s sides in reverse
 *                            order, along each axis of more than one rank an MPI_Irecv from the high neighbour and
 *                            an MPI_Send of B bytes to the low one, then the other way (STEPS times)
 *   topo_app fan TASKS B     a master and P - 1 workers: rank 0 sends B bytes to each worker in turn (a loop over
 *                            ranks 1..P-1), worker r returns floor((TASKS - r + P - 1) / (P - 1)) results of B
 *                            bytes (its round-robin share of TASKS), rank 0 receives TASKS results from any
 *                            source, then sends each worker a stop message, in turn
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double buf[1 << 16], rbuf[1 << 16];

static void forms(int rank, int P)
{
    MPI_Status st;
    /* Dims_create: 1..4 dimensions, and one with a fixed entry */
    for (int d = 1; d <= 4; ++d) {
        int dims[4] = {0, 0, 0, 0};
        MPI_Dims_create(P, d, dims);
    }
    int fixed[2] = {0, 1};
    MPI_Dims_create(P, 2, fixed);
    /* 1-D periodic ring */
    int d1[1] = {P}, p1[1] = {1}, src, dst;
    MPI_Comm ring;
    MPI_Cart_create(MPI_COMM_WORLD, 1, d1, p1, 0, &ring);
    MPI_Cart_shift(ring, 0, 1, &src, &dst);
    MPI_Sendrecv(buf, 1, MPI_DOUBLE, dst, 1, rbuf, 1, MPI_DOUBLE, src, 1, ring, &st);
    /* 2-D, periodic in the second dimension only; rows and columns */
    int d2[2] = {0, 0}, p2[2] = {0, 1};
    MPI_Dims_create(P, 2, d2);
    MPI_Comm grid, row, col;
    MPI_Cart_create(MPI_COMM_WORLD, 2, d2, p2, 0, &grid);
    for (int dir = 0; dir < 2; ++dir) {
        MPI_Cart_shift(grid, dir, 1, &src, &dst);
        MPI_Sendrecv(buf, 2, MPI_DOUBLE, dst, 2 + dir, rbuf, 2, MPI_DOUBLE, src, 2 + dir, grid, &st);
    }
    int keep_row[2] = {0, 1}, keep_col[2] = {1, 0};
    MPI_Cart_sub(grid, keep_row, &row);
    MPI_Cart_sub(grid, keep_col, &col);
    MPI_Bcast(buf, 3, MPI_DOUBLE, 0, row);
    MPI_Allreduce(buf, rbuf, 4, MPI_DOUBLE, MPI_SUM, col);
    /* 3-D, not periodic (MPI_PROC_NULL at the faces) */
    int d3[3] = {0, 0, 0}, p3[3] = {0, 0, 0};
    MPI_Dims_create(P, 3, d3);
    MPI_Comm cube;
    MPI_Cart_create(MPI_COMM_WORLD, 3, d3, p3, 0, &cube);
    for (int dir = 0; dir < 3; ++dir) MPI_Cart_shift(cube, dir, -1, &src, &dst);
    /* split: colour rank % 3 (rank 1 of every 3 undefined), key -rank; dup; create (evens) */
    MPI_Comm split, dup, evens, odds;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 3 == 1 ? MPI_UNDEFINED : rank % 3, -rank, &split);
    if (split != MPI_COMM_NULL) MPI_Barrier(split);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Barrier(dup);
    MPI_Group world, ge, go;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int ne = (P + 1) / 2, no = P / 2, members[1024];
    for (int i = 0; i < ne; ++i) members[i] = 2 * i;
    MPI_Group_incl(world, ne, members, &ge);
    MPI_Comm_create(MPI_COMM_WORLD, ge, &evens);
    if (evens != MPI_COMM_NULL) MPI_Reduce(buf, rbuf, 1, MPI_DOUBLE, MPI_SUM, 0, evens);
    /* graphs: a ring (Graph_create), the same as adjacent lists, and as Dist_graph_create from each rank */
    int index[1024], edges[2048];
    for (int i = 0; i < P; ++i) {
        index[i] = 2 * (i + 1);
        edges[2 * i] = (i + P - 1) % P;
        edges[2 * i + 1] = (i + 1) % P;
    }
    MPI_Comm graph, adj, dist;
    MPI_Graph_create(MPI_COMM_WORLD, P, index, edges, 0, &graph);
    int nb[2] = {(rank + P - 1) % P, (rank + 1) % P};
    int w[2] = {1, 1};
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, nb, w, 2, nb, w, MPI_INFO_NULL, 0, &adj);
    int one[1] = {rank}, deg[1] = {2};
    MPI_Dist_graph_create(MPI_COMM_WORLD, 1, one, deg, nb, w, MPI_INFO_NULL, 0, &dist);
    MPI_Sendrecv(buf, 1, MPI_DOUBLE, nb[1], 9, rbuf, 1, MPI_DOUBLE, nb[0], 9, adj, &st);
    /* scans, testany and testsome */
    MPI_Scan(buf, rbuf, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Exscan(buf, rbuf, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Request rq[2];
    int idx, flag = 0, outc = 0, ids[2], done = 0;
    MPI_Irecv(rbuf, 3, MPI_DOUBLE, nb[0], 10, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(buf, 3, MPI_DOUBLE, nb[1], 10, MPI_COMM_WORLD, &rq[1]);
    while (done < 2) {
        MPI_Testany(2, rq, &idx, &flag, MPI_STATUS_IGNORE);
        if (flag && idx != MPI_UNDEFINED) ++done;
    }
    MPI_Irecv(rbuf, 3, MPI_DOUBLE, nb[0], 11, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(buf, 3, MPI_DOUBLE, nb[1], 11, MPI_COMM_WORLD, &rq[1]);
    for (done = 0; done < 2;) {
        MPI_Testsome(2, rq, &outc, ids, MPI_STATUSES_IGNORE);
        if (outc != MPI_UNDEFINED) done += outc;
    }
    /* create_group last: only its members call it, so only they take its id (ids agree before it) */
    for (int i = 0; i < no; ++i) members[i] = P - 1 - 2 * i; /* P-1, P-3, ...: the group in decreasing order */
    MPI_Group_incl(world, no, members, &go);
    if ((P - 1 - rank) % 2 == 0 && rank >= P + 1 - 2 * no) { /* only the group's members call it */
        MPI_Comm_create_group(MPI_COMM_WORLD, go, 7, &odds);
        MPI_Barrier(odds);
        MPI_Comm_free(&odds);
    }
    MPI_Comm_free(&dist);
    MPI_Comm_free(&adj);
    MPI_Comm_free(&graph);
    if (evens != MPI_COMM_NULL) MPI_Comm_free(&evens);
    MPI_Comm_free(&dup);
    if (split != MPI_COMM_NULL) MPI_Comm_free(&split);
    MPI_Comm_free(&cube);
    MPI_Comm_free(&col);
    MPI_Comm_free(&row);
    MPI_Comm_free(&grid);
    MPI_Comm_free(&ring);
    MPI_Group_free(&go);
    MPI_Group_free(&ge);
    MPI_Group_free(&world);
}

static void grid(int rank, int P, int steps, int bytes)
{
    const int n = bytes / 8 > 0 ? bytes / 8 : 1;
    int dims[2] = {0, 0}, periods[2] = {1, 1}, keep_row[2] = {0, 1}, keep_col[2] = {1, 0};
    MPI_Comm cart, row, col, split, dup;
    MPI_Dims_create(P, 2, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    MPI_Cart_sub(cart, keep_row, &row);
    MPI_Cart_sub(cart, keep_col, &col);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &split);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int sr, ss, nbr[4];
    MPI_Comm_rank(split, &sr);
    MPI_Comm_size(split, &ss);
    MPI_Cart_shift(cart, 0, 1, &nbr[0], &nbr[1]); /* north, south */
    MPI_Cart_shift(cart, 1, 1, &nbr[2], &nbr[3]); /* west, east */
    MPI_Request rq[8];
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int s = 0; s < steps; ++s) {
        /* halo: receive from each neighbour, send the opposite way (tags: direction) */
        for (int k = 0; k < 4; ++k) MPI_Irecv(rbuf + k * n, n, MPI_DOUBLE, nbr[k], k, cart, &rq[k]);
        for (int k = 0; k < 4; ++k) MPI_Isend(buf + k * n, n, MPI_DOUBLE, nbr[k ^ 1], k, cart, &rq[4 + k]);
        MPI_Waitall(8, rq, MPI_STATUSES_IGNORE);
        MPI_Bcast(buf, n, MPI_DOUBLE, 0, row);
        MPI_Allreduce(buf, rbuf, n, MPI_DOUBLE, MPI_SUM, col);
        MPI_Irecv(rbuf, n, MPI_DOUBLE, (sr + ss - 1) % ss, 9, split, &rq[0]);
        MPI_Isend(buf, n, MPI_DOUBLE, (sr + 1) % ss, 9, split, &rq[1]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        MPI_Barrier(dup);
    }
    double t1 = MPI_Wtime(), start = 0, end = 0;
    MPI_Reduce(&t0, &start, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&t1, &end, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("grid: P=%d %dx%d steps=%d bytes=%d\ntime: %.9g\n", P, dims[0], dims[1], steps, bytes, end - start);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&split);
    MPI_Comm_free(&col);
    MPI_Comm_free(&row);
    MPI_Comm_free(&cart);
}

/* STEPS iterations on a 3-D grid of MPI_Dims_create(P, 3) that is not periodic: a 6-face halo from
   MPI_Cart_shift (MPI_PROC_NULL at the faces of the grid, sent and received as such), and one edge
   neighbour (+1, +1, 0) computed from the coordinates, MPI_PROC_NULL when it does not exist. */
static void cube(int rank, int P, int steps, int bytes)
{
    const int n = bytes / 8 > 0 ? bytes / 8 : 1;
    int dims[3] = {0, 0, 0}, periods[3] = {0, 0, 0}, c[3], nbr[6], edge[2];
    MPI_Comm cart;
    MPI_Dims_create(P, 3, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart);
    MPI_Cart_coords(cart, rank, 3, c);
    for (int d = 0; d < 3; ++d) MPI_Cart_shift(cart, d, 1, &nbr[2 * d], &nbr[2 * d + 1]);
    int up[3] = {c[0] + 1, c[1] + 1, c[2]}, down[3] = {c[0] - 1, c[1] - 1, c[2]};
    edge[0] = up[0] < dims[0] && up[1] < dims[1] ? -1 : MPI_PROC_NULL;
    edge[1] = down[0] >= 0 && down[1] >= 0 ? -1 : MPI_PROC_NULL;
    if (edge[0] == -1) MPI_Cart_rank(cart, up, &edge[0]);
    if (edge[1] == -1) MPI_Cart_rank(cart, down, &edge[1]);
    MPI_Request rq[16];
    for (int s = 0; s < steps; ++s) {
        for (int k = 0; k < 6; ++k) MPI_Irecv(rbuf + k * n, n, MPI_DOUBLE, nbr[k], k, cart, &rq[k]);
        for (int k = 0; k < 6; ++k) MPI_Isend(buf + k * n, n, MPI_DOUBLE, nbr[k ^ 1], k, cart, &rq[6 + k]);
        MPI_Irecv(rbuf + 6 * n, n, MPI_DOUBLE, edge[1], 7, cart, &rq[12]);
        MPI_Isend(buf + 6 * n, n, MPI_DOUBLE, edge[0], 7, cart, &rq[13]);
        MPI_Waitall(14, rq, MPI_STATUSES_IGNORE);
        MPI_Allreduce(buf, rbuf, 1, MPI_DOUBLE, MPI_SUM, cart);
    }
    MPI_Comm_free(&cart);
}

/* STEPS iterations on a periodic 3-D grid of MPI_Dims_create(P, 3) with N^3 points (NPB MG's comm3): along each
   axis an MPI_Sendrecv of the high face to the high neighbour from the low one, then of the low face to the low
   neighbour from the high one, faces of (N/d1)(N/d2), (N/d0 + 2)(N/d2) and (N/d0 + 2)(N/d1 + 2) doubles (the
   ghosts of the axes before carry edges and corners). At P <= 16 every side but the first is 1 or 2 ranks long,
   where the high and low neighbours are one rank. */
static void torus(int rank, int P, int steps, int N)
{
    int dims[3] = {0, 0, 0}, periods[3] = {1, 1, 1}, lo[3], hi[3];
    MPI_Comm cart;
    MPI_Dims_create(P, 3, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart);
    for (int d = 0; d < 3; ++d) MPI_Cart_shift(cart, d, 1, &lo[d], &hi[d]);
    const int m0 = N / dims[0], m1 = N / dims[1], m2 = N / dims[2];
    const int face[3] = {m1 * m2, (m0 + 2) * m2, (m0 + 2) * (m1 + 2)};
    int most = face[0];
    for (int a = 1; a < 3; ++a) most = face[a] > most ? face[a] : most;
    double *s = malloc(sizeof(double) * (size_t)most), *r = malloc(sizeof(double) * (size_t)most);
    for (int i = 0; i < most; ++i) s[i] = rank + i;
    for (int t = 0; t < steps; ++t)
        for (int a = 0; a < 3; ++a) {
            MPI_Sendrecv(s, face[a], MPI_DOUBLE, hi[a], 2 * a, r, face[a], MPI_DOUBLE, lo[a], 2 * a, cart, MPI_STATUS_IGNORE);
            MPI_Sendrecv(s, face[a], MPI_DOUBLE, lo[a], 2 * a + 1, r, face[a], MPI_DOUBLE, hi[a], 2 * a + 1, cart, MPI_STATUS_IGNORE);
        }
    free(s), free(r);
    MPI_Comm_free(&cart);
}

/* STEPS iterations of LAMMPS' exchange on a periodic 3-D grid whose sides are MPI_Dims_create(P, 3)'s in reverse
   order (as LAMMPS' own factoring gives at P = 4: 1 x 2 x 2): along each axis with more than one rank, an MPI_Irecv
   from the high neighbour and an MPI_Send of BYTES to the low one, then the other way; an axis of one rank is
   skipped. At P <= 8 the first axes are missing and every side is 1 or 2 ranks long. */
static void swaps(int rank, int P, int steps, int bytes)
{
    int d3[3] = {0, 0, 0}, periods[3] = {1, 1, 1}, lo[3], hi[3];
    MPI_Comm cart;
    MPI_Dims_create(P, 3, d3);
    int dims[3] = {d3[2], d3[1], d3[0]};
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart);
    for (int d = 0; d < 3; ++d) MPI_Cart_shift(cart, d, 1, &lo[d], &hi[d]);
    const int n = bytes / 8;
    for (int i = 0; i < n; ++i) buf[i] = rank + i;
    for (int t = 0; t < steps; ++t)
        for (int d = 0; d < 3; ++d) {
            if (dims[d] == 1) continue;
            MPI_Request rq;
            MPI_Irecv(rbuf, n, MPI_DOUBLE, hi[d], 0, cart, &rq);
            MPI_Send(buf, n, MPI_DOUBLE, lo[d], 0, cart);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
            MPI_Irecv(rbuf, n, MPI_DOUBLE, lo[d], 0, cart, &rq);
            MPI_Send(buf, n, MPI_DOUBLE, hi[d], 0, cart);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
        }
    MPI_Comm_free(&cart);
}

static void fan(int rank, int P, int tasks, int bytes)
{
    const int n = bytes / 8, W = P - 1;
    if (W < 1) return;
    if (rank == 0) {
        for (int w = 1; w < P; ++w) MPI_Send(buf, n, MPI_DOUBLE, w, 1, MPI_COMM_WORLD);
        for (int t = 0; t < tasks; ++t) MPI_Recv(rbuf, n, MPI_DOUBLE, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int w = 1; w < P; ++w) MPI_Send(buf, 0, MPI_DOUBLE, w, 3, MPI_COMM_WORLD);
    } else {
        MPI_Recv(rbuf, n, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int j = 0; j < (tasks - rank + W) / W; ++j) MPI_Send(buf, n, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD);
        MPI_Recv(rbuf, 0, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (P > 1024) MPI_Abort(MPI_COMM_WORLD, 2);
    if (argc > 1 && strcmp(argv[1], "forms") == 0) {
        forms(rank, P);
    } else if (argc > 2 && strcmp(argv[1], "dims") == 0) {
        const int N = atoi(argv[2]);
        for (int n = 1; rank == 0 && n <= N; ++n)
            for (int d = 1; d <= 4; ++d) {
                int dims[4] = {0, 0, 0, 0};
                MPI_Dims_create(n, d, dims);
                printf("%d %d", n, d);
                for (int k = 0; k < d; ++k) printf(" %d", dims[k]);
                printf("\n");
            }
    } else if (argc > 3 && strcmp(argv[1], "cube") == 0) {
        cube(rank, P, atoi(argv[2]), atoi(argv[3]));
    } else if (argc > 3 && strcmp(argv[1], "torus") == 0) {
        torus(rank, P, atoi(argv[2]), atoi(argv[3]));
    } else if (argc > 3 && strcmp(argv[1], "swaps") == 0) {
        swaps(rank, P, atoi(argv[2]), atoi(argv[3]));
    } else if (argc > 3 && strcmp(argv[1], "fan") == 0) {
        fan(rank, P, atoi(argv[2]), atoi(argv[3]));
    } else if (argc > 3 && strcmp(argv[1], "grid") == 0) {
        grid(rank, P, atoi(argv[2]), atoi(argv[3]));
    } else {
        if (rank == 0) fprintf(stderr, "usage: topo_app forms | dims N | grid STEPS BYTES | cube STEPS BYTES | torus STEPS N | swaps STEPS BYTES | fan TASKS BYTES\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Finalize();
    return 0;
}
