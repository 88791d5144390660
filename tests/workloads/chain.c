/* main -> run -> a -> b -> c, each doing its own share of the CPU time:
 * self time splits a 20%, b 30%, c 50%. The work is one aligned register-only
 * loop written in asm, the same instructions in every function and build (a C
 * loop's cost differed by up to 10 points between the two builds). Built twice (see the Makefile): with
 * frame pointers (every function keeps a frame) and with -fomit-frame-pointer
 * (no function has one), so the .eh_frame unwinder can be compared with the
 * frame-pointer walk on the same shape.
 * Usage: chain[_nofp] [SECONDS] | chain[_nofp] -n ROUNDS |
 *        chain[_nofp] SECONDS FORK_AFTER: sleep FORK_AFTER s, then a forked
 *        child runs the chain SECONDS s (the parent waits for it), for the
 *        --children tests. */
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

#ifdef WITH_FP
#define FRAME() KEEP_FRAME()
#else
#define FRAME() ((void)0)
#endif

#define ITERATIONS_PER_UNIT 10000u

static volatile long calls;

/* `units` of work, inline (no frame of its own), identical wherever it is used. */
static inline __attribute__((always_inline)) void spin_cycles(uint64_t units) {
    uint64_t n = units * ITERATIONS_PER_UNIT;
    __asm__ volatile(".p2align 5\n1:\tdec %0\n\tjnz 1b" : "+r"(n));
}

__attribute__((noinline)) void c(void) { FRAME(); spin_cycles(50); calls++; }
__attribute__((noinline)) void b(void) { FRAME(); spin_cycles(30); c(); calls++; }
__attribute__((noinline)) void a(void) { FRAME(); spin_cycles(20); b(); calls++; }

__attribute__((noinline)) void run(struct run_limit *lim) {
    FRAME();
    for (long round = 0; !limit_reached(lim, round); round++) a();
}

int main(int argc, char **argv) {
    if (argc >= 3 && argv[1][0] != '-') {
        usleep((useconds_t)(atof(argv[2]) * 1e6));
        pid_t pid = fork();
        if (pid < 0) return 1;
        if (pid > 0) return waitpid(pid, NULL, 0) < 0;
    }
    struct run_limit lim = parse_limit(argc, argv);
    run(&lim);
    return 0;
}
