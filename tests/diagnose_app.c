/* A small MPI program with problems that can be injected, for `mksim diagnose` on real traced runs
 * (tests/diagnose_trace_test.cpp). Each step: compute (a busy loop on the thread's CPU clock), a ring exchange of 512 B
 * (MPI_Sendrecv), optionally a 1 MiB MPI_Send from rank 0 to rank 1 (rendezvous), then MPI_Allreduce.
 *
 *   diagnose_app STEPS WORK_US SLOW_RANK SLOW_FACTOR LATE_RECV_US
 *
 * SLOW_RANK (-1: none) computes SLOW_FACTOR times WORK_US each step (an imbalanced rank: the others wait for it
 * in the allreduce); LATE_RECV_US > 0: rank 0 sends 1 MiB to rank 1, which first computes LATE_RECV_US more
 * (a late receiver: rank 0 blocks in MPI_Send). */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A fixed amount of work: `seconds` of this thread's CPU time (ranks that share a core take longer in wall-clock
 * time, as real compute does). */
static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void spin(double seconds) {
  const double until = cpu_seconds() + seconds;
  volatile double x = 0;
  while (cpu_seconds() < until) x += 1.0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, P = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  if (argc != 6) {
    if (rank == 0) fprintf(stderr, "usage: diagnose_app STEPS WORK_US SLOW_RANK SLOW_FACTOR LATE_RECV_US\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int steps = atoi(argv[1]);
  const double work = atof(argv[2]) * 1e-6;
  const int slow_rank = atoi(argv[3]);
  const double factor = atof(argv[4]);
  const double late = atof(argv[5]) * 1e-6;
  enum { HALO = 64, BIG = 1 << 17 };
  double halo_out[HALO], halo_in[HALO];
  double* big = calloc(BIG, sizeof(double));
  memset(halo_out, 0, sizeof halo_out);
  double sum = 0;
  for (int s = 0; s < steps; ++s) {
    spin(rank == slow_rank ? factor * work : work);
    halo_out[0] = rank + s;
    MPI_Sendrecv(halo_out, HALO, MPI_DOUBLE, (rank + 1) % P, 1, halo_in, HALO, MPI_DOUBLE, (rank + P - 1) % P, 1,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (late > 0 && P > 1) {
      if (rank == 0) {
        big[0] = s;
        MPI_Send(big, BIG, MPI_DOUBLE, 1, 2, MPI_COMM_WORLD);
      } else if (rank == 1) {
        spin(late);
        MPI_Recv(big, BIG, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
    }
    double local = halo_in[0], global = 0;
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    sum += global;
  }
  if (rank == 0) printf("result: %.1f\n", sum);
  free(big);
  MPI_Finalize();
  return 0;
}
