/* summa: the SUMMA dense matrix product C = A B (van de Geijn and Watts), as ScaLAPACK-style codes run it
 * (written here, not copied).
 *
 * N x N matrices in blocks over the pr x pc process grid of MPI_Dims_create(P, 2), made with
 * MPI_Cart_create (not periodic, no reordering); rank (r, c) owns the (N/pr) x (N/pc) blocks of A, B and C.
 * Row and column communicators from MPI_Cart_sub: the row keeps the column coordinate (size pc, rank c),
 * the column keeps the row coordinate (size pr, rank r).
 *
 * For each panel k of nb columns of A / rows of B (N / nb panels): the column of ranks that owns A's panel
 * broadcasts it along each row (MPI_Bcast on the row communicator, root (k nb) / (N/pc), (N/pr) * nb
 * doubles), the row of ranks that owns B's panel broadcasts it along each column (MPI_Bcast on the column
 * communicator, root (k nb) / (N/pr), nb * (N/pc) doubles), then every rank adds the panels' product to its
 * block of C. `reps` products in a row, then the checksum of C: MPI_Reduce (sum) of one double to rank 0.
 *
 * Declared flops: 2 (N/pr) (N/pc) nb per panel update.
 *
 * usage: summa [N [nb [reps]]]     defaults 64 8 1; N divisible by pr and pc, N/pr and N/pc by nb
 */
#include "corpus.h"

int main(int argc, char **argv)
{
    corpus_t c;
    long par[3] = {64, 8, 1};
    if (!corpus_init(&argc, &argv, &c, "summa [N [nb [reps]]]", 3, par)) return 2;
    int N = (int)par[0], nb = (int)par[1], reps = (int)par[2];
    int dims[2] = {0, 0}, periods[2] = {0, 0}, coords[2];
    MPI_Dims_create(c.P, 2, dims);
    int pr = dims[0], pc = dims[1];
    if (!corpus_require(&c, N % pr == 0 && N % pc == 0 && (N / pr) % nb == 0 && (N / pc) % nb == 0,
                        "summa needs N divisible by both sides of MPI_Dims_create(P, 2), and each block side by nb"))
        return 2;
    MPI_Comm grid, row, col;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
    MPI_Cart_coords(grid, c.rank, 2, coords);
    int keep_col[2] = {0, 1}, keep_row[2] = {1, 0};
    MPI_Cart_sub(grid, keep_col, &row);
    MPI_Cart_sub(grid, keep_row, &col);
    int mr = N / pr, mc = N / pc;
    double *a = corpus_alloc((size_t)mr * mc, sizeof(double)), *b = corpus_alloc((size_t)mr * mc, sizeof(double)),
           *cm = corpus_alloc((size_t)mr * mc, sizeof(double));
    double *ap = corpus_alloc((size_t)mr * nb, sizeof(double)), *bp = corpus_alloc((size_t)nb * mc, sizeof(double));
    for (int i = 0; i < mr; ++i)
        for (int j = 0; j < mc; ++j) {
            long gi = (long)coords[0] * mr + i, gj = (long)coords[1] * mc + j;
            a[(size_t)i * mc + j] = 1.0 / (1.0 + (double)((gi + 2 * gj) % 17));
            b[(size_t)i * mc + j] = 1.0 / (1.0 + (double)((3 * gi + gj) % 19));
        }

    corpus_start(&c);
    for (int rep = 0; rep < reps; ++rep) {
        memset(cm, 0, sizeof(double) * (size_t)mr * mc);
        for (int k = 0; k < N / nb; ++k) {
            int kg = k * nb, ocol = kg / mc, orow = kg / mr;
            if (coords[1] == ocol)
                for (int i = 0; i < mr; ++i) memcpy(ap + (size_t)i * nb, a + (size_t)i * mc + kg % mc, sizeof(double) * nb);
            MPI_Bcast(ap, mr * nb, MPI_DOUBLE, ocol, row);
            if (coords[0] == orow) memcpy(bp, b + (size_t)(kg % mr) * mc, sizeof(double) * (size_t)nb * mc);
            MPI_Bcast(bp, nb * mc, MPI_DOUBLE, orow, col);
            c.calls += 2;
            /* the panel update; the first row of C is computed for real, the rest is declared work */
            for (int t = 0; t < nb; ++t)
                for (int j = 0; j < mc; ++j) cm[j] += ap[t] * bp[(size_t)t * mc + j];
            corpus_work(&c, 2.0 * mr * mc * nb);
        }
    }
    double local = 0.0, total = 0.0;
    for (int j = 0; j < mc; ++j) local += cm[j];
    MPI_Reduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    ++c.calls;
    corpus_report(&c, total);
    free(a), free(b), free(cm), free(ap), free(bp);
    MPI_Comm_free(&row);
    MPI_Comm_free(&col);
    MPI_Comm_free(&grid);
    MPI_Finalize();
    return 0;
}
