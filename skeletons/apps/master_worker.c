/* master_worker: the real MPI program that skeletons/examples/master_worker.json models (seed 004).
 *
 * Rank 0 (the master) hands out `tasks` tasks to W = P-1 workers with the skeleton's static
 * round-robin assignment (task t goes to worker 1 + t % W):
 *   master: W MPI_Recv(ANY_SOURCE, tag 1) of the workers' 16-byte 'ready' requests; MPI_Isend of the
 *     first min(depth*W, tasks) tasks (tag 2); then for every further task one MPI_Recv(ANY_SOURCE,
 *     tag 3) of a result, merged into the checksum, and MPI_Isend of the next task; then the last
 *     results are drained (MPI_Recv ANY_SOURCE), MPI_Waitall completes the task sends, and a 0-byte
 *     MPI_Send (tag 4) stops each worker;
 *   worker w: MPI_Send of the request, then for each of its floor((tasks - w + W) / W) tasks MPI_Recv
 *     of the task, the work, and MPI_Isend of the result; MPI_Recv of the stop; MPI_Waitall.
 * A task is task_bytes of data generated from (seed, t); its cost depends on its data: it is long
 * (25 mixing rounds over the data, like the skeleton's long_flops / short_flops = 5e8 / 2e7) when its
 * second word falls below p_long * 2^32, short (1 round) otherwise. Results are result_bytes of 64-bit
 * words; the master's checksum is a sum modulo 2^64, so it does not depend on the order in which the
 * wildcard receives see the results, nor on P.
 *
 * usage: master_worker tasks seed [depth [p_long [task_bytes [result_bytes]]]]
 *        (defaults as the skeleton: depth 2, p_long 0.1, task_bytes 65536, result_bytes 4096;
 *         requests are 16 bytes; P >= 2)
 * prints on rank 0: result: <checksum>, long_tasks: <n>, mpi_calls: <n>, time: <s>
 * mpi_calls counts MPI_Send/Recv/Isend and collective calls of all ranks in the modelled part.
 */
#include "app_common.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define REQUEST_BYTES 16
#define LONG_ROUNDS 25

static uint64_t splitmix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* the task's data: word 0 = its number, then pseudo-random words from (seed, t) */
static void make_task(uint32_t *w, long nw, uint64_t seed, long t)
{
    uint64_t s = splitmix(seed * 0x100000001b3ULL + (uint64_t)t);
    w[0] = (uint32_t)t;
    for (long k = 1; k < nw; ++k) {
        s = splitmix(s);
        w[k] = (uint32_t)(s >> 32);
    }
}

/* the work: mix the data (rounds depend on the data), fold it into nr result words */
static int do_task(uint32_t *w, long nw, uint64_t *res, long nr, double p_long)
{
    int is_long = (double)w[1] < p_long * 4294967296.0;
    int rounds = is_long ? LONG_ROUNDS : 1;
    uint64_t h = 0xcbf29ce484222325ULL ^ w[0];
    for (long k = 0; k < nr; ++k) res[k] = 0;
    for (int r = 0; r < rounds; ++r)
        for (long k = 0; k < nw; ++k) {
            h = (h ^ w[k]) * 0x100000001b3ULL;
            w[k] ^= (uint32_t)(h >> 29);
            res[k % nr] += h;
        }
    res[0] = ((uint64_t)w[0] << 1) | (uint64_t)is_long; /* which task, and its kind */
    return is_long;
}

/* the master's bookkeeping for one result */
static void merge(const uint64_t *res, long nr, uint64_t *checksum, long *nlong)
{
    uint64_t t = res[0] >> 1;
    *nlong += (long)(res[0] & 1);
    for (long k = 1; k < nr; ++k) *checksum += res[k] * (uint64_t)(2 * k + 1) + t;
}

