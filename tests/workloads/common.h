/* Shared helpers for the workloads: a way to force a frame in leaf functions,
 * a spin loop of known cost, and a clock. */
#ifndef WORKLOADS_COMMON_H
#define WORKLOADS_COMMON_H
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* Storing our frame address makes GCC keep a real frame (push rbp; mov rsp,rbp)
 * even in leaf functions, so a frame-pointer walk sees every caller. */
#ifdef NO_KEEP_FRAME /* the -fomit-frame-pointer builds (*_nofp) */
#define KEEP_FRAME() ((void)0)
#else
static void *volatile frame_sink;
#define KEEP_FRAME() (frame_sink = __builtin_frame_address(0))
#endif

/* `units` of pure CPU work; the cost is linear in units. */
#define SPIN(units)                                                            \
    do {                                                                       \
        volatile uint64_t acc_ = 0;                                            \
        for (uint64_t i_ = 0; i_ < (uint64_t)(units) * 1000u; i_++) acc_ += i_; \
    } while (0)

static inline double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* argv[1] = seconds to run (default: forever); "-n N" = a fixed number of rounds. */
struct run_limit {
    double deadline_s;   /* 0 = none */
    long rounds;         /* 0 = none */
};

static inline struct run_limit parse_limit(int argc, char **argv) {
    struct run_limit lim = {0, 0};
    if (argc >= 3 && argv[1][0] == '-' && argv[1][1] == 'n') {
        lim.rounds = atol(argv[2]);
    } else if (argc >= 2) {
        lim.deadline_s = now_s() + atof(argv[1]);
    }
    return lim;
}

static inline int limit_reached(const struct run_limit *lim, long round) {
    if (lim->rounds) return round >= lim->rounds;
    if (lim->deadline_s) return now_s() >= lim->deadline_s;
    return 0;
}
#endif
