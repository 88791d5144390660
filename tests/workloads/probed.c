/* Known event counts and known times, for the probe tests and benchmarks.
 * Waits for one byte on stdin before it starts (so a probe can be attached
 * first), then runs one mode and exits:
 *   probed calls N     counted_call() exactly N times (uprobe exact count)
 *   probed writes N    N write(2)s to /dev/null (tracepoint exact count)
 *   probed latency N   N rounds of timed(3 ms) via slow_path, timed(1 ms) via fast_path
 *   probed sleeps S    for S seconds: long_wait() 7 ms, short_wait() 3 ms, repeat
 *   probed pages N     touch_pages() faults in N fresh pages (page-fault events)
 *   probed pingpong N  N round trips between two threads over pipes (2N blocking switches)
 *   probed mixed S     for S seconds: spin 1 ms, slow_path + fast_path, fault one page
 * With PROBED_REPORT set, prints "elapsed_s=..." (the mode's own run time) on stdout.
 * Usage: probed MODE N [go]   ("go": do not wait for stdin) */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "common.h"

static volatile long calls_seen;

__attribute__((noinline)) void counted_call(void) {
    KEEP_FRAME();
    calls_seen++;
}

__attribute__((noinline)) void timed(long usec) {
    KEEP_FRAME();
    usleep(usec);
}

__attribute__((noinline)) void slow_path(void) { KEEP_FRAME(); timed(3000); }
__attribute__((noinline)) void fast_path(void) { KEEP_FRAME(); timed(1000); }

/* nanosleep(2) issued right here (not through libc's frameless wrapper), so
 * the user IP while blocked is in the waiting function itself. */
static inline __attribute__((always_inline)) void sleep_here(long nsec) {
    struct timespec ts = {0, nsec};
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "0"((long)SYS_nanosleep), "D"(&ts), "S"(0)
                     : "rcx", "r11", "memory");
}

__attribute__((noinline)) void long_wait(void) { KEEP_FRAME(); sleep_here(7000000); }
__attribute__((noinline)) void short_wait(void) { KEEP_FRAME(); sleep_here(3000000); }

__attribute__((noinline)) void touch_pages(long n) {
    KEEP_FRAME();
    long page = sysconf(_SC_PAGESIZE);
    volatile char *mem = mmap(NULL, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return;
    madvise((void *)mem, n * page, MADV_NOHUGEPAGE);
    for (long i = 0; i < n; i++) mem[i * page] = 1;
}

__attribute__((noinline)) void run_calls(long n) {
    KEEP_FRAME();
    for (long i = 0; i < n; i++) counted_call();
}

__attribute__((noinline)) void run_writes(long n) {
    KEEP_FRAME();
    int fd = open("/dev/null", O_WRONLY);
    char c = 0;
    for (long i = 0; i < n; i++)
        if (write(fd, &c, 1) != 1) break;
    close(fd);
}

__attribute__((noinline)) void run_latency(long n) {
    KEEP_FRAME();
    for (long i = 0; i < n; i++) {
        slow_path();
        fast_path();
    }
}

__attribute__((noinline)) void run_sleeps(double seconds) {
    KEEP_FRAME();
    double end = now_s() + seconds;
    while (now_s() < end) {
        long_wait();
        short_wait();
    }
}

static int ping[2], pong[2];

static void *ponger(void *arg) {
    long n = *(long *)arg;
    char c;
    for (long i = 0; i < n; i++)
        if (read(ping[0], &c, 1) != 1 || write(pong[1], &c, 1) != 1) break;
    return NULL;
}

__attribute__((noinline)) void run_pingpong(long n) {
    KEEP_FRAME();
    pthread_t t;
    char c = 0;
    if (pipe(ping) || pipe(pong) || pthread_create(&t, NULL, ponger, &n)) return;
    for (long i = 0; i < n; i++)
        if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1) break;
    pthread_join(t, NULL);
}

__attribute__((noinline)) void spin_ms(double ms) {
    KEEP_FRAME();
    double end = now_s() + ms / 1000;
    while (now_s() < end) SPIN(1);
}

__attribute__((noinline)) void run_mixed(double seconds) {
    KEEP_FRAME();
    double end = now_s() + seconds;
    while (now_s() < end) {
        spin_ms(1);
        run_latency(1);
        touch_pages(1);
    }
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: probed calls|writes|latency|sleeps N [go]\n");
        return 2;
    }
    if (argc < 4 || strcmp(argv[3], "go") != 0) {
        char c;
        if (read(0, &c, 1) != 1) return 1;
    }
    double started = now_s();
    if (!strcmp(argv[1], "calls")) run_calls(atol(argv[2]));
    else if (!strcmp(argv[1], "writes")) run_writes(atol(argv[2]));
    else if (!strcmp(argv[1], "latency")) run_latency(atol(argv[2]));
    else if (!strcmp(argv[1], "sleeps")) run_sleeps(atof(argv[2]));
    else if (!strcmp(argv[1], "pages")) touch_pages(atol(argv[2]));
    else if (!strcmp(argv[1], "pingpong")) run_pingpong(atol(argv[2]));
    else if (!strcmp(argv[1], "mixed")) run_mixed(atof(argv[2]));
    else return 2;
    if (getenv("PROBED_REPORT")) printf("elapsed_s=%.6f\n", now_s() - started);
    return 0;
}
