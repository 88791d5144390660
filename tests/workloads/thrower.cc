// C++ exceptions with a known count, for usdt:libstdc++:libstdcxx:throw.
// Waits for one byte on stdin (so a probe can be attached first), throws and
// catches N exceptions, prints "thrown=N" and waits for stdin to close.
// Usage: thrower N [go]   ("go": do not wait for stdin)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <unistd.h>

__attribute__((noinline)) static void fail(long i) {
    throw std::runtime_error(i % 2 ? "odd" : "even");
}

__attribute__((noinline)) static long run_throws(long n) {
    long caught = 0;
    for (long i = 0; i < n; i++) {
        try {
            fail(i);
        } catch (const std::runtime_error &) {
            caught++;
        }
    }
    return caught;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: thrower N [go]\n");
        return 2;
    }
    bool wait = argc < 3 || std::strcmp(argv[2], "go") != 0;
    char c;
    if (wait && read(0, &c, 1) != 1) return 1;
    long caught = run_throws(std::atol(argv[1]));
    std::printf("thrown=%ld\n", caught);
    std::fflush(stdout);
    while (wait && read(0, &c, 1) > 0) {
    }
    return 0;
}
