/* main -> run -> {hot_a, hot_b, hot_c}: the CPU time splits 60/30/10.
 * Usage: split [SECONDS] | split -n ROUNDS (fixed work, for benchmarks). */
#include "common.h"

__attribute__((noinline)) void hot_a(void) { KEEP_FRAME(); SPIN(60); }
__attribute__((noinline)) void hot_b(void) { KEEP_FRAME(); SPIN(30); }
__attribute__((noinline)) void hot_c(void) { KEEP_FRAME(); SPIN(10); }

__attribute__((noinline)) void run(struct run_limit *lim) {
    KEEP_FRAME();
    for (long round = 0; !limit_reached(lim, round); round++) {
        hot_a();
        hot_b();
        hot_c();
    }
}

int main(int argc, char **argv) {
    struct run_limit lim = parse_limit(argc, argv);
    run(&lim);
    return 0;
}
