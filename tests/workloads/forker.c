/* Followed processes and named threads, for the --children and -a tests:
 *   forker children N MS   fork N children one after another; each spins MS ms
 *                          of CPU in child_spin() and exits (the parent waits)
 *   forker outlive S       fork one child and exit after ~0.2 s of CPU in
 *                          parent_spin(); the child waits until it is orphaned,
 *                          then spins S s of CPU in orphan_spin()
 *   forker threads S NAME  two threads named NAME-a and NAME-b, one named
 *                          fkworker (the same in every instance), each spinning
 *                          S s of CPU in thread_spin(); then exits
 * Spins are CPU time (CLOCK_THREAD_CPUTIME_ID), so a loaded machine stretches
 * them in wall time but not in samples. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "common.h"

static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define SPIN_FOR(seconds)                                      \
    do {                                                       \
        double until_ = cpu_s() + (seconds);                   \
        while (cpu_s() < until_) SPIN(20);                     \
    } while (0)

__attribute__((noinline)) void child_spin(double s) { KEEP_FRAME(); SPIN_FOR(s); }
__attribute__((noinline)) void parent_spin(double s) { KEEP_FRAME(); SPIN_FOR(s); }
__attribute__((noinline)) void orphan_spin(double s) { KEEP_FRAME(); SPIN_FOR(s); }
__attribute__((noinline)) void thread_spin(double s) { KEEP_FRAME(); SPIN_FOR(s); }

__attribute__((noinline)) static int children(long n, double ms) {
    for (long i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            child_spin(ms / 1000.0);
            _exit(0);
        }
        if (pid < 0) return 1;
        waitpid(pid, NULL, 0);
    }
    return 0;
}

static int outlive(double s) {
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        while (getppid() == parent) usleep(1000);
        orphan_spin(s);
        _exit(0);
    }
    parent_spin(0.2);
    return pid < 0;
}

static double thread_s;

static void *spinner(void *arg) {
    (void)arg;
    thread_spin(thread_s);
    return NULL;
}

static int threads(double s, const char *name) {
    pthread_t t[3];
    char names[3][16];
    snprintf(names[0], sizeof names[0], "%.12s-a", name);
    snprintf(names[1], sizeof names[1], "%.12s-b", name);
    snprintf(names[2], sizeof names[2], "fkworker");
    thread_s = s;
    for (int i = 0; i < 3; i++) {
        if (pthread_create(&t[i], NULL, spinner, NULL)) return 1;
        pthread_setname_np(t[i], names[i]);
    }
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 4 && !strcmp(argv[1], "children")) return children(atol(argv[2]), atof(argv[3]));
    if (argc >= 3 && !strcmp(argv[1], "outlive")) return outlive(atof(argv[2]));
    if (argc >= 4 && !strcmp(argv[1], "threads")) return threads(atof(argv[2]), argv[3]);
    fprintf(stderr, "usage: forker children N MS | outlive S | threads S NAME\n");
    return 2;
}
