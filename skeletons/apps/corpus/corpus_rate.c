/* corpus_rate: this machine's rate of corpus_work's loop (flop/s of CPU time), which converts the compute
 * seconds of a skeleton built from mktrace traces of the corpus into flops (bench/corpus.py).
 *
 * Runs corpus_work(flops) `reps` times on one rank and prints `flop_rate: <median flops / thread CPU second>`
 * and `spread: <(max - min) / median>` over the repetitions. The thread CPU clock is the one mktrace reads
 * for compute gaps when the ranks outnumber the cores.
 *
 * usage: corpus_rate [mflops [reps]]     defaults 200 7 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 199309L
#endif
#include "corpus.h"

#include <time.h>

static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    corpus_t c;
    long par[2] = {200, 7};
    if (!corpus_init(&argc, &argv, &c, "corpus_rate [mflops [reps]]", 2, par)) return 2;
    double flops = 1e6 * (double)par[0], rate[64];
    int reps = par[1] > 64 ? 64 : (int)par[1];
    for (int i = 0; i < reps; ++i) {
        double t0 = cpu_s();
        corpus_work(&c, flops);
        rate[i] = flops / (cpu_s() - t0);
    }
    qsort(rate, (size_t)reps, sizeof rate[0], cmp);
    if (c.rank == 0) {
        printf("flop_rate: %.6g\n", rate[reps / 2]);
        printf("spread: %.4f\n", (rate[reps - 1] - rate[0]) / rate[reps / 2]);
        printf("sink: %g\n", c.sink);
    }
    MPI_Finalize();
    return 0;
}
