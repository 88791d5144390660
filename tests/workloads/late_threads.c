/* Threads born after the attach. Prints its pid, waits for a line on stdin
 * (a test sends it once the profilers hold their perf events), then starts two
 * threads that each burn SECONDS of their own CPU time, in spin_left and
 * spin_right (through worker), joins them and exits. Time is thread CPU time,
 * so the samples a profiler should get are known on a loaded machine too.
 * Usage: late_threads SECONDS */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include "common.h"

static double seconds = 1.0;

static double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin_left(void) {
    KEEP_FRAME();
    double end = thread_cpu_s() + seconds;
    while (thread_cpu_s() < end) SPIN(10);
}

__attribute__((noinline)) static void spin_right(void) {
    KEEP_FRAME();
    double end = thread_cpu_s() + seconds;
    while (thread_cpu_s() < end) SPIN(10);
}

__attribute__((noinline)) static void *worker(void *which) {
    KEEP_FRAME();
    if (which) spin_right(); else spin_left();
    return NULL;
}

int main(int argc, char **argv) {
    if (argc >= 2) seconds = atof(argv[1]);
    printf("%d\n", (int)getpid());
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof line, stdin)) return 1;
    pthread_t threads[2];
    for (long i = 0; i < 2; i++) pthread_create(&threads[i], NULL, worker, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(threads[i], NULL);
    return 0;
}
