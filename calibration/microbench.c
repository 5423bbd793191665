/* mkcalib_microbench: the MPI microbenchmarks behind the communication database (issue 6; seed 001
 * table 2, seed 004 s.2, seed 000 s.4.1's s, r, o). One kernel per run; mkcalib runs it with mpirun.
 *
 * usage: mkcalib_microbench --kernel NAME --sizes B1,B2,... [--reps R] [--warmup W] [--min-time S]
 *   kernels: pingpong send_overhead recv_overhead stream shift1d halo2d halo3d barrier bcast reduce allreduce
 *            allgather alltoall gather scatter compute (compute: sizes are working sets in bytes)
 *
 * For each size: the shortest of three single-iteration runs fixes the iteration count n (same on every
 * rank) so that one repetition lasts about --min-time seconds of wall time; then W warm-up repetitions (discarded) and
 * R timed repetitions of n iterations each. A repetition's value is the maximum over ranks of the time
 * each rank measured, divided by n (and, for compute, by the flops of one pass): every value is kept.
 *
 * Output on rank 0's stdout, one record per line (read by calibration/driver.cpp):
 *   mkcalib-microbench 1
 *   meta kernel NAME | meta np P | meta unit s|s/flop | meta hostname H | meta mpi_library TEXT
 *   m SIZE_BYTES ITERATIONS V1 ... VR        (values in seconds per operation, or per flop)
 *   done NAME COUNT                          (COUNT = number of m lines; absent if the run was cut short)
 * Errors: "mkcalib_microbench: ..." on stderr, exit code 2 (MPI_Abort).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZES 256
#define MAX_ITERS 1000000L
#define TAG_DATA 11
#define TAG_ACK 12

typedef enum {
    K_PINGPONG, K_SEND_OVERHEAD, K_RECV_OVERHEAD, K_STREAM, K_SHIFT1D, K_HALO2D, K_HALO3D, K_BARRIER, K_BCAST, K_REDUCE,
    K_ALLREDUCE, K_ALLGATHER, K_ALLTOALL, K_GATHER, K_SCATTER, K_COMPUTE, K_COUNT
} kernel_t;

static const char *KERNEL_NAMES[K_COUNT] = {
    "pingpong", "send_overhead", "recv_overhead", "stream", "shift1d", "halo2d", "halo3d", "barrier", "bcast", "reduce",
    "allreduce", "allgather", "alltoall", "gather", "scatter", "compute"};

typedef struct {
    kernel_t kernel;
    int rank, np;
    long sizes[MAX_SIZES];
    int nsizes;
    int reps, warmup;
    double min_time;
    char *sbuf, *rbuf;      /* message buffers, large enough for every size of this run */
    double *x, *y;          /* compute kernel arrays */
    MPI_Comm cart;          /* halo2d, halo3d: periodic 2-D or 3-D grid */
    int ndims;              /* 2 or 3 */
    int nb[6];              /* neighbours: -x, +x, -y, +y (, -z, +z) */
} ctx_t;

static volatile double g_sink; /* keeps the compute kernel's result alive */

static void die(const ctx_t *c, const char *msg, const char *arg)
{
    if (c == NULL || c->rank == 0) fprintf(stderr, "mkcalib_microbench: %s%s\n", msg, arg ? arg : "");
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

static long parse_long(const ctx_t *c, const char *text, const char *what)
{
    char *end = NULL;
    long v = strtol(text, &end, 10);
    if (end == text || *end != '\0' || v < 0) die(c, what, text);
    return v;
}

static void parse_sizes(ctx_t *c, const char *text)
{
    const char *p = text;
    c->nsizes = 0;
    while (*p) {
        char *end = NULL;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || (*end != ',' && *end != '\0')) die(c, "bad --sizes list: ", text);
        if (c->nsizes == MAX_SIZES) die(c, "too many sizes (max 256): ", text);
        c->sizes[c->nsizes++] = v;
        p = *end == ',' ? end + 1 : end;
    }
    if (c->nsizes == 0) die(c, "empty --sizes list", NULL);
}

