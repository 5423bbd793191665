/* Every MPI call the tracer knows, and SMPI's own compute and sleep, under smpirun -trace-ti (SimGrid 3.32), for
 * tests/ti_reader_test.cpp: which actions SMPI writes for each, and that the reader keeps every one. P >= 2.
 * SMPI build only (smpicc): smpi_execute_flops. */
#include <mpi.h>
#include <smpi/smpi.h>
#include <stdlib.h>
#include <unistd.h>

static double buf[4096], rbuf[4096];

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    const int right = (r + 1) % P, left = (r + P - 1) % P;
    MPI_Request q[4];
    MPI_Status st[4];
    int flag = 0, idx, counts[64], displs[64], ac[64], ad[64];
    for (int i = 0; i < P; ++i) {
        counts[i] = 2 + i;
        displs[i] = 8 * i;
        ac[i] = 1 + i + r; /* alltoallv: what r sends to i is what i expects from r */
        ad[i] = 16 * i;
    }
    smpi_execute_flops(1e6);
    usleep(2000); /* "sleep 0.002" with tracing/smpi/sleeping */
    /* point to point: sendrecv, waitany, test, testall, testany, testsome, waitall, ssend, rsend, bsend, any source */
    MPI_Sendrecv(buf, 3, MPI_DOUBLE, right, 7, rbuf, 3, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, &st[0]);
    MPI_Irecv(rbuf, 5, MPI_INT, left, 8, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(buf, 5, MPI_INT, right, 8, MPI_COMM_WORLD, &q[1]);
    MPI_Waitany(2, q, &idx, &st[0]);
    MPI_Waitany(2, q, &idx, &st[0]);
    MPI_Irecv(rbuf, 5, MPI_INT, left, 9, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(buf, 5, MPI_INT, right, 9, MPI_COMM_WORLD, &q[1]);
    do MPI_Test(&q[0], &flag, &st[0]); while (!flag);
    MPI_Wait(&q[1], &st[1]);
    MPI_Irecv(rbuf, 5, MPI_INT, left, 10, MPI_COMM_WORLD, &q[0]);
    MPI_Issend(buf, 5, MPI_INT, right, 10, MPI_COMM_WORLD, &q[1]);
    do MPI_Testall(2, q, &flag, MPI_STATUSES_IGNORE); while (!flag);
    MPI_Irecv(rbuf, 5, MPI_INT, left, 11, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(buf, 5, MPI_INT, right, 11, MPI_COMM_WORLD, &q[1]);
    for (int n = 0; n < 2;) {
        MPI_Testany(2, q, &idx, &flag, st);
        if (flag && idx == MPI_UNDEFINED) break; /* (both done) */
        if (flag) ++n;
    }
    MPI_Irecv(rbuf, 5, MPI_INT, left, 12, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(buf, 5, MPI_INT, right, 12, MPI_COMM_WORLD, &q[1]);
    for (int n = 0, out, ids[2]; n < 2;) {
        MPI_Testsome(2, q, &out, ids, st);
        if (out == MPI_UNDEFINED) break;
        n += out;
    }
    /* MPI_Waitall of the sends only, the receive waited after it (LULESH's halos): SMPI writes "waitall 1" */
    MPI_Irecv(rbuf, 5, MPI_INT, left, 16, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(buf, 5, MPI_INT, right, 16, MPI_COMM_WORLD, &q[1]);
    MPI_Waitall(1, &q[1], MPI_STATUSES_IGNORE);
    MPI_Wait(&q[0], &st[0]);
    if (r % 2 == 0) {
        MPI_Ssend(buf, 1, MPI_DOUBLE, right, 13, MPI_COMM_WORLD);
        MPI_Recv(rbuf, 1, MPI_DOUBLE, left, 13, MPI_COMM_WORLD, &st[0]);
    } else {
        MPI_Recv(rbuf, 1, MPI_DOUBLE, left, 13, MPI_COMM_WORLD, &st[0]);
        MPI_Ssend(buf, 1, MPI_DOUBLE, right, 13, MPI_COMM_WORLD);
    }
    if (r == 1) MPI_Rsend(buf, 2, MPI_DOUBLE, 0, 14, MPI_COMM_WORLD);
    if (r == 0) MPI_Recv(rbuf, 2, MPI_DOUBLE, MPI_ANY_SOURCE, 14, MPI_COMM_WORLD, &st[0]);
    int bsz = 100000;
    void *bb = malloc((size_t)bsz);
    MPI_Buffer_attach(bb, bsz);
    MPI_Irecv(rbuf, 2, MPI_DOUBLE, left, 15, MPI_COMM_WORLD, &q[0]);
    MPI_Bsend(buf, 2, MPI_DOUBLE, right, 15, MPI_COMM_WORLD);
    MPI_Wait(&q[0], &st[0]);
    MPI_Buffer_detach(&bb, &bsz);
    free(bb);
    smpi_execute_flops(2e6);
    /* every collective, with its sizes */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Bcast(buf, 4, MPI_DOUBLE, 1, MPI_COMM_WORLD);
    MPI_Reduce(buf, rbuf, 4, MPI_DOUBLE, MPI_SUM, 1, MPI_COMM_WORLD);
    MPI_Allreduce(buf, rbuf, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Gather(buf, 2, MPI_DOUBLE, rbuf, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Scatter(buf, 2, MPI_DOUBLE, rbuf, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Allgather(buf, 2, MPI_DOUBLE, rbuf, 2, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Alltoall(buf, 2, MPI_DOUBLE, rbuf, 2, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Gatherv(buf, counts[r], MPI_DOUBLE, rbuf, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Scatterv(buf, counts, displs, MPI_DOUBLE, rbuf, counts[r], MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Allgatherv(buf, counts[r], MPI_DOUBLE, rbuf, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Alltoallv(buf, ac, ad, MPI_DOUBLE, rbuf, ac, ad, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Reduce_scatter(buf, rbuf, counts, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Scan(buf, rbuf, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Exscan(buf, rbuf, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    /* non-blocking collectives */
    MPI_Ibcast(buf, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD, &q[0]);
    MPI_Wait(&q[0], &st[0]);
    MPI_Iallreduce(buf, rbuf, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q[0]);
    MPI_Wait(&q[0], &st[0]);
    MPI_Ibarrier(MPI_COMM_WORLD, &q[0]);
    MPI_Wait(&q[0], &st[0]);
    /* communicators: SMPI writes nothing for their creation, and no communicator on the calls made on them */
    MPI_Comm split, dup;
    MPI_Comm_split(MPI_COMM_WORLD, r % 2, -r, &split);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Bcast(buf, 3, MPI_DOUBLE, 0, split);
    MPI_Barrier(dup);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&split);
    smpi_execute_flops(3e6);
    MPI_Finalize();
    return 0;
}
