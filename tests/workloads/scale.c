/* Many distinct deep stacks, for measuring bpftop at scale: each round picks
 * one of PATHS random paths (60,000, or $PATHS) and recurses along it through
 * 200 distinct functions, 28..48 calls deep, then spins briefly in the last
 * one. Recorded at 999 Hz for 60 s this gives ~40,000 distinct stacks of
 * median depth ~42 (bench/steady.py prints the numbers it saw).
 * Usage: [PATHS=N] scale [SECONDS] | scale -n ROUNDS. */
#include "common.h"

#define FUNCTIONS 200
#define PATHS 60000
#define MIN_DEPTH 28
#define DEPTH_SPREAD 21

static volatile long sink;

typedef void (*step_fn)(uint64_t state, int left);
static step_fn steps[FUNCTIONS];

static inline uint64_t next_state(uint64_t x) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
}

/* One function of the 200: a distinct body each (the constant keeps GCC's
 * identical-code folding from merging them), work after the call (no tail call). */
#define STEP(n)                                                                  \
    __attribute__((noinline)) void step_##n(uint64_t state, int left) {          \
        KEEP_FRAME();                                                            \
        if (left > 0) {                                                          \
            uint64_t next = next_state(state);                                   \
            steps[next % FUNCTIONS](next, left - 1);                             \
        } else {                                                                 \
            SPIN(40);                                                            \
        }                                                                        \
        sink += n;                                                               \
    }
#define STEP10(t) STEP(t##0) STEP(t##1) STEP(t##2) STEP(t##3) STEP(t##4) \
                  STEP(t##5) STEP(t##6) STEP(t##7) STEP(t##8) STEP(t##9)
STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7) STEP(8) STEP(9)
STEP10(1) STEP10(2) STEP10(3) STEP10(4) STEP10(5) STEP10(6) STEP10(7) STEP10(8) STEP10(9)
STEP10(10) STEP10(11) STEP10(12) STEP10(13) STEP10(14) STEP10(15) STEP10(16) STEP10(17)
STEP10(18) STEP10(19)

#define SET(n) steps[n] = step_##n;
#define SET10(t) SET(t##0) SET(t##1) SET(t##2) SET(t##3) SET(t##4) \
                 SET(t##5) SET(t##6) SET(t##7) SET(t##8) SET(t##9)

__attribute__((noinline)) void run(struct run_limit *lim, uint64_t paths) {
    KEEP_FRAME();
    uint64_t pick = 88172645463325252ull;
    for (long round = 0; !limit_reached(lim, round); round++) {
        pick = next_state(pick);
        uint64_t state = (pick % paths) * 2654435761u + 1;
        int depth = MIN_DEPTH + (int)(next_state(state) % DEPTH_SPREAD);
        steps[state % FUNCTIONS](state, depth);
    }
}

int main(int argc, char **argv) {
    struct run_limit lim = parse_limit(argc, argv);
    SET(0) SET(1) SET(2) SET(3) SET(4) SET(5) SET(6) SET(7) SET(8) SET(9)
    SET10(1) SET10(2) SET10(3) SET10(4) SET10(5) SET10(6) SET10(7) SET10(8) SET10(9)
    SET10(10) SET10(11) SET10(12) SET10(13) SET10(14) SET10(15) SET10(16) SET10(17)
    SET10(18) SET10(19)
    const char *paths = getenv("PATHS");
    run(&lim, paths ? strtoull(paths, NULL, 10) : PATHS);
    return 0;
}
