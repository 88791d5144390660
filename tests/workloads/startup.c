/* A clock made of functions, for the start-up benchmark (bench/startup.py).
 *
 * 4096 distinct functions fn_000 .. fn_fff (three hex digits) run one after
 * another; function k spins until start + (k+1) * PERIOD on CLOCK_MONOTONIC
 * (the clock Python's time.monotonic() reads), so a sample taken in fn_K
 * was taken between start + K * PERIOD and start + (K+1) * PERIOD. The
 * earliest function in a profile therefore dates the profile's first sample.
 * A function that starts late (the process was preempted past its deadline)
 * returns at once: the mapping from index to time never drifts.
 *
 * Usage: startup [-m MS] [-o FILE] [-x SECONDS | -X MONOTONIC_END]
 *   -m MS     each function's share of time, in milliseconds (default 5;
 *             one pass lasts 4096 * MS)
 *   -o FILE   write "START_S PERIOD_S COUNT" (START_S on CLOCK_MONOTONIC)
 *             to FILE before the first function runs (FILE.tmp, then renamed)
 *   -x S      exit S seconds after the start, going round the functions
 *             again after fn_fff if S is longer than a pass
 *   -X T      exit when CLOCK_MONOTONIC reaches T (seconds)
 * Without -x or -X it exits after one pass. Prints nothing. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "common.h"

static volatile uint64_t sink;

/* Spin until the monotonic clock reaches `deadline_s`: a chunk of pure work
 * between clock reads, so samples land here rather than in the vDSO. */
__attribute__((noinline)) void spin_until(double deadline_s) {
    KEEP_FRAME();
    while (now_s() < deadline_s) SPIN(1);
}

/* Each function's body differs by its constant, so identical-code folding
 * cannot merge them; noinline and the call that follows the spin keep each
 * a real frame on the stack while it runs. */
#define DEFINE_FN(d)                                                   \
    __attribute__((noinline)) void fn_##d(double deadline_s) {        \
        KEEP_FRAME();                                                  \
        sink ^= (uint64_t)0x##d * 0x9e3779b97f4a7c15ull;               \
        spin_until(deadline_s);                                        \
        sink += 0x##d;                                                 \
    }
#define POINTER_TO(d) fn_##d,

/* Sixteen of M, one per hex digit appended to p; three levels make 4096. */
#define HEX1(M, p) M(p##0) M(p##1) M(p##2) M(p##3) M(p##4) M(p##5) M(p##6) M(p##7) \
                   M(p##8) M(p##9) M(p##a) M(p##b) M(p##c) M(p##d) M(p##e) M(p##f)
#define HEX2(M, p) HEX1(M, p##0) HEX1(M, p##1) HEX1(M, p##2) HEX1(M, p##3)         \
                   HEX1(M, p##4) HEX1(M, p##5) HEX1(M, p##6) HEX1(M, p##7)         \
                   HEX1(M, p##8) HEX1(M, p##9) HEX1(M, p##a) HEX1(M, p##b)         \
                   HEX1(M, p##c) HEX1(M, p##d) HEX1(M, p##e) HEX1(M, p##f)
#define HEX3(M) HEX2(M, 0) HEX2(M, 1) HEX2(M, 2) HEX2(M, 3) HEX2(M, 4) HEX2(M, 5) \
                HEX2(M, 6) HEX2(M, 7) HEX2(M, 8) HEX2(M, 9) HEX2(M, a) HEX2(M, b) \
                HEX2(M, c) HEX2(M, d) HEX2(M, e) HEX2(M, f)

HEX3(DEFINE_FN)

typedef void (*step_fn)(double);
static step_fn const steps[] = {HEX3(POINTER_TO)};
#define COUNT ((long)(sizeof steps / sizeof steps[0]))

static int write_start(const char *path, double start_s, double period_s) {
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) return -1;
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    fprintf(f, "%.9f %.9f %ld\n", start_s, period_s, COUNT);
    if (fclose(f) != 0) return -1;
    return rename(tmp, path);
}

__attribute__((noinline)) void run(double start_s, double period_s, double end_s) {
    KEEP_FRAME();
    for (long k = 0;; k++) {
        double deadline = start_s + (double)(k + 1) * period_s;
        if (end_s > 0 && deadline > end_s) deadline = end_s;
        steps[k % COUNT](deadline);
        if (end_s > 0 ? now_s() >= end_s : k + 1 >= COUNT) break;
    }
}

int main(int argc, char **argv) {
    double period_s = 0.005, run_s = 0, end_s = 0;
    const char *out = NULL;
    int opt;
    while ((opt = getopt(argc, argv, "m:o:x:X:")) != -1) {
        switch (opt) {
        case 'm': period_s = atof(optarg) / 1e3; break;
        case 'o': out = optarg; break;
        case 'x': run_s = atof(optarg); break;
        case 'X': end_s = atof(optarg); break;
        default: return 2;
        }
    }
    if (period_s <= 0) return 2;
    double start_s = now_s();
    if (out && write_start(out, start_s, period_s) != 0) return 1;
    if (run_s > 0) end_s = start_s + run_s;
    run(start_s, period_s, end_s);
    return 0;
}