static void parse_args(ctx_t *c, int argc, char **argv)
{
    int i, k, have_kernel = 0;
    c->reps = 10;
    c->warmup = 2;
    c->min_time = 1e-3;
    c->nsizes = 0;
    for (i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (v == NULL) die(c, "missing value after ", a);
        if (strcmp(a, "--kernel") == 0) {
            for (k = 0; k < K_COUNT && strcmp(v, KERNEL_NAMES[k]) != 0; ++k) {}
            if (k == K_COUNT) die(c, "unknown kernel: ", v);
            c->kernel = (kernel_t)k;
            have_kernel = 1;
        } else if (strcmp(a, "--sizes") == 0) {
            parse_sizes(c, v);
        } else if (strcmp(a, "--reps") == 0) {
            c->reps = (int)parse_long(c, v, "bad --reps: ");
        } else if (strcmp(a, "--warmup") == 0) {
            c->warmup = (int)parse_long(c, v, "bad --warmup: ");
        } else if (strcmp(a, "--min-time") == 0) {
            char *end = NULL;
            c->min_time = strtod(v, &end);
            if (end == v || *end != '\0' || !(c->min_time >= 0.0)) die(c, "bad --min-time: ", v);
        } else {
            die(c, "unknown option: ", a);
        }
        ++i;
    }
    if (!have_kernel) die(c, "missing --kernel", NULL);
    if (c->nsizes == 0) die(c, "missing --sizes", NULL);
    if (c->reps < 1) die(c, "--reps must be at least 1", NULL);
    if (c->np < 2 && c->kernel <= K_STREAM) die(c, "point-to-point kernels need at least 2 ranks", NULL);
}

/* ---- kernels: each runs n iterations and returns the time this rank measured (0 if it measures none) ---- */

