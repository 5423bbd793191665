/* nblist_app: a halo exchange over a neighbour list, as HPCG and LULESH keep one (tests/neighbour_list_test.cpp).
 * The ranks form MPI_Dims_create(P, 3)'s grid, not periodic; a rank's neighbours are the ranks at offsets in
 * {-1, 0, 1}^3 that exist, so ranks on faces, edges and corners have fewer. A face carries n*n doubles, an edge
 * n, a corner 1.
 *   sorted: MPI_Cart_create, the neighbours in rank order (HPCG): MPI_Irecv from each, MPI_Send to each,
 *           MPI_Wait of each receive in order;
 *   faces:  no topology call (rank = x2 + n2 (x1 + n1 x0)), the 6 faces, then the 12 edges, then the 8 corners
 *           (LULESH): MPI_Irecv from each, MPI_Isend to each, MPI_Waitall of the sends, MPI_Wait of each receive.
 * usage: nblist_app sorted|faces steps n
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int P, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 4 || (strcmp(argv[1], "sorted") && strcmp(argv[1], "faces"))) {
        if (rank == 0) fprintf(stderr, "usage: nblist_app sorted|faces steps n\n");
        MPI_Finalize();
        return 2;
    }
    const int sorted = !strcmp(argv[1], "sorted"), steps = atoi(argv[2]), n = atoi(argv[3]);
    int dims[3] = {0, 0, 0}, periods[3] = {0, 0, 0}, c[3];
    MPI_Dims_create(P, 3, dims);
    MPI_Comm comm = MPI_COMM_WORLD;
    if (sorted) MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &comm);
    c[0] = rank / (dims[1] * dims[2]), c[1] = (rank / dims[2]) % dims[1], c[2] = rank % dims[2];
    int nnb = 0, nb[26], len[26];
    for (int nz = sorted ? 0 : 1; nz <= (sorted ? 0 : 3); ++nz) /* sorted: every offset at once, lexicographic = rank order */
        for (int o = 0; o < 27; ++o) {
            int off[3] = {o / 9 - 1, (o / 3) % 3 - 1, o % 3 - 1}, cnt = 0, in = 1, q[3];
            for (int d = 0; d < 3; ++d) cnt += off[d] != 0, q[d] = c[d] + off[d], in = in && q[d] >= 0 && q[d] < dims[d];
            if (!cnt || !in || (nz && cnt != nz)) continue;
            nb[nnb] = (q[0] * dims[1] + q[1]) * dims[2] + q[2];
            len[nnb] = cnt == 1 ? n * n : cnt == 2 ? n : 1;
            ++nnb;
        }
    double *buf = calloc((size_t)27 * n * n, sizeof(double));
    MPI_Request rr[26], sr[26];
    for (int s = 0; s < steps; ++s) {
        for (int q = 0; q < nnb; ++q) MPI_Irecv(buf + (size_t)q * n * n, len[q], MPI_DOUBLE, nb[q], 7, comm, &rr[q]);
        for (int q = 0; q < nnb; ++q) {
            if (sorted) MPI_Send(buf + (size_t)26 * n * n, len[q], MPI_DOUBLE, nb[q], 7, comm);
            else MPI_Isend(buf + (size_t)26 * n * n, len[q], MPI_DOUBLE, nb[q], 7, comm, &sr[q]);
        }
        if (!sorted) MPI_Waitall(nnb, sr, MPI_STATUSES_IGNORE);
        for (int q = 0; q < nnb; ++q) MPI_Wait(&rr[q], MPI_STATUS_IGNORE);
        double x = s, y = 0;
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    free(buf);
    if (sorted) MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
