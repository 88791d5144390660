/* A process that execs itself again and again, for the tests that every
 * image of a re-exec'ing process is named from its own file.
 *   reexec N MS     burn MS ms of CPU, then exec "reexec N-1 MS"; the last
 *                   image (N = 0) burns and exits: N+1 images in all.
 * Image K burns in image_K_burn (K = N % 4), so a stack named from a stale
 * image's table shows the wrong function, not only an unnamed one.
 * With REEXEC_WAIT set, the first image waits for one byte on stdin first
 * (a profiler that attaches to a running pid is ready before it starts). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "common.h"

static double burn_until_s;

#define BURNER(k)                                                 \
    __attribute__((noinline)) void image_##k##_burn(void) {        \
        KEEP_FRAME();                                              \
        while (now_s() < burn_until_s) SPIN(1);                    \
    }
BURNER(0)
BURNER(1)
BURNER(2)
BURNER(3)

static void (*const burners[4])(void) = {image_0_burn, image_1_burn, image_2_burn, image_3_burn};

__attribute__((noinline)) void run_image(long n, long ms) {
    KEEP_FRAME();
    burn_until_s = now_s() + (double)ms / 1000.0;
    burners[n % 4]();
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: reexec N MS\n");
        return 2;
    }
    long n = atol(argv[1]), ms = atol(argv[2]);
    if (getenv("REEXEC_WAIT")) {
        char byte;
        if (read(0, &byte, 1) < 0) return 1;
        unsetenv("REEXEC_WAIT");
    }
    run_image(n, ms);
    if (n <= 0) return 0;
    char next[32];
    snprintf(next, sizeof next, "%ld", n - 1);
    execl("/proc/self/exe", argv[0], next, argv[2], (char *)NULL);
    perror("reexec: exec");
    return 1;
}
