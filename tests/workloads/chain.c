/* main -> run -> a -> b -> c, each doing its own share of the CPU work:
 * self time splits a 20%, b 30%, c 50%. Built twice (see the Makefile): with
 * frame pointers (every function keeps a frame) and with -fomit-frame-pointer
 * (no function has one), so the .eh_frame unwinder can be compared with the
 * frame-pointer walk on the same shape.
 * Usage: chain[_nofp] [SECONDS] | chain[_nofp] -n ROUNDS. */
#include "common.h"

#ifdef WITH_FP
#define FRAME() KEEP_FRAME()
#else
#define FRAME() ((void)0)
#endif

static volatile long calls;

__attribute__((noinline)) void c(void) { FRAME(); SPIN(50); calls++; }
__attribute__((noinline)) void b(void) { FRAME(); SPIN(30); c(); calls++; }
__attribute__((noinline)) void a(void) { FRAME(); SPIN(20); b(); calls++; }

__attribute__((noinline)) void run(struct run_limit *lim) {
    FRAME();
    for (long round = 0; !limit_reached(lim, round); round++) a();
}

int main(int argc, char **argv) {
    struct run_limit lim = parse_limit(argc, argv);
    run(&lim);
    return 0;
}