static double k_pingpong(ctx_t *c, long size, long n)
{
    long i;
    double t0 = MPI_Wtime();
    if (c->rank == 0) {
        for (i = 0; i < n; ++i) {
            MPI_Send(c->sbuf, (int)size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD);
            MPI_Recv(c->rbuf, (int)size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        return (MPI_Wtime() - t0) / 2.0; /* one-way time: half a round trip */
    }
    if (c->rank == 1) {
        for (i = 0; i < n; ++i) {
            MPI_Recv(c->rbuf, (int)size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(c->sbuf, (int)size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD);
        }
    }
    return 0.0;
}

/* s: only the MPI_Send call is timed; a zero-byte acknowledgement after each message keeps sends from
 * piling up, and is not timed. */
static double k_send_overhead(ctx_t *c, long size, long n)
{
    long i;
    double total = 0.0;
    if (c->rank == 0) {
        for (i = 0; i < n; ++i) {
            double t0 = MPI_Wtime();
            MPI_Send(c->sbuf, (int)size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD);
            total += MPI_Wtime() - t0;
            MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    } else if (c->rank == 1) {
        for (i = 0; i < n; ++i) {
            MPI_Recv(c->rbuf, (int)size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_ACK, MPI_COMM_WORLD);
        }
    }
    return total;
}

/* r: rank 0 waits (MPI_Iprobe) until the message has arrived, then times only MPI_Recv. */
static double k_recv_overhead(ctx_t *c, long size, long n)
{
    long i;
    double total = 0.0;
    if (c->rank == 0) {
        for (i = 0; i < n; ++i) {
            int arrived = 0;
            double t0;
            while (!arrived) MPI_Iprobe(1, TAG_DATA, MPI_COMM_WORLD, &arrived, MPI_STATUS_IGNORE);
            t0 = MPI_Wtime();
            MPI_Recv(c->rbuf, (int)size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            total += MPI_Wtime() - t0;
            MPI_Send(NULL, 0, MPI_BYTE, 1, TAG_ACK, MPI_COMM_WORLD);
        }
    } else if (c->rank == 1) {
        for (i = 0; i < n; ++i) {
            MPI_Send(c->sbuf, (int)size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD);
            MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    return total;
}

/* o: n messages back to back, then one zero-byte acknowledgement; time per message (the caller divides by
 * n; the acknowledgement's latency is spread over the n messages). */
static double k_stream(ctx_t *c, long size, long n)
{
    long i;
    double t0 = MPI_Wtime();
    if (c->rank == 0) {
        for (i = 0; i < n; ++i) MPI_Send(c->sbuf, (int)size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD);
        MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return MPI_Wtime() - t0;
    }
    if (c->rank == 1) {
        for (i = 0; i < n; ++i)
            MPI_Recv(c->rbuf, (int)size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_ACK, MPI_COMM_WORLD);
    }
    return 0.0;
}

/* 1-D shift on a periodic ring: every rank sends to rank+1 and receives from rank-1 at once. */
static double k_shift1d(ctx_t *c, long size, long n)
{
    long i;
    int right = (c->rank + 1) % c->np, left = (c->rank + c->np - 1) % c->np;
    double t0 = MPI_Wtime();
    for (i = 0; i < n; ++i)
        MPI_Sendrecv(c->sbuf, (int)size, MPI_BYTE, right, TAG_DATA, c->rbuf, (int)size, MPI_BYTE, left, TAG_DATA,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return MPI_Wtime() - t0;
}

/* 2-D or 3-D halo on a periodic grid (MPI_Dims_create): one message of `size` bytes to each of the 4 (6)
 * neighbours. */
static double k_halo(ctx_t *c, long size, long n)
{
    long i;
    int d, k = 2 * c->ndims;
    MPI_Request req[12];
    double t0 = MPI_Wtime();
    for (i = 0; i < n; ++i) {
        for (d = 0; d < k; ++d) {
            /* a message sent towards +x arrives at that neighbour from its -x side: tag by direction */
            MPI_Irecv(c->rbuf + (size_t)d * (size_t)size, (int)size, MPI_BYTE, c->nb[d], TAG_DATA + (d ^ 1), c->cart,
                      &req[d]);
        }
        for (d = 0; d < k; ++d)
            MPI_Isend(c->sbuf + (size_t)d * (size_t)size, (int)size, MPI_BYTE, c->nb[d], TAG_DATA + d, c->cart,
                      &req[k + d]);
        MPI_Waitall(2 * k, req, MPI_STATUSES_IGNORE);
    }
    return MPI_Wtime() - t0;
}

/* Collectives: `size` is the message (bcast), the buffer (reduce, allreduce: bytes combined with MPI_BOR),
 * or the block per rank (allgather, alltoall, gather, scatter). Root 0. */
static double k_collective(ctx_t *c, long size, long n)
{
    long i;
    int s = (int)size;
    double t0 = MPI_Wtime();
    for (i = 0; i < n; ++i) {
        switch (c->kernel) {
            case K_BARRIER: MPI_Barrier(MPI_COMM_WORLD); break;
            case K_BCAST: MPI_Bcast(c->sbuf, s, MPI_BYTE, 0, MPI_COMM_WORLD); break;
            case K_REDUCE: MPI_Reduce(c->sbuf, c->rbuf, s, MPI_BYTE, MPI_BOR, 0, MPI_COMM_WORLD); break;
            case K_ALLREDUCE: MPI_Allreduce(c->sbuf, c->rbuf, s, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD); break;
            case K_ALLGATHER: MPI_Allgather(c->sbuf, s, MPI_BYTE, c->rbuf, s, MPI_BYTE, MPI_COMM_WORLD); break;
            case K_ALLTOALL: MPI_Alltoall(c->sbuf, s, MPI_BYTE, c->rbuf, s, MPI_BYTE, MPI_COMM_WORLD); break;
            case K_GATHER: MPI_Gather(c->sbuf, s, MPI_BYTE, c->rbuf, s, MPI_BYTE, 0, MPI_COMM_WORLD); break;
            case K_SCATTER: MPI_Scatter(c->sbuf, s, MPI_BYTE, c->rbuf, s, MPI_BYTE, 0, MPI_COMM_WORLD); break;
            default: break;
        }
    }
    return MPI_Wtime() - t0;
}

/* Compute: passes of y = a*y + x over two arrays of size/16 doubles (2 flops per element); every rank at
 * once, as the program's compute blocks run. Returns seconds per flop times n (the caller divides by n). */
static double k_compute(ctx_t *c, long size, long n)
{
    long i, j, len = size / 16 > 0 ? size / 16 : 1;
    const double a = 0.999;
    double t0, t;
    t0 = MPI_Wtime();
    for (i = 0; i < n; ++i)
        for (j = 0; j < len; ++j) c->y[j] = a * c->y[j] + c->x[j];
    t = MPI_Wtime() - t0;
    g_sink += c->y[len / 2];
    return t / (2.0 * (double)len);
}

static double run_kernel(ctx_t *c, long size, long n)
{
    switch (c->kernel) {
        case K_PINGPONG: return k_pingpong(c, size, n);
        case K_SEND_OVERHEAD: return k_send_overhead(c, size, n);
        case K_RECV_OVERHEAD: return k_recv_overhead(c, size, n);
        case K_STREAM: return k_stream(c, size, n);
        case K_SHIFT1D: return k_shift1d(c, size, n);
        case K_HALO2D:
        case K_HALO3D: return k_halo(c, size, n);
        case K_COMPUTE: return k_compute(c, size, n);
        default: return k_collective(c, size, n);
    }
}

/* One repetition on every rank: barrier, n iterations; returns the maximum over ranks of the measured time
 * divided by n, and in *wall the maximum over ranks of the repetition's whole duration (which, for s and r,
 * also holds the untimed acknowledgements: it is what the iteration count is chosen from). */
static double repetition(ctx_t *c, long size, long n, double *wall)
{
    double local[2], worst[2] = {0.0, 0.0};
    MPI_Barrier(MPI_COMM_WORLD);
    local[1] = MPI_Wtime();
    local[0] = run_kernel(c, size, n);
    local[1] = MPI_Wtime() - local[1];
    MPI_Allreduce(local, worst, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (wall != NULL) *wall = worst[1];
    return worst[0] / (double)n;
}

static void allocate(ctx_t *c)
{
    long max = 0, i;
    size_t bytes;
    for (i = 0; i < c->nsizes; ++i)
        if (c->sizes[i] > max) max = c->sizes[i];
    if (c->kernel == K_COMPUTE) {
        long len = max / 16 > 0 ? max / 16 : 1;
        c->x = malloc((size_t)len * sizeof(double));
        c->y = malloc((size_t)len * sizeof(double));
        if (c->x == NULL || c->y == NULL) die(c, "out of memory for the compute arrays", NULL);
        for (i = 0; i < len; ++i) {
            c->x[i] = 1e-3 * (double)(i % 7);
            c->y[i] = 1.0;
        }
        return;
    }
    if (max > 2147483647L / (c->np > 6 ? c->np : 6)) die(c, "message size too large for an int count", NULL);
    /* halo2d, halo3d: one block per direction; allgather/alltoall/gather: one block per rank */
    bytes = (size_t)(max > 0 ? max : 1) * (size_t)(c->np > 6 ? c->np : 6);
    c->sbuf = malloc(bytes);
    c->rbuf = malloc(bytes);
    if (c->sbuf == NULL || c->rbuf == NULL) die(c, "out of memory for the message buffers", NULL);
    memset(c->sbuf, 1, bytes);
    memset(c->rbuf, 0, bytes);
}

static void print_meta(const ctx_t *c)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    char host[MPI_MAX_PROCESSOR_NAME];
    int len = 0, i, hlen = 0;
    MPI_Get_library_version(version, &len);
    for (i = 0; i < len && version[i] != '\0'; ++i)
        if (version[i] == '\n' || version[i] == '\r' || version[i] == '\t') version[i] = ' ';
    while (i > 0 && version[i - 1] == ' ') --i; /* trailing blanks */
    version[i] = '\0';
    MPI_Get_processor_name(host, &hlen);
    printf("mkcalib-microbench 1\n");
    printf("meta kernel %s\n", KERNEL_NAMES[c->kernel]);
    printf("meta np %d\n", c->np);
    printf("meta unit %s\n", c->kernel == K_COMPUTE ? "s/flop" : "s");
    printf("meta hostname %s\n", host);
    printf("meta mpi_library %s\n", version);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    ctx_t c;
    int i, r;
    memset(&c, 0, sizeof c);
    c.cart = MPI_COMM_NULL;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c.np);
    parse_args(&c, argc, argv);
    if (c.kernel == K_HALO2D || c.kernel == K_HALO3D) {
        int dims[3] = {0, 0, 0}, periods[3] = {1, 1, 1}, d;
        c.ndims = c.kernel == K_HALO2D ? 2 : 3;
        MPI_Dims_create(c.np, c.ndims, dims);
        MPI_Cart_create(MPI_COMM_WORLD, c.ndims, dims, periods, 0, &c.cart);
        for (d = 0; d < c.ndims; ++d) MPI_Cart_shift(c.cart, d, 1, &c.nb[2 * d], &c.nb[2 * d + 1]);
    }
    if (c.kernel == K_BARRIER) { /* a barrier has no size */
        c.nsizes = 1;
        c.sizes[0] = 0;
    }
    allocate(&c);
    if (c.rank == 0) print_meta(&c);

    for (i = 0; i < c.nsizes; ++i) {
        long size = c.sizes[i], n;
        /* calibration: the shortest of three single-iteration repetitions (the first one is cold: page faults,
         * connection set-up), which also serve as a first warm-up; wall times are all-reduced, so every rank
         * computes the same n */
        double one = 0.0, wall = 0.0;
        double *values = malloc((size_t)c.reps * sizeof(double));
        if (values == NULL) die(&c, "out of memory", NULL);
        for (r = 0; r < 3; ++r) {
            repetition(&c, size, 1, &wall);
            if (r == 0 || wall < one) one = wall;
        }
        n = one > 0.0 ? (long)(c.min_time / one) + 1 : MAX_ITERS;
        if (n > MAX_ITERS) n = MAX_ITERS;
        if (n < 1) n = 1;
        for (r = 0; r < c.warmup; ++r) repetition(&c, size, n, NULL);
        for (r = 0; r < c.reps; ++r) values[r] = repetition(&c, size, n, NULL);
        if (c.rank == 0) {
            printf("m %ld %ld", size, n);
            for (r = 0; r < c.reps; ++r) printf(" %.17g", values[r]);
            printf("\n");
            fflush(stdout);
        }
        free(values);
    }
    if (c.rank == 0) {
        printf("done %s %d\n", KERNEL_NAMES[c.kernel], c.nsizes);
        fflush(stdout);
    }
    if (c.cart != MPI_COMM_NULL) MPI_Comm_free(&c.cart);
    free(c.sbuf);
    free(c.rbuf);
    free(c.x);
    free(c.y);
    MPI_Finalize();
    return 0;
}
