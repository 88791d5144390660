/* main -> run -> {hot_a, hot_b, hot_c}: the CPU time splits 60/30/10, and each
 * spends it in its own inlined copy of mix() (always_inline), so DWARF says
 * every sampled address is inside an inline frame. The Top table must give
 * the time to hot_a/hot_b/hot_c (the symbols), not 100% to mix.
 * Usage: split_inline [SECONDS] | split_inline -n ROUNDS. */
#include "common.h"

static volatile uint64_t mix_sink;

static inline __attribute__((always_inline)) void mix(uint64_t units) {
    uint64_t acc = mix_sink;
    for (uint64_t i = 0; i < units * 1000u; i++) {
        acc = acc * 6364136223846793005u + i;
        mix_sink = acc;
    }
}

__attribute__((noinline)) void hot_a(void) { KEEP_FRAME(); mix(60); }
__attribute__((noinline)) void hot_b(void) { KEEP_FRAME(); mix(30); }
__attribute__((noinline)) void hot_c(void) { KEEP_FRAME(); mix(10); }

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
