/* coin_ring: a ring exchange with a data-dependent extra message, the reference program of the skeleton
 * builder's probabilistic branches (issue 4: "branch probabilities from the traces").
 *
 * Every step (an annotated loop, mktrace.h "step"), each rank sends `bytes` bytes to its right neighbour
 * (rank + 1) % P and receives as many from its left one (isend, irecv, waitall, tag 1), then tosses a coin
 * from (seed, rank, step): with probability p it sends a 64-byte "extra" message to the right (MPI_Send,
 * tag 2). Every rank knows its left neighbour's coin for the step (the same function of (seed, left, step))
 * and receives that extra message when it was sent (MPI_Recv, tag 2). Then a little local work.
 * Whether a rank sends or receives the extra message depends on data, not on its rank: the skeleton has
 * two `prob` branches whose probabilities are fitted from the traces.
 *
 * usage: coin_ring steps p seed [bytes]   (P >= 2; bytes default 1024)
 * prints on rank 0: result: <checksum>, extra: <extra messages sent in all>, mpi_calls: <n>, time: <s>
 * mpi_calls counts the MPI_Isend/Irecv/Send/Recv calls of all ranks in the loop.
 */
#include "app_common.h"
#include "mktrace.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_RING 1
#define TAG_EXTRA 2
#define EXTRA_BYTES 64

static uint64_t splitmix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* the coin of `rank` at `step`: 1 with probability p */
static int coin(uint64_t seed, int rank, long step, double p)
{
    uint64_t h = splitmix(splitmix(seed ^ 0x636f696eULL) + (uint64_t)rank * 0x100000001b3ULL + (uint64_t)step);
    return (double)(h >> 11) * (1.0 / 9007199254740992.0) < p;
}

int main(int argc, char **argv)
{
    int P, rank;
    if (!app_init(&argc, &argv, 3, 4, "coin_ring steps p seed [bytes]", &P, &rank)) return 2;
    long steps = atol(argv[1]);
    double p = atof(argv[2]);
    uint64_t seed = (uint64_t)strtoull(argv[3], NULL, 10);
    long bytes = argc > 4 ? atol(argv[4]) : 1024;
    if (P < 2 || steps < 0 || p < 0 || p > 1 || bytes <= 0) {
        if (rank == 0) fprintf(stderr, "coin_ring: need P >= 2, steps >= 0, 0 <= p <= 1, bytes > 0\n");
        MPI_Finalize();
        return 2;
    }
    const int right = (rank + 1) % P, left = (rank + P - 1) % P;
    unsigned char *out = malloc((size_t)bytes), *in = malloc((size_t)bytes);
    unsigned char extra_out[EXTRA_BYTES], extra_in[EXTRA_BYTES];
    if (!out || !in) {
        fprintf(stderr, "coin_ring: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long i = 0; i < bytes; ++i) out[i] = (unsigned char)(rank * 31 + i);
    memset(extra_out, rank & 0xff, sizeof extra_out);
    uint64_t check = 0;
    long calls = 0, extra = 0;
    double t0 = MPI_Wtime();
    MKTRACE_LOOP_BEGIN("step");
    for (long s = 0; s < steps; ++s) {
        MKTRACE_LOOP_ITER("step");
        MPI_Request req[2];
        MPI_Isend(out, (int)bytes, MPI_BYTE, right, TAG_RING, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(in, (int)bytes, MPI_BYTE, left, TAG_RING, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        calls += 2;
        if (coin(seed, rank, s, p)) { /* 64 bytes go eagerly: the send does not wait for the receive */
            MPI_Send(extra_out, EXTRA_BYTES, MPI_BYTE, right, TAG_EXTRA, MPI_COMM_WORLD);
            ++calls;
            ++extra;
        }
        if (coin(seed, left, s, p)) {
            MPI_Recv(extra_in, EXTRA_BYTES, MPI_BYTE, left, TAG_EXTRA, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            ++calls;
            check += extra_in[0];
        }
        for (long i = 0; i < bytes; ++i) { /* local work: mix what came in into what goes out */
            out[i] = (unsigned char)(out[i] * 5 + in[i] + 1);
            check += out[i];
        }
    }
    MKTRACE_LOOP_END("step");
    double t1 = MPI_Wtime();
    uint64_t total_check = 0;
    long total_extra = 0;
    MPI_Reduce(&check, &total_check, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&extra, &total_extra, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("result: %llu\n", (unsigned long long)total_check);
        printf("extra: %ld\n", total_extra);
    }
    app_report(calls, t0, t1, rank);
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
