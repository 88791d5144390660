/* USDT probes with known counts, for the usdt: probe tests (<sys/sdt.h>,
 * Debian's systemtap-sdt-dev).
 *   sdt:plain     fires every round (no semaphore)
 *   sdt:guarded   guarded by a semaphore: fired only while a tracer has raised
 *                 the semaphore (sdt_guarded_semaphore)
 * Prints "semaphore=0xADDR" (the semaphore's address in this process) and
 * waits for one byte on stdin (so a probe can be attached first), then runs
 * N rounds, prints "plain=N guarded=K" (K: rounds that saw the semaphore
 * raised) and waits for stdin to close before it exits (so the semaphore can
 * be read after the tracer left).
 * Usage: sdt N [go]   ("go": do not wait for stdin, before or after) */
#include <stdio.h>
#include <string.h>
#include <sys/sdt.h>
#include <unistd.h>
#include "common.h"

static long guarded_seen;

/* sdt_guarded.c: <sys/sdt.h> gives every probe of a file a semaphore or none. */
extern volatile unsigned short sdt_guarded_semaphore;
long guarded_site(long i);

__attribute__((noinline)) void plain_site(long i) {
    KEEP_FRAME();
    STAP_PROBE1(sdt, plain, i);
}

__attribute__((noinline)) void run_rounds(long n) {
    KEEP_FRAME();
    for (long i = 0; i < n; i++) {
        plain_site(i);
        guarded_seen += guarded_site(i);
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: sdt N [go]\n");
        return 2;
    }
    long n = atol(argv[1]);
    int wait = argc < 3 || strcmp(argv[2], "go") != 0;
    printf("semaphore=%p\n", (void *)&sdt_guarded_semaphore);
    fflush(stdout);
    char c;
    if (wait && read(0, &c, 1) != 1) return 1;
    run_rounds(n);
    printf("plain=%ld guarded=%ld\n", n, guarded_seen);
    fflush(stdout);
    while (wait && read(0, &c, 1) > 0) {
    }
    return 0;
}
