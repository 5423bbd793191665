/* A collective-only MPI program for tests/collectives_measured_test.cpp (issue 6): ITERS rounds of an allreduce
 * of M bytes, a bcast of M bytes from rank 0 and a barrier (tests/data/coll_loop.json is its skeleton). Prints
 * the time of the loop, the latest rank's, in seconds: "elapsed_s <t>".
 * usage: coll_loop ITERS M */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const long iters = argc > 1 ? atol(argv[1]) : 2000;
  const long m = argc > 2 ? atol(argv[2]) : 1024;
  const long n = m / 8 > 0 ? m / 8 : 1;
  double* in = calloc((size_t)n, sizeof(double));
  double* out = calloc((size_t)n, sizeof(double));
  if (!in || !out) MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  for (long i = 0; i < iters; ++i) {
    in[0] = (double)(rank + i);
    MPI_Allreduce(in, out, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Bcast(out, (int)n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  double dt = MPI_Wtime() - t0, worst = 0;
  MPI_Reduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("elapsed_s %.9g\n", worst);
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
