/* ft: a 3-D FFT time evolution in the style of the NAS Parallel Benchmarks' FT with its 2-D ("pencil")
 * layout (written here, not copied).
 *
 * N^3 complex points over an np1 x np2 process grid from MPI_Dims_create(P, 2): rank = me1 * np2 + me2.
 * Two communicators from MPI_Comm_split, as NPB's commslice1/commslice2: the row (colour me1, key me2: the np2
 * ranks of one row) and the column (colour me2, key me1: the np1 ranks of one column). Each rank holds
 * N^3 / P points (N/np1 x N/np2 pencils of length N).
 *
 * A 3-D FFT: 1-D FFTs along the local dimension, a transpose (MPI_Alltoall on the row communicator, blocks
 * of 16 N^3 / (P np2) bytes), FFTs along the second dimension, a transpose (MPI_Alltoall on the column
 * communicator, blocks of 16 N^3 / (P np1) bytes), FFTs along the third. The inverse runs the other way
 * (column, then row). Setup: the initial conditions and a forward FFT. Each of `iters` iterations: evolve
 * (a point-wise multiply), an inverse FFT, and the checksum of 1024 points: MPI_Reduce of one complex
 * (2 doubles) to rank 0 of MPI_COMM_WORLD.
 *
 * Declared flops: 5 N log2(N) per 1-D FFT of length N (N^2 / P of them per dimension and rank), initial
 * conditions 20 and evolve 8 per local point.
 *
 * usage: ft [N [iters]]     defaults 16 2; N a power of two divisible by np1 and np2
 */
#include "corpus.h"

typedef struct {
    int np1, np2;
    MPI_Comm row, col; /* commslice1 (size np2), commslice2 (size np1) */
    long N, nloc;      /* points per rank */
    int log2n;
    double *u, *w;     /* 2 * nloc doubles: the field, a buffer */
} ft_t;

/* the local 1-D transforms along one dimension: declared work, and a light mixing of each pencil */
static void cffts(corpus_t *c, ft_t *f, int dir)
{
    long n = f->N;
    for (long base = 0; base < f->nloc; base += n)
        for (long k = 0; k < n / 2; ++k) {
            double *a = f->u + 2 * (base + k), *b = f->u + 2 * (base + k + n / 2);
            double ar = a[0], ai = a[1];
            a[0] = 0.5 * (ar + b[0]), a[1] = 0.5 * (ai + b[1]);
            b[0] = 0.5 * (ar - b[0]) * dir, b[1] = 0.5 * (ai - b[1]) * dir;
        }
    corpus_work(c, 5.0 * (double)f->nloc * f->log2n);
}

/* a transpose across `comm` of `size` ranks: the local points in `size` blocks, MPI_Alltoall, and back */
static void transpose(corpus_t *c, ft_t *f, MPI_Comm comm, int size)
{
    int blk = (int)(2 * f->nloc / size); /* doubles per block */
    MPI_Alltoall(f->u, blk, MPI_DOUBLE, f->w, blk, MPI_DOUBLE, comm);
    ++c->calls;
    double *t = f->u;
    f->u = f->w;
    f->w = t;
}

static void fft(corpus_t *c, ft_t *f, int dir)
{
    if (dir > 0) {
        cffts(c, f, dir);
        transpose(c, f, f->row, f->np2);
        cffts(c, f, dir);
        transpose(c, f, f->col, f->np1);
        cffts(c, f, dir);
    } else {
        cffts(c, f, dir);
        transpose(c, f, f->col, f->np1);
        cffts(c, f, dir);
        transpose(c, f, f->row, f->np2);
        cffts(c, f, dir);
    }
}

int main(int argc, char **argv)
{
    corpus_t c;
    long par[2] = {16, 2};
    if (!corpus_init(&argc, &argv, &c, "ft [N [iters]]   (N a power of two)", 2, par)) return 2;
    ft_t f;
    memset(&f, 0, sizeof f);
    f.N = par[0];
    int iters = (int)par[1];
    int dims[2] = {0, 0};
    MPI_Dims_create(c.P, 2, dims);
    f.np1 = dims[0], f.np2 = dims[1];
    if (!corpus_require(&c, corpus_is_pow2((int)f.N) && f.N >= 2 && f.N % f.np1 == 0 && f.N % f.np2 == 0,
                        "ft needs N a power of two divisible by both sides of MPI_Dims_create(P, 2)"))
        return 2;
    while ((1L << f.log2n) < f.N) ++f.log2n;
    int me1 = c.rank / f.np2, me2 = c.rank % f.np2;
    MPI_Comm_split(MPI_COMM_WORLD, me1, me2, &f.row);
    MPI_Comm_split(MPI_COMM_WORLD, me2, me1, &f.col);
    f.nloc = f.N * (f.N / f.np1) * (f.N / f.np2);
    f.u = corpus_alloc((size_t)(2 * f.nloc), sizeof(double));
    f.w = corpus_alloc((size_t)(2 * f.nloc), sizeof(double));
    double *u0 = corpus_alloc((size_t)(2 * f.nloc), sizeof(double));

    corpus_start(&c);
    /* compute_initial_conditions: a deterministic field, then the forward transform */
    for (long q = 0; q < f.nloc; ++q) {
        long g = (long)c.rank * f.nloc + q;
        f.u[2 * q] = (double)((g * 1103515245L + 12345L) % 1000) / 1000.0;
        f.u[2 * q + 1] = (double)((g * 69069L + 1L) % 1000) / 1000.0;
    }
    corpus_work(&c, 20.0 * f.nloc);
    fft(&c, &f, +1);
    memcpy(u0, f.u, sizeof(double) * 2 * (size_t)f.nloc);

    double chk[2] = {0.0, 0.0}, sum[2] = {0.0, 0.0}, result = 0.0;
    for (int it = 1; it <= iters; ++it) {
        double decay = 1.0 / (1.0 + 0.01 * it); /* evolve: u = u0 * exp(-4 alpha pi^2 k^2 t), here a decay */
        for (long q = 0; q < 2 * f.nloc; ++q) f.u[q] = u0[q] * decay;
        corpus_work(&c, 8.0 * f.nloc);
        fft(&c, &f, -1);
        chk[0] = chk[1] = 0.0;
        for (long j = 0; j < 1024; ++j) {
            long q = (j * 37 + it) % f.nloc;
            chk[0] += f.u[2 * q], chk[1] += f.u[2 * q + 1];
        }
        MPI_Reduce(chk, sum, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        ++c.calls;
        if (c.rank == 0) result += sum[0] + 0.5 * sum[1];
    }
    corpus_report(&c, result);
    free(f.u), free(f.w), free(u0);
    MPI_Comm_free(&f.row);
    MPI_Comm_free(&f.col);
    MPI_Finalize();
    return 0;
}
