/* Short runs that end with threads and processes exiting, for the tests that
 * every event counted in the kernel reaches the profile whatever exits when.
 *   exits calls N S       calls counted_fn() exactly N times, paced over S s,
 *                         from the first instruction of main
 *   exits threads S T     T threads spin for S s, main joins them
 *   exits leader S T      T threads spin for S s; main exits at once (pthread_exit)
 *   exits staggered S T   T threads; thread i spins S*(i+1)/T s and exits
 *   exits children S K    K child processes, each with two threads, spin S s;
 *                         the parent waits for them
 *   exits orphans S K     K child processes spin S s; the parent exits at once
 * Every process prints "cpu_s=X" on stdout as it ends (its own user+system
 * CPU time, all its threads), so a test can compare samples with CPU time.
 * With EXITS_WAIT set, it first waits for one byte on stdin (a profiler that
 * attaches to a running pid is ready before the clock starts). */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

static volatile long calls_seen;
static double spin_s;
static int n_threads;
static volatile int threads_left;

__attribute__((noinline)) void counted_fn(void) {
    KEEP_FRAME();
    calls_seen++;
}

__attribute__((noinline)) void spin_until(double end) {
    KEEP_FRAME();
    while (now_s() < end) SPIN(1);
}

static void report_cpu(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
                 ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
    printf("cpu_s=%.6f\n", cpu);
    fflush(stdout);
}

__attribute__((noinline)) void run_calls(long n, double seconds) {
    KEEP_FRAME();
    double start = now_s();
    for (long i = 0; i < n; i++) {
        counted_fn();
        double due = start + seconds * (double)(i + 1) / (double)n;
        while (now_s() < due) {
        }
    }
}

static void *spinner(void *arg) {
    spin_until(*(double *)arg);
    return NULL;
}

/* The last thread of a process whose main thread has already exited reports. */
static void *last_reports(void *arg) {
    spin_until(*(double *)arg);
    if (__sync_sub_and_fetch(&threads_left, 1) == 0) report_cpu();
    return NULL;
}

__attribute__((noinline)) void run_threads(int detach_main, int staggered) {
    KEEP_FRAME();
    static double ends[64];
    static pthread_t tids[64];
    double start = now_s();
    threads_left = n_threads;
    for (int i = 0; i < n_threads; i++) {
        ends[i] = start + (staggered ? spin_s * (i + 1) / n_threads : spin_s);
        pthread_create(&tids[i], NULL, detach_main ? last_reports : spinner, &ends[i]);
    }
    if (detach_main) pthread_exit(NULL);
    for (int i = 0; i < n_threads; i++) pthread_join(tids[i], NULL);
    report_cpu();
}

__attribute__((noinline)) void run_children(int k, int wait_for_them) {
    KEEP_FRAME();
    double end = now_s() + spin_s;
    for (int i = 0; i < k; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            pthread_t helper;
            pthread_create(&helper, NULL, spinner, &end);
            spin_until(end);
            pthread_join(helper, NULL);
            report_cpu();
            _exit(0);
        }
    }
    if (wait_for_them) {
        while (wait(NULL) > 0) {
        }
    }
    report_cpu();
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: exits calls N S | threads|leader|staggered S T | children|orphans S K\n");
        return 2;
    }
    const char *mode = argv[1];
    char go;
    if (getenv("EXITS_WAIT") && read(0, &go, 1) != 1) return 1;
    if (!strcmp(mode, "calls")) {
        run_calls(atol(argv[2]), atof(argv[3]));
        return calls_seen == atol(argv[2]) ? 0 : 1;
    }
    spin_s = atof(argv[2]);
    n_threads = atoi(argv[3]);
    if (n_threads < 1 || n_threads > 64) return 2;
    if (!strcmp(mode, "threads")) run_threads(0, 0);
    else if (!strcmp(mode, "leader")) run_threads(1, 0);
    else if (!strcmp(mode, "staggered")) run_threads(0, 1);
    else if (!strcmp(mode, "children")) run_children(n_threads, 1);
    else if (!strcmp(mode, "orphans")) run_children(n_threads, 0);
    else return 2;
    return 0;
}