int main(int argc, char **argv)
{
    int P, rank;
    if (!app_init(&argc, &argv, 2, 6, "master_worker tasks seed [depth [p_long [task_bytes [result_bytes]]]]", &P, &rank))
        return 2;
    long tasks = atol(argv[1]);
    uint64_t seed = (uint64_t)strtoull(argv[2], NULL, 10);
    long depth = argc > 3 ? atol(argv[3]) : 2;
    double p_long = argc > 4 ? atof(argv[4]) : 0.1;
    long task_bytes = argc > 5 ? atol(argv[5]) : 65536;
    long result_bytes = argc > 6 ? atol(argv[6]) : 4096;
    if (P < 2 || tasks < 0 || depth < 1 || task_bytes < 8 || task_bytes % 4 != 0 || result_bytes < 16 ||
        result_bytes % 8 != 0) {
        if (rank == 0)
            fprintf(stderr, "master_worker: need P >= 2 (P=%d), tasks >= 0, depth >= 1, task_bytes >= 8 "
                            "(multiple of 4), result_bytes >= 16 (multiple of 8)\n", P);
        MPI_Finalize();
        return 2;
    }
    long W = P - 1;
    long nw = task_bytes / 4, nr = result_bytes / 8;
    long calls = 0, nlong = 0;
    uint64_t checksum = 0;
    double t0 = 0.0, t1 = 0.0;

    if (rank == 0) {
        long first_round = depth * W < tasks ? depth * W : tasks;
        /* every task keeps its buffer until the final waitall (the sends are completed there) */
        uint32_t *tbuf = malloc((size_t)(tasks > 0 ? tasks : 1) * (size_t)task_bytes);
        MPI_Request *treq = malloc((size_t)(tasks > 0 ? tasks : 1) * sizeof(MPI_Request));
        uint64_t *res = malloc((size_t)result_bytes);
        char request[REQUEST_BYTES];
        if (!tbuf || !treq || !res) {
            fprintf(stderr, "master_worker: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (long t = 0; t < tasks; ++t) make_task(tbuf + t * nw, nw, seed, t);
        t0 = MPI_Wtime();
        for (long i = 0; i < W; ++i) {
            MPI_Recv(request, REQUEST_BYTES, MPI_BYTE, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            ++calls;
        }
        for (long t = 0; t < first_round; ++t) {
            MPI_Isend(tbuf + t * nw, (int)task_bytes, MPI_BYTE, (int)(1 + t % W), 2, MPI_COMM_WORLD, &treq[t]);
            ++calls;
        }
        for (long t = first_round; t < tasks; ++t) {
            MPI_Recv(res, (int)result_bytes, MPI_BYTE, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            merge(res, nr, &checksum, &nlong);
            MPI_Isend(tbuf + t * nw, (int)task_bytes, MPI_BYTE, (int)(1 + t % W), 2, MPI_COMM_WORLD, &treq[t]);
            calls += 2;
        }
        for (long i = 0; i < first_round; ++i) {
            MPI_Recv(res, (int)result_bytes, MPI_BYTE, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            merge(res, nr, &checksum, &nlong);
            ++calls;
        }
        MPI_Waitall((int)tasks, treq, MPI_STATUSES_IGNORE);
        for (long w = 0; w < W; ++w) {
            MPI_Send(NULL, 0, MPI_BYTE, (int)(1 + w), 4, MPI_COMM_WORLD);
            ++calls;
        }
        t1 = MPI_Wtime();
        free(tbuf); free(treq); free(res);
    } else {
        long my_tasks = (tasks - rank + W) / W;
        if (my_tasks < 0) my_tasks = 0;
        uint32_t *task = malloc((size_t)task_bytes);
        /* every result keeps its buffer until the final waitall */
        uint64_t *res = malloc((size_t)(my_tasks > 0 ? my_tasks : 1) * (size_t)result_bytes);
        MPI_Request *rreq = malloc((size_t)(my_tasks > 0 ? my_tasks : 1) * sizeof(MPI_Request));
        char request[REQUEST_BYTES] = {0};
        if (!task || !res || !rreq) {
            fprintf(stderr, "master_worker: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        request[0] = (char)rank;
        t0 = MPI_Wtime();
        MPI_Send(request, REQUEST_BYTES, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        ++calls;
        for (long i = 0; i < my_tasks; ++i) {
            MPI_Recv(task, (int)task_bytes, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            do_task(task, nw, res + i * nr, nr, p_long);
            MPI_Isend(res + i * nr, (int)result_bytes, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &rreq[i]);
            calls += 2;
        }
        MPI_Recv(NULL, 0, MPI_BYTE, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        ++calls;
        MPI_Waitall((int)my_tasks, rreq, MPI_STATUSES_IGNORE);
        t1 = MPI_Wtime();
        free(task); free(res); free(rreq);
    }

    if (rank == 0) {
        printf("master_worker: tasks=%ld seed=%llu depth=%ld p_long=%g task_bytes=%ld result_bytes=%ld P=%d\n",
               tasks, (unsigned long long)seed, depth, p_long, task_bytes, result_bytes, P);
        printf("result: %llu\n", (unsigned long long)checksum);
        printf("long_tasks: %ld\n", nlong);
    }
    app_report(calls, t0, t1, rank);
    MPI_Finalize();
    return 0;
}
