/* main -> run -> recurse x DEPTH (100, or $DEPTH): all CPU time at the deepest
 * call, so every sample's stack holds exactly DEPTH `recurse` frames. Built
 * without frame pointers (see the Makefile).
 * Usage: [DEPTH=N] deep_nofp [SECONDS] | deep_nofp -n ROUNDS. */
#include "common.h"

#define DEPTH 100

static volatile long sink;

__attribute__((noinline)) void recurse(int left) {
    if (left > 1)
        recurse(left - 1);
    else
        SPIN(20);
    sink += left; /* work after the call: no tail call */
}

__attribute__((noinline)) void run(struct run_limit *lim, int depth) {
    for (long round = 0; !limit_reached(lim, round); round++) recurse(depth);
}

int main(int argc, char **argv) {
    struct run_limit lim = parse_limit(argc, argv);
    const char *depth = getenv("DEPTH");
    run(&lim, depth ? atoi(depth) : DEPTH);
    return 0;
}
