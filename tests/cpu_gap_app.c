/* For the tracer's CPU time of compute gaps (tests/trace_test.cpp): between two barriers each rank burns
 * CPU_MS milliseconds of its own CPU time, then sleeps SLEEP_MS (wall-clock time in which it does not run).
 *
 *   cpu_gap_app CPU_MS SLEEP_MS */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>

#include <stdlib.h>
#include <time.h>

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const double cpu = argc > 1 ? atof(argv[1]) * 1e-3 : 5e-3, sleep = argc > 2 ? atof(argv[2]) * 1e-3 : 30e-3;
  MPI_Barrier(MPI_COMM_WORLD);
  const double until = cpu_seconds() + cpu;
  volatile double x = 0;
  while (cpu_seconds() < until) x += 1.0;
  struct timespec ts = {(time_t)sleep, (long)((sleep - (double)(time_t)sleep) * 1e9)};
  nanosleep(&ts, NULL);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
